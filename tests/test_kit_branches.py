"""fork branches: stacked topic branches + series/<ver> from the stored series."""

from conftest import KVER, PATCHES

TOPICS = ["topic/ext2-make-balloc-faster", "topic/ext2-scale-inode-allocation"]


def test_lays_out_stacked_topics(kit):
    ids = kit.setup_series()
    base = kit.rev("distro/9.9")
    t1, t2 = (kit.rev("refs/heads/" + t) for t in TOPICS)
    head = kit.rev("refs/heads/series/9.9")
    assert kit.rev(t1 + "^") == base
    assert kit.rev(t2 + "^") == t1
    assert head == t2
    assert kit.git("rev-list", "--count", "%s..%s" % (base, head)) == "2"
    # each topic is exactly its patch: same tree, message, author as the
    # original commit -- and with committer = author, the very same commit
    for topic, orig, (path, _, _, subject, body) in zip((t1, t2), ids, PATCHES):
        assert kit.git("log", "-1", "--format=%B", topic) == subject + "\n\n" + body
        assert kit.git("log", "-1", "--format=%an <%ae> %ad", "--date=raw", topic) == \
            "A U Thor <author@example.org> 1700000000 +0100"
        assert kit.git("diff-tree", "--no-commit-id", "--name-only", "-r", topic) == path
    assert [t1, t2] == ids


def test_branches_is_idempotent_and_deterministic(kit, tmp_path):
    kit.laid_out()
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert res.err.count("(unchanged)") == 3
    assert kit.refs() == before
    # another tree, imported from the same tarball, gets the same ids
    other = tmp_path / "other"
    env = {"FORK_KTREE": str(other), "FORK_WORKDIR": str(tmp_path / "other-work")}
    assert kit.fork("import", KVER, env=env).rc == 0
    res = kit.fork("branches", env=env)
    assert res.rc == 0, res
    assert res.out.strip() == kit.rev("refs/heads/series/9.9")
    for t in TOPICS:
        assert kit.rev("refs/heads/" + t, cwd=other) == kit.rev("refs/heads/" + t)


def test_foreign_commit_is_refused_and_kept(kit):
    kit.laid_out()
    kit.git("checkout", "-q", TOPICS[0])
    (kit.ktree / "fs" / "ext2" / "balloc.c").write_text("local hack\n")
    kit.git("commit", "-q", "-a", "-m", "my local hack")
    foreign = kit.rev("HEAD")
    # change the stored series so that the branches would have to move
    patches = sorted((kit.repo / "patches").glob("*.patch"))
    text = patches[1].read_text().replace("Per-group locks.", "Per-group locks, rebased.")
    patches[1].write_text(text)
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 1
    assert "%s: %s my local hack" % (TOPICS[0], foreign[:12]) in res.err
    assert "Nothing was changed" in res.err
    assert kit.refs() == before
    assert kit.rev("refs/heads/" + TOPICS[0]) == foreign


def test_foreign_commit_on_series_branch(kit):
    kit.laid_out()
    head = kit.rev("refs/heads/series/9.9")
    tree = kit.rev(head + "^{tree}")
    extra = kit.git("commit-tree", tree, "-p", head, "-m", "empty experiment")
    kit.git("update-ref", "refs/heads/series/9.9", extra)
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 1
    assert "series/9.9: %s empty experiment" % extra[:12] in res.err
    assert kit.refs() == before


def test_reworded_series_commit_is_not_foreign(kit):
    kit.laid_out()
    head = kit.rev("refs/heads/series/9.9")
    tree = kit.rev(head + "^{tree}")
    reworded = kit.git("commit-tree", tree, "-p", head + "^", "-m", "same change, other words")
    kit.git("update-ref", "refs/heads/series/9.9", reworded)
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert kit.rev("refs/heads/series/9.9") == head
    # the replaced tip stays reachable
    assert kit.rev("refs/fork/prev/series/9.9") == reworded


def test_dirty_tree_refused_when_checked_out_branch_moves(kit):
    kit.laid_out()
    kit.git("checkout", "-q", "series/9.9")
    (kit.ktree / "README").write_text("work in progress\n")
    patches = sorted((kit.repo / "patches").glob("*.patch"))
    patches[1].write_text(patches[1].read_text().replace("Per-group locks.", "Per-group locks!"))
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 1
    assert "uncommitted changes" in res.err
    assert "README" in res.err
    assert kit.refs() == before             # not even the topic that is not checked out
    assert (kit.ktree / "README").read_text() == "work in progress\n"
    # once clean, it moves, work tree included
    kit.git("checkout", "--", "README")
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert kit.rev("HEAD") == kit.rev("refs/heads/series/9.9") != before["refs/heads/series/9.9"]
    assert "Per-group locks!" in kit.git("log", "-1", "--format=%B", "HEAD")
    assert kit.git("status", "--porcelain") == ""


