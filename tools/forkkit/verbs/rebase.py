"""rebase: move a stored series onto another Debian snapshot, patch by patch.

    tools/fork rebase --onto VERSION [--series DIR] [--into DIR] [--no-check]
    tools/fork rebase --onto VERSION --tarball FILE --debian-version V ...
    tools/fork rebase --continue | --skip | --abort | --status

VERSION is a major.minor (6.12, 6.1) or a package name (linux-source-6.1).
The snapshot is imported as by ``tools/fork import`` (from the installed
package, or from --tarball): onto the series' own major.minor (a newer
linux-source-6.12) ``distro/<ver>`` moves to it, as ``import --update``
does; onto another major.minor it becomes (or is) ``distro/<that ver>``.

Every patch of the series is then replayed in a private git worktree,
``work/rebase/tree``, and reported as exactly one of

  applied cleanly   ``git apply`` takes it as it is (maybe at an offset)
  3-way merge       ``git apply`` refuses it, ``git am -3`` merges it
  CONFLICT          ``git am -3`` leaves conflicts: the patch's hunks that
                    do not apply and the conflict regions are listed

On a conflict it stops with ``git am`` in progress in that worktree and the
conflict markers in place: resolve, ``git add``, then ``--continue``; or
``--skip`` the patch (it is dropped from the series); or ``--abort``.

Nothing the user has is touched until every patch is replayed: the kernel
tree must be clean, and before anything changes the branches and tags
(distro/, topic/, backport/, series/, debian/ tags, refs/fork/), the kernel
tree's HEAD and the series directories are recorded in
``work/rebase/state.json``.  Only ``distro/<ver>`` (and its debian/ tag)
moves before the end; a kernel tree that has that branch checked out is
detached first, so its files stay as they are.  ``--abort`` puts back every
ref the rebase changed (a ref someone else moved meanwhile is left alone and
named), the kernel tree's HEAD and the series files; only the imported
snapshot's objects stay in the object store.

Where the result goes: by default the series is updated in place (its
``base`` file names the new snapshot, its patch files are rewritten).  With
``--into backports/<ver>`` the result is written there instead and the
source series is left as it was; that directory must hold no patches yet.
Two series cannot share a ``distro/<ver>``/``series/<ver>`` pair, so a series
that already lives on the target major.minor makes the rebase refuse and say
which ``--into`` to use.  A series with a ``branches: NAME`` line in its base
file keeps it where it goes (``--series next --into next/6.12``: branches
``next/6.12`` and ``next-topic/6.12/<name>``, beside ``series/6.12``), unless
the ``--into`` directory already has a base file, whose line (or its lack)
then decides.

On success the patch files are written (``git format-patch``, as ``save``
writes them), the branches are laid out again (``topic/<name>`` or
``backport/<ver>/<name>`` and ``series/<ver>``; the old tips stay under
``refs/fork/prev/``), ``git range-diff old_base..old_head
new_base..new_head`` is printed, and ``check`` runs on the new series unless
``--no-check``.  What that check needs (the guest test, the build
dependencies, QEMU, e2fsprogs) is asked before anything moves, and the
rebase stays in progress until the check passes: ``--abort`` then still puts
the old series back (series files edited since the rebase wrote them are
left alone and named), ``--continue`` checks again, ``--continue
--no-check`` keeps the new series unchecked.  The refs are recorded before
the branches are laid out, so a lay-out interrupted at any step (Ctrl-C)
is undone by ``--abort`` or finished by ``--continue``.
"""

import argparse

from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.progress import Progress
from ..repo import rebase
from ..repo import series as series_mod
from ..repo.git import require_ktree
from ..verify import check as checker

HELP = "move the series onto another Debian snapshot (import, replay, range-diff, check)"


def add_arguments(p):
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--onto", metavar="VERSION",
                      help="snapshot to move to: major.minor, linux-source-<major.minor> or a "
                           "Debian version (6.12.117-1)")
    mode.add_argument("--continue", dest="cont", action="store_true",
                      help="after resolving a conflict (and `git add`): go on")
    mode.add_argument("--skip", action="store_true",
                      help="drop the conflicting patch from the series and go on")
    mode.add_argument("--abort", action="store_true",
                      help="stop and restore branches, tags, kernel tree HEAD and series files")
    mode.add_argument("--status", action="store_true", help="show the rebase in progress")
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="series to move (default: %(default)s; e.g. backports/6.1)")
    p.add_argument("--into", metavar="DIR",
                   help="write the result into this series directory (e.g. backports/6.1) "
                        "instead of updating --series in place")
    p.add_argument("--tarball", help="import this tarball instead of the installed package's "
                                     "(requires --debian-version)")
    p.add_argument("--debian-version", help="package version to record with --tarball")
    p.add_argument("--archive", action="store_true",
                   help="take the snapshot from Debian's archive even if the package is "
                        "installed (see `import`)")
    p.add_argument("--check", action=argparse.BooleanOptionalAction,
                   default=None, help="run `check` on the new series afterwards (default: yes)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour for the check (default: %(default)s)")
    p.add_argument("--test", default="smoke",
                   help="guest test for the check, as check's --test (default: %(default)s)")
    p.add_argument("--timeout", type=int, default=900,
                   help="guest timeout for the check in seconds (default: %(default)s)")


def main(args):
    prog = Progress("rebase")
    if not (args.onto or args.cont or args.skip or args.abort or args.status):
        raise ForkError("say what to do: --onto VERSION to start, or --continue, --skip, "
                        "--abort, --status")
    if not args.onto and (args.tarball or args.debian_version or args.into):
        raise ForkError("--tarball, --debian-version and --into go with --onto")
    require_ktree()
    with Lock("rebase"):
        if args.abort:
            return rebase.do_abort(prog)
        if args.status:
            return rebase.do_status()
        if args.cont:
            return rebase.do_continue(args.check, prog, checker)
        if args.skip:
            return rebase.do_skip(args.check, prog, checker)
        return rebase.start(args.onto, args.series, args.into, args.tarball,
                            args.debian_version, args.archive, args.check, args.config,
                            args.test, args.timeout, checker)
