"""fork rebase: replay a series across two synthetic snapshots.

The series (made on the conftest's linux-source-9.9 tarball, "A") has four
patches; snapshot "B" (9.9.2-1) is built so that each takes another path:

  1 balloc.c line 8    B inserts two lines at the top  -> clean, offset +2
  2 inode.c line 10    B changes line 12 (in context)  -> 3-way merge
  3 balloc.c line 16   B changes line 16 as well       -> conflict
  4 inode.c line 18    untouched                       -> clean

No QEMU, no kernel build: every rebase runs with --no-check.
"""

import json
import re
import shutil
import sys
import types
from pathlib import Path

from conftest import BALLOC, INODE, KERNEL_FILES, make_tarball

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from forkkit.core.proc import sha256_file  # noqa: E402
from forkkit.repo import rebase as cmd_rebase  # noqa: E402

BODY = "Signed-off-by: A U Thor <author@example.org>"
SERIES = [
    ("fs/ext2/balloc.c", "/* balloc line 8 */\n", "/* balloc line 8: fast */\n",
     "ext2: fast balloc path", BODY),
    ("fs/ext2/inode.c", "/* inode line 10 */\n", "/* inode line 10: scalable */\n",
     "ext2: scalable inode path", BODY),
    ("fs/ext2/balloc.c", "/* balloc line 16 */\n", "/* balloc line 16: ours */\n",
     "ext2: our balloc change", BODY),
    ("fs/ext2/inode.c", "/* inode line 18 */\n", "/* inode line 18: late */\n",
     "ext2: late inode change", BODY),
]
NAMES = ["0001-ext2-fast-balloc-path.patch", "0002-ext2-scalable-inode-path.patch",
         "0003-ext2-our-balloc-change.patch", "0004-ext2-late-inode-change.patch"]

B_BALLOC = "/* new 1 */\n/* new 2 */\n" + BALLOC.replace(
    "/* balloc line 16 */\n", "/* balloc line 16: upstream */\n")
B_INODE = INODE.replace("/* inode line 12 */\n", "/* inode line 12: upstream */\n")


def snapshot_files(files, **changes):
    out = dict(files)
    for path, content in changes.items():
        out[path] = (0o644, content)
    return out


def tarball_b(kit):
    files = snapshot_files(KERNEL_FILES, **{"fs/ext2/balloc.c": B_BALLOC,
                                            "fs/ext2/inode.c": B_INODE})
    return make_tarball(kit.tmp / "linux-source-9.9-b.tar.xz", files)


def tarball_other(kit, conflict=False):
    """A 9.8 snapshot: B's inode.c (3-way), balloc.c with an offset only."""
    makefile = KERNEL_FILES["Makefile"][1].replace("PATCHLEVEL = 9", "PATCHLEVEL = 8")
    balloc = "/* new 1 */\n/* new 2 */\n" + BALLOC
    if conflict:
        balloc = B_BALLOC
    files = snapshot_files(KERNEL_FILES, **{"Makefile": makefile, "fs/ext2/balloc.c": balloc,
                                            "fs/ext2/inode.c": B_INODE})
    return make_tarball(kit.tmp / "linux-source-9.8.tar.xz", files, top="linux-source-9.8")


def dir_snapshot(path):
    return {p.name: p.read_bytes() for p in sorted(Path(path).iterdir())} \
        if Path(path).exists() else None


def prepare(kit):
    kit.do_import()
    kit.make_patches(SERIES)
    kit.commit_repo("series")
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    return kit.refs(), dir_snapshot(kit.repo / "patches")


def wt(kit):
    return kit.work / "rebase" / "tree"


def start_b(kit):
    res = kit.fork("rebase", "--onto", "9.9", "--tarball", tarball_b(kit),
                   "--debian-version", "9.9.2-1", "--no-check")
    assert res.rc == 1, res
    return res


def resolve(kit):
    path = wt(kit) / "fs/ext2/balloc.c"
    path.write_text(B_BALLOC.replace("/* balloc line 16: upstream */\n",
                                     "/* balloc line 16: upstream and ours */\n")
                    .replace("/* balloc line 8 */", "/* balloc line 8: fast */"))
    kit.git("add", "fs/ext2/balloc.c", cwd=wt(kit))


