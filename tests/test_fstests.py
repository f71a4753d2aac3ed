"""fstests verb: selection, ext2 profile and guest script, result parsing,
verdicts, the whole base-vs-series pipeline with a fake guest (no QEMU:
the fake writes fstests' result.xml onto the results disk with debugfs,
as the guest would), resumption, bad input.  The real runs are in
test_fstests_integration.py."""

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import types
from pathlib import Path

import pytest

from conftest import FORK, PYTHON, ROOT
from forkkit.build import kbuild, kconfig, make
from forkkit.guest import fsroot
from forkkit.repo import debian
from forkkit.verify import fsrecord, fstests, fstests_run as cmd_fstests
from forkkit.core.errors import ForkError

XUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="xfstests" failures="1" skipped="1" tests="3" time="20" hostname="fstests">
\t<properties><property name="FSTYP" value="ext2"/></properties>
\t<testcase classname="xfstests.global" name="generic/001" time="5">
\t</testcase>
\t<testcase classname="xfstests.global" name="generic/002" time="0">
\t\t<skipped message="this test requires a valid $SCRATCH_DEV" />
\t</testcase>
\t<testcase classname="xfstests.global" name="generic/013" time="14">
\t\t<failure message="_check_generic_filesystem: filesystem on /dev/vdb is inconsistent" type="TestFail" />
\t\t<system-out><![CDATA[
Free blocks count wrong for group #0
]]></system-out>
\t</testcase>
</testsuite>
"""

GROUPS = {"generic/001": ["rw", "auto", "quick"], "generic/002": ["metadata", "auto", "quick"],
          "generic/013": ["auto", "rw", "stress"], "ext4/001": ["auto", "quick"],
          "xfs/001": ["auto", "quick"], "btrfs/001": ["quick"]}


def test_parse_xunit(tmp_path):
    p = tmp_path / "result.xml"
    p.write_text(XUNIT)
    got = fstests.parse_xunit(str(p))
    assert got["generic/001"] == {"status": "pass", "seconds": 5, "message": ""}
    assert got["generic/002"]["status"] == "notrun"
    assert "SCRATCH_DEV" in got["generic/002"]["message"]
    assert got["generic/013"]["status"] == "fail"
    assert got["generic/013"]["seconds"] == 14
    assert "inconsistent" in got["generic/013"]["message"]


def test_parse_xunit_broken(tmp_path):
    p = tmp_path / "result.xml"
    p.write_text("<testsuite><testcase name=")
    with pytest.raises(ForkError, match="cannot read fstests' xunit report"):
        fstests.parse_xunit(str(p))
    # damage other than an unfinished last entry stays an error
    p.write_text(XUNIT.replace("\t</testcase>", "", 1))       # the first entry left open
    with pytest.raises(ForkError, match="cannot read fstests' xunit report"):
        fstests.parse_xunit(str(p), [])


@pytest.mark.parametrize("child,kept", [
    ("", None),
    ('\t\t<skipped message="No encryption support" />\n', None),
    ("\t\t<skipped/>\n", None),
    # its failure was written, the CDATA of its .full was not finished
    ('\t\t<failure message="- output mismatch (see 595.out.bad)" type="TestFail" />\n'
     "\t\t<system-out><![CDATA[\nQA output created by 595\n", "- output mismatch (see 595.out.bad)"),
])
def test_parse_xunit_unfinished_last_entry(tmp_path, child, kept):
    """Measured: the time limit's SIGTERM reached check while it
    wrote an entry, and its exit handler closed the report around it."""
    p = tmp_path / "result.xml"
    cut = XUNIT.replace("</testsuite>", "\t<testcase classname=\"xfstests.global\" "
                        "name=\"generic/595\" time=\"3\">\n%s</testsuite>" % child)
    p.write_text(cut)
    notes = []
    got = fstests.parse_xunit(str(p), notes)
    whole = tmp_path / "whole.xml"
    whole.write_text(XUNIT)
    assert {t: r for t, r in got.items() if t != "generic/595"} == fstests.parse_xunit(str(whole))
    assert len(notes) == 1 and "generic/595" in notes[0]
    if kept is None:
        assert "generic/595" not in got and "runs again" in notes[0]
    else:
        assert got["generic/595"] == {"status": "fail", "seconds": 0, "message": kept}
        assert "kept as a failure" in notes[0]


def test_parse_xunit_unfinished_first_entry(tmp_path):
    p = tmp_path / "result.xml"
    head = XUNIT.split("\t<testcase", 1)[0]
    p.write_text(head + '\t<testcase classname="x" name="generic/001" time="5">\n</testsuite>\n')
    notes = []
    assert fstests.parse_xunit(str(p), notes) == {} and "generic/001" in notes[0]


@pytest.mark.parametrize("base,series,want", [
    ("pass", "fail", "new failure"),
    ("notrun", "fail", "new failure"),
    ("fail", "pass", "fixed"),
    ("fail", "fail", "same"),
    ("pass", "pass", "same"),
    ("notrun", "notrun", "same"),
    ("pass", "notrun", "changed (pass -> notrun)"),
    (None, "pass", "pending"),
    ("pass", None, "pending"),
])
def test_verdict(base, series, want):
    assert fstests.verdict(base, series) == want


def test_compare_table_and_markdown():
    base = {"generic/001": {"status": "pass", "seconds": 5, "message": ""},
            "generic/013": {"status": "pass", "seconds": 10, "message": ""}}
    series = {"generic/001": {"status": "pass", "seconds": 6, "message": ""},
              "generic/013": {"status": "fail", "seconds": 12, "message": "fsck"}}
    rows = fstests.compare(["generic/001", "generic/013"], base, series)
    assert [r["verdict"] for r in rows] == ["same", "new failure"]
    assert fstests.totals(rows, "series") == {"pass": 1, "fail": 1, "notrun": 0, "seconds": 18}
    text = fstests.table(rows)
    assert re.search(r"generic/013\s+pass\s+fail\s+10s\s+12s\s+new failure", text)
    meta = {"base": {"rev": "distro/7.3", "commit": "a" * 40, "image_sha256": "b" * 64},
            "series": {"rev": "series/7.3", "commit": "c" * 40, "image_sha256": "d" * 64},
            "fstests_url": "u", "fstests_commit": "e" * 40, "root_key": "k", "suite": "bookworm",
            "selection": "named", "command": "tools/fork fstests x"}
    md = fstests.markdown(meta, rows, {"generic/999": "hangs"})
    assert "| generic/013 | pass | fail | 10s | 12s | **new failure** | - / series: fsck |" in md
    assert "| base | 2 | 0 | 0 | 15s |" in md
    assert "generic/999: hangs" in md
    assert "`tools/fork fstests x`" in md


def test_markdown_says_why_a_test_did_not_pass():
    base = {"generic/082": {"status": "notrun", "seconds": 2,
                            "message": "Could not locate kernel config file"},
            "generic/347": {"status": "fail", "seconds": 9, "message": "output mismatch"},
            "generic/500": {"status": "notrun", "seconds": 1, "message": "a | b"}}
    series = {"generic/082": {"status": "notrun", "seconds": 2,
                              "message": "Could not locate kernel config file"},
              "generic/347": {"status": "fail", "seconds": 9, "message": "output mismatch"},
              "generic/500": {"status": "pass", "seconds": 1, "message": ""}}
    tests = ["generic/082", "generic/347", "generic/500"]
    rows = fstests.compare(tests, base, series)
    meta = {"base": {"rev": "distro/7.3", "commit": "a" * 40, "image_sha256": "b" * 64},
            "series": {"rev": "series/7.3", "commit": "c" * 40, "image_sha256": "d" * 64},
            "fstests_url": "u", "fstests_commit": "e" * 40, "root_key": "k", "suite": "bookworm",
            "selection": "named", "command": "tools/fork fstests x"}
    md = fstests.markdown(meta, rows, {})
    assert "| generic/082 | notrun | notrun | 2s | 2s | same | " \
        "Could not locate kernel config file |" in md
    assert "| generic/347 | fail | fail | 9s | 9s | same | output mismatch |" in md
    assert "| generic/500 | notrun | pass | 1s | 1s | changed (notrun -> pass) | a \\| b |" in md
    assert "| Could not locate kernel config file | 1 | 1 |" in md
    assert "| a \\| b | 1 | 0 |" in md
    assert md.index("| Could not locate") < md.index("| a \\| b | 1 | 0 |")


def test_select_group_and_exclusion():
    chosen, excluded = fstests.select([], "quick", GROUPS, {"generic/002": "hangs on base"})
    # generic/ and ext4/ (check -g for ext2), never xfs/ or btrfs/
    assert chosen == ["ext4/001", "generic/001"]
    assert excluded == {"generic/002": "hangs on base"}


def test_select_named_keeps_order_and_drops_repeats():
    chosen, excluded = fstests.select(["generic/013", "generic/001", "generic/013"], None,
                                      GROUPS, {})
    assert chosen == ["generic/013", "generic/001"]


@pytest.mark.parametrize("tests,group,msg", [
    (["generic/1x"], None, "not an fstests test name"),
    (["generic/404"], None, "no test generic/404"),
    ([], "nosuchgroup", "no generic/ or ext4/ test is in group"),
    ([], "qu ick", "not an fstests group name"),
    (["generic/001"], "quick", "either --group or test names"),
])
def test_select_bad_input(tests, group, msg):
    with pytest.raises(ForkError, match=msg):
        fstests.select(tests, group, GROUPS, {})


def test_exclude_file(tmp_path):
    p = tmp_path / "ext2.exclude"
    p.write_text("# comment\n\ngeneric/001  # hangs on distro/7.3 (measured)\n")
    assert fstests.parse_exclude(str(p)) == {"generic/001": "hangs on distro/7.3 (measured)"}
    p.write_text("generic/001\n")
    with pytest.raises(ForkError, match="has no reason"):
        fstests.parse_exclude(str(p))
    p.write_text("generic1 # x\n")
    with pytest.raises(ForkError, match="not a test name"):
        fstests.parse_exclude(str(p))


def test_repository_exclude_list_is_valid():
    fstests.parse_exclude(str(ROOT / "ci" / "fstests" / "ext2.exclude"))


def test_profile_is_default_ext2():
    text = fstests.profile_text()
    assert "export FSTYP=ext2\n" in text
    assert "export TEST_DEV=/dev/vdb\n" in text
    assert "export SCRATCH_DEV=/dev/vdc\n" in text
    assert "export MOUNT_OPTIONS=''\n" in text
    assert "export MKFS_OPTIONS=''\n" in text
    # nothing that would switch off fstests' own filesystem checks
    assert "SKIP" not in text and "NO_CHECK" not in text


def test_guest_script_syntax_and_content(tmp_path):
    script = fstests.guest_script(["generic/001", "generic/013"], 300)
    outer = tmp_path / "cmd"
    outer.write_text(script)
    assert subprocess.run(["sh", "-n", str(outer)]).returncode == 0
    inner = script.split("fork-run.sh <<'FORK_EOF'\n", 1)[1].split("\nFORK_EOF", 1)[0]
    (tmp_path / "run.sh").write_text(inner)
    assert subprocess.run(["bash", "-n", str(tmp_path / "run.sh")]).returncode == 0
    assert "./check -R xunit $(cat /results/fork-tests)" in inner
    assert "sleep 300;" in inner
    assert "mkfs.ext2 -F -q $d" in inner and "/dev/vdb /dev/vdc" in inner
    # no udev in the guest: libdevmapper makes the /dev/mapper nodes itself
    assert inner.index("export DM_DISABLE_UDEV=1") < inner.index("./check")
    assert "generic/001\ngeneric/013\nFORK_EOF" in script
    assert "mount -t ext4 /dev/vda /mnt/root" in script
    # the quota tests ask fstests' _require_kernel_config, which reads
    # KCONFIG_PATH: the kernel's config on the results disk, or no run
    assert inner.index("export KCONFIG_PATH=/results/kernel-config") < inner.index("./check")
    assert "exit 93" in inner
    # the loopback device is up before check runs (locktest talks TCP)
    assert script.index("ip link set lo up") < script.index("chroot /mnt/root")


CONSOLE_CRASH = """\
[    5.0] run fstests generic/001 at 2026-12-04 05:00:00
generic/001 5s ...  4s
[    9.0] run fstests generic/013 at 2026-12-04 05:00:05
[   12.0] Kernel panic - not syncing: Fatal exception
"""


def test_boot_records_crash_marks_running_test_failed():
    xunit = {"generic/001": {"status": "pass", "seconds": 4, "message": ""}}
    recs, limit = fstests.boot_records(["generic/001", "generic/013", "generic/074"], xunit,
                                       CONSOLE_CRASH, timed_out=False)
    assert not limit
    assert recs["generic/001"]["status"] == "pass"
    assert recs["generic/013"]["status"] == "fail"
    assert "died" in recs["generic/013"]["message"]
    assert "generic/074" not in recs      # never started: left for the next run


def test_boot_records_time_limit_leaves_the_rest():
    console = CONSOLE_CRASH.replace("[   12.0] Kernel panic - not syncing: Fatal exception\n",
                                    "FSTESTS-TIME-LIMIT\n 11s\n"
                                    "FSTESTS-END check-exit=0\n")
    xunit = {"generic/001": {"status": "pass", "seconds": 4, "message": ""},
             "generic/013": {"status": "pass", "seconds": 11, "message": ""}}
    recs, limit = fstests.boot_records(["generic/001", "generic/013", "generic/074"], xunit,
                                       console, timed_out=False)
    assert limit
    assert set(recs) == {"generic/001", "generic/013"}


def test_boot_records_cut_test_runs_again():
    # the time limit, then the guest cut generic/013 (still running after the
    # grace): check recorded it as failed when its processes were killed,
    # but that is no verdict on the kernel
    console = CONSOLE_CRASH.replace("[   12.0] Kernel panic - not syncing: Fatal exception\n",
                                    "FSTESTS-TIME-LIMIT\nFSTESTS-CUT\n"
                                    "FSTESTS-END check-exit=1\n")
    tests = ["generic/001", "generic/013", "generic/074"]
    xunit = {"generic/001": {"status": "pass", "seconds": 4, "message": ""},
             "generic/013": {"status": "fail", "seconds": 301, "message": "exit status 137"}}
    recs, limit = fstests.boot_records(tests, xunit, console, timed_out=False)
    assert limit
    assert fstests.cut_test(console) == "generic/013"
    assert set(recs) == {"generic/001"}
    # no cut mark: nothing is cut
    assert fstests.cut_test(console.replace("FSTESTS-CUT\n", "")) is None
    # the last test had printed its result (check then hung elsewhere):
    # its result stands
    done = console.replace("FSTESTS-TIME-LIMIT\n", " 11s\nFSTESTS-TIME-LIMIT\n")
    assert fstests.cut_test(done) is None
    recs, _ = fstests.boot_records(tests, xunit, done, timed_out=False)
    assert recs["generic/013"]["status"] == "fail"
    # the kill did not end the test (blocked in the kernel), or the guest
    # never ended: a hang, recorded as a failure
    for hung, says in ((console.replace("FSTESTS-CUT\n", "FSTESTS-CUT\nFSTESTS-CUT-FAILED\n"),
                        "not ended by SIGKILL"),
                       (console.replace("FSTESTS-END check-exit=1\n", ""),
                        "then the guest hung (QEMU timeout)")):
        recs, _ = fstests.boot_records(tests, xunit, hung, timed_out=True)
        assert recs["generic/013"]["status"] == "fail"
        assert says in recs["generic/013"]["message"]


def watchdog_driver(tmp_path, mark, tests, grace=1, shim="", post=":", term_wait=10):
    """A bash script that runs the watchdog of fstests-run.sh (limit 1 s,
    grace `grace` s, `term_wait` s for check to end after SIGTERM, 2 rounds of
    SIGKILL) around a fake check of `tests`: like check, it runs each test
    in the foreground as `bash -c "...; exec ./tests/T"`, so that SIGTERM
    waits for it, then runs `post` (its checks after a test) and says "T
    ok"; its trap takes 3 s to write its report.  generic/001 ends after
    3 s; generic/002 never ends (a child and a grandchild that sleep `mark`;
    the grandchild's pid in tmp_path/worker).  `shim`: bash run first."""
    script = fstests.guest_script(["generic/001"], 1)
    run_sh = script.split("fork-run.sh <<'FORK_EOF'\n", 1)[1].split("\nFORK_EOF\n", 1)[0]
    part = run_sh[run_sh.index("# At the time limit"):run_sh.index('echo "FSTESTS-END')]
    for old, new in (("$((SECONDS + %d))" % fstests.CUT_GRACE, "$((SECONDS + %d))" % grace),
                     ("$((SECONDS + 60))", "$((SECONDS + %d))" % term_wait), ("$(seq 60)", "$(seq 2)"),
                     ("/tmp/fork-cut", str(tmp_path / "fork-cut")),
                     ("echo w > /proc/sysrq-trigger", "echo sysrq-w")):
        assert old in part, old
        part = part.replace(old, new)
    (tmp_path / "tests" / "generic").mkdir(parents=True)
    for name, body in (("001", "sleep 3\n"),
                       ("002", "sleep %s & echo $! > %s; sleep %s; wait\n"
                        % (mark, tmp_path / "worker", mark))):
        t = tmp_path / "tests" / "generic" / name
        t.write_text("#!/bin/bash\n" + body)
        t.chmod(0o755)
    fake = tmp_path / "check"
    fake.write_text("#!/bin/bash\n"
                    "trap 'sleep 3 || exit 9; echo report-written; exit 7' TERM\n"
                    "cd %s\n"
                    "for t in \"$@\"; do\n"
                    "\tbash -c \"true; exec ./tests/$t\"\n"
                    "\t%s\n"
                    "\techo \"$t ok\"\n"
                    "done\n" % (tmp_path, post))
    fake.chmod(0o755)
    driver = tmp_path / "driver.sh"
    driver.write_text("#!/bin/bash\n%s\n%s %s & pid=$!\n%s\necho rc=$rc\n"
                      % (shim, fake, " ".join(tests), part))
    return driver


def run_driver(driver):
    """The driver's exit and output; the output goes to a file, not a pipe
    that a process the kill spared would hold open."""
    out = driver.with_suffix(".out")
    start = time.monotonic()
    with open(out, "w") as fh:
        rc = subprocess.run(["bash", str(driver)], stdout=fh, stderr=subprocess.STDOUT,
                            timeout=120).returncode
    return types.SimpleNamespace(returncode=rc, stdout=out.read_text(),
                                 seconds=time.monotonic() - start)


def sleeps_left(mark):
    left = subprocess.run(["pgrep", "-f", "sleep %s" % mark], capture_output=True, text=True)
    return left.stdout


def test_guest_watchdog_cuts_a_test_still_running_after_the_grace(tmp_path):
    """generic/002 runs past the limit and the grace: the watchdog says
    FSTESTS-CUT, kills its whole process tree and leaves check to write its
    report; without the cut check would wait on, and a kill of check's own
    children would lose the report."""
    mark = "%d.%d" % (900000 + os.getpid() % 1000, os.getpid())  # this test's sleeps alone
    try:
        proc = run_driver(watchdog_driver(tmp_path, mark, ["generic/002", "generic/001"],
                                          term_wait=40))
        assert "FSTESTS-TIME-LIMIT" in proc.stdout and "FSTESTS-CUT\n" in proc.stdout, proc
        assert "FSTESTS-CUT-FAILED" not in proc.stdout, proc
        assert "report-written" in proc.stdout and "rc=7" in proc.stdout, proc
        assert "generic/001" not in proc.stdout
        assert sleeps_left(mark) == ""         # nothing of the test is left running
        # found as the test check runs, not by the wait for check to end
        # (limit 1 s, grace 1 s, 1 s after SIGTERM, its trap 3 s: about
        # 6 s, where waiting for check's end would take about 45 s; the
        # margin is for a loaded machine)
        assert proc.seconds < 25, proc
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "sleep %s" % mark])


