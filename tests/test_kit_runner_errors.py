"""Errors of the runner in a check: a LAVA job in which LAVA failed, not the
kernel (it started no QEMU, the console shows no kernel, the server does
not answer), is recorded as an error ("error" in the boot cell, the reason
in the row and the run): never a pass, never the kernel's failure, the
check exits non-zero, the rest of the check runs on, and the next check of
the same tree runs it again; a run that completes gives the verdict, and a
cell that failed stays failed.  The boots are the fixture's fake ones, or
job logs read back by guest/lava.py as lava-run's are; the server runner
is the real one against a port where nothing listens."""

import json
import os

import pytest

from forkkit.guest import initramfs, lava
from forkkit.verify import checkrecords, kernel

from test_kit_check import fake, rows_of, run  # noqa: F401 - the fixture
from test_kit_lava import QEMU_FAILED, job_log

DEPLOY_FAILED = job_log([], "fail", "sha256 for 'file:///w/k.bzImage' does not match.",
                        qemu=None, error_type="Job", boot=False)
NO_KERNEL = job_log([QEMU_FAILED], "fail", "Connection closed", error_type="Infrastructure")


def lava_boots(fake, monkeypatch, logs):
    """check --runner lava with lava-run replaced: the boot of a commit in
    `logs` is that job log, read back as run_guest_lava() reads lava-run's
    (lava.boot_result()); any other commit boots as the fixture boots."""
    own = kernel.run_guest

    def run_guest_lava(image, script, disks=(), meta=None, test=None, log=None, timeout=600,
                       **kw):
        commit = os.path.basename(image)[len("bzImage-"):]
        if commit not in logs:
            return own(image, script, disks, log=log, timeout=timeout, **kw)
        return lava.boot_result(lava.parse_records(logs[commit]), log, "job.yaml", timeout, 1.0)

    monkeypatch.setattr(lava, "run_guest_lava", run_guest_lava)


def record(fake, commit, runner="lava"):
    tree = fake.rev(commit + "^{tree}")
    return kernel.read_record(kernel.cache_path(tree, "base", "smoke", runner=runner), tree,
                              runner=runner)


def cells_of(row_line):
    """The six cells of a table line (after the commit and the subject)."""
    return row_line[12 + 2 + 44 + 2:].split()[:6]


@pytest.mark.parametrize("log, says", [
    (DEPLOY_FAILED, "LAVA did not start QEMU (Job: sha256 for 'file:///w/k.bzImage' does not "
                    "match.); see job.yaml"),
    (NO_KERNEL, "QEMU started but the console shows no kernel (LAVA: Infrastructure: "
                "Connection closed; last console line: qemu-system-x86_64: -drive"),
], ids=["deploy-failed", "no-kernel"])
def test_lava_failing_is_an_error_and_a_later_completed_run_decides(fake, capsys, monkeypatch,
                                                                     log, says):
    c1, c2 = fake.commits[1:]
    logs = {c1: log}
    lava_boots(fake, monkeypatch, logs)
    rc, out = run(fake, capsys, "--runner", "lava")
    assert rc == 1, out
    rows = rows_of(out)
    assert len(rows) == 3, out                     # the check ran on past the error
    assert cells_of(rows[1]) == ["pass", "pass", "error", "-", "-", "-"], rows[1]
    assert cells_of(rows[2]) == ["pass"] * 6
    assert "%s boot: %s" % (c1[:12], says) in out
    rec = record(fake, c1)
    assert [r.get("error", "").startswith(says) for r in rec["runs"]] == [True]
    assert rec["runs"][0]["passed"] is False and "failure" not in rec["runs"][0]
    assert not rec["passed"]
    # no verdict on record: the next check runs the cell again (not cached)
    assert kernel.cached(fake.rev(c1 + "^{tree}"), "base", "smoke", runner="lava") is None
    builds = len(fake.calls["build"])
    logs.clear()
    rc, out = run(fake, capsys, "--runner", "lava")
    assert rc == 0, out
    rows = rows_of(out)
    assert cells_of(rows[1]) == ["pass"] * 6 and not rows[1].endswith("(cached)")
    assert rows[2].endswith("(cached)")
    assert fake.calls["build"][builds:] == [c1]
    rec = record(fake, c1)
    assert [bool(r.get("error")) for r in rec["runs"]] == [True, False]
    assert rec["passed"] and "flaky" not in rec and "error" not in rec