def assert_conflict_report(res):
    out = res.out
    assert "[1/4] %s: applied cleanly (git apply)\n" % NAMES[0] in out
    assert "fs/ext2/balloc.c: hunk #1 at line 7 (offset +2)" in out
    assert "[2/4] %s: applied with 3-way merge (git am -3)\n" % NAMES[1] in out
    assert "        fs/ext2/inode.c: hunk #1 (@@ -7,7 +7,7 @@) does not apply\n" in out
    assert "[3/4] %s: CONFLICT\n" % NAMES[2] in out
    assert "        fs/ext2/balloc.c: hunk #1 (@@ -13,7 +13,7 @@) does not apply\n" in out
    assert "        fs/ext2/balloc.c: conflict markers at lines 18-22\n" in out
    assert "[4/4]" not in out
    assert "rebase --continue" in out and "rebase --abort" in out and "rebase --skip" in out
    assert "git add fs/ext2/balloc.c" in out


def test_conflict_then_abort_restores_everything(kit):
    refs, files = prepare(kit)
    res = start_b(kit)
    assert_conflict_report(res)
    # stopped: git am in progress in the rebase worktree, markers in place
    state = json.loads((kit.work / "rebase" / "state.json").read_text())
    assert state["refs"]["refs/heads/distro/9.9"] == refs["refs/heads/distro/9.9"]
    assert state["phase"] == "replaying"
    am_dir = Path(kit.git("rev-parse", "--git-path", "rebase-apply", cwd=wt(kit)))
    assert (am_dir if am_dir.is_absolute() else wt(kit) / am_dir).is_dir()
    text = (wt(kit) / "fs/ext2/balloc.c").read_text()
    assert "<<<<<<<" in text and "/* balloc line 16: ours */" in text \
        and "/* balloc line 16: upstream */" in text
    assert kit.git("ls-files", "-u", cwd=wt(kit))
    # distro/9.9 already holds B; the user's checkout was detached, not moved
    assert kit.rev("refs/heads/distro/9.9") == kit.rev("refs/tags/debian/9.9.2-1")
    assert kit.git("symbolic-ref", "-q", "HEAD", check=False) == ""
    assert kit.git("status", "--porcelain") == ""
    assert dir_snapshot(kit.repo / "patches") == files
    # a second start is refused
    res = kit.fork("rebase", "--onto", "9.9", "--tarball", tarball_b(kit),
                   "--debian-version", "9.9.2-1", "--no-check")
    assert res.rc == 1 and "already in progress" in res.err
    # --continue before resolving is refused and changes nothing
    res = kit.fork("rebase", "--continue", "--no-check")
    assert res.rc == 1 and "still unmerged" in res.err and "fs/ext2/balloc.c" in res.err
    res = kit.fork("rebase", "--status")
    assert res.rc == 0 and "[3/4] %s: CONFLICT" % NAMES[2] in res.out

    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert kit.refs() == refs
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    assert kit.git("status", "--porcelain") == ""
    assert dir_snapshot(kit.repo / "patches") == files
    assert kit.git("status", "--porcelain", cwd=kit.repo) == ""
    assert not (kit.work / "rebase" / "state.json").exists()
    assert kit.git("status", "--porcelain", cwd=wt(kit)) == ""
    res = kit.fork("rebase", "--abort")
    assert res.rc == 1 and "no rebase in progress" in res.err
    # and it can be done again from scratch
    assert_conflict_report(start_b(kit))
    assert kit.fork("rebase", "--abort").rc == 0
    assert kit.refs() == refs