def test_guest_watchdog_lets_the_running_test_finish_and_cuts_the_next(tmp_path):
    """The limit falls in generic/001, which ends within the grace: its
    result stands ("generic/001 ok" before the cut), check is stopped as
    generic/002 starts, and generic/002 is cut at once, not waited for."""
    mark = "%d.%d" % (700000 + os.getpid() % 1000, os.getpid())
    try:
        proc = run_driver(watchdog_driver(tmp_path, mark, ["generic/001", "generic/002"],
                                          grace=45, term_wait=40))
        out = proc.stdout
        assert out.index("FSTESTS-TIME-LIMIT") < out.index("generic/001 ok") < \
            out.index("FSTESTS-CUT\n") < out.index("report-written"), proc
        assert "rc=7" in out and sleeps_left(mark) == ""
        # as generic/002 starts (the run takes about 8 s), not at the end
        # of the 45 s grace nor after waiting 40 s for check's end
        assert proc.seconds < 25, proc
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "sleep %s" % mark])


def test_guest_watchdog_cuts_what_check_waits_on_after_a_test(tmp_path):
    """generic/001 ends, then check's own check after it never does (a
    stuck fsck, here a sleep): no test runs when the grace ends, and check
    does not end on SIGTERM; after its time the watchdog cuts what check
    waits on, and check writes its report."""
    mark = "%d.%d" % (600000 + os.getpid() % 1000, os.getpid())
    try:
        proc = run_driver(watchdog_driver(tmp_path, mark, ["generic/001", "generic/002"],
                                          grace=5, post="sleep %s" % mark))
        out = proc.stdout
        assert out.index("FSTESTS-TIME-LIMIT") < out.index("FSTESTS-CUT\n") < \
            out.index("report-written"), proc
        assert "generic/001 ok" not in out and "rc=7" in out and sleeps_left(mark) == ""
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "sleep %s" % mark])


