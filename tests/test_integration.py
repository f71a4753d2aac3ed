"""Integration: the real pipeline on Debian's linux-source packages.

Imports the snapshot, lays out the branches, checks every commit of the
series in QEMU (checkpatch, build, boot, guest smoke test, e2fsck), then
checks again and expects every row to come from the cache.  Also boots the
built kernel into a panic and into a hang to see the boot verb fail cleanly.
The other tests take the imported trees and their branches from
conftest's kernel_trees (and checked_primary), so each runs alone as well.

Runs only with FORK_INTEGRATION=1 (tools/test sets it): it needs the
packages tools/setup installs and takes minutes (a cold build ~10 min on
2 cores; with a warm ccache a few).
"""

import os
import re
import subprocess
import sys

import pytest

from conftest import kver, series_dirs

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORK = [sys.executable if sys.executable.startswith("/usr/bin/") else "/usr/bin/python3",
        os.path.join(TOP, "tools", "fork")]

pytestmark = pytest.mark.skipif(os.environ.get("FORK_INTEGRATION") != "1",
                                reason="integration tests need FORK_INTEGRATION=1 "
                                       "(tools/test sets it)")


def fork(*args, timeout=3600):
    proc = subprocess.run(FORK + list(args), cwd=TOP, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)
    sys.stderr.write(proc.stderr)
    sys.stdout.write(proc.stdout)
    return proc


def table_rows(stdout):
    return [l for l in stdout.splitlines() if re.match(r"^[0-9a-f]{12}  ", l)]


@pytest.mark.parametrize("series", series_dirs())
def test_import_branches_check_twice(series):
    ver = kver(series)
    p = fork("import", ver)
    assert p.returncode == 0, p.stderr
    commit = p.stdout.strip().splitlines()[-1]
    assert re.match(r"^[0-9a-f]{40}$", commit)
    # Re-running is a no-op with the same commit id.
    p2 = fork("import", ver)
    assert p2.returncode == 0 and p2.stdout.strip().splitlines()[-1] == commit
    assert "nothing to do" in p2.stderr

    p = fork("branches", "--series", series)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(TOP, series, "series")) as fh:
        npatches = len([l for l in fh if l.split("#")[0].strip()])

    p = fork("check", "--series", series)
    rows = table_rows(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(rows) == npatches + 1          # the base and every patch
    for row in rows:
        cells = row.split()
        assert "FAIL" not in row, row
        assert cells.count("pass") >= 4, row

    # A second run re-checks nothing.
    p = fork("check", "--series", series)
    assert p.returncode == 0
    rows = table_rows(p.stdout)
    assert len(rows) == npatches + 1
    assert all(r.endswith("(cached)") for r in rows), p.stdout
    assert "booting" not in p.stderr


def test_compare_primary_with_each_backport(kernel_trees):
    backports = series_dirs()[1:]
    if not backports:
        pytest.skip("no backport series in the repository")
    p = fork("compare")
    assert p.returncode == 0, p.stderr
    for bp in backports:
        assert "# patches/ vs %s/" % bp in p.stdout
    # Each report lists twice (summary and full range-diff), each listing
    # in a code fence.  Every primary patch appears once on the left of
    # each listing, paired ("=" or "!") or alone ("<", when the backport
    # differs too much for range-diff to pair it), in the backport's
    # order; range-diff pads the numbers when a series has 10 or more.
    # Subjects are not matched: not every patch is "ext2: ".
    with open(os.path.join(TOP, "patches", "series")) as fh:
        n = len([l for l in fh if l.split("#")[0].strip()])
    listings = [b for b in re.findall(r"^```\n(.*?)^```$", p.stdout, re.M | re.S)
                if re.search(r"^ *\d+:  [0-9a-f]+ ", b, re.M)]
    assert len(listings) == 2 * len(backports), p.stdout
    for listing in listings:
        left = re.findall(r"^ *(\d+):  [0-9a-f]+ [=!<] ", listing, re.M)
        assert sorted(map(int, left)) == list(range(1, n + 1)), listing


def test_boot_reports_guest_status_panic_and_hang(kernel_trees):
    ok = fork("boot", "--", "sh", "-c", "grep -q ext2 /proc/filesystems && exit 7")
    assert ok.returncode == 7, ok.stderr

    panic = fork("boot", "--timeout", "300", "--", "sh", "-c", "echo c > /proc/sysrq-trigger")
    assert panic.returncode != 0
    assert "Kernel panic" in panic.stderr or "sysrq" in panic.stderr.lower(), panic.stderr
    assert "console log:" in panic.stderr

    hang = fork("boot", "--timeout", "25", "--", "sleep", "600")
    assert hang.returncode != 0
    assert "timed out after 25s" in hang.stderr
    assert "console log:" in hang.stderr


def test_verdicts_after_the_mix(tmp_path, kernel_trees):
    """Runs after the others (conftest orders it): by then bench and
    bisect have built kernels without the W=1/sparse patchcheck in the same
    work dir, and check has cached its rows.  A forced check of the primary
    series must give every commit the same verdict as the cached one,
    booting the very image (same sha256) the cached row names."""
    cached, forced = tmp_path / "cached.json", tmp_path / "forced.json"
    p = fork("check", "--json", str(cached))
    assert p.returncode == 0, p.stdout + p.stderr
    p = fork("check", "--force", "--json", str(forced))
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    a, b = json.loads(cached.read_text()), json.loads(forced.read_text())
    assert [r["commit"] for r in a] == [r["commit"] for r in b]
    for x, y in zip(a, b):
        assert x["cells"] == y["cells"], (x["commit"], x["cells"], y["cells"])
        assert x.get("image_sha256") and x["image_sha256"] == y["image_sha256"], x["commit"]
        assert not y.get("cached")


def test_export_dry_run_of_the_primary_series(tmp_path, monkeypatch, checked_primary):
    """The mails of the primary series, as export makes them on a fresh
    machine whose sender is given by GIT_COMMITTER_* alone: checkpatch, the
    git am round trip, git send-email into a capturing sendmail and the b4
    am round trip all pass.  Uses the kernel tree, branches and check cache
    of checked_primary (every series imported, so the range-diff finds the
    previous version's base)."""
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Fork Kit Tests")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "fork-kit@example.org")
    out = tmp_path / "mails"
    p = fork("export", "--dry-run", "--outdir", str(out))
    assert p.returncode == 0, p.stderr
    assert "git am round trip on a fresh checkout" in p.stderr
    assert "b4 am round trip on the captured mails" in p.stderr
    with open(os.path.join(TOP, "patches", "series")) as fh:
        n = len([l for l in fh if l.split("#")[0].strip()])
    assert "dry run: %d mails in %s" % (n + 1, out) in p.stderr
    assert len(os.listdir(out)) == n + 1
