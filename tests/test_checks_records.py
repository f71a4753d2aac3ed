"""Every committed check run, judged by the kit's rule.

checkrecords.cells() reads every row of records/checks/<ver>/**/*.json and judges
each (kernel version, commit, flavour, test) on all of its recorded runs
by the kit's own rule (kernel.judge_runs()): a cell that failed in one run
and passed in another is flaky, not a pass.  CHECKS.md prints that verdict
under each table (`tools/fork report --docs`; tests/test_docs_report.py
holds the document to the records).
"""

import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.verify import checkrecords, kernel  # noqa: E402
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


def test_a_commit_is_judged_on_every_run_of_its_tree(tmp_path):
    """A reworded commit (same tree) checked in another table, or carried
    from one table of the old commit while its other runs sit elsewhere:
    the runs of the tree decide, so a tree that failed once is no pass
    under a new commit id; checkpatch stays the commit's own."""
    write(tmp_path, "old/a.json", [row("c1", False, "/l/check-c1-20260101-000001.log")])
    write(tmp_path, "old/b.json", [row("c1", True, "/l/check-c1-20260101-000002.log")])
    new = row("c9", True, "/l/check-c9-20260101-000003.log", tree="tc1")
    new["cells"]["checkpatch"] = "FAIL"
    write(tmp_path, "new/b.json", [new])
    cells = checkrecords.cells(tmp_path)
    c9 = cells[("9.9", "c9", "kcsan", "stress")]
    assert c9["verdict"] == "flaky: 1 of 3 runs failed", c9["verdict"]
    assert cells[("9.9", "c1", "kcsan", "stress")]["verdict"] == "flaky: 1 of 3 runs failed"
    assert c9["subject"] == "ext2: c9"
    # the commit's own checkpatch decides its row: c1's passes, c9's fails
    row_c9, _ = checkrecords.judge([(f, r, w) for (f, r), (_, w) in
                                    zip(c9["runs"], c9["rows"])], commit="c9")
    assert row_c9["cells"]["checkpatch"] == "FAIL"


def test_a_record_that_is_not_one_is_named(tmp_path):
    write(tmp_path, "run1.json", [row("c1", True, "/l/check-c1-20260101-000001.log")])
    (tmp_path / "records" / "checks" / "9.9" / "broken.json").write_text("[{")
    with pytest.raises(ForkError) as e:
        checkrecords.cells(tmp_path)
    assert str(e.value).startswith("records/checks/9.9/broken.json: not a check record")
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------------------
# explained failures (records/checks/explained.json)

C1 = ("9.9", "c1", "kcsan", "stress")


def explain(root, *explanations):
    """Write records/checks/explained.json under `root`: each explanation
    (runs, why, see), `see` created when it is not there."""
    out = []
    for runs, why, see in explanations:
        doc = root / see
        if not doc.exists():
            doc.parent.mkdir(parents=True, exist_ok=True)
            doc.write_text("why the runs failed\n")
        out.append({"runs": list(runs), "why": why, "see": see})
    path = root / "records" / "checks" / "explained.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))


LOG = "logs/check-%s-20260101-%06d.log"
WHY = "The test asserted exact counts with writers running; it bounds them now."


def test_an_explanation_leaves_out_exactly_the_runs_it_names(tmp_path):
    write(tmp_path, "old.json", [row("c1", False, LOG % ("c1", 1)),
                                 row("c2", False, LOG % ("c2", 1)),
                                 row("c3", False, LOG % ("c3", 1))])
    write(tmp_path, "new.json", [row("c1", True, LOG % ("c1", 5)),
                                 row("c2", False, LOG % ("c2", 5))])
    before = checkrecords.cells(tmp_path)
    assert [before[("9.9", c, "kcsan", "stress")]["verdict"] for c in ("c1", "c2", "c3")] == \
        ["flaky: 1 of 2 runs failed", "FAIL", "FAIL"]
    explain(tmp_path, ([LOG % ("c1", 1), LOG % ("c2", 1), LOG % ("c3", 1)], WHY,
                       "docs/why.md"))
    cells = checkrecords.cells(tmp_path)
    c1, c2, c3 = (cells[("9.9", c, "kcsan", "stress")] for c in ("c1", "c2", "c3"))
    assert c1["verdict"] == "pass (1 failed run explained)"
    # c2's later run failed too, and is not named: it still fails the cell
    assert c2["verdict"] == "FAIL (1 failed run explained)"
    # a cell of explained runs only has no verdict of its own: no pass
    assert c3["verdict"] == "no verdict: its run is an explained failure"
    # the explained runs stay in their cells, with their explanation
    assert [run["log"] for _, run in c1["runs"]] == [LOG % ("c1", 1), LOG % ("c1", 5)]
    assert [(f, run["log"], e["why"], e["see"]) for f, run, e in c1["explained"]] == \
        [("records/checks/9.9/old.json", LOG % ("c1", 1), WHY, "docs/why.md")]
    assert checkrecords.failures(cells, C1) == checkrecords.failures(before, C1)