def test_conflict_resolved_then_continue(kit):
    refs, files = prepare(kit)
    start_b(kit)
    resolve(kit)
    res = kit.fork("rebase", "--continue", "--no-check")
    assert res.rc == 0, res
    assert "[3/4] %s: conflict, resolved by hand\n" % NAMES[2] in res.out
    assert "[4/4] %s: applied cleanly (git apply)\n" % NAMES[3] in res.out
    assert "4 patches: 2 applied cleanly (git apply), 1 applied with 3-way merge (git am -3), " \
           "1 conflict, resolved by hand" in res.out
    assert "$ git range-diff " in res.out
    # range-diff: 1 and 4 unchanged (=); 2 (new context) and 3 (resolution) changed (!)
    rd = [l.split()[2] for l in res.out.splitlines() if re.match(r"^\d+: +[0-9a-f]+ [=!<>] ", l)]
    assert rd == ["=", "!", "!", "="], res.out
    assert not (kit.work / "rebase" / "state.json").exists()

    patches = kit.repo / "patches"
    base = (patches / "base").read_text()
    assert "version: 9.9.2-1\n" in base and "upstream: 9.9.2\n" in base
    assert "sha256: %s\n" % kit.git("log", "-1", "--format=%B", "refs/tags/debian/9.9.2-1") \
        .split("SHA256: ")[1].strip() in base
    assert (patches / "series").read_text() == "".join(n + "\n" for n in NAMES)
    assert "+/* balloc line 16: upstream and ours */" in (patches / NAMES[2]).read_text()
    # the branches: laid out from the saved files on the new base
    new_base = kit.rev("refs/tags/debian/9.9.2-1")
    assert kit.rev("refs/heads/distro/9.9") == new_base
    head = kit.rev("refs/heads/series/9.9")
    assert kit.git("rev-list", "--count", "%s..%s" % (new_base, head)) == "4"
    assert kit.rev("refs/heads/topic/ext2-late-inode-change") == head
    assert kit.git("show", "%s:fs/ext2/balloc.c" % head).count("upstream and ours") == 1
    assert kit.git("show", "%s:fs/ext2/inode.c" % head) == B_INODE.replace(
        "line 10 */", "line 10: scalable */").replace("line 18 */", "line 18: late */").strip()
    assert kit.rev("refs/fork/prev/series/9.9") == refs["refs/heads/series/9.9"]
    assert kit.rev("refs/tags/debian/9.9.1-1") == refs["refs/tags/debian/9.9.1-1"]
    # the user's checkout stayed where it was (detached) and is told so
    assert "now detached at the old snapshot" in res.out
    assert kit.rev("HEAD") == refs["refs/heads/distro/9.9"]
    # what was saved lays out to the same commits again
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 0 and kit.refs() == before, res
    kit.commit_repo("rebased")
    res = kit.fork("save")
    assert res.rc == 0 and "0 files changed" in res.err, res


def test_abort_while_finishing_restores_series_files(kit):
    refs, files = prepare(kit)
    start_b(kit)
    # meanwhile a commit lands on a topic branch: laying out fails at the end
    kit.git("checkout", "-q", "topic/ext2-late-inode-change")
    (kit.ktree / "README").write_text("unsaved\n")
    kit.git("commit", "-q", "-a", "-m", "wip: unsaved")
    # --abort must put back what the rebase moved, and only that
    refs["refs/heads/topic/ext2-late-inode-change"] = kit.rev("HEAD")
    resolve(kit)
    res = kit.fork("rebase", "--continue", "--no-check")
    assert res.rc == 1 and "wip: unsaved" in res.err and "--abort" in res.err, res
    assert "version: 9.9.2-1" in (kit.repo / "patches" / "base").read_text()
    assert dir_snapshot(kit.repo / "patches") != files
    assert json.loads((kit.work / "rebase" / "state.json").read_text())["phase"] == "finishing"
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert dir_snapshot(kit.repo / "patches") == files
    assert kit.git("status", "--porcelain", cwd=kit.repo) == ""
    assert kit.refs() == refs
    assert "left alone: refs/heads/topic/ext2-late-inode-change" in res.err
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/topic/ext2-late-inode-change"


def test_failed_import_restores_at_once(kit):
    refs, files = prepare(kit)
    kit.git("tag", "debian/9.9.2-1", "refs/heads/series/9.9")
    refs = kit.refs()
    res = kit.fork("rebase", "--onto", "9.9", "--tarball", tarball_b(kit),
                   "--debian-version", "9.9.2-1", "--no-check")
    assert res.rc == 1 and "tag debian/9.9.2-1 already exists" in res.err, res
    assert kit.refs() == refs
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    assert not (kit.work / "rebase" / "state.json").exists()
    assert dir_snapshot(kit.repo / "patches") == files


def test_skip_drops_the_conflicting_patch(kit):
    prepare(kit)
    start_b(kit)
    res = kit.fork("rebase", "--skip", "--no-check")
    assert res.rc == 0, res
    assert "[3/4] %s: conflict, dropped (--skip)\n" % NAMES[2] in res.out
    patches = kit.repo / "patches"
    assert (patches / "series").read_text() == \
        "%s\n%s\n0003-ext2-late-inode-change.patch\n" % (NAMES[0], NAMES[1])
    assert not (patches / NAMES[2]).exists() and not (patches / NAMES[3]).exists()
    assert kit.rev("refs/heads/topic/ext2-late-inode-change") == kit.rev("refs/heads/series/9.9")
    # the stale topic of the dropped patch is not touched by lay_out
    assert kit.git("rev-list", "--count", "refs/tags/debian/9.9.2-1..refs/heads/series/9.9") == "3"


