"""fstests: the community's filesystem regression suite on ext2, base
kernel against series kernel, in QEMU (TCG).

Builds BASE (default ``distro/<ver>``) and SERIES (default
``series/<ver>``) with the ``fstests`` config flavour, boots each with the
same tests and prints per test the base status, the series status
(pass / fail / notrun), the times and the verdict: **new failure** (fails
on the series only), fixed, same.  Exits 1 on any new failure, 3 when the
time limit stopped the run before every test ran on both kernels (run the
same command again to continue), 0 otherwise.

Tests: names (``generic/001 generic/013``), or ``--group G`` (every
generic/ and ext4/ test of that fstests group, as ``check -g`` selects for
ext2; default ``quick``).  Tests in ``ci/fstests/ext2.exclude`` (failing or
hanging on the base kernel, each with its measured reason) are left out
and listed.

The guest: the kit's initramfs mounts a Debian root image (debootstrap of
the machine's own mirror, fstests with ci/fstests/patches built inside it;
made once per machine and cached in ~/.cache/fork-kit/fstests-roots/,
shared by every clone; making it needs root) from /dev/vda and runs
fstests' ``./check -R xunit`` in a chroot with FSTYP=ext2, TEST_DEV=/dev/vdb and
SCRATCH_DEV=/dev/vdc (``mkfs.ext2``, default mount options; fstests' own
``_check_filesystems`` after every test), results on /dev/vdd, which
starts with the kernel's .config (KCONFIG_PATH: the quota tests ask
``_require_kernel_config``; the build keeps it beside the image).  The guest
has no udev (DM_DISABLE_UDEV: libdevmapper makes the /dev/mapper nodes)
and brings ``lo`` up for the tests that talk TCP.  After every boot the
host runs ``e2fsck -fn`` on both disks and copies fstests'
results/ tree (with ``result.xml``) out with debugfs.

Results are kept per kernel image (with the root, the profile, the
accelerator and the runner) in
``work/fstests/kernels/<image>-<root>-<packages>-<profile>/`` (``...-kvm/``
for results under KVM, $FORK_ACCEL; ``...-lava/``, ``...-lava-server/``
for --runner, below): ``tests.json`` and per
boot the console log, fstests' results tree (``result.xml``) and the e2fsck
output; so a base kernel's results serve every series compared with it.
Each comparison writes ``work/fstests/runs/<key>/``: ``fstests.json``
(every test, every boot), ``fstests.md`` and the command that repeats it.
Runs resume per test: the same command skips what already finished
(``--fresh`` runs the selected tests again on both kernels).  The series
kernel builds while the base kernel's guest runs.
``--record DIR`` keeps each kernel's finished tests, boots, result.xml,
e2fsck output and xz'd console in ``DIR/<image>-<root>-<packages>-<profile>/``
(each boot's guest script named by its sha256, not kept) after every boot,
to commit (``records/fstests/<ver>``; records/README.md): the same command on a
fresh machine builds the same image (the kit's builds are reproducible),
finds the record by that name and runs only what it lacks.  A record is only read for exactly
that image, guest root (key and Debian package versions), fstests commit
and patches, profile, accelerator and runner (a record that names none is
TCG's and the kit's own QEMU's).
Two work directories may share DIR; DIR may not be under
``work/fstests/kernels``.
``--shards N`` (default: as many as the machine has guest slots,
``FORK_GUEST_SLOTS``) splits each kernel's tests into N shards whose summed
durations are balanced (longest first, each to the shard with the least;
a test's duration is the median of what the stores in work/, the --record
directory and records/fstests/ hold for it under the same accelerator,
the median of those for a test none holds) and boots them at once, a
guest each; their boots land in the same store and record and give the
same report as one guest would.
``--time-limit S`` bounds the test time (builds not counted): the test
running at the limit may finish within 300 s and keeps its result, check
is stopped as the next one starts, and the run ends with what finished.
The test check would still wait on (the next one, or one still running
300 s after the limit) is cut: its processes are killed, so the guest
unmounts its disks and the host's e2fsck reads them as a clean shutdown
left them; it has no result and the next run runs it.  fstests
comes from ci/fstests/source.conf (URL and commit; $FORK_FSTESTS_URL
overrides), recorded in every result.

``--no-boot`` boots nothing and writes the report of what the kernels'
stores and the --record directory hold, as a run that found nothing left
to run would: a series head that only rewords logs builds the same image,
so its report shows the recorded results under the new head's name.

``--runner lava`` boots each shard's guest through LAVA (``lava-run``,
Debian's lava-dispatcher, as root) on a job the kit writes, ``--runner
lava-server`` through a LAVA server's worker (``tools/fork lava up``):
the same kernel, initramfs, guest script and four disks (the root's
copy-on-write overlay as qcow2, test, scratch and results: the kit's own
files, read by the host's e2fsck and debugfs after the job), the job's
metadata naming the image's sha256, the root, the profile, the fstests
commit and the shard's tests; the statuses are the kit's, from the
console and result.xml, as with its own QEMU.  The runner is part of the
store's name as the accelerator is: ``<store>-lava`` and
``<store>-lava-server`` (after ``-kvm``: ``<store>-kvm-lava``), in
work/fstests/kernels and in the --record directory, so a test run both
ways has two results to compare and neither answers for the other; every
boot names its runner (a store or record that names none is the kit's
QEMU's).  Where LAVA fails rather than the kernel (lava-run missing, no
kernel in the job's console, a job log that ends without LAVA's result,
an error of LAVA's own, the server does not answer), the run ends with
one line naming the shard; no boot of that shard is recorded, and the
same command runs its tests again.  A job whose QEMU ended in the middle
of a test is judged as the kit's own QEMU's: that test failed.  Each boot records the job's wall
time (``seconds``) and the guest's own (``guest_seconds``: from QEMU's
start to the guest's last console line, by LAVA's time stamps); the run
ends with the time LAVA added per job.
"""

