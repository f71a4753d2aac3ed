"""Locks shared by every tools/fork process of one work directory."""

import fcntl
import os
import sys
import time

from .errors import ForkError
from .paths import ensure_dir, wpath

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
    guests of GUEST_SMP vCPUs and GUEST_MEM_MB as the machine has cores and
    memory for, at least one."""
    env = os.environ.get("FORK_GUEST_SLOTS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ForkError("FORK_GUEST_SLOTS=%s: give a number of guests >= 1 (or unset it)"
                            % env)
        return int(env)
    n = (os.cpu_count() or 1) // GUEST_SMP
    mem = memory_mb()
    if mem is not None:
        n = min(n, mem // GUEST_MEM_MB)
    return max(1, n)


def slot_path(i):
    """Slot i's lock file: slot 0 is work/locks/guest.lock, the one lock of
    a single-slot machine (what `flock work/locks/guest.lock CMD` takes)."""
    return os.path.join(ensure_dir(wpath("locks")),
                        "guest.lock" if i == 0 else "guest-%d.lock" % i)


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