def test_guest_watchdog_says_when_a_worker_outlives_the_kill(tmp_path):
    """A worker that SIGKILL does not end (as a task blocked in the kernel:
    here a kill that spares it) while its parent, the test, dies and check
    ends: the watchdog keeps after it under its new parent, and says
    FSTESTS-CUT-FAILED with the blocked tasks before the guest goes on."""
    mark = "%d.%d" % (800000 + os.getpid() % 1000, os.getpid())
    shim = ('kill() { if [ "$1" = -KILL ]; then shift; local x; for x in "$@"; do '
            '[ "$x" = "$(cat %s)" ] || builtin kill -KILL $x; done; return 0; fi; '
            'builtin kill "$@"; }' % (tmp_path / "worker"))
    try:
        proc = run_driver(watchdog_driver(tmp_path, mark, ["generic/002"], shim=shim))
        assert "FSTESTS-CUT\n" in proc.stdout, proc
        assert "report-written" in proc.stdout, proc
        assert proc.stdout.index("FSTESTS-CUT-FAILED\nsysrq-w") < proc.stdout.index("rc=7"), proc
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "sleep %s" % mark])


def test_console_tests_with_kernel_messages_between():
    # as measured on 7.3 (run-1): kmsg lines between a test's name and its time
    text = ("generic/001        [   29.430970] run fstests generic/001 at 2026-12-04 05:26:06\r\n"
            "[  147.596207] ext2 filesystem being mounted at /mnt/test supports timestamps "
            "until 2038-01-19 (0x7fffffff)\r\n"
            " 119s\r\n"
            "generic/002 12s ...  [  159.524896] run fstests generic/002 at 2026-12-04\r\n"
            "       [not run] this test requires a valid $SCRATCH_DEV\r\n"
            "generic/003 [  160.0] run fstests generic/003 at 2026-12-04\r\n"
            "- output mismatch (see /results/xfstests/generic/003.out.bad)\r\n"
            "generic/004 [  170.0] run fstests generic/004 at 2026-12-04\r\n"
            "[  171.0] EXT2-fs (vdb): warning: mounting unchecked fs\r\n")
    assert fstests.console_tests(text) == [("generic/001", "pass"), ("generic/002", "notrun"),
                                           ("generic/003", "fail"), ("generic/004", None)]
    assert fstests.console_tests(text + " 3s\r\nRan: generic/001\r\n")[-1] == \
        ("generic/004", "pass")


# ---------------------------------------------------------------- kconfig

def test_fstests_flavour_fragment():
    assert kconfig.FLAVOURS["fstests"] == ["base.config", "fstests.config"]
    opts = {s: (v, ip) for s, v, ip in kconfig.parse_fragment(
        str(ROOT / "ci" / "kconfig" / "fstests.config"))}
    for sym in ("CONFIG_BLK_DEV_LOOP", "CONFIG_QUOTA", "CONFIG_QFMT_V2", "CONFIG_BLK_DEV_DM",
                "CONFIG_DM_FLAKEY", "CONFIG_DM_SNAPSHOT", "CONFIG_DM_LOG_WRITES",
                "CONFIG_TMPFS_POSIX_ACL", "CONFIG_TMPFS_XATTR", "CONFIG_SYSCTL"):
        assert opts[sym] == ("y", False), sym
    base = {s for s, v, ip in kconfig.parse_fragment(str(ROOT / "ci" / "kconfig" / "base.config"))
            if v == "y"}
    # the root disk and ext2 with xattr/ACL/security come from base.config
    assert {"CONFIG_VIRTIO_BLK", "CONFIG_EXT4_FS", "CONFIG_DEVTMPFS", "CONFIG_EXT2_FS_XATTR",
            "CONFIG_EXT2_FS_POSIX_ACL", "CONFIG_EXT2_FS_SECURITY"} <= base


# ---------------------------------------------------------------- source

@pytest.fixture
def repo(tmp_path, monkeypatch):
    r = tmp_path / "repo"
    shutil.copytree(ROOT / "ci" / "fstests", r / "ci" / "fstests")
    shutil.copytree(ROOT / "ci" / "guest" / "scripts", r / "ci" / "guest" / "scripts")
    monkeypatch.setenv("FORK_REPO", str(r))
    monkeypatch.delenv("FORK_FSTESTS_URL", raising=False)
    monkeypatch.delenv("FORK_FSTESTS_COMMIT", raising=False)
    return r


def test_source_prefers_env_then_local_bundle(repo, tmp_path, monkeypatch):
    conf = fsroot.read_conf()
    url, commit = fsroot.source()
    assert url == conf["URL"] and commit == conf["COMMIT"]
    bundle = tmp_path / conf["LOCAL_BUNDLE"]
    bundle.parent.mkdir(parents=True)
    bundle.write_text("bundle")
    assert fsroot.source()[0] == str(bundle)
    monkeypatch.setenv("FORK_FSTESTS_URL", "/some/clone")
    assert fsroot.source()[0] == "/some/clone"
    monkeypatch.setenv("FORK_FSTESTS_COMMIT", "not-hex")
    with pytest.raises(ForkError, match="not a hex commit id"):
        fsroot.source()


def test_root_key_follows_inputs(repo, monkeypatch):
    monkeypatch.setattr(debian, "sources_files", lambda: [str(repo / "debian.sources")])
    (repo / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.example.org/debian\nSuites: bookworm\n"
        "Components: main\nSigned-By: /k.gpg\n")
    inp = fsroot.inputs()
    assert inp["mirror"] == "http://deb.example.org/debian" and inp["keyring"] == "/k.gpg"
    assert "xfsprogs" in inp["packages"] and "fio" in inp["packages"]
    k1 = fsroot.root_key(inp)
    with open(repo / "ci" / "fstests" / "packages", "a") as fh:
        fh.write("strace\n")
    assert fsroot.root_key(fsroot.inputs()) != k1
    (repo / "ci" / "fstests" / "source.conf").write_text(
        (ROOT / "ci" / "fstests" / "source.conf").read_text().replace("SUITE=bookworm",
                                                                      "SUITE=trixie"))
    with pytest.raises(ForkError, match="no `deb` entry for suite trixie"):
        fsroot.inputs()


def test_root_key_follows_fstests_patches(repo, monkeypatch):
    """A change to ci/fstests/patches makes another root; without patches the
    inputs have no patch entry (the key of an unpatched root is unchanged)."""
    monkeypatch.setattr(debian, "sources_files", lambda: [str(repo / "debian.sources")])
    (repo / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.example.org/debian\nSuites: bookworm\n"
        "Components: main\nSigned-By: /k.gpg\n")
    pdir = repo / "ci" / "fstests" / "patches"
    names = sorted(p.name for p in pdir.glob("*.patch"))
    assert [e.split(" ", 1)[1] for e in fsroot.inputs()["fstests_patches"]] == names
    k1 = fsroot.root_key(fsroot.inputs())
    first = pdir / names[0]
    first.write_text(first.read_text() + "\n")
    assert fsroot.root_key(fsroot.inputs()) != k1
    shutil.rmtree(pdir)
    assert "fstests_patches" not in fsroot.inputs()


def fstests_clone(tmp_path):
    """A checkout of the pinned fstests commit from the local bundle (skip
    where the machine has none)."""
    url, commit = fsroot.source()
    if not os.path.exists(url):
        pytest.skip("no local fstests bundle (%s)" % url)
    dest = tmp_path / "fstests"
    for cmd in (["git", "clone", "-q", "--no-checkout", url, str(dest)],
                ["git", "-C", str(dest), "checkout", "-q", "--detach", commit]):
        subprocess.run(cmd, check=True, capture_output=True)
    return dest


def sourced_progs(src, path, home="/nonexistent"):
    """The *_PROG variables after sourcing `src`/common/config with bash and
    `path` as $PATH (taken at exit: the file may _fatal on this host)."""
    (src / "local.config").write_text(
        "export FSTYP=ext2\nexport TEST_DEV=/dev/null\nexport TEST_DIR=%s\n"
        "export SCRATCH_DEV=/dev/zero\nexport SCRATCH_MNT=%s\n" % (src, src))
    out = src / "env.out"
    subprocess.run(["bash", "-c", 'trap "env > %s" EXIT; . ./common/exit; . ./common/config'
                    % out], cwd=src, capture_output=True, timeout=120,
                   env={"PATH": path, "HOME": str(home), "LC_ALL": "C", "here": str(src)})
    return {k: v for k, v in (l.split("=", 1) for l in out.read_text().splitlines()
                              if "=" in l) if k.endswith("_PROG")}