def test_a_later_failing_run_of_an_explained_cell_fails_it(tmp_path):
    write(tmp_path, "old.json", [row("c1", False, LOG % ("c1", 1))])
    write(tmp_path, "new.json", [row("c1", True, LOG % ("c1", 5))])
    explain(tmp_path, ([LOG % ("c1", 1)], WHY, "docs/why.md"))
    assert checkrecords.cells(tmp_path)[C1]["verdict"] == "pass (1 failed run explained)"
    write(tmp_path, "later.json", [row("c1", False, LOG % ("c1", 9))])
    assert checkrecords.cells(tmp_path)[C1]["verdict"] == \
        "flaky: 1 of 2 runs failed (1 failed run explained)"


def test_an_explained_latest_run_of_a_row_does_not_stand_for_the_others(tmp_path):
    # one row holds both runs, the explained failure last: the row's own
    # cells are that run's, the verdict is the earlier pass's
    ok, bad = row("c1", True, LOG % ("c1", 1)), row("c1", False, LOG % ("c1", 5))
    runs = [kernel.run_entry(ok), kernel.run_entry(bad)]
    write(tmp_path, "t.json", [dict(bad, runs=runs)])
    assert checkrecords.cells(tmp_path)[C1]["verdict"] == "flaky: 1 of 2 runs failed"
    explain(tmp_path, ([LOG % ("c1", 5)], WHY, "docs/why.md"))
    assert checkrecords.cells(tmp_path)[C1]["verdict"] == "pass (1 failed run explained)"


def test_a_run_without_a_log_is_named_by_its_console(tmp_path):
    bad = row("c1", False, None, details={"boot": "logs/c1.console"})
    write(tmp_path, "t.json", [bad, row("c2", True, LOG % ("c2", 1))])
    write(tmp_path, "u.json", [row("c1", True, LOG % ("c1", 5))])
    explain(tmp_path, (["logs/c1.console"], WHY, "docs/why.md"))
    assert checkrecords.cells(tmp_path)[C1]["verdict"] == "pass (1 failed run explained)"


@pytest.mark.parametrize("runs, see, says", [
    ([LOG % ("c2", 1)], "docs/why.md", "run %s passed" % (LOG % ("c2", 1))),
    (["logs/check-c1-20260101-000002.log"], "docs/why.md", "no run on record is"),
    (["logs/check-c1-*.log"], "docs/why.md", "no run on record is"),
    ([LOG % ("c1", 1), LOG % ("c1", 1)], "docs/why.md", "names a run twice"),
    ([LOG % ("c1", 1)], "docs/missing.md", "no such file in the repository"),
    ([LOG % ("c1", 1)], "../outside.md", "not a path relative to the repository"),
    ([], "docs/why.md", '"runs" is not a list'),
])
def test_an_explanation_of_a_pass_or_of_no_run_on_record_is_refused(tmp_path, runs, see, says):
    write(tmp_path, "t.json", [row("c1", False, LOG % ("c1", 1)),
                               row("c2", True, LOG % ("c2", 1))])
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "why.md").write_text("why\n")
    path = tmp_path / "records" / "checks" / "explained.json"
    path.write_text(json.dumps([{"runs": runs, "why": WHY, "see": see}]))
    with pytest.raises(ForkError) as e:
        checkrecords.cells(tmp_path)
    msg = str(e.value)
    assert msg.startswith("records/checks/explained.json: explanation 1: ") and says in msg, msg
    assert "\n" not in msg


def test_a_run_explained_twice_or_a_malformed_file_is_refused(tmp_path):
    write(tmp_path, "t.json", [row("c1", False, LOG % ("c1", 1))])
    explain(tmp_path, ([LOG % ("c1", 1)], WHY, "docs/why.md"),
            ([LOG % ("c1", 1)], "Again.", "docs/why.md"))
    with pytest.raises(ForkError) as e:
        checkrecords.cells(tmp_path)
    assert "explanation 2: run %s is explained in explanation 1 already" % (LOG % ("c1", 1)) \
        in str(e.value)
    path = tmp_path / "records" / "checks" / "explained.json"
    for text, says in [("[{", "not readable as JSON"), ('{"runs": []}', "not a list"),
                       (json.dumps([{"runs": [LOG % ("c1", 1)], "why": WHY}]),
                        "needs exactly the keys runs, why, see"),
                       (json.dumps([{"runs": [LOG % ("c1", 1)], "why": "a\nb",
                                     "see": "docs/why.md"}]), '"why" is not')]:
        path.write_text(text)
        with pytest.raises(ForkError) as e:
            checkrecords.cells(tmp_path)
        assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


EMERGENCY = "records/checks/7.3/0dd00ec2fe60/debug-emergency-remount.json"


