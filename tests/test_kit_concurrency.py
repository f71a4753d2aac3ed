"""Many guests on one machine: the record stores take concurrent writers,
the guests take slots, each guest's files are its own.

Two fstests shards of one group run at once on the same kernels (the same
store in work/ and the same --record directory), with the fake guest of
test_fstests.py held until both are booted: both shards' tests and boots
land, complete, with boot numbers of their own.  The JSON writes are
atomic and each store's read-modify-write runs under its own lock."""

import json
import os
import subprocess
import threading
import time

import pytest

from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (the fixtures)
from forkkit.core import locks, records
from forkkit.core.errors import ForkError
from forkkit.core.locks import DirLock, GuestSlots
from forkkit.guest import initramfs, qemu
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


# ------------------------------------------------------------ guest slots

def holders(n, every=()):
    """Threads that each take guest slots (GuestSlots(every=i in every)),
    hold them until released, and say when they have them."""
    got = [threading.Event() for _ in range(n)]
    release = [threading.Event() for _ in range(n)]

    def hold(i):
        with GuestSlots(every=i in every):
            got[i].set()
            release[i].wait(30)

    threads = [threading.Thread(target=hold, args=(i,), daemon=True) for i in range(n)]
    return threads, got, release


def test_two_guests_run_at_two_slots_a_third_waits(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    monkeypatch.setattr(GuestSlots, "POLL", 0.02)
    threads, got, release = holders(3)
    threads[0].start()
    threads[1].start()
    assert got[0].wait(10) and got[1].wait(10)       # both at once
    threads[2].start()
    assert not got[2].wait(0.5)                      # no third slot
    release[1].set()
    assert got[2].wait(10)                           # the freed one
    release[0].set()
    release[2].set()
    for t in threads:
        t.join(10)
    assert "waiting for a guest slot (one of 2" in capsys.readouterr().err


def test_every_slot_waits_for_every_guest(tmp_path, monkeypatch):
    """bench takes every slot: it starts when both running guests are done,
    and no guest starts beside it."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "2")
    monkeypatch.setattr(GuestSlots, "POLL", 0.02)
    threads, got, release = holders(4, every={2})
    threads[0].start()
    threads[1].start()
    assert got[0].wait(10) and got[1].wait(10)
    threads[2].start()
    release[0].set()
    assert not got[2].wait(0.5)                      # one guest still runs
    release[1].set()
    assert got[2].wait(10)
    threads[3].start()
    assert not got[3].wait(0.5)                      # nothing beside the bench
    release[2].set()
    assert got[3].wait(10)
    release[3].set()
    for t in threads:
        t.join(10)


def test_slot_count_follows_cores_and_memory(monkeypatch):
    monkeypatch.delenv("FORK_GUEST_SLOTS", raising=False)
    monkeypatch.setattr(locks, "cgroup_limits", lambda: (None, None))
    monkeypatch.setattr(locks, "cpu_count", lambda: 16)
    monkeypatch.setattr(locks, "memory_mb", lambda: 5000)
    assert locks.guest_slot_count() == 2             # memory for two 2 GiB guests
    monkeypatch.setattr(locks, "memory_mb", lambda: 64000)
    assert locks.guest_slot_count() == 8             # two vCPUs each
    monkeypatch.setattr(locks, "cpu_count", lambda: 1)
    assert locks.guest_slot_count() == 1             # at least one
    monkeypatch.setenv("FORK_GUEST_SLOTS", "3")
    assert locks.guest_slot_count() == 3
    monkeypatch.setenv("FORK_GUEST_SLOTS", "many")
    with pytest.raises(ForkError, match="FORK_GUEST_SLOTS=many: give a number"):
        locks.guest_slot_count()


def fake_cgroup(tmp_path, path, limits, root="/"):
    """A cgroup v2 tree under tmp_path/cgroup mounted (as mountinfo says)
    with `root` at its top, the process in `path`; `limits` is {cgroup
    path: {file: text}}.  Returns (the /proc/self/cgroup file, mountinfo)."""
    top = tmp_path / "cgroup"
    for cg, files in limits.items():
        d = top / cg.strip("/")
        d.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (d / name).write_text(text + "\n")
    (top / path.strip("/")).mkdir(parents=True, exist_ok=True)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("1:cpu:/\n0::%s\n" % ("/" + (root.strip("/") + "/" if root != "/" else "")
                                          + path.strip("/")))
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / %s/v1 rw,relatime - cgroup cgroup rw,cpu\n"
        "41 31 0:38 %s %s rw,relatime - cgroup2 cgroup2 rw\n" % (top, root, top))
    return str(proc), str(mountinfo)


def test_slot_count_follows_the_cgroup(tmp_path, monkeypatch):
    """The cgroup's cpu.max and memory.max, the least along the path from
    the process's cgroup up to the mount, bound the slots; without a
    cgroup v2 (or without limits) the machine's cores and memory do."""
    monkeypatch.delenv("FORK_GUEST_SLOTS", raising=False)
    monkeypatch.setattr(locks, "cpu_count", lambda: 16)
    monkeypatch.setattr(locks, "memory_mb", lambda: 64000)
    proc, mountinfo = fake_cgroup(tmp_path, "/user.slice/run.scope", {
        "/": {"cgroup.controllers": "cpu memory"},
        "/user.slice": {"cpu.max": "600000 100000", "memory.max": str(16 << 30)},
        "/user.slice/run.scope": {"cpu.max": "max 100000", "memory.max": "max"}})
    monkeypatch.setattr(locks, "PROC_CGROUP", proc)
    monkeypatch.setattr(locks, "MOUNTINFO", mountinfo)
    assert locks.cgroup_limits() == (6.0, 16384)
    assert locks.guest_slot_count() == 3             # six CPUs: three 2-vCPU guests
    (tmp_path / "cgroup" / "user.slice" / "run.scope" / "memory.max").write_text(
        "%d\n" % (5 << 30))
    assert locks.cgroup_limits() == (6.0, 5120)
    assert locks.guest_slot_count() == 2             # 5 GiB: two 2 GiB guests
    (tmp_path / "cgroup" / "user.slice" / "cpu.max").write_text("150000 100000\n")
    assert locks.guest_slot_count() == 1             # 1.5 CPUs: still one
    # no cgroup v2 line (a cgroup v1 machine): the machine's
    (tmp_path / "proc-self-cgroup").write_text("1:cpu:/\n4:memory:/x\n")
    assert locks.cgroup_limits() == (None, None)
    assert locks.guest_slot_count() == 8


def test_cgroup_of_a_namespace_mounted_below_its_root(tmp_path, monkeypatch):
    """A cgroup namespace's mount: mountinfo's root names the cgroup at the
    mount point, /proc/self/cgroup the path from the hierarchy's root."""
    proc, mountinfo = fake_cgroup(tmp_path, "/job", {
        "/job": {"cpu.max": "400000 100000", "memory.max": str(8 << 30)}}, root="/ci")
    monkeypatch.setattr(locks, "PROC_CGROUP", proc)
    monkeypatch.setattr(locks, "MOUNTINFO", mountinfo)
    assert locks.cgroup_limits() == (4.0, 8192)


def test_each_boot_has_its_own_initramfs(tmp_path, monkeypatch):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    assert qemu.initrd_path() != qemu.initrd_path()


def test_a_base_archive_another_run_may_read_is_not_deleted(kit, tmp_path):
    """Two runs with other initramfs files (a bench's extra files): the
    second's archive does not delete the first's, which the first may be
    about to read; an archive unused for days is deleted."""
    if not os.path.exists(initramfs.BUSYBOX):
        pytest.skip("busybox-static not installed")
    first = initramfs.base_archive()
    extra = tmp_path / "extra"
    extra.write_text("x\n")
    second = initramfs.base_archive(extra_files={"/etc/extra": str(extra)})
    assert second != first
    assert os.path.exists(first) and os.path.exists(second)
    stale = time.time() - initramfs.PRUNE_AGE - 60
    os.utime(first, (stale, stale))
    assert initramfs.base_archive(extra_files={"/etc/extra": str(extra)}) == second
    assert not os.path.exists(first) and os.path.exists(second)


# ------------------------------------------- the fstests root, copy-on-write

def test_fstests_boots_share_the_root_through_their_own_overlays(pipeline, tmp_path,  # noqa: F811
                                                                 monkeypatch):
    """Each fstests boot gets a qcow2 overlay of its own (a real qemu-img),
    backed by the read-only root image, which no boot writes; the guests
    that run at once share no writable file."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    root = tmp_path / "root.img"
    before = root.read_bytes()
    seen = []
    guest = cmd_fstests.run_guest

    def look(kernel, script, disks, *a, **kw):
        info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", disks[0]],
                                         capture_output=True, text=True, check=True).stdout)
        seen.append((list(disks), info))
        return guest(kernel, script, disks, *a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", look)
    assert run_main("generic/001") == 0
    assert len(seen) == 2
    for disks, info in seen:
        assert disks[0].endswith("/root.qcow2") and info["format"] == "qcow2"
        assert info["backing-filename"] == str(root)
        assert info["backing-filename-format"] == "raw"
        assert not os.path.exists(disks[0])              # removed after the boot
    writable = [d for disks, _ in seen for d in disks]
    assert len(set(writable)) == len(writable) and str(root) not in writable
    assert not os.stat(root).st_mode & 0o222            # read-only
    assert root.read_bytes() == before


def test_qemu_is_told_each_disks_format(tmp_path, monkeypatch):
    monkeypatch.setattr(qemu, "qemu_binary", lambda: "qemu-system-x86_64")
    raw, cow = tmp_path / "test.img", tmp_path / "root.qcow2"
    raw.write_bytes(b"\0" * 4096)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(raw),
                    str(cow)], check=True)
    cmd = qemu.qemu_cmd("bzImage", "initrd", [str(cow), str(raw)], 2, "2048", False, "")
    drives = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-drive"]
    assert drives[0].startswith("file=%s,format=qcow2," % cow)
    assert drives[1].startswith("file=%s,format=raw," % raw)
