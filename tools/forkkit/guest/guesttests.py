"""Guest tests shared by check, bisect and bench: disk images made on the
host, a guest script, and host-side verification (e2fsck, counters)."""

import collections
import hashlib
import os
import re

from ..core.errors import ForkError
from ..core.paths import ensure_dir, repo_root, wpath
from ..core.proc import run, which
from . import scripts

# name -> (image size, mke2fs block size, guest script[, options]).  The
# guest script is a template of ci/guest/scripts/ (scripts.render(); its
# README says what each holds), filled in with the options' "params"
# ({NAME: value}, none by default).  The scripts use the static programs
# of ci/guest (in the guest's /bin) and busybox.  options: "expect": [regex, ...]: kernel reports the test
# provokes on purpose (e.g. an ext2 error it triggers); each must appear in
# the console, and only console lines matching one of them are excused.
# "allow": [regex, ...]: reports the test may provoke (injected faults),
# excused but not required.  "mkfs": extra mke2fs arguments.  "repair":
# the host runs e2fsck -fy before the checks (the test breaks the
# filesystem on purpose; what counts is that e2fsck repairs it to a clean
# state).  "statfs": False when the test's last statfs cannot match the
# disk (a repair changes the counts).  "cache": the disk's QEMU cache
# mode (qemu.qemu_cmd(); default "unsafe").  "fs": the filesystem the host
# makes on the disk and checks afterwards, "ext2" (the default: e2fsck and
# the free-count comparison), "minix" (mkfs.minix -3, fsck.minix -f; the
# counts cell is "n/a": minix has no group descriptors to compare) or
# "ufs" (UFS1 as 4.4BSD lays it out, made by makefs; Debian has no UFS
# checker, so both host cells are "n/a" and the guest test is the verdict).
TESTS = {
    # create/write/read back/truncate/unlink across directories from 2
    # tasks, statfs in between, then the seed workload in two directories.
    "smoke": ("128M", 1024, "smoke.sh"),
    # the longer multi-task stress (then once with every task in one
    # directory, so in one block group) plus fill-to-ENOSPC (for debug
    # kernels).
    "stress": ("64M", 1024, "stress.sh"),
    # a short seedload run (three tasks, two sharing a directory): bisect's
    # quick test.
    "seed": ("64M", 1024, "seed.sh"),
    # errors=remount-ro, then a repair through the block device while
    # read-only (a corrupted directory block restored, 100 leaked blocks
    # freed, the error flag cleared: what e2fsck -fy does), then remount
    # read-write: statfs must report the repaired free counts.  The ext2
    # error is provoked on purpose, so the test names it ("expect"): it must
    # appear on the console, and only it is excused.
    "repair-remount": ("64M", 1024, "repair-remount.sh",
                       {"expect": [r"EXT2-fs \(vda\): error: "]}),
    # emergency remount (sysrq-u: read-only with SB_FORCE, no writer
    # drain) while 4 tasks append to their own file through a descriptor
    # opened before (such writes go on allocating while the filesystem is
    # read-only and through the remount read-write, which the test does at
    # once) and truncate it between cycles, so that the reload of the free
    # counters on the remount read-write scans the descriptors while blocks
    # are being allocated.  Before each cycle the writers stop truncating
    # (each acknowledges), so that nothing is freed during it; the blocks
    # their files hold are summed before and after the remount read-write;
    # then they pause and statfs is compared with the group descriptor
    # sums.  A reload without a lock misses the blocks allocated in groups
    # the scan has passed before the counter is set (statfs too high, by
    # at most what the files grew during the remount plus one allocation in
    # flight per writer, charged to i_blocks before the descriptor and the
    # counter are updated) and counts twice an
    # allocation between its descriptor and its counter update when the
    # counter is set (too low, by at most one allocation per writer: a
    # data block and its indirect blocks, 4 x 4 = 16).  The test allows 64
    # blocks more on either side and prints every difference.  The free
    # inodes must be exact (no inode is allocated or freed during the
    # cycles); so must both counts after a reload with no writer running
    # (the read-only repair case) and after the filesystem is mounted
    # again.  2048 groups of 1024 blocks, so that the reload's scan lasts.
    "emergency-remount": ("2G", 1024, "emergency-remount.sh",
                          {"mkfs": ["-g", "1024", "-N", "32768"]}),
    # s_first_data_block rewritten through the block device while files
    # hold reservation windows, as a fuzzer would; closing the files
    # discards the windows then (nothing allocates or frees while the
    # field is rewritten).  65537 blocks: 8 full groups.
    "fuzz-first-data-block": ("65537", 1024, "fuzz-first-data-block.sh"),
    # fault injection kernels (--config faults).  8192 groups (1024 blocks
    # each; with fewer blocks per group mke2fs needs meta_bg, where stock
    # ext2's statfs reports more free blocks than blocks): mount with the N-th failslab/fail_page_alloc point of the
    # mount failing, N = 1, 2, ... until a mount meets no injected fault;
    # every failed mount returns an error (the errors ext2 prints for it
    # are allowed), kmemleak must find nothing afterwards (the guest init
    # scans), and the next mount works.  faults-setup.sh, which this test
    # and faults-enospc include, makes failslab and fail_page_alloc quiet
    # and has them fail any allocation (also those that may sleep, order 0
    # and highmem); what arms them is up to the test.
    "faults-mount": ("8G", 1024, "faults-mount.sh",
                     {"mkfs": ["-g", "1024", "-N", "65536"],
                      "allow": [r"EXT2-fs \(vda\): error: "]}),
    # fail_make_request on the test disk (5% of its requests fail) under
    # writes, reads and deletes from 4 tasks with the page cache dropped
    # every second, once with errors=continue and once with
    # errors=remount-ro: ext2 must report errors (it did 219-980 times per
    # run on 7.3; "expect"), the kernel must not
    # crash or hang, umount must work, and e2fsck -fy must repair the
    # disk to a clean state (the host checks that).
    "faults-io": ("64M", 1024, "faults-io.sh",
                  {"expect": [r"EXT2-fs \(vda\): error"], "repair": True, "statfs": False}),
    # fill to ENOSPC with 3% of the fill tasks' slab and page allocations
    # failing (after a first fill without faults has every bitmap and
    # inode table block in the cache), then delete everything: the free
    # counts must be back exactly where they were (fillspace checks it,
    # then the host: e2fsck, superblock = descriptors = statfs).
    "faults-enospc": ("64M", 1024, "faults-enospc.sh"),
    # Reservation windows grown side by side: 4 tasks append O_DIRECT
    # writes of 1-7 pages to files of their own in one directory,
    # truncating every 64 writes and keeping 8-block windows (rsvgrow), on
    # 16 groups of 2048 blocks: the files start 128 blocks apart (ext2's
    # per-task colour) and grow into each other and into the next group,
    # so window extensions (try_to_extend_reservation()) run beside the
    # other tasks' searches and insertions in the same trees.  The kcsan
    # flavour's test for the per-group window locking; e2fsck and the
    # counters judge it under any flavour.
    "rsv-race": ("128M", 4096, "rsv-race.sh", {"mkfs": ["-g", "2048"]}),
    # Directory changes are written synchronously only where DIRSYNC asks
    # for it.  1000 creates and unlinks (createbench) in a directory that
    # is not DIRSYNC: the disk may see a periodic writeback's few writes,
    # not one write per change; mounted -o dirsync, every change is
    # written before the call returns (directory block, then directory
    # inode: two writes per change, 1999-2000 measured).  Not covered:
    # chattr +D (busybox-static has no chattr) and rename.  Fails on stock 6.2 .. 7.3, whose
    # ext2_handle_dirsync() writes every change (fixed by fixes/0001,
    # a patch of its own, not part of the series).  dirsync.sh's
    # parameters: the NAME its lines print, the MOUNT options, the
    # DIRSYNC_MOUNT options (MOUNT with dirsync), the writes the DIRSYNC
    # directory must see AT_LEAST, and what to REPORT before the last
    # umount (fsreport for ext2's counts).
    "dirsync": ("128M", 4096, "dirsync.sh",
                {"params": {"NAME": "dirsync", "MOUNT": "-t ext2",
                            "DIRSYNC_MOUNT": "-t ext2 -o dirsync", "AT_LEAST": 1900,
                            "REPORT": "fsreport /mnt"}}),
    # The same on minix (mkfs.minix -3 on the host, fsck.minix -f after):
    # minix_handle_dirsync() took the same conversion in 6.3 and writes
    # every change too.  Fails on stock 6.3 .. 7.3 (fixed by the minix
    # patch of the fixes series).
    "minix-dirsync": ("64M", 1024, "dirsync.sh",
                      {"fs": "minix", "statfs": False,
                       "params": {"NAME": "minix-dirsync", "MOUNT": "-t minix",
                                  "DIRSYNC_MOUNT": "-t minix -o dirsync", "AT_LEAST": 1000,
                                  "REPORT": ""}}),
    # And on ufs (UFS1, 4.4BSD layout, made by makefs; the kernel's
    # CONFIG_UFS_FS_WRITE): ufs_handle_dirsync() took the same conversion
    # in 6.4.  Fails on stock 6.4 .. 7.3 (fixed by the ufs patch of the
    # fixes series).
    "ufs-dirsync": ("64M", 8192, "dirsync.sh",
                    {"fs": "ufs", "statfs": False,
                     "params": {"NAME": "ufs-dirsync", "MOUNT": "-t ufs -o ufstype=44bsd",
                                "DIRSYNC_MOUNT": "-t ufs -o ufstype=44bsd,dirsync",
                                "AT_LEAST": 1000, "REPORT": ""}}),
    # statfs's f_blocks leaves out the metadata overhead except under
    # -o minixdf: bsddf, minixdf, then bsddf again by remount must give
    # the first figure again.  Fails on stock ext2, whose cached overhead
    # keeps the minixdf figure after minixdf is turned off (fixed by the
    # minixdf patch of the fixes series).
    "minixdf-overhead": ("64M", 1024, "minixdf-overhead.sh"),
    # An O_DIRECT|O_DSYNC write that extends i_size inside the file's
    # last allocated block, on a disk without a volatile write cache
    # (QEMU cache=writethrough): when pwrite() returns, the disk must hold
    # the new size (dsyncsize reads the inode back with O_DIRECT).  Fails
    # on stock 7.x, whose ext2_iomap_begin() clears IOMAP_F_DIRTY right
    # after setting it, so iomap writes the data with FUA (or, as here,
    # to a write-through disk) and skips generic_write_sync() (fixed by
    # the IOMAP_F_DIRTY patch of the fixes series).
    "dio-dsync-size": ("64M", 4096, "dio-dsync-size.sh", {"cache": "writethrough"}),
    # A write of a freed indirect block that is already in flight must
    # not land on the O_DIRECT data of the file that gets the block next.
    # 40 times (dioreuse): a file's indirect block is written by a second
    # process's fsync, which runs in a cgroup whose io.max lets 2 writes a
    # second of the disk through, so that blk-throttle holds each of its
    # writes for about 500 ms (the fsync writes the indirect block, the
    # inode and a cache flush: an iteration takes about 1.5 s); the file is
    # truncated meanwhile, and a new file written with O_DIRECT by the
    # first process gets the freed block; read back, it must hold what was
    # written.  Fails on stock 6.5 .. 7.3, where ext2_free_branches() frees
    # the block without waiting for the write and iomap's direct I/O does
    # not look at the block device's buffers (fixed by the freed-indirect
    # patch of the fixes series), and whenever fewer than half of the
    # iterations set the race up: the cgroup's io.stat (wios) must show
    # the write held in blk-throttle when the truncate began and then
    # either the truncate waiting for it (a fixed kernel) or the write
    # leaving only after the new file's and zeroing its block (stock).
    # The script reads io.max back and fails in one line unless it holds
    # the limit for vda; dioreuse checks it names the disk it tests.
    # Needs blk-throttle (--config throttle); on a kernel without it the
    # script fails in one line that names the flavour.
    "dio-freed-indirect": ("64M", 4096, "dio-freed-indirect.sh"),
}

