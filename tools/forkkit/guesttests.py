"""Guest tests shared by check, bisect and bench: disk images made on the
host, a guest script, and host-side verification (e2fsck, counters)."""

import hashlib
import os
import re

from .common import ForkError, ensure_dir, repo_root, run, which, wpath

# name -> (image size, mke2fs block size, guest script). The scripts use the
# static programs of ci/guest (in the guest's /bin) and busybox.
TESTS = {
    # create/write/read back/truncate/unlink across directories from 2
    # tasks, statfs in between, then the seed workload in two directories.
    "smoke": ("128M", 1024, """set -e
mount -t ext2 /dev/vda /mnt
stress -p 2 -o 1500 -s 1 /mnt
mkdir /mnt/a /mnt/b
seedload -n 9 -m 200 /mnt/a /mnt/b
rmdir /mnt/a /mnt/b
fsreport /mnt
umount /mnt
"""),
    # the longer multi-task stress plus fill-to-ENOSPC (for debug kernels).
    "stress": ("64M", 1024, """set -e
mount -t ext2 /dev/vda /mnt
stress -p 4 -t 40 -s 7 /mnt
mkdir /mnt/a /mnt/b /mnt/c
seedload -n 16 -m 300 /mnt/a /mnt/b /mnt/c /mnt/c
rmdir /mnt/a /mnt/b /mnt/c
fillspace -p 3 /mnt
stress -p 2 -t 20 -s 11 /mnt
fsreport /mnt
umount /mnt
mount -t ext2 -o ro /dev/vda /mnt
fsreport /mnt
umount /mnt
"""),
    # errors=remount-ro, then a repair through the block device while
    # read-only (a corrupted directory block restored, 100 leaked blocks
    # freed, the error flag cleared: what e2fsck -fy does), then remount
    # read-write: statfs must report the repaired free counts.  The ext2
    # error is expected: the console loglevel is lowered around the one
    # command that triggers it (the console's error lines fail the boot)
    # and the kernel log is checked for it instead.
    "repair-remount": ("64M", 1024, """set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/d
echo x > /mnt/d/f
ino=$(stat -c %i /mnt/d)
umount /mnt
blk=$(ext2poke /dev/vda iblock $ino)
dd if=/dev/vda of=/tmp/dirblock bs=1024 skip=$blk count=1 2>/dev/null
first=$(ext2poke /dev/vda leak 0 100)
dd if=/dev/zero of=/dev/vda bs=1024 seek=$blk count=1 conv=notrunc 2>/dev/null
sync
mount -t ext2 -o errors=remount-ro /dev/vda /mnt
seedload -n 9 -m 50 /mnt
lvl=$(awk '{ print $1 }' /proc/sys/kernel/printk)
echo 1 > /proc/sys/kernel/printk
if cat /mnt/d/f > /dev/null 2>&1; then echo "FAIL: corrupted directory read"; exit 1; fi
echo $lvl > /proc/sys/kernel/printk
dmesg | grep -q "error: remounting filesystem read-only" || { echo "FAIL: no ext2 error"; exit 1; }
grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts || { echo "FAIL: not read-only after the error"; exit 1; }
dd if=/tmp/dirblock of=/dev/vda bs=1024 seek=$blk count=1 conv=notrunc 2>/dev/null
ext2poke /dev/vda unleak 0 $first 100
ext2poke /dev/vda clear-error
sync
echo 3 > /proc/sys/vm/drop_caches
mount -o remount,rw /mnt
cat /mnt/d/f > /dev/null
seedload -n 9 -m 50 /mnt
fsreport /mnt > /tmp/statfs
ext2poke /dev/vda sums > /tmp/sums
cat /tmp/statfs /tmp/sums
s=$(tr ' ' '\\n' < /tmp/statfs | sed -n 's/^bfree=//p')
g=$(tr ' ' '\\n' < /tmp/sums | sed -n 's/^bfree=//p')
[ -n "$s" ] && [ "$s" = "$g" ] || { echo "FAIL: statfs bfree=$s, group descriptors $g"; exit 1; }
rm -r /mnt/d
fsreport /mnt
umount /mnt
"""),
    # emergency remount (sysrq-u: read-only with SB_FORCE, no writer
    # drain) under 4 tasks doing pwrite/ftruncate on open files, then
    # remount read-write with the tasks still running, for as long as
    # they run (at most 300 cycles).  Once
    # the tasks are done, statfs must equal the group descriptor sums.
    # 256 groups, so that the counter reload scans for a while.
    "emergency-remount": ("2G", 1024, """set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/a /mnt/b /mnt/c /mnt/d
seedload -n 16 -m 60000 /mnt/a /mnt/b /mnt/c /mnt/d > /tmp/seedload.out 2>&1 &
pid=$!
sleep 1
i=0
while [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do
	echo u > /proc/sysrq-trigger
	n=0
	until grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts; do
		n=$((n + 1))
		[ $n -lt 200 ] || { echo "FAIL: sysrq-u did not remount read-only"; exit 1; }
		sleep 0.05
	done
	mount -o remount,rw /mnt
	sleep 0.1
	i=$((i + 1))
done
echo "emergency remount cycles: $i"
wait $pid || true
cat /tmp/seedload.out
grep -q "^/dev/vda /mnt ext2 rw," /proc/mounts || mount -o remount,rw /mnt
rm -rf /mnt/a /mnt/b /mnt/c /mnt/d
fsreport /mnt > /tmp/statfs
ext2poke /dev/vda sums > /tmp/sums
cat /tmp/statfs /tmp/sums
for k in bfree ffree; do
	s=$(tr ' ' '\\n' < /tmp/statfs | sed -n "s/^$k=//p")
	g=$(tr ' ' '\\n' < /tmp/sums | sed -n "s/^$k=//p")
	[ -n "$s" ] && [ "$s" = "$g" ] || { echo "FAIL: statfs $k=$s, group descriptors $g"; exit 1; }
done
umount /mnt
"""),
    # s_first_data_block rewritten through the block device while files
    # hold reservation windows, as a fuzzer would; closing the files
    # discards the windows then (nothing allocates or frees while the
    # field is rewritten).  65537 blocks: 8 full groups.
    "fuzz-first-data-block": ("65537", 1024, """set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/a /mnt/b
old=$(ext2poke /dev/vda first-data-block)
for fuzz in 60000 0; do
	exec 3>> /mnt/f 4>> /mnt/a/f 5>> /mnt/b/f
	dd if=/dev/zero bs=4096 count=8 >&3 2>/dev/null
	dd if=/dev/zero bs=4096 count=8 >&4 2>/dev/null
	dd if=/dev/zero bs=4096 count=8 >&5 2>/dev/null
	ext2poke /dev/vda first-data-block $fuzz
	exec 3>&- 4>&- 5>&-
	ext2poke /dev/vda first-data-block $old
done
rm -r /mnt/f /mnt/a /mnt/b
stress -p 2 -o 300 -s 5 /mnt
fsreport /mnt
umount /mnt
"""),
}


