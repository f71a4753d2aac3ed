"""guesttests: RESULT parsing and the host-side e2fsck/statfs verification
on real small ext2 images."""

import re
import subprocess

import pytest

from conftest import BASE_CONFIG
from forkkit.guest import guesttests
from forkkit.verify import kernel
from forkkit.core.errors import ForkError


def test_results_parsing():
    out = guesttests.results([
        "FORK-GUEST-START 9.9.1 cpus=2",
        "RESULT prog=stress ops=300 errors=0",
        "[   12.345678] RESULT prog=fsreport bfree=3806 ffree=1013 extra",
        "no result here",
        "RESULT",
        "RESULT prog=seedload files=9 path=/mnt/a=b",
    ])
    assert out == [
        {"prog": "stress", "ops": "300", "errors": "0"},
        {"prog": "fsreport", "bfree": "3806", "ffree": "1013"},
        {"prog": "seedload", "files": "9", "path": "/mnt/a=b"},
    ]
    assert guesttests.results([]) == []


def counts(img):
    out = subprocess.run(["dumpe2fs", "-h", str(img)], capture_output=True, text=True,
                         check=True).stdout
    fields = dict(re.findall(r"^([A-Za-z ]+):\s+(\S+)", out, re.M))
    return int(fields["Free blocks"]), int(fields["Free inodes"])


@pytest.fixture
def image(kit):
    path = guesttests.make_image(guesttests.image_path("t"), "4M", 1024)
    assert path == str(kit.work / "images" / "t.img")
    return path


def test_make_image_and_clean_fsck(image, kit):
    bfree, ffree = counts(image)
    assert guesttests.group_sums(image) == (bfree, ffree)
    log = kit.tmp / "fsck.log"
    reports = [{"prog": "stress", "ops": "1"},
               {"prog": "fsreport", "bfree": "1", "ffree": "1"},            # an older one
               {"prog": "fsreport", "bfree": str(bfree), "ffree": str(ffree)}]
    assert guesttests.fsck(image, reports, log=str(log)) is None
    assert "$ e2fsck -fn %s" % image in log.read_text()
    assert guesttests.fsck(image, need_statfs=False) is None
    res = guesttests.verify_image(image, reports)
    assert res["e2fsck"][0] == "pass" and res["counts"][0] == "pass"
    # the row says which counts were compared
    assert res["counts"][1] == ("free blocks/inodes equal: superblock %d/%d, group descriptors "
                                "%d/%d, e2fsck %d/%d, guest statfs %d/%d"
                                % ((bfree, ffree) * 4))
    # make_image replaces an existing image
    with open(image, "r+b") as fh:
        fh.seek(1024)
        fh.write(b"\xff" * 1024)            # trash the superblock
    guesttests.make_image(image, "4M", 1024)
    assert guesttests.fsck(image, need_statfs=False) is None


def test_missing_fsreport_is_a_failure(image):
    # a guest test that printed no statfs line must not pass the comparison
    res = guesttests.verify_image(image, [{"prog": "stress", "ops": "1"}])
    assert res["e2fsck"][0] == "pass"
    assert res["counts"][0] == "FAIL"
    assert "not compared: no guest statfs count" in res["counts"][1]
    assert guesttests.fsck(image, []) is not None
    res = guesttests.verify_image(image, [{"prog": "fsreport", "bfree": "x"}])
    assert res["counts"][0] == "FAIL"


@pytest.mark.parametrize("field,delta", [("free_blocks_count", -3706), ("free_inodes_count", 5)])
def test_wrong_superblock_count_fails(image, field, delta):
    # e2fsck -fn passes an image whose superblock free count is wrong; the
    # counts comparison must not.
    bfree, ffree = counts(image)
    value = (bfree if field == "free_blocks_count" else ffree) + delta
    subprocess.run(["debugfs", "-w", "-R", "ssv %s %d" % (field, value), image],
                   capture_output=True, check=True)
    assert counts(image) != (bfree, ffree)
    assert subprocess.run(["e2fsck", "-fn", image], capture_output=True).returncode == 0
    # the guest's statfs agreeing with the group descriptors is not enough
    res = guesttests.verify_image(image, [{"prog": "fsreport", "bfree": str(bfree),
                                           "ffree": str(ffree)}])
    assert res["e2fsck"][0] == "pass"
    assert res["counts"][0] == "FAIL", res
    assert "free blocks/inodes differ: superblock %d/%d" % (
        (value, ffree) if field == "free_blocks_count" else (bfree, value)) in res["counts"][1]


