"""report: what the committed records say, written as documents or as a
KCIDB report.

    tools/fork report --docs [--check]
    tools/fork report --kcidb FILE

Each output is made from the records under records/ only (records/README.md
describes them), so the same records give the same bytes.

--docs writes CHECKS.md, FSTESTS.md and BENCHMARKS.md at the top of the
repository from their templates, docs/<NAME>.in (hand-written method
text; each `@@ DIRECTIVE` line there is replaced by tables made from the
records: publish/docs.py lists the directives).  With --check it writes
nothing, and exits 1 naming each document that differs from what the
records and templates give.

--kcidb FILE writes the check and fstests records as one KCIDB report
(KernelCI's common database, schema v5.3): a checkout per commit checked,
a build per image, a test per check cell and per fstests result
(publish/kcidb.py has the mapping).  It writes only a report that
kcidb-io's schema accepts: kcidb-io is cloned at run time from
$FORK_KCIDB_IO or the bundle shared/kcidb/kcidb-io.bundle next to this
repository, into the work directory.
"""

from ..core.errors import ForkError
from ..core.paths import repo_root

HELP = "documents and KCIDB reports made from the committed records"


def add_arguments(p):
    # --docs: the documents (CHECKS.md, FSTESTS.md, BENCHMARKS.md)
    p.add_argument("--docs", action="store_true",
                   help="write CHECKS.md, FSTESTS.md and BENCHMARKS.md from the records "
                   "and docs/<NAME>.in")
    p.add_argument("--check", action="store_true",
                   help="with --docs: write nothing; exit 1 naming each document that "
                   "differs from what the records give")
    # --kcidb: the KCIDB report
    p.add_argument("--kcidb", metavar="FILE",
                   help="write the records as a KCIDB v5.3 report to FILE, validated with "
                   "kcidb-io first (publish/kcidb.py has the mapping)")
    p.add_argument("--kcidb-url", metavar="URL",
                   help="with --kcidb: where this repository is published (https://...), to "
                   "give each checkout's patch files a URL (patchset_files)")


def run_docs(args):
    from ..publish import docs
    root = repo_root()
    made = docs.generate(root)
    if args.check:
        stale = docs.differing(root, made)
        if stale:
            raise ForkError("%s differ%s from what the records give: run `tools/fork report "
                            "--docs` and commit the result (edit docs/<NAME>.in, not the "
                            "document)" % (", ".join(stale), "s" if len(stale) == 1 else ""))
        print("report: %s match the records" % ", ".join(made))
        return 0
    docs.write(root, made)
    print("report: wrote %s" % ", ".join(made))
    return 0


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
    io_dir = kcidb.kcidb_io()         # before the work: say at once when it is missing
    start = time.monotonic()
    rep = kcidb.report(repo_root(), base_url=url)
    made = time.monotonic() - start
    schema, took = kcidb.timed_validate(rep, io_dir)
    data = kcidb.dumps(rep)
    write_text(args.kcidb, data.decode())
    print("report: wrote %s (%d bytes): %d checkouts, %d builds, %d tests; made in %.1fs, "
          "valid KCIDB v%s (kcidb-io) in %.1fs"
          % (args.kcidb, len(data), len(rep["checkouts"]), len(rep["builds"]),
             len(rep["tests"]), made, schema, took))
    return 0


def main(args):
    if args.check and not args.docs:
        raise ForkError("report: --check goes with --docs (tools/fork report --docs --check)")
    if args.docs:
        return run_docs(args)
    if args.kcidb_url and not args.kcidb:
        raise ForkError("report: --kcidb-url goes with --kcidb (tools/fork report --kcidb FILE "
                        "--kcidb-url URL)")
    if args.kcidb:
        return run_kcidb(args)
    raise ForkError("report: give what to make (see tools/fork report --help)")