GuestTest = collections.namedtuple(
    "GuestTest", "name size blocksize script expect allow mkfs repair need_statfs cache fs")

# the filesystems a guest test's disk may hold: (host program that makes
# it, its package)
FILESYSTEMS = {"ext2": ("mke2fs", "e2fsprogs"), "minix": ("mkfs.minix", "util-linux"),
               "ufs": ("makefs", "makefs")}


def render(name):
    """(guest test `name`'s script, [the templates it is made of])."""
    check_test_name(name)
    entry = TESTS[name]
    opts = entry[3] if len(entry) > 3 else {}
    return scripts.render(entry[2], opts.get("params"))


def spec(name):
    """The guest test `name` as a GuestTest, its script filled in."""
    check_test_name(name)
    entry = TESTS[name]
    opts = entry[3] if len(entry) > 3 else {}
    return GuestTest(name, entry[0], entry[1], render(name)[0], list(opts.get("expect", [])),
                     list(opts.get("allow", [])), list(opts.get("mkfs", [])),
                     bool(opts.get("repair")), opts.get("statfs", True),
                     opts.get("cache", "unsafe"), opts.get("fs", "ext2"))


def test_key(name):
    """A hash of everything that defines the guest side of a test: its
    entry in TESTS, ci/guest's programs and init, and of ci/guest/scripts/
    only the templates its script is made of (and the script they make):
    an edit of a template changes the keys of the tests made of it alone,
    and every other test keeps the verdicts cached under its key.  The
    kernel's config is not in it: a base image's evidence is named by the
    image's sha256, which covers the config, and the check cache adds the
    flavour's fragments (kernel.cache_key()), so editing one flavour's
    fragment (fstests.config) does not reset what the others have kept."""
    text, files = render(name)
    h = hashlib.sha256(name.encode() + repr(TESTS[name]).encode())
    top = os.path.join(repo_root(), "ci", "guest")
    for dirpath, dirnames, names in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "out"
                             and not (dirpath == top and d == "scripts"))
        for f in sorted(names):
            with open(os.path.join(dirpath, f), "rb") as fh:
                h.update(f.encode() + fh.read())
    for f in files:
        h.update(b"\0scripts/" + f.encode() + b"\0" + scripts.read(f))
    h.update(b"\0script\0" + text.encode())
    return h.hexdigest()[:16]


