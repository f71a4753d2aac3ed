"""check: checkpatch, build, boot and a guest ext2 test, commit by commit.

For each commit of RANGE (default: the series' base commit, then every
commit of ``distro/<ver>..series/<ver>``), in this order:

* ``checkpatch.pl --strict`` on the commit, with the commit's tree as root
  and every cited commit held to the ``commit <sha> ("title")`` form;
* ``build`` with the W=1 (and sparse, where the kernel accepts it) patchcheck
  of the files it touches;
* ``boot`` of the built image in QEMU: any kernel report in the console
  (panic, Oops, BUG, WARNING, lockdep, KASAN, KCSAN, UBSAN, kmemleak, RCU
  stall, lockup, ext2/ext4 error, counter mismatch) fails it, quoted whole;
* the guest test (default ``smoke``: mkfs.ext2 on the host, mount in the
  guest, create/write/read back/truncate/unlink across directories from 2
  tasks, the seed workload, statfs, umount);
* on the host ``e2fsck -fn``, which must be clean, and the free block and
  inode counts: superblock = sum over the group descriptors = e2fsck's
  summary = the guest's last statfs (``counts``; a test that reports no
  statfs fails).

Sanitizer flavours (``kcsan``, ``kasan``, ``faults``): those kernels also
report races, bad accesses and leaks outside ext2.  A report whose stacks
name a function of fs/ext2 fails the commit, unless that code is stock:
the commit changed only some ext2 function bodies relative to the base (a
carried upstream fix), none of them (nor a caller of one, nor what one
tail-calls) is on the report's stacks, and the base shows the same report
(funcdiff, reports.judge).  A report elsewhere
that the base snapshot shows as well (same flavour and test, this run or
its recorded result) is listed as known, with the base's console log as
evidence; any other report fails.  For a KCSAN data race, the stacks are the racing
accesses' own top frames (a virtio race with ext2_writepages() far down
the flushing task's stack is not ext2's; its signature names the ext2
function it came from, so only the same race from the same ext2 code in
the base excuses it).  Every run of the base keeps its console as the
base's evidence (work/cache/base-consoles/, keyed by the sha256 of the
base image that booted, the flavour, the test and the test's inputs,
which include the test's definition; not by the kit's code): each check
reads all of them again with its own code and the ext2 function list of
that image's build.  So a report that the base shows only in some boots
is established by checking the base again (``check --force <base>
--config kcsan --test stress``), and stays established across kit
changes.  The consoles are found through the base's row, which names its
image: the base comes first in the default range; a range without it
uses the base's recorded row (recorded per kit, pass or fail), and without
one every report outside ext2 fails.

With several guest slots (``FORK_GUEST_SLOTS``; by default as many
2-vCPU, 2 GiB guests as the machine or its cgroup holds) the commits are
still built one at a time, in order, but the boots of built commits run
side by side, up to one per slot, while the next commits build; the table
and the records are those of a run commit after commit.  For a sanitizer
flavour the base's boot ends before the others are judged (its reports
are their evidence).  A Ctrl-C (or SIGTERM, SIGHUP) ends every guest that
runs, side by side or not, and gives back its slot: a cell that did not
finish records no run and leaves no disk, the records written before
stay, and the check exits 130 (128 + the signal) in one line.

Prints a table and exits non-zero if any cell failed.  Every run that
booted the image, pass or fail, is kept on record (the cache) by the
commit's tree id, config flavour (its ci/kconfig fragments), guest test
(ci/guest, its TESTS entry), the kit's code, the QEMU/e2fsprogs versions
and the accelerator (TCG, or KVM with $FORK_ACCEL: a verdict under one
never answers for the other); each names the sha256 of the image that was
booted.  A rebase that changes
nothing re-checks nothing; ``--force`` runs them again and adds the run to
the record.  A failure stays on it: a detector that sees a race only in
some boots (KCSAN, a race in ``stress``) does not turn green by retrying.
A later pass of a cell that failed is "flaky: k of n runs failed" and is
no pass, unless every failed run failed only on reports that the base
shows too (the rule above, with the base's evidence of the run that
passed; kernel.judge_runs()).

``--carry records/checks/<ver>/<old head>`` (a directory of tables, or
one table of it) builds, boots and tests nothing: after a reword of the
series (new logs, every tree the same) it writes each table of that
directory again under ``records/checks/<ver>/<new head>/``, same file name,
a row per commit of RANGE, each with the old row of its tree: the runs and
cells as recorded (a failure stays a failure), checkpatch run on the new
commit, and ``carried`` naming the old commit and table.  The flavour and
test are each table's own.  It refuses, writing nothing, a commit whose
tree has no row in a table, a row whose tree is no commit's of RANGE, and
a table that exists.

``--runner lava`` boots each guest through LAVA (``lava-run``, Debian's
lava-dispatcher) on a job the kit writes (guest/lava.py), ``--runner
lava-server`` through a LAVA server's worker (``tools/fork lava up``);
the disks are the kit's own files either way, and the verdict is the
kit's, from the console in the job's log.  A run is recorded with its
runner; a cell on record is not run again without ``--force``.  Where
LAVA fails rather than the kernel (no QEMU started, no kernel in the
console, the server does not answer), the boot cell is ``error`` with
the reason: no pass, no failure of the kernel, the check exits non-zero,
and the next check runs that cell again (a failure on record stays).  A
result from a worker whose QEMU is not the one the record names is
refused (tools/forkkit/README.md, "LAVA").
"""

