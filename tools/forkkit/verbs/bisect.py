"""bisect: find the first commit that fails the guest ext2 test.

    tools/fork bisect GOOD BAD [--test TEST] [--config FLAVOUR] [--no-verify]

``git bisect start --no-checkout BAD GOOD`` and ``git bisect run`` in a
private worktree, ``work/bisect`` (the user's checkout and its bisect state
are never touched; bisect refs are per worktree).  Each step calls back into
this tool (``tools/fork bisect --step``), which, for the commit under test:

  builds it (``build``, config flavour --config, no W=1 patchcheck):
        a commit that does not build is skipped (exit 125);
  boots it in QEMU and runs the guest test, then ``e2fsck -fn`` on the
        disk image and the guest's last statfs against the group
        descriptors: any failure (exit status, kernel report, timeout,
        e2fsck, counters) marks it bad (exit 1), else good (exit 0);
  anything that stops it from testing at all (QEMU missing, ...) ends the
        bisect (exit 128) instead of giving a wrong answer.

Guest tests: those of ``check`` (``--test`` below lists them); ``seed``,
bisect's quick one, is a short seedload run (three tasks, two sharing a
directory), fsreport, then the e2fsck and counter cross-check.

First BAD is tested (it must fail) and GOOD (it must pass), as ktest's
BISECT_CHECK does; end points that do not behave as claimed stop it before
any bisect (``--no-verify`` leaves this out: then a result that names BAD,
which git bisect never tests, is refused).  The result is the first bad
commit with ``git show --stat``, or the candidates when skipped commits hide
it, and a table of the steps.  The bisect always ends with ``git bisect
reset`` in its worktree.

For tests, ``FORK_BISECT_FAKE_STEP=PROG`` replaces build/boot/test: each
step runs ``PROG COMMIT`` (cwd: the bisect worktree, FORK_BISECT_COMMIT set)
and passes its exit status on to git bisect.
"""

from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..verify.bisect import run_bisect, step, tests

HELP = "bisect a range with build + boot + guest ext2 test + e2fsck per step"


def add_arguments(p):
    p.add_argument("good", nargs="?", metavar="GOOD", help="a commit that passes the test")
    p.add_argument("bad", nargs="?", metavar="BAD", help="a later commit that fails it")
    p.add_argument("--test", default="smoke",
                   help="guest test: %s (default: %%(default)s)" % ", ".join(sorted(tests())))
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: %(default)s)")
    p.add_argument("--timeout", type=int, default=900,
                   help="guest timeout in seconds (default: %(default)s)")
    p.add_argument("--verify", dest="verify", action="store_true", default=True,
                   help="first check that BAD fails and GOOD passes (the default)")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="do not test BAD and GOOD first (a result naming BAD is then refused)")
    p.add_argument("--step", action="store_true",
                   help="(internal, run by git bisect run) test one commit: "
                        "BISECT_HEAD of the current worktree, or GOOD if given")


def main(args):
    if args.step:
        return step(args)
    if not args.good or not args.bad:
        raise ForkError("give GOOD and BAD commits: `tools/fork bisect GOOD BAD`")
    return run_bisect(args)
