"""Tests of `fork bench` (tools/forkkit/verbs/bench.py, verify/bench.py, benchlib.py).

Unit tests run without QEMU: builds and guest boots are replaced by fakes
that answer the generated guest script with synthetic RESULT lines.  The
integration test boots the real kernels (`bench --quick --reps 1`) and runs
only with FORK_INTEGRATION=1 and a built kernel; run it under the machine's
heavy-job lock:

    flock /tmp/heavy.lock env FORK_INTEGRATION=1 /usr/bin/python3 -m pytest tests/test_bench.py
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.guest import guesttests  # noqa: E402
from forkkit.verify import bench as cmd_bench, benchlib  # noqa: E402
from forkkit.core.errors import ForkError  # noqa: E402

FULL = benchlib.SIZES["full"]
QUICK = benchlib.SIZES["quick"]


# ---------------------------------------------------------------------------
# statistics

def test_median_and_summary():
    assert benchlib.median([3, 1, 2]) == 2
    assert benchlib.median([4, 1, 3, 2]) == 2.5
    assert benchlib.median([7]) == 7
    with pytest.raises(ValueError):
        benchlib.median([])
    s = benchlib.summary([5.0, 1.0, 3.0])
    assert s == {"n": 3, "median": 3.0, "min": 1.0, "max": 5.0}
    assert benchlib.summary([]) is None


def test_paired_ratio_interval():
    """B/A per repetition (geometric means), t interval over repetitions:
    the boot-to-boot spread is what makes the interval wide."""
    a = {1: [100, 102], 2: [110, 108], 3: [95, 97]}
    b = {1: [120, 122], 2: [133, 129], 3: [114, 116]}
    r = benchlib.paired_ratio(a, b)
    assert r["n"] == 3 and r["ratio"] == pytest.approx(1.2, rel=0.01)
    assert r["lo"] < r["ratio"] < r["hi"] and r["hi"] < 1.25 and r["lo"] > 1.15
    assert r["detectable"] == pytest.approx((r["hi"] / r["lo"]) ** 0.5 - 1, rel=1e-9)
    # the same drift in both kernels (host slower in rep 2) does not widen it
    flat = benchlib.paired_ratio({1: [100], 2: [150]}, {1: [110], 2: [165]})
    assert flat["lo"] == pytest.approx(1.1) and flat["hi"] == pytest.approx(1.1)
    # repetitions only one kernel has are not paired; one pair: no interval
    one = benchlib.paired_ratio({1: [100], 2: [100]}, {2: [90]})
    assert one["n"] == 1 and one["lo"] is None and one["ratio"] == pytest.approx(0.9)
    assert benchlib.paired_ratio({1: [1]}, {2: [1]}) is None


def test_t_quantiles():
    assert benchlib.t975(1) == 12.706 and benchlib.t975(2) == 4.303
    assert benchlib.t975(30) == 2.042
    assert 2.0 < benchlib.t975(60) < 2.01 and 1.96 < benchlib.t975(1000) < 1.97


@pytest.mark.parametrize("lo, hi, better, verdict, holds", [
    (1.05, 1.10, "higher", "B better", True),
    (0.90, 0.95, "higher", "B worse", False),
    (0.98, 0.995, "higher", "B worse", True),         # a certain loss, but under 3%
    (0.98, 1.02, "higher", "no change (within 3%)", True),
    (0.95, 1.02, "higher", "inconclusive", None),     # allows a 5% loss
    (0.90, 1.20, "higher", "inconclusive", None),
    (1.05, 1.10, "lower", "B worse", False),          # ns per call up 5-10%
    (0.90, 0.95, "lower", "B better", True),
    (1.00, 1.04, "lower", "inconclusive", None),      # up to 3.8% slower
])
def test_judge_interval(lo, hi, better, verdict, holds):
    r = {"ratio": (lo * hi) ** 0.5, "lo": lo, "hi": hi, "n": 3, "detectable": 0}
    assert benchlib.judge_interval(r, better) == (verdict, holds)


def test_judge_interval_needs_two_repetitions():
    r = {"ratio": 1.5, "lo": None, "hi": None, "n": 1, "detectable": None}
    assert benchlib.judge_interval(r) == ("not judged (fewer than 2 repetitions)", None)
    assert benchlib.judge_interval(None)[1] is None


def test_aggregate_pairs_and_control():
    """A 10% slowdown of B that the min..max rule called 'no significant
    change' (the ranges overlap because the host drifts between boots) is
    seen through the paired interval; the control C (A booted again) has
    its own C/A."""
    pts = benchlib.make_points(QUICK, ["inode"])[:1]
    drift = {1: 1.0, 2: 1.3, 3: 0.8}
    samples = make_samples(pts, lambda p, k, rep: 100.0 * drift[rep] * (
        {"A": 1.0, "B": 0.9, "C": 1.0}[k]), kernels=("A", "B", "C"))
    row = benchlib.aggregate(samples, pts)[0]
    assert row["B"]["min"] < row["A"]["max"]            # the ranges overlap
    assert row["ratio"] == pytest.approx(0.9) and row["verdict"] == "B worse"
    assert row["holds"] is False and row["pairs"] == 3
    assert row["control"]["ratio"] == pytest.approx(1.0)
    assert row["control"]["verdict"] == "no change (within 3%)"
    # a point whose samples last under a second is not judged
    for x in samples:
        x["result"]["elapsed_ns"] = "150000000"
    row = benchlib.aggregate(samples, pts)[0]
    assert row["verdict"].startswith("too short (a sample of 0.15 s)") and row["holds"] is None


# ---------------------------------------------------------------------------
# load

def test_load_rule():
    quiet = {"before": [3.2, 1, 1], "after": [3.4, 1, 1], "other_cpu": 0.1,
             "boot_other_cpu": 0.9}
    assert not benchlib.is_loaded(quiet)          # load1 alone does not mark
    assert benchlib.is_loaded(dict(quiet, other_cpu=0.8))
    # points too short to measure fall back to the whole boot
    assert benchlib.is_loaded(dict(quiet, other_cpu=None))
    assert not benchlib.is_loaded(dict(quiet, other_cpu=None, boot_other_cpu=0.2))
    assert not benchlib.is_loaded({"before": None, "after": None, "other_cpu": None,
                                   "boot_other_cpu": None})
    assert "os.getloadavg" in benchlib.LOAD_RULE


def test_other_cpu():
    s = {"t": 10.0, "busy": 1000, "qemu": 500, "self": 10, "hz": 100}
    e = {"t": 12.0, "busy": 1500, "qemu": 800, "self": 12, "hz": 100}
    # 500 busy ticks in 2 s, 302 of them ours: 198 ticks = 0.99 CPU
    assert benchlib.other_cpu(s, e) == pytest.approx(0.99)
    assert benchlib.other_cpu(s, dict(e, t=10.2)) is None      # too short
    assert benchlib.other_cpu(s, None) is None
    assert benchlib.other_cpu(s, dict(e, busy=900)) == 0.0
    # QEMU gone before the end snapshot: not measured (not "all of it others")
    assert benchlib.other_cpu(s, dict(e, qemu=None)) is None
    assert benchlib.other_cpu({"t": 0, "busy": 0, "ours": 0}, {"t": 10, "busy": 1500,
                                                              "ours": 1000, "hz": 100},
                              own=("ours",)) == pytest.approx(0.5)


def test_load_watcher_follows_the_console(tmp_path):
    log = tmp_path / "console.log"
    w = cmd_bench.LoadWatcher(str(log), interval=0.05)
    w.start()
    with open(log, "w") as fh:
        fh.write("# qemu ...\nPOINT id=0 iter=0 workload=statfs fs=ext2\r\n")
        fh.flush()
        import time
        time.sleep(0.3)
        fh.write("RESULT prog=statfsbench ns_per_call=3\r\nPOINT id=1 iter=0 workload=x\r\n")
        fh.write("RESULT prog=statfsbench ns_per_call=4\r\n")
    w.stop()
    assert set(w.events) == {(0, 0), (1, 0)}
    l0 = w.load_of(0)
    assert len(l0["before"]) == 3 and len(l0["after"]) == 3
    assert l0["seconds"] >= 0.2
    assert w.load_of(1)["other_cpu"] is None       # start and end in one poll
    assert w.load_of(7)["before"] is None
    assert "boot_other_cpu" in l0


# ---------------------------------------------------------------------------
# points and the guest script

def test_points_cover_the_matrix():
    pts = benchlib.make_points(FULL)
    keys = [p.key for p in pts]
    assert len(keys) == len(set(keys))
    by = lambda wl, fs: [p for p in pts if p.workload == wl and p.fs == fs]  # noqa: E731
    for fs in ("ext2", "ext4", "tmpfs"):
        seed = by("seed", fs)
        assert len(seed) == 9
        assert {p.params["n"] for p in seed} == {9, 16, 32}
        assert {(p.params["tasks"], p.params["dirs"]) for p in seed} == \
            {(1, "separate"), (2, "shared"), (2, "separate")}
        assert len(by("inode", fs)) == 2
        assert len(by("dbench", fs)) == 1
    for fs in ("ext2", "ext4"):
        st = by("statfs", fs)
        assert {(p.params["groups"], p.params["threads"]) for p in st} == \
            {(g, t) for g in (128, 1024, 8192) for t in (1, 2)}
    assert len(by("statfs", "tmpfs")) == 2
    shared = [p for p in pts if p.params.get("dirs") == "shared"][0]
    assert "/mnt/s /mnt/s" in shared.cmd
    sep = [p for p in pts if p.params.get("dirs") == "separate" and p.params.get("tasks") == 2
           and p.workload == "seed"][0]
    assert "/mnt/t0 /mnt/t1" in sep.cmd
    assert benchlib.parse_only("inode, seed") == ["seed", "inode"]
    with pytest.raises(ValueError):
        benchlib.parse_only("seed,bogus")
    assert {p.workload for p in benchlib.make_points(QUICK, ["statfs"])} == {"statfs"}


def test_statfs_images_have_the_group_counts():
    images = dict(benchlib.DISKS)
    for g in benchlib.STATFS_GROUPS:
        name, size, bs = images["g%d" % g]
        assert bs == 1024 and size == "%dM" % (8 * g)       # 8 MiB per group at 1 KiB
    assert images["work-ext2"] == images["work-ext4"]        # the very same image
    assert benchlib.device_of("work-ext2") == "/dev/vda"
    assert benchlib.device_of("g8192") == "/dev/vde"


def test_guest_script_contains_all_points():
    pts = benchlib.make_points(FULL)
    script = benchlib.guest_script(pts)
    announced = re.findall(r'^echo "POINT id=(\d+) iter=0 (.*)"$', script, re.M)
    assert [int(i) for i, _ in announced] == list(range(len(pts)))
    assert [k for _, k in announced] == [p.key for p in pts]
    for p in pts:
        assert p.cmd in script
    assert script.count("mount -t tmpfs") == 2      # statfs + the other workloads
    assert "mount -t ext4 /dev/vdb /mnt" in script
    assert "mount -t ext2 /dev/vda /mnt" in script
    for dev in ("vdc", "vdd", "vde"):
        assert "mount -t ext2 /dev/%s /mnt" % dev in script
        assert "mount -t ext4 /dev/%s /mnt" % dev in script
    assert script.rstrip().endswith('echo "BENCH-END points=%d"' % len(pts))
    assert "lockstat_reset\n" not in script and "lockstat_dump " not in script
    assert len(re.findall(r"^mount -t", script, re.M)) == \
        len(re.findall(r"^sync; umount /mnt", script, re.M)) == 10
    if shutil.which("sh"):
        proc = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
        assert proc.returncode == 0, proc.stderr


def test_guest_script_lockstat_mode():
    pts = benchlib.make_points(QUICK)
    script = benchlib.guest_script(pts, lockstat=True)
    announced = re.findall(r'^echo "POINT id=(\d+) iter=0 (.*)"$', script, re.M)
    assert announced and all("fs=ext2" in k for _, k in announced)
    assert len(announced) == len([p for p in pts if p.fs == "ext2"])
    assert "mount -t ext4" not in script and "mount -t tmpfs" not in script
    for wl in benchlib.WORKLOADS:
        assert script.count("lockstat_dump %s\n" % wl) == 1
    assert len(re.findall(r"^sync; lockstat_reset$", script, re.M)) == 4
    # each reset comes before its workload's first point, each dump after its last
    lines = script.splitlines()
    for wl in benchlib.WORKLOADS:
        first = min(i for i, l in enumerate(lines) if "workload=%s " % wl in l)
        last = max(i for i, l in enumerate(lines) if "workload=%s " % wl in l)
        dump = lines.index("lockstat_dump %s" % wl)
        assert dump > last + 1
        resets = [i for i, l in enumerate(lines) if l == "sync; lockstat_reset" and i < first]
        assert resets and all("POINT" not in l for l in lines[resets[-1]:first])


BUSYBOX = shutil.which("busybox") or "/bin/busybox"
needs_busybox = pytest.mark.skipif(not os.access(BUSYBOX, os.X_OK), reason="no busybox")

LOCK_STAT_HDR = ("lock_stat version 0.4\n" + "-" * 221 + "\n" +
                 "%40s %14s %14s\n" % ("class name", "con-bounces", "contentions") +
                 "-" * 221 + "\n\n")


def ls_class(name, con, wait_total, acq, sites=(), holders=()):
    """One class of /proc/lock_stat, formatted as lockdep_proc.c does."""
    line = "%40s:%14d %14d %14s %14s %14s %14s %14d %14d %14s %14s %14s %14s\n" % (
        name, con, con, "0.10", "5.00", "%.2f" % wait_total,
        "%.2f" % (wait_total / con if con else 0), acq, acq, "0.05", "2.00", "100.00", "0.10")
    out = line
    for group in (sites, holders):
        if group:
            out += " " * (40 - len(name)) + "-" * len(name) + "\n"
            for cnt, sym in group:
                out += "%40s %14d %29s %s\n" % (name, cnt, "[<00000000deadbeef>]", sym)
    if sites or holders:
        out += "\n" + "." * 221 + "\n"
    return out + "\n"


FAKE_LOCK_STAT = LOCK_STAT_HDR + \
    ls_class("&sbi->s_lock", 500, 1234.5, 9000, [(400, "ext2_statfs+0x2c/0x1f0"),
                                                 (100, "ext2_new_blocks+0x10/0x900")],
             [(450, "ext2_statfs+0x2c/0x1f0")]) + \
    ls_class("&sbi->s_rsv_window_lock", 42, 88.0, 500, [(42, "ext2_try_to_allocate+0x1/0x2")]) + \
    ls_class("&bgl->locks[i].lock", 7, 3.25, 800, [(7, "ext2_free_blocks+0x1/0x2")]) + \
    ls_class("key#3", 5, 1.0, 70, [(5, "__percpu_counter_sum+0xa/0x90")]) + \
    ls_class("rcu_node_0", 0, 0.0, 10) + \
    ls_class("&sbi->s_next_gen_lock", 0, 0.0, 321) + \
    ls_class("&zone->lock", 0, 0.0, 10)


def test_parse_lockstat():
    classes, warnings = benchlib.parse_lockstat(FAKE_LOCK_STAT.splitlines())
    assert not warnings
    names = [c["name"] for c in classes]
    assert names[:4] == ["&sbi->s_lock", "&sbi->s_rsv_window_lock", "&bgl->locks[i].lock",
                         "key#3"]
    assert [c["name"] for c in benchlib.percpu_counter_locks(classes)] == ["key#3"]
    top = classes[0]
    assert top["contentions"] == 500 and top["waittime_total_us"] == pytest.approx(1234.5)
    assert top["acquisitions"] == 9000
    assert [s["symbol"] for s in top["sites"]] == ["ext2_statfs+0x2c/0x1f0",
                                                   "ext2_new_blocks+0x10/0x900"]
    assert [s["symbol"] for s in top["holders"]] == ["ext2_statfs+0x2c/0x1f0"]
    wide = [c["name"] for c in benchlib.fs_wide_ext2(classes)]
    assert wide == ["&sbi->s_lock", "&sbi->s_rsv_window_lock"]
    rw = "%38s-W:" % "&type->i_mutex_dir_key" + FAKE_LOCK_STAT.splitlines()[5][41:]
    c, _ = benchlib.parse_lockstat([rw])
    assert c[0]["name"] == "&type->i_mutex_dir_key-W"
    _, warnings = benchlib.parse_lockstat(
        ["*WARNING* lock debugging disabled!! - possibly due to a lockdep warning"])
    assert warnings


@needs_busybox
def test_lockstat_dump_awk_in_busybox(tmp_path):
    """The guest-side filter keeps the contended classes with their sites."""
    fake = tmp_path / "lock_stat"
    fake.write_text(FAKE_LOCK_STAT)
    script = benchlib.script_head("x") + \
        'LOCK_STAT=%s\nlockstat_dump statfs\n' % fake
    proc = subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "LOCKSTAT-BEGIN workload=statfs"
    assert lines[-1] == "LOCKSTAT-END workload=statfs"
    assert not any("rcu_node_0" in l or "zone->lock" in l for l in lines)
    # an uncontended ext2 class is kept (for acquisitions per operation)
    assert sum("s_next_gen_lock" in l for l in lines) == 1
    out = benchlib.parse_output(
        ["POINT id=0 iter=0 " + benchlib.make_points(QUICK, ["statfs"])[0].key,
         "RESULT prog=statfsbench threads=1 calls=3 ns_per_call=5"] + lines + ["BENCH-END"],
        benchlib.make_points(QUICK, ["statfs"])[:1])
    classes, _ = benchlib.parse_lockstat(out[1]["statfs"])
    assert [c["name"] for c in classes] == ["&sbi->s_lock", "&sbi->s_rsv_window_lock",
                                            "&bgl->locks[i].lock", "key#3",
                                            "&sbi->s_next_gen_lock"]
    assert len(classes[0]["sites"]) == 2 and len(classes[0]["holders"]) == 1
    assert classes[-1]["acquisitions"] == 321 and classes[-1]["contentions"] == 0


@needs_busybox
def test_dbench_wrapper_in_busybox(tmp_path):
    """run_dbench turns dbench's Throughput line into a RESULT line."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dbench").write_text(
        "#!/bin/sh\necho 'dbench version 4.00'\necho\n"
        "echo 'Throughput 41.5213 MB/sec  2 clients  2 procs  max_latency=35.153 ms'\n")
    (bindir / "dbench").chmod(0o755)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = benchlib.script_head("/x").replace("/mnt/db", str(mnt / "db")) \
        + "run_dbench 1 2\n"
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]))
    proc = subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == \
        "RESULT prog=dbench mb_per_s=41.5213 clients=2 max_latency_ms=35.153"
    (bindir / "dbench").write_text("#!/bin/sh\necho broken\nexit 3\n")
    proc = subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 1 and "BENCH-FAIL: dbench exited 3" in proc.stdout
    (bindir / "dbench").write_text(
        "#!/bin/sh\necho 'Throughput 0 MB/sec  2 clients  2 procs  max_latency=0.000 ms'\n")
    proc = subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 1 and "or 0 MB/s" in proc.stdout


