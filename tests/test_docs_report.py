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


def test_check_without_docs():
    proc = report("--check")
    assert proc.returncode == 1 and "--docs" in proc.stderr
