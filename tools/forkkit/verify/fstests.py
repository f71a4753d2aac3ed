"""fstests on ext2 in QEMU: the ext2 profile, the guest script, the
selection of tests, reading fstests' results (xunit result.xml, console)
and the base-vs-series verdicts and reports.  fstests_run puts it together;
fsroot.py makes the guest root.

The guest is the kit's busybox initramfs (qemu.run_guest, in one of the
machine's guest slots: core.locks.GuestSlots); its command mounts the root image (/dev/vda,
ext4), chroots into it and runs fstests' ./check there with TEST_DEV
/dev/vdb and SCRATCH_DEV /dev/vdc (mkfs.ext2 in the guest) and the results
on /dev/vdd, which the host reads back with debugfs rdump.
"""

import hashlib
import html
import lzma
import os
import re
import shlex
import xml.etree.ElementTree as ET

from ..core.errors import ForkError
from ..core.paths import repo_root
from ..core.tables import md_cell, md_table
from ..guest.qemu import PROBLEM_RE
from ..guest import scripts
from ..guest.reports import signature
from ..guest.runners import NAMES as RUNNER_NAMES

# test ids fstests' check takes (tests/<dir>/<number>)
TEST_RE = re.compile(r"^(generic|ext4|shared|perf|selftest)/(\d{3,})$")
# dirs check runs for FSTYP=ext2: generic, and ext4's for groups
SELECT_DIRS = ("generic", "ext4")

DEVICES = {"root": "/dev/vda", "test": "/dev/vdb", "scratch": "/dev/vdc",
           "results": "/dev/vdd"}
PROFILE = {
    "FSTYP": "ext2",
    "TEST_DEV": DEVICES["test"],
    "TEST_DIR": "/mnt/test",
    "SCRATCH_DEV": DEVICES["scratch"],
    "SCRATCH_MNT": "/mnt/scratch",
    # default ext2 mkfs and mount: no options
    "MKFS_OPTIONS": "",
    "MOUNT_OPTIONS": "",
    "RESULT_BASE": "/results/xfstests",
}
DISK_MB = {"test": 4096, "scratch": 4096, "results": 256}
RESULT_DIR = "xfstests"     # on the results disk
KCONFIG_NAME = "kernel-config"  # the booted kernel's .config, on the results disk

STATUSES = ("pass", "fail", "notrun")


BLOCK_SIZES = (1024, 2048, 4096)


def make_profile(block_size=None):
    """The ext2 profile, with ``-b BLOCK_SIZE`` in MKFS_OPTIONS when one is
    given (as xfstests-bld's ext2/1k configuration).  Without one mke2fs
    chooses, and it chooses 4096 for the kit's 4 GiB test and scratch disks
    (mke2fs.conf's default type); the profile, and so the record identity
    and the guest script, then stay what they were before the option."""
    profile = dict(PROFILE)
    if block_size is not None:
        if block_size not in BLOCK_SIZES:
            raise ForkError("block size %s: ext2 takes %s"
                            % (block_size, ", ".join(map(str, BLOCK_SIZES))))
        profile["MKFS_OPTIONS"] = "-b %d" % block_size
    return profile


def mkfs_line(profile):
    """How the profile makes the test and scratch filesystems, in words."""
    options = profile.get("MKFS_OPTIONS")
    if options:
        return "`mkfs.ext2 %s` on the test and scratch disks" % options
    return ("`mkfs.ext2` without options: mke2fs chooses 4096-byte blocks for the %d MiB "
            "test and scratch disks" % DISK_MB["test"])


def profile_key(profile=None):
    """8 hex digits naming the profile in record names and identities."""
    return hashlib.sha256(profile_text(profile).encode()).hexdigest()[:8]


def profile_text(profile=None):
    """fstests' local.config of the ext2 profile."""
    profile = profile or PROFILE
    lines = ["# written by tools/fork fstests (ext2 profile)"]
    for k in sorted(profile):
        lines.append("export %s=%s" % (k, shlex.quote(profile[k])))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- selection

def parse_exclude(path=None):
    """{test: reason} of ci/fstests/ext2.exclude: `TEST  # reason` lines;
    a test without a measured reason is refused."""
    path = path or os.path.join(repo_root(), "ci", "fstests", "ext2.exclude")
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            test, _, reason = line.partition("#")
            test, reason = test.strip(), reason.strip()
            if not TEST_RE.match(test):
                raise ForkError("%s:%d: %r is not a test name like generic/001: fix the line"
                                % (path, n, test))
            if not reason:
                raise ForkError("%s:%d: %s has no reason: write the failure or hang measured "
                                "on the base kernel after `#`" % (path, n, test))
            out[test] = reason
    return out


