"""Two stored series side by side: `git range-diff` of their heads as
the stored patch files lay them out (``tools/fork compare``)."""

import os
import re

from ..core.errors import ForkError
from ..core.paths import repo_root
from ..core.proc import run
from . import series as series_mod
from .branches import apply_patches
from .git import git, rev_parse


REPORT_HEADING = re.compile(r"# \S+/ vs \S+/\n")


def is_report(path):
    """Whether the file at `path` holds a report of compare (its heading)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return bool(REPORT_HEADING.fullmatch(fh.readline()))


def keeps(path):
    """Why the project keeps the existing file at `path`, or None."""
    full = os.path.realpath(path)
    if os.path.dirname(full) in {os.path.realpath(s.path) for s in series_mod.all_series()}:
        return "is in the series directory %s/" % os.path.relpath(os.path.dirname(full),
                                                                  os.path.realpath(repo_root()))
    proc = run(["git", "ls-files", "--error-unmatch", "--", full], cwd=repo_root(), check=False)
    if proc.returncode == 0:
        return "is tracked in the project repository"
    return None


def check_not_kept(path):
    """Refuse an --output that would write over a file the project keeps."""
    why = os.path.isfile(path) and not is_report(path) and keeps(path)
    if why:
        raise ForkError("--output %s %s and holds no report of compare: name another file, or "
                        "add --force to write over it; nothing was written" % (path, why))


def stored_head(s):
    """The series head built from the stored patch files, as `branches` lays it out."""
    return apply_patches(rev_parse(s.distro_branch), s.patches)


def report(a, b):
    ra = "%s..%s" % (rev_parse(a.distro_branch), stored_head(a))
    rb = "%s..%s" % (rev_parse(b.distro_branch), stored_head(b))
    cmd = ["range-diff", "--no-color", ra, rb]
    out = git(cmd)
    pairs = [line for line in out.splitlines() if re.match(r"^ *(-|\d+):\s+\S+ [=!<>] ", line)]
    lines = ["# %s/ vs %s/" % (a.rel, b.rel), ""]
    for s, rng in ((a, ra), (b, rb)):
        lines.append("- `%s/`: %s %s, `%s` = %s (%d patches)"
                     % (s.rel, s.package, s.base["version"], s.distro_branch,
                        rng.split("..")[0][:12], len(s.patches)))
    lines += ["", "`git %s`" % " ".join(cmd[:2] + ["%s..%s" % (a.distro_branch, a.head_branch),
                                                   "%s..%s" % (b.distro_branch, b.head_branch)]),
              "", "```"] + pairs + ["```", "", "```", out.rstrip("\n"), "```", ""]
    return "\n".join(lines)
