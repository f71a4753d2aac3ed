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
    """A record (records/frag/<id>.json) as markdown: what ran, the command,
    a table per kind of file with every revision's mean [min..max] over its
    boots."""
    lines = ["### frag %s: fragments per file, %s" % (doc["id"], ", ".join(
        r["rev"] for r in doc["revisions"])), ""]
    lines += ["- reproduce: `%s`" % doc["command"],
              "- %d boot(s) of every revision, the order rotating from one repetition "
              "to the next; each boot a fresh ext2 image of %s with %d-byte blocks "
              "(mke2fs %s), %s" % (doc["reps"], doc["image"]["size"],
                                   doc["image"]["block_size"], doc["image"]["mke2fs"],
                                   doc["guest"]),
              "- guest script: ci/guest/scripts/%s, sha256 %s; kit %s"
              % (SCRIPT_FILE, doc["script_sha256"][:12], doc["kit"]["commit"][:12]),
              "- a fragment is a maximal run of consecutive blocks of a file "
              "(debugfs `blocks`); indirect blocks sit among the data, so a "
              "file of more than 12 blocks has at least 2; lower fragments per "
              "file and higher blocks per fragment are better", ""]

    def cell(v):
        return "%g [%g..%g]" % tuple(v)

    groups = [("all files", lambda s: s["all"])] + [
        (k, lambda s, k=k: s["kinds"].get(k)) for k in sorted(
            {k for r in doc["revisions"] for k in r["over_boots"]["kinds"]})]
    for title, get in groups:
        rows = []
        for r in doc["revisions"]:
            s = get(r["over_boots"])
            if s is None:
                continue
            rows.append(["`%s`" % r["commit"][:12], r["subject"],
                         str(r["runs"][0]["summary"]["files"]),
                         cell(s["mean_fragments_per_file"]),
                         cell(s["mean_blocks_per_fragment"])])
        lines += ["#### %s" % title, "",
                  *md_table(["commit", "subject", "files", "fragments per file",
                             "blocks per fragment"], rows), ""]
    return lines


def sha256_text(text):
    return hashlib.sha256(text.encode()).hexdigest()
