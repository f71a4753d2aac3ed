"""Many guests at once on one machine: fstests shards balanced by the
recorded test times, check cells booted side by side, the accelerator in
every verdict's identity, and --record directories that two work
directories (or a work directory's own stores) share.  Fake guests and
builds (test_fstests.py's pipeline, test_kit_check.py's fake): no QEMU."""

import json
import os
import threading
from pathlib import Path

import pytest

from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (the fixtures)
from forkkit.verify import fstests_run as cmd_fstests


# ------------------------------------------------ a --record shared by two

def test_two_work_dirs_sharing_a_record_keep_each_others_entries(pipeline, tmp_path,  # noqa: F811
                                                                 monkeypatch):
    """Work directory A runs generic/001 and, while A's base guest runs,
    work directory B runs generic/002 to the end with the same --record:
    B's boots and results stay in the record beside A's, under boot
    numbers of their own."""
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    work_a, work_b = str(tmp_path / "work-a"), str(tmp_path / "work-b")
    guest = cmd_fstests.run_guest
    other = []

    def meanwhile(*a, **kw):
        if not other:
            other.append("B")
            monkeypatch.setenv("FORK_WORKDIR", work_b)
            try:
                other.append(run_main("generic/002", "--record", str(rec)))
            finally:
                monkeypatch.setenv("FORK_WORKDIR", work_a)
        return guest(*a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", meanwhile)
    monkeypatch.setenv("FORK_WORKDIR", work_a)
    assert run_main("generic/001", "--record", str(rec)) == 0
    assert other == ["B", 0]
    kernels = stores(rec)
    assert len(kernels) == 2
    for d in kernels:
        assert sorted(json.loads((d / "tests.json").read_text())) == ["generic/001",
                                                                       "generic/002"]
        boots = json.loads((d / "boots.json").read_text())
        assert sorted(b["n"] for b in boots) == [1, 2]
        assert sorted(t for b in boots for t in b["tests"]) == ["generic/001", "generic/002"]
        for b in boots:
            assert (d / b["xunit"]).exists()


def test_a_record_among_the_work_stores_is_refused(pipeline, tmp_path, capsys):  # noqa: F811
    """--record work/fstests/kernels would make each kernel's record its
    store in work/ (one directory, locked twice): refused in one line
    before anything is built."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    kernels = Path(os.environ["FORK_WORKDIR"]) / "fstests" / "kernels"
    for rec in (kernels, kernels / "mine"):
        done = []
        t = threading.Thread(target=lambda: done.append(run_main(
            "generic/001", "--record", str(rec))), daemon=True)
        t.start()
        t.join(120)             # a guard: the old code waited for itself forever
        assert done == [1], rec
        err = capsys.readouterr().err
        assert "--record %s is among the kit's own fstests stores" % rec in err
        assert "Traceback" not in err
        assert pipeline["boots"] == []