def test_fstests_patches_apply_and_keep_the_program_paths(tmp_path):
    """ci/fstests/patches apply to the pinned commit, and the common/config
    one exports the same program paths as upstream's $(type -P ...), on a
    $PATH made to tell lookups apart: some programs only in the first
    directory, some only in the second, some nowhere, some shadowed by a
    file that is not executable or by a directory, an empty entry and a
    ~/ entry."""
    src = fstests_clone(tmp_path)
    names = sorted(set(re.findall(r"\$\(type -P ([A-Za-z0-9_.+-]+)\)",
                                  (src / "common" / "config").read_text())))
    home = tmp_path / "home"
    dirs = [tmp_path / "shadow", tmp_path / "bin1", tmp_path / "bin2", home / "hbin"]
    for d, chosen in zip(dirs[1:], (names[::3], names[:-5], names[-3:])):
        d.mkdir(parents=True)
        for n in chosen:
            (d / n).write_text("#!/bin/sh\n")
            (d / n).chmod(0o755)
    dirs[0].mkdir()
    (dirs[0] / names[1]).write_text("not executable\n")
    (dirs[0] / names[2]).mkdir()
    for n in ("fsstress", "fsx"):
        (src / "ltp" / n).write_text("#!/bin/sh\n")
        (src / "ltp" / n).chmod(0o755)
    path = "%s:%s::%s:~/hbin:/usr/sbin:/usr/bin:/sbin:/bin" % tuple(dirs[:3])
    before = sourced_progs(src, path, home)
    fsroot.apply_patches(str(src), fsroot.source()[1])
    after = sourced_progs(src, path, home)
    assert len(before) > 90 and after == before
    values = set(before.values())
    for d in dirs[1:3]:
        assert any(v.startswith(str(d)) for v in values), d
    assert "" in values
    text = (src / "common" / "config").read_text()
    assert text.count("_set_prog_path ") > 90


SECTION_REPORTS = r"""
. ./common/report
_sysfs_dev() { :; }
_sync_fs() { :; }
__generate_ext4_report_vars() { :; }
eval "$(declare -f __generate_report_vars | sed '1s/__generate_report_vars/__counted/')"
__generate_report_vars() { echo call >> "$OUT/calls"; __counted; }
export FSTYP=ext2 TEST_DEV=/dev/null SCRATCH_DEV=/dev/zero TEST_DIR=/tmp SCRATCH_MNT=/mnt
HOST=fstests tmp=$OUT/tmp REPORT_DIR=$OUT fstests_start_time="2026-01-01 00:00:00"
REPORT_VARS_FILE=$OUT/vars
rep() {    # name section mkfs-options section-time (set: the section's final report)
    MKFS_OPTIONS=$3 _xunit_make_section_report $2 1 0 0 "$4" > /dev/null
    sed -n '/<properties>/,/<\/properties>/p' "$OUT/result.xml" > "$OUT/props.$1"
}
echo "FOO: 1" > "$OUT/vars"
rep a1 sect_a "-b 1024" ""
echo "FOO: 2" > "$OUT/vars"
rep a2 sect_a "-b 1024" ""
rep a3 sect_a "-b 1024" 10
rep b1 sect_b "-b 4096" ""
"""


def section_reports(src, out):
    """Section reports as check writes them (interim ones before tests, a
    final one with the section's time), with a property changing after the
    first: (how often the properties were computed, {report: properties})."""
    out.mkdir()
    subprocess.run(["bash", "-c", SECTION_REPORTS], cwd=src, check=True, capture_output=True,
                   timeout=120, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C",
                                     "OUT": str(out), "here": str(src)})
    return (len((out / "calls").read_text().split()),
            {n: (out / ("props." + n)).read_text() for n in ("a1", "a2", "a3", "b1")})


def test_fstests_patches_compute_the_xunit_properties_once(tmp_path):
    """0002: the interim reports of a section reuse its first properties;
    the final report and another section's reports are upstream's."""
    src = fstests_clone(tmp_path)
    calls, props = section_reports(src, tmp_path / "stock")
    assert calls == 4 and props["a1"] != props["a2"] == props["a3"]
    assert "-b 4096" in props["b1"] and props["a1"].count("<property ") >= 10
    fsroot.apply_patches(str(src), fsroot.source()[1])
    calls_p, props_p = section_reports(src, tmp_path / "patched")
    assert calls_p == 3
    assert props_p["a1"] == props_p["a2"] == props["a1"]
    assert props_p["a3"] == props["a3"] and props_p["b1"] == props["b1"]


