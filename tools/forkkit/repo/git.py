"""git in the kernel tree."""

import os

from ..core.errors import ForkError
from ..core.paths import ktree
from ..core.proc import run
from .series import setup_hint


def git(args, cwd=None, env=None, check=True, input=None):
    """Run git in the kernel tree (or cwd); return stdout stripped."""
    proc = run(["git"] + list(args), cwd=cwd or ktree(), env=env, check=check, input=input)
    return proc.stdout.strip() if proc.stdout is not None else ""


def git_ok(args, cwd=None):
    proc = run(["git"] + list(args), cwd=cwd or ktree(), check=False)
    return proc.returncode == 0


def rev_parse(rev, cwd=None):
    proc = run(["git", "rev-parse", "--verify", "-q", rev + "^{commit}"], cwd=cwd or ktree(),
               check=False)
    if proc.returncode != 0:
        try:
            hint = setup_hint(rev)
        except ForkError:
            hint = "run `tools/fork import` and `tools/fork branches` first"
        raise ForkError("unknown revision '%s' in the kernel tree %s: see `git -C %s branch -a` "
                        "(%s)" % (rev, cwd or ktree(), cwd or ktree(), hint))
    return proc.stdout.strip()


def require_ktree():
    if not os.path.isdir(os.path.join(ktree(), ".git")):
        raise ForkError("no kernel tree at %s: run `tools/fork import` first" % ktree())
    return ktree()


def tree_is_dirty(path):
    out = git(["status", "--porcelain", "--untracked-files=no"], cwd=path)
    return out


def require_clean(path, what="kernel work tree"):
    dirty = tree_is_dirty(path)
    if dirty:
        lines = dirty.splitlines()
        raise ForkError("%s %s has uncommitted changes (%d files, e.g. %s): commit or "
                        "`git stash` them first; nothing was changed"
                        % (what, path, len(lines), lines[0].strip()))
