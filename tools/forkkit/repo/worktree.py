"""The kit's own worktrees of the kernel tree: the build worktree
(work/src), the rebase worktree (work/rebase/tree), the bisect worktree
(work/bisect) and temporary sparse checkouts of a base tree (MAINTAINERS,
export).  The user's checkout is never touched."""

import hashlib
import os
import re
import shutil
import sys
import tempfile

from ..core.errors import ForkError
from ..core.paths import ensure_dir, ktree, wpath
from ..core.proc import run
from .git import git


def is_worktree(path):
    return os.path.exists(os.path.join(path, ".git"))


def add(path, commit, what, checkout=True, log=None, prog=None):
    """Make `path` a worktree of the kernel tree, detached at `commit`
    (without checking files out unless `checkout`).  Stale worktree
    entries are pruned first; an empty directory left at `path` is taken
    over, one holding files is refused."""
    if prog:
        prog.say("creating the %s worktree %s" % (what, path))
    run(["git", "worktree", "prune"], cwd=ktree(), log=log)
    if os.path.isdir(path) and not os.listdir(path):
        os.rmdir(path)
    if os.path.exists(path):
        raise ForkError("%s exists but is not a git worktree: move it away (the %s worktree "
                        "is made there)" % (path, what))
    run(["git", "worktree", "add", "-f", "--detach"] + ([] if checkout else ["--no-checkout"])
        + [path, commit], cwd=ktree(), log=log)
    return path


# Written in the worktree's git directory while the kit checks a commit out
# there (the commit, one line), removed when the checkout is done: a
# checkout that was interrupted (Ctrl-C, a killed run) leaves it behind,
# with the files half switched.
CHECKOUT_MARK = "fork-checkout"


def _mark_path(path):
    return os.path.join(git(["rev-parse", "--absolute-git-dir"], cwd=path), CHECKOUT_MARK)


def _checkout(path, commit, log=None, force=False):
    mark = _mark_path(path)
    with open(mark, "w") as fh:
        fh.write(commit + "\n")
    run(["git", "checkout", "-q"] + (["-f"] if force else []) + ["--detach", commit],
        cwd=path, log=log)
    os.remove(mark)


def _paths(args, path):
    """The NUL-separated paths git prints for `args` (diff -z)."""
    out = run(["git"] + args, cwd=path).stdout
    return set(p for p in out.split("\0") if p)


def _blob_id(path, rel, fmt):
    """The id git gives the file `rel` of the worktree `path` as it is on
    disk (a symlink's target, else its bytes); None when there is none."""
    full = os.path.join(path, rel)
    if os.path.islink(full):
        data = os.fsencode(os.readlink(full))
    elif os.path.isfile(full):
        with open(full, "rb") as fh:
            data = fh.read()
    else:
        return None
    return hashlib.new(fmt, b"blob %d\0" % len(data) + data).hexdigest()


def _only_checkout_wrote(path, target):
    """True when every file of `path` that differs from HEAD, and every
    file on disk where `target` adds one, holds exactly `target`'s
    version (or is absent where `target` has none): what an interrupted
    `git checkout target` leaves, and nothing a person wrote.  One file
    may hold only the start of `target`'s version: the file git was
    writing when it was stopped (_being_written())."""
    changed = _paths(["diff", "--name-only", "--no-renames", "-z", "HEAD"], path)
    switched = _paths(["diff", "--name-only", "--no-renames", "-z", "HEAD", target], path)
    added = _paths(["diff", "--name-only", "--no-renames", "--diff-filter=A", "-z",
                    "HEAD", target], path)
    check = changed | {p for p in added
                       if os.path.lexists(os.path.join(path, p))}
    if not check:
        return True
    fmt = git(["rev-parse", "--show-object-format"], cwd=path)
    tree = {}
    for entry in run(["git", "ls-tree", "-r", "-z", "--full-tree", target],
                     cwd=path).stdout.split("\0"):
        if entry:
            meta, rel = entry.split("\t", 1)
            tree[rel] = meta.split()[0], meta.split()[2]
    partial = []
    for rel in check:
        mode, blob = tree.get(rel, (None, None))
        if _blob_id(path, rel, fmt) == blob:
            continue
        if rel in switched and mode in ("100644", "100755") and \
                _being_written(path, rel, blob):
            partial.append(rel)
            continue
        return False
    if not partial:
        return True
    # git (one checkout worker, its default) writes the files in index
    # order, one at a time: the file it was writing is the only one that
    # holds part of its version, and no file after it holds its version
    written = [os.fsencode(p) for p in check
               if p in tree and os.path.lexists(os.path.join(path, p))]
    return len(partial) == 1 and max(written) == os.fsencode(partial[0])


def _being_written(path, rel, blob):
    """True when the file `rel` is a regular file holding the first bytes
    of `blob` (none, or some, not all): what git had written of it when
    the checkout was stopped.  Writing `blob` over it loses no byte."""
    full = os.path.join(path, rel)
    if os.path.islink(full) or not os.path.isfile(full):
        return False
    size = os.path.getsize(full)
    proc = run(["git", "cat-file", "-s", blob], cwd=path, check=False)
    if proc.returncode != 0 or size >= int(proc.stdout.strip() or 0):
        return False
    with open(full, "rb") as fh:
        data = fh.read()
    # input=b"": the blob comes back as bytes, not decoded text
    proc = run(["git", "cat-file", "blob", blob], cwd=path, check=False, input=b"")
    return proc.returncode == 0 and proc.stdout.startswith(data)


