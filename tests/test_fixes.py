"""fixes/: the upstream fixes are a series of their own (fixes/ on the
primary series' snapshot, fixes/backports/<ver>/), each patch a mail for
stable with a guest test that fails on the stock kernel and passes with
the fix."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.guest import guesttests  # noqa: E402
from forkkit.repo import series as series_mod  # noqa: E402

FIXES = REPO / "fixes"
README = (FIXES / "README.md").read_text()
INTEGRATION = os.environ.get("FORK_INTEGRATION") == "1"


def fix_dirs():
    out = ["fixes"]
    bdir = FIXES / "backports"
    if bdir.is_dir():
        out += ["fixes/backports/" + v for v in sorted(os.listdir(bdir))]
    return out


def readme_rows():
    """{"0001": guest test} from the README's table."""
    return {num: test for num, (test, _) in readme_cells().items()}


def readme_cells():
    """{"0001": (guest test, config flavour)} from the README's table: the
    flavour is the one its guest test cell names (`--config X`), else
    base."""
    rows = {}
    for line in README.splitlines():
        m = re.match(r"^\| `(\d{4})` \|.*\| `([a-z0-9-]+)`([^|]*)\| [^|]+\|$", line)
        if m:
            flavour = re.search(r"`--config ([a-z0-9-]+)`", m.group(3))
            rows[m.group(1)] = (m.group(2), flavour.group(1) if flavour else "base")
    return rows


def readme_status():
    """{"0001": its status cell} from the README's table."""
    return dict(re.findall(r"^\| `(\d{4})` \|.*\| ([^|]+) \|$", README, re.M))


def awaiting_numbers(patch):
    """Whether the README says the primary fix with `patch`'s subject has
    a log still waiting for its numbers (`@TBD@`), which export refuses."""
    subject = series_mod.patch_subject(patch)
    status = readme_status()
    return any(series_mod.patch_subject(p) == subject and
               "`@TBD@`" in status.get(os.path.basename(p)[:4], "")
               for p in series_mod.Series("fixes").patches)


def test_fixes_are_series_on_the_primary_snapshot():
    primary = series_mod.Series()
    for rel in fix_dirs():
        s = series_mod.Series(rel)
        assert s.patches, "%s/series lists no patch" % rel
        assert s.head_branch == "fixes/%s" % s.kver
        assert all(b.startswith("fixes-topic/%s/" % s.kver) for _, b in s.topics())
    fixes = series_mod.Series("fixes")
    for key in ("package", "version", "sha256"):
        assert fixes.base[key] == primary.base[key], key
    assert {s.rel for s in series_mod.stored_series()} >= set(fix_dirs())


PATCHES = [(rel, p) for rel in fix_dirs() for p in series_mod.Series(rel).patches]


@pytest.mark.parametrize("rel,patch", PATCHES,
                         ids=["%s:%s" % (r, os.path.basename(p)[:4]) for r, p in PATCHES])
def test_fix_is_a_mail_for_stable(rel, patch):
    text = Path(patch).read_text()
    head, _, body = text.partition("\n\n")
    m = re.search(r"^Subject: \[PATCH\] (ext2|minix|ufs): ", head, re.M)
    assert m, head
    subsys = m.group(1)
    fixes = re.findall(r'^Fixes: ([0-9a-f]{12,40}) \("(.+)"\)$', body, re.M)
    stable = re.findall(r"^Cc: stable@vger\.kernel\.org # \d+\.\d+\+$", body, re.M)
    if not fixes:
        # a fix not worth a backport says so, and asks no stable tree
        assert not stable and "No stable backport is asked" in body, body
    else:
        assert len(fixes) == 1, "one Fixes: line, 12+ hex digits and the quoted subject"
        sha, subject = fixes[0]
        # the log cites the same commit as checkpatch wants it cited
        assert re.search(r'[Cc]ommit %s \("%s"\)' % (sha[:12],
                                                      re.escape(" ".join(subject.split()))),
                         " ".join(body.split()))
        assert len(stable) == 1
    assert re.search(r"^Signed-off-by: .+ <.+>$", body, re.M)
    touched = re.findall(r"^diff --git a/(\S+)", body, re.M)
    assert touched and all(f.startswith("fs/%s/" % subsys) for f in touched), touched
    assert "@TABLE@" not in body
    # a number still to be measured is a placeholder in the log, which
    # export refuses, and only where the README says the fix waits for it
    log = body.partition("\n---\n")[0]
    assert "@TBD@" not in body.replace(log, "")
    assert "@TBD@" not in log or awaiting_numbers(patch), patch


def test_readme_names_a_guest_test_for_every_fix():
    rows = readme_rows()
    primary = series_mod.Series("fixes")
    assert sorted(rows) == sorted(os.path.basename(p)[:4] for p in primary.patches)
    for num, test in rows.items():
        assert test in guesttests.TESTS, (num, test)
    # the non-ext2 tests make and check their own kind of disk
    assert guesttests.spec("minix-dirsync").fs == "minix"
    assert guesttests.spec("ufs-dirsync").fs == "ufs"
    assert guesttests.spec("dio-dsync-size").cache == "writethrough"


