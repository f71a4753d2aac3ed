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
"""

import re

from . import series as series_mod
from .cmd_branches import apply_patches
from .common import ForkError, check_output_path, git, require_ktree, rev_parse

HELP = "range-diff the primary series against a backport (the two side by side)"


def add_arguments(p):
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="one side (default: %(default)s)")
    p.add_argument("--against", action="append", default=None,
                   help="the other side (default: every backports/<ver>); repeatable")
    p.add_argument("--output", help="write the report as markdown to this file")


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