def test_fsreport_mismatch(image):
    bfree, ffree = counts(image)
    err = guesttests.fsck(image, [{"prog": "fsreport", "bfree": str(bfree - 1),
                                   "ffree": str(ffree)}])
    assert err == ("free blocks/inodes differ: superblock %d/%d, group descriptors %d/%d, "
                   "e2fsck %d/%d, guest statfs %d/%d"
                   % (bfree, ffree, bfree, ffree, bfree, ffree, bfree - 1, ffree))
    err = guesttests.fsck(image, [{"prog": "fsreport", "bfree": str(bfree),
                                   "ffree": str(ffree + 2)}])
    assert "guest statfs %d/%d" % (bfree, ffree + 2) in err


def test_unlinked_but_not_freed_inode_fails(image, tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x" * 5000)
    subprocess.run(["debugfs", "-w", "-R", "write %s victim" % data, image],
                   capture_output=True, check=True)
    assert guesttests.fsck(image, need_statfs=False) is None
    # drop the directory entry only: inode and blocks stay allocated
    subprocess.run(["debugfs", "-w", "-R", "unlink victim", image], capture_output=True,
                   check=True)
    err = guesttests.fsck(image, need_statfs=False)
    assert err and err.startswith("e2fsck -fn exit 4: "), err
    assert "Unattached inode 12" in err
    assert "Pass " not in err               # the problems, not e2fsck's progress lines


def test_corrupted_block_bitmap_fails(image):
    out = subprocess.run(["dumpe2fs", image], capture_output=True, text=True, check=True).stdout
    block = int(re.search(r"Block bitmap at (\d+)", out).group(1))
    with open(image, "r+b") as fh:
        fh.seek(block * 1024)
        fh.write(b"\x5a" * 1024)
    err = guesttests.fsck(image, need_statfs=False)
    assert err and err.startswith("e2fsck -fn exit 4: "), err
    assert "Block bitmap differences" in err, err


def test_test_key_and_names(kit):
    key = guesttests.test_key("smoke")
    assert re.match(r"^[0-9a-f]{16}$", key)
    assert guesttests.test_key("stress") != key
    (kit.repo / "ci" / "guest" / "init").write_text("changed\n")
    assert guesttests.test_key("smoke") != key
    # a flavour's fragment is not an input of the guest side (the image's
    # sha256 names the config): editing one keeps every test's key, and
    # only the check cache of that flavour changes
    key = guesttests.test_key("smoke")
    cache = {f: kernel.cache_key(f, "smoke") for f in ("base", "debug", "lockstat")}
    kc = kit.repo / "ci" / "kconfig"
    (kc / "debug.config").write_text("CONFIG_DEBUG_KERNEL=y\nCONFIG_DEBUG_INFO=y\n")
    assert guesttests.test_key("smoke") == key
    assert kernel.cache_key("debug", "smoke") != cache["debug"]
    assert kernel.cache_key("base", "smoke") == cache["base"]
    assert kernel.cache_key("lockstat", "smoke") == cache["lockstat"]
    (kc / "base.config").write_text(BASE_CONFIG + "CONFIG_PRINTK=y\n")
    assert kernel.cache_key("lockstat", "smoke") != cache["lockstat"]
    with pytest.raises(ForkError, match="unknown config flavour 'nope': choose one of "):
        kernel.cache_key("nope", "smoke")
    guesttests.check_test_name("smoke")
    with pytest.raises(ForkError, match="unknown guest test 'nope': choose one of smoke, stress, seed"):
        guesttests.check_test_name("nope")


def test_repair_mode_repairs_then_checks(image):
    """Tests that break the disk on purpose (injected I/O errors) are
    judged after e2fsck -fy: the repaired disk must be clean and its
    counts equal; without the repair the same disk fails."""
    out = subprocess.run(["dumpe2fs", image], capture_output=True, text=True, check=True).stdout
    block = int(re.search(r"Block bitmap at (\d+)", out).group(1))
    with open(image, "r+b") as fh:
        fh.seek(block * 1024)
        fh.write(b"\x5a" * 1024)
    assert guesttests.verify_image(image, need_statfs=False)["e2fsck"][0] == "FAIL"
    res = guesttests.verify_image(image, need_statfs=False, repair=True)
    assert res["e2fsck"] == ("pass", "e2fsck -fy, then -fn clean"), res
    assert res["counts"][0] == "pass", res