def test_fstests_patch_that_does_not_apply_is_one_line(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("one\n")
    for cmd in (["init", "-q"], ["add", "f"]):
        subprocess.run(["git", "-C", str(src)] + cmd, check=True)
    bad = tmp_path / "0001-bad.patch"
    bad.write_text("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-two\n+three\n")
    monkeypatch.setattr(fsroot, "patches", lambda: [("0001-bad.patch", str(bad), "0" * 64)])
    with pytest.raises(ForkError) as exc:
        fsroot.apply_patches(str(src), "63a29724a85f1999")
    msg = str(exc.value)
    assert "\n" not in msg and "0001-bad.patch does not apply to fstests 63a29724a85f" in msg
    assert "refresh it" in msg


def test_bad_package_name(repo):
    (repo / "ci" / "fstests" / "packages").write_text("xfsprogs\nrm -rf\n")
    with pytest.raises(ForkError, match="not a Debian package name"):
        fsroot.packages()


def test_read_groups(tmp_path):
    (tmp_path / "tests" / "generic").mkdir(parents=True)
    (tmp_path / "tests" / "generic" / "group.list").write_text(
        "# QA groups control file\n\n001 rw dir udf auto quick\n002 metadata auto quick\n")
    assert fsroot.read_groups(str(tmp_path)) == {
        "generic/001": ["rw", "dir", "udf", "auto", "quick"],
        "generic/002": ["metadata", "auto", "quick"]}


# ------------------------------------------------ the pipeline, fake guest

@pytest.fixture
def pipeline(tmp_path, monkeypatch, repo):
    """cmd_fstests.main with a fake root, fake builds and a fake guest that
    'runs' each test with the outcome in `outcomes[kernel][test]`."""
    work = tmp_path / "work"
    monkeypatch.setenv("FORK_WORKDIR", str(work))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")       # one shard, whatever the machine
    root_img = tmp_path / "root.img"
    root_img.write_bytes(b"\0" * 4096)
    monkeypatch.setattr(fsroot, "ensure_root", lambda prog, log: {
        "image": str(root_img), "key": "rootkey", "fstests_url": "/b/xfstests.bundle",
        "fstests_commit": "63a29724a85f1999e49bf0a9bf0d22643b6116e5", "groups": GROUPS,
        "inputs": {"suite": "bookworm"}, "package_versions": ["bash 5.2.15-2+b9"]})
    monkeypatch.setattr(cmd_fstests, "Series", lambda path: types.SimpleNamespace(
        distro_branch="distro/7.3", head_branch="series/7.3"))
    monkeypatch.setattr(cmd_fstests, "rev_parse", lambda rev: (rev.replace("/", "") * 10)[:40])
    monkeypatch.setattr(cmd_fstests, "qemu_binary", lambda: "qemu")
    configs = tmp_path / "configs"
    configs.mkdir()

    def fake_build(rev, flavour, do_patchcheck, prog):
        name = rev.replace("/", "-")
        (configs / name).write_text("CONFIG_QFMT_V2=y\n# %s\n" % rev)
        return types.SimpleNamespace(image="/k/%s.bzImage" % name, config=str(configs / name),
                                     image_sha256=rev.replace("/", "") * 8, version="7.3")

    monkeypatch.setattr(cmd_fstests, "build", fake_build)
    state = {"outcomes": {}, "boots": [], "stop_after": None, "configs": [], "reports": {},
             "error_flag": set(), "timeouts": []}

    def fake_guest(kernel, script, disks, timeout, prog, log, label, follow=None, kvm=False):
        assert not kvm          # no image in the store: KVM not probed, TCG
        tests = script.split("fork-tests <<'FORK_EOF'\n", 1)[1].split("\nFORK_EOF")[0].split()
        state["boots"].append((os.path.basename(kernel), tests))
        # what the guest's KCONFIG_PATH reads: the results disk as the host made it
        state["configs"].append(subprocess.run(
            ["debugfs", "-R", "cat /%s" % fstests.KCONFIG_NAME, disks[3]],
            capture_output=True, text=True).stdout)
        nth = sum(1 for k, _ in state["boots"] if k == os.path.basename(kernel))
        if state.get("crash") in (os.path.basename(kernel), (os.path.basename(kernel), nth)):
            raise ForkError("QEMU died (test)")
        outcome = state["outcomes"][os.path.basename(kernel)]
        cases, console = [], ["FSTESTS-BEGIN"]
        for n, t in enumerate(tests):
            if state["stop_after"] is not None and n >= state["stop_after"]:
                console.append("FSTESTS-TIME-LIMIT")
                break
            st = outcome.get(t, "pass")
            if t == state.get("cut_at"):    # the limit, then the guest cuts this test
                state["timeouts"].append((timeout, int(re.search(
                    r"\( sleep (\d+); echo FSTESTS-TIME-LIMIT;", script).group(1))))
                console += ["run fstests %s at now" % t, "FSTESTS-TIME-LIMIT", "FSTESTS-CUT"]
                cases.append('<testcase classname="xfstests.global" name="%s" time="300">'
                             '<failure message="exit status 137" type="TestFail"/>'
                             '</testcase>' % t)
                break
            if t == state.get("die_at"):            # the guest dies in this test
                console.append("run fstests %s at now" % t)
                break
            console += ["run fstests %s at now" % t] + state["reports"].get(
                os.path.basename(kernel), {}).get(t, []) + ["%s 3s ...  3s" % t]
            body = {"pass": "", "notrun": "<skipped message=\"no\"/>",
                    "fail": "<failure message=\"output mismatch\" type=\"TestFail\"/>"}[st]
            cases.append('<testcase classname="xfstests.global" name="%s" time="3">%s'
                         '</testcase>' % (t, body))
        if console[-1] != "run fstests %s at now" % state.get("die_at"):
            console.append("FSTESTS-END check-exit=0")
        xml = Path(log).parent / "x.xml"
        xml.write_text('<?xml version="1.0"?><testsuite>%s</testsuite>' % "".join(cases))
        # as the guest does: fstests' results tree on the results disk
        subprocess.run(["debugfs", "-w", "-R", "mkdir xfstests", disks[3]], check=True,
                       capture_output=True)
        subprocess.run(["debugfs", "-w", "-R", "write %s xfstests/result.xml" % xml, disks[3]],
                       check=True, capture_output=True)
        # TEST_DEV: a clean ext2 (the guest's mkfs.ext2)
        for d in disks[1:3]:
            subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", d], check=True)
        if os.path.basename(kernel) in state["error_flag"]:   # as ext2_error() leaves it
            subprocess.run(["debugfs", "-w", "-R", "ssv state 3", disks[1]], check=True,
                           capture_output=True)
        if follow is not None:     # run_guest runs it while QEMU writes the console
            follow.start()
        Path(log).write_text("\n".join(console) + "\nFORK-EXIT-STATUS: 0\n")
        if follow is not None:
            follow.stop()
        return types.SimpleNamespace(ok=True, rc=0, error=None, problems=[], seconds=1.0,
                                     log=log, output=[])

    monkeypatch.setattr(cmd_fstests, "run_guest", fake_guest)
    monkeypatch.setattr(fstests, "DISK_MB", {"test": 8, "scratch": 8, "results": 8})
    return state


def run_main(*argv):
    from forkkit import cli
    return cli.main(["fstests"] + list(argv))


def stores(rec):
    """The kernels' records in a --record directory."""
    return sorted(rec.iterdir())


def test_pipeline_new_failure_exits_1(pipeline, capsys):
    pipeline["outcomes"] = {"distro-7.3.bzImage": {"generic/002": "notrun"},
                            "series-7.3.bzImage": {"generic/002": "notrun",
                                                   "generic/013": "fail"}}
    rc = run_main("generic/001", "generic/002", "generic/013")
    out = capsys.readouterr()
    assert rc == 1, out
    assert re.search(r"generic/013\s+pass\s+fail\s+3s\s+3s\s+new failure", out.out)
    assert re.search(r"generic/002\s+notrun\s+notrun\s+.*same", out.out)
    assert "e2fsck -fn after each boot: clean (2 boots" in out.out
    assert "1 new failures on the series: generic/013" in out.err
    # the console's follower said each test as it finished (check's line: pass)
    assert re.search(r"series 3/3 generic/013 pass \(boot elapsed", out.err), out.err
    report = json.loads(Path(re.search(r"results: (\S+)", out.out).group(1), "fstests.json")
                        .read_text())
    assert report["meta"]["fstests_commit"].startswith("63a29724")
    assert report["meta"]["fstests_url"] == "/b/xfstests.bundle"
    # the markdown may be committed (records/fstests/<ver>/quick.md): a local
    # bundle is named from the repository, not by this machine's path
    md = Path(report["meta"]["run_dir"], "fstests.md").read_text()
    assert "\n- fstests: xfstests.bundle (a local copy) at 63a29724" in md
    assert "- fstests: /" not in md
    assert report["totals"]["series"] == {"pass": 1, "fail": 1, "notrun": 1, "seconds": 9}
    assert report["meta"]["command"] == ("tools/fork fstests distro/7.3 series/7.3 generic/001 "
                                         "generic/002 generic/013")
    rundir = Path(report["meta"]["run_dir"])
    assert [b["side"] for b in report["boots"]] == ["base", "series"]
    assert (Path(report["boots"][0]["dir"]) / "results" / "xfstests" / "result.xml").exists()
    assert report["boots"][0]["xunit"].endswith("/results/xfstests/result.xml")
    assert "| generic/013 | pass | fail | 3s | 3s | **new failure** |" in \
        (rundir / "fstests.md").read_text()
    # nothing re-runs: the results are kept per test
    before = len(pipeline["boots"])
    assert run_main("generic/001", "generic/002", "generic/013") == 1
    assert len(pipeline["boots"]) == before


def test_pipeline_reports_kernel_errors_by_kernel(pipeline, capsys):
    """A report only the series' console has is named, one on both is not;
    the counts follow the kernel, not the side it had when it booted; a
    test disk the kernel marked with errors is not called clean."""
    bug = "BUG: KASAN: use-after-free in ext2_new_blocks+0x1a/0x200"
    err = "EXT2-fs (vdb): error: ext2_fsync: detected IO error when writing metadata buffers"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["reports"] = {"distro-7.3.bzImage": {"generic/013": ["[ 5.0] " + err]},
                           "series-7.3.bzImage": {"generic/013": ["[ 6.1] " + err],
                                                  "generic/002": ["[ 9.9] " + bug]}}
    pipeline["error_flag"] = {"series-7.3.bzImage"}
    assert run_main("generic/013", "generic/002") == 0
    out = capsys.readouterr().out
    rep = json.loads((Path(re.search(r"^results: (\S+)", out, re.M).group(1))
                      / "fstests.json").read_text())
    kinds = rep["meta"]["report_kinds"]
    assert kinds["BUG: KASAN: use-after-free in ext2_new_blocks"] == {
        "base": 0, "series": 1, "tests": ["generic/002"]}
    assert kinds[err] == {"base": 1, "series": 1, "tests": ["generic/013"]}
    assert "on the series only: BUG: KASAN: use-after-free in ext2_new_blocks" in out
    assert re.search(r"^e2fsck -fn after each boot: boot series 1: test e2fsck -fn exit 0 but "
                     r"superblock state: clean with errors \(", out, re.M), out
    md = (Path(re.search(r"^results: (\S+)", out, re.M).group(1)) / "fstests.md").read_text()
    assert "| generic/002 | 0 | **1 (series only)** |" in md
    # the series image as the base of another run: its reports are the base's now
    assert run_main("series/7.3", "distro/7.3", "generic/013", "generic/002") == 0
    out = capsys.readouterr().out
    assert "on the series only" not in out
    assert re.search(r"^kernel reports in the consoles: 2 kinds of line \(2 on the base, 1 on "
                     r"the series\)$", out, re.M), out


def test_pipeline_reuses_base_results_for_another_series(pipeline, capsys):
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {},
                            "scratch-fault.bzImage": {"generic/001": "fail"}}
    assert run_main("generic/001") == 0
    assert run_main("distro/7.3", "scratch/fault", "generic/001") == 1
    # the base kernel ran generic/001 once: the second comparison reused it
    assert [b[0] for b in pipeline["boots"]] == ["distro-7.3.bzImage", "series-7.3.bzImage",
                                                 "scratch-fault.bzImage"]
    # --fresh runs both kernels again
    assert run_main("distro/7.3", "scratch/fault", "generic/001", "--fresh") == 1
    assert [b[0] for b in pipeline["boots"][3:]] == ["distro-7.3.bzImage",
                                                     "scratch-fault.bzImage"]


def test_tests_may_follow_options(pipeline, capsys):
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "scratch-fault.bzImage": {}}
    assert run_main("distro/7.3", "scratch/fault", "--time-limit", "900", "generic/001",
                    "generic/013") == 0
    assert pipeline["boots"][0] == ("distro-7.3.bzImage", ["generic/001", "generic/013"])
    with pytest.raises(SystemExit) as exc:
        run_main("generic/001", "--no-such-option")
    assert exc.value.code == 2


def test_pipeline_same_and_fixed_exit_0(pipeline, capsys):
    pipeline["outcomes"] = {"distro-7.3.bzImage": {"generic/013": "fail"},
                            "series-7.3.bzImage": {}}
    rc = run_main("generic/001", "generic/013")
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"generic/013\s+fail\s+pass.*fixed", out)


def test_pipeline_time_limit_then_resume(pipeline, capsys):
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["stop_after"] = 1
    rc = run_main("generic/001", "generic/002", "generic/013", "--time-limit", "600")
    out = capsys.readouterr()
    assert rc == 3, out
    assert "run the same command again to continue" in out.err
    assert re.search(r"generic/002\s+-\s+-.*pending", out.out)
    pipeline["stop_after"] = None
    boots = len(pipeline["boots"])
    assert run_main("generic/001", "generic/002", "generic/013", "--time-limit", "600") == 0
    # the second run asked each kernel only for what had not run
    assert pipeline["boots"][boots:] == [("distro-7.3.bzImage", ["generic/002", "generic/013"]),
                                         ("series-7.3.bzImage", ["generic/002", "generic/013"])]


def test_pipeline_cut_test_is_pending_then_runs_again(pipeline, capsys, tmp_path):
    # the series' guest cut generic/002 at the time limit: check's "failed"
    # for it is no verdict; it stays pending and the next run runs it first
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["cut_at"] = "generic/002"
    rec = tmp_path / "rec"
    argv = ["generic/001", "generic/002", "generic/013", "--time-limit", "1200",
            "--record", str(rec)]
    rc = run_main(*argv)
    out = capsys.readouterr()
    assert rc == 3, out
    assert re.search(r"generic/002\s+-\s+-.*pending", out.out), out.out
    assert "new failure" not in out.out
    assert "generic/002 was cut at the time limit: left to run again" in out.err
    # the host's timeout leaves the guest the grace and its own margin
    assert len(pipeline["timeouts"]) == 2
    assert all(t == limit + fstests.CUT_GRACE + cmd_fstests.BOOT_MARGIN
               for t, limit in pipeline["timeouts"])
    boots = [json.loads((d / "boots.json").read_text()) for d in stores(rec)]
    assert [b[-1]["cut"] for b in boots] == ["generic/002", "generic/002"]
    # the table says which tests were cut
    md = Path(json.loads(Path(re.search(r"results: (\S+)", out.out).group(1),
                              "fstests.json").read_text())["meta"]["run_dir"],
              "fstests.md").read_text()
    assert "\n- cut at the time limit, each left to run again: base boot 1: " \
        "generic/002; series boot 1: generic/002\n" in md
    pipeline["cut_at"] = None
    n = len(pipeline["boots"])
    assert run_main(*argv) == 0
    assert pipeline["boots"][n:] == [("distro-7.3.bzImage", ["generic/002", "generic/013"]),
                                     ("series-7.3.bzImage", ["generic/002", "generic/013"])]


