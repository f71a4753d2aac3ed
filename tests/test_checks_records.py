"""Every committed check run, judged by the kit's rule.

checkrecords.cells() reads every row of records/checks/<ver>/**/*.json and judges
each (kernel version, commit, flavour, test) on all of its recorded runs
by the kit's own rule (kernel.judge_runs()): a cell that failed in one run
and passed in another is flaky, not a pass.  CHECKS.md prints that verdict
under each table (`tools/fork report --docs`; tests/test_docs_report.py
holds the document to the records).
"""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.verify import checkrecords  # noqa: E402
from forkkit.core.errors import ForkError  # noqa: E402

def cell(ver, sha, flavour, test):
    cells = checkrecords.cells(REPO)
    found = [c for k, c in cells.items()
             if k[0] == ver and k[1].startswith(sha) and k[2:] == (flavour, test)]
    assert len(found) == 1, (ver, sha, flavour, test)
    return found[0]


def test_the_carried_fix_on_6_12_is_flaky_under_kcsan_stress():
    c = cell("6.12", "004eb8871a31", "kcsan", "stress")
    assert c["verdict"] == "flaky: 3 of 5 runs failed"
    by_file = {f: run["passed"] for f, run in c["runs"]}
    assert by_file["records/checks/6.12/3541088105fd/kcsan-stress-20261205-081145.json"] is False
    assert by_file["records/checks/6.12/3541088105fd/kcsan-stress-20261205-085819.json"] is True


def test_a_cached_copy_of_a_run_is_not_a_second_run():
    # 7943eee2's row in 4f9b4ff998b5/kcsan-stress-20261205-090627.json (6.1) is the
    # cached run of kcsan-stress-20261205-082755.json (the same log): 4 runs, not 5
    c = cell("6.1", "7943eee2b909", "kcsan", "stress")
    assert c["verdict"] == "flaky: 1 of 4 runs failed"
    assert len(c["runs"]) == 4


def test_the_base_is_judged_on_its_runs_and_a_failure_names_the_bases_evidence():
    # the 6.12 base fails stock's own races in most of its runs
    base = cell("6.12", "e178aadb5b23", "kcsan", "stress")
    assert base["base"] and base["verdict"] == "flaky: 18 of 20 runs failed"
    fix = cell("6.12", "004eb8871a31", "kcsan", "stress")
    assert not fix["base"]
    got = checkrecords.failures(checkrecords.cells(REPO), fix["key"])
    by = {(f, title): ev for f, title, ev in got}
    run1 = "records/checks/6.12/3541088105fd/kcsan-stress-20261205-081145.json"
    older = "records/checks/6.12/1f76f6f92b1f/kcsan-stress-20261205-"
    assert set(f for f, _ in by) == {run1, older + "022917.json", older + "030731.json"}
    race = "BUG: KCSAN: data-race in ext2_new_blocks / ext2_new_inode"
    assert by[(run1, race)] and by[(run1, race)].startswith("records/checks/6.12/")


# ---------------------------------------------------------------------------
# the rule on a synthetic record

def row(commit, ok, log, **extra):
    cells = {c: "pass" for c in ("checkpatch", "build", "boot", "test", "e2fsck", "counts")}
    if not ok:
        cells["boot"] = cells["test"] = "FAIL"
    reports = [] if ok else [{"title": "BUG: KCSAN: data-race in a / b",
                              "signature": "BUG: KCSAN: data-race in a / b", "verdict": "FAIL"}]
    return dict({"commit": commit, "tree": "t" + commit, "subject": "ext2: " + commit,
                 "flavour": "kcsan", "test": "stress", "cells": cells, "details": {},
                 "log": log, "kit": "k", "reports": reports, "passed": ok}, **extra)


def write(root, rel, rows):
    path = root / "records" / "checks" / "9.9" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))


def test_a_failed_and_a_passed_run_are_flaky_and_a_cached_copy_counts_once(tmp_path):
    write(tmp_path, "run1.json", [row("c1", False, "/l/check-c1-20260101-000001.log"),
                                  row("c2", True, "/l/check-c2-20260101-000001.log")])
    write(tmp_path, "run2.json", [row("c1", True, "/l/check-c1-20260101-000009.log"),
                                  row("c2", True, "/l/check-c2-20260101-000001.log",
                                      cached=True)])
    cells = checkrecords.cells(tmp_path)
    assert cells[("9.9", "c1", "kcsan", "stress")]["verdict"] == "flaky: 1 of 2 runs failed"
    assert cells[("9.9", "c2", "kcsan", "stress")]["verdict"] == "pass"
    assert [f for f, _ in cells[("9.9", "c2", "kcsan", "stress")]["runs"]] == \
        ["records/checks/9.9/run1.json"]
    assert checkrecords.failures(cells, ("9.9", "c1", "kcsan", "stress")) == \
        [("records/checks/9.9/run1.json", "BUG: KCSAN: data-race in a / b", None)]


def test_a_failure_in_every_run_is_a_fail(tmp_path):
    write(tmp_path, "run1.json", [row("c1", False, "/l/check-c1-20260101-000001.log")])
    write(tmp_path, "sub/run2.json", [row("c1", False, "/l/check-c1-20260101-000002.log")])
    c = checkrecords.cells(tmp_path)[("9.9", "c1", "kcsan", "stress")]
    assert c["verdict"] == "FAIL" and len(c["runs"]) == 2


def test_a_record_that_is_not_one_is_named(tmp_path):
    write(tmp_path, "run1.json", [row("c1", True, "/l/check-c1-20260101-000001.log")])
    (tmp_path / "records" / "checks" / "9.9" / "broken.json").write_text("[{")
    with pytest.raises(ForkError) as e:
        checkrecords.cells(tmp_path)
    assert str(e.value).startswith("records/checks/9.9/broken.json: not a check record")
    assert "\n" not in str(e.value)