def test_the_format_covers_the_emergency_remount_case(tmp_path):
    """The five failed runs of the old emergency-remount test on 7.3, named
    by their logs, explain exactly those runs: on their own commits and on
    the commits of the reworded head that carries them (the same runs); the
    corrected test's runs then decide the cells, and nothing else moves."""
    shutil.copytree(REPO / "records", tmp_path / "records")
    (tmp_path / "records" / "checks" / "explained.json").unlink(missing_ok=True)
    before = checkrecords.cells(tmp_path)
    failed = [r["log"] for r in json.loads((REPO / EMERGENCY).read_text()) if not r["passed"]]
    assert len(failed) == 5
    explain(tmp_path, (failed, "The test asserted statfs equal to the group descriptor sums "
                       "after every emergency remount with writers running; the corrected "
                       "test bounds the difference.", "next/README.md"))
    after = checkrecords.cells(tmp_path)
    moved = {k for k in after if after[k]["verdict"] != before[k]["verdict"]}
    # every commit whose cell holds one of those runs: theirs and those of
    # each reworded head that carries them
    holding = {k for k, c in before.items()
               if any(run.get("log") in failed for _, run in c["runs"])}
    # (a reword that keeps some commits adds fewer than five new ones)
    assert len(holding) >= 10
    assert moved == holding
    for k in moved:
        assert k[0] == "7.3" and k[2:] == ("debug", "emergency-remount")
        n = len(after[k]["runs"])
        assert n >= 2 and before[k]["verdict"] == "flaky: 1 of %d runs failed" % n
        assert after[k]["verdict"] == "pass (1 failed run explained)"
        assert [run["log"] for _, run, _ in after[k]["explained"]][0] in failed


def test_a_commit_whose_own_runs_are_explained_keeps_its_own_checkpatch(tmp_path):
    """c9 (a reword of c1, same tree) holds only c1's explained failed run
    and fails checkpatch; c1 passes later in another table: c9's cell is
    judged on the tree's runs but with its own checkpatch, so no pass."""
    write(tmp_path, "a.json", [row("c1", False, "/l/check-c1-20260101-000001.log")])
    carried = row("c9", False, "/l/check-c1-20260101-000001.log", tree="tc1",
                  runs=[dict(kernel.runs_of(row("c1", False, "/l/check-c1-20260101-000001.log"))[0])])
    carried["cells"]["checkpatch"] = "FAIL"
    write(tmp_path, "b.json", [carried])
    write(tmp_path, "c.json", [row("c1", True, "/l/check-c1-20260102-000001.log")])
    explain(tmp_path, (["/l/check-c1-20260101-000001.log"], "wrong test", "docs/why.md"))
    cells = checkrecords.cells(tmp_path)
    assert cells[("9.9", "c1", "kcsan", "stress")]["verdict"] == "pass (1 failed run explained)"
    c9 = cells[("9.9", "c9", "kcsan", "stress")]
    assert c9["verdict"].startswith("FAIL"), c9["verdict"]
    assert c9["subject"] == "ext2: c9"


def test_pooled_runs_are_ordered_by_their_time(tmp_path):
    """The latest run of a tree is the latest in time, whichever commit
    id (which sorts first) it was recorded for."""
    write(tmp_path, "a.json", [row("ff", True, "/l/check-ff-20260101-000001.log")])
    write(tmp_path, "b.json", [row("aa", False, "/l/check-aa-20260102-000001.log", tree="tff")])
    runs = checkrecords.gather(tmp_path)[("9.9", "ff", "kcsan", "stress")]
    assert [r["log"] for _, r, _ in runs] == ["/l/check-ff-20260101-000001.log",
                                              "/l/check-aa-20260102-000001.log"]


def test_an_error_of_the_runner_is_no_failure_to_explain_and_leaves_a_failure_failed(tmp_path):
    """A run whose runner failed (`error`) judges nothing: a failed run
    before it keeps the cell FAIL, and an explanation cannot name it."""
    err = row("c1", False, LOG % ("c1", 2), error="LAVA did not start QEMU (Job: x); see j")
    err["cells"] = dict(err["cells"], boot="error", test="-", e2fsck="-", counts="-")
    write(tmp_path, "a.json", [row("c1", False, LOG % ("c1", 1))])
    write(tmp_path, "b.json", [err])
    c = checkrecords.cells(tmp_path)[("9.9", "c1", "kcsan", "stress")]
    assert c["verdict"] == "FAIL (1 error of the runner left out)"
    assert len(c["runs"]) == 2 and [r["log"] for _, r in c["errors"]] == [LOG % ("c1", 2)]
    explain(tmp_path, ([LOG % ("c1", 2)], WHY, "docs/why.md"))
    with pytest.raises(ForkError, match="run %s is an error of the runner .* not a failure"
                                        % LOG % ("c1", 2)):
        checkrecords.cells(tmp_path)