def make_image(path, size, blocksize, log=None, mkfs_args=(), fs="ext2"):
    which(*FILESYSTEMS[fs])
    ensure_dir(os.path.dirname(path))
    if os.path.exists(path):
        os.unlink(path)
    if fs == "minix":
        run(["truncate", "-s", size, path], log=log)
        run(["mkfs.minix", "-3"] + list(mkfs_args) + [path], log=log)
        return path
    if fs == "ufs":
        # an empty UFS1 image, little-endian, one inode per 16 KiB
        empty = ensure_dir(path + ".d")
        run(["makefs", "-t", "ffs", "-B", "le", "-s", size.lower(), "-o",
             "version=1,density=16384"] + list(mkfs_args) + [path, empty], log=log)
        os.rmdir(empty)
        return path
    run(["mke2fs", "-q", "-F", "-t", "ext2", "-b", str(blocksize)] + list(mkfs_args)
        + [path, size], log=log)
    return path


def verify_other(image, fs, log=None):
    """verify_image() for a disk that is not ext2 (minix, ufs)."""
    if fs == "ufs":
        return {"e2fsck": ("n/a", "ufs: Debian packages no UFS checker"),
                "counts": ("n/a", "ufs: no group descriptors")}
    return verify_minix(image, log=log)


def verify_minix(image, log=None):
    """verify_image() for a minix disk: fsck.minix -f (it only reads
    without -a or -r) must find nothing; there are no counts to compare."""
    which("fsck.minix", "util-linux")
    proc = run(["fsck.minix", "-f", image], check=False)
    if log:
        with open(log, "a") as fh:
            fh.write("$ fsck.minix -f %s\n%s%s" % (image, proc.stdout, proc.stderr))
    if proc.returncode != 0:
        lines = [l.strip() for l in (proc.stdout + proc.stderr).splitlines() if l.strip()]
        fsck_cell = ("FAIL", "fsck.minix -f exit %d: %s" % (proc.returncode, "; ".join(lines[:4])))
    else:
        fsck_cell = ("pass", "fsck.minix -f clean")
    return {"e2fsck": fsck_cell, "counts": ("n/a", "minix: no group descriptors")}


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


