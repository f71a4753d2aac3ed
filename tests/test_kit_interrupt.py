"""A check interrupted while its cells boot side by side (Ctrl-C, SIGTERM):
every guest is ended, every slot given back, no run recorded for a cell
that did not finish, the records already written kept, the disks of the
unfinished cells removed, and one line; the process then dies by the
signal.  The check runs as `tools/fork check` does, in a process of its
own, with builds faked (a driver script) and QEMU (or lava-run) a
program that sleeps.  Then what an interrupt does to the programs the
kit runs (core/proc.py), to a kit killed outright, to a second Ctrl-C,
and to a stderr that is gone."""

import contextlib
import errno
import fcntl
import io
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
sys.exit(cli.main(sys.argv[1:], die_by_signal=True))    # as tools/fork
"""

# QEMU: the image named in FAKE_QUICK boots, reports the disk's counts and
# ends; any other sleeps until the test ends (and then ends as a pass
# would).  Each writes
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
    # until the test ends (its teardown touches "go"): a guest that
    # ended on its own under a loaded machine would race the signal
    go = os.path.join(os.environ["FAKE_DIR"], "go")
    for _ in range(3000):
        if os.path.exists(go):
            break
        time.sleep(0.1)
print("FORK-EXIT-STATUS: 0", flush=True)
"""

# lava-run: a job whose QEMU (here a sleep) runs in lava-run's process
# group, and then its log: a guest that ended with exit status 0.  SIGTERM
# cancels the job: its QEMU ends (as lava-run's own handler does)
FAKE_LAVA_RUN = """#!/bin/sh
sleep 300 &
echo "$! $$" > "$FAKE_DIR/pids/lava-$$"
trap 'kill $!; exit 143' TERM
wait
cat "$FAKE_DIR/lava.log"
"""


@pytest.fixture(autouse=True)
def fresh_stop(monkeypatch):
    """Each test with a stop of its own: one a test leaves on (a stop whose
    block raised stays on) never reaches another test."""
    monkeypatch.setattr(interrupt, "_stopping", threading.Event())
    monkeypatch.setattr(interrupt, "_running", {})


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

    started = []

    def start(*args, slots="2"):
        out, err = tmp_path / "check.out", tmp_path / "check.err"
        with open(out, "w") as o, open(err, "w") as e:
            # a process group of its own, as a terminal gives each job
            proc = subprocess.Popen([PYTHON, str(fake / "driver.py"), "check"] + list(args),
                                    env=dict(env, FORK_GUEST_SLOTS=slots), stdout=o,
                                    stderr=e, cwd=str(tmp_path), start_new_session=True)
        proc.err_path = err
        started.append(proc)
        return proc

    kit.start, kit.commits, kit.fakedir = start, commits, fake
    yield kit
    # a test that failed leaves nothing running: a held e2fsck ends, the
    # check's group is killed (its guests die with it)
    (fake / "go").touch()
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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
    """The check's end: `expect_rc` (-N: it died by signal N, as a shell
    sees a program a Ctrl-C ended), no traceback, one last line."""
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
    ended(kit, proc, -sig, sig.name)
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
    ended(kit, proc, -signal.SIGINT, "SIGINT")
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


# ------------------------------------------- e2fsck after a guest, Ctrl-C

# e2fsck -fn as the real one answers a Ctrl-C ("e2fsck canceled.", exit
# 32), held until FAKE_DIR/go exists; it notes that it runs
# (e2fsck-<pid>) and whether a Ctrl-C reached it (e2fsck-canceled)
FAKE_E2FSCK = r"""#!/bin/sh
[ "$1" = -fn ] || exec /usr/sbin/e2fsck "$@"
touch "$FAKE_DIR/e2fsck-$$"
trap 'touch "$FAKE_DIR/e2fsck-canceled"; echo "$2: e2fsck canceled."; exit 32' INT
while [ ! -e "$FAKE_DIR/go" ]; do sleep 0.05; done
exec /usr/sbin/e2fsck "$@"
"""


