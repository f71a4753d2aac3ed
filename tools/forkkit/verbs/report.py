"""report: what the committed records say, written as documents or as a
KCIDB report.

    tools/fork report --docs [--check]
    tools/fork report --kcidb FILE

Each output is made from the records under records/ only (records/README.md
describes them), so the same records give the same bytes.
"""

from ..core.errors import ForkError

HELP = "documents and KCIDB reports made from the committed records"


def add_arguments(p):
    # --docs: the documents (CHECKS.md, FSTESTS.md, BENCHMARKS.md)
    # --kcidb: the KCIDB report
    pass


def main(args):
    raise ForkError("report: give what to make (see tools/fork report --help)")
