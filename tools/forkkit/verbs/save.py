"""save: write the kernel tree's series branch back into the repository.

The commits ``distro/<ver>..series/<ver>`` (or ``--from REV``) become the
series directory's patch files and ``series`` file, via ``git format-patch``
with stable output (zero From-line id, no version signature, no numbering),
so saving an unchanged series changes no file.  Then the topic branches are
laid out again from what was saved.

Uncommitted changes to the series directory in this repository are never
overwritten: save refuses and says so.  Nor are committed ones that the
branch lacks: when the series file or a patch changed since ``branches``
laid out the branches from them (a commit, a pull), save refuses and names
the files, unless ``--overwrite``.  When laying out the branches again
fails (a dirty work tree on a branch that moves, a commit of its own on a
topic branch), save puts the series directory back as it was.
"""

from ..repo import series as series_mod
from ..repo.save import save

HELP = "store the series branch's commits as the repo's patch files"


def add_arguments(p):
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="series directory (default: %(default)s; e.g. backports/6.1)")
    p.add_argument("--from", dest="rev", help="revision to save (default: series/<ver>)")
    p.add_argument("--overwrite", action="store_true",
                   help="write the branch over stored files (series file, patches) that changed "
                        "since `branches` laid the branch out from them, e.g. by a commit or a "
                        "pull; without it save refuses and names them")


def main(args):
    save(series_mod.Series(args.series), args.rev, args.overwrite)
    return 0
