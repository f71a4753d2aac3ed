"""The way back from the kernel tree: a series branch's commits as the
patch files and series file of its series directory (what ``tools/fork
save`` does; ``rebase`` writes its result the same way), and snapshots of a
series directory to put it back as it was."""

import base64
import os
import shutil
import tempfile

from ..core.errors import ForkError
from ..core.paths import ensure_dir, repo_root, wpath
from ..core.progress import Progress
from ..core.proc import run
from . import series as series_mod
from .branches import (LAID, apply_patches, lay_out, recorded_stored, require_own_branches,
                       stored_blobs)
from .git import git, require_ktree, rev_parse
from .patchfile import touched_files
from .series import patch_subject


def repo_dirty(path):
    proc = run(["git", "status", "--porcelain", "--", path], cwd=repo_root(), check=False)
    if proc.returncode != 0:
        return ""
    return proc.stdout.strip()


def format_patches(base, head, outdir):
    git(["format-patch", "-q", "--zero-commit", "--no-signature", "--no-numbered",
         "--no-cover-letter", "--no-thread", "--subject-prefix=PATCH", "-o", outdir,
         "%s..%s" % (base, head)])
    return sorted(f for f in os.listdir(outdir) if f.endswith(".patch"))


def keep_topic_names(series, old_info, names, prog):
    """The series file's topic names for the saved patch files NAMES.

    OLD_INFO maps each old patch path to its (subject, changed files), read
    before save rewrote the files.  A patch keeps its topic name when its
    subject is unchanged.  A patch whose subject changed keeps the name of
    the old patch, itself without a subject match, that changes the same
    files (else the most of them) when exactly one old patch fits; save
    says which name it kept, and that a new patch without one gets its
    name from its file name.
    """
    new_subjects = {n: patch_subject(os.path.join(series.path, n)) for n in names}
    by_subject = {subj: path for path, (subj, _) in old_info.items()}
    kept = {}
    for n, subj in new_subjects.items():
        if subj in by_subject and by_subject[subj] in series.names:
            kept[n] = series.names[by_subject[subj]]
    # old patches whose subject is gone, named or not: a reworded patch of
    # an unnamed series is matched too, so that it is not called new
    orphans = {path: files for path, (subj, files) in old_info.items()
               if subj not in new_subjects.values()}
    for n in names:
        if n in kept or new_subjects[n] in by_subject:
            continue
        files = set(touched_files(os.path.join(series.path, n)))
        exact = [p for p, f in orphans.items() if f == files]
        scored = sorted(((len(files & f), p) for p, f in orphans.items() if files & f),
                        reverse=True)
        pick = None
        if len(exact) == 1:
            pick = exact[0]
        elif not exact and scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            pick = scored[0][1]
        if pick is not None and pick not in series.names:
            del orphans[pick]       # reworded, and unnamed before as now
        elif pick is not None:
            kept[n] = series.names[pick]
            del orphans[pick]
            prog.say("%s keeps the topic name %s: its subject changed, and it changes "
                     "the files of %s" % (n, kept[n], os.path.basename(pick)))
        else:
            prog.say("%s is new to the series: its topic branch is %s%s; to name it "
                     "otherwise, add the name as a second word on its line in %s/series"
                     % (n, series.topic_prefix, series_mod.topic_name(n), series.rel))
    return kept


def stale_files(series):
    """What in the series directory changed since `branches` laid out the
    series branch from it (one phrase), or None."""
    recorded = recorded_stored(series)
    if recorded is None:            # laid out before the record was kept
        laid = git(["rev-parse", "--verify", "-q", LAID + series.head_branch], check=False)
        try:
            stored = apply_patches(rev_parse(series.distro_branch), series.patches)
        except ForkError:
            stored = None
        if not series.patches or laid == stored:
            return None
        return "%s/ is not what `tools/fork branches` laid out on %s" % (series.rel,
                                                                       series.head_branch)
    now = stored_blobs(series)
    changed = sorted(n for n in set(recorded) | set(now) if recorded.get(n) != now.get(n))
    if not changed:
        return None
    return "%s changed since `tools/fork branches` laid out %s from %s/" % (
        ", ".join("%s/%s" % (series.rel, n) for n in changed), series.head_branch, series.rel)


def check_not_stale(series):
    stale = stale_files(series)
    if stale:
        raise ForkError("%s: saving now would undo that with the branch's older version. Take "
                        "the new files into the branches with `tools/fork branches` (while a "
                        "branch holds commits of its own, it refuses and says what to do), or "
                        "let the branch win with `tools/fork save --overwrite`. Nothing was "
                        "written." % stale)