# ---------------------------------------------------------------------------
# parsing the guest output

def fake_result(p, value):
    if p.workload == "statfs":
        calls = int(1e9 / value * 2 * p.params["threads"])
        return ("RESULT prog=statfsbench threads=%d seconds=2 calls=%d elapsed_ns=2000000000 "
                "calls_per_s=%.1f ns_per_call=%.1f" % (p.params["threads"], calls, calls / 2.0,
                                                        value))
    if p.workload == "seed":
        return ("RESULT prog=seedload tasks=%d blocks=%d blocksize=4096 iters=10 "
                "elapsed_ns=1500000000 ops=20 ops_per_s=%.1f" % (p.params["tasks"], p.params["n"],
                                                            value))
    if p.workload == "inode":
        return "RESULT prog=createbench tasks=%d files=20 iters=2 ops=80 elapsed_ns=1200000000 " \
               "ops_per_s=%.1f" % (p.params["tasks"], value)
    return "RESULT prog=dbench mb_per_s=%.2f clients=2 max_latency_ms=3.0" % value


def fake_output(points, value_fn, lockstat=False, runs=1):
    out = ["BENCH-BEGIN points=%d" % len(points)]
    cur_wl = None
    for i, p in enumerate(points):
        if lockstat and p.fs != "ext2":
            continue
        if lockstat and p.workload != cur_wl:
            if cur_wl:
                out += ["LOCKSTAT-BEGIN workload=" + cur_wl] + \
                    FAKE_LOCK_STAT.splitlines()[5:] + ["LOCKSTAT-END workload=" + cur_wl]
            cur_wl = p.workload
        for j in range(1 if lockstat else runs):
            out.append("POINT id=%d iter=%d %s" % (i, j, p.key))
            out.append("[   12.345678] some kernel message")
            out.append(fake_result(p, value_fn(p)))
    if cur_wl:
        out += ["LOCKSTAT-BEGIN workload=" + cur_wl, "LOCKSTAT-END workload=" + cur_wl]
    out.append("BENCH-END points=%d" % len(points))
    return out