def test_a_failure_stays_failed_and_an_error_does_not_hide_a_verdict(fake, capsys, monkeypatch):
    """An error of the runner after a failed run leaves the failure on
    record (and the record's row the failed run's); a later pass makes the
    cell flaky, no pass.  After a pass, an error (--force) fails the check
    that hit it, and the cell's verdict on record stays the pass."""
    c1, c2 = fake.commits[1:]
    logs = {}
    lava_boots(fake, monkeypatch, logs)
    fake.fail["boot"].add(c1)
    rc, out = run(fake, capsys, "--runner", "lava")
    assert rc == 1 and cells_of(rows_of(out)[1])[2:4] == ["FAIL", "FAIL"]
    fake.fail["boot"].clear()
    logs.update({c1: DEPLOY_FAILED, c2: NO_KERNEL})
    rc, out = run(fake, capsys, "--runner", "lava", "--force", "%s..%s" % (fake.commits[0], c2))
    assert rc == 1
    assert [cells_of(r)[2] for r in rows_of(out)] == ["error", "error"]
    failed = record(fake, c1)
    assert [bool(r.get("error")) for r in failed["runs"]] == [False, True]
    assert failed["cells"]["boot"] == "FAIL" and not failed["passed"]
    tree1 = fake.rev(c1 + "^{tree}")
    assert kernel.cached(tree1, "base", "smoke", runner="lava")["cells"]["boot"] == "FAIL"
    passed = record(fake, c2)
    assert passed["passed"] and passed["cells"]["boot"] == "pass"
    # without --force: the recorded verdicts (the failure, the pass)
    logs.clear()
    rc, out = run(fake, capsys, "--runner", "lava", "%s..%s" % (fake.commits[0], c2))
    rows = rows_of(out)
    assert rc == 1 and all(r.endswith("(cached)") for r in rows)
    assert cells_of(rows[0])[2] == "FAIL" and cells_of(rows[1]) == ["pass"] * 6
    # a pass of the failed cell: flaky, no pass (the error counts as no run)
    rc, out = run(fake, capsys, "--runner", "lava", "--force", c1)
    assert rc == 1
    rec = record(fake, c1)
    assert rec["flaky"] == "flaky: 1 of 2 runs failed" and not rec["passed"]
    assert len(rec["runs"]) == 3


def test_a_server_that_does_not_answer_makes_errors_not_verdicts(fake, capsys, monkeypatch,
                                                                 tmp_path):
    """check --runner lava-server, its server gone (nothing listens on port
    1): each cell an error of the runner, the table and the markdown say
    so, the check exits non-zero, and nothing passes."""
    c = initramfs.Cpio()
    c.file("init", b"#!/bin/sh\n")
    base = tmp_path / "base.cpio"
    base.write_bytes(c.bytes())
    monkeypatch.setattr(initramfs, "base_archive", lambda extra_files=None, log=None: str(base))
    from forkkit.guest import lavaserver
    os.makedirs(os.path.dirname(lavaserver.config_path()), exist_ok=True)
    with open(lavaserver.config_path(), "w") as fh:
        json.dump({"url": "http://127.0.0.1:1/", "token": "t"}, fh)
    md = tmp_path / "t.md"
    rc, out = run(fake, capsys, "--runner", "lava-server", "--markdown", str(md),
                  "--json", str(tmp_path / "t.json"))
    assert rc == 1
    rows = rows_of(out)
    assert [cells_of(r)[1:] for r in rows] == [["pass", "error", "-", "-", "-"]] * 3
    assert out.count(" boot: LAVA server http://127.0.0.1:1/api/v0.2/jobs/ does not answer") \
        == 3
    text = md.read_text()
    assert "| error |" in text
    assert "Errors of the runner (it failed, not the kernel: no verdict):" in text
    assert "- %s: LAVA server http://127.0.0.1:1/api/v0.2/jobs/ does not answer" \
        % fake.commits[1][:12] in text
    table = json.loads((tmp_path / "t.json").read_text())
    assert all(r["error"].startswith("LAVA server") and not r["passed"] for r in table)
    assert all(r["runs"][-1]["error"] == r["error"] for r in table)


def test_committed_error_runs_judge_nothing(fake, capsys, monkeypatch, tmp_path):
    """The committed tables (checkrecords.cells()): a cell whose only run
    is an error of the runner has the verdict "error: ...", no pass nor
    FAIL; with a completed run, that run's verdict, the error noted."""
    c1, c2 = fake.commits[1:]
    logs = {c1: DEPLOY_FAILED}
    lava_boots(fake, monkeypatch, logs)
    top = tmp_path / "records" / "checks" / "9.9" / "h"
    top.mkdir(parents=True)
    run(fake, capsys, "--runner", "lava", "--json", str(top / "base-smoke.json"))
    cells = checkrecords.cells(str(tmp_path))
    assert cells[("9.9", c1, "base", "smoke")]["verdict"] == \
        "error: its run ended in an error of the runner"
    assert cells[("9.9", c2, "base", "smoke")]["verdict"] == "pass"
    assert checkrecords.failures(cells, ("9.9", c1, "base", "smoke")) == []
    logs.clear()
    run(fake, capsys, "--runner", "lava", "--json", str(top / "base-smoke-20990101-000000.json"))
    cells = checkrecords.cells(str(tmp_path))
    assert cells[("9.9", c1, "base", "smoke")]["verdict"] == \
        "pass (1 error of the runner left out)"
    assert [r.get("error", "")[:24] for _, r in cells[("9.9", c1, "base", "smoke")]["errors"]] \
        == ["LAVA did not start QEMU "]