def test_pipeline_group_uses_exclude_list(pipeline, repo, capsys):
    (repo / "ci" / "fstests" / "ext2.exclude").write_text(
        "generic/002  # hangs on distro/7.3: test\n")
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("--group", "quick") == 0
    out = capsys.readouterr().out
    assert pipeline["boots"][0][1] == ["ext4/001", "generic/001"]
    assert "excluded generic/002: hangs on distro/7.3: test" in out


@pytest.mark.parametrize("argv,msg", [
    (["a", "b", "c"], "'c' is neither a test name"),
    (["generic/001", "distro/7.3"], "comes after test names"),
    (["generic/001", "--group", "quick"], "either --group or test names"),
    (["--time-limit", "-5", "generic/001"], "--time-limit must be"),
    (["--series", "nope", "generic/001"], "no series at nope"),
])
def test_bad_input_one_line(argv, msg, tmp_path):
    env = dict(os.environ, FORK_WORKDIR=str(tmp_path / "work"))
    proc = subprocess.run([PYTHON, str(FORK), "fstests"] + argv, capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith("fork fstests: error: ")
    assert msg in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_root_build_needs_root(repo, monkeypatch, tmp_path):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ForkError, match="needs root"):
        fsroot.build_root({"suite": "bookworm"}, "k", None, str(tmp_path / "log"))


def test_background_reraises_in_caller():
    def boom():
        raise ForkError("build of series/7.3 failed")
    bg = cmd_fstests.Background(boom)
    with pytest.raises(ForkError, match="build of series/7.3 failed"):
        bg.result()
    assert cmd_fstests.Background(lambda: 42).result() == 42


def test_fsck_verdict_tells_a_wiped_disk_from_a_clean_one():
    # measured: the scratch disk after a run, e2fsck -fn exit 0 on a backup
    assert fstests.fsck_verdict(0, "ext2fs_open2: Bad magic number in super-block\n"
                                   "e2fsck: Superblock invalid, trying backup blocks...\n",
                                "x") == fstests.WIPED
    assert fstests.fsck_verdict(0, "test.img: 122/262144 files\n", "x") == "clean"
    assert fstests.fsck_verdict(4, "Free blocks count wrong for group #0\n", "/e.txt") == \
        "e2fsck -fn exit 4 (/e.txt)"
    boots = [{"side": "base", "n": 1, "e2fsck": {"test": "clean", "scratch": fstests.WIPED}},
             {"side": "series", "n": 1, "e2fsck": {"test": "e2fsck -fn exit 4 (/e.txt)",
                                                   "scratch": "clean"}}]
    assert cmd_fstests.e2fsck_summary([("base", boots[0])]).startswith("clean")
    assert cmd_fstests.e2fsck_summary([(b["side"], b) for b in boots]) == \
        "boot series 1: test e2fsck -fn exit 4 (/e.txt)"
    # the side this run gives the boot's kernel, not the one it had then
    assert cmd_fstests.e2fsck_summary([("base", boots[1])]) == \
        "boot base 1: test e2fsck -fn exit 4 (/e.txt)"


def test_fsck_verdict_names_the_error_flag_the_kernel_set(tmp_path):
    """ext2_error() marks the superblock "clean with errors" and e2fsck -fn
    still exits 0 (generic/113 on 6.12 did this to TEST_DEV): the verdict
    must not be "clean", and the run's summary must name the boot."""
    img = str(tmp_path / "t.img")
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", img, "4M"], check=True)

    def check():
        fsck = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True)
        head = subprocess.run(["dumpe2fs", "-h", img], capture_output=True, text=True)
        state = fstests.fs_state(head.stdout)
        return fsck.returncode, state, fstests.fsck_verdict(
            fsck.returncode, fsck.stdout + fsck.stderr, "/e.txt", state)

    assert check() == (0, "clean", "clean")
    # EXT2_VALID_FS | EXT2_ERROR_FS, as ext2_error() leaves it
    subprocess.run(["debugfs", "-w", "-R", "ssv state 3", img], check=True,
                   capture_output=True)
    rc, state, verdict = check()
    assert (rc, state) == (0, "clean with errors")
    assert verdict == "e2fsck -fn exit 0 but superblock state: clean with errors (/e.txt)"
    boots = [("series", {"side": "series", "n": 5,
                         "e2fsck": {"test": verdict, "scratch": fstests.WIPED}})]
    assert cmd_fstests.e2fsck_summary(boots) == "boot series 5: test " + verdict
    assert fstests.fs_state("dumpe2fs 1.47.0 (5-Feb-2023)\n") is None
    assert fstests.fsck_verdict(0, "t.img: 11/1024 files\n", "x", None) == "clean"


def test_kernel_reports_are_counted_from_every_console(tmp_path):
    """A boot's record keeps its first 20 kernel reports; the run counts
    every report line of the tests it chose in every console (plain or
    xz'd) by what it says, and names the kinds only the series has and
    the consoles it could not read."""
    import lzma
    fsync = "EXT2-fs (vdc): error: ext2_fsync: detected IO error when writing metadata buffers"
    base_log = tmp_path / "base.log"
    base_log.write_text(
        "[    1.0] WARNING: CPU: 0 PID: 1 at fs/ext2/super.c:10 ext2_fill_super+0x1a/0x90\n"
        "generic/095        [  870.1] run fstests generic/095 at 2026-12-05 14:48:00\n"
        + "[  879.6] %s\n" % fsync * 25 +
        "generic/113        [  980.0] run fstests generic/113 at 2026-12-05 14:49:00\n"
        "  4s [  984.4] EXT2-fs (vdb): error: ext2_fsync: detected IO error "
        "when writing metadata buffers\n"
        "[  985.0] run fstests generic/200 at 2026-12-05 14:50:00\n"
        "[  985.5] BUG: not chosen\n"
        "[  986.0] run fstests generic/300 at 2026-12-05 14:51:00\n"
        "[  987.0] BUG: cut by the time limit, runs again later\n"
        "FSTESTS-TIME-LIMIT\n"
        "[  990.0] EXT2-fs (vdb): error: ext2_free_blocks: bit already cleared for block 4242\n")
    stale_log = tmp_path / "stale.log"      # generic/095 before --fresh ran it again
    stale_log.write_text("[  1.0] run fstests generic/095 at 2026-12-04 10:00:00\n"
                         "[  2.0] BUG: stale, the later boot's result is the one used\n")
    with lzma.open(str(tmp_path / "series.log.xz"), "wt") as fh:
        fh.write("[    1.2] WARNING: CPU: 1 PID: 7 at fs/ext2/super.c:12 "
                 "ext2_fill_super+0x2b/0x90\n"
                 "[  430.0] run fstests generic/095 at 2026-12-05 17:20:00\n"
                 "[  435.1] %s\n[ 1201.0] INFO: task fsstress:4242 blocked for more than "
                 "122 seconds.\n"
                 "[ 1300.0] WARNING: fs/ext2/balloc.c:104 at ext2_new_blocks+0x1/0x2, CPU#0: "
                 "fsstress/81\n"
                 "FSTESTS-END check-exit=0\n"
                 "[ 1400.0] EXT2-fs (vdb): error: ext2_free_blocks: bit already cleared for "
                 "block 77\n" % fsync)
    (tmp_path / "bad.log.xz").write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    (tmp_path / "old.log").write_text(
        "[  5.0] run fstests generic/300 at 2026-12-03 09:00:00\n"
        "generic/300    [  9.0] WARNING: fs/ext2/balloc.c:99 at ext2_new_blocks+0x3/0x2, "
        "CPU#1: fsstress/4031\n")
    boots = [("base", {"side": "base", "n": 1, "tests": ["generic/095"]}, [str(stale_log)]),
             ("base", {"side": "base", "n": 2, "tests": ["generic/095", "generic/113",
                                                         "generic/200"]}, [str(base_log)]),
             # the test the time limit cut above, run again (when the same image
             # was the series of another run): 7.3's WARNING, as on the series
             ("base", {"side": "series", "n": 3, "tests": ["generic/300"]}, [str(
                 tmp_path / "old.log")]),
             ("series", {"side": "series", "n": 1, "tests": ["generic/095"]},
              [str(tmp_path / "series.log"), str(tmp_path / "series.log.xz")]),
             ("series", {"side": "series", "n": 2, "tests": ["generic/113"]},
              [str(tmp_path / "gone.log"), str(tmp_path / "bad.log.xz")])]
    kinds, missing = fstests.kernel_reports(boots, ["generic/095", "generic/113",
                                                    "generic/300"])
    warn = "WARNING: CPU ? PID: N at fs/ext2/super.c:N ext2_fill_super"
    task = "INFO: task fsstress:N blocked for more than N seconds."
    warn73 = "WARNING: fs/ext2/balloc.c:N at ext2_new_blocks, CPU#N: fsstress/N"
    freed = "EXT2-fs (vdb): error: ext2_free_blocks: bit already cleared for block N"
    assert kinds == {
        warn: {"base": 1, "series": 1, "tests": ["(boot)"]},
        fsync: {"base": 25, "series": 1, "tests": ["generic/095"]},
        fsync.replace("vdc", "vdb"): {"base": 1, "series": 0, "tests": ["generic/113"]},
        task: {"base": 0, "series": 1, "tests": ["generic/095"]},
        warn73: {"base": 1, "series": 1, "tests": ["generic/300", "generic/095"]},
        freed: {"base": 1, "series": 1, "tests": ["(end)"]}}
    assert len(missing) == 1 and missing[0].startswith("series boot 2 (bad.log.xz: ")
    summary = fstests.reports_summary(kinds, missing, 4)
    assert summary == ("6 kinds of line (29 on the base, 5 on the series); on the series "
                       "only: " + task + "; not read: " + missing[0])
    assert fstests.reports_summary({}, [], 1) == "none in 1 console"
    assert fstests.reports_summary({warn: kinds[warn]}, [], 2).startswith("1 kind of line")
    meta = {"base": {"rev": "b", "commit": "1" * 40, "image_sha256": "2" * 64},
            "series": {"rev": "s", "commit": "3" * 40, "image_sha256": "4" * 64},
            "fstests_url": "u", "fstests_commit": "c", "root_key": "r", "suite": "bookworm",
            "selection": "x", "command": "tools/fork fstests", "report_kinds": kinds,
            "reports_summary": summary}
    md = fstests.markdown(meta, [], {})
    assert "- kernel reports in the consoles: " + summary in md
    assert "| `%s` | generic/095 | 0 | **1 (series only)** |" % task in md
    assert "| `%s` | generic/095 | 25 | 1 |" % fsync in md


