"""fork save: the series branch goes back into the repo's patch files."""

OLD = "0002-ext2-scale-inode-allocation.patch"
NEW = "0002-ext2-per-group-inode-locks.patch"


def snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_save_amended_series_without_churn(kit):
    kit.laid_out()
    patches = kit.repo / "patches"
    kit.git("checkout", "-q", "series/9.9")
    kit.git("commit", "-q", "--amend", "-m",
            "ext2: per-group inode locks\n\nReworded.\n\nSigned-off-by: A U Thor <author@example.org>")
    res = kit.fork("save")
    assert res.rc == 0, res
    assert "is new to the series" not in res.err    # reworded, not new
    assert not (patches / OLD).exists()
    text = (patches / NEW).read_text()
    assert "Subject: [PATCH] ext2: per-group inode locks\n" in text
    assert "\nReworded.\n" in text
    assert text.startswith("From 0000000000000000000000000000000000000000 ")
    assert "From: A U Thor <author@example.org>" in text
    assert (patches / "series").read_text() == \
        "0001-ext2-make-balloc-faster.patch\n%s\n" % NEW
    # the first patch was rewritten in save's stable format ([PATCH], no 1/2)
    assert "Subject: [PATCH] ext2: make balloc faster\n" in \
        (patches / "0001-ext2-make-balloc-faster.patch").read_text()
    # the branches were laid out again from what was saved
    head = kit.rev("refs/heads/series/9.9")
    assert kit.git("log", "-1", "--format=%s", head) == "ext2: per-group inode locks"
    assert kit.rev("refs/heads/topic/ext2-per-group-inode-locks") == head
    assert kit.rev("HEAD") == head and kit.git("status", "--porcelain") == ""

    kit.commit_repo("saved")
    first = snapshot(patches)
    before = kit.refs()
    res = kit.fork("save")
    assert res.rc == 0, res
    assert "2 patches, 0 files changed" in res.err
    assert snapshot(patches) == first
    assert kit.git("status", "--porcelain", cwd=kit.repo) == ""
    assert kit.refs() == before
    res = kit.fork("branches")
    assert res.rc == 0 and res.err.count("(unchanged)") == 3, res


def test_save_refuses_uncommitted_series_changes(kit):
    kit.laid_out()
    series = kit.repo / "patches" / "series"
    series.write_text(series.read_text() + "# my note\n")
    before = snapshot(kit.repo / "patches")
    res = kit.fork("save")
    assert res.rc == 1
    assert "patches/ has uncommitted changes" in res.err
    assert "patches/series" in res.err
    assert "nothing was written" in res.err
    assert snapshot(kit.repo / "patches") == before


def test_save_refuses_untracked_patch(kit):
    kit.laid_out()
    (kit.repo / "patches" / "0003-new.patch").write_text("draft\n")
    res = kit.fork("save")
    assert res.rc == 1
    assert "0003-new.patch" in res.err


def test_save_refuses_merges(kit):
    kit.laid_out()
    t1 = kit.rev("refs/heads/topic/ext2-make-balloc-faster")
    head = kit.rev("refs/heads/series/9.9")
    merge = kit.git("commit-tree", head + "^{tree}", "-p", head, "-p", t1 + "^", "-m", "merge")
    kit.git("update-ref", "refs/heads/series/9.9", merge)
    before = snapshot(kit.repo / "patches")
    res = kit.fork("save")
    assert res.rc == 1
    assert "merge commits" in res.err
    assert snapshot(kit.repo / "patches") == before


def test_save_from_revision(kit):
    kit.laid_out()
    res = kit.fork("save", "--from", "topic/ext2-make-balloc-faster")
    assert res.rc == 0, res
    assert (kit.repo / "patches" / "series").read_text() == "0001-ext2-make-balloc-faster.patch\n"
    assert not (kit.repo / "patches" / "0002-ext2-scale-inode-allocation.patch").exists()
    assert kit.rev("refs/heads/series/9.9") == kit.rev("refs/heads/topic/ext2-make-balloc-faster")