def test_key(name):
    """A hash of everything that defines a guest test (programs, init, configs)."""
    h = hashlib.sha256(name.encode() + TESTS[name][2].encode())
    for sub in ("ci/guest", "ci/kconfig"):
        top = os.path.join(repo_root(), sub)
        for dirpath, dirnames, files in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "out")
            for f in sorted(files):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    h.update(f.encode() + fh.read())
    return h.hexdigest()[:16]


def make_image(path, size, blocksize, log=None):
    which("mke2fs", "e2fsprogs")
    ensure_dir(os.path.dirname(path))
    if os.path.exists(path):
        os.unlink(path)
    run(["mke2fs", "-q", "-F", "-t", "ext2", "-b", str(blocksize), path, size], log=log)
    return path


def results(output):
    """Parse the RESULT lines of guest output into dicts."""
    out = []
    for line in output:
        idx = line.find("RESULT ")
        if idx < 0:
            continue
        fields = {}
        for kv in line[idx + len("RESULT "):].split():
            if "=" in kv:
                k, v = kv.split("=", 1)
                fields[k] = v
        out.append(fields)
    return out


def group_sums(image):
    """Free blocks/inodes summed over the group descriptors (dumpe2fs)."""
    out = run(["dumpe2fs", image], check=True).stdout
    blocks = sum(int(x) for x in re.findall(r"^\s+(\d+) free blocks, ", out, re.M))
    inodes = sum(int(x) for x in re.findall(r", (\d+) free inodes, ", out, re.M))
    return blocks, inodes


def fsck(image, reports=(), log=None):
    """e2fsck -fn must be clean and the guest's last statfs must equal the
    free counts of the (now verified) group descriptors.  Returns an error
    string, or None when all is well."""
    which("e2fsck", "e2fsprogs")
    proc = run(["e2fsck", "-fn", image], check=False)
    if log:
        with open(log, "a") as fh:
            fh.write("$ e2fsck -fn %s\n%s%s" % (image, proc.stdout, proc.stderr))
    if proc.returncode != 0:
        # the problems, not the "Pass N: ..." progress lines or the version banner
        lines = [l.strip() for l in (proc.stdout + proc.stderr).splitlines()
                 if l.strip() and not re.match(r"(Pass \d+[A-Z]?: |e2fsck \d)", l)]
        return "e2fsck -fn exit %d: %s" % (proc.returncode, "; ".join(lines[:4]))
    fs = [r for r in reports if r.get("prog") == "fsreport"]
    if fs:
        last = fs[-1]
        blocks, inodes = group_sums(image)
        if int(last["bfree"]) != blocks or int(last["ffree"]) != inodes:
            return ("guest statfs said bfree=%s ffree=%s, group descriptors hold %d/%d"
                    % (last["bfree"], last["ffree"], blocks, inodes))
    return None


def image_path(label):
    return os.path.join(ensure_dir(wpath("images")), "%s.img" % label)


def check_test_name(name):
    if name not in TESTS:
        raise ForkError("unknown guest test %r: choose one of %s" % (name, ", ".join(TESTS)))