def test_dirty_tree_is_fine_when_checked_out_branch_stays(kit):
    kit.laid_out()
    kit.git("checkout", "-q", TOPICS[0])
    (kit.ktree / "README").write_text("work in progress\n")
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert (kit.ktree / "README").read_text() == "work in progress\n"


def test_patch_that_does_not_apply(kit):
    kit.laid_out()
    patches = sorted((kit.repo / "patches").glob("*.patch"))
    text = patches[1].read_text()
    assert " /* inode line 4 */\n" in text
    patches[1].write_text(text.replace(" /* inode line 4 */\n", " /* inode line 4 (changed) */\n"))
    before = kit.refs()
    res = kit.fork("branches")
    assert res.rc == 1
    assert "patch %s does not apply" % patches[1] in res.err or \
        "%s does not apply" % patches[1].name in res.err
    assert "files: fs/ext2/inode.c" in res.err
    assert "no branch was changed" in res.err
    assert kit.refs() == before


def test_needs_kernel_tree_and_import(kit):
    res = kit.fork("branches")
    assert res.rc == 1
    assert "no kernel tree at %s" % kit.ktree in res.err
    assert "tools/fork import" in res.err
    kit.git("init", "-q", str(kit.ktree), cwd=kit.tmp)
    res = kit.fork("branches")
    assert res.rc == 1
    assert "unknown revision 'distro/9.9'" in res.err


def test_backport_series_uses_its_own_prefix(kit):
    kit.imported()
    bp = kit.repo / "backports" / "9.9"
    bp.mkdir(parents=True)
    (bp / "base").write_text((kit.repo / "patches" / "base").read_text())
    # the primary series lives elsewhere: two series cannot share series/9.9
    kit.write_base("0" * 64, version="9.8.1-1", package="linux-source-9.8")
    kit.make_patches(PATCHES[:1], dest=bp)
    res = kit.fork("branches", "--series", "backports/9.9")
    assert res.rc == 0, res
    assert kit.rev("refs/heads/backport/9.9/ext2-make-balloc-faster") == res.out.strip()
    assert kit.rev("refs/heads/series/9.9") == res.out.strip()


def test_bad_series_directory(kit):
    res = kit.fork("branches", "--series", "backports/1.0")
    assert res.rc == 1
    assert "no series at backports/1.0" in res.err
    (kit.repo / "patches" / "series").write_text("0001-missing.patch\n")
    res = kit.fork("branches")
    assert res.rc == 1
    assert "lists 0001-missing.patch, which does not exist" in res.err


def test_series_entry_outside_the_series_directory_is_refused(kit):
    kit.laid_out()
    outside = kit.tmp / "outside.patch"
    outside.write_text((kit.repo / "patches" / "0001-ext2-make-balloc-faster.patch").read_text())
    refs = kit.refs()
    for entry in ("../../outside.patch", str(outside)):
        (kit.repo / "patches" / "series").write_text(entry + "\n")
        res = kit.fork("branches")
        assert res.rc == 1, res
        line = res.err.strip()
        assert "\n" not in line and "Traceback" not in line
        assert "%r is not a file name in patches/" % entry in line
        assert kit.refs() == refs


def backport_on_the_primary_version(kit):
    """backports/9.9/: one patch on 9.9, where the primary series also is."""
    bp = kit.repo / "backports" / "9.9"
    bp.mkdir(parents=True)
    (bp / "base").write_text((kit.repo / "patches" / "base").read_text())
    kit.make_patches(PATCHES[:1], dest=bp)
    kit.commit_repo("a backport on 9.9")


def test_two_series_on_one_version_are_refused(kit):
    kit.laid_out()
    backport_on_the_primary_version(kit)
    refs = kit.refs()
    for argv, other in ((["--series", "backports/9.9"], "patches/"),
                        ([], "backports/9.9/")):
        res = kit.fork("branches", *argv)
        assert res.rc == 1, res
        assert "\n" not in res.err.strip()
        assert "%s is on linux-source-9.9 too" % other in res.err
        assert "cannot share" in res.err and "series/9.9" in res.err
        assert kit.refs() == refs
    files = {p.name: p.read_bytes() for p in (kit.repo / "backports" / "9.9").iterdir()}
    res = kit.fork("save", "--series", "backports/9.9")
    assert res.rc == 1 and "patches/ is on linux-source-9.9 too" in res.err, res
    assert {p.name: p.read_bytes() for p in (kit.repo / "backports" / "9.9").iterdir()} == files
    assert kit.refs() == refs
