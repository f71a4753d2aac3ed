"""`@@ check-summary VER HEAD`: every flavour and guest test with a table of
a head, one item each, for a cover letter (72 columns) and the documents.

Each commit is judged on every run on record of its cell
(checkrecords.cells()): a failure in one of two runs is flaky, no pass; an
explained failure is left out; a commit without a row is named; the base
is reported apart, with the reports its runs show.  The fixture is a
synthetic head of four patches on a base, its tables written here."""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.core.errors import ForkError  # noqa: E402
from forkkit.publish import docs  # noqa: E402

BASE = "b0" * 20
C = ["c%d" % n * 20 for n in range(1, 5)]
LOG = "logs/check-%s-2026010%d-%06d.log"     # commit, flavour, run
RACE = "BUG: KCSAN: data-race in ext2_new_blocks / ext2_new_blocks"
OTHER = "BUG: KCSAN: data-race in ext2_free_blocks / ext2_new_blocks"
DAY = {"base": 1, "kcsan": 2, "debug": 3}


def row(commit, flavour, test, n, ok=True, reports=(), failed_test=None):
    """One table row of `commit`, its run's log numbered `n`."""
    cells = {c: "pass" for c in ("checkpatch", "build", "boot", "test", "e2fsck", "counts")}
    details = {}
    if failed_test:
        cells["test"] = "FAIL"
        details["test"] = failed_test
    elif not ok:
        cells["boot"] = "FAIL"
    base = commit == BASE
    return {"commit": commit, "tree": "t" + commit[:39],
            "subject": "Import Debian linux-source-9.9 9.9-1" if base else "ext2: " + commit[:2],
            "flavour": flavour, "test": test, "cells": cells, "details": details,
            "log": LOG % (commit[:12], DAY[flavour], n), "kit": "k",
            "reports": [{"title": r, "signature": r, "verdict": "FAIL"} for r in reports],
            "passed": all(v == "pass" for v in cells.values())}


def write(root, name, rows):
    path = root / "records" / "checks" / "9.9" / "head" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))


def render(root, line="@@ check-summary 9.9 head"):
    return docs.render_lines(str(root), [line], "t.tmpl")


@pytest.fixture
def head(tmp_path):
    # base, stress: every commit and the base pass
    write(tmp_path, "base-stress.json",
          [row(c, "base", "stress", 1) for c in [BASE] + C])
    # kcsan, stress: two runs; patch 3 fails the first and passes the
    # second (flaky); patch 4 has no row; the base shows two reports
    write(tmp_path, "kcsan-stress.json",
          [row(BASE, "kcsan", "stress", 1, False, [RACE, OTHER]),
           row(C[0], "kcsan", "stress", 1), row(C[1], "kcsan", "stress", 1),
           row(C[2], "kcsan", "stress", 1, False, [RACE])])
    write(tmp_path, "kcsan-stress-20260102-000000.json",
          [row(BASE, "kcsan", "stress", 2, False, [RACE]),
           row(C[0], "kcsan", "stress", 2), row(C[1], "kcsan", "stress", 2),
           row(C[2], "kcsan", "stress", 2)])
    # debug, emergency-remount: patch 2's failed run is explained and a
    # later run passed; patch 4 fails
    write(tmp_path, "debug-emergency-remount.json",
          [row(BASE, "debug", "emergency-remount", 1)]
          + [row(c, "debug", "emergency-remount", 1) for c in (C[0], C[2])]
          + [row(C[1], "debug", "emergency-remount", 1, failed_test="statfs 10 != 12"),
             row(C[3], "debug", "emergency-remount", 1, failed_test="statfs 7 != 9")])
    write(tmp_path, "debug-emergency-remount-20260103-000000.json",
          [row(C[1], "debug", "emergency-remount", 3)])
    (tmp_path / "next").mkdir()
    (tmp_path / "next" / "README.md").write_text("why\n")
    (tmp_path / "records" / "checks" / "explained.json").write_text(json.dumps(
        [{"runs": [LOG % (C[1][:12], DAY["debug"], 1)], "why": "The test asserted the wrong thing.",
          "see": "next/README.md"}]))
    return tmp_path


def test_every_flavour_and_test_of_the_head_in_one_item_each(head):
    assert render(head) == [
        "- base, stress: passes on all 4 patches (4 runs). The base passes in its",
        "  1 run.",
        "- debug, emergency-remount: passes on patches 1-3 (4 runs; failed runs",
        "  of patch 2 explained in records/checks/explained.json); fails on patch",
        "  4 (test: statfs 7 != 9). The base passes in its 1 run.",
        "- kcsan, stress: passes on patches 1-2 (4 runs); flaky on patch 3 (1 of",
        "  2 runs failed: BUG: KCSAN: data-race in ext2_new_blocks /",
        "  ext2_new_blocks (the base shows it)); not run on patch 4. The base",
        "  fails in its 2 runs, showing BUG: KCSAN: data-race in ext2_new_blocks",
        "  / ext2_new_blocks in 2 of 2, BUG: KCSAN: data-race in ext2_free_blocks",
        "  / ext2_new_blocks in 1 of 2 runs.",
    ]
    assert all(len(line) <= 72 for line in render(head))


def test_without_its_explanation_a_failed_run_fails_the_commit(head):
    (head / "records" / "checks" / "explained.json").unlink()
    out = " ".join(" ".join(render(head)).split())
    assert "passes on patches 1, 3 (2 runs); flaky on patch 2 (1 of 2 runs failed: " \
        "test: statfs 10 != 12); fails on patch 4 (test: statfs 7 != 9)." in out


def test_a_commit_without_a_row_here_is_judged_on_its_runs_elsewhere(head):
    """A head whose tables hold only the commits not checked before (the
    others' runs are in an earlier head's tables): those commits are
    judged on those runs, and the item says where they are."""
    other = head / "records" / "checks" / "9.9" / "older"
    other.mkdir()
    (other / "kcsan-stress.json").write_text(json.dumps([row(C[3], "kcsan", "stress", 9)]))
    out = " ".join(" ".join(render(head)).split())
    assert "- kcsan, stress: passes on patches 1-2, 4 (5 runs); flaky on patch 3" in out
    assert "not run on" not in out.split("kcsan, stress")[1]
    assert "the runs of patch 4 are in other heads' tables." in out


def test_wrong_arity_and_an_unknown_head_are_one_line(head):
    for line, says in (("@@ check-summary 9.9", "t.tmpl:1: check-summary takes VER HEAD"),
                       ("@@ check-summary 9.9 head next", "takes VER HEAD"),
                       ("@@ check-summary 9.9 nohead", "records/checks/9.9/nohead: no such")):
        with pytest.raises(ForkError) as e:
            render(head, line)
        assert says in str(e.value) and "\n" not in str(e.value)
