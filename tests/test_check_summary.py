"""`@@ check-summary VER HEAD`: every flavour and guest test with a table of
a head, one item each, for a cover letter (72 columns) and the documents.

Each patch (a tree, counted once whatever commit ids it has) is judged on
every run on record of its cell (checkrecords.cells()): a failure in one of
two runs is flaky, no pass; an explained failure is left out; a commit
without a row is named; a pass gives the runs it rests on and where they
are; the base is reported apart, with the reports its runs show.  The
fixture is a synthetic head of four patches on a base, its tables written
here."""

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
DAY = {"base": 1, "kcsan": 2, "debug": 3, "kasan": 4}
# commit ids of a reword of C: other ids, the same trees
R = ["e%d" % n * 20 for n in range(1, 5)]


def row(commit, flavour, test, n, ok=True, reports=(), failed_test=None, tree=None,
        subject=None, **extra):
    """One table row of `commit` (of `tree`, by default its own), its run's
    log numbered `n`; `extra`: more fields (accel, runner, error)."""
    cells = {c: "pass" for c in ("checkpatch", "build", "boot", "test", "e2fsck", "counts")}
    details = {}
    if failed_test:
        cells["test"] = "FAIL"
        details["test"] = failed_test
    elif not ok:
        cells["boot"] = "FAIL"
    if extra.get("error"):
        cells.update(boot="error", test="-", e2fsck="-", counts="-")
    base = commit == BASE
    if base:    # what checkpatch records of a commit without a parent
        cells["checkpatch"], details["checkpatch"] = "n/a", "base snapshot"
    r = {"commit": commit, "tree": tree or "t" + commit[:39],
         "subject": subject or ("Import Debian linux-source-9.9 9.9-1" if base
                                else "ext2: " + commit[:2]),
         "flavour": flavour, "test": test, "cells": cells, "details": details,
         "log": LOG % (commit[:12], DAY[flavour], n), "kit": "k",
         "reports": [{"title": r, "signature": r, "verdict": "FAIL"} for r in reports],
         "passed": all(v in ("pass", "n/a") for v in cells.values())}
    r.update(extra)
    return r


def write(root, name, rows, head="head"):
    path = root / "records" / "checks" / "9.9" / head / name
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
          [row(BASE, "debug", "emergency-remount", 1), row(C[0], "debug", "emergency-remount", 1),
           row(C[1], "debug", "emergency-remount", 1, failed_test="statfs 10 != 12"),
           row(C[2], "debug", "emergency-remount", 1),
           row(C[3], "debug", "emergency-remount", 1, failed_test="statfs 7 != 9")])
    write(tmp_path, "debug-emergency-remount-20260103-000000.json",
          [row(C[1], "debug", "emergency-remount", 3)])
    (tmp_path / "next").mkdir()
    (tmp_path / "next" / "README.md").write_text("why\n")
    (tmp_path / "records" / "checks" / "explained.json").write_text(json.dumps(
        [{"runs": [LOG % (C[1][:12], DAY["debug"], 1)], "why": "The test asserted the wrong thing.",
          "see": "next/README.md"}]))
    return tmp_path


def flat(root):
    """The rendered items as one line."""
    return " ".join(" ".join(render(root)).split())


def test_every_flavour_and_test_of_the_head_in_one_item_each(head):
    """The runs a pass rests on, then what else is on record: patch 2's
    explained run is no run of the verdict (3 runs, not 4)."""
    assert render(head) == [
        "- base, stress: passes on all 4 patches (4 runs here). The base passes",
        "  in its 1 run.",
        "- debug, emergency-remount: passes on patches 1-3 (3 runs here; 1 failed",
        "  run of patch 2 explained in records/checks/explained.json); fails on",
        "  patch 4 (test: statfs 7 != 9). The base passes in its 1 run.",
        "- kcsan, stress: passes on patches 1-2 (4 runs here); flaky on patch 3",
        "  (1 of 2 runs failed: BUG: KCSAN: data-race in ext2_new_blocks /",
        "  ext2_new_blocks (the base shows it)); not run on patch 4. The base",
        "  fails in its 2 runs, showing BUG: KCSAN: data-race in ext2_new_blocks",
        "  / ext2_new_blocks in 2 of 2, BUG: KCSAN: data-race in ext2_free_blocks",
        "  / ext2_new_blocks in 1 of 2 runs.",
    ]
    assert all(len(line) <= 72 for line in render(head))


def test_without_its_explanation_a_failed_run_fails_the_commit(head):
    (head / "records" / "checks" / "explained.json").unlink()
    assert "passes on patches 1, 3 (2 runs here); flaky on patch 2 (1 of 2 runs failed: " \
        "test: statfs 10 != 12); fails on patch 4 (test: statfs 7 != 9)." in flat(head)


