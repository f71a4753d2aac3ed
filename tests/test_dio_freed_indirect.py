"""The O_DIRECT / freed indirect block fix (fixes/0006): the `throttle`
config flavour its guest test needs, and the guest test `dio-freed-indirect`
(ci/guest/dioreuse.c run with a cgroup v2 io.max holding a write back)."""

import os
import re
import subprocess

import pytest

from conftest import ROOT
from forkkit.build import kconfig
from forkkit.guest import guesttests

THROTTLE = ("CONFIG_CGROUPS", "CONFIG_BLK_CGROUP", "CONFIG_BLK_DEV_THROTTLING")


@pytest.fixture(autouse=True)
def this_repo(monkeypatch):
    monkeypatch.setenv("FORK_REPO", str(ROOT))


def test_throttle_flavour_is_base_plus_its_fragment():
    assert kconfig.FLAVOURS["throttle"] == ["base.config", "throttle.config"]
    own = kconfig.parse_fragment(str(ROOT / "ci" / "kconfig" / "throttle.config"))
    # asserted after olddefconfig on every kernel (none is if-present)
    assert own == [(sym, "y", False) for sym in THROTTLE]
    opts = {s: v for s, v, _ in kconfig.fragment_options("throttle")}
    assert all(opts[s] == "y" for s in THROTTLE)
    # base's options come along: ext2 and the virtio disk
    assert opts["CONFIG_EXT2_FS"] == "y" and opts["CONFIG_VIRTIO_BLK"] == "y"
    text = (ROOT / "ci" / "kconfig" / "throttle.config").read_text()
    assert text.startswith("# ") and "dio-freed-indirect" in text.split("CONFIG_")[0]


KTREE = os.environ.get("FORK_KTREE") or str(ROOT / "work" / "linux")


@pytest.mark.skipif(not os.path.isdir(os.path.join(KTREE, ".git")),
                    reason="no kernel tree (work/linux or FORK_KTREE)")
@pytest.mark.parametrize("branch", ["distro/7.3", "distro/6.12", "distro/6.1"])
def test_throttle_symbols_exist_in_each_kernel(branch):
    have = subprocess.run(["git", "rev-parse", "-q", "--verify", branch], cwd=KTREE,
                          capture_output=True).returncode == 0
    if not have:
        pytest.skip("%s is not imported" % branch)
    for sym in THROTTLE:
        proc = subprocess.run(["git", "grep", "-q", "-E", r"^(menu)?config %s$" % sym[7:],
                               branch, "--", "*Kconfig"], cwd=KTREE)
        assert proc.returncode == 0, (branch, sym)


def test_guest_test_is_registered_and_renders():
    t = guesttests.spec("dio-freed-indirect")
    assert (t.blocksize, t.fs, t.need_statfs, t.repair) == (4096, "ext2", True, False)
    lines = t.script.splitlines()
    run = [l for l in lines if l.startswith("dioreuse ")]
    assert len(run) == 1
    # throttled: the kicker's cgroup, enough iterations, the disk it reads
    n = int(re.search(r" -n (\d+) ", run[0]).group(1))
    assert n >= 20 and " -c " in run[0] and run[0].split()[-4:-2] == ["/mnt", "/dev/vda"]
    # the host's checks need a statfs of the filesystem after the run,
    # also when dioreuse failed
    assert lines.index("fsreport /mnt") > lines.index(run[0])
    assert run[0].endswith("|| rc=1") and lines[-1] == "exit $rc"


def test_without_blk_throttle_the_script_fails_in_one_line_naming_the_flavour():
    script = guesttests.spec("dio-freed-indirect").script
    lines = script.splitlines()
    body = lines[lines.index("nothrottle() {") + 1:lines.index("}")]
    assert len(body) == 2 and body[1].strip() == "exit 1"
    echo = body[0].strip()
    assert echo.startswith('echo "FAIL: ') and "--config throttle" in echo
    # every option the flavour adds is checked before the disk is mounted,
    # each by a line that names it
    mount = lines.index("mount -t ext2 /dev/vda /mnt")
    checks = [l for l in lines[:mount] if "|| nothrottle" in l]
    for sym in THROTTLE:
        assert any(sym in l for l in checks), sym
    assert "throttle" in kconfig.FLAVOURS
