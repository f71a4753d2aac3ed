"""Many guests at once on one machine: fstests shards balanced by the
recorded test times, check cells booted side by side, the accelerator in
every verdict's identity, and --record directories that two work
directories (or a work directory's own stores) share.  Fake guests and
builds (test_fstests.py's pipeline, test_kit_check.py's fake): no QEMU."""

import json
import os
import random
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
from forkkit.core.errors import ForkError
from forkkit.verify import fstests, fstests_run as cmd_fstests, kernel


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


# ------------------------------------------------------------ fstests shards

def test_shards_are_balanced_by_recorded_times():
    secs = {"g/1": 10, "g/2": 9, "g/3": 8, "g/4": 7, "g/5": 6, "g/6": 5, "g/7": 4, "g/8": 3}
    tests = sorted(secs)
    shards = fstests.split_shards(tests, secs, 3)
    # longest first, each to the least loaded shard
    assert shards == [["g/1", "g/6", "g/7"], ["g/2", "g/5", "g/8"], ["g/3", "g/4"]]
    assert [sum(secs[t] for t in s) for s in shards] == [19, 18, 15]


def test_shards_hold_every_test_once_and_keep_its_order():
    rnd = random.Random(7)
    tests = ["generic/%03d" % i for i in range(1, 200)]
    secs = {t: rnd.choice([0, 1, 2, 5, 30, 300, 1200]) for t in tests if rnd.random() < 0.8}
    for n in (1, 2, 3, 5, 8):
        shards = fstests.split_shards(tests, secs, n)
        assert len(shards) == n
        assert sorted(t for s in shards for t in s) == tests        # each exactly once
        assert all(s == sorted(s) for s in shards)                   # in the list's order
        cost = {t: max(1, secs.get(t, 5)) for t in tests}            # 5: the median
        loads = [sum(cost[t] for t in s) for s in shards]
        # longest-processing-time first: no shard exceeds another by more
        # than its own last (smallest) test
        assert max(loads) - min(loads) <= max(cost.values())
        assert max(loads) <= sum(loads) / n + max(cost.values())


def test_a_test_without_a_recorded_time_counts_the_median():
    secs = {"g/1": 100, "g/2": 2, "g/3": 4}
    shards = fstests.split_shards(["g/1", "g/2", "g/3", "g/8", "g/9"], secs, 2)
    assert shards == [["g/1"], ["g/2", "g/3", "g/8", "g/9"]]        # 8 and 9 count 4s
    # tests recorded at 0s (not run) still spread, by count
    assert fstests.split_shards(["a/1", "a/2", "a/3", "a/4"], {}, 2) == \
        [["a/1", "a/3"], ["a/2", "a/4"]]
    assert fstests.split_shards(["a/1", "a/2"], {"a/1": 0, "a/2": 0}, 5) == [["a/1"], ["a/2"]]


TESTS = ["generic/001", "generic/002", "generic/013", "ext4/001"]


def report_of(capsys):
    out = capsys.readouterr().out
    path = [line.split()[1] for line in out.splitlines() if line.startswith("results: ")][0]
    return json.loads((Path(path) / "fstests.json").read_text())