def test_root_cache_is_shared_by_clones(monkeypatch, tmp_path):
    """The guest root is cached outside work/ (one image for every clone on
    the machine, CI's fresh clone included) and found wherever its
    directory was moved; metadata of another key or without its image is
    no root."""
    monkeypatch.delenv("FORK_FSTESTS_ROOTS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "clone1" / "work"))
    assert fsroot.roots_dir() == str(tmp_path / "xdg" / "fork-kit" / "fstests-roots")
    d = Path(fsroot.roots_dir())
    (d / "root-k1.json").write_text(json.dumps({"key": "k1", "image": "/elsewhere/x.img"}))
    assert fsroot.cached("k1") is None                  # no image yet
    (d / "root-k1.img").write_bytes(b"img")
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "clone2" / "work"))
    assert fsroot.cached("k1")["image"] == str(d / "root-k1.img")
    (d / "root-k2.json").write_text(json.dumps({"key": "k1"}))
    (d / "root-k2.img").write_bytes(b"img")
    assert fsroot.cached("k2") is None                  # metadata of another key
    monkeypatch.setenv("FORK_FSTESTS_ROOTS", str(tmp_path / "mine"))
    assert fsroot.roots_dir() == str(tmp_path / "mine") and fsroot.cached("k1") is None


# --------------------------------------------- --record: a run across machines

def stopped_record(pipeline, tmp_path):
    """(record directory, tests) of a run of three tests that the time
    limit stopped after the first on each kernel, --record kept."""
    rec = tmp_path / "records" / "fstests" / "7.3"
    tests = ["generic/001", "generic/002", "generic/013"]
    pipeline["outcomes"] = {"distro-7.3.bzImage": {"generic/002": "notrun"},
                            "series-7.3.bzImage": {"generic/002": "notrun"}}
    pipeline["stop_after"] = 1
    assert run_main(*tests, "--time-limit", "600", "--record", str(rec)) == 3
    return rec, tests


def test_record_resumes_on_a_fresh_machine(pipeline, tmp_path, capsys):
    """A run stops at the time limit; the next one runs on a machine
    without work/ and asks each kernel only for what the record lacks."""
    rec, tests = stopped_record(pipeline, tmp_path)
    names = [p.name for p in stores(rec)]
    assert len(names) == 2
    for name in names:
        d = rec / name
        kernel = json.loads((d / "kernel.json").read_text())
        assert name.startswith(kernel["image_sha256"][:16])
        assert kernel["fstests_commit"].startswith("63a29724")
        assert list(json.loads((d / "tests.json").read_text())) == ["generic/001"]
        boot = json.loads((d / "boots.json").read_text())[0]
        assert boot["n"] == 1 and boot["console"] == "boot-1/console.log.xz"
        assert (d / "boot-1" / "result.xml").read_text().count("<testcase") == 1
        assert (d / "boot-1" / "e2fsck.txt").exists()
        # which harness ran it: its key, and its guest script named by the
        # sha256 of its text without the test list (tests.json has the
        # tests) and with the time limit the boot names set to 1; the
        # script stays in the work directory, records hold no code
        assert not list(d.glob("boot-1/*.sh")) and not list(rec.parent.glob("**/*.sh"))
        script = fstests.guest_script(["TESTS"], 1)
        assert hashlib.sha256(script.encode()).hexdigest() == boot["guest_script"]
        # and the kit checkout whose code renders it
        assert boot["kit_commit"]["commit"] == subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
            text=True).stdout.strip() and isinstance(boot["kit_commit"]["dirty"], bool)
        assert boot["time_limit_s"] >= 60
        kept = Path(os.environ["FORK_WORKDIR"], "fstests", "kernels", name, "boot-1",
                    "guest-script.sh").read_text()
        assert fsrecord.script_template(kept) == (script, boot["time_limit_s"])
        assert boot["guest_script"].startswith(boot["harness"])
        assert boot["harness"] == fstests.harness_key() and len(boot["kit"]) >= 12
        # and no path of this machine: the work directory's files relative to it
        fsck = (d / "boot-1" / "e2fsck.txt").read_text()
        assert "\nfstests/kernels/%s/boot-1/test.img: " % name in fsck
        for f in ("boots.json", "boot-1/e2fsck.txt"):
            assert str(tmp_path) not in (d / f).read_text(), f
        assert "FSTESTS-BEGIN" in subprocess.run(["xzcat", str(d / "boot-1" / "console.log.xz")],
                                                 capture_output=True, text=True).stdout
    shutil.rmtree(os.environ["FORK_WORKDIR"])          # a fresh machine
    pipeline["stop_after"] = None
    asked = len(pipeline["boots"])
    capsys.readouterr()
    assert run_main(*tests, "--time-limit", "600", "--record", str(rec)) == 0
    out = capsys.readouterr()
    assert pipeline["boots"][asked:] == [("distro-7.3.bzImage", ["generic/002", "generic/013"]),
                                         ("series-7.3.bzImage", ["generic/002", "generic/013"])]
    assert "1 tests recorded in %s" % rec in out.err
    report = json.loads(Path(re.search(r"results: (\S+)", out.out).group(1), "fstests.json")
                        .read_text())
    # every boot that gave the results, the recorded ones with their files
    assert [(b["side"], b["n"]) for b in report["boots"]] == [
        ("base", 1), ("base", 2), ("series", 1), ("series", 2)]
    assert os.path.exists(report["boots"][0]["xunit"])
    assert report["totals"]["base"] == {"pass": 2, "fail": 0, "notrun": 1, "seconds": 9}
    assert "--record %s" % rec in report["meta"]["command"]
    md = Path(report["meta"]["run_dir"], "fstests.md").read_text()
    assert "- results recorded in `%s/<kernel>/`" % rec in md
    assert "package versions %s" % report["meta"]["root_packages"] in md
    for name in names:
        assert sorted(json.loads((rec / name / "tests.json").read_text())) == tests
        assert (rec / name / "boot-2" / "result.xml").exists()
    # four boots, one harness: one script named, none kept in the records
    assert {b["guest_script"] for name in names
            for b in json.loads((rec / name / "boots.json").read_text())} == \
        {hashlib.sha256(fstests.guest_script(["TESTS"], 1).encode()).hexdigest()}
    assert sorted(p.name for p in rec.iterdir()) == sorted(names)
    assert sorted(p.name for p in rec.parent.iterdir()) == [rec.name]


def test_no_boot_reports_what_the_record_holds(pipeline, tmp_path, capsys):
    """--no-boot writes the report of the recorded results, pending tests
    and all, without a boot; its reproduce line is the command that runs
    them.  With --fresh it would only forget: refused."""
    rec, tests = stopped_record(pipeline, tmp_path)
    shutil.rmtree(os.environ["FORK_WORKDIR"])          # on another machine
    boots = len(pipeline["boots"])
    md = tmp_path / "report.md"
    capsys.readouterr()
    assert run_main(*tests, "--time-limit", "600", "--record", str(rec), "--no-boot",
                    "--markdown", str(md)) == 3
    out = capsys.readouterr()
    assert len(pipeline["boots"]) == boots
    assert "(in the stores of TCG guests through qemu: FORK_ACCEL and --runner name others); " \
           "run the same command without --no-boot to continue" in out.err
    text = md.read_text()
    assert re.search(r"\| generic/001 \| pass \| pass \|", text), text
    assert re.search(r"\| generic/013 \| - \| - \|.*\| pending \|", text), text
    assert "- reproduce: `tools/fork fstests distro/7.3 series/7.3 --time-limit 600 --record " \
           "%s generic/001 generic/002 generic/013`" % rec in text
    res = run_main(*tests, "--record", str(rec), "--no-boot", "--fresh")
    assert res == 1 and "--fresh with --no-boot" in capsys.readouterr().err
    assert len(json.loads((stores(rec)[0] / "tests.json").read_text())) == 1


def test_no_boot_does_not_probe_kvm(pipeline, tmp_path, capsys, monkeypatch):
    """FORK_ACCEL=auto with no probe on record would boot a KVM guest to
    probe: under --no-boot that is a one-line error, and nothing boots."""
    from forkkit.guest import accel
    monkeypatch.setenv("FORK_ACCEL", "auto")
    kernels = Path(os.environ["FORK_WORKDIR"], "kernels")
    kernels.mkdir(parents=True)
    (kernels / ("0" * 64 + ".bzImage")).write_bytes(b"k")
    # whatever /dev/kvm is here, the probe boots with what it is given
    monkeypatch.setattr(accel, "probe", lambda kernel, boot: boot(kernel, "echo", timeout=1))
    res = run_main("generic/001", "--no-boot")
    err = capsys.readouterr().err
    assert res == 1 and "FORK_ACCEL=auto has not probed KVM" in err and "Traceback" not in err
    assert pipeline["boots"] == []
    assert not Path(os.environ["FORK_WORKDIR"], "accel").exists()


def test_a_recorded_boot_stays_as_the_record_has_it(pipeline, tmp_path):
    """The next boot of a kernel rewrites its boots.json: a boot it already
    held keeps the record's entry (edited there, or written by an older
    kit), not this machine's store's copy of it."""
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["stop_after"] = 1
    assert run_main("generic/001", "generic/002", "--time-limit", "600", "--record",
                    str(rec)) == 3
    for d in stores(rec):
        boots = json.loads((d / "boots.json").read_text())
        boots[0].update(error="as the record has it", ingested="read by hand")
        (d / "boots.json").write_text(json.dumps(boots))
    pipeline["stop_after"] = None
    assert run_main("generic/001", "generic/002", "--time-limit", "600", "--record",
                    str(rec)) == 0
    for d in stores(rec):
        boots = json.loads((d / "boots.json").read_text())
        assert [b["n"] for b in boots] == [1, 2]
        assert (boots[0]["error"], boots[0]["ingested"]) == ("as the record has it",
                                                             "read by hand")
        assert boots[1]["error"] is None and "ingested" not in boots[1]