def named_series(kit):
    """The 2-patch series with topic names balloc and inodes, laid out; the
    kernel tree is left on distro/9.9 to build a new series on."""
    kit.laid_out()
    patches = kit.repo / "patches"
    first, second = sorted(p.name for p in patches.glob("*.patch"))
    (patches / "series").write_text("%s balloc\n%s inodes\n" % (first, second))
    kit.commit_repo("topic names")
    assert kit.fork("branches").rc == 0
    old = [kit.rev("refs/heads/topic/balloc"), kit.rev("refs/heads/topic/inodes")]
    kit.git("checkout", "-q", "--detach", "distro/9.9")
    return patches, old


def commit_edit(kit, path, line, subject):
    f = kit.ktree / path
    f.write_text(f.read_text() + line)
    kit.git("commit", "-q", "-a", "-m", subject + "\n\nSigned-off-by: A <a@b.c>")


def save_as_series(kit):
    kit.git("branch", "-f", "series/9.9", "HEAD")
    kit.git("checkout", "-q", "series/9.9")
    res = kit.fork("save")
    assert res.rc == 0, res
    return res


def test_save_keeps_topic_names_of_reworded_patches(kit):
    """A reworded patch keeps its topic name from the series file, matched by
    the files it changes, also when a new patch goes in before it; the new
    patch is named from its file name, and save says both."""
    patches, old = named_series(kit)
    commit_edit(kit, "fs/ext2/Kconfig", "# a prerequisite\n", "ext2: a prerequisite fix")
    kit.git("cherry-pick", old[0], old[1])
    kit.git("commit", "-q", "--amend", "-m",
            "ext2: per-group inode locks\n\nReworded.\n\nSigned-off-by: A U Thor <author@example.org>")
    res = save_as_series(kit)
    assert (patches / "series").read_text() == (
        "0001-ext2-a-prerequisite-fix.patch\n"
        "0002-ext2-make-balloc-faster.patch balloc\n"
        "0003-ext2-per-group-inode-locks.patch inodes\n")
    assert "0003-ext2-per-group-inode-locks.patch keeps the topic name inodes" in res.err
    assert "0001-ext2-a-prerequisite-fix.patch is new to the series" in res.err
    head = kit.rev("refs/heads/series/9.9")
    assert kit.rev("refs/heads/topic/inodes") == head
    assert kit.git("log", "-1", "--format=%s", "topic/inodes") == "ext2: per-group inode locks"
    assert kit.git("branch", "--list", "topic/ext2-per-group-inode-locks") == ""


def test_save_does_not_guess_a_topic_name_between_equal_matches(kit):
    """Two new patches, each changing the files of both old ones (one file
    each): no old name fits better than the other, so none is given."""
    patches, _ = named_series(kit)
    for n in (1, 2):
        (kit.ktree / "fs/ext2/balloc.c").write_text(
            (kit.ktree / "fs/ext2/balloc.c").read_text() + "/* change %d */\n" % n)
        commit_edit(kit, "fs/ext2/inode.c", "/* change %d */\n" % n, "ext2: change %d" % n)
    res = save_as_series(kit)
    assert (patches / "series").read_text() == \
        "0001-ext2-change-1.patch\n0002-ext2-change-2.patch\n"
    assert res.err.count("is new to the series") == 2


def error_line(res):
    """The one-line error of a refused save."""
    assert res.rc == 1, res
    assert "Traceback" not in res.err
    line = res.err.strip().splitlines()[-1]
    assert line.startswith("fork save: error: "), res
    return line


FIRST = "0001-ext2-make-balloc-faster.patch"


def commit_patch_edit(kit):
    """A committed edit to the first stored patch (as a `git pull` of a
    colleague's change would bring); the branches are still the old ones."""
    patch = kit.repo / "patches" / FIRST
    patch.write_text(patch.read_text().replace("Replace the slow path.",
                                               "Replace the slow path, as reviewed."))
    kit.commit_repo("a colleague's edit")
    return patch