def select(tests, group, groups, exclude):
    """The ordered list of tests to run and the {test: reason} excluded.

    `tests` are explicit names; `group` picks every test of generic/ and
    ext4/ in that group (what fstests' check -g does for ext2); `groups`
    is {test: [group, ...]} of the root's fstests."""
    if tests and group:
        raise ForkError("give either --group or test names, not both")
    if tests:
        bad = [t for t in tests if not TEST_RE.match(t)]
        if bad:
            raise ForkError("%r is not an fstests test name: use DIR/NUMBER such as "
                            "generic/001" % bad[0])
        unknown = [t for t in tests if groups and t not in groups]
        if unknown:
            raise ForkError("no test %s in this fstests checkout: see tests/%s/ of fstests "
                            "(e.g. generic/001)" % (unknown[0], unknown[0].split("/")[0]))
        chosen = []
        for t in tests:
            if t not in chosen:
                chosen.append(t)
    else:
        if not re.match(r"^[a-z0-9_-]+$", group or ""):
            raise ForkError("group %r is not an fstests group name (e.g. quick, auto)" % group)
        chosen = sorted(t for t, g in groups.items()
                        if t.split("/")[0] in SELECT_DIRS and group in g)
        if not chosen:
            raise ForkError("no generic/ or ext4/ test is in group %r: see `group.list` in "
                            "fstests' tests/generic (e.g. quick, auto, rw)" % group)
    excluded = {t: exclude[t] for t in chosen if t in exclude}
    return [t for t in chosen if t not in excluded], excluded


# ----------------------------------------------------------------- shards

