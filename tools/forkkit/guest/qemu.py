"""Booting a kernel in QEMU (TCG unless asked for KVM, always under a hard
timeout, in one of the machine's guest slots: core.locks.GuestSlots) with the busybox initramfs and a command, and
reading the console: the command's exit status, its output, and every kernel
report, quoted whole.  The verb's help (verbs/boot.py) describes it for the
user.
"""

import os
import re
import shlex
import shutil
import signal
import itertools
import subprocess
import time

from ..core import interrupt
from ..core.errors import ForkError
from ..core.locks import GuestSlots
from ..core.paths import ensure_dir, new_log, wpath
from ..core.progress import Progress
from ..core.proc import dying_with_thread, tail
from . import initramfs

# Every kernel report that fails a boot, in the spelling of each supported
# version (6.1, 6.12 and 7.3: taken from their lib/bug.c, kernel/panic.c,
# arch/x86/kernel/dumpstack.c and traps.c, kernel/watchdog*.c,
# kernel/rcu/tree_stall.h and tree_exp.h, kernel/hung_task.c,
# kernel/locking/lockdep.c, lib/list_debug.c, lib/ubsan.c, mm/kasan,
# mm/kmemleak.c, kernel/kcsan/report.c, mm/page_alloc.c, fs/ext2, fs/ext4).
# tests/test_kit_boot.py holds a line in each version's spelling per pattern.
PROBLEMS = [
    r"Kernel panic",                        # panic(): "Kernel panic - not syncing: ..."
    r"\bPANIC: ",                           # "PANIC: double fault, error_code: ..."
    r"\bOops\b",                            # 6.12: "Oops: invalid opcode: 0000 [#1] ..."
    r": [0-9a-f]{4} \[#\d+\]",               # die(): 6.1 "invalid opcode: 0000 [#1] ..."
    r"kernel BUG at ",                      # BUG(): "kernel BUG at fs/ext2/balloc.c:10!"
    r"\bBUG:",                              # BUG: KASAN/KCSAN/soft lockup/bad page/...
    r"\bWARNING:",                          # WARN(), lockdep's "WARNING: possible ..."
    r"DEBUG_LOCKS_WARN_ON",
    r"possible circular locking",
    r"possible recursive locking",
    r"inconsistent lock state",
    r"INFO: trying to register non-static key",
    r"KASAN",
    r"KCSAN: ",                             # not "use CONFIG_KCSAN_STRICT=y" at boot
    r"UBSAN",
    r"suspected memory leaks",              # kmemleak
    # kmemleak giving up: a run after this would look leak-free
    r"kmemleak: (Cannot allocate a kmemleak_object|Memory pool empty|Kernel memory leak "
    r"detector disabled)",
    r"FORK-KMEMLEAK-ERROR",                 # the guest init's scan failed
    r"general protection fault",
    r"hard LOCKUP",                         # "Watchdog detected hard LOCKUP on cpu 1"
    r"INFO: .*stall",                       # "rcu: INFO: rcu_preempt detected stalls ..."
    r"INFO: task \S+ blocked.* for more than",  # 7.3: "blocked in I/O wait for more than"
    r"list_(add|del) corruption",
    r"EXT2-fs \([^)]*\): error",             # ext2_error()
    r"EXT4-fs error",                       # "EXT4-fs error (device vda): ..."
    r"Page cache invalidation failure on direct I/O",  # mm/filemap.c, pr_crit
    r"counter mismatch",                    # the series' CONFIG_EXT2_FS_CHECK_COUNTERS
    r"Unable to mount root",
]
PROBLEM_RE = re.compile("|".join(PROBLEMS))
# Where a report starts and ends, to quote it whole.
BLOCK_START_RE = re.compile(r"-+\[ cut here \]-+|^(\[[ \d.]+\] )?={20,}\s*$")
BLOCK_END_RE = re.compile(r"---\[ end |^(\[[ \d.]+\] )?={20,}\s*$|FORK-EXIT-STATUS")
BLOCK_MAX = 60
EXIT_RE = re.compile(r"FORK-EXIT-STATUS: (\d+)")
# A printk time stamp after the start of a line: the kernel's console
# driver wrote into the middle of a line the guest was writing.
MID_TS_RE = re.compile(r"(?<=.)\[\s*\d+\.\d{6}\] ")
START_TS_RE = re.compile(r"^\[\s*\d+\.\d+\]")


class BootResult:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def ok(self):
        return self.rc == 0 and not self.problems and not self.error


def qemu_binary():
    path = shutil.which("qemu-system-x86_64")
    if not path:
        raise ForkError("qemu-system-x86_64 not found: run `apt-get install qemu-system-x86`")
    return path


