"""The bisect of a range (``tools/fork bisect`` describes it for the
user): `git bisect run` in the bisect worktree, each step a `tools/fork
bisect --step` process that builds, boots and tests one commit, the end
points tested first, and the report."""

import json
import os
import re
import subprocess
import sys

from ..build.kbuild import build
from ..build.make import check_deps, src_tree
from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import fork_entry, ktree, new_log, repo_root, wpath
from ..core.progress import Progress
from ..core.proc import pass_on, run, which
from ..guest import guesttests
from ..guest.qemu import qemu_binary
from ..repo import worktree
from ..repo.git import git, git_ok, require_ktree, rev_parse, tree_is_dirty
from . import kernel

SKIP, BAD, GOOD, ABORT = 125, 1, 0, 128

def tests():
    return guesttests.TESTS


def bisect_tree():
    return wpath("bisect")


# ---------------------------------------------------------------- one step

def record(verdict, commit, reason, log=None):
    path = os.environ.get("FORK_BISECT_STEPS")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"commit": commit, "verdict": verdict, "reason": reason,
                                 "log": log, "phase": os.environ.get("FORK_BISECT_PHASE",
                                                                     "bisect")}) + "\n")


def verdict_of(rc):
    if rc == GOOD:
        return "good"
    if rc == SKIP:
        return "skip"
    if 0 < rc < 128:
        return "bad"
    return "error"


def fake_step(prog, commit):
    env = dict(os.environ, FORK_BISECT_COMMIT=commit)
    try:
        rc = subprocess.call([prog, commit], env=env)
    except OSError as exc:
        record("error", commit, "cannot run %s: %s" % (prog, exc))
        return ABORT
    record(verdict_of(rc), commit, "%s exited %d" % (os.path.basename(prog), rc))
    return rc


def real_step(commit, test, flavour, timeout, prog):
    try:
        res = build(commit, flavour, do_patchcheck=False, prog=prog)
    except ForkError as exc:
        first = str(exc).splitlines()[0]
        prog.say("%s does not build: skip (%s)" % (commit[:12], first))
        record("skip", commit, "does not build: %s" % first)
        return SKIP
    log = new_log("bisect-%s" % commit[:12])
    # A ForkError from here on (no QEMU, no initramfs, ...) is not the
    # commit's fault: step() turns it into exit 128, which ends the bisect.
    out = kernel.run_test(res.image, test, timeout, prog, log, "bisect", flavour=flavour)
    failed = [c for c in ("boot", "test", "e2fsck", "counts")
              if not kernel.cells_pass({c: out["cells"][c]})]
    if failed:
        # a kernel that does not boot, hangs, reports a problem, fails the
        # guest test or leaves a damaged disk or wrong counts is bad
        reason = "; ".join("%s: %s" % (c, str(out["details"].get(c, "not run")).splitlines()[0])
                           for c in failed)
        record("bad", commit, reason, out["details"].get("boot"))
        prog.say("%s is bad: %s" % (commit[:12], reason))
        return BAD
    record("good", commit, "%s test, e2fsck and counters clean (image %s)"
           % (test, res.image_sha256[:12]), out["details"].get("boot"))
    prog.say("%s is good" % commit[:12])
    return GOOD


def step(args):
    """Test one commit; the exit status is for git bisect run."""
    prog = Progress("bisect-step")
    # git bisect run may export its own repository variables: this step finds
    # its trees (kernel tree, build worktree) by path.
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"):
        os.environ.pop(var, None)
    commit = None
    try:
        if args.good:
            commit = rev_parse(args.good)
        else:
            commit = git(["rev-parse", "--verify", "-q", "BISECT_HEAD"], cwd=os.getcwd(),
                         check=False) or git(["rev-parse", "HEAD"], cwd=os.getcwd())
        prog.say("testing %s %s" % (commit[:12], git(["log", "-1", "--format=%s", commit])))
        fake = os.environ.get("FORK_BISECT_FAKE_STEP")
        if fake:
            return fake_step(fake, commit)
        return real_step(commit, args.test, args.config, args.timeout, prog)
    except BaseException as exc:  # noqa: B902 - any surprise must stop the bisect
        if isinstance(exc, SystemExit):
            raise
        record("error", commit or "?", "%s: %s" % (type(exc).__name__, exc))
        print("fork bisect --step: cannot test %s: %s\nstopping the bisect (exit %d)"
              % (commit or "?", exc, ABORT), file=sys.stderr)
        return ABORT


# ---------------------------------------------------------------- the bisect

def step_cmd(args):
    return ["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
            fork_entry(), "bisect", "--step", "--test", args.test, "--config", args.config,
            "--timeout", str(args.timeout)]


def step_env(steps):
    env = dict(os.environ)
    env.update({"FORK_WORKDIR": wpath(), "FORK_KTREE": ktree(), "FORK_REPO": repo_root(),
                "FORK_BISECT_STEPS": steps})
    return env


def setup_worktree(commit, prog):
    """work/bisect: a worktree without a checkout (bisect runs --no-checkout)."""
    wt = bisect_tree()
    if not worktree.is_worktree(wt):
        worktree.add(wt, commit, "bisect", checkout=False, prog=prog)
    elif git_ok(["bisect", "log"], cwd=wt):
        prog.say("ending a stale bisect in %s" % wt)
        bisect_reset(wt)
    return wt


def bisect_reset(wt):
    proc = run(["git", "bisect", "reset"], cwd=wt, check=False)
    if proc.returncode != 0:
        raise ForkError("`git bisect reset` in %s failed: %s"
                        % (wt, (proc.stdout + proc.stderr).strip()))


