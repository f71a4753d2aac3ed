"""Integration: real fstests on ext2 in QEMU (TCG), base vs series, 7.3.

The CI selection runs with FORK_INTEGRATION=1 (CI and `tools/test`) unless
FORK_FSTESTS=0; the broken-patch test needs FORK_FSTESTS=1 as well
(`FORK_FSTESTS=1 tools/test -k fstests`).  Needs root the first time on a
machine (the guest root is made with debootstrap and cached outside the
clone, in ~/.cache/fork-kit/fstests-roots/, see fsroot.py), the Debian
mirror of the machine's apt sources, and fstests from
ci/fstests/source.conf (the local bundle here).

* the CI selection (CI_TESTS: about 9 minutes for base and series
  together under TCG) on distro/7.3 vs series/7.3: no new
  failure, and the tests really ran (passes on both kernels, not all
  notrun), e2fsck clean, no kernel report on the series only;
* tests/data/fault-bfree.patch (every 16th block allocation miscounts the
  group's free blocks) on a scratch branch over distro/7.3 makes `fstests`
  report a new failure and exit 1.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.verify.scale import FSTESTS_CI

TOP = Path(__file__).resolve().parent.parent
FORK = [sys.executable if sys.executable.startswith("/usr/bin/") else "/usr/bin/python3",
        str(TOP / "tools" / "fork")]
DATA = TOP / "tests" / "data"

# block and inode allocation (verify/scale.py says which tests and why; `scale`
# times the same selection with 1 and 2 guest slots).  Measured on 7.3 under
# TCG: ~130 s of tests and ~100 s of boot and setup per kernel.
CI_TESTS = FSTESTS_CI
# must pass, not be 'not run': the quota tests run only if the guest finds
# its kernel's config (KCONFIG_PATH; without it all are not run)
MUST_RUN = ["generic/219"]
# the base kernel's results of these come from the CI run above (kept per
# kernel image): only the faulty kernel boots
FAULT_TESTS = ["generic/013", "generic/014"]

# The CI selection is in CI: the guest root (debootstrap and the fstests
# build, ~16 minutes) is made once per machine and shared by every clone,
# so CI spends the ~13 minutes of runs on it.
pytestmark = [pytest.mark.skipif(os.environ.get("FORK_INTEGRATION") != "1" or
                                 os.environ.get("FORK_FSTESTS") == "0",
                                 reason="fstests integration tests need FORK_INTEGRATION=1 "
                                        "(and not FORK_FSTESTS=0)"),
              # distro/7.3 and series/7.3
              pytest.mark.usefixtures("kernel_trees")]


def fstests(*args, timeout=3600):
    proc = subprocess.run(FORK + ["fstests"] + list(args), cwd=str(TOP), capture_output=True,
                          text=True, timeout=timeout)
    sys.stderr.write(proc.stderr[-8000:])
    sys.stdout.write(proc.stdout)
    return proc


def report_of(stdout):
    m = re.search(r"^results: (\S+)", stdout, re.M)
    assert m, stdout
    return json.loads((Path(m.group(1)) / "fstests.json").read_text())


def test_ci_selection_base_vs_series():
    proc = fstests("distro/7.3", "series/7.3", "--fresh", "--time-limit", "1200", *CI_TESTS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = report_of(proc.stdout)
    assert [r["test"] for r in rep["tests"]] == CI_TESTS
    assert not [r for r in rep["tests"] if r["verdict"] in ("new failure", "pending")]
    for side in ("base", "series"):
        tot = rep["totals"][side]
        assert tot["pass"] + tot["fail"] + tot["notrun"] == len(CI_TESTS)
        assert tot["pass"] >= 3, (side, tot)          # really ran, not all notrun
        for t in MUST_RUN:
            row = [r for r in rep["tests"] if r["test"] == t][0]
            assert row[side] == "pass", (side, t, row)
    assert rep["meta"]["e2fsck"].startswith("clean"), rep["meta"]["e2fsck"]
    # a kernel report (ext2_error, WARNING, lockdep, ...) that the series'
    # consoles have and the base's do not
    assert not [k for k, n in rep["meta"]["report_kinds"].items()
                if n["series"] and not n["base"]], rep["meta"]["reports_summary"]
    assert "not read" not in rep["meta"]["reports_summary"]   # every console was scanned
    assert re.match(r"^[0-9a-f]{40}$", rep["meta"]["fstests_commit"])
    for b in rep["boots"]:
        assert os.path.exists(b["xunit"])


@pytest.mark.skipif(os.environ.get("FORK_FSTESTS") != "1",
                    reason="the broken-patch fstests run needs FORK_FSTESTS=1 (not in CI, "
                           "for time)")
def test_fault_bfree_is_a_new_failure():
    from forkkit.core.paths import ktree
    k = ktree()
    branch = "refs/heads/scratch/fstests-fault"

    def git(*args, env=None):
        proc = subprocess.run(["git"] + list(args), cwd=k, capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})))
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout.strip()

    base = git("rev-parse", "--verify", "refs/heads/distro/7.3")
    ident = {"GIT_AUTHOR_NAME": "Fork Kit Tests", "GIT_AUTHOR_EMAIL": "fork-kit@localhost",
             "GIT_AUTHOR_DATE": "1735689600 +0000", "GIT_COMMITTER_NAME": "Fork Kit Tests",
             "GIT_COMMITTER_EMAIL": "fork-kit@localhost", "GIT_COMMITTER_DATE": "1735689600 +0000"}
    index = {"GIT_INDEX_FILE": os.path.join(k, ".git", "fork-fstests-test-%d" % os.getpid())}
    try:
        git("read-tree", base, env=index)
        git("apply", "--cached", str(DATA / "fault-bfree.patch"), env=index)
        tree = git("write-tree", env=index)
        commit = git("commit-tree", tree, "-p", base, "-m",
                     "ext2: inject a free-blocks miscount (fstests test fault)", env=ident)
        git("update-ref", branch, commit)
        proc = fstests("distro/7.3", "scratch/fstests-fault", "--time-limit", "1200",
                       *FAULT_TESTS)
        assert proc.returncode == 1, proc.stderr[-3000:]
        rep = report_of(proc.stdout)
        new = [r for r in rep["tests"] if r["verdict"] == "new failure"]
        assert new, rep["tests"]
        assert "new failures on the series" in proc.stderr
        assert rep["totals"]["base"]["fail"] == 0
    finally:
        subprocess.run(["git", "update-ref", "-d", branch], cwd=k)
        if os.path.exists(index["GIT_INDEX_FILE"]):
            os.unlink(index["GIT_INDEX_FILE"])