# Kernel command line additions per config flavour (kept out of build/,
# whose modules' hash keys every stored image: they change how a kernel is booted,
# not how it is built).  kasan_multi_shot: without it KASAN prints only
# its first report, and a known one would hide the rest.  acpi=noirq:
# under KASAN and TCG the ACPI interpreter needed ~30 s for the PCI
# root's _PRT method, and when it passed ACPICA's 30 s loop limit
# (AE_AML_LOOP_TIMEOUT, 7.3 base, 2026-12-04) the virtio disk got no
# interrupt and the boot hung after "virtio_blk ... [vda]".  Without ACPI
# interrupt routing the kernel takes the PCI interrupts from the BIOS's MP
# table (CONFIG_X86_MPPARSE, base.config) and never runs the method.
KASAN_BOOT_ARGS = "kasan_multi_shot acpi=noirq"
BOOT_ARGS = {"kasan": KASAN_BOOT_ARGS, "kasan-inline": KASAN_BOOT_ARGS}


# Deterministic virtual time: one TCG thread for all vCPUs, the guest clock
# advanced by instruction counts (1 ns each), idle time skipped.  A guest's
# timings then count the work it did, not the host's load.
ICOUNT_ARGS = ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off", "-cpu", "max"]

# each boot's initramfs is its own: initrd-<pid>-<n>.cpio (threads of one
# process boot side by side too)
_initrds = itertools.count(1)


def initrd_path():
    """A new initramfs path in work/tmp that no other boot uses."""
    return os.path.join(ensure_dir(wpath("tmp")), "initrd-%d-%d.cpio"
                        % (os.getpid(), next(_initrds)))


def disk_format(path):
    """A disk's format as QEMU is told it: qcow2 for a .qcow2 file (a
    copy-on-write overlay, fstests' root), else raw."""
    return "qcow2" if path.endswith(".qcow2") else "raw"


def qemu_cmd(kernel, initrd, disks, smp, mem, kvm, append, icount=False, cache="unsafe"):
    """The QEMU command line.  `cache` is the disks' cache mode: "unsafe"
    (a volatile write cache whose flushes QEMU ignores: fastest) or
    "writethrough" (a disk without a volatile write cache, as the guest
    sees it in /sys/block/vdX/queue/write_cache)."""
    cmd = [qemu_binary()]
    if kvm:
        cmd += ["-accel", "kvm", "-cpu", "host"]
    elif icount:
        cmd += ICOUNT_ARGS
    else:
        cmd += ["-accel", "tcg,thread=multi", "-cpu", "max"]
    cmd += ["-smp", str(smp), "-m", str(mem), "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot", "-nodefaults",
            "-kernel", kernel, "-initrd", initrd,
            "-append", ("console=ttyS0 panic=-1 rdinit=/init printk.devkmsg=on " + append).strip()]
    for d in disks:
        if not os.path.isfile(d):
            raise ForkError("disk image %s does not exist" % d)
        cmd += ["-drive", "file=%s,format=%s,if=virtio,cache=%s"
                % (os.path.abspath(d), disk_format(d), cache)]
    return cmd


def untangle(lines):
    """Console lines with the kernel's messages taken out of the guest's.

    The kernel's console driver writes a message whole, but it can start
    in the middle of a line the guest's program is writing; the rest of
    that line follows the message (and any further ones).  Such a line
    comes out as the kernel's lines, then the guest's line joined again.
    The guest never prints a printk time stamp after the start of a line,
    so one there always marks a split."""
    held = None
    for line in lines:
        line = line.rstrip("\r\n")
        m = MID_TS_RE.search(line)
        if m:
            head, line = line[:m.start()], line[m.start():]
            held = head if held is None else held + head
        if held is not None and not START_TS_RE.match(line):
            line, held = held + line, None
        yield line
    if held is not None:
        yield held


def scan(log):
    """Return (exit status or None, [problem lines]) from a console log.
    Problem lines are the log's own; the exit status is read from the
    untangled lines (a printk can split its marker)."""
    rc = None
    problems = []

    def raw(fh):
        for line in fh:
            if PROBLEM_RE.search(line):
                problems.append(line.rstrip())
            yield line

    with open(log, errors="replace") as fh:
        for line in untangle(raw(fh)):
            m = EXIT_RE.search(line)
            if m:
                rc = int(m.group(1))
    return rc, problems