def check_range(series, rev, base, head):
    name = rev or series.head_branch
    if git(["merge-base", base, head]) != base:
        raise ForkError("%s is not based on %s: rebase it there first"
                        % (name, series.distro_branch))
    if git(["rev-list", "--merges", "%s..%s" % (base, head)]):
        raise ForkError("%s..%s contains merge commits: a patch series must be linear"
                        % (series.distro_branch, name))
    if head == base:
        raise ForkError("nothing to save: %s has no commits on top of %s, and saving it would "
                        "delete every patch of %s/; to empty the series, `git rm` the patch "
                        "files and the series file yourself. Nothing was written."
                        % (name, series.distro_branch, series.rel))


def write_series(series, base, head, prog):
    """Write base..head as the patch files and series file of `series`;
    return (patch file names, files changed, removed paths)."""
    tmp = tempfile.mkdtemp(prefix="save-", dir=ensure_dir(wpath("tmp")))
    removed = []
    try:
        names = format_patches(base, head, tmp)
        old = [os.path.basename(p) for p in series.patches]
        old_info = {p: (patch_subject(p), set(touched_files(p))) for p in series.patches}
        changed = 0
        for name in names:
            src = os.path.join(tmp, name)
            dst = os.path.join(series.path, name)
            with open(src, "rb") as fh:
                new_data = fh.read()
            old_data = None
            if os.path.exists(dst):
                with open(dst, "rb") as fh:
                    old_data = fh.read()
            if old_data != new_data:
                shutil.copyfile(src, dst)
                changed += 1
                prog.say("wrote %s/%s" % (series.rel, name))
        for name in old:
            if name not in names:
                os.unlink(os.path.join(series.path, name))
                changed += 1
                removed.append(os.path.join(series.rel, name))
                prog.say("removed %s/%s (no longer in the series)" % (series.rel, name))
        topics = keep_topic_names(series, old_info, names, prog)
        text = ""
        for n in names:
            topic = topics.get(n)
            text += "%s %s\n" % (n, topic) if topic else n + "\n"
        series_file = os.path.join(series.path, "series")
        old_text = open(series_file).read() if os.path.exists(series_file) else None
        if old_text != text:
            with open(series_file, "w") as fh:
                fh.write(text)
            changed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return names, changed, removed


def write_and_lay_out(series, base, head, prog):
    """write_series, then the branches from what was written; if that
    fails or is interrupted, the series directory is put back as it was."""
    before = snapshot_dir(series.rel)
    try:
        written = write_series(series, base, head, prog)
        lay_out(series_mod.Series(series.rel), out=lambda *_: None)
    except ForkError as exc:
        restore_dir(series.rel, before)
        raise ForkError("%s (save put %s/ back as it was)" % (str(exc).rstrip(), series.rel))
    except BaseException:
        restore_dir(series.rel, before)
        raise
    return written


def save(series, rev=None, overwrite=False):
    prog = Progress("save")
    require_ktree()
    require_own_branches(series)
    dirty = repo_dirty(series.path)
    if dirty:
        raise ForkError("%s/ has uncommitted changes in this repository:\n%s\n"
                        "Commit or stash them first; nothing was written."
                        % (series.rel, dirty))
    if not overwrite:
        check_not_stale(series)
    base = rev_parse(series.distro_branch)
    head = rev_parse(rev or series.head_branch)
    check_range(series, rev, base, head)
    names, changed, removed = write_and_lay_out(series, base, head, prog)
    prog.say("%d patches, %d files changed in %s/" % (len(names), changed, series.rel))
    if removed:
        prog.say("to get the removed patches back: git -C %s checkout HEAD -- %s"
                 % (repo_root(), " ".join(removed)))
    return changed



def snapshot_dir(rel):
    """{file name: base64 contents} of a series directory, or None."""
    path = os.path.join(repo_root(), rel)
    if not os.path.isdir(path):
        return None
    files = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            with open(full, "rb") as fh:
                files[name] = base64.b64encode(fh.read()).decode()
    return files


def restore_dir(rel, files):
    """Put the series directory `rel` back as snapshot_dir() saw it."""
    path = os.path.join(repo_root(), rel)
    if files is None:
        if os.path.isdir(path):
            shutil.rmtree(path)
        return
    ensure_dir(path)
    for name in os.listdir(path):
        if name not in files and os.path.isfile(os.path.join(path, name)):
            os.unlink(os.path.join(path, name))
    for name, data in files.items():
        data = base64.b64decode(data)
        full = os.path.join(path, name)
        if os.path.exists(full):
            with open(full, "rb") as fh:
                if fh.read() == data:
                    continue
        with open(full, "wb") as fh:
            fh.write(data)
