"""A check interrupted while its cells boot side by side (Ctrl-C, SIGTERM):
every guest is ended, every slot given back, no run recorded for a cell
that did not finish, the records already written kept, the disks of the
unfinished cells removed, and one line, exit 128 + the signal.  The check
runs as `tools/fork check` does, in a process of its own, with builds
faked (a driver script) and QEMU (or lava-run) a program that sleeps."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import PYTHON, TOOLS
from forkkit.core import interrupt, locks
from test_kit_lava import job_log

# The check process: build and checkpatch faked as test_kit_check.py's
# fixture fakes them, the boot the kit's own (guest/qemu.py or
# guest/lava.py), the initramfs a stand-in.
DRIVER = r"""
import os, sys
sys.path.insert(0, %(tools)r)
from forkkit import cli
from forkkit.build import kbuild
from forkkit.guest import guesttests, initramfs, lava
from forkkit.repo.git import git
from forkkit.verify import kernel

tmp = os.environ["FAKE_DIR"]

def build(rev, flavour="base", jobs=0, do_patchcheck=True, prog=None):
    commit = git(["rev-parse", rev + "^{commit}"])
    image = os.path.join(tmp, "bzImage-" + commit)
    with open(image, "w") as fh:
        fh.write("kernel " + commit)
    return kbuild.BuildResult(rev=rev, commit=commit, tree=git(["rev-parse", commit + "^{tree}"]),
                              flavour=flavour, image=image, log="build.log",
                              image_sha256="5" * 64, config_key="c" * 64,
                              ext2_symbols=["ext2_fill_super"], sparse="ran",
                              ext2_tail_calls=None)

base = os.path.join(tmp, "base.cpio")
archive = initramfs.Cpio()
archive.file("init", b"#!/bin/sh\n")
with open(base, "wb") as fh:
    fh.write(archive.bytes())
kernel.build = build
kernel.run_checkpatch = lambda commit, log: ("pass", "faked")
initramfs.base_archive = lambda extra_files=None, log=None: base
lava.lava_run_binary = lambda: os.path.join(tmp, "lava-run")
guesttests.TESTS["smoke"] = ("4M", 1024, "statfs-only.sh")
sys.exit(cli.main(sys.argv[1:]))
"""

# QEMU: the image named in FAKE_QUICK boots, reports the disk's counts and
# ends; any other sleeps (and then ends as a pass would).  Each writes
# its pid to FAKE_DIR/pids/.  A SIGINT ends it as it ends QEMU (exit 0,
# no exit status of the guest), noted in FAKE_DIR/signals/.
FAKE_QEMU = r"""#!%(python)s
import os, signal, sys, time
sys.path.insert(0, %(tools)r)
args = sys.argv[1:]
if args == ["--version"]:
    print("QEMU emulator version 99.0.0")
    sys.exit(0)

def terminate(signum, frame):
    open(os.path.join(os.environ["FAKE_DIR"], "signals", str(os.getpid())), "w").close()
    print("qemu-system-x86_64: terminating on signal %%d" %% signum, flush=True)
    sys.exit(0)

signal.signal(signal.SIGINT, terminate)
commit = os.path.basename(args[args.index("-kernel") + 1])[len("bzImage-"):]
disk = [a.split(",")[0][len("file="):] for a in args if a.startswith("file=")][0]
with open(os.path.join(os.environ["FAKE_DIR"], "pids", "qemu-%%d" %% os.getpid()), "w") as fh:
    fh.write(commit)
print("FORK-GUEST-START 9.9.1 cpus=2", flush=True)
if commit == os.environ.get("FAKE_QUICK"):
    from forkkit.guest import guesttests
    blocks, inodes = guesttests.group_sums(disk)
    print("RESULT prog=fsreport bfree=%%d ffree=%%d" %% (blocks, inodes))
else:
    time.sleep(20)
