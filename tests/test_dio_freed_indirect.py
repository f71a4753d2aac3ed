"""The O_DIRECT / freed indirect block fix (fixes/0006): the `throttle`
config flavour its guest test needs, and the guest test `dio-freed-indirect`
(ci/guest/dioreuse.c run with a cgroup v2 io.max holding a write back)."""

import os
import re
import shutil
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
    # throttled: the kicker's cgroup, enough iterations, the disk it reads;
    # each iteration printed, for the log to show what set the race up
    n = int(re.search(r" -n (\d+) ", run[0]).group(1))
    assert n >= 20 and " -c " in run[0] and run[0].split()[-4:-2] == ["/mnt", "/dev/vda"]
    assert " -v " in run[0] and " -a " not in run[0]
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


# -- the script's io.max, run in busybox on the host ---------------------------
#
# The guest's paths become a scratch directory's, and the commands that
# would touch the host (mount, umount, the guest programs, and mkdir, which
# in cgroupfs makes io.max) are shell functions.  KERNEL_IO_MAX says what
# the kicker's io.max is: "file" takes the limit as written, "null" (a
# kernel that drops it) reads back empty, "refuse" fails the write.

BUSYBOX = shutil.which("busybox") or "/bin/busybox"

STUBS = """\
mount() { echo "mount $*" >> "$LOG"; }
umount() { echo "umount $*" >> "$LOG"; }
fsreport() { echo "fsreport $*" >> "$LOG"; }
dioreuse() { echo "dioreuse $*" >> "$LOG"; }
mkdir() {
	command mkdir "$1"
	case $KERNEL_IO_MAX in
	file) : > "$1/io.max" ;;
	null) ln -s /dev/null "$1/io.max" ;;
	refuse) command mkdir "$1/io.max" ;;
	esac
}
"""


def run_script(tmp_path, io_max):
    root = tmp_path / io_max
    (root / "cg").mkdir(parents=True)
    (root / "cg" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "vda").mkdir()
    (root / "vda" / "dev").write_text("254:0\n")
    (root / "filesystems").write_text("nodev\tcgroup2\n\text2\n")
    script = guesttests.spec("dio-freed-indirect").script
    for guest, host in (("/sys/fs/cgroup", root / "cg"), ("/sys/block/vda", root / "vda"),
                        ("/proc/filesystems", root / "filesystems")):
        assert guest in script
        script = script.replace(guest, str(host))
    env = dict(os.environ, LOG=str(root / "log"), KERNEL_IO_MAX=io_max)
    proc = subprocess.run([BUSYBOX, "sh", "-c", STUBS + script], capture_output=True,
                          text=True, env=env, timeout=60)
    log = (root / "log").read_text().splitlines() if (root / "log").exists() else []
    return proc, log, root


@pytest.mark.skipif(not os.access(BUSYBOX, os.X_OK), reason="no busybox")
def test_the_script_runs_the_test_once_io_max_holds_the_limit(tmp_path):
    proc, log, root = run_script(tmp_path, "file")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (root / "cg" / "kicker" / "io.max").read_text() == "254:0 wiops=2\n"
    assert "FAIL" not in proc.stdout
    assert log == ["mount -t cgroup2 none %s" % (root / "cg"), "mount -t ext2 /dev/vda /mnt",
                   "dioreuse -v -n 40 -c %s/kicker /mnt /dev/vda" % (root / "cg"),
                   "fsreport /mnt", "umount /mnt"]


@pytest.mark.skipif(not os.access(BUSYBOX, os.X_OK), reason="no busybox")
@pytest.mark.parametrize("io_max", ["null", "refuse"])
def test_the_script_fails_in_one_line_when_io_max_did_not_take_the_limit(tmp_path, io_max):
    """A limit the kernel dropped or refused would let every write of the
    kicker through: the script says so in one line and runs nothing."""
    proc, log, _ = run_script(tmp_path, io_max)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    fails = [l for l in proc.stdout.splitlines() if "FAIL" in l]
    assert len(fails) == 1 and proc.stdout.splitlines()[-1] == fails[0]
    assert fails[0].startswith("FAIL: dio-freed-indirect: io.max of the kicker's cgroup "
                               'did not take "254:0 wiops=2" for vda')
    assert log == ["mount -t cgroup2 none %s" % (tmp_path / io_max / "cg")]