# e2fsck's exit status bit "canceled by user request": its answer to SIGINT
# and SIGTERM, never a verdict on the disk (core.proc.run() raises Ended)
E2FSCK_CANCELED = 32

E2FSCK_SUMMARY_RE = re.compile(r": (\d+)/(\d+) files \([^)]*\), (\d+)/(\d+) blocks$", re.M)


def verify_image(image, reports=(), log=None, need_statfs=True, repair=False):
    """Host-side verdict on a guest test's disk: {"e2fsck": (cell, detail),
    "counts": (cell, detail)}.

    e2fsck -fn must be clean: that verifies every group descriptor's free
    counts against the bitmaps.  It does not fail on a wrong superblock free
    count, so the counts are compared here: the superblock's free blocks
    and inodes must equal the sums over the group descriptors, e2fsck's
    summary line, and the guest's last statfs (fsreport).  A test that
    printed no fsreport line fails (the comparison must run) unless
    need_statfs is False (bench and frag workloads, which have none).
    With `repair`, `e2fsck -fy` runs first and must exit 0 or 1 (errors
    corrected); the checks above then hold for the repaired disk."""
    which("e2fsck", "e2fsprogs")
    which("dumpe2fs", "e2fsprogs")
    out = {}
    if repair:
        fix = run(["e2fsck", "-fy", image], check=False, canceled=E2FSCK_CANCELED)
        if log:
            with open(log, "a") as fh:
                fh.write("$ e2fsck -fy %s\n%s%s" % (image, fix.stdout, fix.stderr))
        if fix.returncode not in (0, 1):
            out["e2fsck"] = ("FAIL", "e2fsck -fy exit %d: the repair did not finish (%s)"
                             % (fix.returncode, (fix.stdout + fix.stderr).strip()[-300:]))
            out["counts"] = ("-", "not compared: no repaired disk")
            return out
    proc = run(["e2fsck", "-fn", image], check=False, canceled=E2FSCK_CANCELED)
    if log:
        with open(log, "a") as fh:
            fh.write("$ e2fsck -fn %s\n%s%s" % (image, proc.stdout, proc.stderr))
    if proc.returncode != 0:
        # the problems, not the "Pass N: ..." progress lines or the version banner
        lines = [l.strip() for l in (proc.stdout + proc.stderr).splitlines()
                 if l.strip() and not re.match(r"(Pass \d+[A-Z]?: |e2fsck \d)", l)]
        out["e2fsck"] = ("FAIL", "e2fsck -fn exit %d%s: %s" % (
            proc.returncode, " after e2fsck -fy" if repair else "", "; ".join(lines[:4])))
    else:
        out["e2fsck"] = ("pass", "e2fsck -fy, then -fn clean" if repair else "e2fsck -fn clean")
    c = dumpe2fs_counts(image)
    seen = [("superblock", c["sb_blocks"], c["sb_inodes"]),
            ("group descriptors", c["group_blocks"], c["group_inodes"])]
    m = E2FSCK_SUMMARY_RE.search(proc.stdout)
    if m:
        seen.append(("e2fsck", int(m.group(4)) - int(m.group(3)),
                     int(m.group(2)) - int(m.group(1))))
    else:
        seen.append(("e2fsck", None, None))
    fs = [r for r in reports if r.get("prog") == "fsreport"] if need_statfs else []
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
    res = verify_image(image, reports, log, need_statfs=need_statfs)
    errs = [detail for cell, detail in res.values() if cell != "pass"]
    return "; ".join(errs) or None


def image_path(label):
    return os.path.join(ensure_dir(wpath("images")), "%s.img" % label)


def check_test_name(name):
    if name not in TESTS:
        raise ForkError("unknown guest test %r: choose one of %s" % (name, ", ".join(TESTS)))