from ..guest.runners import RUNNERS
from ..repo.series import PRIMARY
from ..verify import fstests
from ..verify.fstests_run import run_fstests

HELP = "fstests on ext2: base vs series kernel in QEMU; new failures fail"


def add_arguments(p):
    p.add_argument("args", nargs="*", metavar="BASE SERIES TESTS",
                   help="up to two revisions (base, then series), then fstests test names "
                        "such as generic/001")
    p.set_defaults(intermixed="args")
    p.add_argument("--series", default=PRIMARY,
                   help="series directory for the default revisions (default: %(default)s)")
    p.add_argument("--group", help="run every generic/ and ext4/ test of this fstests group "
                                   "(default when no test is named: quick)")
    p.add_argument("--time-limit", type=int, default=0, metavar="S",
                   help="stop after S seconds of testing (both kernels; builds not counted); "
                        "rerun the same command to continue; 0: no limit (default: "
                        "%(default)s)")
    p.add_argument("--block-size", type=int, choices=fstests.BLOCK_SIZES, metavar="N",
                   help="mkfs.ext2 -b N for the test and scratch filesystems (%s; "
                   "default: mke2fs's choice, 4096 on the 4 GiB disks); part of every "
                   "record's identity" % ", ".join(map(str, fstests.BLOCK_SIZES)))
    p.add_argument("--shards", type=int, metavar="N",
                   help="split each kernel's tests into N shards balanced by their recorded "
                        "times and boot them at once, a guest each (default: the guest slots, "
                        "FORK_GUEST_SLOTS; a shard beyond them waits for a free one)")
    p.add_argument("--runner", default="qemu", choices=RUNNERS,
                   help="what boots each shard's guest (default: %(default)s): qemu (the "
                        "kit's own), lava (LAVA's lava-run on a job the kit writes), "
                        "lava-server (a LAVA server's worker: `tools/fork lava up`); the "
                        "results go to a store of the runner's own (<store>-lava, "
                        "<store>-lava-server)")
    p.add_argument("--fresh", action="store_true",
                   help="forget the finished tests of this run and start again")
    p.add_argument("--record", metavar="DIR",
                   help="keep each kernel's finished tests in DIR/<kernel store>/, each "
                        "boot's guest script named by its sha256 and the kit's commit "
                        "(a directory to commit, e.g. records/fstests/<ver>) and "
                        "continue from what DIR holds: runs on other machines resume there")
    p.add_argument("--no-boot", action="store_true",
                   help="boot nothing: write the report (--markdown, --json) of what the "
                        "kernels' stores and --record hold, the kernels built (or found "
                        "built) to find their results by image; the report's reproduce "
                        "line is the command without --no-boot")
    p.add_argument("--json", help="also write the JSON of every test to this file")
    p.add_argument("--markdown", help="also write the markdown table to this file")


def main(args):
    return run_fstests(args)
