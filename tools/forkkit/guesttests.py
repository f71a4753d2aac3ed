"""Guest tests shared by check, bisect and bench: disk images made on the
host, a guest script, and host-side verification (e2fsck, counters)."""

import collections
import hashlib
import os
import re

from .common import ForkError, ensure_dir, repo_root, run, which, wpath

# name -> (image size, mke2fs block size, guest script[, options]). The
# scripts use the static programs of ci/guest (in the guest's /bin) and
# busybox.  options: {"expect": [regex, ...]}: kernel reports the test
# provokes on purpose (e.g. an ext2 error it triggers); each must appear in
# the console, and only console lines matching one of them are excused.
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
    # a short seedload run (three tasks, two sharing a directory): bisect's
    # quick test.
    "seed": ("64M", 1024, """set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/a /mnt/b
seedload -n 9 -m 200 /mnt/a /mnt/b /mnt/b
rmdir /mnt/a /mnt/b
fsreport /mnt
umount /mnt
"""),
}

GuestTest = collections.namedtuple("GuestTest", "name size blocksize script expect")


def spec(name):
    """The guest test `name` as a GuestTest."""
    check_test_name(name)
    entry = TESTS[name]
    opts = entry[3] if len(entry) > 3 else {}
    return GuestTest(name, entry[0], entry[1], entry[2], list(opts.get("expect", [])))


def test_key(name):
    """A hash of everything that defines a guest test (programs, init, configs)."""
    h = hashlib.sha256(name.encode() + repr(TESTS[name]).encode())
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


def dumpe2fs_counts(image):
    """{"sb_blocks", "sb_inodes", "blocks", "inodes", "group_blocks",
    "group_inodes"}: the superblock's free counts and totals, and the free
    counts summed over the group descriptors."""
    out = run(["dumpe2fs", image], check=True).stdout

    def header(field):
        m = re.search(r"^%s:\s+(\d+)$" % field, out, re.M)
        if not m:
            raise ForkError("dumpe2fs %s printed no `%s:` line" % (image, field))
        return int(m.group(1))
    return {
        "sb_blocks": header("Free blocks"), "sb_inodes": header("Free inodes"),
        "blocks": header("Block count"), "inodes": header("Inode count"),
        "group_blocks": sum(int(x) for x in re.findall(r"^\s+(\d+) free blocks, ", out, re.M)),
        "group_inodes": sum(int(x) for x in re.findall(r", (\d+) free inodes, ", out, re.M)),
    }


def group_sums(image):
    """Free blocks/inodes summed over the group descriptors (dumpe2fs)."""
    c = dumpe2fs_counts(image)
    return c["group_blocks"], c["group_inodes"]


E2FSCK_SUMMARY_RE = re.compile(r": (\d+)/(\d+) files \([^)]*\), (\d+)/(\d+) blocks$", re.M)


def verify_image(image, reports=(), log=None, need_statfs=True):
    """Host-side verdict on a guest test's disk: {"e2fsck": (cell, detail),
    "counts": (cell, detail)}.

    e2fsck -fn must be clean: that verifies every group descriptor's free
    counts against the bitmaps.  It does not fail on a wrong superblock free
    count, so the counts are compared here: the superblock's free blocks
    and inodes must equal the sums over the group descriptors, e2fsck's
    summary line, and the guest's last statfs (fsreport).  A test that
    printed no fsreport line fails (the comparison must run) unless
    need_statfs is False (bench and frag workloads, which have none)."""
    which("e2fsck", "e2fsprogs")
    which("dumpe2fs", "e2fsprogs")
    proc = run(["e2fsck", "-fn", image], check=False)
    if log:
        with open(log, "a") as fh:
            fh.write("$ e2fsck -fn %s\n%s%s" % (image, proc.stdout, proc.stderr))
    out = {}
    if proc.returncode != 0:
        # the problems, not the "Pass N: ..." progress lines or the version banner
        lines = [l.strip() for l in (proc.stdout + proc.stderr).splitlines()
                 if l.strip() and not re.match(r"(Pass \d+[A-Z]?: |e2fsck \d)", l)]
        out["e2fsck"] = ("FAIL", "e2fsck -fn exit %d: %s" % (proc.returncode,
                                                            "; ".join(lines[:4])))
    else:
        out["e2fsck"] = ("pass", "e2fsck -fn clean")
    c = dumpe2fs_counts(image)
    seen = [("superblock", c["sb_blocks"], c["sb_inodes"]),
            ("group descriptors", c["group_blocks"], c["group_inodes"])]
    m = E2FSCK_SUMMARY_RE.search(proc.stdout)
    if m:
        seen.append(("e2fsck", int(m.group(4)) - int(m.group(3)),
                     int(m.group(2)) - int(m.group(1))))
    else:
        seen.append(("e2fsck", None, None))
    fs = [r for r in reports if r.get("prog") == "fsreport"]
    if fs:
        try:
            seen.append(("guest statfs", int(fs[-1]["bfree"]), int(fs[-1]["ffree"])))
        except (KeyError, ValueError):
            seen.append(("guest statfs", None, None))
    elif need_statfs:
        seen.append(("guest statfs", None, None))
    text = ", ".join("%s %s/%s" % (who, "?" if b is None else b, "?" if i is None else i)
                     for who, b, i in seen)
    missing = [who for who, b, i in seen if b is None or i is None]
    if missing:
        out["counts"] = ("FAIL", "free blocks/inodes not compared: no %s count (%s)"
                         % (" or ".join(missing), text))
    elif len({(b, i) for _, b, i in seen}) != 1:
        out["counts"] = ("FAIL", "free blocks/inodes differ: %s" % text)
    else:
        out["counts"] = ("pass", "free blocks/inodes equal: %s" % text)
    return out


def fsck(image, reports=(), log=None, need_statfs=True):
    """verify_image() as one error string, or None when all is well."""
    res = verify_image(image, reports, log, need_statfs)
    errs = [detail for cell, detail in res.values() if cell != "pass"]
    return "; ".join(errs) or None


def image_path(label):
    return os.path.join(ensure_dir(wpath("images")), "%s.img" % label)


def check_test_name(name):
    if name not in TESTS:
        raise ForkError("unknown guest test %r: choose one of %s" % (name, ", ".join(TESTS)))
