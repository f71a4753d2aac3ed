"""fork build, against the fake kernel's Makefile (see conftest.FAKE_MAKEFILE)."""

import os

import pytest

from conftest import BASE_CONFIG


def image_of(kit):
    return kit.work / "build" / "9.9-base" / "arch" / "x86" / "boot" / "bzImage"


def stored(res):
    """The stored image a build printed (work/kernels/<sha256>.bzImage)."""
    import hashlib
    import os
    path = res.out.strip()
    name = os.path.basename(path)
    assert name.endswith(".bzImage")
    with open(path, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == name[:-len(".bzImage")]
    return path


def builds(kit):
    f = kit.work / "build" / "9.9-base" / "build-count"
    return len(f.read_text().splitlines()) if f.exists() else 0


def set_fragment(kit, extra=""):
    (kit.repo / "ci" / "kconfig" / "base.config").write_text(BASE_CONFIG + extra)


def test_build_then_already_built(kit):
    kit.imported()
    head_before = kit.rev("HEAD")
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 0, res
    image = image_of(kit)
    assert stored(res).startswith(str(kit.work / "kernels") + "/")
    assert open(stored(res)).read() == image.read_text()
    config = image.read_text()          # the fake bzImage is the .config
    assert "CONFIG_EXT2_FS=y" in config and "CONFIG_MODULES=n" in config
    assert "NOT_IN_THIS_TREE" not in config        # `# if-present`, not in any Kconfig
    # the config is kept beside the stored image (fstests' KCONFIG_PATH)
    kept = stored(res)[:-len(".bzImage")] + ".config"
    assert open(kept).read() == (kit.work / "build" / "9.9-base" / ".config").read_text()
    assert builds(kit) == 1
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 0, res
    assert "already built" in res.err
    assert builds(kit) == 1
    # built in the private worktree; the user's checkout is untouched
    assert kit.git("rev-parse", "HEAD", cwd=kit.work / "src") == kit.rev("distro/9.9")
    assert kit.rev("HEAD") == head_before
    assert kit.git("status", "--porcelain") == ""


def test_missing_option_is_named(kit):
    kit.imported()
    set_fragment(kit, "CONFIG_NEEDS_DEP=y\n")
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 1
    assert "config option CONFIG_NEEDS_DEP=y" in res.err
    assert "is not set" in res.err
    assert "depends on" in res.err
    assert not image_of(kit).exists()


def test_failed_configure_is_not_reused(kit):
    kit.imported()
    assert kit.fork("build", "distro/9.9", "-j1").rc == 0
    set_fragment(kit, "CONFIG_EXTRA=y\nCONFIG_NEEDS_DEP=y\n")
    assert kit.fork("build", "distro/9.9", "-j1").rc == 1
    set_fragment(kit)
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 0, res
    # the .config of the failed attempt must not pass for the good one
    assert "CONFIG_EXTRA" not in (kit.work / "build" / "9.9-base" / ".config").read_text()


def test_config_change_rebuilds(kit):
    kit.imported()
    assert kit.fork("build", "distro/9.9", "-j1").rc == 0
    set_fragment(kit, "CONFIG_EXTRA=y\n")
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 0, res
    assert "already built" not in res.err
    assert "CONFIG_EXTRA=y" in image_of(kit).read_text()
    assert builds(kit) == 2


def test_patchcheck_on_touched_files(kit):
    kit.laid_out()
    assert kit.fork("build", "distro/9.9", "-j1").rc == 0
    # series/9.9 touches fs/ext2/inode.c; inode.o exists, so it is rechecked
    res = kit.fork("build", "-j1")
    assert res.rc == 0, res
    assert "patchcheck: W=1" in res.err and "on 1 objects" in res.err
    assert builds(kit) == 2
    # a commit that adds a warning in a file it touches fails the build
    kit.git("checkout", "-q", "-b", "warn", "series/9.9")
    f = kit.ktree / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text() + "WARNME\n")
    kit.git("commit", "-q", "-a", "-m", "ext2: add a warning")
    commit = kit.rev("HEAD")
    res = kit.fork("build", "warn", "-j1")
    assert res.rc == 1
    assert "warnings in files %s touches" % commit[:12] in res.err
    assert "../../src/fs/ext2/balloc.c:2:1: warning: WARNME is not allowed" in res.err
    # not marked checked: the next build tries again; --no-patchcheck skips it
    res = kit.fork("build", "warn", "-j1", "--no-patchcheck")
    assert res.rc == 0, res
    assert "patchcheck:" not in res.err
    # ... but a build without the patchcheck never passes for one with it
    res = kit.fork("build", "warn", "-j1")
    assert res.rc == 1, res
    assert "warnings in files %s touches" % commit[:12] in res.err