def test_shards_run_at_once_and_give_the_one_guest_report(pipeline, tmp_path,  # noqa: F811
                                                          monkeypatch, capsys):
    """Four tests in two shards, split by the times a record holds
    (generic/001 is long): both shards' guests are up at once (each
    holding a slot), every test runs once per kernel, and the store, the
    record and the report hold what one guest gives."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {"generic/013": "fail"},
                            "series-7.3.bzImage": {"generic/002": "notrun"}}
    assert run_main(*TESTS) == 0
    one = report_of(capsys)
    rec = tmp_path / "rec"
    earlier = rec / "0123456789abcdef-rootkey-00000000-05cb085c"
    earlier.mkdir(parents=True)
    (earlier / "tests.json").write_text(json.dumps({
        "generic/001": {"status": "pass", "seconds": 900, "message": ""},
        "generic/002": {"status": "pass", "seconds": 20, "message": ""},
        "generic/013": {"status": "pass", "seconds": 30, "message": ""},
        "ext4/001": {"status": "notrun", "seconds": 0, "message": "no"}}))
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work-2"))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    both = threading.Barrier(2, timeout=60)
    guest = cmd_fstests.run_guest

    def together(*a, **kw):
        both.wait()             # the other shard's guest is up too
        return guest(*a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", together)
    asked = len(pipeline["boots"])
    assert run_main(*TESTS, "--record", str(rec)) == 0       # --shards: the 2 slots
    two = report_of(capsys)
    assert two["tests"] == one["tests"] and two["totals"] == one["totals"]
    for side in ("base", "series"):
        assert two["meta"][side]["image_sha256"] == one["meta"][side]["image_sha256"]
    shards = [["generic/001"], ["generic/002", "generic/013", "ext4/001"]]
    booted = pipeline["boots"][asked:]
    for kernel in ("distro-7.3.bzImage", "series-7.3.bzImage"):
        assert sorted(t for k, t in booted if k == kernel) == sorted(shards)
    assert sorted(sorted(b["tests"]) for b in two["boots"]) == \
        sorted(sorted(s) for s in shards * 2)
    for d in stores(rec):
        if d == earlier:
            continue
        assert sorted(json.loads((d / "tests.json").read_text())) == sorted(TESTS)
        assert sorted(b["n"] for b in json.loads((d / "boots.json").read_text())) == [1, 2]


def test_a_shard_that_fails_leaves_the_others_kept(pipeline, tmp_path, monkeypatch,  # noqa: F811
                                                   capsys):
    """One shard's guest fails: the run fails in one line, and what the
    other shard finished is in the store and the record."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    guest = cmd_fstests.run_guest

    def broken(kernel, script, *a, **kw):
        if "generic/013" in script:
            raise ForkError("QEMU died (test)")
        return guest(kernel, script, *a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", broken)
    rec = tmp_path / "rec"
    assert run_main(*TESTS, "--shards", "2", "--record", str(rec)) == 1
    assert "QEMU died (test)" in capsys.readouterr().err
    (d,) = stores(rec)
    kept = json.loads((d / "tests.json").read_text())
    boots = json.loads((d / "boots.json").read_text())
    assert len(boots) == 1 and sorted(kept) == sorted(boots[0]["tests"])
    assert "generic/013" not in kept and kept
    # the failed shard's number is given back: one boot directory
    assert len([p for p in d.iterdir() if p.name.startswith("boot-")]) == 1


def test_shards_must_be_a_positive_number(pipeline, capsys):  # noqa: F811
    assert run_main("generic/001", "--shards", "0") == 1
    err = capsys.readouterr().err
    assert "--shards must be a number of guests >= 1" in err and "Traceback" not in err


# ------------------------------------------------- check cells side by side

def check_rows(path):
    """What a check's --json rows say, without what differs between two
    runs of the same cells (logs, times, this run's file paths)."""
    return [{k: r.get(k) for k in ("commit", "subject", "cells", "passed", "tree",
                                   "image_sha256", "accel", "results", "reports", "flaky")}
            for r in json.loads(Path(path).read_text())]


def cache_records(fake, where):
    out = {}
    for n in entries(fake) if where == "check" else sorted(
            n for n in os.listdir(fake.work / "cache" / where) if n.endswith(".json")):
        row = json.loads((fake.work / "cache" / where / n).read_text())
        out[n] = ([r["passed"] for r in row["runs"]], [r["cells"] for r in row["runs"]],
                  row["cells"], row["passed"], row["accel"], row["image_sha256"])
    return out


def test_check_boots_cells_side_by_side(fake, capsys, monkeypatch, tmp_path):  # noqa: F811
    """Two guest slots, three cells: the builds run one at a time, the
    first two cells' guests are up at once and never more than two; the
    table, the rows and the records are those of a run cell after cell."""
    fake.fail["ffree"].add(fake.commits[2])
    rc, serial = run_check(fake, capsys, "--json", str(tmp_path / "serial.json"))
    assert rc == 1
    before = cache_records(fake, "check")
    os.rename(fake.work / "cache" / "check", fake.work / "cache" / "check-serial")

    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    lock = threading.Lock()
    now = {"build": 0, "boot": 0}
    most = {"build": 0, "boot": 0}
    started = {"build": 0, "boot": 0}
    first_two = threading.Barrier(2, timeout=60)
    build, guest = kernel.build, kernel.run_guest
    overlap = []

    def counted(what, fn, *a, **kw):
        with lock:
            now[what] += 1
            most[what] = max(most[what], now[what])
            if now["build"] and now["boot"]:
                overlap.append(what)        # a guest sharing the CPUs with a build
            nth = started[what]
            started[what] += 1
        try:
            if what == "boot" and nth < 2:
                first_two.wait()        # the first two cells' guests at once
            return fn(*a, **kw)
        finally:
            with lock:
                now[what] -= 1

    monkeypatch.setattr(kernel, "build", lambda *a, **kw: counted("build", build, *a, **kw))
    monkeypatch.setattr(kernel, "run_guest",
                        lambda *a, **kw: counted("boot", guest, *a, **kw))
    rc, side = run_check(fake, capsys, "--json", str(tmp_path / "side.json"))
    assert rc == 1
    assert most == {"build": 1, "boot": 2}
    assert overlap == []
    assert len(fake.calls["boot"]) == 6
    strip = lambda out: [r.rsplit("  ", 1)[0].rstrip() for r in rows_of(out)]  # noqa: E731
    assert strip(side) == strip(serial)                  # the table, time aside
    assert [r[:12] for r in rows_of(side)] == [c[:12] for c in fake.commits]
    assert check_rows(tmp_path / "side.json") == check_rows(tmp_path / "serial.json")
    assert cache_records(fake, "check") == before


def test_a_boot_error_beside_others_is_one_line(fake, capsys, monkeypatch):  # noqa: F811
    """A guest that cannot run (an error, not a failing cell) while other
    cells boot: the check ends with that error in one line once the others
    have ended, and their verdicts are on record."""
    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    guest = kernel.run_guest
    broken = fake.commits[1]

    def run_guest(kernel_image, *a, **kw):
        if kernel_image.endswith(broken):
            raise ForkError("QEMU could not start (test)")
        return guest(kernel_image, *a, **kw)

    monkeypatch.setattr(kernel, "run_guest", run_guest)
    from forkkit import cli
    assert cli.main(["check"]) == 1
    err = capsys.readouterr().err
    assert "fork check: error: QEMU could not start (test)" in err and "Traceback" not in err
    recorded = {json.loads((fake.work / "cache" / "check" / n).read_text())["commit"]
                for n in entries(fake)}
    assert broken not in recorded and fake.commits[0] in recorded


def test_side_by_side_boots_a_tree_once(fake, capsys, monkeypatch):  # noqa: F811
    """A commit whose tree an earlier cell of the same check boots (here an
    empty commit on top of the series) gets that cell's row from the cache
    once it has booted, as a run cell after cell would: one boot, no
    second run on record."""
    head = fake.commits[-1]
    empty = fake.git("commit-tree", head + "^{tree}", "-p", head, "-m", "ext2: empty (test)")
    fake.git("update-ref", "refs/heads/series/9.9", empty)
    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    rc, out = run_check(fake, capsys)
    assert rc == 0, out
    assert len(fake.calls["boot"]) == len(fake.commits)         # not one more
    rows = rows_of(out)
    assert rows[-1].startswith(empty[:12]) and rows[-1].endswith("(cached)"), rows
