"""frag: compare file fragmentation (allocation quality) between kernels.

Boots each revision on a fresh, identical ext2 image and runs the seed
workload with ``-k`` (files kept): 2 and 4 tasks writing concurrently into
one directory and into separate top-level directories, files of 64 KiB to
8 MiB.  Then, on the host, ``debugfs -R "blocks FILE"`` gives every file's
block list, and a fragment is a maximal run of consecutive blocks.
Indirect blocks sit inside the data, so even a perfect file has a few
fragments; what matters is the comparison at equal workload.

Used to show that a reservation-window change keeps allocation quality.
"""

import json
import os

from ..build.kbuild import build
from ..core.errors import ForkError
from ..core.paths import check_output_path
from ..core.progress import Progress
from ..guest import guesttests
from ..guest.qemu import failure_message, run_guest
from ..repo.series import default_revs
from ..verify.frag import measure, script, summary

HELP = "compare blocks-per-file fragmentation of the seed workload between revisions"

def add_arguments(p):
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="revisions to compare (default: distro/<ver> and series/<ver> of "
                        "the primary series, patches/)")
    p.add_argument("--json", help="write the per-file figures here")


def main(args):
    if args.json:
        check_output_path(args.json, "--json")
    prog = Progress("frag")
    results = {}
    for rev in args.revs or default_revs(None, None):
        res = build(rev, prog=prog)
        img = guesttests.make_image(guesttests.image_path("frag-%d" % os.getpid()),
                                    "256M", 1024)
        boot = run_guest(res.image, script(), [img], timeout=900, prog=prog, label="frag")
        if not boot.ok:
            raise ForkError("frag workload failed on %s: %s" % (rev, failure_message(boot)))
        err = guesttests.fsck(img, need_statfs=False)
        if err:
            raise ForkError("e2fsck after the frag workload on %s: %s" % (rev, err))
        files = measure(img)
        results[rev] = {"commit": res.commit, "files": files, "summary": summary(files)}
    print("%-20s %6s %10s %14s %16s" % ("revision", "files", "fragments", "frags/file",
                                         "blocks/fragment"))
    for rev, r in results.items():
        s = r["summary"]
        print("%-20s %6d %10d %14.2f %16.1f" % (rev, s["files"], s["fragments"],
                                                s["mean_fragments_per_file"],
                                                s["mean_blocks_per_fragment"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0