def test_build_without_patchcheck_is_checked_later(kit):
    # bench and bisect build with do_patchcheck=False; a later build or
    # check of the same commit must still run the W=1/sparse patchcheck.
    kit.laid_out()
    kit.git("checkout", "-q", "-b", "warn", "series/9.9")
    f = kit.ktree / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text() + "WARNME\n")
    kit.git("commit", "-q", "-a", "-m", "ext2: add a warning")
    assert kit.fork("build", "warn", "-j1", "--no-patchcheck").rc == 0
    res = kit.fork("build", "warn", "-j1")
    assert res.rc == 1, res
    assert "WARNME is not allowed" in res.err
    assert builds(kit) == 1             # the image was reused, only the check ran


def test_stored_image_survives_the_next_build(kit):
    # check/bench/bisect boot the stored copy: a build of another commit
    # (same shared build dir) must not change what an earlier build returned.
    kit.laid_out()
    a = stored(kit.fork("build", "distro/9.9", "-j1"))
    a_text = open(a).read()
    set_fragment(kit, "CONFIG_EXTRA=y\n")
    b = stored(kit.fork("build", "distro/9.9", "-j1"))
    assert a != b and open(a).read() == a_text and "CONFIG_EXTRA=y" in open(b).read()
    # the index gives the first one back without a rebuild
    set_fragment(kit)
    n = builds(kit)
    res = kit.fork("build", "distro/9.9", "-j1")
    assert stored(res) == a and builds(kit) == n and "already built" in res.err


def test_each_stored_image_keeps_its_own_config(kit):
    """<sha256>.config beside each stored image is the config that built
    it (the fake bzImage is its .config), also when it is stored again on
    an index hit after another config used the shared build dir."""
    import os
    kit.laid_out()
    a = stored(kit.fork("build", "distro/9.9", "-j1"))
    set_fragment(kit, "CONFIG_EXTRA=y\n")
    b = stored(kit.fork("build", "distro/9.9", "-j1"))
    conf = {p: p[:-len(".bzImage")] + ".config" for p in (a, b)}
    for p in (a, b):
        assert open(conf[p]).read() == open(p).read()
    assert open(conf[a]).read() != open(conf[b]).read()
    os.unlink(conf[a])
    set_fragment(kit)
    n = builds(kit)
    res = kit.fork("build", "distro/9.9", "-j1")
    assert stored(res) == a and builds(kit) == n          # an index hit, no make
    assert open(conf[a]).read() == open(a).read() != open(conf[b]).read()


def test_patchcheck_ignores_warnings_the_parent_already_has(kit):
    kit.laid_out()
    # the parent carries a warning; a commit touching the same file must
    # not be blamed for it, but one that adds a new one must be
    kit.git("checkout", "-q", "-b", "old-warn", "series/9.9")
    f = kit.ktree / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text() + "WARNME\n")
    kit.git("commit", "-q", "-a", "-m", "ext2: pre-existing warning")
    f.write_text(f.read_text() + "/* harmless */\n")
    kit.git("commit", "-q", "-a", "-m", "ext2: touch the file")
    res = kit.fork("build", "old-warn", "-j1")
    assert res.rc == 0, res
    assert "comparing with the parent" in res.err
    g = kit.ktree / "fs" / "ext2" / "inode.c"
    g.write_text(g.read_text() + "WARNME\n")
    kit.git("commit", "-q", "-a", "-m", "ext2: a new warning elsewhere")
    res = kit.fork("build", "old-warn", "-j1")
    assert res.rc == 1
    assert "warnings in files" in res.err