def test_parse_output_maps_results_to_points():
    pts = benchlib.make_points(QUICK)
    res, dumps = benchlib.parse_output(fake_output(pts, lambda p: 100.0), pts)
    assert sorted(res) == list(range(len(pts)))
    assert res[0][0]["prog"] == "statfsbench" and len(res[0]) == 1
    assert dumps == {}
    res, dumps = benchlib.parse_output(fake_output(pts, lambda p: 1.0, lockstat=True), pts,
                                       lockstat=True)
    assert all(pts[i].fs == "ext2" for i in res)
    assert set(dumps) == set(benchlib.WORKLOADS)


@pytest.mark.parametrize("damage,msg", [
    (lambda o: [l for l in o if not l.startswith("RESULT prog=createbench")],
     "printed no RESULT"),
    (lambda o: [l.replace("prog=seedload", "prog=stress") for l in o], "RESULT of stress"),
    (lambda o: [l for l in o if not l.startswith("BENCH-END")], "did not reach its end"),
    (lambda o: [l for l in o if not l.startswith("POINT id=3 ")], "RESULT line outside"),
    (lambda o: [l.replace("fs=ext2", "fs=ext3") for l in o], "unknown point"),
    (lambda o: [l.replace("ops_per_s=", "xx=") for l in o], "has no ops_per_s"),
    (lambda o: [re.sub("mb_per_s=[0-9.]+", "mb_per_s=0", l) for l in o], "not a measurement"),
    (lambda o: [re.sub("ns_per_call=[0-9.]+", "ns_per_call=nan", l) for l in o],
     "not a measurement"),
])
def test_parse_output_rejects_gaps(damage, msg):
    pts = benchlib.make_points(QUICK)
    out = damage(fake_output(pts, lambda p: 100.0))
    with pytest.raises(benchlib.ParseError, match=msg):
        benchlib.parse_output(out, pts)