def test_onto_other_version_into_backports(kit):
    refs, files = prepare(kit)
    tb = tarball_other(kit)
    # in place is refused while backports/9.8 lives on 9.8
    bp = kit.repo / "backports" / "9.8"
    bp.mkdir(parents=True)
    (bp / "base").write_text("package: linux-source-9.8\nversion: 9.8.0-1\nupstream: 9.8.0\n"
                             "sha256: %s\n" % ("0" * 64))
    (bp / "series").write_text("")
    kit.commit_repo("backport dir")
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tb, "--debian-version", "9.8.3-1",
                   "--no-check")
    assert res.rc == 1 and "--into backports/9.8" in res.err, res
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tb, "--debian-version", "9.8.3-1",
                   "--into", "backports/9.7", "--no-check")
    assert res.rc == 1 and "does not match --onto 9.8" in res.err, res
    assert kit.refs() == refs and not (kit.work / "rebase" / "state.json").exists()

    res = kit.fork("rebase", "--onto", "linux-source-9.8", "--tarball", tb,
                   "--debian-version", "9.8.3-1", "--into", "backports/9.8", "--no-check")
    assert res.rc == 0, res
    assert "[1/4] %s: applied cleanly (git apply)" % NAMES[0] in res.out
    assert "[2/4] %s: applied with 3-way merge (git am -3)" % NAMES[1] in res.out
    assert "[3/4] %s: applied cleanly (git apply)" % NAMES[2] in res.out
    assert "[4/4] %s: applied cleanly (git apply)" % NAMES[3] in res.out
    assert "backports/9.8/ is now on linux-source-9.8 9.8.3-1" in res.out
    # the source series and its branches are untouched
    assert dir_snapshot(kit.repo / "patches") == files
    now = kit.refs()
    for ref, val in refs.items():
        assert now[ref] == val, ref
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    # the backport: base, series, branches
    assert "package: linux-source-9.8\nversion: 9.8.3-1\n" in (bp / "base").read_text()
    assert (bp / "series").read_text() == "".join(n + "\n" for n in NAMES)
    head = kit.rev("refs/heads/series/9.8")
    assert kit.rev("refs/heads/backport/9.8/ext2-late-inode-change") == head
    assert kit.git("merge-base", head, "refs/heads/distro/9.8") == kit.rev("refs/heads/distro/9.8")
    assert kit.git("show", "refs/heads/distro/9.8:Makefile").count("PATCHLEVEL = 8") == 1


def test_abort_after_conflict_onto_new_version_removes_new_refs(kit):
    refs, files = prepare(kit)
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit, conflict=True),
                   "--debian-version", "9.8.3-1", "--no-check")
    assert res.rc == 1 and "[3/4] %s: CONFLICT" % NAMES[2] in res.out, res
    assert kit.rev("refs/heads/distro/9.8")
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"  # not detached
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert kit.refs() == refs
    assert dir_snapshot(kit.repo / "patches") == files


def test_in_place_onto_other_version(kit):
    refs, files = prepare(kit)
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--no-check")
    assert res.rc == 0, res
    base = (kit.repo / "patches" / "base").read_text()
    assert base.startswith("package: linux-source-9.8\nversion: 9.8.3-1\n")
    head = kit.rev("refs/heads/series/9.8")
    assert kit.rev("refs/heads/topic/ext2-late-inode-change") == head
    assert kit.rev("refs/heads/series/9.9") == refs["refs/heads/series/9.9"]
    assert "series/9.9 still points at the old head" in res.out
    assert kit.rev("refs/heads/distro/9.9") == refs["refs/heads/distro/9.9"]


