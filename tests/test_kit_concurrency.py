"""Many guests on one machine: the record stores take concurrent writers.

Two fstests shards of one group run at once on the same kernels (the same
store in work/ and the same --record directory), with the fake guest of
test_fstests.py held until both are booted: both shards' tests and boots
land, complete, with boot numbers of their own.  The JSON writes are
atomic and each store's read-modify-write runs under its own lock."""

import json
import os
import threading

import pytest

from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (the fixtures)
from forkkit.core import records
from forkkit.core.locks import DirLock
from forkkit.verify import fstests_run as cmd_fstests


def test_two_shards_on_one_store_both_land(pipeline, tmp_path, monkeypatch):  # noqa: F811
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {"generic/013": "fail"},
                            "series-7.3.bzImage": {"generic/002": "notrun"}}
    both = threading.Barrier(2, timeout=60)
    guest = cmd_fstests.run_guest

    def together(*a, **kw):
        both.wait()             # both shards' guests are up at once
        return guest(*a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", together)
    shards = [["generic/001", "generic/002"], ["generic/013", "ext4/001"]]
    rcs = [None, None]

    def shard(i):
        try:
            rcs[i] = run_main(*shards[i], "--record", str(rec))
        finally:
            both.abort() if rcs[i] is None else None

    threads = [threading.Thread(target=shard, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert rcs == [0, 0]
    want = sorted(shards[0] + shards[1])
    work = tmp_path / "work" / "fstests" / "kernels"
    for top in (work, rec):
        kernels = [d for d in sorted(top.iterdir()) if d.name != "scripts"]
        assert len(kernels) == 2
        for d in kernels:
            tests = json.loads((d / "tests.json").read_text())
            assert sorted(tests) == want, (top, d.name)
            boots = json.loads((d / "boots.json").read_text())
            assert sorted(b["n"] for b in boots) == [1, 2], (top, d.name)
            assert len({b["id"] for b in boots}) == 2
            # each boot's own tests, from its own disks
            assert sorted(sorted(b["tests"]) for b in boots) == sorted(sorted(s) for s in shards)
    for d in stores(rec):
        for n in (1, 2):
            assert (d / ("boot-%d" % n) / "result.xml").exists()


def test_write_json_is_atomic_for_threads_of_one_process(tmp_path):
    """Threads of one process writing one file never share a temporary
    file: every write lands whole and none leaves a temporary behind."""
    path = str(tmp_path / "x.json")
    errors = []

    def write(i):
        try:
            for k in range(50):
                records.write_json(path, {"writer": i, "k": k, "pad": "x" * 4000})
        except Exception as exc:        # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert json.loads(open(path).read())["k"] == 49
    assert os.listdir(tmp_path) == ["x.json"]


def test_dir_lock_excludes_a_second_holder(tmp_path):
    """A store's lock: a second holder waits until the first lets go, and
    no file is left in the directory (a --record directory is committed)."""
    order = []
    held = threading.Event()

    def second():
        held.wait()
        with DirLock(str(tmp_path)):
            order.append("second")

    t = threading.Thread(target=second)
    with DirLock(str(tmp_path)):
        t.start()
        held.set()
        t.join(0.5)
        order.append("first")
    t.join(10)
    assert order == ["first", "second"]
    assert os.listdir(tmp_path) == []
