"""`tools/fork report --docs`: CHECKS.md, FSTESTS.md and BENCHMARKS.md are
what the committed records and docs/<NAME>.in give, byte for byte.

The first test runs the check on this repository: it fails when a document
was edited by hand, or a record or template changed without the documents
being made again (`tools/fork report --docs`).  The others run the verb on
a copy of the records, templates and documents and change one input."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FORK, PYTHON
from forkkit.publish import docs
from forkkit.verify import checkrecords

REPO = Path(__file__).resolve().parent.parent
INPUTS = ["records", "docs", "ci"] + list(docs.DOCUMENTS)


def report(*args, repo=None):
    env = dict(os.environ)
    env.pop("FORK_REPO", None)
    if repo is not None:
        env["FORK_REPO"] = str(repo)
    return subprocess.run([PYTHON, str(FORK), "report"] + list(args), capture_output=True,
                          text=True, timeout=300, env=env)


def test_the_documents_are_what_the_records_give():
    proc = report("--docs", "--check")
    assert proc.returncode == 0, proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The records, templates, ci/ and documents of this repository in a
    scratch directory (FORK_REPO for the verb)."""
    top = tmp_path_factory.mktemp("docs-repo")
    for name in INPUTS:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, top / name)
    # the files that the explanations of failed runs name (their "see")
    explained = REPO / checkrecords.EXPLAINED
    for e in json.loads(explained.read_text()) if explained.exists() else []:
        (top / e["see"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / e["see"], top / e["see"])
    return top


@pytest.fixture
def repo(copy, tmp_path):
    top = tmp_path / "repo"
    shutil.copytree(copy, top)
    return top


def test_the_copy_passes_the_check(repo):
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 0, proc.stderr


def test_a_changed_check_record_fails_the_check(repo):
    rel = "records/checks/7.3/28418f84a988/kasan-stress.json"
    rows = json.loads((repo / rel).read_text())
    rows[-1]["cells"]["e2fsck"] = "FAIL"
    rows[-1]["passed"] = False
    (repo / rel).write_text(json.dumps(rows, indent=1))
    before = {n: (repo / n).read_bytes() for n in docs.DOCUMENTS}
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1
    assert "CHECKS.md" in proc.stderr
    assert "FSTESTS.md" not in proc.stderr and "BENCHMARKS.md" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    # --check writes nothing
    assert {n: (repo / n).read_bytes() for n in docs.DOCUMENTS} == before
    # and the verb writes the document the changed record gives
    assert report("--docs", repo=repo).returncode == 0
    assert report("--docs", "--check", repo=repo).returncode == 0
    assert (repo / "CHECKS.md").read_bytes() != before["CHECKS.md"]


def test_a_changed_bench_record_fails_the_check(repo):
    rel = "records/bench/20261204-172908-wall.json"
    doc = json.loads((repo / rel).read_text())
    # the stored statistics of the first point: B's median doubled
    doc["stats"][0]["B"]["median"] *= 2
    (repo / rel).write_text(json.dumps(doc))
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1
    assert "BENCHMARKS.md" in proc.stderr and "CHECKS.md" not in proc.stderr


def test_a_hand_edited_document_fails_the_check(repo):
    with open(repo / "FSTESTS.md", "a") as fh:
        fh.write("All tests pass.\n")
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1
    assert "FSTESTS.md" in proc.stderr and "CHECKS.md" not in proc.stderr


def test_the_verb_writes_the_committed_bytes(repo):
    for name in docs.DOCUMENTS:
        (repo / name).unlink()
    proc = report("--docs", repo=repo)
    assert proc.returncode == 0, proc.stderr
    for name in docs.DOCUMENTS:
        assert (repo / name).read_bytes() == (REPO / name).read_bytes(), name


def test_a_bad_template_is_one_line(repo):
    tpl = repo / "docs" / "FSTESTS.md.in"
    tpl.write_text(tpl.read_text() + "@@ no-such-directive 1\n")
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "FSTESTS.md.in" in proc.stderr and "unknown directive" in proc.stderr
    tpl.write_text(tpl.read_text().replace("@@ no-such-directive 1", "@@ fstests"))
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1 and "takes VER" in proc.stderr
    tpl.write_text(tpl.read_text().replace("@@ fstests\n", "@@ fstests 7.3 ../quick\n"))
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "name a markdown file of records/fstests/7.3/" in proc.stderr


def test_a_named_fstests_run_renders_as_the_quick_one(repo):
    quick = repo / "records" / "fstests" / "7.3" / "quick.md"
    (quick.parent / "shard.md").write_text(quick.read_text())
    tpl = repo / "docs" / "FSTESTS.md.in"
    tpl.write_text(tpl.read_text().replace("@@ fstests 7.3\n", "@@ fstests 7.3 shard\n"))
    assert report("--docs", repo=repo).returncode == 0
    assert (repo / "FSTESTS.md").read_text() == (REPO / "FSTESTS.md").read_text().replace(
        "records/fstests/7.3/quick.md", "records/fstests/7.3/shard.md")


def test_check_without_docs():
    proc = report("--check")
    assert proc.returncode == 1 and "--docs" in proc.stderr


# the old emergency-remount test's failed runs on 7.3 (the test was corrected)
EMERGENCY = "records/checks/7.3/0dd00ec2fe60/debug-emergency-remount.json"
WHY = ("The test asserted statfs equal to the group descriptor sums after every emergency "
       "remount with writers running; the corrected test bounds the difference.")


def test_explained_runs_are_shown_under_their_table(repo):
    bad = [r for r in json.loads((repo / EMERGENCY).read_text()) if not r["passed"]]
    failed = [r["log"] for r in bad]
    assert len(failed) == 5
    (repo / checkrecords.EXPLAINED).write_text(json.dumps(
        [{"runs": failed, "why": WHY, "see": "records/README.md"}], indent=1))
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1 and "CHECKS.md" in proc.stderr
    assert "FSTESTS.md" not in proc.stderr and "BENCHMARKS.md" not in proc.stderr
    assert report("--docs", repo=repo).returncode == 0
    text = (repo / "CHECKS.md").read_text()
    # the head the document shows for next/: its commits of the trees
    # those runs tested are decided by the corrected test's runs (a row's
    # runs are judged with every run of its tree), and the explained runs
    # are listed under the table
    import re
    head = re.search(r"^@@ checks 7\.3 (\S+) next$", (repo / "docs" / "CHECKS.md.in").read_text(),
                     re.M).group(1)
    rows = json.loads((repo / "records" / "checks" / "7.3" / head /
                       "debug-emergency-remount.json").read_text())
    trees = {r["tree"]: r["log"] for r in bad}
    carried = [r["commit"][:12] for r in rows if r["tree"] in trees]
    failed = [trees[r["tree"]] for r in rows if r["tree"] in trees]
    assert carried
    verdict = ("Every recorded run of these commits, judged together: pass: %d; pass (1 "
               "failed run explained): %d (%s)." % (len(rows) - len(carried), len(carried),
                                                    ", ".join(carried)))
    assert verdict in text
    note = text[text.index(verdict) + len(verdict):].split("####")[0]
    assert note.startswith("\n\nFailed runs explained, left out of the verdicts above "
                           "([records/checks/explained.json](records/checks/explained.json)):")
    assert "%s See [records/README.md](records/README.md)." % WHY in note
    for commit, log in zip(carried, failed):
        assert "%s (`%s`)" % (commit, log) in note
    assert "flaky: 1 of 2 runs failed: %d (%s)" % (len(carried), ", ".join(carried)) not in text
    assert report("--docs", "--check", repo=repo).returncode == 0


@pytest.mark.parametrize("name, says", [("passed", "passed"),
                                        ("unknown", "no run on record is")])
def test_an_explanation_of_a_pass_or_an_unknown_run_is_one_line(repo, name, says):
    rows = json.loads((repo / EMERGENCY).read_text())
    log = rows[0]["log"] if name == "passed" else "logs/check-0dd00ec2fe60-20990101-000000.log"
    assert rows[0]["passed"]
    (repo / checkrecords.EXPLAINED).write_text(json.dumps(
        [{"runs": [log], "why": WHY, "see": "records/README.md"}]))
    proc = report("--docs", "--check", repo=repo)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "records/checks/explained.json: explanation 1:" in err and says in err, err


def test_an_each_run_is_shown_step_by_step():
    """A `bench --each` record is rendered as bench writes it (each commit
    against its parent), not as an A/B run of unnamed kernels."""
    import json
    from forkkit.publish import docs
    runs = [p.stem for p in (REPO / "records" / "bench").glob("*.json")
            if json.loads(p.read_text()).get("steps") is not None]
    assert runs
    for run in runs:
        text = "\n".join(docs.d_bench(str(REPO), None, run))
        assert "against its parent" in text and "None (A)" not in text, run


def test_a_run_stopped_by_its_time_limit_counts_its_pending_tests(repo):
    """A partial run (--time-limit) lists what failed and counts the tests
    still to run, instead of a row for each of them."""
    quick = repo / "records" / "fstests" / "7.3" / "quick.md"
    lines = quick.read_text().splitlines()
    rows = [i for i, l in enumerate(lines) if l.startswith("| ext4/") or
            l.startswith("| generic/")]
    # the last 100 tests not yet run on the series; one of them failed on the base
    for i in rows[-100:]:
        cells = lines[i].split("|")
        cells[3], cells[5], cells[6] = " - ", " - ", " pending "
        lines[i] = "|".join(cells)
    cells = lines[rows[-1]].split("|")
    cells[2] = " fail "
    lines[rows[-1]] = "|".join(cells)
    (quick.parent / "part.md").write_text("\n".join(lines) + "\n")
    tpl = repo / "docs" / "FSTESTS.md.in"
    tpl.write_text(tpl.read_text().replace("@@ fstests 7.3\n", "@@ fstests 7.3 part\n"))
    proc = report("--docs", repo=repo)
    assert proc.returncode == 0, proc.stderr
    out = (repo / "FSTESTS.md").read_text()
    assert "100 of 672 tests have yet to run on one kernel or both" in out
    # the one that failed, in this run's own section
    part = out.split("## 7.3: the primary series", 1)[1].split("\n## ", 1)[0]
    assert part.split("\n### ", 1)[0].count(" pending |") == 1
    assert lines[rows[-1]] in out
    # the rows the complete run lists are all still listed
    for l in lines[:rows[-100]]:
        if l.startswith("| ") and ("| fail |" in l or "new failure" in l):
            assert l in out, l
    assert "| generic/347 |" in out                     # fails on both kernels


def test_a_broken_row_of_an_fstests_table_is_one_line(repo):
    quick = repo / "records" / "fstests" / "7.3" / "quick.md"
    lines = quick.read_text().splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith("| ext4/"))
    lines[i] = "| ext4/001 | fail | fail |"
    quick.write_text("\n".join(lines) + "\n")
    proc = report("--docs", repo=repo)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "is not a row of the per-test table: restore it from git" in proc.stderr