def test_record_of_another_root_is_kept_and_not_used(pipeline, tmp_path, monkeypatch):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "--record", str(rec)) == 0
    first = [p.name for p in stores(rec)]
    root = fsroot.ensure_root(None, None)
    monkeypatch.setattr(fsroot, "ensure_root", lambda prog, log: dict(
        root, package_versions=["xfsprogs 6.1.0-1"]))     # debootstrap on another day
    shutil.rmtree(os.environ["FORK_WORKDIR"])
    assert run_main("generic/001", "--record", str(rec)) == 0
    assert len(pipeline["boots"]) == 4                  # both kernels ran again
    now = [p.name for p in stores(rec)]
    assert len(now) == 4 and set(first) < set(now)      # the old record is still there


def test_record_that_names_another_kernel_is_refused(pipeline, tmp_path, capsys):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "--record", str(rec)) == 0
    kernel = stores(rec)[0] / "kernel.json"
    meta = json.loads(kernel.read_text())
    kernel.write_text(json.dumps(dict(meta, fstests_commit="0" * 40)))
    capsys.readouterr()
    assert run_main("generic/001", "--record", str(rec)) == 1
    err = capsys.readouterr().err
    assert "was recorded for another fstests commit" in err and "Traceback" not in err


def test_record_must_be_a_directory(pipeline, tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    assert run_main("generic/001", "--record", str(f)) == 1
    assert "--record %s is a file: name a directory" % f in capsys.readouterr().err


def test_images_are_reproducible():
    """The version string's #N is fixed (else it counts the links made in a
    build directory, and two builds of one commit differ there)."""
    env = make.make_env()
    assert env["KBUILD_BUILD_VERSION"] == "1"
    assert env["KBUILD_BUILD_TIMESTAMP"] and env["KBUILD_BUILD_USER"] and env["KBUILD_BUILD_HOST"]


def test_record_is_written_after_every_boot(pipeline, tmp_path, capsys):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["crash"] = "series-7.3.bzImage"
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 1
    assert "QEMU died (test)" in capsys.readouterr().err
    recorded = {json.loads((d / "kernel.json").read_text())["rev"]:
                json.loads((d / "tests.json").read_text()) for d in stores(rec)}
    assert list(recorded) == ["distro/7.3"]
    assert sorted(recorded["distro/7.3"]) == ["generic/001", "generic/002"]


@pytest.mark.parametrize("key", ["image_sha256", "root_key", "root_packages", "profile",
                                 "fstests_commit", "fstests_patches"])
def test_record_identity_is_checked(pipeline, tmp_path, capsys, key):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "--record", str(rec)) == 0
    for d in stores(rec):
        meta = json.loads((d / "kernel.json").read_text())
        (d / "kernel.json").write_text(json.dumps(dict(meta, **{key: "other"})))
    shutil.rmtree(os.environ["FORK_WORKDIR"])
    capsys.readouterr()
    assert run_main("generic/001", "--record", str(rec)) == 1
    err = capsys.readouterr().err
    assert "was recorded for another %s (other" % key.replace("_", " ") in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if not line.startswith("[")]) == 1


def test_record_fresh_forgets_the_recorded_tests_too(pipeline, tmp_path):
    """--fresh with --record: the record loses the selected tests at once, so
    a run that ends before its first boot cannot bring them back."""
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 0
    pipeline["stop_after"] = 0                      # the limit before any test
    assert run_main("generic/001", "--fresh", "--record", str(rec)) == 3
    for d in stores(rec):
        assert list(json.loads((d / "tests.json").read_text())) == ["generic/002"]
    pipeline["stop_after"] = None
    shutil.rmtree(os.environ["FORK_WORKDIR"])
    asked = len(pipeline["boots"])
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 0
    assert pipeline["boots"][asked:] == [("distro-7.3.bzImage", ["generic/001"]),
                                         ("series-7.3.bzImage", ["generic/001"])]


def test_record_and_store_with_other_boots_of_one_number_are_refused(pipeline, tmp_path,
                                                                      capsys):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "--record", str(rec)) == 0
    for d in stores(rec):                         # another machine's boot 1
        boots = json.loads((d / "boots.json").read_text())
        boots[0]["id"] = "0123456789abcdef"
        (d / "boots.json").write_text(json.dumps(boots))
    capsys.readouterr()
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 1
    assert "move one of them away" in capsys.readouterr().err


@pytest.mark.parametrize("name,text", [("tests.json", "[]"), ("boots.json", '[{"x": 1}]'),
                                       ("kernel.json", "[]"), ("tests.json", "{")])
def test_malformed_record_is_one_line(pipeline, tmp_path, capsys, name, text):
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", "--record", str(rec)) == 0
    for d in stores(rec):
        (d / name).write_text(text)
    capsys.readouterr()
    assert run_main("generic/001", "--record", str(rec)) == 1
    err = capsys.readouterr().err
    assert "restore it from git" in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if not line.startswith("[")]) == 1


def test_record_keeps_each_boot_before_the_next(pipeline, tmp_path, capsys):
    """The guest dies in generic/002 (recorded as a failure), the next boot
    of the same kernel crashes: the record still has the first boot."""
    rec = tmp_path / "rec"
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    pipeline["die_at"] = "generic/002"
    pipeline["crash"] = ("distro-7.3.bzImage", 2)
    assert run_main("generic/001", "generic/002", "generic/013", "--record", str(rec)) == 1
    (d,) = stores(rec)
    tests = json.loads((d / "tests.json").read_text())
    assert tests["generic/001"]["status"] == "pass"
    assert tests["generic/002"]["status"] == "fail" and "died" in tests["generic/002"]["message"]
    assert [b["n"] for b in json.loads((d / "boots.json").read_text())] == [1]


def test_each_boot_gets_its_kernels_config(pipeline, capsys):
    """The results disk of every boot holds the .config of the kernel it
    boots (fstests' KCONFIG_PATH), and the boot's record names its hash;
    without it every quota test is 'not run'."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001") == 0
    assert pipeline["configs"] == ["CONFIG_QFMT_V2=y\n# distro/7.3\n",
                                   "CONFIG_QFMT_V2=y\n# series/7.3\n"]
    for side, rev in (("base", "distro/7.3"), ("series", "series/7.3")):
        store = glob.glob(os.path.join(os.environ["FORK_WORKDIR"], "fstests", "kernels",
                                       (rev.replace("/", "") * 8)[:16] + "-*"))
        assert len(store) == 1, (side, store)
        boots = json.loads(open(os.path.join(store[0], "boots.json")).read())
        want = hashlib.sha256(("CONFIG_QFMT_V2=y\n# %s\n" % rev).encode()).hexdigest()
        assert [b["kernel_config"] for b in boots] == [want], side


def test_boot_without_a_kernel_config_is_one_line(pipeline, monkeypatch, capsys):
    monkeypatch.setattr(cmd_fstests, "build", lambda rev, flavour, do_patchcheck, prog:
                        types.SimpleNamespace(image="/k/x.bzImage", config="/nonexistent.config",
                                              image_sha256="ab" * 32, version="7.3"))
    assert run_main("generic/001") == 1
    err = capsys.readouterr().err
    assert "no kernel config beside /k/x.bzImage" in err and "Traceback" not in err
    assert pipeline["boots"] == []


def test_block_size_is_in_the_profile_the_script_and_the_record_name():
    """`--block-size 1024` (xfstests-bld's ext2/1k) makes both filesystems
    with -b 1024 and names a profile of its own; without it the profile
    is the one the committed records were made with, so they still resume."""
    default, onek = fstests.make_profile(), fstests.make_profile(1024)
    assert fstests.profile_key(default) != fstests.profile_key(onek)
    assert "export MKFS_OPTIONS='-b 1024'\n" in fstests.profile_text(onek)
    script = fstests.guest_script(["generic/001"], 60, onek)
    assert "mkfs.ext2 -F -q -b 1024 $d" in script
    assert "for d in /dev/vdb /dev/vdc;" in script
    assert fstests.harness_key(onek) != fstests.harness_key(default)
    # the default is the profile before the option existed
    assert fstests.guest_script(["generic/001"], 60, default) == \
        fstests.guest_script(["generic/001"], 60)
    keys = {json.load(open(p))["profile"] for p in ROOT.glob("**/fstests/*/*/kernel.json")}
    assert keys == {fstests.profile_key(default), fstests.profile_key(onek)}
    with pytest.raises(ForkError, match="ext2 takes 1024, 2048, 4096"):
        fstests.make_profile(512)


@pytest.mark.parametrize("argv,line", [
    ([], "- mkfs: `mkfs.ext2` without options: mke2fs chooses 4096-byte blocks"),
    (["--block-size", "1024"], "- mkfs: `mkfs.ext2 -b 1024` on the test and scratch disks")])
def test_markdown_says_how_the_filesystems_were_made(pipeline, capsys, argv, line):
    # a table of another block size must say so: its reader sees no record name
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    assert run_main("generic/001", *argv) == 0
    out = capsys.readouterr().out
    md = Path(json.loads(Path(re.search(r"results: (\S+)", out).group(1), "fstests.json")
                         .read_text())["meta"]["run_dir"], "fstests.md").read_text()
    assert "\n" + line in md
    assert md.index("- selection:") < md.index("- mkfs:") < md.index("- e2fsck")


def fstests_args(argv):
    """The verb's arguments, parsed by its own options."""
    import argparse
    from forkkit.verbs import fstests as verb
    p = argparse.ArgumentParser()
    verb.add_arguments(p)
    return p.parse_args(argv)


def test_block_size_is_in_the_repeat_command():
    args = fstests_args(["--block-size", "1024", "--group", "auto"])
    cmd = cmd_fstests.repeat_command(args, ["distro/7.3", "series/7.3"], [], "auto")
    assert "--block-size 1024" in cmd
    assert "--block-size" not in cmd_fstests.repeat_command(
        fstests_args([]), ["distro/7.3", "series/7.3"], [], "quick")
