"""Laying out a stored series as stacked topic branches (lay_out) without
a work tree, and the refs that record what was laid out: refs/fork/laid/
(the commits, so that a later lay-out moves only its own), refs/fork/prev/
and refs/fork/stored/series/<ver> (the stored files, for save).  What the
branches are and when one is moved: the branches verb's help
(verbs/branches.py)."""

import os
import shutil
import tempfile

from ..core.errors import ForkError
from ..core.paths import ensure_dir, ktree, repo_root, wpath
from ..core.progress import Progress
from ..core.proc import run
from . import series as series_mod
from .git import git, require_clean, require_ktree, rev_parse
from .patchfile import mailinfo, patch_id_of_commit, patch_id_of_file, touched_files

LAID = "refs/fork/laid/"
PREV = "refs/fork/prev/"
STORED = "refs/fork/stored/"


def apply_patch(parent, patch):
    """Commit `patch` on top of `parent` without a work tree; return the id."""
    author, email, date, message = mailinfo(patch)
    tmp = tempfile.mkdtemp(prefix="apply-", dir=ensure_dir(wpath("tmp")))
    try:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(["read-tree", parent], env=env)
        proc = run(["git", "apply", "--cached", patch], cwd=ktree(), env=env, check=False)
        if proc.returncode != 0:
            raise ForkError("patch %s does not apply on %s (files: %s):\n%s\n"
                            "Fix the patch (or rebase the series with `tools/fork rebase`); "
                            "no branch was changed."
                            % (os.path.relpath(patch), parent[:12],
                               ", ".join(touched_files(patch)) or "?",
                               proc.stderr.strip()))
        tree = git(["write-tree"], env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ident = {
        "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date,
    }
    return git(["commit-tree", tree, "-p", parent, "-F", "-"], env=ident, input=message)


def apply_patches(base, patches):
    """Commit `patches` one by one on `base` (as apply_patch); return the head."""
    head = base
    for patch in patches:
        head = apply_patch(head, patch)
    return head


def branch_tip(branch):
    return git(["rev-parse", "--verify", "-q", "refs/heads/" + branch], check=False) or None


def foreign_commits(branch, base, known_ids):
    """Commits on `branch` (not in `base`) that the stored series lacks."""
    tip = branch_tip(branch)
    if tip is None:
        return []
    laid = git(["rev-parse", "--verify", "-q", LAID + branch], check=False)
    if laid == tip:
        return []
    out = []
    for c in git(["rev-list", "--reverse", tip, "--not", base]).split():
        if patch_id_of_commit(c) not in known_ids:
            out.append(c)
    return out


def foreign_report(branches, base, known_ids):
    """One line per commit on `branches` that the stored series lacks."""
    return ["  %s: %s %s" % (branch, c[:12], git(["log", "-1", "--format=%s", c]))
            for branch in branches for c in foreign_commits(branch, base, known_ids)]


def checked_out_branch():
    return git(["symbolic-ref", "-q", "HEAD"], check=False)


def move_branch(branch, new, log_msg):
    """Point `branch` at `new`, keeping the old tip under refs/fork/prev/."""
    old = branch_tip(branch)
    if old == new:
        git(["update-ref", LAID + branch, new])
        return False
    if old:
        git(["update-ref", PREV + branch, old])
    if checked_out_branch() == "refs/heads/" + branch:
        require_clean(ktree())
        git(["reset", "-q", "--keep", new])
    else:
        git(["update-ref", "-m", log_msg, "refs/heads/" + branch, new] + ([old] if old else []))
    git(["update-ref", LAID + branch, new])
    return True


def stored_blobs(series, write=False):
    """{file name: blob id} of the series file and the patches it lists, as
    they are in the series directory now (written to the kernel tree's
    object store when `write`)."""
    names = [n for n in ["series"] + [os.path.basename(p) for p in series.patches]
             if os.path.isfile(os.path.join(series.path, n))]
    if not names:
        return {}
    ids = git(["hash-object", "--no-filters"] + (["-w"] if write else []) + ["--"]
              + [os.path.join(series.path, n) for n in names]).split()
    return dict(zip(names, ids))


def record_stored(series):
    """Record the stored files the branches of `series` are laid out from."""
    entries = "".join("100644 blob %s\t%s\0" % (blob, name)
                      for name, blob in sorted(stored_blobs(series, write=True).items()))
    git(["update-ref", STORED + series.head_branch, git(["mktree", "-z"], input=entries)])


def recorded_stored(series):
    """{file name: blob id} that the last lay-out of `series` recorded, or
    None when there is no record (branches laid out by an older kit)."""
    tree = git(["rev-parse", "--verify", "-q", STORED + series.head_branch], check=False)
    if not tree:
        return None
    entries = [e for e in git(["ls-tree", "-z", tree]).split("\0") if e]
    return {e.split("\t", 1)[1]: e.split()[2] for e in entries}


def require_own_branches(series):
    """Refuse `series` when another stored series on its major.minor has
    the same branch names (laying out one would move the other's), or
    names another snapshot of that version (the two share distro/<ver>).
    A series shares a version only under its own `branches:` name (the
    fixes series)."""
    for other in series_mod.stored_series():
        if other.path == series.path or other.kver != series.kver:
            continue
        if other.head_branch == series.head_branch:
            raise ForkError("%s/ cannot have branches of its own: %s/ is on %s too, and two "
                            "series cannot share %s (laying out one moves the other's); keep "
                            "one series per major.minor, or give one of them a `branches: NAME` "
                            "line in its base file. Nothing was changed."
                            % (series.rel, other.rel, series.package, series.head_branch))
        mine = (series.base.get("version"), series.base.get("sha256"))
        if mine != (other.base.get("version"), other.base.get("sha256")):
            raise ForkError("%s/ and %s/ share %s but name different snapshots (%s and %s): "
                            "give both base files the same version and sha256. Nothing was "
                            "changed." % (series.rel, other.rel, series.distro_branch,
                                          mine[0], other.base.get("version")))


def lay_out(series, out=print, quiet=False):
    """Create/update the branches of `series`; return the head commit."""
    prog = Progress("branches")
    require_ktree()
    require_own_branches(series)
    base = rev_parse(series.distro_branch)
    topics = series.topics()
    if not topics:
        tip = branch_tip(series.head_branch)
        if tip and tip != base:
            n = len(git(["rev-list", "%s..%s" % (base, tip)]).split())
            raise ForkError("%s/series lists no patches, so %s would move back to %s and "
                            "leave its %d commits: if the file is empty by mistake, restore it "
                            "(`git -C %s checkout HEAD -- %s/series`); to really empty the "
                            "series, `git -C %s branch -f %s %s` yourself. Nothing was changed."
                            % (series.rel, series.head_branch, series.distro_branch, n,
                               repo_root(), series.rel, ktree(), series.head_branch,
                               series.distro_branch))
    known = {patch_id_of_file(p) for p, _ in topics}
    # First refuse, before anything moves.
    problems = foreign_report([b for _, b in topics] + [series.head_branch], base, known)
    if problems:
        raise ForkError("these branches hold commits that are not in %s/, so they were left "
                        "alone:\n%s\nSave them into the repo with `tools/fork save` (from the "
                        "series branch), or keep them under another name "
                        "(`git -C %s branch keep/<name> <branch>`) and rerun. Nothing was changed."
                        % (series.rel, "\n".join(problems), ktree()))
    prev = base
    laid = []
    for patch, branch in topics:
        prev = apply_patch(prev, patch)
        laid.append((branch, prev))
    laid.append((series.head_branch, prev))
    # The checked-out branch can only move with a clean work tree: check that
    # now, before any branch moves.
    current = checked_out_branch()
    if any(current == "refs/heads/" + b and branch_tip(b) != c for b, c in laid):
        require_clean(ktree())
    for branch, commit in laid:
        moved = move_branch(branch, commit, "fork branches %s" % series.rel)
        if not quiet:
            prog.say("%-50s %s%s" % (branch, commit[:12], "" if moved else " (unchanged)"))
    record_stored(series)
    out(prev)
    return prev

