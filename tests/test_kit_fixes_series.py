"""A second series on the primary's snapshot (the fixes series): its own
branch names from `branches:` in its base file; the guest tests' disks of
other filesystems and the disk cache mode."""

import shutil
import struct

import pytest

from conftest import KVER

from forkkit.guest import guesttests, qemu
from forkkit.repo import series as series_mod


def add_fixes_series(kit, version=None):
    """fixes/ with the primary's base plus `branches: fixes`, and the
    primary's first patch as its only patch."""
    base = (kit.repo / "patches" / "base").read_text()
    if version:
        base = "\n".join("version: " + version if l.startswith("version:") else l
                         for l in base.splitlines()) + "\n"
    d = kit.repo / "fixes"
    d.mkdir()
    (d / "base").write_text(base + "branches: fixes\n")
    first = sorted((kit.repo / "patches").glob("*.patch"))[0]
    shutil.copyfile(first, d / first.name)
    (d / "series").write_text(first.name + " one-fix\n")
    kit.commit_repo("fixes series")


def test_branches_word_names_the_series_branches(kit):
    kit.laid_out()
    add_fixes_series(kit)
    s = series_mod.Series("fixes")
    assert s.head_branch == "fixes/%s" % KVER
    assert [b for _, b in s.topics()] == ["fixes-topic/%s/one-fix" % KVER]
    assert "fixes" in {x.rel for x in series_mod.stored_series()}


def test_fixes_series_lays_out_beside_the_primary_without_moving_it(kit):
    kit.laid_out()
    add_fixes_series(kit)
    before = kit.refs()
    res = kit.fork("branches", "--series", "fixes")
    assert res.rc == 0, res
    after = kit.refs()
    # the primary's branches did not move; the fixes series has its own
    assert {k: v for k, v in after.items() if k in before} == before
    head = after["refs/heads/fixes/%s" % KVER]
    assert after["refs/heads/fixes-topic/%s/one-fix" % KVER] == head
    assert kit.rev(head + "^") == kit.rev("distro/%s" % KVER)
    # and laying out the primary again leaves the fixes branches alone
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert kit.refs()["refs/heads/fixes/%s" % KVER] == head


def test_same_version_different_snapshot_is_refused(kit):
    kit.laid_out()
    add_fixes_series(kit, version="9.9.2-1")
    before = kit.refs()
    res = kit.fork("branches", "--series", "fixes")
    assert res.rc == 1
    assert "name different snapshots" in res.err and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert kit.refs() == before


def test_bad_branches_word_is_refused(kit):
    kit.laid_out()
    add_fixes_series(kit)
    base = kit.repo / "fixes" / "base"
    base.write_text(base.read_text().replace("branches: fixes", "branches: ../x"))
    res = kit.fork("branches", "--series", "fixes")
    assert res.rc == 1
    assert "is not a plain lower-case word" in res.err and "Traceback" not in res.err


def test_disk_cache_mode_reaches_qemu(tmp_path):
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * 512)
    cmd = qemu.qemu_cmd("k", "i", [str(disk)], 2, "512", False, "", cache="writethrough")
    drive = [a for a in cmd if a.startswith("file=")]
    assert drive == ["file=%s,format=raw,if=virtio,cache=writethrough" % disk]
    cmd = qemu.qemu_cmd("k", "i", [str(disk)], 2, "512", False, "")
    assert [a for a in cmd if a.startswith("file=")][0].endswith(",cache=unsafe")


@pytest.mark.skipif(not shutil.which("mkfs.minix"), reason="util-linux's mkfs.minix: tools/setup")
def test_minix_disk_is_made_and_checked(kit, tmp_path):
    img = str(tmp_path / "m.img")
    guesttests.make_image(img, "4M", 1024, fs="minix")
    assert guesttests.verify_other(img, "minix") == {
        "e2fsck": ("pass", "fsck.minix -f clean"),
        "counts": ("n/a", "minix: no group descriptors")}
    # break the inode bitmap's first bytes: fsck.minix must say so
    with open(img, "r+b") as fh:
        fh.seek(2048)
        fh.write(b"\0" * 8)
    cell, detail = guesttests.verify_other(img, "minix")["e2fsck"]
    assert cell == "FAIL" and detail.startswith("fsck.minix -f exit ")


@pytest.mark.skipif(not shutil.which("makefs"), reason="the makefs package: tools/setup")
def test_ufs_disk_is_ufs1_as_linux_mounts_it(kit, tmp_path):
    img = tmp_path / "u.img"
    guesttests.make_image(str(img), "8M", 8192, fs="ufs")
    data = img.read_bytes()
    assert len(data) == 8 << 20
    # UFS1 superblock at 8192, fs_magic at offset 1372, little-endian
    assert struct.unpack_from("<I", data, 8192 + 1372)[0] == 0x011954
    assert not (tmp_path / "u.img.d").exists()
    cells = guesttests.verify_other(str(img), "ufs")
    assert {c for c, _ in cells.values()} == {"n/a"}


def test_fs_option_of_the_guest_tests():
    assert guesttests.spec("smoke").fs == "ext2" and guesttests.spec("smoke").cache == "unsafe"
    for name in guesttests.TESTS:
        assert guesttests.spec(name).fs in guesttests.FILESYSTEMS, name


def test_kit_key_covers_subpackages(tmp_path):
    """A verdict names the kit's code: a module moved into a subpackage,
    or changed there, gives another key."""
    from forkkit.verify import kernel
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 1\n")
    k1 = kernel._code_hash(str(pkg))
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    k2 = kernel._code_hash(str(pkg))
    assert k1 != k2
    (pkg / "sub" / "b.py").rename(pkg / "b.py")
    assert kernel._code_hash(str(pkg)) not in (k1, k2)
