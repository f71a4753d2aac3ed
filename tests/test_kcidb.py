"""`tools/fork report --kcidb`: the committed records as a KCIDB v5.3 report
(publish/kcidb.py), validated by kcidb-io, KernelCI's own schema.

kcidb-io is not a Debian package: the tests clone it from $FORK_KCIDB_IO or
the bundle shared/kcidb/kcidb-io.bundle next to the repository, and skip
(saying so) the tests that need it when neither is there.
"""

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.core.errors import ForkError  # noqa: E402
from forkkit.publish import kcidb  # noqa: E402
from forkkit.verify import checkrecords  # noqa: E402


@pytest.fixture
def real_repo(monkeypatch, tmp_path):
    """The kit on this repository's committed records, with a scratch work
    directory."""
    monkeypatch.setenv("FORK_REPO", str(REPO))
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    (tmp_path / "work").mkdir()
    return REPO


@pytest.fixture(scope="module")
def io_dir(tmp_path_factory):
    """A kcidb-io clone, or a skip naming where it is looked for."""
    src = os.environ.get(kcidb.ENV) or str(REPO.parent / kcidb.BUNDLE)
    if os.path.isdir(os.path.join(src, "kcidb_io")):
        return src
    if not os.path.exists(src):
        pytest.skip("kcidb-io is not here (no $%s, no %s next to the repository)"
                    % (kcidb.ENV, kcidb.BUNDLE))
    dest = tmp_path_factory.mktemp("kcidb") / "kcidb-io"
    subprocess.run(["git", "clone", "-q", src, str(dest)], check=True)
    return str(dest)


@pytest.fixture(scope="module")
def committed():
    """(report, bytes) of the committed records, made once for the module."""
    old = {k: os.environ.get(k) for k in ("FORK_REPO",)}
    os.environ["FORK_REPO"] = str(REPO)
    try:
        rep = kcidb.report(str(REPO))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return rep, kcidb.dumps(rep)


def test_committed_records_validate(committed, io_dir):
    rep, data = committed
    assert kcidb.validate(json.loads(data), io_dir) == "5.3"
    assert rep["version"] == {"major": 5, "minor": 3}


def test_same_records_same_bytes(committed, real_repo):
    _, data = committed
    assert kcidb.dumps(kcidb.report(str(real_repo))) == data


def test_counts_follow_the_records(committed):
    """A test per cell of each judged check cell but `build` (the build's
    status), checkpatch included, and one per fstests result, counted with
    the kit's loaders."""
    rep, _ = committed
    cells = checkrecords.cells(str(REPO))
    n_check = sum(len({name for _, run in c["runs"] for name in run.get("cells", {})
                       if name != "build"}) for c in cells.values())
    # checkpatch is the commit's own (its rows' cells), one test per cell that has it
    n_check += sum(any(r.get("commit") == c["key"][1] and r.get("cells", {}).get("checkpatch")
                       for _, r in c["rows"]) for c in cells.values())
    n_fstests = sum(len(tests) for *_, tests in kcidb._fstests_records(str(REPO)))
    assert n_check > 0 and n_fstests > 0
    paths = [t["path"] for t in rep["tests"]]
    assert sum(p.startswith("xfstests.") for p in paths) == n_fstests
    assert sum(p.startswith("ext2fork.") for p in paths) == n_check
    assert len(rep["tests"]) == n_check + n_fstests
    for kind in ("checkouts", "builds", "tests"):
        ids = [o["id"] for o in rep[kind]]
        assert len(ids) == len(set(ids)), kind
    checkouts = {c["id"] for c in rep["checkouts"]}
    builds = {b["id"] for b in rep["builds"]}
    assert {b["checkout_id"] for b in rep["builds"]} <= checkouts
    assert {t["build_id"] for t in rep["tests"]} <= builds