print("FORK-EXIT-STATUS: 0", flush=True)
"""

# lava-run: a job whose QEMU (here a sleep) runs in lava-run's process
# group, and then its log: a guest that ended with exit status 0
FAKE_LAVA_RUN = """#!/bin/sh
sleep 20 &
echo "$! $$" > "$FAKE_DIR/pids/lava-$$"
wait
cat "$FAKE_DIR/lava.log"
"""


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_for(what, cond, proc, guard=60):
    """Poll cond() until it holds; the check process must still run."""
    end = time.monotonic() + guard
    while not cond():
        assert proc.poll() is None, "the check ended before %s: %s" % (
            what, open(proc.err_path).read())
        assert time.monotonic() < end, "no %s" % what
        time.sleep(0.05)


@pytest.fixture
def checking(kit, tmp_path):
    kit.laid_out()
    (kit.repo / "ci" / "guest" / "scripts" / "statfs-only.sh").write_text("fsreport /mnt\n")
    fake = tmp_path / "fake"
    (fake / "pids").mkdir(parents=True)
    (fake / "signals").mkdir()
    (fake / "driver.py").write_text(DRIVER % {"tools": str(TOOLS)})
    for name, text in (("qemu-system-x86_64", FAKE_QEMU), ("lava-run", FAKE_LAVA_RUN)):
        prog = (kit.bin if name.startswith("qemu") else fake) / name
        prog.write_text(text % {"python": PYTHON, "tools": str(TOOLS)} if "%(" in text
                        else text)
        prog.chmod(0o755)
    (fake / "lava.log").write_text(job_log(["FORK-GUEST-START 9.9.1 cpus=2",
                                            "FORK-EXIT-STATUS: 0"]))
    commits = [kit.rev("distro/9.9")] + \
        kit.git("rev-list", "--reverse", "distro/9.9..series/9.9").split()
    env = dict(os.environ, FORK_GUEST_SLOTS="2", FAKE_DIR=str(fake), FAKE_QUICK=commits[0])
    env.pop("FORK_ACCEL", None)

    def start(*args):
        out, err = tmp_path / "check.out", tmp_path / "check.err"
        with open(out, "w") as o, open(err, "w") as e:
            # a process group of its own, as a terminal gives each job
            proc = subprocess.Popen([PYTHON, str(fake / "driver.py"), "check"] + list(args),
                                    env=env, stdout=o, stderr=e, cwd=str(tmp_path),
                                    start_new_session=True)
        proc.err_path = err
        return proc

    kit.start, kit.commits, kit.fakedir = start, commits, fake
    return kit


def records(kit):
    d = kit.work / "cache" / "check"
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))
            if n.endswith(".json")} if d.is_dir() else {}


def guest_pids(kit):
    """{pid: what} of every guest process the fakes started."""
    out = {}
    for f in (kit.fakedir / "pids").iterdir():
        text = f.read_text().split()
        if not text:
            continue
        if f.name.startswith("qemu-"):
            out[int(f.name[len("qemu-"):])] = text[0]
        else:
            out.update({int(p): "lava" for p in text})
    return out


def slots_free(count=2):
    for i in range(count):
        with open(locks.slot_path(i), "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(fh, fcntl.LOCK_UN)
    return True


def ended(kit, proc, expect_rc, signame):
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("the check did not end within 60 s of the signal")
    err = open(proc.err_path).read()
    assert rc == expect_rc, err
    assert "Traceback" not in err and "Exception" not in err, err
    last = err.rstrip("\n").splitlines()[-1]
    assert last == "fork check: interrupted" + ("" if signame == "SIGINT"
                                               else " (%s)" % signame), err
    assert err.count("fork check: interrupted") == 1, err
    return err


@pytest.mark.parametrize("how", ["SIGINT to the check", "SIGINT to its process group",
                                 "SIGTERM to the check"])
def test_an_interrupted_side_by_side_check_leaves_no_guest_and_no_run(checking, how):
    """Three cells, two slots: the base's guest ends (its pass is
    recorded), the other two sleep side by side; then the signal.  Ctrl-C
    from a terminal reaches the whole process group (QEMU too), a plain
    `kill -INT` or `kill` the check alone."""
    kit = checking
    proc = kit.start()
    wait_for("the base's record and two sleeping guests", lambda: len(records(kit)) == 1 and
             sorted(guest_pids(kit).values()) == sorted(kit.commits), proc)
    before = records(kit)
    assert json.loads(list(before.values())[0])["passed"] is True
    sleeping = [p for p, c in guest_pids(kit).items() if c != kit.commits[0]]
    assert all(alive(p) for p in sleeping)
    sig = signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGINT
    if "group" in how:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    ended(kit, proc, 128 + sig, sig.name)
    # the guests run in process groups of their own: the kit ended them,
    # a terminal's Ctrl-C did not (a QEMU it ends looks like a failed boot)
    assert os.listdir(kit.fakedir / "signals") == []
    assert [p for p in guest_pids(kit) if alive(p)] == []
    assert slots_free()
    # the base's record as it was; nothing of the two unfinished cells
    assert records(kit) == before
    assert os.listdir(kit.work / "images") == []
    assert [n for n in os.listdir(kit.work / "tmp") if n.startswith("initrd-")] == []


def test_an_interrupted_lava_check_ends_lava_run_and_its_guest(checking):
    """--runner lava: Ctrl-C ends each cell's lava-run and what runs in its
    process group (the job's QEMU)."""
    kit = checking
    proc = kit.start("--runner", "lava")
    wait_for("two lava-run jobs", lambda: len(guest_pids(kit)) == 4, proc)
    assert all(alive(p) for p in guest_pids(kit))
    os.kill(proc.pid, signal.SIGINT)
    ended(kit, proc, 130, "SIGINT")
    assert [p for p in guest_pids(kit) if alive(p)] == []
    assert slots_free()
    assert records(kit) == {}
    assert os.listdir(kit.work / "images") == []


def test_a_stop_ends_the_running_guests_and_starts_none():
    """interrupt.stopping(): each running guest's stop is called, the
    guest's thread raises Stopped once its guest has ended, and a guest
    about to start is stopped at once."""
    ended_ = threading.Event()
    seen = []

    def guest():
        try:
            with interrupt.guest(ended_.set):
                ended_.wait(30)
            seen.append("returned")
        except interrupt.Stopped:
            seen.append("stopped")

    t = threading.Thread(target=guest)
    t.start()
    while not interrupt._running:
        time.sleep(0.01)
    with interrupt.stopping():
        t.join()
        late = []
        with pytest.raises(interrupt.Stopped):
            with interrupt.guest(lambda: late.append("stopped")):
                pass
        assert late == ["stopped"]
        with pytest.raises(interrupt.Stopped):
            locks.GuestSlots().__enter__()
    assert seen == ["stopped"]
    with interrupt.guest(lambda: None):      # after the stop, guests run again
        pass


# ------------------------------------------------------------ fstests shards

from test_fstests import pipeline, repo, run_main, stores   # noqa: E402,F401 (fixtures)
from forkkit.verify import fstests_run as cmd_fstests        # noqa: E402


def test_an_interrupted_sharded_fstests_run_stops_its_shards(pipeline, tmp_path,  # noqa: F811
                                                             monkeypatch, capsys):
    """fstests --shards 2: a Ctrl-C while both shards' guests run ends both
    (each guest's stop is called), adds no boot to the store or the record,
    and the run ends in one line, exit 130."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    both = threading.Barrier(2, timeout=60)
    stopped = []

    def sleeping(*a, **kw):
        ended = threading.Event()
        with interrupt.guest(lambda: (stopped.append(1), ended.set())):
            if both.wait() == 0:
                os.kill(os.getpid(), signal.SIGINT)     # the main thread's Ctrl-C
            ended.wait(20)
        pytest.fail("a guest ran to its end through the interrupt")

    monkeypatch.setattr(cmd_fstests, "run_guest", sleeping)
    rec = tmp_path / "rec"
    assert run_main("generic/001", "generic/002", "--shards", "2", "--record", str(rec)) == 130
    err = capsys.readouterr().err
    assert err.rstrip("\n").splitlines()[-1] == "fork fstests: interrupted", err
    assert "Traceback" not in err
    assert stopped == [1, 1]
    assert stores(rec) == [], [list(d.rglob("*")) for d in stores(rec)]  # numbers given back
    kernels = tmp_path / "work" / "fstests" / "kernels"
    assert sorted(kernels.iterdir())
    for d in kernels.iterdir():
        # no boot added; of the boots, their logs, not their disks
        assert json.loads((d / "boots.json").read_text()) == [] \
            if (d / "boots.json").exists() else True, d
        assert [p for p in d.glob("boot-*/*") if p.suffix in (".img", ".qcow2")] == [], d
