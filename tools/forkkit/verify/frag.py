"""Allocation quality: the seed workload with its files kept, then every
file's fragments read with debugfs on the host (``tools/fork frag``)."""

import re
import statistics

from ..core.proc import run
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