def test_refusals_change_nothing(kit):
    refs, files = prepare(kit)
    tb = tarball_b(kit)
    args = ("rebase", "--onto", "9.9", "--tarball", tb, "--debian-version", "9.9.2-1",
            "--no-check")
    (kit.ktree / "README").write_text("local change\n")
    res = kit.fork(*args)
    assert res.rc == 1 and "uncommitted changes" in res.err, res
    kit.git("checkout", "README")
    (kit.repo / "patches" / "series").write_text("# note\n" + "".join(n + "\n" for n in NAMES))
    res = kit.fork(*args)
    assert res.rc == 1 and "patches/ has uncommitted changes" in res.err, res
    kit.git("checkout", "patches/series", cwd=kit.repo)
    # a commit on a topic branch that is not saved in patches/
    kit.git("checkout", "-q", "series/9.9")
    (kit.ktree / "README").write_text("unsaved work\n")
    kit.git("commit", "-q", "-a", "-m", "wip: unsaved")
    res = kit.fork(*args)
    assert res.rc == 1 and "wip: unsaved" in res.err and "tools/fork save" in res.err, res
    kit.git("reset", "-q", "--hard", "HEAD^")
    kit.git("checkout", "-q", "distro/9.9")
    assert kit.refs() == refs and dir_snapshot(kit.repo / "patches") == files
    assert not (kit.work / "rebase" / "state.json").exists()
    # the same snapshot: nothing to do
    res = kit.fork("rebase", "--onto", "9.9", "--no-check")
    assert res.rc == 0 and "nothing to do" in res.out, res
    res = kit.fork("rebase")
    assert res.rc == 1 and "--onto" in res.err


def test_split_patch_and_offsets():
    patch = ("From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n"
             "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n"
             "@@ -1,3 +1,3 @@ ctx\n a\n-b\n+c\n d\n"
             "@@ -10 +10 @@\n-x\n+y\n\\ No newline at end of file\n"
             "diff --git a/g b/g\nnew file mode 100644\nindex 0..3\n--- /dev/null\n+++ b/g\n"
             "@@ -0,0 +1 @@\n+new\n-- \n2.39.5\n")
    files = cmd_rebase.split_patch(patch)
    assert [(p, len(h)) for p, _, h in files] == [("f", 2), ("g", 1)]
    assert files[0][2][1][-1] == "\\ No newline at end of file\n"
    assert files[1][2][0] == ["@@ -0,0 +1 @@\n", "+new\n"]
    assert cmd_rebase.offsets("Checking patch a/b.c...\nHunk #2 succeeded at 40 "
                              "(offset -3 lines).\n") == ["a/b.c: hunk #2 at line 40 (offset -3)"]


def test_conflict_report_names_files_the_3way_merge_resolved(tmp_path, monkeypatch):
    """One patch, two files: a.c conflicts, b.c only needs the 3-way merge."""
    # the rebase's empty hooks directory goes to a work dir of the test's,
    # not the checkout's own work/
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path.parent / "work"))

    def sh(*args):
        return cmd_rebase.git(list(args), cwd=str(tmp_path))

    lines = ["/* line %d */\n" % n for n in range(1, 21)]
    a, b = "".join(lines), "".join(lines)
    sh("init", "-q")
    sh("config", "user.name", "T")
    sh("config", "user.email", "t@example.org")
    (tmp_path / "a.c").write_text(a)
    (tmp_path / "b.c").write_text(b)
    sh("add", ".")
    sh("commit", "-qm", "base")
    (tmp_path / "a.c").write_text(a.replace("/* line 8 */", "/* line 8: ours */"))
    (tmp_path / "b.c").write_text(b.replace("/* line 10 */", "/* line 10: ours */"))
    sh("commit", "-qam", "the patch")
    patch = sh("format-patch", "-1", "-o", str(tmp_path.parent / "out")).strip()
    sh("reset", "-q", "--hard", "HEAD~1")
    (tmp_path / "a.c").write_text(a.replace("/* line 8 */", "/* line 8: upstream */"))
    (tmp_path / "b.c").write_text(b.replace("/* line 12 */", "/* line 12: upstream */"))
    sh("commit", "-qam", "new base")
    status, details, _ = cmd_rebase.replay_one(str(tmp_path), patch)
    assert status == "conflict"
    assert details[0].startswith("a.c: hunk #1 (@@ -5,7 +5,7 @@)")
    assert details[1].startswith("b.c: hunk #1 (@@ -7,7 +7,7 @@)")
    assert "a.c: conflict markers at lines 8-12" in details
    assert "b.c: the 3-way merge resolved its hunks" in details
    assert "a.c: the 3-way merge resolved its hunks" not in details


