"""Host-side tests for the guest programs in ci/guest.

The programs are built with their Makefile into a temporary directory
and run at tiny sizes.  Cases that need an ext2 filesystem loop-mount a
small image and are skipped when mounting is not possible.
"""

import contextlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GUEST = REPO / "ci" / "guest"
PROGS = ["seedload", "stress", "fillspace", "statfsbench", "createbench",
         "fsreport", "ext2poke", "failmount", "rsvgrow", "dioreuse"]
RESULT_RE = re.compile(r"^RESULT( [a-z][a-z0-9_]*=\S+)+$")


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    if not shutil.which("gcc") or not shutil.which("make"):
        pytest.skip("gcc or make not available")
    out = tmp_path_factory.mktemp("guest-bin")
    proc = subprocess.run(["make", "-C", str(GUEST), f"O={out}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for prog in PROGS:
        assert os.access(out / prog, os.X_OK), prog
    return out


def run(bindir, prog, *args, timeout=60):
    return subprocess.run([str(bindir / prog), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def parse_result(proc, prog):
    """Check a successful run and return its RESULT line as a dict."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines, "no output"
    results = [ln for ln in lines if ln.startswith("RESULT ")]
    assert len(results) == 1, proc.stdout
    assert lines[-1] == results[0], "RESULT is not the last line"
    assert RESULT_RE.match(lines[-1]), lines[-1]
    kv = dict(item.split("=", 1) for item in lines[-1].split()[1:])
    assert kv["prog"] == prog
    return kv


def assert_fail(proc, *texts):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "RESULT" not in proc.stdout
    assert any(ln.startswith("FAIL: ") for ln in proc.stderr.splitlines()), \
        proc.stderr
    for text in texts:
        assert text in proc.stderr, proc.stderr


# --- ext2 images ----------------------------------------------------------

def _mount_problem():
    if os.geteuid() != 0:
        return "loop mounting needs root"
    for tool in ("mke2fs", "e2fsck", "dumpe2fs", "mount", "umount"):
        if not shutil.which(tool):
            return f"{tool} not available"
    if not os.path.exists("/dev/loop-control") and \
            not os.path.exists("/dev/loop0"):
        return "no loop devices"
    return None


@contextlib.contextmanager
def ext2_mount(tmp_path, kib=4096, readonly=False, name="ext2"):
    """Create a small ext2 image and loop-mount it, or skip the test."""
    problem = _mount_problem()
    if problem:
        pytest.skip(problem)
    img = tmp_path / f"{name}.img"
    mnt = tmp_path / f"{name}.mnt"
    mnt.mkdir()
    subprocess.run(["mke2fs", "-q", "-t", "ext2", "-F", str(img), str(kib)],
                   check=True, capture_output=True, timeout=60)
    opts = "loop,ro" if readonly else "loop"
    proc = subprocess.run(["mount", "-t", "ext2", "-o", opts, str(img),
                           str(mnt)], capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"mount -o loop failed: {proc.stderr.strip()}")
    try:
        yield img, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)


def e2fsck_clean(img):
    proc = subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def dumpe2fs_counts(img):
    proc = subprocess.run(["dumpe2fs", "-h", str(img)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    fields = dict(re.findall(r"^([A-Za-z ]+):\s+(\S+)", proc.stdout, re.M))
    return int(fields["Free blocks"]), int(fields["Free inodes"])


# --- build ----------------------------------------------------------------

def test_make_clean(bindir, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(bindir, out)
    proc = subprocess.run(["make", "-C", str(GUEST), f"O={out}", "clean"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for prog in PROGS:
        assert not (out / prog).exists(), prog


@pytest.mark.parametrize("prog", PROGS)
def test_usage(bindir, prog):
    proc = run(bindir, prog, "-h")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: " + prog)

    proc = run(bindir, prog)   # no path argument
    assert proc.returncode == 2, proc.stderr
    assert "usage: " + prog in proc.stderr
    assert "RESULT" not in proc.stdout

    proc = run(bindir, prog, "-Z", "/tmp")
    assert proc.returncode == 2, proc.stderr


@pytest.mark.parametrize("prog,opt", [
    ("seedload", "-n"), ("seedload", "-m"), ("seedload", "-b"),
    ("stress", "-p"), ("stress", "-o"), ("stress", "-t"),
    ("fillspace", "-p"), ("statfsbench", "-T"), ("statfsbench", "-t"),
    ("createbench", "-n"), ("createbench", "-m"), ("failmount", "-m"),
    ("rsvgrow", "-b"), ("rsvgrow", "-k"), ("rsvgrow", "-w"),
    ("dioreuse", "-n"), ("dioreuse", "-b"), ("dioreuse", "-a"),
])
def test_bad_number(bindir, tmp_path, prog, opt):
    for bad in ("abc", "-1", "12x"):
        proc = run(bindir, prog, opt, bad, tmp_path)
        assert proc.returncode == 2, (bad, proc.stderr)


# --- seedload -------------------------------------------------------------

def test_seedload_separate_dirs(bindir, tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    kv = parse_result(run(bindir, "seedload", "-n", "2", "-m", "20", *dirs),
                      "seedload")
    assert kv["tasks"] == "2"
    assert kv["blocks"] == "2"
    assert kv["iters"] == "20"
    assert int(kv["ops"]) == 2 * 20
    assert int(kv["elapsed_ns"]) > 0
    assert float(kv["ops_per_s"]) > 0
    for d in dirs:
        assert list(d.iterdir()) == []


def test_seedload_shared_dir(bindir, tmp_path):
    kv = parse_result(run(bindir, "seedload", "-n", "3", "-m", "10",
                          "-b", "1024", tmp_path, tmp_path, tmp_path),
                      "seedload")
    assert kv["tasks"] == "3"
    assert kv["blocksize"] == "1024"
    assert int(kv["ops"]) == 3 * 10
    assert list(tmp_path.iterdir()) == []


def test_seedload_defaults(bindir, tmp_path):
    kv = parse_result(run(bindir, "seedload", "-m", "5", tmp_path),
                      "seedload")
    assert kv["blocks"] == "9" and kv["blocksize"] == "4096"


def test_seedload_missing_dir(bindir, tmp_path):
    missing = tmp_path / "nope"
    proc = run(bindir, "seedload", "-m", "1", tmp_path, missing)
    assert_fail(proc, f"{missing}/seed.1", "No such file or directory")
    # The other task still cleaned up after itself.
    assert list(tmp_path.iterdir()) == []


def test_seedload_not_a_dir(bindir, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    assert_fail(run(bindir, "seedload", "-m", "1", f), "Not a directory")


# --- rsvgrow --------------------------------------------------------------

def test_rsvgrow_on_ext2(bindir, tmp_path):
    """Two tasks append O_DIRECT writes in one directory of a real ext2
    (one block group): every write lands, each file is truncated every
    -k writes and ends below that many pages, and the image is clean."""
    # -w 0: the host may serve ext2 with the ext4 driver, which has no
    # EXT2_IOC_SETRSVSZ (the guest kernels have the ext2 driver)
    with ext2_mount(tmp_path, kib=16384) as (img, mnt):
        kv = parse_result(run(bindir, "rsvgrow", "-t", "1", "-b", "3", "-k", "8", "-w", "0",
                              mnt, mnt), "rsvgrow")
        assert kv["tasks"] == "2"
        writes, pages = int(kv["writes"]), int(kv["pages"])
        assert writes > 0 and writes <= pages <= 3 * writes
        assert (writes - 2 * 7) // 8 <= int(kv["truncates"]) <= writes // 8
        sizes = [(mnt / ("rsvgrow-%d" % i)).stat().st_size for i in (0, 1)]
        assert all(0 < sz <= 7 * 3 * 4096 or sz == 0 for sz in sizes), sizes
    e2fsck_clean(img)


# --- createbench ----------------------------------------------------------

def test_createbench(bindir, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    kv = parse_result(run(bindir, "createbench", "-n", "10", "-m", "3",
                          a, a, b), "createbench")
    assert kv["tasks"] == "3"
    assert kv["files"] == "10" and kv["iters"] == "3"
    assert int(kv["ops"]) == 3 * 3 * 10 * 2
    assert float(kv["ops_per_s"]) > 0
    assert list(a.iterdir()) == [] and list(b.iterdir()) == []


def test_createbench_existing_file(bindir, tmp_path):
    (tmp_path / "c0_3").write_text("in the way")
    assert_fail(run(bindir, "createbench", "-n", "5", "-m", "1", tmp_path),
                f"{tmp_path}/c0_3", "File exists")


def test_createbench_readonly(bindir, tmp_path):
    with ext2_mount(tmp_path, readonly=True) as (_, mnt):
        assert_fail(run(bindir, "createbench", "-n", "2", "-m", "1", mnt),
                    "Read-only file system")


# --- statfsbench / fsreport -----------------------------------------------

def test_statfsbench(bindir, tmp_path):
    kv = parse_result(run(bindir, "statfsbench", "-T", "2", "-t", "0.2",
                          tmp_path), "statfsbench")
    assert kv["threads"] == "2"
    assert float(kv["seconds"]) == pytest.approx(0.2)
    calls, elapsed = int(kv["calls"]), int(kv["elapsed_ns"])
    assert calls > 0
    assert elapsed >= 0.2e9
    assert float(kv["ns_per_call"]) == pytest.approx(elapsed * 2 / calls,
                                                     rel=1e-3)
    assert float(kv["calls_per_s"]) == pytest.approx(calls * 1e9 / elapsed,
                                                     rel=1e-3)


def test_statfsbench_missing_path(bindir, tmp_path):
    assert_fail(run(bindir, "statfsbench", "-t", "0.1", tmp_path / "nope"),
                "statfs", "No such file or directory")


def test_fsreport(bindir, tmp_path):
    kv = parse_result(run(bindir, "fsreport", tmp_path), "fsreport")
    st = os.statvfs(tmp_path)
    assert int(kv["bsize"]) > 0
    assert int(kv["blocks"]) == st.f_blocks
    assert int(kv["files"]) == st.f_files
    assert int(kv["bfree"]) <= int(kv["blocks"])
    assert int(kv["bavail"]) <= int(kv["bfree"])
    assert int(kv["ffree"]) <= int(kv["files"])


def test_fsreport_matches_dumpe2fs(bindir, tmp_path):
    with ext2_mount(tmp_path) as (img, mnt):
        (mnt / "data").write_bytes(b"x" * 100000)
        kv = parse_result(run(bindir, "fsreport", mnt), "fsreport")
    assert kv["bsize"] == "1024"
    assert (int(kv["bfree"]), int(kv["ffree"])) == dumpe2fs_counts(img)


def test_fsreport_missing_path(bindir, tmp_path):
    assert_fail(run(bindir, "fsreport", tmp_path / "nope"),
                "No such file or directory")


# --- stress ---------------------------------------------------------------

def test_stress_ops_limit(bindir, tmp_path):
    kv = parse_result(run(bindir, "stress", "-p", "2", "-t", "20",
                          "-o", "300", "-s", "7", tmp_path), "stress")
    assert kv["tasks"] == "2"
    assert int(kv["ops"]) == 2 * 300
    assert kv["seed"] == "7"
    assert int(kv["enospc"]) == 0
    assert int(kv["elapsed_ns"]) > 0
    assert list(tmp_path.iterdir()) == []


def test_stress_time_limit(bindir, tmp_path):
    kv = parse_result(run(bindir, "stress", "-p", "1", "-t", "0.3",
                          tmp_path), "stress")
    assert int(kv["ops"]) > 0
    assert 0.3e9 <= int(kv["elapsed_ns"]) < 10e9
    assert list(tmp_path.iterdir()) == []


def test_stress_needs_a_limit(bindir, tmp_path):
    assert run(bindir, "stress", "-t", "0", tmp_path).returncode == 2


def test_stress_missing_dir(bindir, tmp_path):
    assert_fail(run(bindir, "stress", "-o", "10", tmp_path / "nope"),
                f"{tmp_path}/nope/shared", "No such file or directory")


def test_stress_enospc_on_ext2(bindir, tmp_path):
    with ext2_mount(tmp_path, kib=1024) as (img, mnt):
        kv = parse_result(run(bindir, "stress", "-p", "2", "-o", "1500",
                              "-s", "1", mnt), "stress")
        assert int(kv["ops"]) == 3000
        assert int(kv["enospc"]) > 0
        assert sorted(p.name for p in mnt.iterdir()) == ["lost+found"]
    e2fsck_clean(img)


def test_stress_all_shared_on_ext2(bindir, tmp_path):
    # -S: every task's files in DIR/shared (one block group), with the
    # O_DIRECT writes; the data checks run inside stress, e2fsck after.
    with ext2_mount(tmp_path, kib=8192) as (img, mnt):
        kv = parse_result(run(bindir, "stress", "-p", "3", "-o", "800",
                              "-s", "5", "-S", mnt), "stress")
        assert int(kv["ops"]) == 2400 and int(kv["dio"]) > 0
        assert sorted(p.name for p in mnt.iterdir()) == ["lost+found"]
    e2fsck_clean(img)


# --- fillspace ------------------------------------------------------------

def test_fillspace_ext2(bindir, tmp_path):
    with ext2_mount(tmp_path) as (img, mnt):
        kv = parse_result(run(bindir, "fillspace", "-p", "2", mnt),
                          "fillspace")
        assert sorted(p.name for p in mnt.iterdir()) == ["lost+found"]
    assert kv["tasks"] == "2"
    assert int(kv["files"]) >= 2
    before = int(kv["bfree_before"])
    # Nearly all free blocks were used (root may use reserved blocks).
    assert int(kv["bytes"]) >= (before - 200) * 1024 * 0.9
    assert int(kv["bfree_full"]) < before // 20
    assert int(kv["bavail_full"]) <= 16
    assert kv["bfree_after"] == kv["bfree_before"]
    assert kv["ffree_after"] == kv["ffree_before"]
    assert (before, int(kv["ffree_after"])) == dumpe2fs_counts(img)
    e2fsck_clean(img)


def test_fillspace_readonly(bindir, tmp_path):
    with ext2_mount(tmp_path, readonly=True) as (_, mnt):
        assert_fail(run(bindir, "fillspace", "-p", "1", mnt),
                    f"{mnt}/fill0", "Read-only file system")


# --- ext2poke ----------------------------------------------------------------

def test_ext2poke_image(bindir, tmp_path):
    if not shutil.which("mke2fs") or not shutil.which("e2fsck"):
        pytest.skip("e2fsprogs not available")
    img = tmp_path / "poke.img"
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", "-b", "1024", str(img), "65537"],
                   check=True, capture_output=True)
    before = parse_result(run(bindir, "ext2poke", img, "sums"), "ext2poke")
    assert before["groups"] == "8" and before["bfree"] == before["sb_bfree"]
    proc = run(bindir, "ext2poke", img, "leak", 0, 100)
    assert proc.returncode == 0, proc.stderr
    first = int(proc.stdout)
    leaked = parse_result(run(bindir, "ext2poke", img, "sums"), "ext2poke")
    assert int(leaked["bfree"]) == int(before["bfree"]) - 100
    assert int(leaked["sb_bfree"]) == int(before["sb_bfree"]) - 100
    assert subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True).returncode != 0
    assert run(bindir, "ext2poke", img, "unleak", 0, first, 100).returncode == 0
    assert parse_result(run(bindir, "ext2poke", img, "sums"), "ext2poke") == before
    assert subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True).returncode == 0
    assert run(bindir, "ext2poke", img, "first-data-block").stdout == "1\n"
    assert run(bindir, "ext2poke", img, "iblock", 2).stdout.strip().isdigit()
    assert run(bindir, "ext2poke", img, "unleak", 0, first, 1).returncode == 1
    assert run(bindir, "ext2poke", img, "bogus").returncode == 2


# --- failmount --------------------------------------------------------------

def test_failmount_without_fault_injection(bindir, tmp_path):
    """Without /proc/thread-self/fail-nth (a kernel without
    CONFIG_FAULT_INJECTION, as on most hosts) it fails with one line
    naming the file, and mounts nothing."""
    if os.path.exists("/proc/thread-self/fail-nth"):
        pytest.skip("this host kernel has fault injection")
    proc = run(bindir, "failmount", "/dev/null", tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("FAIL: ") and "/proc/thread-self/fail-nth" in proc.stderr
    assert "RESULT" not in proc.stdout


# --- dioreuse -------------------------------------------------------------
#
# An iteration counts as setting the race up only when the kicker cgroup's
# io.stat wios (W_CMD before the fsync is asked, then at the truncate, after
# it, after B's write, after the fsync) shows the write held across the
# truncate: the truncate waited for it, or it landed on B's block after
# B's write.  -R replays -v's lines through the same accounting.

def iteration(i, w, asleep=1, reused=1, truncate_us=40, wrong=0, wrong_ind=0):
    return ("dioreuse: iteration %d: asleep=%d reused=%d wios=%s truncate_us=%d "
            "wrong=%d wrong_ind=%d: (the verdict)" % (i, asleep, reused, w, truncate_us,
                                                      wrong, wrong_ind))


def replay(bindir, tmp_path, lines, *opts):
    f = tmp_path / "log"
    f.write_text("".join(l + "\n" for l in lines))
    return run(bindir, "dioreuse", *opts, "-R", f)


# a stock kernel whose writes blk-throttle does not hold (io.max on another
# disk, or a kernel that lets these bios through): the kicker sleeps in its
# fsync while the write of IND is at the disk, but that write has left
# blk-throttle before the truncate, and B reads back right
UNHELD = "0,1,1,1,3"
# the same, the write still in the disk's hands when the truncate began
# and done before B's: a short real in-flight write, not one held across
SHORT = "0,0,1,1,3"


@pytest.mark.parametrize("w", [UNHELD, SHORT])
def test_dioreuse_does_not_count_a_write_not_held_across_the_truncate(bindir, tmp_path, w):
    proc = replay(bindir, tmp_path, [iteration(i, w) for i in range(40)])
    assert_fail(proc, "the race was set up in 0 of 40 iterations, fewer than 20")
    assert "the kicker was asleep in its fsync at the truncate in 40" in proc.stdout


def test_dioreuse_counts_a_truncate_that_waited_for_the_held_write(bindir, tmp_path):
    """A fixed kernel: the truncate returns only after the write left
    blk-throttle, 50 ms or more later."""
    kv = parse_result(replay(bindir, tmp_path, [iteration(i, SHORT, truncate_us=480000)
                                                for i in range(40)]), "dioreuse")
    assert (kv["iters"], kv["setup"], kv["waited"], kv["wrong"]) == ("40", "40", "40", "0")
    # not when it waited without the write leaving meanwhile, or briefly
    for w, us in (("0,0,0,1,3", 480000), (SHORT, 49999)):
        assert_fail(replay(bindir, tmp_path, [iteration(i, w, truncate_us=us)
                                              for i in range(40)]),
                    "set up in 0 of 40")


def test_dioreuse_counts_a_held_write_that_landed_on_b(bindir, tmp_path):
    """A stock kernel: the write left blk-throttle after B's write and
    zeroed B's block on the freed indirect block; the run fails on it."""
    held = "0,0,0,0,3"
    proc = replay(bindir, tmp_path, [iteration(i, held, wrong=1, wrong_ind=1)
                                     for i in range(40)])
    assert_fail(proc, "40 of B's blocks do not hold what its O_DIRECT write put there")
    assert "the race was set up in 40: the truncate waited for the held write in 0, " \
        "the held write landed on B's block in 40" in proc.stdout
    # held as long, and B intact: the held write was not of the freed block
    assert_fail(replay(bindir, tmp_path, [iteration(i, held) for i in range(40)]),
                "set up in 0 of 40")
    # held, but no write of the kicker left before its fsync returned, or
    # none was held while B did not get the block: nothing to count
    assert_fail(replay(bindir, tmp_path, [iteration(i, "0,0,0,0,0") for i in range(40)]),
                "set up in 0 of 40")
    assert_fail(replay(bindir, tmp_path, [iteration(i, SHORT, reused=0, truncate_us=480000)
                                          for i in range(40)]), "set up in 0 of 40")


def test_dioreuse_needs_half_the_iterations_set_up(bindir, tmp_path):
    waited = [iteration(i, SHORT, truncate_us=480000) for i in range(20)]
    awake = [iteration(20 + i, SHORT, asleep=0, truncate_us=480000) for i in range(20)]
    kv = parse_result(replay(bindir, tmp_path, waited + awake), "dioreuse")
    assert (kv["iters"], kv["setup"]) == ("40", "20")
    awake.append(iteration(40, UNHELD, truncate_us=480000))
    assert_fail(replay(bindir, tmp_path, waited[1:] + awake),
                "set up in 19 of 40 iterations, fewer than 20")
    kv = parse_result(replay(bindir, tmp_path, waited[1:] + awake, "-a", "19"), "dioreuse")
    assert kv["setup"] == "19"


def test_dioreuse_replays_a_log(bindir, tmp_path):
    """Other lines (a guest's console) are skipped; an iteration line it
    cannot read is an error of one line; wios=- (no cgroup) counts nothing."""
    lines = ["[    1.2] ext2 mounted", "dioreuse: iteration 3: B's block 0 (disk block 9, "
             "A's freed indirect block) reads back as zeros"]
    kv = parse_result(replay(bindir, tmp_path, lines + [iteration(0, SHORT, truncate_us=60000)],
                             "-a", "1"), "dioreuse")
    assert (kv["iters"], kv["setup"]) == ("1", "1")
    assert_fail(replay(bindir, tmp_path, [iteration(0, "0,0,1")]), "wios= takes 5 numbers")
    assert_fail(replay(bindir, tmp_path, lines), "no iteration in it")
    assert_fail(replay(bindir, tmp_path, [iteration(0, "-", truncate_us=480000)], "-a", "1"),
                "set up in 0 of 1")
    proc = run(bindir, "dioreuse", "-R", tmp_path / "log", tmp_path)
    assert proc.returncode == 2 and "-R takes no DIR or DEV" in proc.stderr


def loop_dev(mnt):
    return subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(mnt)],
                          capture_output=True, text=True).stdout.strip()


def test_dioreuse_on_ext2(bindir, tmp_path):
    """On the host, without a cgroup holding the fsync's write back: every
    block of B reads back as written, nothing is left in the directory, and
    nothing counts as set up (the hold is not measured), so asking for one
    iteration set up fails.  -v's lines replay to the same counts."""
    with ext2_mount(tmp_path, kib=16384) as (img, mnt):
        dev = loop_dev(mnt)
        proc = run(bindir, "dioreuse", "-v", "-n", "5", "-b", "4", "-a", "0", mnt, dev)
        kv = parse_result(proc, "dioreuse")
        assert kv["iters"] == "5" and kv["wrong"] == "0" and kv["setup"] == "0"
        assert kv["blocksize"] == str(os.statvfs(mnt).f_bsize)
        its = [l for l in proc.stdout.splitlines() if l.startswith("dioreuse: iteration ")]
        assert len(its) == 5 and all("wios=- " in l and l.endswith(
            "not set up: no cgroup, the hold is not measured") for l in its)
        (tmp_path / "run.log").write_text(proc.stdout)
        again = parse_result(run(bindir, "dioreuse", "-a", "0", "-R", tmp_path / "run.log"),
                             "dioreuse")
        assert {k: again[k] for k in ("iters", "setup", "waited", "wrong")} == \
            {k: kv[k] for k in ("iters", "setup", "waited", "wrong")}
        assert sorted(os.listdir(mnt)) == ["lost+found"]
        assert_fail(run(bindir, "dioreuse", "-n", "5", "-b", "4", "-a", "1", mnt, dev),
                    "the race was set up in 0 of 5 iterations")
        assert sorted(os.listdir(mnt)) == ["lost+found"]
    e2fsck_clean(img)


def fake_cgroup(tmp_path, io_max, io_stat=""):
    cg = tmp_path / "cg"
    cg.mkdir(exist_ok=True)
    (cg / "cgroup.procs").write_text("")
    (cg / "io.max").write_text(io_max)
    (cg / "io.stat").write_text(io_stat)
    return cg


def test_dioreuse_wants_a_write_limit_on_the_disk_it_tests(bindir, tmp_path):
    """A limit on another disk (a wrong MAJ:MIN), or none on writes, holds
    nothing back: it fails in one line before any iteration."""
    with ext2_mount(tmp_path, kib=16384) as (img, mnt):
        dev = loop_dev(mnt)
        rdev = os.stat(dev).st_rdev
        mm = "%d:%d" % (os.major(rdev), os.minor(rdev))
        for io_max in ("", "%d:%d rbps=max wbps=max riops=max wiops=2\n"
                       % (os.major(rdev), os.minor(rdev) + 1),
                       mm + " rbps=max wbps=max riops=2 wiops=max\n"):
            cg = fake_cgroup(tmp_path, io_max)
            proc = run(bindir, "dioreuse", "-n", "2", "-c", cg, mnt, dev)
            assert_fail(proc, "%s/io.max limits no writes a second of %s (%s)" % (cg, dev, mm))
            assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""
        # and DEV must be the disk DIR is on
        proc = run(bindir, "dioreuse", "-n", "2", mnt, "/dev/null")
        assert_fail(proc, "/dev/null is not the disk %s is on (%s)" % (mnt, mm))
        assert sorted(os.listdir(mnt)) == ["lost+found"]


def test_dioreuse_counts_nothing_when_the_cgroup_counters_do_not_move(bindir, tmp_path):
    """io.max as the test wants it, but an io.stat whose wios stays put (the
    writes not charged to the cgroup): the kicker sleeps in its fsync, yet
    no iteration counts, and the run fails when half of them are asked."""
    with ext2_mount(tmp_path, kib=16384) as (img, mnt):
        dev = loop_dev(mnt)
        rdev = os.stat(dev).st_rdev
        mm = "%d:%d" % (os.major(rdev), os.minor(rdev))
        cg = fake_cgroup(tmp_path, mm + " rbps=max wbps=max riops=max wiops=2\n",
                         "8:0 rbytes=0 wbytes=0 rios=0 wios=9 dbytes=0 dios=0\n" +
                         mm + " rbytes=0 wbytes=4096 rios=0 wios=7 dbytes=0 dios=0\n")
        proc = run(bindir, "dioreuse", "-v", "-n", "4", "-b", "4", "-c", cg, mnt, dev)
        assert_fail(proc, "the race was set up in 0 of 4 iterations, fewer than 2")
        its = [l for l in proc.stdout.splitlines() if l.startswith("dioreuse: iteration ")]
        assert len(its) == 4 and all(" wios=7,7,7,7,7 " in l and ": not set up: " in l
                                     for l in its)
        # the kicker joined the cgroup (here a file that keeps its pid)
        assert (cg / "cgroup.procs").read_text().isdigit()
        assert sorted(os.listdir(mnt)) == ["lost+found"]
    e2fsck_clean(img)


def test_dioreuse_refuses_a_minimum_above_the_iterations(bindir, tmp_path):
    proc = run(bindir, "dioreuse", "-n", "3", "-a", "4", tmp_path, "/dev/null")
    assert proc.returncode == 2 and "-a: 4 is more than the 3 iterations" in proc.stderr


def test_dioreuse_missing_dir(bindir, tmp_path):
    assert_fail(run(bindir, "dioreuse", "-n", "1", tmp_path / "nope", "/dev/null"),
                "statvfs")
