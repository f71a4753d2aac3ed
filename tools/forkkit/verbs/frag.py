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
import re
import statistics

from .kbuild import build
from .qemu import failure_message, run_guest
from .common import ForkError, Progress, check_output_path, run
from . import guesttests
from .cmd_bench import default_revs

HELP = "compare blocks-per-file fragmentation of the seed workload between revisions"

SCRIPT = """set -e
mount -t ext2 /dev/vda /mnt
for r in 1 2 3 4; do
	n=$((r * 64))
	mkdir /mnt/same$r /mnt/x$r /mnt/y$r /mnt/quad$r
	seedload -k -n $n -m 2 /mnt/same$r /mnt/same$r
	seedload -k -n $n -m 2 /mnt/x$r /mnt/y$r
	seedload -k -n $((n * 8)) -m 1 /mnt/quad$r /mnt/quad$r /mnt/quad$r /mnt/quad$r
done
umount /mnt
"""


def add_arguments(p):
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="revisions to compare (default: distro/<ver> and series/<ver> of "
                        "the primary series, patches/)")
    p.add_argument("--json", help="write the per-file figures here")


def fragments(blocks):
    if not blocks:
        return 0
    runs = 1
    for a, b in zip(blocks, blocks[1:]):
        if b != a + 1:
            runs += 1
    return runs


def file_blocks(image, path):
    out = run(["debugfs", "-R", "blocks %s" % path, image]).stdout
    return [int(x) for x in out.split()]


def measure(image):
    listing = run(["debugfs", "-R", "ls -p /", image]).stdout
    dirs = [m.group(1) for m in re.finditer(r"^/\d+/04\d+/\d+/\d+/([^/]+)/", listing, re.M)
            if m.group(1) not in (".", "..", "lost+found")]
    files = {}
    for d in sorted(dirs):
        sub = run(["debugfs", "-R", "ls -p /%s" % d, image]).stdout
        for m in re.finditer(r"^/\d+/10\d+/\d+/\d+/([^/]+)/", sub, re.M):
            path = "/%s/%s" % (d, m.group(1))
            blocks = file_blocks(image, path)
            files[path] = {"blocks": len(blocks), "fragments": fragments(blocks)}
    return files


def summary(files):
    frags = [f["fragments"] for f in files.values()]
    per = [f["blocks"] / f["fragments"] for f in files.values() if f["fragments"]]
    return {"files": len(files), "fragments": sum(frags),
            "mean_fragments_per_file": round(statistics.mean(frags), 2) if frags else 0,
            "mean_blocks_per_fragment": round(statistics.mean(per), 1) if per else 0}


def main(args):
    if args.json:
        check_output_path(args.json, "--json")
    prog = Progress("frag")
    results = {}
    for rev in args.revs or default_revs(None, None):
        res = build(rev, prog=prog)
        img = guesttests.make_image(guesttests.image_path("frag-%d" % os.getpid()),
                                    "256M", 1024)
        boot = run_guest(res.image, SCRIPT, [img], timeout=900, prog=prog, label="frag")
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