def fake_e2fsck(kit):
    prog = kit.bin / "e2fsck"
    prog.write_text(FAKE_E2FSCK)
    prog.chmod(0o755)


def e2fsck_runs(kit):
    return any(n.startswith("e2fsck-") and n[len("e2fsck-"):].isdigit()
               for n in os.listdir(kit.fakedir))


def test_ctrl_c_during_a_cells_e2fsck_is_no_failure_and_records_nothing(checking):
    """Two slots: the base's guest has ended and its e2fsck runs (in the
    cell's thread), the next cell's guest sleeps, when a terminal's Ctrl-C reaches the check's process
    group.  e2fsck runs in a group of its own: the Ctrl-C never reaches
    it (no "e2fsck canceled", exit 32, recorded as the cell's FAIL); it
    ends with its own answer, and the cell, overtaken by the stop, is not
    recorded."""
    kit = checking
    fake_e2fsck(kit)
    proc = kit.start()
    # two threads: the base's in e2fsck, the next cell's with its guest
    wait_for("the base's e2fsck beside a sleeping guest", lambda: e2fsck_runs(kit) and
             sorted(guest_pids(kit).values()) == sorted(kit.commits[:2]), proc)
    sleeping = [p for p, c in guest_pids(kit).items() if c != kit.commits[0]]
    os.killpg(proc.pid, signal.SIGINT)
    wait_for("the stop of the sleeping guests", lambda: not any(alive(p) for p in sleeping),
             proc)
    (kit.fakedir / "go").touch()            # e2fsck's work ends
    ended(kit, proc, -signal.SIGINT, "SIGINT")
    assert not (kit.fakedir / "e2fsck-canceled").exists()
    assert records(kit) == {}
    assert os.listdir(kit.work / "images") == []
    assert slots_free()


def test_ctrl_c_during_e2fsck_with_one_slot_leaves_no_disk(checking):
    """One slot: the cells run in the main thread, e2fsck in the kit's
    process group (the terminal's Ctrl-C reaches both); the interrupt
    waits for e2fsck's end, records nothing and removes the disk."""
    kit = checking
    fake_e2fsck(kit)
    proc = kit.start(slots="1")
    wait_for("the base's e2fsck", lambda: e2fsck_runs(kit), proc)
    os.killpg(proc.pid, signal.SIGINT)
    ended(kit, proc, -signal.SIGINT, "SIGINT")
    assert (kit.fakedir / "e2fsck-canceled").exists()
    assert records(kit) == {}
    assert os.listdir(kit.work / "images") == []


def test_a_canceled_e2fsck_is_no_verdict(tmp_path, monkeypatch):
    """e2fsck that a signal made cancel (exit 32) or a dumpe2fs a signal
    ended: no FAIL of the disk, an error (proc.Ended) that judges nothing."""
    from forkkit.core import proc
    from forkkit.guest import guesttests
    disk = tmp_path / "d.img"
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", str(disk), "4M"], check=True)
    assert guesttests.verify_image(str(disk), need_statfs=False)["e2fsck"][0] == "pass"
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "e2fsck").write_text('#!/bin/sh\necho "$2: e2fsck canceled."\nexit 32\n')
    (bin_ / "e2fsck").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_, os.environ["PATH"]))
    with pytest.raises(proc.Ended, match=r"`e2fsck -fn .*` was canceled \(exit 32\) before "
                                         r"its answer: nothing is judged on it"):
        guesttests.verify_image(str(disk), need_statfs=False)
    (bin_ / "e2fsck").unlink()
    (bin_ / "dumpe2fs").write_text("#!/bin/sh\nkill -KILL $$\n")
    (bin_ / "dumpe2fs").chmod(0o755)
    with pytest.raises(proc.Ended, match=r"was ended by SIGKILL"):
        guesttests.verify_image(str(disk), need_statfs=False)
    # a program a signal ended is no answer, whatever the caller checks
    with pytest.raises(proc.Ended):
        proc.run(["sh", "-c", "kill -TERM $$"], check=False)
    # while the process stops its guests: the stop's own exception
    interrupt.stop_all()
    with pytest.raises(interrupt.Stopped):
        proc.run(["sh", "-c", "kill -INT $$"], check=False)


