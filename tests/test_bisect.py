"""fork bisect: the bisect logic, skips, aborts and the report, without QEMU.

A synthetic kernel tree gets commits c0..c9 whose file `state` says what
the fake step (FORK_BISECT_FAKE_STEP) answers for it: good, bad, nobuild
(exit 125) or crash (exit 200, which must stop the bisect).

test_injected_fault_real runs the real thing (kernel builds and QEMU): only
with FORK_INTEGRATION=1, see its docstring.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import AUTHOR, FORK, PYTHON, Result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from forkkit.verify import bisect as cmd_bisect  # noqa: E402
from forkkit.core.errors import ForkError  # noqa: E402

FAKE = """#!/bin/sh
state=$(git -C "$FORK_KTREE" show "$1:state")
echo "fake step: $1 is $state (FORK_BISECT_COMMIT=$FORK_BISECT_COMMIT)"
case "$state" in
good) exit 0 ;;
bad) exit 1 ;;
nobuild) exit 125 ;;
crash) exit 200 ;;
esac
exit 3
"""


@pytest.fixture
def tree(kit, monkeypatch):
    """The kit's kernel tree with commits c0..c9; returns (kit, make)."""
    kit.ktree.mkdir(parents=True)
    kit.git("init", "-q")
    fake = kit.tmp / "fake-step"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    monkeypatch.setenv("FORK_BISECT_FAKE_STEP", str(fake))

    def make(states):
        ids = []
        for n, state in enumerate(states):
            (kit.ktree / "state").write_text(state + "\n")
            (kit.ktree / ("f%d.c" % n)).write_text("/* %d */\n" % n)
            kit.git("add", "-A")
            env = dict(AUTHOR, GIT_AUTHOR_DATE="%d +0000" % (1700000000 + n),
                       GIT_COMMITTER_DATE="%d +0000" % (1700000000 + n))
            kit.git("commit", "-q", "-m", "c%d: %s" % (n, state), env=env)
            ids.append(kit.rev("HEAD"))
        # the user's own checkout: another branch, with a local change
        kit.git("checkout", "-q", "-b", "mine", ids[len(ids) // 2])
        (kit.ktree / "f0.c").write_text("local edit\n")
        return ids
    return kit, make


def run_bisect(kit, *args):
    proc = subprocess.run([PYTHON, str(FORK), "bisect"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=120, cwd=str(kit.tmp))
    return Result(proc)


def user_state(kit):
    return (kit.git("symbolic-ref", "HEAD"), kit.rev("HEAD"), kit.git("status", "--porcelain"),
            kit.git("for-each-ref"))


def assert_reset(kit, res):
    wt = kit.work / "bisect"
    assert subprocess.run(["git", "bisect", "log"], cwd=str(wt),
                          capture_output=True).returncode != 0, "bisect still running"
    assert "`git bisect reset` done" in res.err


def rows(out):
    """{commit prefix: verdict} from the steps table."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^([0-9a-f]{12})  (good|bad|skip|error)\s", out, re.M)}


def test_finds_first_bad_commit(tree):
    kit, make = tree
    ids = make(["good"] * 6 + ["bad"] * 4)
    before = user_state(kit)
    res = run_bisect(kit, ids[0], ids[9], "--test", "seed")
    assert res.rc == 0, res
    assert "\nfirst bad commit: %s\n" % ids[6] in res.out
    # git show --stat of it
    assert "commit %s\n" % ids[6] in res.out
    assert "    c6: bad\n" in res.out and " f6.c  | 1 +" in res.out
    steps = rows(res.out)
    assert steps[ids[6][:12]] == "bad" and steps[ids[5][:12]] == "good"
    assert set(steps.values()) <= {"good", "bad"}
    assert "commits %s..%s" % (ids[0][:12], ids[9][:12]) in res.err
    assert "fake step: %s is bad (FORK_BISECT_COMMIT=%s)" % (ids[6], ids[6]) in res.err
    assert_reset(kit, res)
    assert user_state(kit) == before
    # the bisect worktree has no checkout, and is reused next time
    assert sorted(os.listdir(kit.work / "bisect")) == [".git"]
    res = run_bisect(kit, ids[3], ids[7])
    assert res.rc == 0 and "\nfirst bad commit: %s\n" % ids[6] in res.out, res


def test_skips_commits_that_do_not_build(tree):
    kit, make = tree
    ids = make(["good", "good", "good", "nobuild", "nobuild", "nobuild", "good", "bad", "bad",
                "bad"])
    res = run_bisect(kit, ids[0], ids[9])
    assert res.rc == 0, res
    assert "\nfirst bad commit: %s\n" % ids[7] in res.out
    assert "skip" in rows(res.out).values()
    assert_reset(kit, res)


def test_skipped_neighbours_give_candidates(tree):
    kit, make = tree
    ids = make(["good", "good", "good", "good", "good", "nobuild", "nobuild", "bad", "bad",
                "bad"])
    res = run_bisect(kit, ids[0], ids[9])
    assert res.rc == 1, res
    assert "first bad commit is one of these" in res.out
    listed = re.findall(r"^  ([0-9a-f]+) c\d", res.out, re.M)
    assert sorted(listed) == sorted(i[:len(listed[0])] for i in ids[5:8]), res.out
    assert_reset(kit, res)


def test_step_that_cannot_test_stops_the_bisect(tree):
    kit, make = tree
    ids = make(["good"] * 3 + ["crash"] * 7)
    before = user_state(kit)
    # the end point check already cannot test BAD
    res = run_bisect(kit, ids[0], ids[9])
    assert res.rc == 1, res
    assert "fork bisect: error: BAD %s could not be tested (step exit 200, log: " \
        % ids[9][:12] in res.err and res.err.rstrip().endswith("no bisect was started"), res
    assert not (kit.work / "bisect").exists()
    res = run_bisect(kit, ids[0], ids[9], "--no-verify")
    assert res.rc == 1, res
    assert "git bisect run did not finish" in res.err
    assert_reset(kit, res)
    assert user_state(kit) == before


def test_verify_ends(tree):
    kit, make = tree
    ids = make(["good", "bad", "bad", "bad"])
    for flag in ([], ["--verify"]):     # the check is the default; --verify still says so
        res = run_bisect(kit, ids[1], ids[3], *flag)
        assert res.rc == 1 and "GOOD %s fails the smoke test (step exit 1): give a GOOD " \
            "that passes it; no bisect was started" % ids[1][:12] in res.err, res
        res = run_bisect(kit, ids[0], ids[3], *flag)
        assert res.rc == 0 and "\nfirst bad commit: %s\n" % ids[1] in res.out, res
        steps = rows(res.out)
        assert steps[ids[3][:12]] == "bad" and steps[ids[0][:12]] == "good"
        assert "(end point check)" in res.out


def test_bad_that_passes_is_refused(tree):
    # A BAD that passes the test is no regression to find: before, every
    # step was good and git bisect named BAD, never tested, "first bad".
    kit, make = tree
    ids = make(["good"] * 5)
    before = user_state(kit)
    res = run_bisect(kit, ids[0], ids[4])
    assert res.rc == 1, res
    assert "first bad commit" not in res.out
    msg = [l for l in res.err.splitlines() if l.startswith("fork bisect: error: ")]
    assert msg == ["fork bisect: error: BAD %s passes the smoke test (step exit 0): give a BAD "
                   "that fails it; no bisect was started" % ids[4][:12]], res
    assert "fake step: %s is good" % ids[4] in res.err
    assert user_state(kit) == before
    assert not (kit.work / "bisect").exists()
    # without the end point check, git bisect names BAD untested: refused too
    res = run_bisect(kit, ids[0], ids[4], "--no-verify")
    assert res.rc == 1 and "first bad commit:" not in res.out, res
    assert "fork bisect: error: git bisect named BAD %s, which no step tested, as the first " \
        "bad commit: every commit it tested passed; check that BAD fails (bisect without " \
        "--no-verify)" % ids[4][:12] in res.err, res
    assert_reset(kit, res)
    assert user_state(kit) == before


def test_refuses_bad_arguments(tree):
    kit, make = tree
    ids = make(["good", "bad", "good"])
    res = run_bisect(kit, ids[2], ids[1])
    assert res.rc == 1 and "not an ancestor" in res.err, res
    res = run_bisect(kit, ids[0], ids[2], "--test", "nope")
    assert res.rc == 1 and "unknown guest test 'nope'" in res.err, res
    res = run_bisect(kit, ids[0])
    assert res.rc == 1 and "give GOOD and BAD" in res.err, res
    res = run_bisect(kit, "v0.0", ids[1])
    assert res.rc == 1 and "unknown revision 'v0.0'" in res.err, res


# ------------------------------------------------- the step, in process

class Boot:
    def __init__(self, ok=True, rc=0, error=None, problems=(), output=()):
        self.ok, self.rc, self.error, self.problems = ok, rc, error, list(problems)
        self.output, self.log = list(output), "console.log"


@pytest.fixture
def step_env(tree, monkeypatch):
    kit, make = tree
    ids = make(["good", "bad"])
    from forkkit.guest import guesttests
    from forkkit.verify import kernel
    calls = []

    class Built:
        image = "bzImage"
        image_sha256 = "5" * 64

    def fake_build(rev, flavour, do_patchcheck=True, prog=None):
        calls.append(("build", rev, flavour, do_patchcheck))
        if calls_mode.get("build_fails"):
            raise ForkError("build of %s failed:\nfs/ext2/balloc.c:1: error: boom" % rev[:12])
        return Built()

    def fake_guest(kernel, script, disks, timeout=600, prog=None, log=None, label="",
                   append="", cache="unsafe", kvm=False):
        assert not kvm          # no image in the store: KVM not probed, TCG
        calls.append(("boot", kernel, script, tuple(disks), timeout))
        boot = calls_mode.get("boot", Boot(output=["RESULT prog=fsreport bfree=1 ffree=2"]))
        boot.log = log
        with open(log, "w") as fh:
            fh.write("FORK-GUEST-START\n")
        return boot

    def fake_verify(img, reports=(), log=None, need_statfs=True, repair=False):
        calls.append(("fsck", img, tuple(tuple(sorted(r.items())) for r in reports)))
        err = calls_mode.get("fsck")
        return {"e2fsck": ("FAIL", err) if err else ("pass", "clean"),
                "counts": ("pass", "equal")}

    calls_mode = {}
    monkeypatch.setattr(cmd_bisect, "build", fake_build)
    monkeypatch.setattr(kernel, "run_guest", fake_guest)
    monkeypatch.setattr(guesttests, "verify_image", fake_verify)
    monkeypatch.setattr(guesttests, "make_image", lambda *a, **k: calls.append(("mkfs",) + a))
    monkeypatch.setenv("FORK_BISECT_STEPS", str(kit.tmp / "steps.jsonl"))
    return ids[1], calls, calls_mode


def step(commit, test="seed"):
    return cmd_bisect.real_step(commit, test, "base", 77, cmd_bisect.Progress("t"))


def test_step_good(step_env):
    commit, calls, mode = step_env
    assert step(commit) == 0
    assert calls[0] == ("build", commit, "base", False)
    kinds = [c[0] for c in calls]
    assert kinds == ["build", "mkfs", "boot", "fsck"]
    boot = calls[2]
    assert "seedload" in boot[2] and "fsreport /mnt" in boot[2] and boot[4] == 77
    assert calls[3][2] == ((("bfree", "1"), ("ffree", "2"), ("prog", "fsreport")),)


def test_step_build_failure_is_skip(step_env):
    commit, calls, mode = step_env
    mode["build_fails"] = True
    assert step(commit) == 125
    assert [c[0] for c in calls] == ["build"]


def test_step_guest_failure_is_bad(step_env):
    commit, calls, mode = step_env
    mode["boot"] = Boot(ok=False, rc=1)
    assert step(commit) == 1
    mode["boot"] = Boot(ok=False, rc=0, problems=["EXT2-fs (vda): error: x"])
    assert step(commit, "smoke") == 1


def test_step_fsck_failure_is_bad(step_env):
    commit, calls, mode = step_env
    mode["fsck"] = "e2fsck -fn exit 4: Free blocks count wrong for group #0"
    assert step(commit) == 1


def test_step_that_cannot_boot_anything_stops_the_bisect(step_env, monkeypatch):
    commit, calls, mode = step_env
    import argparse
    from forkkit.verify import kernel

    def no_qemu(*a, **k):
        raise ForkError("qemu-system-x86_64 not found: run `apt-get install qemu-system-x86`")
    monkeypatch.setattr(kernel, "run_guest", no_qemu)
    monkeypatch.delenv("FORK_BISECT_FAKE_STEP")
    args = argparse.Namespace(good=commit, test="seed", config="base", timeout=5)
    assert cmd_bisect.step(args) == 128
    steps = cmd_bisect.read_steps(os.environ["FORK_BISECT_STEPS"])
    assert steps[-1]["verdict"] == "error" and "qemu-system-x86_64 not found" in \
        steps[-1]["reason"]


# ------------------------------------------------- the real thing

HARMLESS = "/* fork kit bisect test: harmless change %d */\n"
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.skipif(os.environ.get("FORK_INTEGRATION") != "1",
                    reason="builds kernels and boots QEMU: set FORK_INTEGRATION=1")
def test_injected_fault_real(kernel_trees):
    """On the real kernel tree (FORK_KTREE / work/linux, distro/6.12):
    harmless commit, tests/data/fault-bfree.patch, harmless commit, on a
    scratch branch; `tools/fork bisect distro/6.12 <branch> --test seed`
    must name exactly the fault commit.  Two builds and two guest runs."""
    from forkkit.core.paths import ktree
    k = ktree()
    branch = "refs/heads/scratch/bisect-fault"

    def git(*args, env=None, input=None):
        proc = subprocess.run(["git"] + list(args), cwd=k, capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})), input=input)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout.strip()

    base = git("rev-parse", "--verify", "refs/heads/distro/6.12")
    assert not subprocess.run(["git", "rev-parse", "-q", "--verify", branch], cwd=k,
                              capture_output=True).stdout.strip(), "%s exists" % branch
    ident = {"GIT_AUTHOR_NAME": "Fork Kit Tests", "GIT_AUTHOR_EMAIL": "fork-kit@localhost",
             "GIT_AUTHOR_DATE": "1735689600 +0000", "GIT_COMMITTER_NAME": "Fork Kit Tests",
             "GIT_COMMITTER_EMAIL": "fork-kit@localhost", "GIT_COMMITTER_DATE": "1735689600 +0000"}
    tmp = Path(k) / ".git" / ("fork-bisect-test-%d" % os.getpid())
    tmp.mkdir()
    index = {"GIT_INDEX_FILE": str(tmp / "index")}
    commits = []
    try:
        git("read-tree", base, env=index)
        prev = base
        for n, what in enumerate(["fs/ext2/file.c", DATA / "fault-bfree.patch", "fs/ext2/dir.c"]):
            if isinstance(what, Path):
                git("apply", "--cached", str(what), env=index)
                msg = "ext2: inject a free-blocks miscount (bisect test fault)"
            else:
                text = git("show", "%s:%s" % (base, what)) + "\n" + HARMLESS % (n + 1)
                blob = git("hash-object", "-w", "--stdin", input=text)
                git("update-index", "--cacheinfo", "100644,%s,%s" % (blob, what), env=index)
                msg = "ext2: harmless change %d (bisect test)" % (n + 1)
            tree = git("write-tree", env=index)
            prev = git("commit-tree", tree, "-p", prev, "-m", msg, env=ident)
            commits.append(prev)
        git("update-ref", branch, prev)
        t0 = time.monotonic()
        proc = subprocess.run([PYTHON, str(FORK), "bisect", base, branch, "--test", "seed"],
                              capture_output=True, text=True, timeout=4 * 3600)
        sys.stderr.write(proc.stderr[-6000:])
        print(proc.stdout)
        print("bisect took %.0fs" % (time.monotonic() - t0))
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert "\nfirst bad commit: %s\n" % commits[1] in proc.stdout
        steps = rows(proc.stdout)
        assert steps.get(commits[1][:12]) == "bad"
        assert steps.get(commits[0][:12]) == "good"
    finally:
        subprocess.run(["git", "update-ref", "-d", branch], cwd=k)
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def test_step_on_a_disk_without_host_counts_is_good(step_env, monkeypatch):
    """A guest test on another filesystem (ufs: no host checker, both host
    cells n/a) is judged by the guest test alone: good when it passes."""
    commit, calls, mode = step_env
    from forkkit.guest import guesttests
    monkeypatch.setattr(guesttests, "verify_other", lambda img, fs, log=None: {
        "e2fsck": ("n/a", "ufs: no checker"), "counts": ("n/a", "ufs: none")})
    assert step(commit, "ufs-dirsync") == 0
    mode["boot"] = Boot(ok=False, rc=1)
    assert step(commit, "ufs-dirsync") == 1