def test_build_dependency_missing(kit):
    kit.imported()
    res = kit.fork("build", "distro/9.9", env={"PATH": kit.path_without("flex")})
    assert res.rc == 1
    assert "build dependency flex is missing" in res.err
    assert "apt-get install flex" in res.err


def test_unknown_revision(kit):
    kit.imported()
    res = kit.fork("build", "no-such-branch")
    assert res.rc == 1
    assert "unknown revision 'no-such-branch'" in res.err
    res = kit.fork("build")          # default: series/9.9, not laid out yet
    assert res.rc == 1
    assert "unknown revision 'series/9.9'" in res.err
    assert "tools/fork branches" in res.err


def test_dirty_build_worktree_is_refused(kit):
    kit.imported()
    assert kit.fork("build", "distro/9.9", "-j1").rc == 0
    (kit.work / "src" / "README").write_text("edited in the wrong place\n")
    res = kit.fork("build", "distro/9.9", "-j1")
    assert res.rc == 1
    assert "build worktree %s has local changes" % (kit.work / "src") in res.err
    assert "README" in res.err


def _interrupted_checkout(kit, balloc=None, added=None, extra=None):
    """work/src at distro/9.9, half switched to a commit that changes
    balloc.c and adds added.c, with the kit's mark of a checkout under
    way, as a Ctrl-C during `git checkout` leaves it: balloc.c as that
    commit has it (or `balloc`), added.c absent (or `added`), `extra` a
    file changed besides.  Returns the commit and work/src's git dir."""
    from forkkit.repo import worktree
    kit.imported()
    assert kit.fork("build", "distro/9.9", "-j1").rc == 0
    kit.git("checkout", "-q", "-b", "switched", "distro/9.9")
    f = kit.ktree / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text() + "/* switched */\n")
    (kit.ktree / "fs" / "ext2" / "added.c").write_text("/* added */\n")
    kit.git("add", "fs/ext2/added.c")
    kit.git("commit", "-q", "-a", "-m", "ext2: a change to switch to")
    target = kit.git("rev-parse", "HEAD").strip()
    src = kit.work / "src"
    (src / "fs" / "ext2" / "balloc.c").write_text(balloc or f.read_text())
    if added is not None:
        (src / "fs" / "ext2" / "added.c").write_text(added)
    if extra:
        (src / extra).write_text("edited in the wrong place\n")
    gitdir = kit.git("rev-parse", "--absolute-git-dir", cwd=src).strip()
    with open(os.path.join(gitdir, worktree.CHECKOUT_MARK), "w") as fh:
        fh.write(target + "\n")
    return target, gitdir


def test_interrupted_checkout_of_the_build_worktree_is_finished(kit):
    target, gitdir = _interrupted_checkout(kit, added="/* added */\n")
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 0, res
    assert "which was interrupted" in res.err
    src = kit.work / "src"
    assert kit.git("status", "--porcelain", "--untracked-files=no", cwd=src).strip() == ""
    assert kit.git("rev-parse", "HEAD", cwd=src).strip() == target
    assert "fork-checkout" not in os.listdir(gitdir)


