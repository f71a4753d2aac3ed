"""compare: put two stored series side by side (git range-diff).

    tools/fork compare [--series DIR] [--against DIR] [--output FILE]

Compares the primary series (``patches/``) with each backport
(``backports/<ver>/``), or the two directories named, as laid out in the
kernel tree: ``git range-diff distro/A..series/A distro/B..series/B``.
The two heads are built from the stored patch files exactly as
``tools/fork branches`` lays them out (same commit ids), without moving any
branch, so the report describes what the repository holds even where a
series branch carries unsaved work.  Both snapshots must be imported.

The report names both snapshots (package, Debian version, distro commit),
lists the patches pairwise with their range-diff status (``=`` same
change, ``!`` changed, ``<``/``>`` only on one side) and then the full
range-diff.  ``--output`` writes it as markdown (e.g. next to the
backport, ``backports/6.1/RANGE-DIFF.md``); otherwise it goes to stdout.
It writes over an earlier report, but not over another file that the
project repository tracks or that is in a series directory (a patch, the
series file) unless ``--force``.
"""

import os
import re

from . import series as series_mod
from .cmd_branches import apply_patches
from .common import ForkError, check_output_path, git, repo_root, require_ktree, rev_parse, run

HELP = "range-diff the primary series against a backport (the two side by side)"


def add_arguments(p):
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="one side (default: %(default)s)")
    p.add_argument("--against", action="append", default=None,
                   help="the other side (default: every backports/<ver>); repeatable")
    p.add_argument("--output", help="write the report as markdown to this file")
    p.add_argument("--force", action="store_true",
                   help="let --output write over a file the project repository tracks or a "
                        "file in a series directory (an earlier report needs no --force)")


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
    pairs = [line for line in out.splitlines() if re.match(r"^(-|\d+):\s+\S+ [=!<>] ", line)]
    lines = ["# %s/ vs %s/" % (a.rel, b.rel), ""]
    for s, rng in ((a, ra), (b, rb)):
        lines.append("- `%s/`: %s %s, `%s` = %s (%d patches)"
                     % (s.rel, s.package, s.base["version"], s.distro_branch,
                        rng.split("..")[0][:12], len(s.patches)))
    lines += ["", "`git %s`" % " ".join(cmd[:2] + ["%s..%s" % (a.distro_branch, a.head_branch),
                                                   "%s..%s" % (b.distro_branch, b.head_branch)]),
              "", "```"] + pairs + ["```", "", "```", out.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def main(args):
    if args.output:
        check_output_path(args.output, "--output")
        if not args.force:
            check_not_kept(args.output)
    require_ktree()
    a = series_mod.Series(args.series)
    if args.against:
        others = [series_mod.Series(x.rstrip("/")) for x in args.against]
    else:
        others = [s for s in series_mod.all_series() if s.rel != a.rel]
    if not others:
        raise ForkError("nothing to compare %s/ with: no backports/<ver>/ holds a base file "
                        "(name one with --against)" % a.rel)
    text = "\n".join(report(a, b) for b in others)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
        print("wrote %s" % args.output)
    else:
        print(text, end="")
    return 0