def tee(cmd, cwd, env, log):
    """Run cmd; its output goes to stderr and the log; return (rc, text)."""
    lines = []
    with open(log, "a") as fh:
        fh.write("$ %s\n" % " ".join(cmd))
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        try:
            for line in proc.stdout:
                sys.stderr.write(line)
                sys.stderr.flush()
                fh.write(line)
                lines.append(line)
            rc = proc.wait()
        except KeyboardInterrupt as exc:
            pass_on(proc, exc)      # SIGTERM/SIGHUP too, and git ends as it must
            raise
    if lines and not lines[-1].endswith("\n"):
        sys.stderr.write("\n")
    return rc, "".join(lines)


def read_steps(path):
    out = []
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def steps_table(steps):
    lines = ["%-12s  %-7s  %-44s  %s" % ("commit", "verdict", "subject", "why")]
    for s in steps:
        subject = git(["log", "-1", "--format=%s", s["commit"]], check=False) \
            if s["commit"] != "?" else ""
        why = s["reason"] + (" (end point check)" if s.get("phase") == "verify" else "")
        lines.append("%-12s  %-7s  %-44s  %s" % (s["commit"][:12], s["verdict"], subject[:44],
                                                 why))
    return "\n".join(lines)


def verify_ends(args, good, bad, steps, log, prog):
    """Test BAD (it must fail) and GOOD (it must pass) before the bisect."""
    env = dict(step_env(steps), FORK_BISECT_PHASE="verify")
    does = {"good": "passes the %s test" % args.test, "bad": "fails the %s test" % args.test,
            "skip": "does not build"}
    for what, commit, want in (("BAD", bad, "bad"), ("GOOD", good, "good")):
        prog.say("end point check: testing %s %s" % (what, commit[:12]))
        rc, _ = tee(step_cmd(args) + [commit], ktree(), env, log)
        got = verdict_of(rc)
        if got == "error":
            raise ForkError("%s %s could not be tested (step exit %d, log: %s): no bisect was "
                            "started" % (what, commit[:12], rc, log))
        if got != want:
            raise ForkError("%s %s %s (step exit %d): give a %s that %s; no bisect was started"
                            % (what, commit[:12], does[got], rc, what,
                               "fails it" if want == "bad" else "passes it"))


def parse_result(text):
    m = re.search(r"^([0-9a-f]{40}) is the first bad commit", text, re.M)
    if m:
        return m.group(1), []
    m = re.search(r"The first bad commit could be any of:\n((?:[0-9a-f]{40}\n)+)", text)
    if m:
        return None, m.group(1).split()
    return None, None


def run_bisect(args):
    prog = Progress("bisect")
    require_ktree()
    good, bad = rev_parse(args.good), rev_parse(args.bad)
    if good == bad:
        raise ForkError("GOOD and BAD are the same commit %s" % good[:12])
    if not git_ok(["merge-base", "--is-ancestor", good, bad]):
        raise ForkError("GOOD %s is not an ancestor of BAD %s: give an older good commit"
                        % (args.good, args.bad))
    if args.test not in tests():
        raise ForkError("unknown guest test %r: choose one of %s"
                        % (args.test, ", ".join(sorted(tests()))))
    if not os.environ.get("FORK_BISECT_FAKE_STEP"):
        check_deps()
        qemu_binary()
        which("e2fsck", "e2fsprogs")
        which("mke2fs", "e2fsprogs")
        src = src_tree()
        if os.path.exists(os.path.join(src, ".git")) and tree_is_dirty(src):
            raise ForkError("the build worktree %s has local changes: every step would be "
                            "skipped; `git -C %s reset --hard` first" % (src, src))
    n = len(git(["rev-list", "%s..%s" % (good, bad)]).split())
    log = new_log("bisect")
    steps = log[:-len(".log")] + ".steps.jsonl"
    prog.say("bisecting %d commits %s..%s with the %s test (log: %s)"
             % (n, good[:12], bad[:12], args.test, log))
    with Lock("bisect"):
        if args.verify:
            verify_ends(args, good, bad, steps, log, prog)
        wt = setup_worktree(good, prog)
        try:
            run(["git", "bisect", "start", "--no-checkout", bad, good], cwd=wt, log=log)
            rc, text = tee(["git", "bisect", "run"] + step_cmd(args), wt, step_env(steps), log)
            bisect_log = run(["git", "bisect", "log"], cwd=wt, check=False).stdout or ""
        finally:
            bisect_reset(wt)
            prog.say("`git bisect reset` done in %s" % wt)
    with open(log, "a") as fh:
        fh.write("$ git bisect log\n%s" % bisect_log)
    first, candidates = parse_result(text)
    print("bisect %s..%s, %s test, config %s: %d commits, %d steps"
          % (good[:12], bad[:12], args.test, args.config, n, len(read_steps(steps))))
    print(steps_table(read_steps(steps)))
    print("full log: %s" % log)
    if first == bad and not any(s["commit"] == bad and s["verdict"] == "bad"
                                for s in read_steps(steps)):
        raise ForkError("git bisect named BAD %s, which no step tested, as the first bad "
                        "commit: every commit it tested passed; check that BAD fails (bisect "
                        "without --no-verify)" % bad[:12])
    if first:
        print("\nfirst bad commit: %s\n" % first)
        print(git(["show", "--stat", "--no-color", first]))
        return 0
    if candidates:
        print("\nthe first bad commit is one of these (the others between them were skipped, "
              "they did not build):")
        for c in candidates:
            print("  %s" % git(["log", "-1", "--format=%h %s", c]))
        return 1
    raise ForkError("git bisect run did not finish (exit %d):\n%s\nfull log: %s"
                    % (rc, "\n".join(text.strip().splitlines()[-8:]), log))