def split_shards(tests, seconds, n):
    """`tests` in at most n shards (none empty), each to run in a guest of
    its own at the same time, balanced by their summed durations: `seconds`
    is {test: recorded seconds}, a test without one counts the median of
    those that have one (every test at least 1s, so that tests recorded
    at 0s still spread).  Longest processing time first: the longest test
    goes to the shard with the least so far (ties: the lower shard, the
    earlier test).  Each shard keeps the order of `tests`."""
    order = {t: i for i, t in enumerate(tests)}
    known = sorted(seconds[t] for t in tests if t in seconds)
    median = (known[len(known) // 2] + known[(len(known) - 1) // 2]) / 2 if known else 1
    cost = {t: max(1, seconds.get(t, median)) for t in tests}
    n = max(1, min(n, len(tests)))
    shards, loads = [[] for _ in range(n)], [0] * n
    for t in sorted(tests, key=lambda t: (-cost[t], order[t])):
        i = min(range(n), key=lambda i: (loads[i], i))
        shards[i].append(t)
        loads[i] += cost[t]
    return [sorted(s, key=order.get) for s in shards if s]


# ------------------------------------------------------------ guest script

# seconds a test still running at the time limit is given to finish before
# the guest cuts it (fstests-run.sh); the host's timeout allows for them
CUT_GRACE = 300


def guest_script(tests, limit_s, profile=None):
    """The /fork/cmd of one boot (ci/guest/scripts/fstests.sh): mount the
    root and results disks, write local.config and the test list, chroot
    and run fstests-run.sh, which runs ./check -R xunit; a watchdog sends
    check SIGTERM after limit_s, which check (bash) handles after the
    current test: it writes its report and stops.  The watchdog lets the
    test running at the limit finish (within CUT_GRACE s), so that its
    result stands, and sends SIGTERM as the next one starts; the test check
    then waits on (that next one, or one still running after CUT_GRACE s)
    is cut (FSTESTS-CUT: its processes killed, so check ends and the guest
    unmounts its disks); boot_records() leaves it to run again, or records
    a failure if the kill did not end it (FSTESTS-CUT-FAILED, or a guest
    that never ended).

    In the chroot (fstests-run.sh): DM_DISABLE_UDEV, as there is no udev in
    the guest and without it libdevmapper leaves the /dev/mapper/<name>
    nodes to udev, so the dm tests (dmerror, thin) found no device
    (generic/338 failed, 347 not run); KCONFIG_PATH, as fstests'
    _require_kernel_config (every quota test asks for CONFIG_QFMT_V2) finds
    no config in the guest and does not run the test: the host puts the
    kernel's .config on the results disk; TEST_DEV is made there and
    SCRATCH_DEV by the tests, both with the profile's MKFS_OPTIONS.  Outside
    it: lo is brought up, as locktest (generic/131, generic/478) runs client
    and server over TCP to localhost."""
    options = (profile or PROFILE).get("MKFS_OPTIONS", "")
    mkfs_opts = " ".join(shlex.quote(o) for o in options.split()) + " " if options else ""
    run, _ = scripts.render("fstests-run.sh", {
        "KCONFIG_NAME": KCONFIG_NAME, "TEST_DEV": DEVICES["test"],
        "SCRATCH_DEV": DEVICES["scratch"], "MKFS_OPTS": mkfs_opts, "RESULT_DIR": RESULT_DIR,
        "LIMIT": max(1, int(limit_s)), "GRACE": CUT_GRACE})
    text, _ = scripts.render("fstests.sh", {
        "ROOT_DEV": DEVICES["root"], "RESULTS_DEV": DEVICES["results"],
        "PROFILE": profile_text(profile).rstrip("\n").split("\n") if profile_text(profile)
        else [],
        "TESTS": "\n".join(tests).split("\n"), "RUN": run.rstrip("\n").split("\n")})
    return text


def harness_key(profile=None):
    """A hash of the guest script apart from its test list and time limit:
    named in every boot's record, so a result says which harness ran it."""
    return hashlib.sha256(guest_script(["TESTS"], 1, profile).encode()).hexdigest()[:16]


# ----------------------------------------------------------------- results

# A report whose last entry check began but did not finish: the time
# limit's SIGTERM reached check inside _xunit_make_testcase_report, after
# it appended the entry's opening tag, and its exit handler closed the
# report around the open entry (measured on a real run).
OPEN_ENTRY_RE = re.compile(r'<testcase [^<>]*name="([^"]+)"[^<>]*>')
CUT_FAILURE_RE = re.compile(r'<failure [^<>]*message="([^"]*)"')


def _cut_last_entry(text):
    """(report without its unfinished last entry, test, failure message or
    None) if the report ends inside its last entry, else None."""
    i = text.rfind("<testcase ")
    m = OPEN_ENTRY_RE.match(text, i) if i >= 0 else None
    if not m or "</testcase>" in text[i:] or not text.rstrip().endswith("</testsuite>"):
        return None
    fail = CUT_FAILURE_RE.search(text, m.end())
    return (text[:i] + "</testsuite>\n", m.group(1),
            html.unescape(fail.group(1)) if fail else None)


def parse_xunit(path, notes=None):
    """{test: {"status", "seconds", "message"}} of fstests' result.xml.
    A report that ends inside its last entry (_cut_last_entry()) is read
    without it: the test runs again, unless the entry already held its
    <failure>, which is kept as a failure.  What was done is appended to
    `notes`.  Any other damage is an error."""
    cut = None
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        root = None
        try:
            with open(path, errors="replace") as fh:
                cut = _cut_last_entry(fh.read())
            if cut:
                root = ET.fromstring(cut[0])
        except (OSError, ET.ParseError):
            root = None
        if root is None:
            raise ForkError("cannot read fstests' xunit report %s (%s): the run did not finish "
                            "a test; see the console log" % (path, exc))
        if notes is not None:
            notes.append("result.xml ended inside the entry of %s (%s): %s" % (
                cut[1], exc, "read without it, so it runs again" if cut[2] is None else
                "its <failure> was written, so it is kept as a failure"))
    out = {}
    for tc in root.iter("testcase"):
        name = tc.get("name")
        if not name:
            continue
        try:
            secs = int(float(tc.get("time") or 0))
        except ValueError:
            secs = 0
        status, message = "pass", ""
        fail = tc.find("failure")
        if fail is None:
            fail = tc.find("error")
        skip = tc.find("skipped")
        if fail is not None:
            status, message = "fail", fail.get("message") or ""
        elif skip is not None:
            status, message = "notrun", skip.get("message") or ""
        out[name] = {"status": status, "seconds": secs, "message": message.strip()}
    if cut and cut[2] is not None:
        out[cut[1]] = {"status": "fail", "seconds": 0, "message": cut[2].strip()}
    return out


# console: fstests logs "run fstests generic/001 at 2026-..." to /dev/kmsg
# as a test starts; check's own result ("  4s", "[not run] why", "- output
# mismatch", "[failed, exit status 1]") follows, kernel messages between.
START_RE = re.compile(r"run fstests (\S+/\d+) at ")
PASS_RE = re.compile(r"(^|\s)\d+s\s*$")
DONE_MARKS = ("FSTESTS-END", "FSTESTS-TIME-LIMIT", "Ran: ", "Passed all", "Failures: ")


def segment_status(lines):
    """Status of one test from the console lines after its start marker
    (None: no result seen yet)."""
    for line in lines:
        if "[not run]" in line:
            return "notrun"
        if "output mismatch" in line or "[failed" in line or "no qualified output" in line \
                or "_check_generic_filesystem" in line or "_check_dmesg" in line:
            return "fail"
    for line in lines:
        if PASS_RE.search(line) and not re.match(r"^\[[ \d.]+\] ", line):
            return "pass"
    return None


def console_tests(text):
    """[(test, status)] in the order the console shows them starting;
    status None while the test has not finished (its result line not
    printed and no later test started)."""
    out, seg = [], None
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = START_RE.search(line)
        if m:
            if seg is not None:
                out.append((seg[0], segment_status(seg[1]) or "done"))
            seg = (m.group(1), [line[m.end():]])
        elif seg is not None:
            seg[1].append(line)
    if seg is not None:
        st = segment_status(seg[1])
        if st is None and any(mark in l for l in seg[1] for mark in DONE_MARKS):
            st = "done"
        out.append((seg[0], st))
    return out


def cut_test(console):
    """The test the guest cut at the time limit (FSTESTS-CUT): the last one
    the console shows started before the mark, if check had not printed
    its result; None if none was cut."""
    i = console.find("FSTESTS-CUT")
    if i < 0:
        return None
    started = console_tests(console[:i])
    if not started or started[-1][1] in STATUSES:
        return None
    return started[-1][0]


def boot_records(tests, xunit, console, timed_out):
    """Per-test records of one boot and whether it finished the list.

    xunit: {test: record} of result.xml (or {}); console: the console log
    text.  A test the console shows started but that has no result when
    the guest died or hung is recorded as a failure (crash or hang): the
    next run continues after it rather than hanging again.  A test the
    guest cut at the time limit (cut_test()) has no record, whatever check
    wrote for it after its processes were killed: it runs again.
    Returns (records, interrupted_by_limit)."""
    records = {t: dict(r) for t, r in xunit.items() if t in tests}
    started = [t for t, _ in console_tests(console)]
    limit = "FSTESTS-TIME-LIMIT" in console
    ended = "FSTESTS-END" in console
    cut = cut_test(console)
    records.pop(cut, None)
    if cut and ("FSTESTS-CUT-FAILED" in console or not ended):
        # the kill did not end it (a task blocked in the kernel: a hang), or
        # the guest did not end after it
        records[cut] = {"status": "fail", "seconds": 0, "message": (
            "still running %d s after the time limit and not ended by SIGKILL (a hang: "
            "blocked tasks in the console)" % CUT_GRACE if "FSTESTS-CUT-FAILED" in console
            else "cut %d s after the time limit, then the guest %s" % (
                CUT_GRACE, "hung (QEMU timeout)" if timed_out else "died"))}
    if started and not ended and started[-1] not in records and not limit:
        last = started[-1]
        records[last] = {"status": "fail", "seconds": 0,
                         "message": "the guest %s during this test"
                         % ("hung (QEMU timeout)" if timed_out else "died")}
    return records, limit


# fstests wipes the scratch device before each test (_try_wipe_scratch_devs)
# and repairs TEST_DEV after a failed check (_repair_test_fs): the host's
# e2fsck after the boot sees what fstests left, and a disk without an ext2
# superblock is said to be so, not "clean" (e2fsck -n falls back to a
# backup superblock and may exit 0).
WIPED = "no primary superblock (wiped by fstests)"


# ext2_error() sets EXT2_ERROR_FS in the superblock's s_state; e2fsck -fn
# finds nothing wrong in the structure and exits 0, so "clean" alone would
# hide that the kernel reported an error on the disk during the boot (on
# 6.12, generic/113's direct I/O race makes ext2_fsync() call it on
# TEST_DEV, measured).  dumpe2fs -h gives the state.
FS_STATE_RE = re.compile(r"^Filesystem state:[ \t]*(\S.*?)[ \t]*$", re.M)


def fs_state(dumpe2fs_output):
    """The superblock's state from `dumpe2fs -h` output ("clean", "clean
    with errors", "not clean", ...), or None if it has none."""
    m = FS_STATE_RE.search(dumpe2fs_output)
    return m.group(1) if m else None


def fsck_verdict(rc, output, where, state=None):
    """The host's verdict on a disk after a boot from e2fsck -fn's exit
    status and output, and the superblock's state (dumpe2fs -h; None: not
    asked).  A state other than clean is the kernel's ext2_error(), or a
    guest that did not unmount the disk."""
    if "Bad magic number in super-block" in output or "Superblock invalid" in output:
        return WIPED
    if rc != 0:
        return "e2fsck -fn exit %d (%s)" % (rc, where)
    if state is not None and state != "clean":
        return "e2fsck -fn exit 0 but superblock state: %s (%s)" % (state, where)
    return "clean"


def verdict(base, series):
    """Verdict for one test from the two statuses (None: not run yet)."""
    if base is None or series is None:
        return "pending"
    if series == "fail" and base != "fail":
        return "new failure"
    if base == "fail" and series != "fail":
        return "fixed"
    if base == series:
        return "same"
    return "changed (%s -> %s)" % (base, series)


def compare(tests, base, series):
    """[row] per test: test, base, series, base_s, series_s, verdict."""
    rows = []
    for t in tests:
        b, s = base.get(t), series.get(t)
        rows.append({"test": t,
                     "base": b["status"] if b else None,
                     "series": s["status"] if s else None,
                     "base_s": b["seconds"] if b else None,
                     "series_s": s["seconds"] if s else None,
                     "verdict": verdict(b and b["status"], s and s["status"]),
                     "series_message": (s or {}).get("message", ""),
                     "base_message": (b or {}).get("message", "")})
    return rows


# A report's line, keyed by what it says: reports.signature() (the
# sanitizer verdict's key: no timestamp, offsets, addresses, task, PID, CPU
# or other numbers), after the text that fstests writes before the
# kernel's timestamp on the same console line ("generic/113        ").
PREFIX_RE = re.compile(r"^.*?(?=\[\s*\d+\.\d+\])")


def report_key(line):
    return signature(PREFIX_RE.sub("", line.strip(), count=1))


def _console(path):
    """(text, None) of a boot's console log, plain or xz'd as a record
    keeps it, or (None, why not)."""
    if not path:
        return None, "no console named"
    if not os.path.exists(path):
        return None, "no file %s" % path
    try:
        if path.endswith(".xz"):
            with lzma.open(path, "rt", errors="replace") as fh:
                return fh.read(), None
        with open(path, errors="replace") as fh:
            return fh.read(), None
    except (OSError, lzma.LZMAError, EOFError) as e:
        return None, "%s: %s" % (os.path.basename(path), e)


def kernel_reports(consoles, chosen):
    """The kernel's reports (the lines the kit calls problems: ext2_error,
    WARNING, BUG, lockdep, ...) in the consoles of the boots that gave this
    run's results, counted per side by report_key().  `consoles` is
    [(side in this run, boot, [console paths to try])].  Only what the
    console shows before the first test or during a test that the boot
    finished and the run chose, in the last boot that ran it (a test that
    a time limit cut, or --fresh, ran again), or after the tests is
    counted.  Returns ({key: {"base": n, "series": n,
    "tests": [...]}}, [boots whose console could not be read])."""
    kinds, missing = {}, []
    chosen = set(chosen)
    # a test run again (--fresh, or after a cut) counts in its last boot only
    last = {}
    for side, b, _ in consoles:
        for t in b.get("tests", []):
            last[side, t] = max(last.get((side, t), 0), b["n"])
    for side, b, paths in consoles:
        text, why = None, "no console named"
        for p in paths:
            text, why = _console(p)
            if text is not None:
                break
        if text is None:
            missing.append("%s boot %s (%s)" % (side, b["n"], why))
            continue
        counted = {t for t in b.get("tests", []) if t in chosen and last[side, t] == b["n"]}
        test = None
        for line in text.splitlines():
            m = START_RE.search(line)
            if m:
                test = m.group(1)
            elif any(mark in line for mark in ("FSTESTS-TIME-LIMIT", "FSTESTS-END")):
                test = "(end)"      # the guest's unmount and shutdown
            if not PROBLEM_RE.search(line) or (test not in (None, "(end)")
                                               and test not in counted):
                continue
            k = kinds.setdefault(report_key(line), {"base": 0, "series": 0, "tests": []})
            k[side] += 1
            where = test or "(boot)"
            if where not in k["tests"]:
                k["tests"].append(where)
    return kinds, missing


def series_only(kinds):
    return sorted(k for k, n in kinds.items() if n["series"] and not n["base"])


def reports_summary(kinds, missing, read):
    """One line on the kernel reports of `read` consoles: how many kinds,
    which the series alone has (the first 3), which consoles were not read."""
    if kinds:
        text = "%d kind%s of line (%d on the base, %d on the series)" % (
            len(kinds), "" if len(kinds) == 1 else "s",
            sum(n["base"] for n in kinds.values()), sum(n["series"] for n in kinds.values()))
    else:
        text = "none in %d console%s" % (read, "" if read == 1 else "s")
    only = series_only(kinds)
    if only:
        text += "; on the series only: " + "; ".join(only[:3]) + (
            " and %d more" % (len(only) - 3) if len(only) > 3 else "")
    if missing:
        text += "; not read: " + ", ".join(missing)
    return text


def totals(rows, side):
    out = {k: 0 for k in STATUSES}
    for r in rows:
        if r[side] in out:
            out[r[side]] += 1
    out["seconds"] = sum(r[side + "_s"] or 0 for r in rows)
    return out


def fmt_status(s):
    return s if s else "-"


def fmt_secs(s):
    return "-" if s is None else "%ds" % s


def table(rows):
    """Plain text table for the terminal."""
    lines = ["%-14s %-8s %-8s %7s %7s  %s" % ("test", "base", "series", "base_t", "series_t",
                                               "verdict")]
    for r in rows:
        lines.append("%-14s %-8s %-8s %7s %7s  %s" % (
            r["test"], fmt_status(r["base"]), fmt_status(r["series"]), fmt_secs(r["base_s"]),
            fmt_secs(r["series_s"]), r["verdict"]))
    return "\n".join(lines)


def _said(row, side):
    """check's message of one side's test, on one line ("" for a pass)."""
    if row[side] not in ("fail", "notrun"):
        return ""
    return " ".join((row.get(side + "_message") or "").split())


def why(row):
    """What check said of a test that did not pass (its reason for not
    running, or its failure), the series' too where it said otherwise."""
    b, s = _said(row, "base"), _said(row, "series")
    return md_cell(b if b == s or not s else "%s / series: %s" % (b or "-", s))


def runner_time(boots):
    """What a LAVA runner added to the boots `boots` (those of a run's
    stores, all through one runner): {"jobs", "job_seconds",
    "guest_seconds", "added_per_job"} over the boots that record both the
    job's wall time ("seconds") and the guest's own ("guest_seconds")."""
    timed = [b for b in boots if isinstance(b.get("seconds"), (int, float))
             and isinstance(b.get("guest_seconds"), (int, float))]
    job = sum(b["seconds"] for b in timed)
    guest = sum(b["guest_seconds"] for b in timed)
    return {"jobs": len(timed), "job_seconds": round(job, 1), "guest_seconds": round(guest, 1),
            "added_per_job": round((job - guest) / len(timed), 1) if timed else None}


def runner_time_line(runner, t):
    """runner_time() of `runner`'s boots in one line."""
    what = "time %s added" % RUNNER_NAMES.get(runner, runner)
    if not t["jobs"]:
        return "%s: not measured (no boot of these stores records the guest's own time)" % what
    return "%s: %.0f s per job (%d jobs: %.0f s of jobs, %.0f s of it the guests' own)" % (
        what, t["added_per_job"], t["jobs"], t["job_seconds"], t["guest_seconds"])


def markdown(meta, rows, excluded):
    """The run as markdown: what ran, totals, per-test table (with why a
    test did not pass), the reasons for not running, command."""
    tb, ts = totals(rows, "base"), totals(rows, "series")
    out = ["# fstests on ext2: %s vs %s" % (meta["base"]["rev"], meta["series"]["rev"]), ""]
    for side in ("base", "series"):
        m = meta[side]
        out.append("- %s: `%s` (%s), image sha256 %s" % (side, m["rev"], m["commit"][:12],
                                                         m["image_sha256"][:16]))
    patched = meta.get("fstests_patches") or []
    url = meta["fstests_url"]
    if os.path.isabs(url):
        # a local clone or bundle: the root names it by its path on the
        # machine (and clone) that made the root, which says nothing here
        url = "%s (a local copy)" % os.path.basename(url.rstrip("/"))
    out += ["- fstests: %s at %s%s" % (url, meta["fstests_commit"],
                                       " + ci/fstests/patches: %s" % ", ".join(patched)
                                       if patched else ""),
            "- guest root: %s (Debian %s%s)" % (meta["root_key"], meta["suite"],
                                                ", package versions %s" % meta["root_packages"]
                                                if meta.get("root_packages") else ""),
            "- selection: %s (%d tests, %d excluded by ci/fstests/ext2.exclude)"
            % (meta["selection"], len(rows), len(excluded)),
            "- e2fsck -fn after each boot: %s" % meta.get("e2fsck", "n/a")]
    if meta.get("profile"):
        out.insert(len(out) - 1, "- mkfs: %s" % mkfs_line(meta["profile"]))
    if meta.get("cuts"):
        out.append("- cut at the time limit, each left to run again: %s"
                   % "; ".join(meta["cuts"]))
    if "reports_summary" in meta:
        out.append("- kernel reports in the consoles: %s" % meta["reports_summary"])
    if meta.get("runner") not in (None, "qemu"):
        out.append("- runner: `%s`; %s" % (meta["runner"], runner_time_line(
            meta["runner"], meta.get("runner_time") or runner_time([]))))
    if meta.get("record"):
        out.append("- results recorded in `%s/<kernel>/` (per kernel: kernel.json, tests.json, "
                   "boots.json, boot-N/)" % meta["record"])
    out += ["- reproduce: `%s`" % meta["command"], ""]
    out += md_table(["", "pass", "fail", "notrun", "test time"], [
        [side, "%d" % t["pass"], "%d" % t["fail"], "%d" % t["notrun"], "%ds" % t["seconds"]]
        for side, t in (("base", tb), ("series", ts))], right=(1, 2, 3, 4), spaced=True)
    out += [""] + md_table(
        ["test", "base", "series", "base time", "series time", "verdict", "why not pass"],
        [[r["test"], fmt_status(r["base"]), fmt_status(r["series"]), fmt_secs(r["base_s"]),
          fmt_secs(r["series_s"]), "**new failure**" if r["verdict"] == "new failure"
          else r["verdict"], why(r)] for r in rows], right=(3, 4), spaced=True)
    reasons = {}
    for r in rows:
        for side in ("base", "series"):
            if r[side] == "notrun":
                msg = _said(r, side) or "(no reason given)"
                reasons.setdefault(msg, {"base": 0, "series": 0})[side] += 1
    if reasons:
        out += ["", "Not run, by check's reason:", ""] + md_table(
            ["reason", "base", "series"],
            [[md_cell(msg), "%d" % n["base"], "%d" % n["series"]]
             for msg, n in sorted(reasons.items(),
                                  key=lambda kv: (-kv[1]["base"] - kv[1]["series"], kv[0]))],
            right=(1, 2), spaced=True)
    kinds = meta.get("report_kinds") or {}
    only = set(series_only(kinds))
    if kinds:
        out += ["", "Kernel reports in the console logs (the boots of these results, counted "
                "by what they say: timestamps, offsets, addresses and numbers dropped):",
                ""] + md_table(["report", "in", "base", "series"], [
                    ["`%s`" % md_cell(line.replace("`", "'")),
                     ", ".join(n["tests"][:4] + (["+%d" % (len(n["tests"]) - 4)]
                                                 if len(n["tests"]) > 4 else [])),
                     "%d" % n["base"],
                     "**%d (series only)**" % n["series"] if line in only else str(n["series"])]
                    for line, n in sorted(kinds.items(),
                                          key=lambda kv: (-kv[1]["base"] - kv[1]["series"],
                                                          kv[0]))], right=(2, 3), spaced=True)
    if excluded:
        out += ["", "Excluded (fail or hang on the base kernel):", ""]
        out += ["- %s: %s" % (t, excluded[t]) for t in sorted(excluded)]
    return "\n".join(out) + "\n"