def test_save_refuses_to_revert_committed_patch_edits(kit):
    kit.laid_out()
    patch = commit_patch_edit(kit)
    files, refs = snapshot(kit.repo / "patches"), kit.refs()
    err = error_line(kit.fork("save"))
    assert "patches/%s changed since `tools/fork branches` laid out series/9.9" % FIRST in err
    assert "--overwrite" in err and "Nothing was written" in err
    assert snapshot(kit.repo / "patches") == files and kit.refs() == refs
    # `branches` takes the new file; then save keeps it
    assert kit.fork("branches").rc == 0
    res = kit.fork("save")
    assert res.rc == 0, res
    assert "as reviewed" in patch.read_text()
    assert "as reviewed" in kit.git("log", "-1", "--format=%B", "topic/ext2-make-balloc-faster")


def test_save_overwrite_replaces_committed_patch_edits(kit):
    kit.laid_out()
    patch = commit_patch_edit(kit)
    res = kit.fork("save", "--overwrite")
    assert res.rc == 0, res
    assert "as reviewed" not in patch.read_text()
    assert "--overwrite" in kit.fork("save", "--help").out


def test_save_without_a_record_compares_with_the_laid_out_branch(kit):
    """A kernel tree laid out before `branches` kept its record of the
    stored files: save rebuilds the stored head and compares it with what
    `branches` laid out."""
    from forkkit.repo.branches import STORED
    kit.laid_out()
    kit.git("update-ref", "-d", STORED + "series/9.9")
    res = kit.fork("save")
    assert res.rc == 0, res
    kit.commit_repo("saved")
    kit.git("update-ref", "-d", STORED + "series/9.9")
    commit_patch_edit(kit)
    files = snapshot(kit.repo / "patches")
    err = error_line(kit.fork("save"))
    assert "patches/ is not what `tools/fork branches` laid out on series/9.9" in err
    assert snapshot(kit.repo / "patches") == files


def test_save_with_a_dirty_tree_on_the_series_branch_writes_nothing(kit):
    kit.laid_out()
    kit.git("checkout", "-q", "series/9.9")
    kit.git("commit", "-q", "--amend", "-m",
            "ext2: per-group inode locks\n\nSigned-off-by: A U Thor <author@example.org>")
    (kit.ktree / "README").write_text("work in progress\n")
    files, refs = snapshot(kit.repo / "patches"), kit.refs()
    err = error_line(kit.fork("save"))
    assert snapshot(kit.repo / "patches") == files and kit.refs() == refs
    assert "uncommitted changes" in err and "README" in err
    assert "nothing was changed (save put patches/ back as it was)" in err
    assert kit.git("status", "--porcelain", cwd=kit.repo) == ""
    assert (kit.ktree / "README").read_text() == "work in progress\n"
    # once the tree is clean, the same save goes through
    kit.git("checkout", "--", "README")
    res = kit.fork("save")
    assert res.rc == 0, res
    assert (kit.repo / "patches" / NEW).exists()


def test_save_refused_by_a_foreign_topic_commit_writes_nothing(kit):
    kit.laid_out()
    kit.git("checkout", "-q", "topic/ext2-make-balloc-faster")
    (kit.ktree / "README").write_text("local hack\n")
    kit.git("commit", "-q", "-a", "-m", "my local hack")
    kit.git("checkout", "-q", "series/9.9")
    files, refs = snapshot(kit.repo / "patches"), kit.refs()
    res = kit.fork("save")
    assert res.rc == 1, res
    assert snapshot(kit.repo / "patches") == files and kit.refs() == refs
    assert "my local hack" in res.err
    assert "Nothing was changed. (save put patches/ back as it was)" in res.err


def test_save_interrupted_while_laying_out_puts_the_files_back(kit, monkeypatch):
    from forkkit.repo import save as cmd_save
    kit.laid_out()
    kit.git("checkout", "-q", "series/9.9")
    kit.git("commit", "-q", "--amend", "-m",
            "ext2: per-group inode locks\n\nSigned-off-by: A U Thor <author@example.org>")
    files, refs = snapshot(kit.repo / "patches"), kit.refs()

    def ctrl_c(*_, **__):
        raise KeyboardInterrupt
    monkeypatch.setattr(cmd_save, "lay_out", ctrl_c)
    res = kit.fork("save")
    assert res.rc == 130, res
    assert snapshot(kit.repo / "patches") == files and kit.refs() == refs