# ---------------------------------------------------------------------------
# targets

def make_samples(points, value_fn, reps=3, kernels=("A", "B")):
    samples = []
    for rep in range(1, reps + 1):
        for k in kernels:
            for p in points:
                v = value_fn(p, k, rep)
                fields = benchlib._fields(fake_result(p, v))
                samples.append({"kernel": k, "flavour": "base", "rep": rep, "point": p.key,
                                "workload": p.workload, "fs": p.fs, "params": p.params,
                                "value": float(fields[p.metric]), "result": fields,
                                "loaded": False})
    return samples


def good_series(p, k, rep):
    """A world where the series reaches every target."""
    jitter = 1 + 0.01 * rep
    if p.workload == "statfs":
        if p.fs == "tmpfs":
            return 300 * jitter
        if p.fs == "ext2" and k == "A":
            return p.params["groups"] * 100.0 * p.params["threads"] * jitter
        return 1000.0 * jitter
    if p.workload == "seed":
        base = {"ext2": 1000, "ext4": 900, "tmpfs": 5000}[p.fs]
        if p.fs == "ext2" and k == "B":
            base *= 1.3
        scale = 1.0 if p.params["tasks"] == 1 else (
            1.9 if p.params["dirs"] == "separate" or p.fs == "tmpfs" else 1.2)
        if p.fs == "ext2" and k == "A" and p.params["tasks"] == 2:
            scale = 1.1
        return base * scale * jitter
    return 100.0 * (1.2 if (p.fs == "ext2" and k == "B") else 1.0) * jitter


def bad_series(p, k, rep):
    v = good_series(p, k, rep)
    if p.fs == "ext2" and k == "B":
        if p.workload == "statfs":
            return good_series(p, "A", rep)         # statfs still O(groups)
        if p.workload in ("seed", "inode"):
            return v * 0.5 if p.params["tasks"] == 2 else good_series(p, "A", rep) * 0.8
    return v


def test_targets_reached():
    pts = benchlib.make_points(FULL)
    samples = make_samples(pts, lambda p, k, rep: good_series(p, "A" if k == "C" else k, rep),
                           kernels=("A", "B", "C"))
    rows = benchlib.aggregate(samples, pts)
    ls = {"A": {"seed": benchlib.parse_lockstat(FAKE_LOCK_STAT.splitlines())[0]},
          "B": {"seed": benchlib.parse_lockstat(FAKE_LOCK_STAT.splitlines())[0][2:]}}
    ts = benchlib.targets(rows, samples, ls)
    assert len(ts) == 9
    bad = [t for t in ts if t["reached"] is not True]
    assert not bad, bad
    assert "A: seed: &sbi->s_lock" in ts[-1]["detail"]
    assert "percpu counter locks contended in B: seed: key#3" in ts[-1]["detail"]


def test_targets_not_reached():
    pts = benchlib.make_points(FULL)
    samples = make_samples(pts, bad_series)
    rows = benchlib.aggregate(samples, pts)
    ls = {"A": {}, "B": {"inode": benchlib.parse_lockstat(FAKE_LOCK_STAT.splitlines())[0]}}
    ts = {t["target"]: t for t in benchlib.targets(rows, samples, ls)}
    for name, t in ts.items():
        if "2 threads makes at least" in name:
            continue        # O(groups) per call still scales with threads here
        if name.startswith("control:"):
            assert t["reached"] is None and "no control" in t["detail"]
            continue
        assert t["reached"] is False, (name, t)
    assert "&sbi->s_lock" in ts["lockstat: no filesystem-wide ext2 lock among B's "
                                "contended classes"]["detail"]


def test_targets_not_measured():
    pts = benchlib.make_points(QUICK, ["inode"])
    samples = make_samples(pts, good_series, reps=1)
    ts = benchlib.targets(benchlib.aggregate(samples, pts), samples, None)
    assert all(t["reached"] is None for t in ts)
    assert any("run with --lockstat" in t["detail"] for t in ts)
    assert any("fewer than 2 repetitions" in r["verdict"]
               for r in benchlib.aggregate(samples, pts))


# ---------------------------------------------------------------------------
# a whole run with fakes

class FakeBoot:
    def __init__(self, output, log, rc=0, problems=()):
        self.output = output
        self.log = log
        self.rc = rc
        self.problems = list(problems)
        self.error = None
        self.seconds = 1.5

    @property
    def ok(self):
        return self.rc == 0 and not self.problems and not self.error


