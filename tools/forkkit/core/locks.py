"""Locks shared by every tools/fork process of one work directory."""

import fcntl
import os
import sys
import time

from . import interrupt
from .errors import ForkError
from .paths import ensure_dir, wpath
from .proc import cpu_count

# The guest a slot is sized for: guest.qemu.run_guest()'s default -smp and -m.
GUEST_SMP = 2
GUEST_MEM_MB = 2048


class Lock:
    """An exclusive lock in work/locks (flock): "build" guards the build
    worktree and build dirs from checkout to stored image, "import" keeps
    two imports from tagging the same snapshot (the guests take
    GuestSlots).  A run that has to wait says so on stderr."""

    def __init__(self, name):
        self.path = os.path.join(ensure_dir(wpath("locks")), name + ".lock")

    def __enter__(self):
        self.fh = open(self.path, "w")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("fork: waiting for %s: another tools/fork run holds it" % self.path,
                  file=sys.stderr, flush=True)
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


class DirLock:
    """An exclusive lock on one store of records (a directory): flock on the
    directory itself, so that a store that is committed (an fstests
    --record directory) gets no lock file.  Each read-modify-write of the
    store's files holds it; two processes, or two threads of one, exclude
    each other (each takes its own open file description)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.fd = os.open(ensure_dir(self.path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)



# where the process's cgroup v2 is named and where the hierarchy is mounted
PROC_CGROUP = "/proc/self/cgroup"
MOUNTINFO = "/proc/self/mountinfo"


def _read_line(path):
    try:
        with open(path) as fh:
            return fh.readline().strip()
    except OSError:
        return None


def cgroup_dir(proc_cgroup=None, mountinfo=None):
    """(the process's cgroup v2 directory, the mount it is under), or None
    when there is no cgroup v2 (no "0::" line in /proc/self/cgroup, or no
    cgroup2 mount whose root holds it)."""
    try:
        with open(proc_cgroup or PROC_CGROUP) as fh:
            path = next((line.rstrip("\n")[3:] for line in fh if line.startswith("0::")), None)
        with open(mountinfo or MOUNTINFO) as fh:
            mounts = fh.read().splitlines()
    except OSError:
        return None
    if not path or not path.startswith("/"):
        return None
    for line in mounts:
        # id parent major:minor root mount-point options [optional...] - fstype source ...
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or tail.split()[:1] != ["cgroup2"]:
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        if root != "/" and path != root and not path.startswith(root.rstrip("/") + "/"):
            continue
        rel = path[len(root):] if root != "/" else path
        here = os.path.normpath(point + "/" + rel.strip("/"))
        if os.path.isdir(here):
            return here, os.path.normpath(point)
    return None


def cgroup_limits(proc_cgroup=None, mountinfo=None):
    """(CPUs, memory in MiB) the process's cgroup v2 and its ancestors allow:
    the least cpu.max (quota / period, in CPUs) and memory.max along the
    path up to the mount; None for one that no level limits."""
    found = cgroup_dir(proc_cgroup, mountinfo)
    if found is None:
        return None, None
    here, top = found
    cpus = mem = None
    while True:
        words = (_read_line(os.path.join(here, "cpu.max")) or "").split()
        if len(words) == 2 and words[0] != "max":
            try:
                quota, period = int(words[0]), int(words[1])
                if quota > 0 and period > 0:
                    cpus = quota / period if cpus is None else min(cpus, quota / period)
            except ValueError:
                pass
        limit = _read_line(os.path.join(here, "memory.max"))
        if limit and limit.isdigit():
            mb = int(limit) // (1 << 20)
            mem = mb if mem is None else min(mem, mb)
        if here == top or len(here) <= len(top):
            return cpus, mem
        here = os.path.dirname(here)


def memory_mb():
    """The machine's memory in MiB (MemTotal), None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def guest_slot_count():
    """How many guests may run at once: FORK_GUEST_SLOTS if set, else as many
    guests of GUEST_SMP vCPUs and GUEST_MEM_MB as the CPUs and memory this
    process has hold (the machine's, or its cgroup's cpu.max and
    memory.max where they are less), at least one."""
    env = os.environ.get("FORK_GUEST_SLOTS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ForkError("FORK_GUEST_SLOTS=%s: give a number of guests >= 1 (or unset it)"
                            % env)
        return int(env)
    cg_cpus, cg_mem = cgroup_limits()
    cpus = cpu_count()
    if cg_cpus is not None:
        cpus = min(cpus, cg_cpus)
    mem = memory_mb()
    if cg_mem is not None:
        mem = cg_mem if mem is None else min(mem, cg_mem)
    n = int(cpus // GUEST_SMP)
    if mem is not None:
        n = min(n, mem // GUEST_MEM_MB)
    return max(1, n)


def slot_path(i):
    """Slot i's lock file: slot 0 is work/locks/guest.lock, the one lock of
    a single-slot machine (what `flock work/locks/guest.lock CMD` takes)."""
    return os.path.join(ensure_dir(wpath("locks")),
                        "guest.lock" if i == 0 else "guest-%d.lock" % i)


def busy_slots(count):
    """The slots among the first `count` that another process holds now
    (each tried without waiting and let go at once)."""
    busy = []
    for i in range(count):
        with open(slot_path(i), "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy.append(i)
                continue
            fcntl.flock(fh, fcntl.LOCK_UN)
    return busy


class GuestSlots:
    """The guest slots (flock on work/locks/guest*.lock, guest_slot_count()
    of them): a guest takes one, the first free; `every` takes them all, in
    order, for a guest whose timings must not share the machine (bench).
    One that takes a slot never waits while it holds another, so two
    takers of every slot do not deadlock.  A run that has to wait says so
    on stderr, once."""

    POLL = 0.2

    def __init__(self, every=False):
        self.every = every
        self.count = guest_slot_count()
        self.held = []

    def _take(self, i, block):
        fh = open(slot_path(i), "w")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            fh.close()
            return False
        except BaseException:
            fh.close()
            raise
        self.held.append(fh)
        return True

    def _wait_note(self):
        print("fork: waiting for a guest slot (%s%d in work/locks): other tools/fork runs "
              "hold them" % ("all " if self.every else "one of ", self.count),
              file=sys.stderr, flush=True)

    def __enter__(self):
        try:
            if self.every:
                told = False
                for i in range(self.count):
                    if not self._take(i, False):
                        if not told:
                            self._wait_note()
                            told = True
                        self._take(i, True)
                return self
            told = False
            while True:
                interrupt.check()       # no slot for a guest of a run that stops
                if any(self._take(i, False) for i in range(self.count)):
                    return self
                if not told:
                    self._wait_note()
                    told = True
                time.sleep(self.POLL)
        except BaseException:
            self._release()
            raise

    def _release(self):
        while self.held:
            fh = self.held.pop()
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    def __exit__(self, *exc):
        self._release()
