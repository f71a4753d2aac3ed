"""boot: boot a build in QEMU and run a command in the guest.

TCG is the default (``-accel tcg,thread=multi -cpu max``): nested KVM on
these hosts hangs or dies with an emulation failure.  ``--kvm`` opts in, and
every boot runs under a hard timeout either way.

The guest is a busybox-static initramfs with the project's guest programs in
/bin; ``--disk IMG`` attaches raw images as /dev/vda, /dev/vdb, ...  The
command after ``--`` runs under /bin/sh in the guest; its exit status becomes
this command's exit status.  The console log is kept under work/logs/; a
panic, Oops, BUG, WARNING, lockdep or KASAN report (or an ext2 error or a
counter mismatch) in it fails the boot even if the command succeeded.
"""

import os
import re
import shlex
import shutil
import subprocess
import time

from . import initramfs
from .cmd_build import FLAVOURS, build
from .common import ForkError, Progress, ensure_dir, new_log, tail, wpath

HELP = "boot a revision in QEMU (TCG) and run a command in the guest"

PROBLEMS = [
    r"Kernel panic",
    r"\bOops\b",
    r"\bBUG:",
    r"\bWARNING:",
    r"DEBUG_LOCKS_WARN_ON",
    r"possible circular locking",
    r"possible recursive locking",
    r"inconsistent lock state",
    r"KASAN",
    r"UBSAN",
    r"general protection fault",
    r"INFO: task .* blocked for more than",
    r"EXT2-fs \([^)]*\): error",
    r"counter mismatch",
    r"Unable to mount root",
]
PROBLEM_RE = re.compile("|".join(PROBLEMS))
EXIT_RE = re.compile(r"FORK-EXIT-STATUS: (\d+)")


def add_arguments(p):
    p.add_argument("rev", nargs="?", help="revision to build and boot (default: series head)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: base)")
    p.add_argument("--kernel", help="boot this bzImage instead of building a revision")
    p.add_argument("--disk", action="append", default=[],
                   help="raw disk image to attach (repeatable; /dev/vda, /dev/vdb, ...)")
    p.add_argument("--timeout", type=int, default=600,
                   help="hard timeout in seconds (default 600)")
    p.add_argument("--smp", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--mem", default="2048", help="guest memory in MiB (default 2048)")
    p.add_argument("--kvm", action="store_true",
                   help="use KVM instead of TCG (opt-in: nested KVM is unreliable here)")
    p.add_argument("--append", default="", help="extra kernel command line")
    p.set_defaults(accepts_rest=True, rest=[])


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


def qemu_cmd(kernel, initrd, disks, smp, mem, kvm, append):
    cmd = [qemu_binary()]
    if kvm:
        cmd += ["-accel", "kvm", "-cpu", "host"]
    else:
        cmd += ["-accel", "tcg,thread=multi", "-cpu", "max"]
    cmd += ["-smp", str(smp), "-m", str(mem), "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot", "-nodefaults",
            "-kernel", kernel, "-initrd", initrd,
            "-append", ("console=ttyS0 panic=-1 rdinit=/init printk.devkmsg=on " + append).strip()]
    for d in disks:
        if not os.path.isfile(d):
            raise ForkError("disk image %s does not exist" % d)
        cmd += ["-drive", "file=%s,format=raw,if=virtio,cache=unsafe" % os.path.abspath(d)]
    return cmd


def scan(log):
    """Return (exit status or None, [problem lines]) from a console log."""
    rc = None
    problems = []
    with open(log, errors="replace") as fh:
        for line in fh:
            m = EXIT_RE.search(line)
            if m:
                rc = int(m.group(1))
            if PROBLEM_RE.search(line):
                problems.append(line.rstrip())
    return rc, problems


def run_guest(kernel, script, disks=(), timeout=600, smp=2, mem="2048", kvm=False, append="",
              log=None, prog=None, label="boot", extra_files=None):
    """Boot `kernel` with `script` as the guest command; return a BootResult."""
    prog = prog or Progress("boot")
    qemu_binary()   # before building the initramfs
    log = log or new_log(label)
    base = initramfs.base_archive(extra_files=extra_files, log=log + ".initramfs")
    initrd = initramfs.with_command(base, "#!/bin/sh\n" + script + "\n",
                                    os.path.join(ensure_dir(wpath("tmp")),
                                                 "initrd-%d.cpio" % os.getpid()))
    cmd = qemu_cmd(kernel, initrd, disks, smp, mem, kvm, append)
    prog.say("booting %s with %s (timeout %ds, console log: %s)"
             % (os.path.basename(kernel), "KVM" if kvm else "TCG", timeout, log))
    t0 = time.monotonic()
    error = None
    with open(log, "w") as fh:
        fh.write("# %s\n" % " ".join(shlex.quote(c) for c in cmd))
        fh.flush()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            error = "guest timed out after %ds (console log: %s); last lines:\n%s" % (
                timeout, log, tail(log, 8))
    secs = time.monotonic() - t0
    try:
        os.unlink(initrd)
    except OSError:
        pass
    rc, problems = scan(log)
    if error is None and rc is None:
        error = "guest stopped without reporting an exit status (qemu exit %s; console log: %s)" \
                "%s" % (proc.returncode, log,
                        "; first report: " + problems[0] if problems else
                        "; last lines:\n" + tail(log, 8))
    prog.say("guest finished in %.1fs: exit %s%s" % (secs, rc, ", %d kernel reports" % len(problems)
                                                    if problems else ""))
    return BootResult(rc=rc if rc is not None else 255, log=log, seconds=secs, problems=problems,
                      error=error, output=guest_output(log))


def guest_output(log):
    """The command's own output: lines between the start and exit markers."""
    out = []
    on = False
    with open(log, errors="replace") as fh:
        for line in fh:
            if "FORK-GUEST-START" in line:
                on = True
                continue
            if EXIT_RE.search(line):
                break
            if on:
                out.append(line.rstrip("\r\n"))
    return out


def failure_message(res):
    if res.error:
        return res.error
    if res.problems:
        return "kernel report in the console log: %s\n(console log: %s)" % (res.problems[0], res.log)
    return "guest command exited %d (console log: %s)" % (res.rc, res.log)


def main(args):
    prog = Progress("boot")
    qemu_binary()   # fail now, not after a build
    if args.kernel:
        kernel = args.kernel
        if not os.path.isfile(kernel):
            raise ForkError("kernel %s does not exist" % kernel)
    else:
        kernel = build(args.rev, args.config, prog=prog).image
    script = " ".join(shlex.quote(a) for a in args.rest) if args.rest else "uname -a"
    res = run_guest(kernel, script, args.disk, args.timeout, args.smp, args.mem, args.kvm,
                    args.append, prog=prog)
    for line in res.output:
        print(line)
    if not res.ok:
        raise_msg = failure_message(res)
        if res.rc != 0 and not res.error and not res.problems:
            prog.say(raise_msg)
            return res.rc
        raise ForkError(raise_msg)
    return 0
