"""Allocation quality: the seed workload with its files kept, then every
file's fragments read with debugfs on the host (``tools/fork frag``)."""

import hashlib
import re
import statistics

from ..core.proc import run
from ..core.tables import md_table
from ..guest import scripts

SCRIPT_FILE = "frag.sh"


def script():
    """The guest's workload: ci/guest/scripts/frag.sh."""
    return scripts.render(SCRIPT_FILE)[0]


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


# -- a run of several boots per revision, as a record --------------------------

IMAGE_SIZE = "256M"
IMAGE_BLOCK_SIZE = 1024


def rep_order(revs, rep):
    """The revisions in the order repetition `rep` (1, 2, ...) boots them:
    rotated by one each repetition, so that no revision always goes first."""
    k = (rep - 1) % len(revs)
    return revs[k:] + revs[:k]


def kind(path):
    """The workload a kept file belongs to, from its top directory
    (frag.sh): 2 tasks in one directory, 2 tasks in separate directories,
    4 tasks in one directory with files 8 times larger."""
    top = path.strip("/").split("/", 1)[0].rstrip("0123456789")
    return {"same": "2 tasks, one directory", "x": "2 tasks, separate directories",
            "y": "2 tasks, separate directories",
            "quad": "4 tasks, one directory, 8x larger files"}.get(top, top)


def kinds(files):
    """summary() of the files of each kind."""
    out = {}
    for path, f in files.items():
        out.setdefault(kind(path), {})[path] = f
    return {k: summary(v) for k, v in sorted(out.items())}


def spread(values):
    """[mean, min, max] of a list of numbers, rounded for a table."""
    return [round(sum(values) / len(values), 2), min(values), max(values)]


def revision_summary(runs):
    """Over a revision's boots: fragments per file and blocks per fragment,
    [mean, min, max] over the boots, overall and per kind of file."""
    def over(get):
        return {"mean_fragments_per_file": spread([get(r)["mean_fragments_per_file"]
                                                   for r in runs]),
                "mean_blocks_per_fragment": spread([get(r)["mean_blocks_per_fragment"]
                                                    for r in runs])}
    names = sorted({k for r in runs for k in r["kinds"]})
    return {"all": over(lambda r: r["summary"]),
            "kinds": {k: over(lambda r, k=k: r["kinds"][k]) for k in names
                      if all(k in r["kinds"] for r in runs)}}


def markdown(doc):
    """A record (records/frag/<id>.json) as markdown: what ran, the command
    and table()."""
    lines = ["### frag %s: fragments per file, %s" % (doc["id"], ", ".join(
        r["rev"] for r in doc["revisions"])), ""]
    lines += ["- reproduce: `%s`" % doc["command"],
              "- %d boot(s) of every revision, the order rotating from one repetition "
              "to the next; each boot a fresh ext2 image of %s with %d-byte blocks "
              "(%s), %s" % (doc["reps"], doc["image"]["size"],
                                   doc["image"]["block_size"], doc["image"]["mke2fs"],
                                   doc["guest"]),
              "- guest script: ci/guest/scripts/%s, sha256 %s; initramfs %s; kit %s%s; %s"
              % (SCRIPT_FILE, doc["script_sha256"][:12], doc.get("initramfs", "not recorded"),
                 (doc["kit"].get("commit") or "unknown")[:12],
                 " with uncommitted changes" if doc["kit"].get("dirty") else "",
                 doc.get("qemu") or "QEMU version not recorded"),
              "- image layout (dumpe2fs -h): %s" % ("; ".join(
                  "%s %s" % kv for kv in sorted((doc["image"].get("superblock") or {}).items()))
                  or "not recorded"),
              "- a fragment is a maximal run of consecutive blocks of a file "
              "(debugfs `blocks`, which lists a file's indirect blocks with its data, "
              "so a file laid out in one run is one fragment); fewer is better; each cell: fragments per file, mean [min..max] over "
              "the boots (the record has blocks per fragment too)", ""]

    return lines + table(doc)


def table(doc):
    """One row per revision: fragments per file, mean [min..max] over its
    boots, for all files and for each kind of file."""
    kinds_ = sorted({k for r in doc["revisions"] for k in r["over_boots"]["kinds"]})

    def cell(s):
        return "%g [%g..%g]" % tuple(s["mean_fragments_per_file"]) if s else "-"

    rows = [["`%s`" % r["commit"][:12], r["subject"], cell(r["over_boots"]["all"])]
            + [cell(r["over_boots"]["kinds"].get(k)) for k in kinds_]
            for r in doc["revisions"]]
    return md_table(["commit", "subject", "all %d files" % doc["revisions"][0]["runs"][0][
        "summary"]["files"]] + kinds_, rows)


LAYOUT_FIELDS = ("Filesystem features", "Block size", "Block count", "Inode count",
                 "Blocks per group", "Inodes per group", "Inode size", "Reserved block count")


def layout(image):
    """What the fresh image's layout is made of (dumpe2fs -h): the fields
    the allocator's choices depend on, beside mke2fs's version, since
    /etc/mke2fs.conf may differ between machines."""
    out = run(["dumpe2fs", "-h", image]).stdout
    fields = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in LAYOUT_FIELDS:
            fields[key.strip()] = " ".join(value.split())
    return fields


def sha256_text(text):
    return hashlib.sha256(text.encode()).hexdigest()