def group_of(pid):
    with open("/proc/%d/stat" % pid) as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[2])


def test_a_threads_programs_run_in_a_group_of_their_own():
    """What a guest's thread runs (e2fsck, dumpe2fs, debugfs) is out of the
    kit's process group, which a terminal's Ctrl-C reaches; what the main
    thread runs stays in it (the terminal's: git, make, an editor)."""
    from forkkit.core import proc
    script = ["sh", "-c", "echo $$; cut -d' ' -f5 /proc/$$/stat"]
    out = proc.run(script).stdout.split()
    assert int(out[1]) == os.getpgid(0)
    got = []
    t = threading.Thread(target=lambda: got.append(proc.run(script).stdout.split()))
    t.start()
    t.join()
    assert int(got[0][1]) == int(got[0][0]) != os.getpgid(0)


# --------------------------------- SIGTERM and the main thread's programs

# git (or another program) that ends on SIGINT, SIGTERM or SIGHUP as git
# does, removing its lock: its cleanup takes until DIR/go exists
# It gives up after about a minute without the signal (exit 3), so that a
# kit that does not pass the signal on fails the test instead of hanging it.
FAKE_GIT = r"""#!/bin/sh
trap 'touch "$DIR/got-signal"; while [ ! -e "$DIR/go" ]; do sleep 0.05; done;
      touch "$DIR/cleaned"; exit 1' INT TERM HUP
echo $$ > "$DIR/started"
n=0
while [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done
exit 3
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_an_interrupt_is_passed_on_to_git_which_ends_in_its_time(tmp_path, monkeypatch, sig):
    """SIGTERM, SIGHUP (cli: Terminated) or a SIGINT sent to the kit alone
    while git runs in the main thread: git is given the signal and all the
    time its cleanup takes (never SIGKILL: a git killed so can leave
    index.lock or a half-updated tree); then the interrupt goes on."""
    from forkkit.core import proc
    if signal.getsignal(sig) == signal.SIG_IGN:
        # the kit leaves an ignored signal ignored (terminate_as_interrupt):
        # under nohup, SIGHUP reaches neither the kit nor git
        pytest.skip("%s is ignored in this process (nohup?)" % signal.Signals(sig).name)
    monkeypatch.setattr(proc, "GRACE", 0.2)     # what any other program gets
    git = tmp_path / "git"
    git.write_text(FAKE_GIT)
    git.chmod(0o755)

    def signals():
        end = time.monotonic() + 30
        while not (tmp_path / "started").exists() and time.monotonic() < end:
            time.sleep(0.02)
        os.kill(os.getpid(), sig)
        while not (tmp_path / "got-signal").exists() and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(1)                   # longer than GRACE: git still cleans up
        (tmp_path / "go").touch()

    threading.Thread(target=signals, daemon=True).start()
    with pytest.raises(KeyboardInterrupt) as exc:
        with interrupt.terminate_as_interrupt():
            proc.run([str(git)], env={"DIR": str(tmp_path)})
    assert getattr(exc.value, "signum", signal.SIGINT) == sig
    assert (tmp_path / "cleaned").exists()
    assert not alive(int((tmp_path / "started").read_text()))


def test_a_program_that_does_not_end_on_the_interrupt_is_killed_after_grace(tmp_path,
                                                                             monkeypatch):
    """Any program other than git has GRACE seconds after the signal."""
    from forkkit.core import proc
    monkeypatch.setattr(proc, "GRACE", 0.2)
    script = "trap '' TERM; echo $$ > %s/started; while :; do sleep 0.05; done" % tmp_path

    def signals():
        while not (tmp_path / "started").exists():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=signals, daemon=True).start()
    with pytest.raises(interrupt.Terminated):
        with interrupt.terminate_as_interrupt():
            proc.run(["sh", "-c", script])
    assert not alive(int((tmp_path / "started").read_text()))


# ------------------------------------------------- the kit killed outright

@pytest.mark.parametrize("runner", ["qemu", "lava"])
def test_a_kit_killed_outright_takes_its_guests_along(checking, runner):
    """`timeout -s KILL`, a CI job's cancel, `kill -9 -PGID`, the OOM
    killer: the kit's group dies at once.  Its guests, in groups of their
    own, end with the threads that started them (QEMU by SIGKILL;
    lava-run by SIGTERM, which cancels its job and ends the job's QEMU)."""
    kit = checking
    if runner == "qemu":
        proc = kit.start()
        wait_for("two sleeping guests", lambda: len(records(kit)) == 1 and
                 sorted(guest_pids(kit).values()) == sorted(kit.commits), proc)
        guests = [p for p, c in guest_pids(kit).items() if c != kit.commits[0]]
    else:
        proc = kit.start("--runner", "lava")
        wait_for("two lava-run jobs", lambda: len(guest_pids(kit)) == 4, proc)
        guests = list(guest_pids(kit))
    assert all(alive(p) for p in guests)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 15
    while any(alive(p) for p in guests) and time.monotonic() < end:
        time.sleep(0.05)
    orphans = [p for p in guests if alive(p)]
    for p in orphans:
        os.kill(p, signal.SIGKILL)
    assert orphans == []


# ------------------------------------------------- a second Ctrl-C, a stop

def test_a_second_ctrl_c_while_the_cells_end_waits_for_their_threads():
    """rows(): the first Ctrl-C stops the guests; a second one while a
    cell's thread ends (what is left of its work) neither cuts the wait
    short (the thread would run on, unseen, after the check has ended) nor
    ends the stop."""
    from forkkit.verify.check import SideBySide
    cells = SideBySide(2)
    done = threading.Event()

    def boot():
        stop = threading.Event()
        time.sleep(0.2)                     # rows() waits for this boot
        try:
            with interrupt.guest(stop.set):
                os.kill(os.getpid(), signal.SIGINT)         # the first Ctrl-C
                stop.wait(30)
        finally:
            os.kill(os.getpid(), signal.SIGINT)             # a second one
            time.sleep(0.5)                                 # the thread's last work
            done.set()

    cells.add(boot)
    try:
        with pytest.raises(KeyboardInterrupt):
            cells.rows()
        assert done.is_set()
    finally:
        cells.close()


def test_a_second_ctrl_c_while_a_guest_is_ended_waits_for_its_end():
    """stop_all(): a Ctrl-C while a guest's stop runs (lava-run's SIGTERM
    and its grace) neither cuts the wait for it short nor ends the stop."""
    ended_, done = threading.Event(), []

    def stop():
        os.kill(os.getpid(), signal.SIGINT)     # the second Ctrl-C
        time.sleep(0.5)                         # lava-run ends its job
        done.append(1)
        ended_.set()

    def guest():
        with contextlib.suppress(interrupt.Stopped):
            with interrupt.guest(stop):
                ended_.wait(30)

    t = threading.Thread(target=guest)
    t.start()
    while not interrupt._running:
        time.sleep(0.01)
    try:
        with interrupt.stopping():
            got = list(done)
    except KeyboardInterrupt:
        got = "the stop was cut short"
    t.join()
    assert got == [1]


def test_a_stop_whose_block_raises_stays_on():
    """A second Ctrl-C that ends stopping()'s block: the stop stays on, so
    that no guest's thread goes on to a result (the process is ending)."""
    with pytest.raises(KeyboardInterrupt):
        with interrupt.stopping():
            raise KeyboardInterrupt
    with pytest.raises(interrupt.Stopped):
        interrupt.check()
    with pytest.raises(interrupt.Stopped):
        interrupt.pause(30)                 # at once


from test_kit_lava import server    # noqa: E402


def test_a_stop_cancels_a_server_job_at_once(tmp_path, monkeypatch, kit):
    """--runner lava-server: the stop cancels the job on the server from
    the stopping thread (not the cell's thread after its next poll, which
    the process may not live to see), and the cell's thread, between two
    polls, raises Stopped at once."""
    from forkkit.guest import lavaserver
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    monkeypatch.setattr(lavaserver, "POLL", 30)
    calls, polled, out = [], threading.Event(), []

    def api(cfg_, path, data=None, timeout=60):
        calls.append(path)
        if path == "jobs/":
            return {"job_ids": [7]}
        if path == "jobs/7/":
            polled.set()
        return {"state": "Running"}

    monkeypatch.setattr(lavaserver, "api", api)

    def cell():
        try:
            lavaserver.run_guest_server(kernel, "true", [], timeout=30,
                                        log=str(tmp_path / "c.log"),
                                        meta={"fork.test_key": "k1"}, test="smoke")
            out.append("returned")
        except interrupt.Stopped:
            out.append("stopped")

    t = threading.Thread(target=cell, daemon=True)
    t.start()
    assert polled.wait(30)
    with interrupt.stopping():
        assert "jobs/7/cancel/" in calls        # by the stop itself
        t.join(10)
    assert out == ["stopped"]


# ------------------------------------------------ a stderr that is gone

class GoneStream(io.StringIO):
    """stderr through `| tee` (or ssh): gone once `gone` is set."""

    def __init__(self, gone):
        super().__init__()
        self.gone = gone

    def write(self, text):
        if self.gone.is_set():
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        return super().write(text)


def test_a_stderr_gone_with_the_ctrl_c_still_stops_the_shards(pipeline, monkeypatch):  # noqa: F811
    """`tools/fork fstests ... 2>&1 | tee log` and Ctrl-C: tee dies with it,
    and every progress line after raises EPIPE.  The shards' guests are
    stopped all the same, and the run ends as interrupted."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    both = threading.Barrier(2, timeout=60)
    stopped, gone = [], threading.Event()

    def sleeping(*a, **kw):
        ended_ = threading.Event()
        with interrupt.guest(lambda: (stopped.append(1), ended_.set())):
            if both.wait() == 0:
                gone.set()
                os.kill(os.getpid(), signal.SIGINT)
            ended_.wait(20)
        pytest.fail("a guest ran to its end through the interrupt")

    monkeypatch.setattr(sys, "stderr", GoneStream(gone))
    monkeypatch.setattr(cmd_fstests, "run_guest", sleeping)
    assert run_main("generic/001", "generic/002", "--shards", "2") == 130
    assert stopped == [1, 1]


def test_a_lost_progress_line_is_no_error():
    from forkkit.core.progress import Progress
    gone = threading.Event()
    gone.set()
    Progress("check", GoneStream(gone)).say("a line nobody reads")

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError):
        Progress("check", Full()).say("a line for a log file")


def test_a_shard_the_stop_overtakes_after_its_guest_adds_no_boot(pipeline, tmp_path,  # noqa: F811
                                                                  monkeypatch, capsys):
    """fstests --shards 2: one shard's guest has ended by itself and its
    e2fsck and debugfs run when the Ctrl-C comes; the other's guest is
    stopped.  Neither adds a boot: the first is overtaken by the stop
    (its tools, in a group of their own, answer honestly all the same)."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    finished_guest = cmd_fstests.run_guest
    both = threading.Barrier(2, timeout=60)
    stopped = []

    def guests(*a, **kw):
        if both.wait() == 0:
            res = finished_guest(*a, **kw)      # this shard's guest ends by itself
            os.kill(os.getpid(), signal.SIGINT)
            assert interrupt._stopping.wait(30)  # the stop comes during e2fsck
            return res
        ended_ = threading.Event()
        with interrupt.guest(lambda: (stopped.append(1), ended_.set())):
            ended_.wait(20)
        pytest.fail("a guest ran to its end through the interrupt")

    monkeypatch.setattr(cmd_fstests, "run_guest", guests)
    rec = tmp_path / "rec"
    assert run_main("generic/001", "generic/002", "--shards", "2", "--record", str(rec)) == 130
    assert stopped == [1]
    assert stores(rec) == []
    kernels = tmp_path / "work" / "fstests" / "kernels"
    for d in kernels.iterdir():
        assert json.loads((d / "boots.json").read_text()) == [] \
            if (d / "boots.json").exists() else True, d
