"""frag: compare file fragmentation (allocation quality) between kernels.

Boots each revision on a fresh, identical ext2 image (256 MiB, 1 KiB
blocks: 32 groups of 8 MiB) and runs the seed workload with ``-k`` (files
kept): 2 tasks writing concurrently into one directory and into separate
top-level directories, and 4 tasks into one directory with files 8 times
larger (ci/guest/scripts/frag.sh).  Then, on the host, ``debugfs -R
"blocks FILE"`` gives every file's block list (its indirect blocks among
its data), and a fragment is a maximal run of consecutive blocks: a file
laid out in one run is one fragment.  What matters is the comparison at
equal workload.

``--reps N`` boots every revision N times, the order rotating from one
repetition to the next (multi-threaded TCG: the tasks' interleaving, and so
the allocations, differ from boot to boot); the table gives each
revision's mean and min..max over its boots.  ``--record`` writes the run
to ``records/frag/<id>.json`` (what ran: commits, image sha256s, guest
script, kit, QEMU, mke2fs; every file's figures), which BENCHMARKS.md
renders (``@@ frag <id>``).

Used to show what a reservation-window change does to allocation quality.
"""

import json
import os
import time

from ..build.kbuild import build
from ..core.errors import ForkError
from ..core.paths import check_output_path, repo_root
from ..core.progress import Progress
from ..core.records import write_json
from ..guest import guesttests
from ..guest.initramfs import base_archive
from ..guest.qemu import failure_message, run_guest
from ..repo.git import git
from ..repo.series import default_revs
from ..verify import frag as fraglib
from ..verify import kernel
from ..verify.bench import qemu_version

HELP = "compare blocks-per-file fragmentation of the seed workload between revisions"


def add_arguments(p):
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="revisions to compare (default: distro/<ver> and series/<ver> of "
                        "the primary series, patches/)")
    p.add_argument("--reps", type=int, default=1,
                   help="boots of every revision, in rotating order (default %(default)s)")
    p.add_argument("--record", action="store_true",
                   help="write the run to records/frag/<id>.json")
    p.add_argument("--json", help="write the per-file figures here")


def as_run(args, revs):
    cmd = ["tools/fork", "frag"] + list(revs)
    if args.reps != 1:
        cmd += ["--reps", str(args.reps)]
    return " ".join(cmd + ["--record"])


def main(args):
    if args.json:
        check_output_path(args.json, "--json")
    if args.reps < 1:
        raise ForkError("--reps %d: give 1 or more boots per revision" % args.reps)
    prog = Progress("frag")
    revs = list(args.revs or default_revs(None, None))
    if len(set(revs)) != len(revs):
        raise ForkError("a revision is named twice: use --reps N to boot one several times")
    builds = {rev: build(rev, prog=prog) for rev in revs}
    script = fraglib.script()
    run_id = time.strftime("%Y%m%d-%H%M%S")
    runs = {rev: [] for rev in revs}
    layout = None

    def fresh_image():
        return guesttests.make_image(guesttests.image_path("frag-%d" % os.getpid()),
                                     fraglib.IMAGE_SIZE, fraglib.IMAGE_BLOCK_SIZE)
    for rep in range(1, args.reps + 1):
        for rev in fraglib.rep_order(revs, rep):
            res = builds[rev]
            img = fresh_image()
            if layout is None:      # every boot gets the same image: read it once
                layout = fraglib.layout(img)
            prog.say("repetition %d of %d: %s" % (rep, args.reps, rev))
            boot = run_guest(res.image, script, [img], timeout=900, prog=prog, label="frag")
            if not boot.ok:
                raise ForkError("frag workload failed on %s: %s" % (rev, failure_message(boot)))
            err = guesttests.fsck(img, need_statfs=False)
            if err:
                raise ForkError("e2fsck after the frag workload on %s: %s" % (rev, err))
            files = fraglib.measure(img)
            os.unlink(img)
            runs[rev].append({"rep": rep, "files": files, "summary": fraglib.summary(files),
                              "kinds": fraglib.kinds(files)})
    print("%-20s %6s %10s %14s %16s" % ("revision", "files", "fragments", "frags/file",
                                         "blocks/fragment"))
    for rev in revs:
        for r in runs[rev]:
            s = r["summary"]
            print("%-20s %6d %10d %14.2f %16.1f" % (rev, s["files"], s["fragments"],
                                                    s["mean_fragments_per_file"],
                                                    s["mean_blocks_per_fragment"]))
    doc = {
        "id": run_id, "command": as_run(args, revs), "reps": args.reps,
        "kit": dict(kernel.kit_version(), key=kernel.kit_key()), "qemu": qemu_version(),
        "tools": kernel.tool_versions(),
        "guest": "QEMU TCG (multi-threaded), 2 vCPUs, 2048 MiB",
        "script_sha256": fraglib.sha256_text(script),
        # the guest's programs (seedload), init and busybox, by the key of
        # the archive they were booted from
        "initramfs": os.path.basename(base_archive()),
        "image": {"size": fraglib.IMAGE_SIZE, "block_size": fraglib.IMAGE_BLOCK_SIZE,
                  "mke2fs": kernel.tool_version("mke2fs", "-V"), "superblock": layout},
        "revisions": [{"rev": rev, "commit": builds[rev].commit, "tree": builds[rev].tree,
                       "subject": git(["log", "-1", "--format=%s", builds[rev].commit]),
                       "image_sha256": builds[rev].image_sha256, "flavour": "base",
                       "runs": runs[rev],
                       "over_boots": fraglib.revision_summary(runs[rev])} for rev in revs],
    }
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    if args.record:
        path = os.path.join(repo_root(), "records", "frag", "%s.json" % run_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_json(path, doc)
        prog.say("recorded: records/frag/%s.json (commit it)" % run_id)
    return 0