def test_rebase_keeps_topic_names(kit):
    kit.do_import()
    kit.make_patches(SERIES)
    topics = ["fast-balloc", "", "our-balloc", "late-inode"]
    (kit.repo / "patches" / "series").write_text("".join(
        "%s %s\n" % (n, t) if t else n + "\n" for n, t in zip(NAMES, topics)))
    kit.commit_repo("series with topic names")
    assert kit.fork("branches").rc == 0
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--into", "backports/9.8", "--no-check")
    assert res.rc == 0, res
    bp = kit.repo / "backports" / "9.8"
    assert (bp / "series").read_text() == (
        "%s fast-balloc\n%s\n%s our-balloc\n%s late-inode\n" % tuple(NAMES))
    head = kit.rev("refs/heads/series/9.8")
    assert kit.rev("refs/heads/backport/9.8/late-inode") == head
    assert kit.rev("refs/heads/backport/9.8/ext2-scalable-inode-path") == \
        kit.rev("refs/heads/backport/9.8/our-balloc~1")


def test_conflict_help_forces_add_where_the_snapshot_ignores_everything(kit):
    """Debian's linux-source-6.1 tarball has a .gitignore with "/*"."""
    prepare(kit)
    files = snapshot_files(KERNEL_FILES, **{"fs/ext2/balloc.c": B_BALLOC,
                                            "fs/ext2/inode.c": B_INODE,
                                            ".gitignore": "/*\n!/debian/\n"})
    tb = make_tarball(kit.tmp / "linux-source-9.9-c.tar.xz", files)
    res = kit.fork("rebase", "--onto", "9.9", "--tarball", tb, "--debian-version", "9.9.3-1",
                   "--no-check")
    assert res.rc == 1 and "[3/4] %s: CONFLICT" % NAMES[2] in res.out, res
    assert "  git add -f fs/ext2/balloc.c" in res.out
    # the printed command really stages the resolution there
    resolve_cmd = kit.git("add", "-f", "fs/ext2/balloc.c", cwd=wt(kit))
    assert resolve_cmd == "" and not kit.git("ls-files", "-u", cwd=wt(kit))
    assert kit.fork("rebase", "--abort").rc == 0


def test_compare_puts_primary_and_backport_side_by_side(kit):
    prepare(kit)
    res = kit.fork("compare")
    assert res.rc == 1 and "no backports/<ver>/ holds a base file" in res.err, res
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--into", "backports/9.8", "--no-check")
    assert res.rc == 0, res
    kit.commit_repo("backport")
    a, b = kit.rev("refs/heads/series/9.9"), kit.rev("refs/heads/series/9.8")
    # unsaved work on the backport's branch is neither shown nor moved
    kit.git("checkout", "-q", "series/9.8")
    (kit.ktree / "fs/ext2/balloc.c").write_text("/* unsaved */\n")
    kit.git("commit", "-qam", "ext2: unsaved work")
    unsaved = kit.rev("HEAD")
    out = kit.tmp / "cmp.md"
    res = kit.fork("compare", "--output", str(out))
    assert res.rc == 0, res
    text = out.read_text()
    assert text.startswith("# patches/ vs backports/9.8/\n")
    assert "- `backports/9.8/`: linux-source-9.8 9.8.3-1, `distro/9.8` = %s (4 patches)" \
        % kit.rev("refs/heads/distro/9.8")[:12] in text
    pairs = re.findall(r"^(\d+):  (\w+) ([=!<>]) (\d+):  (\w+) (.*)$", text, re.M)
    assert len(pairs) == 8  # the summary, then the same lines in the full range-diff
    assert [p[0] for p in pairs[:4]] == ["1", "2", "3", "4"]
    assert a.startswith(pairs[3][1]) and b.startswith(pairs[3][4])
    assert "unsaved" not in text
    assert kit.rev("refs/heads/series/9.8") == unsaved


def test_refuses_when_the_target_series_branch_has_commits_of_its_own(kit):
    _, files = prepare(kit)
    res = kit.fork("import", "linux-source-9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1")
    assert res.rc == 0, res
    kit.git("branch", "series/9.8", "distro/9.8")
    kit.git("checkout", "-q", "series/9.8")
    (kit.ktree / "fs/ext2/balloc.c").write_text("/* somebody's work */\n")
    kit.git("commit", "-qam", "ext2: somebody's work")
    own = kit.rev("HEAD")
    kit.git("checkout", "-q", "distro/9.9")
    refs = kit.refs()
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--into", "backports/9.8", "--no-check")
    assert res.rc == 1, res
    assert "series/9.8 holds commits of its own (%s)" % own[:12] in res.err
    assert kit.refs() == refs and dir_snapshot(kit.repo / "patches") == files
    assert not (kit.repo / "backports" / "9.8").exists()


