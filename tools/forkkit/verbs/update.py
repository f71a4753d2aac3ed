"""update: follow Debian's point releases of each series' kernel.

    tools/fork update [--series DIR ...] [--to VERSION] [--dry-run] [--no-check]

For each series (default: the primary one and every backport) the archive
is asked -- through the private apt state of ``import`` -- for the newest
``linux-source-<major.minor>`` that is newer than the series' base
(``dpkg --compare-versions``), or for exactly the Debian version ``--to``
names (one point release at a time, e.g. to check each in turn).  If there
is one, the series is moved there
as ``rebase --onto <version> --archive`` does it, in place: import, replay
every patch, lay the branches out, range-diff, then ``check``.

A patch that conflicts stops the update where it is, as ``rebase`` stops:
the series' files and branches stay as they were, the rebase waits in
``work/rebase/tree`` for ``rebase --continue`` or ``--abort``, and no later
series is touched.  A failing check is reported and stops the update too;
that rebase waits as well (``--abort`` puts the series back, ``--continue``
checks again).  What the check needs (its guest test, the build
dependencies, QEMU, e2fsprogs) is asked before anything moves.
One table at the end: series, from, to, result.  ``--dry-run`` only asks
the archive.
"""

import argparse

from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.progress import Progress
from ..repo import rebase
from ..repo import series as series_mod
from ..repo.debian import newest_for
from ..repo.git import require_ktree
from ..verify import check as checker

HELP = "move each series to Debian's newest point release of its kernel (rebase + check)"


def add_arguments(p):
    p.add_argument("--series", action="append", default=[], metavar="DIR",
                   help="only this series directory (repeatable; default: all)")
    p.add_argument("--to", metavar="VERSION",
                   help="this Debian version (e.g. 6.12.117-1) instead of the newest")
    p.add_argument("--dry-run", action="store_true",
                   help="only say what would be updated")
    p.add_argument("--check", action=argparse.BooleanOptionalAction, default=True,
                   help="run `check` on each updated series (default: yes)")
    p.add_argument("--refresh", action="store_true",
                   help="re-read the archive's indexes now (else at most daily)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour for the check (default: %(default)s)")
    p.add_argument("--test", default="smoke",
                   help="guest test for the check, as check's --test (default: %(default)s)")


def report(rows):
    head = ("series", "from", "to", "result")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def main(args):
    prog = Progress("update")
    require_ktree()
    chosen = [series_mod.Series(d.rstrip("/")) for d in args.series] or series_mod.all_series()
    if args.to and len(chosen) != 1:
        raise ForkError("--to names one Debian version: say which series it is for "
                        "(--series DIR)")
    if args.check and not args.dry_run:
        checker.check_ready(args.config, args.test)
    rows, status = [], 0
    for n, s in enumerate(chosen):
        found = newest_for(s, prog, args.refresh and n == 0, args.to)
        if found is None:
            rows.append([s.rel, s.base["version"], "-", "up to date"])
            continue
        version, suite = found
        if args.dry_run:
            rows.append([s.rel, s.base["version"], "%s (%s)" % (version, suite),
                         "would update"])
            continue
        prog.say("%s: %s -> %s (%s)" % (s.rel, s.base["version"], version, suite))
        try:
            with Lock("rebase"):
                rc = rebase.start(version, s.rel, archive=True, check=args.check,
                                  config=args.config, test=args.test, checker=checker)
        except ForkError as exc:
            waits = rebase.load_state() is not None
            rows.append([s.rel, s.base["version"], version, "FAILED: %s%s"
                         % (str(exc).splitlines()[0],
                            " (the rebase waits: rebase --continue or --abort)" if waits else "")])
            status = 1
            break
        if rc != 0:
            rows.append([s.rel, s.base["version"], version,
                         "CONFLICT: stopped in work/rebase/tree (rebase --continue or --abort)"])
            status = 1
            break
        rows.append([s.rel, s.base["version"], version,
                     "updated%s" % (", checked" if args.check else "")])
    for s in chosen[len(rows):]:
        rows.append([s.rel, s.base["version"], "-", "not tried (stopped above)"])
    print("\n" + report(rows))
    return status