@pytest.fixture
def fake_world(tmp_path, monkeypatch):
    """Fakes for git, build, disk images, e2fsck and the guest."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    commits = {"distro/6.12": "a" * 40, "series/6.12": "b" * 40}
    monkeypatch.setattr(cmd_bench, "rev_parse", lambda rev: commits[rev])
    builds = []

    def fake_build(rev, flavour="base", jobs=0, do_patchcheck=True, prog=None, force=False):
        builds.append((rev, flavour))
        img = tmp_path / ("%s-bzImage-%s" % (rev[:1], flavour))
        img.write_text("kernel %s %s" % (rev, flavour))
        return argparse.Namespace(image=str(img), commit=rev, log=str(tmp_path / "b.log"),
                                  image_sha256="5" * 64, tree="7" + rev[1:])

    monkeypatch.setattr(cmd_bench, "build", fake_build)

    def fake_templates(idir, log):
        return {t[0]: t[0] for _, t in benchlib.DISKS}

    def fake_disks(templates, idir, log):
        out = []
        for name, _ in benchlib.DISKS:
            path = os.path.join(idir, name + ".img")
            Path(path).write_text("disk")
            out.append(path)
        return out

    monkeypatch.setattr(cmd_bench, "make_templates", fake_templates)
    monkeypatch.setattr(cmd_bench, "fresh_disks", fake_disks)
    monkeypatch.setattr(guesttests, "fsck", lambda image, reports=(), log=None, need_statfs=True: None)
    monkeypatch.setattr(cmd_bench, "dbench_files", lambda: {})
    world = argparse.Namespace(builds=builds, boots=[], fail_boot=None, icount=[], kvm=[])

    def fake_run_guest(kernel, script, disks=(), timeout=600, smp=2, mem="2048", log=None,
                       prog=None, label="boot", extra_files=None, icount=False, kvm=False,
                       follow=None, every_slot=False):
        assert every_slot       # no other guest beside a bench guest: it takes every slot
        world.icount.append(icount)
        world.kvm.append(kvm)
        k = "A" if os.path.basename(kernel).startswith("a") else "B"
        world.boots.append((k, kernel, script, list(disks), timeout, smp, mem, extra_files))
        assert len(disks) == len(benchlib.DISKS)
        keys = re.findall(r'^echo "POINT id=\d+ iter=0 (.*)"$', script, re.M)
        pts = [p for p in benchlib.make_points(QUICK) if p.key in keys]
        allp = benchlib.make_points(QUICK)
        lockstat = "lockstat_reset" in script.split('echo "BENCH-BEGIN')[1]
        rep = sum(1 for b in world.boots if b[0] == k)
        runs = len(re.findall(r'^echo "POINT id=0 iter=\d+ ', script, re.M)) or 1
        out = fake_output(allp, lambda p: good_series(p, k, rep), lockstat=lockstat, runs=runs)
        assert len(pts) * runs == len([l for l in out if l.startswith("POINT")])
        if follow is not None:     # run_guest runs it while QEMU writes the console
            follow.start()
        Path(log).write_text("\n".join(out) + "\n")
        if follow is not None:
            follow.stop()
        if world.fail_boot == len(world.boots):
            return FakeBoot(out[:3], log, rc=1, problems=["BUG: kernel NULL pointer"])
        return FakeBoot(out, log)

    monkeypatch.setattr(cmd_bench, "run_guest", fake_run_guest)
    return world


def opts(tmp_path, **kw):
    o = argparse.Namespace(a="distro/6.12", b="series/6.12", reps=2, quick=True,
                           lockstat=False, only=None, out=str(tmp_path / "out"),
                           rebuild=False, timeout=0)
    for k, v in kw.items():
        setattr(o, k, v)
    return o


needs_gnuplot = pytest.mark.skipif(not shutil.which("gnuplot"), reason="gnuplot not installed")


@needs_gnuplot
def test_run_with_fakes_writes_everything(tmp_path, fake_world):
    printed = []
    doc = cmd_bench.run_bench(opts(tmp_path), out=printed.append)
    # A B, then B A (the order rotates), the same disks, script and QEMU
    # settings for both
    assert [b[0] for b in fake_world.boots] == ["A", "B", "B", "A"]
    assert len({b[2] for b in fake_world.boots}) == 1
    assert all(b[5] == 2 and b[6] == "2048" for b in fake_world.boots)
    assert sorted(fake_world.builds) == [("a" * 40, "base"), ("b" * 40, "base")]
    out = Path(tmp_path / "out")
    rdir = out / doc["run"]["id"]
    for ext in ("json", "md", "cmd", "png"):
        assert (rdir / ("bench." + ext)).stat().st_size > 0
        latest = out / ("latest." + ext)
        assert latest.exists() and latest.resolve() == (rdir / ("bench." + ext)).resolve()
    data = json.loads((out / "latest.json").read_text())
    pts = benchlib.make_points(QUICK)
    assert len(data["samples"]) == 4 * len(pts)
    for s in data["samples"]:
        for key in ("kernel", "commit", "workload", "point", "rep", "result", "load",
                    "loaded", "value", "boot_rc"):
            assert key in s
        assert s["boot_rc"] == 0 and s["kernel_problems"] == 0
        assert s["commit"] == ("a" if s["kernel"] == "A" else "b") * 40
        assert set(s["load"]) >= {"before", "after", "other_cpu", "boot_other_cpu"}
    assert len(data["boots"]) == 4 and all(b["ok"] for b in data["boots"])
    assert all(len(b["load_before"]) == 3 for b in data["boots"])
    assert len(data["stats"]) == len(pts)
    assert all(r["A"]["n"] == 2 and r["B"]["n"] == 2 for r in data["stats"])
    assert data["kernels"]["A"]["rev"] == "distro/6.12"
    assert data["run"]["load_rule"] == benchlib.LOAD_RULE
    md = (out / "latest.md").read_text()
    assert printed == [md]
    assert "TCG" in md and "## Targets" in md
    for wl in benchlib.WORKLOADS:
        assert "## %s" % wl in md
    assert md.count("| reached |") + md.count("| **not reached** |") + \
        md.count("| inconclusive / not measured |") == 9
    for p in pts:
        assert benchlib._params({"params": p.params}) in md
    cmd = (out / "latest.cmd").read_text()
    assert "flock /tmp/heavy.lock tools/fork bench %s %s --reps 2 --quick" % (
        "a" * 40, "b" * 40) in cmd
    # a second run asks build again (its stored-image index makes that a
    # lookup, tested in test_kit_build) and boots what build returns
    cmd_bench.run_bench(opts(tmp_path, reps=1), out=printed.append)
    assert len(fake_world.builds) == 4
    assert (out / "latest.json").resolve() != (rdir / "bench.json").resolve()


@needs_gnuplot
def test_run_with_lockstat(tmp_path, fake_world):
    doc = cmd_bench.run_bench(opts(tmp_path, reps=1, lockstat=True), out=lambda s: None)
    assert [b[0] for b in fake_world.boots] == ["A", "B", "A", "B"]
    assert [os.path.basename(b[1]).endswith("-lockstat") for b in fake_world.boots] == \
        [False, False, True, True]
    assert ("a" * 40, "lockstat") in fake_world.builds
    flav = [s["flavour"] for s in doc["samples"]]
    assert flav.count("lockstat") == 2 * len([p for p in benchlib.make_points(QUICK)
                                              if p.fs == "ext2"])
    assert all(r["A"]["n"] == 1 for r in doc["stats"])   # lockstat samples not mixed in
    assert set(doc["lockstat"]) == {"A", "B"}
    assert doc["lockstat"]["A"]["statfs"][0]["name"] == "&sbi->s_lock"
    t = [t for t in doc["targets"] if t["target"].startswith("lockstat")][0]
    assert t["reached"] is False and "&sbi->s_lock" in t["detail"]
    md = Path(tmp_path / "out" / "latest.md").read_text()
    assert "## Lock statistics" in md and "**fs-wide**" in md
    assert (Path(doc["run"]["dir"]) / "lockstat.txt").exists()
    # acquisitions per operation: the fake seed points of a lockstat boot
    # count 20 ops each, 9 ext2 points; s_lock was taken 9000 times
    table = {(wl, name): per for wl, name, per in benchlib.lock_table(doc)}
    seed_ops = 20 * len([p for p in benchlib.make_points(QUICK, ["seed"]) if p.fs == "ext2"])
    assert table[("seed", "&sbi->s_lock")]["A"] == (pytest.approx(9000 / seed_ops),
                                                   pytest.approx(500 / seed_ops))
    assert table[("seed", "&sbi->s_next_gen_lock")]["B"][1] == 0
    assert ("dbench", "&sbi->s_lock") not in table or not table[("dbench", "&sbi->s_lock")]
    assert "### ext2 lock acquisitions and contentions per operation (2 vCPUs)" in md
    assert re.search(r"^\| seed \| &sbi->s_lock \*\*fs-wide\*\* \| %s \|"
                     % re.escape("%.3g" % (9000 / seed_ops)), md, re.M)


@needs_gnuplot
def test_failed_boot_is_an_error(tmp_path, fake_world):
    fake_world.fail_boot = 3
    with pytest.raises(ForkError, match="(?s)boot 3 .*failed: kernel report.*BUG"):
        cmd_bench.run_bench(opts(tmp_path), out=lambda s: None)
    assert not (tmp_path / "out" / "latest.json").exists()
    partial = list((tmp_path / "out").glob("*/partial.json"))
    assert len(partial) == 1
    data = json.loads(partial[0].read_text())
    assert data["run"]["failed"] and len(data["boots"]) == 3 and not data["boots"][-1]["ok"]
    assert {s["boot"] for s in data["samples"]} == {0, 1}


def test_bad_arguments(tmp_path, fake_world):
    with pytest.raises(ForkError, match="--reps"):
        cmd_bench.run_bench(opts(tmp_path, reps=0), out=lambda s: None)
    with pytest.raises(ForkError, match="--only"):
        cmd_bench.run_bench(opts(tmp_path, only="bogus"), out=lambda s: None)


def test_missing_gnuplot(tmp_path, fake_world, monkeypatch, capsys):
    # gnuplot draws the plot and nothing else: without it the run goes on
    # and says so, with no PNG
    real_which = shutil.which
    monkeypatch.setattr(cmd_bench.shutil, "which",
                        lambda name, *a, **k: None if name == "gnuplot" else real_which(name))
    doc = cmd_bench.run_bench(opts(tmp_path), out=lambda s: None)
    assert "apt-get install gnuplot-nox" in capsys.readouterr().err
    rdir = Path(doc["run"]["dir"])
    assert (rdir / "bench.json").exists() and not (rdir / "bench.png").exists()


def test_boots_get_the_dbench_files_and_the_load_watcher(tmp_path, fake_world, monkeypatch):
    """Every boot's initramfs holds dbench (run_guest's extra_files), and
    the host's load is followed through each boot's console."""
    monkeypatch.setattr(cmd_bench, "dbench_files", lambda: {"/usr/bin/dbench": "/x/dbench"})
    doc = cmd_bench.run_bench(opts(tmp_path), out=lambda s: None)
    assert [b[7] for b in fake_world.boots] == [{"/usr/bin/dbench": "/x/dbench"}] * 4
    assert doc["samples"] and all(s["load"]["before"] and s["load"]["after"]
                                  for s in doc["samples"])


@pytest.mark.skipif(not shutil.which("dbench") or not shutil.which("ldd"),
                    reason="dbench not installed")
def test_dbench_files():
    files = cmd_bench.dbench_files()
    assert files["/lib64/ld-linux-x86-64.so.2"]
    assert files[benchlib.DBENCH_LOADFILE] == benchlib.DBENCH_LOADFILE
    assert any(g.endswith("/libc.so.6") for g in files)
    assert all(os.path.isfile(h) and not os.path.islink(h) for h in files.values())


# ---------------------------------------------------------------------------
# gnuplot

def plot_doc():
    pts = benchlib.make_points(QUICK)
    samples = make_samples(pts, good_series)
    return {"run": {"id": "test"}, "kernels": {"A": {"rev": "distro/6.12"},
                                               "B": {"rev": "series/6.12"}},
            "stats": benchlib.aggregate(samples, pts)}


def test_gnuplot_script_generation():
    script, files = benchlib.gnuplot_files(plot_doc(), "out.png")
    assert set(files) == {"seed.dat", "statfs.dat"}
    assert 'set output "out.png"' in script
    assert "set logscale x" in script and "multiplot layout 1,2" in script
    assert "seed.dat" in script and "statfs.dat" in script
    seed_rows = [l for l in files["seed.dat"].splitlines() if not l.startswith("#")]
    assert len(seed_rows) == 9 and all(len(shlex.split(l)) == 13 for l in seed_rows)
    statfs_rows = [l.split() for l in files["statfs.dat"].splitlines()
                   if not l.startswith("#")]
    assert [r[0] for r in statfs_rows] == ["128", "1024", "8192"]
    assert "tmpfs (B)" in script
    # only one panel without seed points, none without seed and statfs
    doc = plot_doc()
    doc["stats"] = [r for r in doc["stats"] if r["workload"] != "seed"]
    script, files = benchlib.gnuplot_files(doc, "x.png")
    assert set(files) == {"statfs.dat"} and "layout 1,1" in script
    doc["stats"] = [r for r in doc["stats"] if r["workload"] != "statfs"]
    assert benchlib.gnuplot_files(doc, "x.png")[0] is None


@needs_gnuplot
def test_gnuplot_writes_png(tmp_path):
    script, files = benchlib.gnuplot_files(plot_doc(), "out.png")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "plot.gp").write_text(script)
    proc = subprocess.run(["gnuplot", "plot.gp"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.png").stat().st_size > 1000


def test_markdown_structure():
    doc = plot_doc()
    pts = benchlib.make_points(QUICK)
    doc["samples"] = make_samples(pts, good_series)
    doc["samples"][0]["loaded"] = True
    doc["stats"] = benchlib.aggregate(doc["samples"], pts)
    doc["targets"] = benchlib.targets(doc["stats"], doc["samples"])
    doc["run"].update(reps=3, command="flock /tmp/heavy.lock tools/fork bench x y")
    doc["lockstat"] = {}
    md = benchlib.markdown(doc)
    assert md.startswith("# fork bench test: distro/6.12 (A) vs series/6.12 (B)")
    assert "Loaded samples: 1 of %d" % len(doc["samples"]) in md
    assert " L1 " in md
    tables = re.findall(r"^\| fs \| point \| A \| B \| B/A \[95%\] ±detectable \| verdict \|$",
                        md, re.M)
    assert len(tables) == 4
    assert "ext4 (ref)" in md and "tmpfs (ref)" in md
    assert "no significant change" in md or "B better" in md


# ---------------------------------------------------------------------------
# integration: the real kernels in QEMU

@pytest.mark.skipif(os.environ.get("FORK_INTEGRATION") != "1",
                    reason="set FORK_INTEGRATION=1 (slow: builds what is missing, boots QEMU)")
def test_integration_quick_run(tmp_path, kernel_trees):
    out = tmp_path / "bench"
    proc = subprocess.run(["/usr/bin/python3", str(REPO / "tools" / "fork"), "bench",
                           "--quick", "--reps", "1", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "latest.json").read_text())
    pts = data["points"]
    assert len(data["boots"]) == 2 and [b["kernel"] for b in data["boots"]] == ["A", "B"]
    for b in data["boots"]:
        assert b["ok"] and b["rc"] == 0 and not b["problems"] and not b["error"]
        assert os.path.exists(b["log"])
    assert len(data["samples"]) == 2 * len(pts)
    seen = {(s["kernel"], s["point"]) for s in data["samples"]}
    assert seen == {(k, p["key"]) for k in "AB" for p in pts}
    for s in data["samples"]:
        assert s["boot_rc"] == 0 and s["kernel_problems"] == 0
        assert s["value"] > 0 and s["result"]["prog"] == \
            {"seed": "seedload", "statfs": "statfsbench", "inode": "createbench",
             "dbench": "dbench"}[s["workload"]]
        assert data["boots"][s["boot"]]["ok"]
    assert len(data["stats"]) == len(pts)
    assert (out / "latest.png").stat().st_size > 0
    assert "## Targets" in (out / "latest.md").read_text()


def test_guest_script_and_parse_with_runs():
    pts = benchlib.make_points(QUICK, ["inode"])
    script = benchlib.guest_script(pts, runs=3)
    ann = re.findall(r'^echo "POINT id=(\d+) iter=(\d+) ', script, re.M)
    assert ann == [(str(i), str(j)) for i in range(len(pts)) for j in range(3)]
    res, _ = benchlib.parse_output(fake_output(pts, lambda p: 5.0, runs=3), pts, runs=3)
    assert all(len(v) == 3 for v in res.values())
    with pytest.raises(benchlib.ParseError, match="without a result"):
        benchlib.parse_output(fake_output(pts, lambda p: 5.0, runs=2), pts, runs=3)
    swapped = [l.replace("iter=0", "iter=X").replace("iter=1", "iter=0").replace("iter=X", "iter=1")
               for l in fake_output(pts, lambda p: 5.0, runs=2)]
    with pytest.raises(benchlib.ParseError, match="out of order"):
        benchlib.parse_output(swapped, pts, runs=2)
    # lockstat boots run every point once whatever --runs says
    ls = benchlib.guest_script(pts, lockstat=True, runs=3)
    assert len(re.findall(r'^echo "POINT id=\d+ iter=0 ', ls, re.M)) == \
        len([p for p in pts if p.fs == "ext2"]) and "iter=1" not in ls


@needs_gnuplot
def test_run_with_control_runs_warmup_icount(tmp_path, fake_world):
    doc = cmd_bench.run_bench(opts(tmp_path, reps=3, control=True, runs=3, warmup=1,
                                   mode="icount", smp=4), out=lambda s: None)
    # every repetition boots A, B and C (A's image again), rotating
    order = [b[0] for b in fake_world.boots]
    assert order == ["A", "B", "A", "B", "A", "A", "A", "A", "B"]   # C boots A's image
    assert [(s[0], s[1]) for s in cmd_bench.schedule(3, False, True)] == [
        (1, "A"), (1, "B"), (1, "C"), (2, "B"), (2, "C"), (2, "A"), (3, "C"), (3, "A"), (3, "B")]
    assert doc["kernels"]["C"]["image"] == doc["kernels"]["A"]["image"]
    assert all(fake_world.icount) and all(b[5] == 4 for b in fake_world.boots)
    pts = benchlib.make_points(QUICK)
    assert len(doc["samples"]) == 9 * 3 * len(pts)
    assert sum(1 for s in doc["samples"] if s["warmup"]) == 9 * len(pts)
    row = doc["stats"][0]
    assert row["A"]["n"] == 3 * 2 and row["pairs"] == 3 and "control" in row
    cmd = (Path(doc["run"]["dir"]) / "bench.cmd").read_text()
    for flag in ("--control", "--runs 3", "--warmup 1", "--mode icount", "--smp 4"):
        assert flag in cmd
    md = (Path(doc["run"]["dir"]) / "bench.md").read_text()
    assert "A/A control C/A" in md and "mode icount, 4 vCPUs" in md
    assert "Student's t" in md


def test_the_files_of_a_run_name_no_path_of_this_machine(tmp_path, fake_world):
    """bench.json (and bench.cmd) may be committed as records (records/bench/):
    the work directory's files relative to it, and no `cd` to this checkout."""
    doc = cmd_bench.run_bench(opts(tmp_path, out=None), out=lambda s: None)
    work = tmp_path / "work"
    rdir = Path(doc["run"]["dir"])
    assert rdir.parent == work / "bench"                # the run itself: absolute paths
    text = (rdir / "bench.json").read_text()
    assert str(work) not in text
    data = json.loads(text)
    assert data["run"]["dir"] == "bench/" + doc["run"]["id"]
    assert [b["log"] for b in data["boots"]] == \
        [os.path.relpath(b["log"], str(work)) for b in doc["boots"]]
    assert all((work / b["log"]).is_file() for b in data["boots"])
    cmd = (rdir / "bench.cmd").read_text().splitlines()
    assert cmd[-1] == doc["run"]["command"] and not any(l.startswith("cd ") for l in cmd)
    assert cmd[-2] == "# run from the top directory of the repository:"