def _finish_interrupted(path, what, log=None, prog=None):
    """Finish a checkout of the kit's in `path` that was interrupted (its
    mark is there), forcing it over what it half wrote: only when the
    worktree holds nothing but that (_only_checkout_wrote()); otherwise
    the changes are left for ensure() to refuse, whoever made them.  A
    mark naming a commit the tree no longer has is dropped once the
    worktree is clean."""
    mark = _mark_path(path)
    try:
        with open(mark) as fh:
            target = fh.read().strip()
    except FileNotFoundError:
        return
    if git(["cat-file", "-t", target], cwd=path, check=False) != "commit":
        if not git(["status", "--porcelain", "--untracked-files=no"], cwd=path):
            os.remove(mark)
        return
    if not _only_checkout_wrote(path, target):
        return
    lock = os.path.join(os.path.dirname(mark), "index.lock")
    if os.path.exists(lock):
        raise ForkError("the %s worktree %s is half switched to %s by a checkout that was "
                        "interrupted, and git's %s is left: remove it if no git runs there, "
                        "and run the command again (the kit then finishes the checkout)"
                        % (what, path, target[:12], lock))
    note = ("finishing the checkout of %s in the %s worktree %s, which was interrupted"
            % (target[:12], what, path))
    if prog:
        prog.say(note)
    else:
        print("fork: " + note, file=sys.stderr, flush=True)
    _checkout(path, target, log=log, force=True)


def ensure(path, commit, what, log=None, prog=None):
    """The kit's own worktree `path` with `commit` checked out, detached:
    made when missing (add()); a checkout of the kit's that was
    interrupted is finished first when the worktree holds nothing else;
    refused when it has local changes (it belongs to the kit: work
    is done in the kernel tree)."""
    if not is_worktree(path):
        return add(path, commit, what, log=log, prog=prog)
    _finish_interrupted(path, what, log=log, prog=prog)
    dirty = git(["status", "--porcelain", "--untracked-files=no"], cwd=path)
    if dirty:
        raise ForkError("the %s worktree %s has local changes (%s): it belongs to the fork "
                        "kit; commit your work in %s instead; `git -C %s reset --hard` drops "
                        "them" % (what, path, dirty.splitlines()[0].strip(), ktree(), path))
    if git(["rev-parse", "HEAD"], cwd=path) != commit:
        if prog:
            prog.say("checking out %s in %s" % (commit[:12], path))
        _checkout(path, commit, log=log)
    return path


def remove(path):
    """Remove the worktree `path` and its directory."""
    run(["git", "worktree", "remove", "--force", "--force", path], cwd=ktree(), check=False)
    shutil.rmtree(path, ignore_errors=True)
    run(["git", "worktree", "prune"], cwd=ktree(), check=False)


# -- a sparse, temporary checkout of the base tree ---------------------------

# What checkpatch.pl and get_maintainer.pl need of a tree besides the files a
# series touches: top_of_kernel_tree() wants these directories to exist.
TOP_DIRS = ["Documentation", "arch", "drivers", "fs", "init", "ipc", "kernel", "lib"]
FULL_DIRS = ["scripts", "include", "LICENSES"]


def _cone_escape(path):
    return re.sub(r"([\\*?\[\]!#])", r"\\\1", path)


def cone_patterns(full_dirs, top_dirs=TOP_DIRS):
    """Sparse-checkout (cone) patterns: every top-level file, the files
    directly in `top_dirs` and in the parents of `full_dirs`, and all of
    `full_dirs`."""
    full = set(d.strip("/") for d in full_dirs if d.strip("/"))
    full = {d for d in full if not any(d.startswith(o + "/") for o in full if o != d)}
    parents = set(top_dirs)
    for d in full:
        parts = d.split("/")
        for i in range(1, len(parts)):
            parents.add("/".join(parts[:i]))
    parents = {p for p in parents
               if not any(p == f or p.startswith(f + "/") for f in full)}
    lines = ["/*", "!/*/"]
    for d in sorted(parents | full, key=lambda s: s.split("/")):
        lines.append("/%s/" % _cone_escape(d))
        if d in parents:
            lines.append("!/%s/*/" % _cone_escape(d))
    return "".join(line + "\n" for line in lines)


class BaseTree:
    """A temporary, sparse worktree of `commit` (add() without a checkout,
    then a cone sparse checkout).

    `dirs` are the directories (complete, recursively) the caller needs on top
    of the top-level files, scripts/ and include/.  Use as a context manager;
    the worktree is removed on exit.  `git(args)` runs git inside it with the
    sparse-checkout settings.
    """

    def __init__(self, commit, dirs=(), prefix="base-"):
        self.commit = commit
        self.dirs = list(dirs)
        self.prefix = prefix
        self.tmp = None
        self.path = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix=self.prefix, dir=ensure_dir(wpath("tmp")))
        self.path = os.path.join(self.tmp, "linux")
        try:
            add(self.path, self.commit, "sparse base", checkout=False)
            gitdir = git(["rev-parse", "--absolute-git-dir"], cwd=self.path)
            ensure_dir(os.path.join(gitdir, "info"))
            with open(os.path.join(gitdir, "info", "sparse-checkout"), "w") as fh:
                fh.write(cone_patterns(FULL_DIRS + self.dirs))
            self.git(["reset", "-q", "--hard", self.commit])
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def git(self, args, check=True, input=None, env=None):
        return git(["-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true",
                    "-c", "advice.updateSparsePath=false"] + list(args),
                   cwd=self.path, check=check, input=input, env=env)

    def reset(self):
        """Back to the pristine base commit (after a `git am`)."""
        self.git(["am", "--abort"], check=False)
        self.git(["reset", "-q", "--hard", self.commit])
        self.git(["clean", "-q", "-f", "-d", "-x"])

    def __exit__(self, *exc):
        remove(self.path)
        shutil.rmtree(self.tmp, ignore_errors=True)
