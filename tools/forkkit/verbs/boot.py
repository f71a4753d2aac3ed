"""boot: boot a build in QEMU and run a command in the guest.

TCG is the default (``-accel tcg,thread=multi -cpu max``): nested KVM on
these hosts hangs or dies with an emulation failure.  ``--kvm`` opts in, and
every boot runs under a hard timeout either way.

The guest is a busybox-static initramfs with the project's guest programs in
/bin; ``--disk IMG`` attaches raw images as /dev/vda, /dev/vdb, ...  The
command after ``--`` runs under /bin/sh in the guest; its exit status becomes
this command's exit status.  The console log is kept under work/logs/; a
kernel report in it (panic, Oops, BUG, WARNING, lockdep, KASAN, KCSAN,
UBSAN, kmemleak, RCU stall, lockup, hung task, list corruption, an ext2 or
ext4 error, a counter mismatch) fails the boot even if the command
succeeded, quoting the whole report.
"""

import os
import shlex

from ..build.kbuild import build
from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..core.progress import Progress
from ..guest.qemu import BOOT_ARGS, failure_message, qemu_binary, run_guest

HELP = "boot a revision in QEMU (TCG) and run a command in the guest"


def add_arguments(p):
    p.add_argument("rev", nargs="?", help="revision to build and boot (default: series head)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: %(default)s)")
    p.add_argument("--kernel", help="boot this bzImage instead of building a revision "
                                    "(--config still chooses the boot arguments)")
    p.add_argument("--disk", action="append", default=[],
                   help="raw disk image to attach (repeatable; /dev/vda, /dev/vdb, ...)")
    p.add_argument("--timeout", type=int, default=600,
                   help="hard timeout in seconds (default %(default)s)")
    p.add_argument("--smp", type=int, default=2, help="vCPUs (default %(default)s)")
    p.add_argument("--mem", default="2048", help="guest memory in MiB (default %(default)s)")
    p.add_argument("--kvm", action="store_true",
                   help="use KVM instead of TCG (opt-in: nested KVM is unreliable here)")
    p.add_argument("--append", default="",
                   help="extra kernel command line (after the flavour's own, e.g. kasan's)")
    p.set_defaults(accepts_rest=True, rest=[])


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
    # the flavour's own boot arguments (as check and bisect boot it), then the user's
    append = " ".join(a for a in (BOOT_ARGS.get(args.config, ""), args.append) if a)
    res = run_guest(kernel, script, args.disk, args.timeout, args.smp, args.mem, args.kvm,
                    append, prog=prog)
    for line in res.output:
        print(line)
    if not res.ok:
        msg = failure_message(res)
        if res.rc != 0 and not res.error and not res.problems:
            prog.say(msg)
            return res.rc
        raise ForkError(msg)
    return 0