@pytest.mark.parametrize("kw, msg", [
    ({"runs": 2, "warmup": 2}, "--warmup less than --runs"),
    ({"runs": 0}, "--runs must be at least 1"),
    ({"control": True, "reps": 1}, "--control needs --reps 2"),
    ({"smp": 0}, "--smp must be between"),
])
def test_bad_method_options(tmp_path, fake_world, kw, msg):
    with pytest.raises(ForkError, match=msg):
        cmd_bench.run_bench(opts(tmp_path, **kw), out=lambda s: None)


def test_rep_log_is_the_median_of_runs():
    """With three runs per boot, one outlying run (a point that a guest's
    periodic work hit) does not move the repetition's value; two runs give
    their geometric mean."""
    import math
    assert benchlib.rep_log([100, 100, 135]) == pytest.approx(math.log(100))
    assert benchlib.rep_log([100, 400]) == pytest.approx(math.log(200))
    r = benchlib.paired_ratio({1: [100, 100, 160], 2: [100, 101, 99]},
                              {1: [50, 50, 50], 2: [50, 51, 49]})
    assert r["ratio"] == pytest.approx(0.5) and r["hi"] < 0.51


def test_icount_sizes_scale_the_counted_workloads():
    full, ic = benchlib.sizes_for(False, "wall"), benchlib.sizes_for(False, "icount")
    assert full == benchlib.SIZES["full"]
    assert ic["seed_iters"] == {n: m * benchlib.ICOUNT_SCALE
                                for n, m in full["seed_iters"].items()}
    assert ic["create_iters"] == full["create_iters"] * benchlib.ICOUNT_SCALE
    assert ic["statfs_seconds"] == full["statfs_seconds"]
    assert benchlib.SIZES["full"]["seed_iters"][9] == 4000     # not changed in place


