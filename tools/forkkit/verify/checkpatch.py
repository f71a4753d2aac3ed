"""checkpatch.pl --strict on one commit, with that commit's tree as the
kernel tree (check), or on a mail (export)."""

import os
import shutil
import subprocess
import tempfile

from ..build.make import checkout
from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, wpath
from ..core.proc import call
from ..repo.git import git


# checkpatch as a maintainer with a full tree runs it.  The imported
# snapshot has no upstream history, so cited commits cannot be looked up.
# Run from a directory without .git (GIT_DIR unset), checkpatch does not
# try: the GIT_COMMIT_ID check then compares each citation with itself, which
# enforces its form `commit <12+ hex> ("<title>")` (run inside a git tree
# that lacks the commit, it would skip that check silently).  Without a
# repository every citation also gets UNKNOWN_COMMIT_ID, which says nothing
# about the patch, so that one warning is ignored.  --root gives checkpatch
# the whole tree (spelling list, MAINTAINERS, const structs, ...).
CHECKPATCH_ARGS = ["--strict", "--color=never", "--ignore", "UNKNOWN_COMMIT_ID"]


def run_checkpatch_pl(root, patch):
    """checkpatch.pl of `root` on `patch` (text) as described above;
    returns the CompletedProcess."""
    script = os.path.join(root, "scripts", "checkpatch.pl")
    if not os.path.isfile(script):
        raise ForkError("%s has no scripts/checkpatch.pl" % root)
    nogit = tempfile.mkdtemp(prefix="checkpatch-", dir=ensure_dir(wpath("tmp")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        # proc.call(): an interrupt is passed on to it (core/proc.py)
        return call(["perl", script] + CHECKPATCH_ARGS + ["--root=%s" % root, "-"],
                    input=patch, cwd=nogit, env=env, text=True,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        shutil.rmtree(nogit, ignore_errors=True)


def checkpatch(commit, src, log):
    """checkpatch.pl --strict on one commit, with `src` (a checkout of it)
    as the tree; return (cell, detail)."""
    parents = git(["rev-list", "--parents", "-n", "1", commit]).split()[1:]
    if not parents:
        return "n/a", "base snapshot"
    patch = git(["format-patch", "-1", "--stdout", commit])
    try:
        proc = run_checkpatch_pl(src, patch + "\n")
    except ForkError as exc:
        return "FAIL", str(exc)
    with open(log, "a") as fh:
        fh.write("$ checkpatch.pl %s %s\n%s%s\n" % (" ".join(CHECKPATCH_ARGS), commit,
                                                   proc.stdout, proc.stderr))
    summary = [l for l in proc.stdout.splitlines() if l.startswith("total:")]
    if proc.returncode != 0:
        problems = [l for l in proc.stdout.splitlines() if l.startswith(("ERROR:", "WARNING:",
                                                                          "CHECK:"))]
        return "FAIL", "; ".join(([summary[0]] if summary else []) + problems[:5]) \
            or proc.stdout.strip()[-300:]
    return "pass", summary[0] if summary else ""


def run_checkpatch(commit, log):
    """checkpatch() of `commit` in the build worktree, under the build lock."""
    with Lock("build"):
        return checkpatch(commit, checkout(commit, log), log)