def test_a_commit_without_a_row_here_is_judged_on_its_runs_elsewhere(head):
    """A head whose tables hold only the commits not checked before (the
    others' runs are in an earlier head's tables): those commits are
    judged on those runs, and the item counts the runs it rests on here
    and elsewhere, and those of another accelerator or runner."""
    write(head, "kcsan-stress.json", [row(C[3], "kcsan", "stress", 9, accel="kvm",
                                          runner="lava")], head="older")
    out = flat(head)
    assert "- kcsan, stress: passes on patches 1-2, 4 (4 runs here, 1 in other heads' " \
        "tables; 1 under KVM, 1 through lava); flaky on patch 3" in out
    assert "not run on" not in out.split("kcsan, stress")[1]
    # under TCG by the kit's QEMU: nothing to name
    write(head, "kcsan-stress.json", [row(C[3], "kcsan", "stress", 9, accel="tcg")],
          head="older")
    assert "- kcsan, stress: passes on patches 1-2, 4 (4 runs here, 1 in other heads' " \
        "tables); flaky on patch 3" in flat(head)


def test_the_base_counts_its_runs_here_and_elsewhere(head):
    """The base's runs in other heads' tables are counted apart."""
    write(head, "base-stress.json", [row(BASE, "base", "stress", 7)], head="older")
    assert "The base passes in its 2 runs (1 in other heads' tables). - debug" in flat(head)
    write(head, "base-stress-20260102-000000.json",
          [row(BASE, "base", "stress", 2, failed_test="statfs 1 != 2")])
    assert "The base is flaky (1 of 3 runs failed; 1 in other heads' tables). - debug" \
        in flat(head)


def test_a_tree_under_two_commit_ids_is_one_patch(head):
    """The head's tables of a reword, not carried (other commit ids, the
    same trees), beside the old ones: each tree is one patch, its runs
    counted once."""
    write(head, "base-stress-20260105-000000.json",
          [row(BASE, "base", "stress", 5)]
          + [row(r, "base", "stress", 5, tree="t" + c[:39]) for r, c in zip(R, C)])
    out = flat(head)
    assert "- base, stress: passes on all 4 patches (8 runs here). The base passes in its " \
        "2 runs." in out
    # the tree of a reworded commit run only elsewhere is that patch's too
    write(head, "kasan-stress.json", [row(BASE, "kasan", "stress", 1)]
          + [row(c, "kasan", "stress", 1) for c in C[:3]])
    write(head, "kasan-stress.json", [row(R[3], "kasan", "stress", 2, tree="t" + C[3][:39])],
          head="older")
    assert "- kasan, stress: passes on all 4 patches (3 runs here, 1 in other heads' " \
        "tables). The base" in flat(head)