def test_each_measures_every_commit_against_its_parent(tmp_path, fake_world, monkeypatch):
    """--each: K0 (A) and one kernel per commit of A..B, every repetition
    boots all of them; a step is a commit against its parent.  Here the
    first commit changes the figures (as B does in good_series) and the
    second changes nothing: the steps must say so, not the whole range."""
    c1, c2 = "c" * 40, "d" * 40
    monkeypatch.setattr(cmd_bench, "each_revs", lambda a, b: ["distro/6.12", c1, c2])
    monkeypatch.setattr(cmd_bench, "rev_parse", lambda rev: {"distro/6.12": "a" * 40}.get(rev, rev))
    monkeypatch.setattr(cmd_bench, "subject_of", lambda c: "ext2: commit %s" % c[:1])
    monkeypatch.setattr(cmd_bench, "patch_id_of_commit", lambda c: "p" + c[1:])
    boots = []

    def run_guest(kernel, script, disks=(), timeout=600, smp=2, mem="2048", log=None,
                  prog=None, label="boot", extra_files=None, icount=False, kvm=False,
                  follow=None, every_slot=False):
        assert every_slot
        k = "A" if os.path.basename(kernel).startswith("a") else "B"
        boots.append(os.path.basename(kernel)[:1] + ("*" if "lockstat" in kernel else ""))
        lockstat = "lockstat_reset" in script.split('echo "BENCH-BEGIN')[1]
        out = fake_output(benchlib.make_points(QUICK, benchlib.parse_only("seed,statfs")),
                          lambda p: good_series(p, k, 0), lockstat=lockstat)
        if follow is not None:
            follow.start()
        Path(log).write_text("\n".join(out) + "\n")
        if follow is not None:
            follow.stop()
        return FakeBoot(out, log)

    monkeypatch.setattr(cmd_bench, "run_guest", run_guest)
    doc = cmd_bench.run_bench(opts(tmp_path, reps=3, control=True, each=True, lockstat=True,
                                   only="seed,statfs"), out=lambda s: None)
    # every repetition boots K0 K1 K2 and the control (K0's image), rotating
    assert boots[:4] == ["a", "c", "d", "a"] and boots[4:8] == ["c", "d", "a", "a"]
    assert boots[12:] == ["a*", "c*", "d*"]
    assert [(s["a"], s["b"], s["whole"]) for s in doc["steps"]] == [
        ("K0", "K1", False), ("K1", "K2", False), ("K0", "K2", True)]
    seed = lambda st: next(r for r in st["stats"] if r["workload"] == "seed"
                           and r["fs"] == "ext2" and r["params"]["tasks"] == 1)
    first, second, whole = doc["steps"]
    assert seed(first)["ratio"] == pytest.approx(1.3)
    assert seed(second)["ratio"] == pytest.approx(1.0)
    assert seed(whole)["ratio"] == pytest.approx(1.3)
    assert seed(first)["control"]["ratio"] == pytest.approx(1.0)
    assert "control" not in seed(second)
    assert first["subject"] == "ext2: commit c" and first["locks"]
    # what a cover letter naming the run is checked against: each kernel's
    # tree and the patch id of the change it makes
    assert doc["kernels"]["K1"]["patch_id"] == "p" + c1[1:]
    assert doc["kernels"]["K2"]["tree"] == "7" + c2[1:]
    md = (Path(doc["run"]["dir"]) / "bench.md").read_text()
    assert "each commit of distro/6.12..%s against its parent" % c2 in md
    assert "| K1 ext2: commit c | 1.3 [1.3..1.3] ±0.0%" in md
    assert "| K2 ext2: commit d | 1 [1..1] ±0.0%" in md
    assert "A/A control (C = K0's image, against K0)" in md
    assert "## ext2 lock acquisitions per operation" in md
    cmd = (Path(doc["run"]["dir"]) / "bench.cmd").read_text()
    assert "--each" in cmd and c2 in cmd