@pytest.mark.parametrize("length", [0, 10])
def test_interrupted_checkout_with_the_file_being_written_is_finished(kit, length):
    # git was stopped after it truncated balloc.c (empty) or wrote a part of it
    target, gitdir = _interrupted_checkout(kit)
    f = kit.work / "src" / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text()[:length])
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 0, res
    assert "which was interrupted" in res.err
    assert kit.git("rev-parse", "HEAD", cwd=kit.work / "src").strip() == target
    assert "/* switched */" in f.read_text()
    assert kit.git("status", "--porcelain", "--untracked-files=no",
                   cwd=kit.work / "src").strip() == ""
    assert "fork-checkout" not in os.listdir(gitdir)


@pytest.mark.parametrize("length", [0, 10])
def test_interrupted_checkout_with_the_last_file_being_written_is_finished(kit, length):
    # added.c sorts before balloc.c: written whole, then balloc.c in part
    target, gitdir = _interrupted_checkout(kit, added="/* added */\n")
    f = kit.work / "src" / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text()[:length])
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 0, res
    assert kit.git("status", "--porcelain", "--untracked-files=no",
                   cwd=kit.work / "src").strip() == ""
    assert "fork-checkout" not in os.listdir(gitdir)


def _refused(kit, path, text):
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 1
    assert "has local changes" in res.err
    assert (kit.work / "src" / path).read_text() == text


def test_interrupted_checkout_keeps_a_file_that_is_more_than_the_commits_start(kit):
    # the commit's balloc.c whole, then a line of someone's own
    _interrupted_checkout(kit)
    f = kit.work / "src" / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text() + "my own line\n")
    _refused(kit, "fs/ext2/balloc.c", f.read_text())
    # the start of the commit's balloc.c, then a line of someone's own
    f.write_text("/*\nmy own line\n")
    _refused(kit, "fs/ext2/balloc.c", "/*\nmy own line\n")


def test_interrupted_checkout_keeps_a_shortened_file_the_commit_does_not_change(kit):
    # README emptied by a person (a prefix of the commit's README, which the
    # checkout does not write)
    _interrupted_checkout(kit)
    (kit.work / "src" / "README").write_text("")
    _refused(kit, "README", "")


def test_interrupted_checkout_with_two_files_in_part_is_refused(kit):
    _interrupted_checkout(kit, added="/* add")
    f = kit.work / "src" / "fs" / "ext2" / "balloc.c"
    f.write_text(f.read_text()[:5])
    _refused(kit, "fs/ext2/added.c", "/* add")


def test_interrupted_checkout_with_a_file_in_part_before_a_whole_one_is_refused(kit):
    # added.c sorts before balloc.c, which holds the commit's version: git
    # did not stop while writing added.c
    _interrupted_checkout(kit, added="/* add")
    _refused(kit, "fs/ext2/added.c", "/* add")


def test_interrupted_checkout_with_other_changes_is_refused(kit):
    _interrupted_checkout(kit, extra="README")
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 1
    assert "build worktree %s has local changes" % (kit.work / "src") in res.err
    assert (kit.work / "src" / "README").read_text() == "edited in the wrong place\n"
    assert "/* switched */" in (kit.work / "src" / "fs" / "ext2" / "balloc.c").read_text()


def test_interrupted_checkout_keeps_an_edit_of_a_switched_file(kit):
    # balloc.c is a file the checkout writes, but what it holds is nobody's checkout
    _interrupted_checkout(kit, balloc="my own fix\n")
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 1
    assert "build worktree %s has local changes" % (kit.work / "src") in res.err
    assert (kit.work / "src" / "fs" / "ext2" / "balloc.c").read_text() == "my own fix\n"


def test_interrupted_checkout_keeps_an_untracked_file_where_the_commit_adds_one(kit):
    _interrupted_checkout(kit, added="my own new file\n")
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 1
    assert (kit.work / "src" / "fs" / "ext2" / "added.c").read_text() == "my own new file\n"


def test_interrupted_checkout_with_a_lock_left_says_what_to_remove(kit):
    _, gitdir = _interrupted_checkout(kit)
    open(os.path.join(gitdir, "index.lock"), "w").close()
    res = kit.fork("build", "switched", "-j1")
    assert res.rc == 1
    assert "index.lock is left: remove it if no git runs there" in res.err
    assert "/* switched */" in (kit.work / "src" / "fs" / "ext2" / "balloc.c").read_text()


