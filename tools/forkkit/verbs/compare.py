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

from ..core.errors import ForkError
from ..core.paths import check_output_path
from ..repo import series as series_mod
from ..repo.compare import check_not_kept, report
from ..repo.git import require_ktree

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