def keep_kit(kit):
    """Save the kit's repo and work dir as they are; return a function that
    puts them back (the same paths, so git's worktree links still hold)."""
    saved = kit.tmp / "saved"
    for name in ("repo", "work"):
        shutil.copytree(kit.tmp / name, saved / name, symlinks=True)

    def back():
        for name in ("repo", "work"):
            shutil.rmtree(kit.tmp / name)
            shutil.copytree(saved / name, kit.tmp / name, symlinks=True)
    return back


def interrupting(real, n, counts=lambda *a: True):
    """`real`, but the n-th call that `counts` raises KeyboardInterrupt
    (Ctrl-C) after doing its work."""
    calls = []

    def step(*args, **kw):
        out = real(*args, **kw)
        if counts(*args):
            calls.append(args)
            if len(calls) == n:
                raise KeyboardInterrupt
        return out
    return step


def test_ctrl_c_at_each_step_of_the_lay_out_then_abort_restores_everything(kit, monkeypatch):
    """--skip writes the series files, then moves each branch (refs/fork/prev,
    the branch, refs/fork/laid): interrupted after any of those steps,
    --abort puts every ref and every series file back."""
    from forkkit.repo import branches as cmd_branches
    refs, files = prepare(kit)
    start_b(kit)
    back = keep_kit(kit)
    # the files: each patch file copied in, the series file (open, truncated)
    # while its lines are written; then every update-ref/reset of the lay-out
    steps = [(cmd_rebase, "shutil", n) for n in (1, 2)] + [(cmd_rebase, "patch_subject", 1)]
    steps += [(cmd_branches, "git", n) for n in range(1, 100)]
    for module, name, n in steps:
        back()
        with monkeypatch.context() as mp:
            if name == "shutil":
                mp.setattr(module, name, types.SimpleNamespace(
                    copyfile=interrupting(shutil.copyfile, n), rmtree=shutil.rmtree))
            elif name == "git":
                mp.setattr(module, name, interrupting(
                    module.git, n, lambda args, *_: args[0] in ("update-ref", "reset")))
            else:
                mp.setattr(module, name, interrupting(getattr(module, name), n))
            res = kit.fork("rebase", "--skip", "--no-check")
        if name == "git" and res.rc == 0:
            break       # past the last step: the lay-out is complete
        assert res.rc == 130 and "interrupted" in res.err, (name, n, res)
        res = kit.fork("rebase", "--abort")
        assert res.rc == 0 and "left alone" not in res.err, (name, n, res)
        assert kit.refs() == refs, (name, n)
        assert dir_snapshot(kit.repo / "patches") == files, (name, n)
        assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
        assert not (kit.work / "rebase" / "state.json").exists()
    # interrupted at least at 3 topics and series/9.9, each: refs/fork/prev,
    # the branch, refs/fork/laid
    assert name == "git" and n > 12, n


def test_continue_after_an_interrupted_lay_out_then_abort(kit, monkeypatch):
    """A lay-out cut short, laid out again by --continue: the refs the first
    one moved are still the rebase's own for --abort."""
    from forkkit.repo import branches as cmd_branches
    refs, files = prepare(kit)
    start_b(kit)
    with monkeypatch.context() as mp:
        mp.setattr(cmd_branches, "move_branch", interrupting(cmd_branches.move_branch, 2))
        assert kit.fork("rebase", "--skip", "--no-check").rc == 130
    # the lay-out fails now (a commit of somebody's on the series branch)
    kit.git("checkout", "-q", "series/9.9")
    (kit.ktree / "README").write_text("unsaved\n")
    kit.git("commit", "-q", "-a", "-m", "wip: unsaved")
    refs["refs/heads/series/9.9"] = kit.rev("HEAD")
    res = kit.fork("rebase", "--continue", "--no-check")
    assert res.rc == 1 and "wip: unsaved" in res.err, res
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert "left alone: refs/heads/series/9.9" in res.err
    assert "left alone: refs/heads/topic" not in res.err, res
    assert kit.refs() == refs and dir_snapshot(kit.repo / "patches") == files


