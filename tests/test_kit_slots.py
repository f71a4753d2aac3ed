"""Many guests at once on one machine: fstests shards balanced by the
recorded test times, check cells booted side by side, the accelerator in
every verdict's identity, and --record directories that two work
directories (or a work directory's own stores) share.  Fake guests and
builds (test_fstests.py's pipeline, test_kit_check.py's fake): no QEMU."""

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from conftest import ROOT
from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (the fixtures)
from test_kit_check import fake, rows_of                     # noqa: F401 (the fixture)
from test_kit_check import run as run_check
from forkkit.guest import accel
from forkkit.publish import kcidb
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


# ---------------------------------------------- the accelerator of a verdict

def entries(fake):
    """The check cache's records."""
    return sorted(n for n in os.listdir(fake.work / "cache" / "check") if n.endswith(".json"))


def test_a_check_verdict_is_kept_per_accelerator(fake, capsys, monkeypatch):  # noqa: F811
    """A TCG verdict does not answer a check under KVM, nor the other way;
    each is cached under its own key, and a cached row made before the kit
    knew KVM (no accel) is TCG's."""
    assert run_check(fake, capsys)[0] == 0
    assert len(fake.calls["build"]) == 3
    tcg = entries(fake)
    assert tcg and not any("kvm" in n for n in tcg)
    monkeypatch.setattr(accel, "choose_once", lambda store, boot, prog: "kvm")
    rc, out = run_check(fake, capsys)
    assert rc == 0 and not any("(cached)" in r for r in rows_of(out))
    assert len(fake.calls["build"]) == 6                 # all three ran again
    kvm = sorted(set(entries(fake)) - set(tcg))
    assert len(kvm) == 3 and all(n.endswith("-kvm.json") for n in kvm)
    for n in kvm:
        row = json.loads((fake.work / "cache" / "check" / n).read_text())
        assert row["accel"] == "kvm" and [r["accel"] for r in row["runs"]] == ["kvm"]
    assert all(r.endswith("(cached)") for r in rows_of(run_check(fake, capsys)[1]))
    monkeypatch.setattr(accel, "choose_once", lambda store, boot, prog: "tcg")
    for n in tcg:           # as an older kit wrote them: no accel
        path = fake.work / "cache" / "check" / n
        row = json.loads(path.read_text())
        del row["accel"]
        path.write_text(json.dumps(row))
    rc, out = run_check(fake, capsys)
    assert rc == 0 and all(r.endswith("(cached)") for r in rows_of(out))
    assert len(fake.calls["build"]) == 6


def test_kcidb_environment_names_the_records_accelerator(tmp_path, monkeypatch):
    """The KCIDB environment of a result is the accelerator its record
    names; a record without one (all those committed before KVM) is TCG."""
    root = tmp_path / "repo"
    monkeypatch.setenv("FORK_REPO", str(root))
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    checks = sorted(ROOT.glob("records/checks/7.3/*/kcsan-stress.json"))[0]
    fs = sorted(p.parent for p in ROOT.glob("records/fstests/7.3/*/kernel.json"))[0]
    shutil.copytree(checks.parent, root / checks.parent.relative_to(ROOT))
    shutil.copytree(fs, root / fs.relative_to(ROOT))

    def environments():
        rep = kcidb.report(str(root), series_list=[])
        return {t["environment"]["misc"]["accel"] for t in rep["tests"]
                if t["path"].startswith("xfstests.")}, \
            {t["environment"]["misc"]["accel"] for t in rep["tests"]
             if not t["path"].startswith("xfstests.")}

    for f in (root / "records" / "checks").glob("*/*/*.json"):
        rows = json.loads(f.read_text())
        for r in rows:
            r.pop("accel", None)
        f.write_text(json.dumps(rows))
    meta_path = root / fs.relative_to(ROOT) / "kernel.json"
    meta = json.loads(meta_path.read_text())
    meta.pop("accel", None)
    meta_path.write_text(json.dumps(meta))
    assert environments() == ({"tcg"}, {"tcg"})
    meta_path.write_text(json.dumps(dict(meta, accel="kvm")))
    f = root / checks.relative_to(ROOT)
    f.write_text(json.dumps([dict(r, accel="kvm") for r in json.loads(f.read_text())]))
    fs_env, check_env = environments()
    assert fs_env == {"kvm"} and "kvm" in check_env
    rep = kcidb.report(str(root), series_list=[])
    assert any(t["environment"]["comment"].startswith("QEMU, KVM, x86_64")
               for t in rep["tests"])
