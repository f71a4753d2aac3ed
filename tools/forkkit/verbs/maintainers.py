"""maintainers: write MAINTAINERS for this repository, in the kernel's format.

For each patch of the series there is one entry, titled with the patch
subject: ``F:`` lines name the upstream files the patch touches, and the
``M:``/``R:``/``L:``/``S:`` lines are the base tree's own entries that
``scripts/get_maintainer.pl`` yields for the patch.  They are copied from the
base tree's MAINTAINERS (the sections ``get_maintainer.pl --sections``
names, e.g. EXT2 FILE SYSTEM and THE REST), never typed in by hand, so the
file says who `tools/fork export` will mail and why.  The fork's own areas
(tools, tests, CI, backports, mailing) follow, maintained by the ext2-scale
developers.

The base tree is the series' distro commit, checked out sparsely (top-level
files, scripts/, include/ and the touched directories) in a temporary
worktree of the kernel tree; the user's checkout is not touched.

``--check`` changes nothing and exits 1 if MAINTAINERS is missing or stale.
``tools/fork export`` regenerates it.
"""

import os

from ..core.errors import ForkError
from ..core.progress import Progress
from ..repo import maintainers
from ..repo import series as series_mod
from ..repo.git import require_ktree, rev_parse
from ..repo.worktree import BaseTree

HELP = "write MAINTAINERS: upstream maintainers per patch, and the fork's own areas"


def add_arguments(p):
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 if MAINTAINERS is missing or stale")


def main(args):
    prog = Progress("maintainers")
    require_ktree()
    series = series_mod.Series()
    base = rev_parse(series.distro_branch)
    prog.say("sparse checkout of %s (%s)" % (series.distro_branch, base[:12]))
    with BaseTree(base, maintainers.series_dirs(series), prefix="maintainers-") as bt:
        text = maintainers.generate(series, bt, prog)
    diff = maintainers.compare(text)
    if args.check:
        if diff:
            print(diff, end="")
            raise ForkError("MAINTAINERS is %s: run `tools/fork maintainers` and commit it"
                            % ("missing" if not os.path.exists(maintainers.maintainers_path())
                               else "stale (see the diff above)"))
        prog.say("MAINTAINERS is up to date")
        return 0
    if diff:
        maintainers.write(text)
        prog.say("wrote %s (%d patch entries): commit it" % (maintainers.maintainers_path(),
                                                             len(series.patches)))
    else:
        prog.say("MAINTAINERS is up to date")
    return 0
