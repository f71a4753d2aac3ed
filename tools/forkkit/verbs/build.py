"""build: out-of-tree build of one revision with the project's config.

The revision is checked out (detached) in a private git worktree,
``work/src``, so the user's own checkout is never touched and switching
between neighbouring commits rebuilds only what changed.  Objects go to
``work/build/<major.minor>-<flavour>`` (``O=``), compiled through ccache.

The config is ``make allnoconfig`` with the fragments of ``ci/kconfig/``
forced on: ``base.config`` plus the flavour's own (``debug.config`` for
``--config debug``, ...; the flavours are the choices of ``--config``
below, the fragments of each in kconfig.FLAVOURS); afterwards every option
a fragment asks for is asserted, naming the option that did not stick.

As ktest's PATCHCHECK does, the files a commit touches are recompiled with
``W=1`` (and sparse, ``C=1``, when installed and the kernel accepts it; the
image records whether it ran): a warning located in one of
those files fails the build.  The bzImage is kept in
``work/kernels/<sha256>.bzImage``, indexed by tree id, flavour and config;
the index records whether the patchcheck passed, so a build made without it
(``--no-patchcheck``, bench, bisect) is checked before it counts as built.
Prints the stored image's path.
"""

from ..build.kbuild import build
from ..build.kconfig import FLAVOURS

HELP = "build a revision (default: series head) out of tree with ccache"


def add_arguments(p):
    p.add_argument("rev", nargs="?", help="revision (default: series/<ver> of the primary series)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: %(default)s)")
    p.add_argument("--no-patchcheck", action="store_true",
                   help="skip the W=1/sparse recompile of the files the commit touches")
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="make -j (default %(default)s: one job per CPU)")


def main(args):
    res = build(args.rev, args.config, args.jobs, not args.no_patchcheck)
    print(res.image)
    return 0