def named_series(kit, rel="next"):
    """A copy of patches/ in `rel`/ with `branches: next` in its base, laid out."""
    d = kit.repo / rel
    shutil.copytree(kit.repo / "patches", d)
    (d / "base").write_text((d / "base").read_text() + "branches: next\n")
    kit.commit_repo("named series")
    res = kit.fork("branches", "--series", rel)
    assert res.rc == 0, res


def test_named_series_moves_into_its_own_branches_beside_a_backport(kit):
    """--series next --into next/9.8 while backports/9.8 lives on 9.8: the
    result keeps `branches: next` and is laid out as next/9.8 and
    next-topic/9.8/..., leaving series/9.8, backport/ and topic/ alone."""
    prepare(kit)
    named_series(kit)
    bp = kit.repo / "backports" / "9.8"
    bp.mkdir(parents=True)
    (bp / "series").write_text("")
    tb = tarball_other(kit)
    args = ("rebase", "--onto", "9.8", "--tarball", tb, "--debian-version", "9.8.3-1",
            "--series", "next", "--into", "next/9.8", "--no-check")
    refs = kit.refs()
    # beside a series on another 9.8 snapshot: refused before anything moves
    (bp / "base").write_text("package: linux-source-9.8\nversion: 9.8.2-1\nupstream: 9.8.2\n"
                             "sha256: %s\n" % ("0" * 64))
    kit.commit_repo("backport dir")
    res = kit.fork(*args)
    assert res.rc == 1 and "backports/9.8/ is on linux-source-9.8 9.8.2-1" in res.err, res
    assert kit.refs() == refs and not (kit.repo / "next" / "9.8").exists()
    (bp / "base").write_text("package: linux-source-9.8\nversion: 9.8.3-1\nupstream: 9.8.3\n"
                             "sha256: %s\n" % sha256_file(tb))
    kit.commit_repo("backport dir on the same snapshot")
    res = kit.fork(*args)
    assert res.rc == 0, res
    dest = kit.repo / "next" / "9.8"
    assert (dest / "base").read_text().endswith("\nbranches: next\n")
    assert "next/9.8/ is now on linux-source-9.8 9.8.3-1" in res.out
    now = kit.refs()
    head = now["refs/heads/next/9.8"]
    assert now["refs/heads/next-topic/9.8/ext2-late-inode-change"] == head
    assert kit.git("rev-list", "--count", "refs/heads/distro/9.8..%s" % head) == "4"
    for ref, val in refs.items():
        assert now[ref] == val, ref
    assert not [r for r in now if r.startswith(("refs/heads/series/9.8",
                                                "refs/heads/backport/"))]
    # now next/9.8 holds next's branches on 9.8: in place onto 9.8 is refused
    kit.commit_repo("next/9.8")
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--series", "next", "--no-check")
    assert res.rc == 1 and "next/9.8/ already lives on" in res.err \
        and "--into next/9.8" in res.err, res


def test_named_series_in_place_keeps_its_branches_line(kit):
    prepare(kit)
    named_series(kit)
    refs = kit.refs()
    res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                   "--debian-version", "9.8.3-1", "--series", "next", "--no-check")
    assert res.rc == 0, res
    assert (kit.repo / "next" / "base").read_text().endswith("\nbranches: next\n")
    now = kit.refs()
    assert now["refs/heads/next-topic/9.8/ext2-late-inode-change"] == now["refs/heads/next/9.8"]
    assert "next/9.9 still points at the old head" in res.out
    for ref, val in refs.items():
        if not ref.startswith("refs/fork/prev/"):
            assert now[ref] == val, ref
    assert "refs/heads/series/9.8" not in now


def test_abort_of_an_interrupted_lay_out_under_a_branches_name(kit, monkeypatch):
    """The next/<ver> and next-topic/ refs a lay-out made are the rebase's
    own: --abort removes them."""
    from forkkit.repo import branches as cmd_branches
    prepare(kit)
    named_series(kit)
    refs = kit.refs()
    with monkeypatch.context() as mp:
        mp.setattr(cmd_branches, "move_branch", interrupting(cmd_branches.move_branch, 3))
        res = kit.fork("rebase", "--onto", "9.8", "--tarball", tarball_other(kit),
                       "--debian-version", "9.8.3-1", "--series", "next", "--into",
                       "next/9.8", "--no-check")
        assert res.rc == 130, res
    assert [r for r in kit.refs() if r.startswith("refs/heads/next-topic/9.8/")]
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0 and "left alone" not in res.err, res
    assert kit.refs() == refs
    assert not (kit.repo / "next" / "9.8").exists()