def test_the_freed_indirect_fix_is_in_both_series_with_its_test_and_flavour():
    from forkkit.build import kconfig
    for rel, num in (("fixes", "0006"), ("fixes/backports/6.12", "0005")):
        s = series_mod.Series(rel)
        topics = {os.path.basename(p)[:4]: b for p, b in s.topics()}
        assert topics[num] == "fixes-topic/%s/ext2-dio-freed-indirect" % s.kver, rel
        patch = [p for p in s.patches if os.path.basename(p).startswith(num)][0]
        body = Path(patch).read_text()
        assert re.search(r"^\+\s+wait_on_buffer\(bh\);$", body, re.M), rel
        # as ext4's __ext4_forget(): clear, wait, then __bforget(); in
        # ext2_free_branches() and in the error path of ext2_alloc_branch()
        assert re.search(r"^\+\s+clear_buffer_dirty\(bh\);\n\+\s+wait_on_buffer\(bh\);\n"
                         r"\+\s+__bforget\(bh\);$", body, re.M), rel
        assert sorted(re.findall(r"^-\s+(bforget\(.*\);)$", body, re.M)) == \
            ["bforget(bh);", "bforget(branch[i].bh);"], rel
        assert not re.search(r"^\+\s+bforget\(", body, re.M), rel
        text = " ".join(body.split())
        assert 'commit 328a782cb138 ("ext4: wait for ongoing I/O to complete before ' \
            'freeing blocks")' in text
        assert series_mod.patch_subject(patch) == \
            "ext2: wait for ongoing I/O to complete before freeing indirect blocks"
        # the log leads with the guest test's numbers (measured on 7.3,
        # records/checks/7.3/a53f911f30b5/; a placeholder until the 6.12
        # backport's run), and quotes no reproducer that is not published
        log = body.partition("\n---\n")[0]
        # (records/checks/<ver>/<fix>/throttle-dio-freed-indirect.json)
        assert "@TBD@" not in log and "in 40 of 40 iterations" in log and \
            "in 0 of 40" in " ".join(log.split()), rel
        assert "48,000" not in log and "16,000" not in log, rel
        assert "MAX_LFS_FILESIZE" in text and "beyond the device" not in text
    # its guest test needs blk-throttle: the README names the flavour
    assert readme_cells()["0006"] == ("dio-freed-indirect", "throttle")
    assert "throttle" in kconfig.FLAVOURS
    # the work in progress it came from holds no code the test now holds
    wip = FIXES / "wip" / "dio-freed-indirect"
    assert not wip.exists() or not [f for f in os.listdir(wip) if not f.endswith(".md")]
    assert "wip/dio-freed-indirect" not in README


def test_backports_carry_fixes_of_the_primary():
    subjects = {series_mod.patch_subject(p) for p in series_mod.Series("fixes").patches}
    for rel in fix_dirs()[1:]:
        for p in series_mod.Series(rel).patches:
            assert series_mod.patch_subject(p) in subjects, (rel, p)


# -- in QEMU: each fix's guest test fails on its parent, passes on it ----------

def fork(*args):
    return subprocess.run(["/usr/bin/python3", str(REPO / "tools" / "fork")] + list(args),
                          cwd=REPO, capture_output=True, text=True)


def fix_tests():
    """[(patch number, guest test, config flavour)] of the primary fixes
    series."""
    rows = readme_cells()
    out = []
    for p in series_mod.Series("fixes").patches:
        num = os.path.basename(p)[:4]
        out.append((num,) + rows[num])
    return out


@pytest.mark.skipif(not INTEGRATION, reason="builds and boots 7.3: FORK_INTEGRATION=1")
@pytest.mark.parametrize("num,test,flavour", fix_tests(), ids=[n for n, _, _ in fix_tests()])
def test_fix_test_fails_on_stock_and_passes_with_the_fix(num, test, flavour, tmp_path,
                                                         kernel_trees):
    """The guest test of fix NUM fails on the commit before it (the stock
    snapshot plus the other fixes, which touch other code) and passes on
    the fix's own commit, both built as the flavour the README names.  A
    flavour of its own (throttle) is a cold build of about 10 minutes more:
    only with FORK_FIX_FLAVOURS=1 (its measured run is in records/checks,
    CHECKS.md)."""
    if flavour != "base" and os.environ.get("FORK_FIX_FLAVOURS") != "1":
        pytest.skip("fix %s needs the %s flavour, a cold build of its own: "
                    "FORK_FIX_FLAVOURS=1" % (num, flavour))
    proc = fork("branches", "--series", "fixes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s = series_mod.Series("fixes")
    topic = dict((os.path.basename(p)[:4], b) for p, b in s.topics())[num]
    out = tmp_path / "check.json"
    proc = fork("check", "--series", "fixes", topic, "--config", flavour, "--test", test,
                "--json", str(out))
    import json
    rows = json.loads(out.read_text()) if out.exists() else []
    assert [r["cells"]["test"] for r in rows] == ["pass"], proc.stdout + proc.stderr
    proc = fork("check", "--series", "fixes", topic + "~", "--config", flavour, "--test", test,
                "--json", str(out))
    rows = json.loads(out.read_text())
    assert proc.returncode == 1
    assert rows[0]["cells"]["build"] == "pass" and rows[0]["cells"]["boot"] == "pass"
    assert rows[0]["cells"]["test"] == "FAIL", rows[0]
