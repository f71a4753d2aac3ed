"""import: make a Debian linux-source tarball one reproducible commit.

The commit lands on ``distro/<major.minor>`` in the kernel tree and is
tagged ``debian/<version>`` (DEP-14 spelling).  Author, committer, dates and
message are fixed, so the same tarball gives the same commit id anywhere.

Where the tarball comes from:

* ``import 6.12`` -- the installed ``linux-source-6.12`` (``/usr/src``), as
  ``apt-get install`` put it there;
* when that package is not installed, or with ``--archive``, or when a
  Debian version is named (``import 6.12.117-1``, ``import
  linux-source-7.3=7.3.4-1~bpo13+1``): Debian's archive, through a private
  apt state in ``work/apt`` built from the machine's own mirror and keyring
  for the suites bookworm(-updates, -security, -backports), trixie(-backports,
  -security) and sid.  The version is the one named, else the one a series
  of this repository is based on, else the newest.  The .deb is checked
  against the SHA256 of the signed index and the tarball is taken out of it
  without installing anything; suite, version and both SHA256 are printed
  and kept in ``work/debs/<package>_<version>/provenance.json``.

Two imports at once take turns (the "import" lock in ``work/locks``): the
second waits, then finds the snapshot in place.
"""

from ..repo.snapshot import do_import

HELP = "import a Debian linux-source-<ver> tarball as a reproducible commit"


def add_arguments(p):
    p.add_argument("version", nargs="?",
                   help="kernel major.minor (6.12), package name (linux-source-6.12), or a "
                        "Debian version (6.12.117-1, linux-source-7.3=7.3.4-1~bpo13+1); "
                        "default: the primary series' base")
    p.add_argument("--archive", action="store_true",
                   help="take the package from Debian's archive even if it is installed")
    p.add_argument("--refresh", action="store_true",
                   help="re-read the archive's indexes now (else at most daily)")
    p.add_argument("--tarball", help="import this tarball instead of the installed package's "
                                     "(requires --debian-version)")
    p.add_argument("--debian-version", help="package version to record with --tarball")
    p.add_argument("--update", action="store_true",
                   help="move distro/<ver> to this snapshot when it holds an older one "
                        "(the old one stays reachable through its debian/ tag)")


def main(args):
    do_import(args.version, args.tarball, args.debian_version, args.update,
              archive=args.archive, refresh=args.refresh)
    return 0
