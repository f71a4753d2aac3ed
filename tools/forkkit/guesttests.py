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
