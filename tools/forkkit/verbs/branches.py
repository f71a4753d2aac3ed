"""branches: lay out one stacked topic branch per patch of a stored series.

``topic/<name>`` (``backport/<ver>/<name>`` for a backport) is the previous
topic plus its one patch; ``series/<ver>`` is the top.  Commits are made
without touching any work tree (``git apply --cached`` into a scratch index)
and with the patch's author and date as committer, so the same series gives
the same commit ids anywhere.

A branch is only moved when everything on it is either what this command laid
out last time or a commit that is in the stored series (same patch-id).
Anything else is refused with the commits named, and nothing changes.

The stored files a series branch was laid out from (the series file and
its patches) are recorded as a git tree under ``refs/fork/stored/series/<ver>``:
``save`` compares them with the files in the repository, so that it never
writes a stale branch over a patch that changed since (a commit, a pull).
"""

from ..repo import series as series_mod
from ..repo.branches import lay_out

HELP = "lay out topic/<name> branches and series/<ver> from the stored series"


def add_arguments(p):
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="series directory (default: %(default)s; e.g. backports/6.1)")


def main(args):
    lay_out(series_mod.Series(args.series))
    return 0
