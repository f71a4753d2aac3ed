#!/usr/bin/python3
"""fstests' harness cost per test in the TCG guest (FSTESTS.md, stop 21).

usage: fstcost.py KERNEL ROOT_IMAGE OUT_DIR PATCHED_FSTESTS

Boots KERNEL (an fstests-flavour bzImage) twice on a copy of ROOT_IMAGE (a
guest root of stock fstests), QEMU thread=multi (the kit's) and then
thread=single, and times `./check -R xunit` (as the kit runs it) on 8 ext4/
tests that end "not run" on ext2: with the root's stock common/config and
common/report, and with those of PATCHED_FSTESTS (an fstests checkout with
ci/fstests/patches applied), by the guest clock.  Prints "COST variant start
end" per check run.  Takes the kit's guest lock like every boot."""
import os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from forkkit import qemu, fstests
from forkkit.common import Progress

KERNEL, ROOT, OUT, PATCHED = sys.argv[1:5]
TESTS = "ext4/020 ext4/021 ext4/022 ext4/023 ext4/024 ext4/025 ext4/026 ext4/027"
run = r"""#!/bin/bash
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root
cd /opt/xfstests || exit 92
for d in /dev/vdb /dev/vdc; do mkfs.ext2 -F -q $d; done
mkdir -p /mnt/test /mnt/scratch
t() { cut -d' ' -f1 /proc/uptime; }
cp common/config /tmp/config.stock; cp common/report /tmp/report.stock
stock() { cp /tmp/config.stock common/config; cp /tmp/report.stock common/report; }
patched() { cp /results/config.patched common/config; cp /results/report.patched common/report; }
for v in VARIANTS; do
  $v; a=$(t); ./check -R xunit TESTS > /dev/null 2>&1; b=$(t); echo "COST $v $a $b"
done
stock
""".replace("TESTS", TESTS)
orig = qemu.qemu_cmd
for thread, variants in (("multi", "stock patched patched stock"), ("single", "patched stock")):
    os.makedirs(OUT, exist_ok=True)
    disks = {d: os.path.join(OUT, d + ".img") for d in ("root", "test", "scratch", "results")}
    subprocess.run(["cp", "--sparse=always", ROOT, disks["root"]], check=True)
    for d in ("test", "scratch", "results"):
        with open(disks[d], "wb") as fh:
            fh.truncate(fstests.DISK_MB[d] << 20)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", disks["results"]], check=True)
    for f in ("config", "report"):
        subprocess.run(["debugfs", "-w", "-R", "write %s/common/%s %s.patched" % (PATCHED, f, f),
                        disks["results"]], check=True, capture_output=True)
    script = fstests.guest_script(TESTS.split(), 1500).split("cat > /mnt/root/results/fork-run.sh")[0]
    script += "cat > /mnt/root/results/fork-run.sh <<'FORK_EOF'\n%s\nFORK_EOF\n" % run.replace("VARIANTS", variants)
    script += "chroot /mnt/root /bin/bash /results/fork-run.sh\nsync\n"
    def cmd(*a, **k):
        c = orig(*a, **k)
        c[c.index("-accel") + 1] = "tcg,thread=%s" % thread
        return c
    qemu.qemu_cmd = cmd
    t0 = time.time()
    res = qemu.run_guest(KERNEL, script, [disks[d] for d in ("root", "test", "scratch", "results")],
                         timeout=1500, prog=Progress("fstcost2"), label="tcg-fstcost2")
    for l in res.output:
        if l.startswith("COST"):
            print(thread, l, flush=True)
    print(thread, "boot wall", round(time.time() - t0), flush=True)
    for d in disks.values():
        os.unlink(d)