def report_block(log, problem):
    """The whole report around the first console line equal to `problem`:
    from its "cut here" or "=====" line (if one is just above) to its end
    marker, at most BLOCK_MAX lines."""
    with open(log, errors="replace") as fh:
        lines = [l.rstrip("\r\n") for l in fh]
    try:
        i = lines.index(problem)
    except ValueError:
        return problem
    start = i
    for j in range(i - 1, max(-1, i - 4), -1):
        if BLOCK_START_RE.search(lines[j]):
            start = j
            break
    end = min(len(lines), start + BLOCK_MAX)
    for j in range(i + 1, end):
        if BLOCK_END_RE.search(lines[j]):
            end = j + (0 if "FORK-EXIT-STATUS" in lines[j] else 1)
            break
    return "\n".join(lines[start:end])


def kill_group(proc):
    """SIGKILL to the process group of `proc` (a guest started as the
    leader of its own), unless it has been waited for."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_guest(kernel, script, disks=(), timeout=600, smp=2, mem="2048", kvm=False, append="",
              log=None, prog=None, label="boot", extra_files=None, icount=False,
              cache="unsafe", follow=None, every_slot=False):
    """Boot `kernel` with `script` as the guest command; return a BootResult.

    The guest runs in one guest slot, or with `every_slot` in all of them
    (no other guest on the machine while it runs: bench's timings).
    Its console log and its initramfs are its own files, its disks the
    caller's.

    `follow`, a console.Follower of `log`, runs while QEMU does: started
    just before it, stopped (having read the whole console) once it has
    exited."""
    prog = prog or Progress("boot")
    qemu_binary()   # before building the initramfs
    log = log or new_log(label)
    base = initramfs.base_archive(extra_files=extra_files, log=log + ".initramfs")
    initrd = initramfs.with_command(base, "#!/bin/sh\n" + script + "\n", initrd_path())
    cmd = qemu_cmd(kernel, initrd, disks, smp, mem, kvm, append, icount=icount, cache=cache)
    prog.say("booting %s with %s (timeout %ds, console log: %s)"
             % (os.path.basename(kernel), "KVM" if kvm else ("TCG icount" if icount else "TCG"),
                timeout, log))
    error = None
    try:
        with GuestSlots(every=every_slot), open(log, "w") as fh:
            # the guest's time from here: a wait for a slot is not the guest's
            t0 = time.monotonic()
            fh.write("# %s\n" % " ".join(shlex.quote(c) for c in cmd))
            fh.flush()
            if follow is not None:
                follow.start()
            proc = None
            try:
                # a process group of its own: a terminal's Ctrl-C reaches the
                # kit, which ends QEMU (core/interrupt.py); SIGKILL when this
                # thread ends, so that QEMU never outlives a kit killed outright
                proc = subprocess.Popen(dying_with_thread(cmd), stdin=subprocess.DEVNULL,
                                        stdout=fh, stderr=subprocess.STDOUT, process_group=0)
                with interrupt.guest(lambda: kill_group(proc)):
                    try:
                        proc.wait(timeout=timeout)
                    except subprocess.TimeoutExpired:
                        kill_group(proc)
                        proc.wait()
                        error = "guest timed out after %ds (console log: %s); last " \
                                "lines:\n%s" % (timeout, log, tail(log, 8))
            except BaseException:
                # Ctrl-C, a stop of every guest (interrupt.Stopped) or an
                # error while the guest runs: no QEMU outlives the slot it
                # was given
                if proc is not None and proc.poll() is None:
                    kill_group(proc)
                    proc.wait()
                raise
            finally:
                if follow is not None:
                    follow.stop()
    finally:
        try:
            os.unlink(initrd)
        except OSError:
            pass
    secs = time.monotonic() - t0
    rc, problems = scan(log)
    if error is None and rc is None:
        error = "guest stopped without reporting an exit status (qemu exit %s; console log: %s)" \
                "%s" % (proc.returncode, log,
                        "; first report: " + problems[0] if problems else
                        "; last lines:\n" + tail(log, 8))
    prog.say("guest finished in %.1fs: exit %s%s" % (secs, rc, ", %d kernel reports" % len(problems)
                                                    if problems else ""))
    # the guest's own time is QEMU's: no runner between the kit and the guest
    return BootResult(rc=rc if rc is not None else 255, log=log, seconds=secs,
                      guest_seconds=secs, problems=problems, error=error,
                      output=guest_output(log))


def guest_output(log):
    """The command's own output: lines between the start and exit markers."""
    out = []
    on = False
    with open(log, errors="replace") as fh:
        for line in untangle(fh):
            if "FORK-GUEST-START" in line:
                on = True
                continue
            if EXIT_RE.search(line):
                break
            if on:
                out.append(line)
    return out


def failure_message(res):
    if res.error:
        return res.error
    if res.problems:
        return "kernel report in the console log (%s):\n%s" % (
            res.log, report_block(res.log, res.problems[0]))
    return "guest command exited %d (console log: %s)" % (res.rc, res.log)