def test_fragment_parsing_and_warning_regex(tmp_path):
    from forkkit.build import kbuild as cmd_build, kconfig, patchcheck
    from forkkit.core.errors import ForkError
    frag = tmp_path / "x.config"
    frag.write_text("# comment\nCONFIG_A=y\nCONFIG_B=n  # if-present\n\nCONFIG_C=\"str\"\n")
    assert kconfig.parse_fragment(str(frag)) == [
        ("CONFIG_A", "y", False), ("CONFIG_B", "n", True), ("CONFIG_C", '"str"', False)]
    frag.write_text("CONFIG_A=y\nEXT2=y\n")
    with pytest.raises(ForkError, match=r"x.config:2: not a CONFIG_X=value line"):
        kconfig.parse_fragment(str(frag))
    cfg = tmp_path / ".config"
    cfg.write_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n")
    assert kconfig.read_config(str(cfg)) == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "m"}
    m = patchcheck.WARN_RE.match("../../src/fs/ext2/balloc.c:12:3: warning: unused variable 'x'")
    assert m and m.group(1) == "fs/ext2/balloc.c" and m.group(2) == "12"
    m = patchcheck.WARN_RE.match("fs/ext2/inode.c:7: error: bad")
    assert m and m.group(1) == "fs/ext2/inode.c"
    m = patchcheck.WARN_RE.match("/srv/kit/work/src/fs/ext2/dir.c:1:1: warning: w")
    assert m and m.group(1) == "fs/ext2/dir.c"
    assert not patchcheck.WARN_RE.match("  CC      fs/ext2/inode.o")
    # the W=1 kernel-doc check: scripts/kernel-doc (Perl, 6.12 and before)
    # speaks as gcc does; the Python kernel-doc of later kernels (7.3) says
    # "Warning: FILE:LINE ..." (measured: 7.3's W=1 build of a commit that
    # added an undocumented parameter to a kernel-doc'ed function)
    for line, where in (
            ("../../src/fs/ext2/balloc.c:1020: warning: Function parameter or "
             "struct member 'group_last_block' not described in 'try_to_extend_reservation'",
             ("fs/ext2/balloc.c", "1020")),
            ("Warning: src/fs/ext2/balloc.c:1019 function parameter "
             "'group_last_block' not described in 'try_to_extend_reservation'",
             ("fs/ext2/balloc.c", "1019")),
            ("Warning: ../../src/fs/ext2/super.c:88 Excess function parameter 'x' "
             "description in 'f'", ("fs/ext2/super.c", "88"))):
        m = patchcheck.match_warning(line)
        assert m and m[:2] == where, line
    assert patchcheck.match_warning("Warning: no file here") is None
    assert patchcheck.warning_key("Warning: /a/src/fs/ext2/balloc.c:1019 function parameter "
                                  "'g' not described in 'f'") == \
        patchcheck.warning_key("Warning: fs/ext2/balloc.c:1093 function parameter "
                               "'g' not described in 'f'")


def test_unknown_flavour_from_other_verbs(kit):
    # rebase/bisect/check pass a flavour through to build(): a clean error,
    # not a KeyError traceback
    from forkkit.build import kbuild as cmd_build, kconfig, patchcheck
    from forkkit.core.errors import ForkError
    with pytest.raises(ForkError, match=r"unknown config flavour 'nope': choose one of base, "):
        cmd_build.build("distro/9.9", "nope")