def test_fstests_statuses(committed):
    rep, _ = committed
    want = {}
    for _, store, _, tests in kcidb._fstests_records(str(REPO)):
        for name, res in tests.items():
            want[(store, "xfstests." + name.replace("/", "."))] = (
                {"pass": "PASS", "fail": "FAIL", "notrun": "SKIP"}[res["status"]])
    got = {(t["misc"]["record"], t["path"]): t["status"]
           for t in rep["tests"] if t["path"].startswith("xfstests.")}
    assert got == want


def test_patchset_hash_is_kcidbs():
    """sha256 over the newline-terminated sha256 of each patch file, as
    `sha256sum *.patch | cut -c-64 | sha256sum` gives it."""
    files = sorted(str(p) for p in (REPO / "patches").glob("*.patch"))
    shell = subprocess.run("sha256sum %s | cut -c-64 | sha256sum | cut -c-64"
                           % " ".join(files), shell=True, capture_output=True, text=True)
    assert kcidb.patchset_hash(files) == shell.stdout.strip()
    assert kcidb.patchset_hash([]) == ""


def test_commit_id_is_the_commit_apply_patch_makes(tmp_path, monkeypatch):
    """commit_id() gives, without the tree's objects, the id that `git
    commit-tree` gives a patch's commit made as repo.branches does."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    g = tmp_path / "g"
    env = dict(os.environ, GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.org",
               GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@example.org",
               GIT_AUTHOR_DATE="1700000000 +0100", GIT_COMMITTER_DATE="1700000000 +0100")

    def git(*args, **kw):
        return subprocess.run(["git", "-C", str(g)] + list(args), check=True, env=kw.get(
            "env", env), capture_output=True, text=True, input=kw.get("input")).stdout.strip()
    subprocess.run(["git", "init", "-q", str(g)], check=True)
    (g / "f").write_text("one\n")
    git("add", "f")
    git("commit", "-q", "-m", "base")
    (g / "f").write_text("two\n")
    git("commit", "-q", "-a", "-m", "change f\n\nBody line.\n\nSigned-off-by: A <a@example.org>",
        env=dict(env, GIT_AUTHOR_DATE="Tue, 3 Dec 2024 10:11:12 -0230"))
    patch = tmp_path / "0001.patch"
    patch.write_text(git("format-patch", "--stdout", "-1", "HEAD"))
    parent, tree = git("rev-parse", "HEAD~1"), git("rev-parse", "HEAD^{tree}")
    from forkkit.repo.patchfile import mailinfo
    author, mail, date, message = mailinfo(str(patch))
    ident = dict(os.environ, GIT_AUTHOR_NAME=author, GIT_AUTHOR_EMAIL=mail,
                 GIT_AUTHOR_DATE=date, GIT_COMMITTER_NAME=author, GIT_COMMITTER_EMAIL=mail,
                 GIT_COMMITTER_DATE=date)
    made = git("commit-tree", tree, "-p", parent, "-F", "-", env=ident, input=message)
    assert kcidb.commit_id(tree, parent, str(patch)) == made
    assert kcidb.commit_id(tree, "0" * 40, str(patch)) != made


def _small(rep):
    """One checkout, its build and one of its tests: a report to break."""
    test = rep["tests"][0]
    build = next(b for b in rep["builds"] if b["id"] == test["build_id"])
    co = next(c for c in rep["checkouts"] if c["id"] == build["checkout_id"])
    return copy.deepcopy({"version": rep["version"], "checkouts": [co], "builds": [build],
                          "tests": [test]})


@pytest.mark.parametrize("breakage", ["missing origin", "bad status", "id without origin",
                                      "bad path", "missing build_id"])
def test_broken_report_is_rejected(committed, io_dir, breakage):
    small = _small(committed[0])
    assert kcidb.validate(small, io_dir) == "5.3"
    t = small["tests"][0]
    if breakage == "missing origin":
        del t["origin"]
    elif breakage == "bad status":
        t["status"] = "pass"
    elif breakage == "id without origin":
        t["id"] = t["id"].split(":", 1)[1]
    elif breakage == "bad path":
        t["path"] = "xfstests.generic/001"
    else:
        del t["build_id"]
    with pytest.raises(ForkError) as exc:
        kcidb.validate(small, io_dir)
    assert "does not validate" in str(exc.value) and "\n" not in str(exc.value)


def _fork(args, env):
    return subprocess.run([sys.executable, str(REPO / "tools" / "fork")] + args,
                          capture_output=True, text=True, env=env)


def test_verb_writes_the_validated_report(committed, io_dir, tmp_path):
    env = dict(os.environ, FORK_REPO=str(REPO), FORK_WORKDIR=str(tmp_path / "work"),
               FORK_KCIDB_IO=io_dir)
    out = tmp_path / "kcidb.json"
    proc = _fork(["report", "--kcidb", str(out)], env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == committed[1]
    assert "valid KCIDB v5.3" in proc.stdout


def test_verb_refuses_a_broken_report(committed, io_dir, real_repo, tmp_path, monkeypatch,
                                      capsys):
    """A report kcidb-io rejects is not written: one line, nothing on disk."""
    from forkkit.verbs import report as verb
    broken = _small(committed[0])
    broken["tests"][0]["status"] = "BAD"
    monkeypatch.setattr(kcidb, "report", lambda *a, **k: broken)
    monkeypatch.setenv(kcidb.ENV, io_dir)
    out = tmp_path / "kcidb.json"
    args = type("A", (), {"kcidb": str(out), "kcidb_url": None, "docs": False,
                          "check": False})()
    with pytest.raises(ForkError) as exc:
        verb.main(args)
    assert "does not validate" in str(exc.value) and "status" in str(exc.value)
    assert not out.exists()


def test_verb_without_kcidb_io_says_how_to_get_it(tmp_path):
    repo = tmp_path / "proj"
    (repo / "records").mkdir(parents=True)
    env = dict(os.environ, FORK_REPO=str(repo), FORK_WORKDIR=str(tmp_path / "work"))
    env.pop(kcidb.ENV, None)
    out = tmp_path / "kcidb.json"
    proc = _fork(["report", "--kcidb", str(out)], env)
    assert proc.returncode == 1
    err = proc.stderr.strip()
    assert "kcidb-io is not available" in err and kcidb.ENV in err and "\n" not in err
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_patch_urls_need_a_base_url(committed, real_repo):
    """patchset_files only with --kcidb-url; each names its file."""
    rep, _ = committed
    assert not any("patchset_files" in c for c in rep["checkouts"])
    with_url = kcidb.report(str(real_repo), base_url="https://example.org/ext2fork")
    files = [c for c in with_url["checkouts"] if c.get("patchset_files")]
    assert files
    for c in files:
        names = [f["name"] for f in c["patchset_files"]]
        assert names == [os.path.basename(p["name"]) for p in c["misc"]["patch_files"]]
        digest = hashlib.sha256("".join(p["sha256"] + "\n" for p in c["misc"]["patch_files"])
                                .encode()).hexdigest()
        assert c["patchset_hash"] == digest



OLD_RUN = "logs/check-c1-20260101-000001.log"
WHY = "The test asserted the wrong thing."


def explained_report(root):
    """The report of a cell whose failed run is explained and whose later
    run passed (records/checks/explained.json)."""
    cells = {c: "pass" for c in ("checkpatch", "build", "boot", "test", "e2fsck", "counts")}
    failed = dict(cells, test="FAIL", counts="FAIL")

    def row(commit, c, log):
        return {"commit": commit, "tree": "t" + commit, "subject": "ext2: " + commit,
                "flavour": "debug", "test": "emergency-remount", "cells": c,
                "details": {}, "log": log, "kit": "k", "image_sha256": "a" * 64,
                "passed": c is cells}
    top = root / "records" / "checks" / "9.9" / "h"
    top.mkdir(parents=True)
    (top / "debug-emergency-remount.json").write_text(json.dumps([row("c1", failed, OLD_RUN)]))
    (top / "debug-emergency-remount-20260101-000005.json").write_text(
        json.dumps([row("c1", cells, "logs/check-c1-20260101-000005.log")]))
    (root / "why.md").write_text("why\n")
    (root / "records" / "checks" / "explained.json").write_text(
        json.dumps([{"runs": [OLD_RUN], "why": WHY, "see": "why.md"}]))
    return kcidb.report(str(root), series_list=[])


def test_an_explained_failed_run_stays_fail(tmp_path, monkeypatch):
    """An explained run's raw result is what KCIDB gets: FAIL stays FAIL,
    and misc names the explanation."""
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    rep = explained_report(tmp_path)
    tests = {t["misc"]["cell"]: t for t in rep["tests"]}
    assert tests["test"]["status"] == "FAIL" and tests["counts"]["status"] == "FAIL"
    assert tests["boot"]["status"] == "PASS"
    assert tests["test"]["misc"]["verdict"] == "pass (1 failed run explained)"
    assert tests["test"]["misc"]["explained"] == [
        {"run": OLD_RUN, "value": "FAIL", "why": WHY, "see": "why.md"}]
    assert [r["value"] for r in tests["test"]["misc"]["runs"]] == ["FAIL", "pass"]


def test_a_report_with_an_explained_run_validates(tmp_path, monkeypatch, io_dir):
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    assert kcidb.validate(explained_report(tmp_path), io_dir) == "5.3"


def runner_error_report(root):
    """The report of two cells with a LAVA run that booted no kernel (an
    error of the runner): c1 has no other run, c2 passed in a later one."""
    ok = {c: "pass" for c in ("checkpatch", "build", "boot", "test", "e2fsck", "counts")}
    err = dict(ok, boot="error", test="-", e2fsck="-", counts="-")
    why = "LAVA did not start QEMU (Job: sha256 for 'file:///w/k' does not match.); see j"

    def row(commit, c, log):
        r = {"commit": commit, "tree": "t" + commit, "subject": "ext2: " + commit,
             "flavour": "base", "test": "smoke", "cells": c, "details": {}, "log": log,
             "kit": "k", "image_sha256": "a" * 64, "runner": "lava", "passed": c is ok}
        return dict(r, error=why) if c is err else r
    top = root / "records" / "checks" / "9.9" / "h"
    top.mkdir(parents=True)
    (top / "base-smoke.json").write_text(json.dumps([
        row("c1", err, "logs/check-c1-20260101-000001.log"),
        row("c2", err, "logs/check-c2-20260101-000001.log")]))
    (top / "base-smoke-20260101-000005.json").write_text(json.dumps([
        row("c2", ok, "logs/check-c2-20260101-000005.log")]))
    return kcidb.report(str(root), series_list=[]), why


def test_an_error_of_the_runner_is_error_and_no_result(tmp_path, monkeypatch):
    """A cell whose only run is an error of the runner is ERROR (boot; the
    cells after it MISS), never PASS or FAIL; beside a completed run the
    error gives no result (the completed run's status), and misc.errors
    names it."""
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    rep, why = runner_error_report(tmp_path)
    tests = {(t["misc"]["commit"], t["misc"]["cell"]): t for t in rep["tests"]}
    assert [tests["c2", c]["status"] for c in ("boot", "test", "e2fsck", "counts")] == \
        ["PASS"] * 4
    assert tests["c1", "boot"]["status"] == "ERROR"
    assert [tests["c1", c]["status"] for c in ("test", "e2fsck", "counts")] == ["MISS"] * 3
    assert tests["c1", "checkpatch"]["status"] == "PASS"
    assert tests["c1", "boot"]["misc"]["verdict"] == \
        "error: its run ended in an error of the runner"
    assert tests["c1", "boot"]["misc"]["errors"] == [
        {"run": "logs/check-c1-20260101-000001.log", "error": why}]
    assert "flaky" not in tests["c2", "boot"]["misc"]
    assert tests["c2", "boot"]["misc"]["verdict"] == "pass (1 error of the runner left out)"
    assert [r["value"] for r in tests["c2", "boot"]["misc"]["runs"]] == ["error", "pass"]


def test_a_report_with_an_error_of_the_runner_validates(tmp_path, monkeypatch, io_dir):
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    assert kcidb.validate(runner_error_report(tmp_path)[0], io_dir) == "5.3"
