"""The patch files of a series (git format-patch mails): their bytes, the
files they touch, their author and message, their patch-id."""

import os
import shlex
import shutil
import tempfile

from ..core.errors import ForkError
from ..core.paths import ensure_dir, ktree, repo_root, wpath
from ..core.proc import run


def read_patch(path):
    """The bytes of a patch file of a series; a one-line error for a file
    that cannot be a format-patch mail (empty, CRLF line endings)."""
    with open(path, "rb") as fh:
        data = fh.read()
    rel = os.path.relpath(path, repo_root())
    restore = "git -C %s checkout HEAD -- %s" % (shlex.quote(repo_root()), shlex.quote(rel))
    if not data.strip():
        raise ForkError("%s is empty: restore it (`%s`) or take it out of the series file"
                        % (rel, restore))
    if data.split(b"\n", 1)[0].endswith(b"\r"):
        raise ForkError("%s has CRLF line endings: convert it with `dos2unix %s` (or "
                        "`sed -i 's/\\r$//' %s`) and run the command again"
                        % (rel, rel, rel))
    return data


# header lines of one file's diff that name a path (the old or the new one)
_PATH_PREFIXES = ("--- a/", "+++ b/", "rename from ", "rename to ", "copy from ",
                  "copy to ")


def touched_files(patch):
    """The paths a patch file changes, sorted: both sides of a rename or
    copy, a created or deleted file once.  Read from each file's diff
    header (its `diff --git` line up to its first hunk), so a line of the
    message or of a hunk that looks like a header counts for nothing."""
    files = set()
    in_header = False
    with open(patch, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith("diff --git "):
                in_header = True
                same = _same_path(line[len("diff --git "):])
                if same:
                    files.add(same)
            elif in_header and line.startswith(("@@", "GIT binary patch")):
                in_header = False
            elif in_header:
                for prefix in _PATH_PREFIXES:
                    if line.startswith(prefix):
                        files.add(line[len(prefix):].rstrip())
                        break
    return sorted(files)


def _same_path(rest):
    """P of a `diff --git a/P b/P` line (its rest after `diff --git `), or
    None when the two sides differ (a rename or copy names both in its
    header lines)."""
    n = (len(rest) - 5) // 2
    path = rest[2:2 + n]
    return path if n > 0 and rest == "a/%s b/%s" % (path, path) else None


def mailinfo(patch):
    """Parse a format-patch file: (author, email, date, message)."""
    tmp = tempfile.mkdtemp(prefix="mailinfo-", dir=ensure_dir(wpath("tmp")))
    try:
        msg = os.path.join(tmp, "msg")
        body = os.path.join(tmp, "patch")
        data = read_patch(patch)
        # -b: drop the "[PATCH n/m]" that format-patch (and save) put in the
        # subject, keep any other bracketed text; -k would keep "[PATCH]" in
        # the commit message, and each save would add another one.
        proc = run(["git", "mailinfo", "-b", msg, body], input=data, cwd=tmp)
        info = {}
        for line in proc.stdout.decode(errors="replace").splitlines():
            if ": " in line:
                k, v = line.split(": ", 1)
                info[k] = v
        with open(msg, errors="replace") as fh:
            text = fh.read().strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not info.get("Subject"):
        raise ForkError("%s is not a git format-patch file (no Subject:)" % patch)
    message = info["Subject"] + ("\n\n" + text if text else "") + "\n"
    return info.get("Author", ""), info.get("Email", ""), info.get("Date", ""), message


def patch_id_of_file(patch):
    out = run(["git", "patch-id", "--stable"], input=read_patch(patch), cwd=ktree()).stdout
    return out.decode().split()[0] if out.strip() else None


def patch_id_of_commit(commit):
    """The patch id of the change `commit` makes to its parent.  The diff
    comes from plumbing (diff-tree), which the user's diff.* settings
    (noprefix, context, external drivers) do not change: the same commit
    gives the same id on every machine, as format-patch's files do."""
    diff = run(["git", "diff-tree", "-p", "--no-color", "--no-ext-diff", "--no-commit-id",
                commit], cwd=ktree()).stdout
    out = run(["git", "patch-id", "--stable"], input=diff.encode(), cwd=ktree()).stdout
    return out.decode().split()[0] if out.strip() else None