def test_sparse_refused_by_the_kernel_is_not_a_pass(monkeypatch):
    # 6.15+ Makefiles skip sparse with a warning when sparse cannot parse
    # the tree (bookworm's 0.6.4 on 7.3): the patchcheck must say so
    # instead of counting sparse as run.
    from forkkit.build import patchcheck
    monkeypatch.setattr(patchcheck.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(patchcheck, "sparse_version", lambda: "sparse 0.6.4")
    out = ("  CC      fs/ext2/balloc.o\n/k/Makefile:1311: C=1 specified, but sparse is not "
           "available or not up to date\n")
    state = patchcheck.sparse_state(out, ["fs/ext2/balloc.o"])
    assert state.startswith("not run: this kernel refuses sparse 0.6.4"), state
    objs = ["fs/ext2/balloc.o", "fs/ext2/inode.o"]
    out = "  CHECK   fs/ext2/balloc.c\n  CC      fs/ext2/balloc.o\n"
    assert patchcheck.sparse_state(out, objs) == "not run on fs/ext2/inode.c (no CHECK line)"
    out += "  CHECK   fs/ext2/inode.c\n  CC      fs/ext2/inode.o\n"
    assert patchcheck.sparse_state(out, objs) == "ran"
    # an O= build names the absolute source path (6.12, 2026-12-04)
    out = "  CHECK   /w/src/fs/ext2/balloc.c\n  CHECK   /w/src/fs/ext2/inode.c\n"
    assert patchcheck.sparse_state(out, objs) == "ran"
    assert patchcheck.sparse_state("  CHECK   /w/src/fs/ext3/inode.c\n", ["fs/ext2/inode.o"]) \
        == "not run on fs/ext2/inode.c (no CHECK line)"
    monkeypatch.setattr(patchcheck.shutil, "which", lambda name: None)
    assert patchcheck.sparse_state("", ["fs/ext2/balloc.o"]) == "not run: sparse is not installed"


def test_export_says_sparse_only_where_it_ran():
    from forkkit.publish import export as cmd_export
    from forkkit.verify import kernel
    row = {"cells": {c: "pass" for c in kernel.CELLS}, "details": {"sparse": "ran"}}
    text = cmd_export.check_text([("a" * 40, "ext2: x", row)], "base", "smoke", False)
    assert "a W=1 and sparse build of the files it touches" in text
    refused = dict(row, details={"sparse": "not run: this kernel refuses sparse 0.6.4"})
    text = cmd_export.check_text([("a" * 40, "ext2: x", refused)], "base", "smoke", False)
    assert "a W=1 build of the files it touches" in text and "W=1 and sparse" not in text
    assert "Sparse: not run: this kernel refuses sparse 0.6.4." in text


# what decides an image: every module of the build package
IMAGE_MODULES = {"make.py", "kconfig.py", "patchcheck.py", "kbuild.py"}


def test_the_image_key_names_every_build_module(tmp_path, monkeypatch):
    """A stored image is indexed under the code that built it
    (kbuild.build_key()): an edit of any module of build/ (the worktree
    and make, the flavours, the W=1/sparse patchcheck, the build and its
    store) or a module added there gives another key, so no image of the
    older code is taken for one of the new."""
    import shutil
    from pathlib import Path
    from forkkit.build import kbuild
    src = Path(kbuild.__file__).parent
    assert IMAGE_MODULES <= {p.name for p in src.glob("*.py")}
    copy = tmp_path / "build"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert kbuild._build_hash(str(copy)) == kbuild._build_hash() == kbuild.build_key()
    seen = {kbuild.build_key()}
    for f in sorted(copy.glob("*.py")):
        text = f.read_text()
        f.write_text(text + "\n# edited\n")
        key = kbuild._build_hash(str(copy))
        assert key not in seen, "%s is left out of the image key" % f.name
        seen.add(key)
        f.write_text(text)
    assert kbuild._build_hash(str(copy)) == kbuild.build_key()
    (copy / "extra.py").write_text("X = 1\n")
    assert kbuild._build_hash(str(copy)) not in seen
    # and the key is in every image's index entry name
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    assert kbuild.index_path("t" * 40, "base", "c" * 64).endswith(
        "-%s.json" % kbuild.build_key())
