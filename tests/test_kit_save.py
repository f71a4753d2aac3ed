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