import json

from ..build.kconfig import FLAVOURS
from ..core.paths import check_output_path, workdir_relative
from ..guest import guesttests
from ..guest.runners import RUNNERS
from ..repo.series import PRIMARY, Series
from ..verify.carry import carry
from ..verify.check import commits_of, markdown, run_check

HELP = "checkpatch + build + boot + guest ext2 test + e2fsck for every commit"


def add_arguments(p):
    p.add_argument("range", nargs="?",
                   help="commit range A..B or one revision (default: the whole series on its base)")
    p.add_argument("--series", default=PRIMARY,
                   help="series directory (default: %(default)s)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: %(default)s)")
    p.add_argument("--test", default="smoke", help="guest test: %s (default: %%(default)s)" % ", ".join(guesttests.TESTS))
    p.add_argument("--force", action="store_true",
                   help="run again whatever is on record (the run is added to the record; "
                        "an earlier failure stays)")
    p.add_argument("--timeout", type=int, default=900,
                   help="guest timeout in seconds (default: %(default)s)")
    p.add_argument("--runner", default="qemu", choices=RUNNERS,
                   help="what boots the guests (default: %(default)s): qemu (the kit's own), "
                        "lava (LAVA's lava-run on a job the kit writes), lava-server (a LAVA "
                        "server's worker: `tools/fork lava up`); the verdict is the kit's in "
                        "each")
    p.add_argument("--json", help="also write the results as JSON to this file")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the table as markdown (with what produced it) to this file")
    p.add_argument("--carry", metavar="DIR",
                   help="run nothing but checkpatch: carry the tables of records/checks/<ver>/"
                        "<head> (or one table) to RANGE's commits of the same trees")


def main(args):
    for path, what in ((args.json, "--json"), (args.markdown, "--markdown")):
        if path:
            check_output_path(path, what)
    series = Series(args.series)
    if args.carry:
        return 0 if all(r["passed"] for _, rows in carry(
            args.carry, series, commits_of(args.range, series),
            refused=[o for o in ("json", "markdown", "force") if getattr(args, o)] +
            [o for o, dflt in (("config", "base"), ("test", "smoke"), ("timeout", 900))
             if getattr(args, o) != dflt])
            for r in rows) else 1
    rows = run_check(args.range, series, args.config, args.test, args.force, args.timeout,
                     runner=args.runner)
    # the files may become records: their paths relative to the work directory
    kept = workdir_relative(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(kept, fh, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown(kept, series, args.config, args.test))
    return 0 if all(r["passed"] for r in rows) else 1