def test_each_range_must_be_a_line(tmp_path, monkeypatch):
    repo = tmp_path / "linux"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    git = lambda *a: subprocess.run(["git", "-C", str(repo)] + list(a), check=True, env=env,
                                    capture_output=True, text=True).stdout.strip()
    for n in range(3):
        git("commit", "-q", "--allow-empty", "-m", "c%d" % n)
        git("tag", "t%d" % n)
    monkeypatch.setenv("FORK_KTREE", str(repo))
    monkeypatch.setattr(cmd_bench, "rev_parse", lambda rev: git("rev-parse", rev))
    assert cmd_bench.each_revs("t0", "t2") == ["t0", git("rev-parse", "t1"), git("rev-parse", "t2")]
    with pytest.raises(ForkError, match="has no commits: give A before B"):
        cmd_bench.each_revs("t2", "t0")
    git("checkout", "-q", "-b", "side", "t0")
    git("commit", "-q", "--allow-empty", "-m", "side")
    git("checkout", "-q", "-")
    git("merge", "-q", "--no-ff", "-m", "merge", "side")
    with pytest.raises(ForkError, match="is not a line of single-parent commits"):
        cmd_bench.each_revs("t0", "HEAD")
    monkeypatch.setattr(cmd_bench, "MAX_EACH", 1)
    with pytest.raises(ForkError, match="more than 1: give a shorter range"):
        cmd_bench.each_revs("t0", "t2")


def test_kvm_boots_every_kernel_under_kvm_and_says_so(tmp_path, fake_world, monkeypatch):
    real_access = os.access
    monkeypatch.setattr(cmd_bench.os, "access",
                        lambda p, m: True if p == "/dev/kvm" else real_access(p, m))
    doc = cmd_bench.run_bench(opts(tmp_path, kvm=True, smp=8), out=lambda s: None)
    assert fake_world.kvm == [True] * 4 and not any(fake_world.icount)
    assert doc["run"]["accel"] == "kvm" and doc["run"]["guest"].startswith("QEMU KVM (-accel kvm")
    md = (Path(doc["run"]["dir"]) / "bench.md").read_text()
    assert "QEMU KVM" in md and "QEMU TCG (emulated CPU) times" not in md
    assert "--kvm --smp 8" in (Path(doc["run"]["dir"]) / "bench.cmd").read_text()


def test_kvm_is_refused_with_icount_or_without_dev_kvm(tmp_path, fake_world, monkeypatch):
    with pytest.raises(ForkError, match="does not go with --mode icount"):
        cmd_bench.run_bench(opts(tmp_path, kvm=True, mode="icount"), out=lambda s: None)
    monkeypatch.setattr(cmd_bench.os, "access", lambda p, m: False)
    with pytest.raises(ForkError, match="/dev/kvm is missing or not accessible"):
        cmd_bench.run_bench(opts(tmp_path, kvm=True), out=lambda s: None)
    assert fake_world.boots == []