def test_patch_numbers_come_from_one_table_that_holds_them_all(tmp_path):
    """Without a table holding the base and every commit the head's tables
    name, no patch is numbered by guess: one line says what to do."""
    write(tmp_path, "base-stress.json", [row(c, "base", "stress", 1)
                                         for c in (BASE, C[0], C[1], C[3])])
    write(tmp_path, "kcsan-stress.json", [row(c, "kcsan", "stress", 1) for c in (C[2], C[3])])
    with pytest.raises(ForkError) as e:
        render(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert "records/checks/9.9/head: no table holds the base and every commit its tables " \
        "name" in msg
    assert "(the fullest, base-stress.json, lacks %s)" % C[2][:12] in msg
    assert "tools/fork check --series <series>" in msg and "name the head whose tables " \
        "are complete" in msg
    # no table with the base at all
    write(tmp_path, "base-stress.json", [row(c, "base", "stress", 1) for c in C])
    with pytest.raises(ForkError, match=r"the fullest, base-stress.json, lacks the base\)"):
        render(tmp_path)
    # the complete table gives the order, a table of some commits follows it
    write(tmp_path, "base-stress.json", [row(c, "base", "stress", 1) for c in [BASE] + C])
    assert flat(tmp_path).startswith(
        "- base, stress: passes on all 4 patches (4 runs here). The base passes in its 1 run. "
        "- kcsan, stress: passes on patches 3-4 (2 runs here); not run on patches 1-2. "
        "The base was not run.")


def test_several_bases_are_refused(head):
    other = row(BASE, "base", "stress", 8, tree="t-another-snapshot")
    other["commit"] = "b1" * 20
    write(head, "base-stress-20260109-000000.json", [other])
    with pytest.raises(ForkError) as e:
        render(head)
    assert "records/checks/9.9/head: its tables hold the rows of 2 base snapshots (%s, %s)" \
        % (BASE[:12], "b1" * 6) in str(e.value) and "\n" not in str(e.value)


def test_the_base_is_what_checkrecords_knows_not_a_subject(head):
    """A base snapshot whose subject is no "Import Debian " one is still
    the base: checkpatch recorded it has no parent."""
    for f in (head / "records" / "checks" / "9.9" / "head").iterdir():
        rows = json.loads(f.read_text())
        for r in rows:
            if r["commit"] == BASE:
                r["subject"] = "linux-source-9.9 9.9-1, unpacked"
        f.write_text(json.dumps(rows))
    assert flat(head).startswith("- base, stress: passes on all 4 patches (4 runs here). "
                                 "The base passes in its 1 run.")


def test_a_checkpatch_failure_names_checkpatch(head):
    """A commit whose runs pass but whose checkpatch fails is named with
    the failing cell, not as a failed run."""
    rows = json.loads((head / "records/checks/9.9/head/base-stress.json").read_text())
    rows[2]["cells"]["checkpatch"] = "FAIL"
    rows[2]["details"]["checkpatch"] = ("total: 1 errors, 0 warnings, 0 checks, 3 lines "
                                        "checked; ERROR: Missing Signed-off-by: line(s)")
    rows[2]["passed"] = False
    (head / "records/checks/9.9/head/base-stress.json").write_text(json.dumps(rows))
    assert "- base, stress: passes on patches 1, 3-4 (3 runs here); fails on patch 2 " \
        "(checkpatch: ERROR: Missing Signed-off-by: line(s)). The base" in flat(head)


def test_errors_and_explained_runs_alone_are_never_a_pass(head):
    """A cell whose only run is an error of the runner, or an explained
    failure, has no verdict; an error beside a completed run is what else
    is on record, not a run of the verdict."""
    write(head, "kasan-stress.json",
          [row(BASE, "kasan", "stress", 1),
           row(C[0], "kasan", "stress", 1), row(C[1], "kasan", "stress", 1),
           row(C[2], "kasan", "stress", 1, error="LAVA did not start QEMU"),
           row(C[3], "kasan", "stress", 1, failed_test="statfs 1 != 2")])
    write(head, "kasan-stress-20260104-000000.json",
          [row(C[0], "kasan", "stress", 2, error="LAVA did not start QEMU")])
    explained = head / "records" / "checks" / "explained.json"
    explained.write_text(json.dumps(json.loads(explained.read_text()) + [
        {"runs": [LOG % (C[3][:12], DAY["kasan"], 1)], "why": "Wrong assertion.",
         "see": "next/README.md"}]))
    assert "- kasan, stress: passes on patches 1-2 (2 runs here; 1 error of the runner on " \
        "patch 1); no verdict on patch 3 (its run ended in an error of the runner); no " \
        "verdict on patch 4 (its run is an explained failure). The base passes in its 1 " \
        "run." in flat(head)


def test_the_base_not_run_says_so(head):
    """A config and test whose tables lack the base, which no table on
    record ran."""
    write(head, "kasan-stress.json", [row(c, "kasan", "stress", 1) for c in C])
    assert "- kasan, stress: passes on all 4 patches (4 runs here). The base was not run. " \
        "- kcsan" in flat(head)


def test_wrong_arity_and_an_unknown_head_are_one_line(head):
    for line, says in (("@@ check-summary 9.9", "t.tmpl:1: check-summary takes VER HEAD"),
                       ("@@ check-summary 9.9 head next", "takes VER HEAD"),
                       ("@@ check-summary 9.9 nohead", "records/checks/9.9/nohead: no such")):
        with pytest.raises(ForkError) as e:
            render(head, line)
        assert says in str(e.value) and "\n" not in str(e.value)


def test_a_run_carried_into_the_head_is_here(head):
    """A row that `check --carry` wrote into the head's table holds the
    run it carried: that run is here, though recorded for another commit
    of the same tree in another head's table."""
    old = row(R[3], "kcsan", "stress", 9, tree="t" + C[3][:39])
    write(head, "kcsan-stress.json", [old], head="older")
    carried = dict(row(C[3], "kcsan", "stress", 9, tree="t" + C[3][:39]),
                   log=old["log"], runs=[dict(old, passed=True)],
                   carried={"commit": R[3], "table": "records/checks/9.9/older/kcsan-stress.json",
                            "log": "logs/check-carry.log"})
    write(head, "kcsan-stress-20260108-000000.json", [carried])
    assert "- kcsan, stress: passes on patches 1-2, 4 (5 runs here); flaky on patch 3" \
        in flat(head)


def test_a_cached_copy_in_the_head_is_here(head):
    """A row of the head's table that the check cache answered (`cached`:
    the run recorded in another head's table) holds that run: here."""
    old = row(C[3], "kcsan", "stress", 9)
    write(head, "kcsan-stress.json", [old], head="older")
    write(head, "kcsan-stress-20260108-000000.json", [dict(old, cached=True)])
    assert "- kcsan, stress: passes on patches 1-2, 4 (5 runs here); flaky on patch 3" \
        in flat(head)
    (head / "records/checks/9.9/head/kcsan-stress-20260108-000000.json").unlink()
    assert "- kcsan, stress: passes on patches 1-2, 4 (4 runs here, 1 in other heads' " \
        "tables); flaky on patch 3" in flat(head)
