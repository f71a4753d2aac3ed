"""report: what the committed records say, written as documents or as a
KCIDB report.

    tools/fork report --docs [--check]
    tools/fork report --kcidb FILE

Each output is made from the records under records/ only (records/README.md
describes them), so the same records give the same bytes.

--kcidb FILE writes the check and fstests records as one KCIDB report
(KernelCI's common database, schema v5.3): a checkout per commit checked,
a build per image, a test per check cell and per fstests result
(publish/kcidb.py has the mapping).  It writes only a report that
kcidb-io's schema accepts: kcidb-io is cloned at run time from
$FORK_KCIDB_IO or the bundle shared/kcidb/kcidb-io.bundle next to this
repository, into the work directory.
"""

from ..core.errors import ForkError

HELP = "documents and KCIDB reports made from the committed records"


def add_arguments(p):
    # --docs: the documents (CHECKS.md, FSTESTS.md, BENCHMARKS.md)
    # --kcidb: the KCIDB report
    p.add_argument("--kcidb", metavar="FILE",
                   help="write the records as a KCIDB v5.3 report to FILE, validated with "
                   "kcidb-io first (publish/kcidb.py has the mapping)")
    p.add_argument("--kcidb-url", metavar="URL",
                   help="with --kcidb: where this repository is published (https://...), to "
                   "give each checkout's patch files a URL (patchset_files)")
    pass


def run_kcidb(args):
    """--kcidb FILE: the report of the committed records, written only when
    kcidb-io accepts it."""
    import time
    from ..core.paths import check_output_path, repo_root
    from ..core.records import write_text
    from ..publish import kcidb
    check_output_path(args.kcidb, "KCIDB report")
    url = args.kcidb_url
    if url is not None and not url.startswith(("https://", "http://")):
        raise ForkError("--kcidb-url %r is not an http(s) URL: give where this repository is "
                        "published, such as https://example.org/ext2fork" % url)
    start = time.monotonic()
    rep = kcidb.report(repo_root(), base_url=url)
    made = time.monotonic() - start
    schema, took = kcidb.timed_validate(rep)
    data = kcidb.dumps(rep)
    write_text(args.kcidb, data.decode())
    print("report: wrote %s (%d bytes): %d checkouts, %d builds, %d tests; made in %.1fs, "
          "valid KCIDB v%s (kcidb-io) in %.1fs"
          % (args.kcidb, len(data), len(rep["checkouts"]), len(rep["builds"]),
             len(rep["tests"]), made, schema, took))
    return 0


def main(args):
    if args.kcidb_url and not args.kcidb:
        raise ForkError("report: --kcidb-url goes with --kcidb (tools/fork report --kcidb FILE "
                        "--kcidb-url URL)")
    if args.kcidb:
        return run_kcidb(args)
    raise ForkError("report: give what to make (see tools/fork report --help)")
