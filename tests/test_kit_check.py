"""fork check: the table and the result cache, with build/boot faked."""

import os
import re

import pytest

from forkkit import cli
from forkkit.build import kbuild
from forkkit.guest import guesttests, qemu
from forkkit.guest import qemu as cmd_boot
from forkkit.verify import check as cmd_check, kernel
from forkkit.core.errors import ForkError


@pytest.fixture
def fake(kit, monkeypatch, tmp_path):
    """A laid-out series; build, checkpatch and the guest boot faked; real
    4 MiB images and real e2fsck."""
    kit.laid_out()
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")       # cell by cell, whatever the machine
    calls = {"build": [], "boot": [], "checkpatch": []}
    fail = {"boot": set(), "build": set(), "ffree": set(), "console": {}}

    def build(rev, flavour="base", jobs=0, do_patchcheck=True, prog=None):
        commit = kit.rev(rev)
        calls["build"].append(commit)
        if commit in fail["build"]:
            raise ForkError("build of %s failed: boom" % commit[:12])
        image = tmp_path / ("bzImage-" + commit)
        image.write_text("kernel " + commit)
        return kbuild.BuildResult(rev=rev, commit=commit, tree=kit.rev(commit + "^{tree}"),
                                  flavour=flavour, image=str(image), log="build.log",
                                  image_sha256="5" * 64, config_key="c" * 64,
                                  ext2_symbols=["ext2_fill_super"], sparse="ran",
                                  ext2_tail_calls=None)

    def checkpatch(commit, log):
        calls["checkpatch"].append(commit)
        if kit.git("rev-list", "--parents", "-n", "1", commit).count(" ") == 0:
            return "n/a", "base snapshot"
        return "pass", "total: 0 errors, 0 warnings, 10 lines checked"

    def run_guest(kernel, script, disks=(), timeout=600, log=None, prog=None, label="boot", **kw):
        commit = os.path.basename(kernel)[len("bzImage-"):]     # the image build() made
        calls["boot"].append((commit, script, list(disks), timeout, kernel))
        blocks, inodes = guesttests.group_sums(disks[0])
        if commit in fail["ffree"]:
            inodes += 1
        lines = ["[    0.500000] kcsan: selftest: 3/3 tests passed",
                 "FORK-GUEST-START 9.9.1 cpus=2",
                 "RESULT prog=fsreport bfree=%d ffree=%d" % (blocks, inodes)]
        if commit in fail["boot"]:
            lines.append("[ 1.0] BUG: unable to handle page fault")
        lines += fail["console"].get(commit, [])
        lines.append("FORK-EXIT-STATUS: 0")
        with open(log, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        rc, problems = qemu.scan(log)
        return qemu.BootResult(rc=rc, log=log, seconds=0.1, problems=problems, error=None,
                               output=qemu.guest_output(log))

    monkeypatch.setattr(kernel, "build", build)
    monkeypatch.setattr(kernel, "run_checkpatch", checkpatch)
    monkeypatch.setattr(kernel, "run_guest", run_guest)
    # smoke as a 4 MiB disk and one statfs (the faked boot prints its RESULT)
    (kit.repo / "ci" / "guest" / "scripts" / "statfs-only.sh").write_text("fsreport /mnt\n")
    monkeypatch.setitem(guesttests.TESTS, "smoke", ("4M", 1024, "statfs-only.sh"))
    kit.calls, kit.fail = calls, fail
    kit.commits = [kit.rev("distro/9.9")] + \
        kit.git("rev-list", "--reverse", "distro/9.9..series/9.9").split()
    return kit


def run(fake, capsys, *args):
    rc = cli.main(["check"] + list(args))
    out = capsys.readouterr().out
    return rc, out


def rows_of(out):
    return [line for line in out.splitlines() if re.match(r"^[0-9a-f]{12}  ", line)]


def test_all_pass_then_cached_then_forced(fake, capsys):
    rc, out = run(fake, capsys)
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["commit", "subject", "checkpatch", "build", "boot", "test",
                                "e2fsck", "counts", "time"]
    rows = rows_of(out)
    assert [r[:12] for r in rows] == [c[:12] for c in fake.commits]
    assert rows[0].split()[1:3] == ["Import", "Debian"]
    assert "n/a" in rows[0].split() and "ext2: make balloc faster" in rows[1]
    for r in rows:
        assert set(r.split()[-7:-1]) <= {"pass", "n/a"} and r.split()[-6:-1] == ["pass"] * 5, r
        assert "(cached)" not in r
    assert fake.calls["build"] == fake.commits
    # each check boots on a disk image of its own (no two runs share one,
    # nor two cells of one process)
    disks = [b[2][0] for b in fake.calls["boot"]]
    assert len(set(disks)) == 3
    assert all(re.fullmatch(re.escape(str(fake.work / "images" / ("check-%d-" % os.getpid())))
                            + r"[0-9a-f]{8}\.img", d) for d in disks), disks
    assert fake.calls["boot"][0][1] == "fsreport /mnt\n"
    assert fake.calls["boot"][0][3] == 900

    rc, out = run(fake, capsys)
    assert rc == 0
    assert fake.calls["build"] == fake.commits            # nothing rebuilt
    assert all(r.endswith("(cached)") for r in rows_of(out))

    rc, out = run(fake, capsys, "--force")
    assert rc == 0
    assert fake.calls["build"] == fake.commits * 2
    assert not any("(cached)" in r for r in rows_of(out))


def test_cache_is_keyed_by_tree(fake, capsys):
    assert run(fake, capsys)[0] == 0
    # same tree, different commit (reworded): still a cached pass
    head = fake.commits[-1]
    reworded = fake.git("commit-tree", head + "^{tree}", "-p", head + "^", "-m", "reworded")
    rc, out = run(fake, capsys, reworded)
    assert rc == 0
    rows = rows_of(out)
    assert len(rows) == 1 and rows[0].startswith(reworded[:12])
    assert "reworded" in rows[0] and rows[0].endswith("(cached)")
    assert len(fake.calls["build"]) == 3
    # another flavour or a changed guest test definition is not cached
    assert run(fake, capsys, head, "--config", "debug")[0] == 0
    assert len(fake.calls["build"]) == 4
    (fake.repo / "ci" / "kconfig" / "base.config").write_text("CONFIG_EXT2_FS=y\n")
    assert run(fake, capsys, head)[0] == 0
    assert len(fake.calls["build"]) == 5


def test_failures_are_reported_and_kept(fake, capsys):
    c1, c2 = fake.commits[1:]
    fake.fail["boot"].add(c1)
    fake.fail["ffree"].add(c2)
    rc, out = run(fake, capsys)
    assert rc == 1
    rows = rows_of(out)
    assert rows[1].split()[-7:-1] == ["pass", "pass", "FAIL", "FAIL", "pass", "pass"], rows[1]
    assert rows[2].split()[-7:-1] == ["pass", "pass", "pass", "pass", "pass", "FAIL"], rows[2]
    assert "%s boot: " % c1[:12] in out and "%s test: kernel report in the console log (" \
        % c1[:12] in out and "\n[ 1.0] BUG: unable to handle page fault" in out
    m = re.search(r"%s counts: free blocks/inodes differ: superblock (\d+)/(\d+), .*"
                  r"guest statfs (\d+)/(\d+)" % c2[:12], out)
    assert m and m.group(1) == m.group(3) and int(m.group(4)) == int(m.group(2)) + 1
    # the failures are on record as the pass is: a retry does not run them
    # again (test_a_failure_stays_on_the_record: nor does --force erase them)
    fake.fail["boot"].clear()
    fake.fail["ffree"].clear()
    rc, out = run(fake, capsys)
    assert rc == 1
    assert fake.calls["build"] == fake.commits
    assert all(r.endswith("(cached)") for r in rows_of(out))


def test_build_failure_row(fake, capsys):
    c1 = fake.commits[1]
    fake.fail["build"].add(c1)
    rc, out = run(fake, capsys, "%s..%s" % (fake.commits[0], fake.commits[2]))
    assert rc == 1
    rows = rows_of(out)
    assert [r[:12] for r in rows] == [c[:12] for c in fake.commits[1:]]
    # checkpatch runs first (it needs no build), then the build fails
    assert rows[0].split()[-7:-1] == ["pass", "FAIL", "-", "-", "-", "-"], rows[0]
    assert "%s build: build of %s failed: boom" % (c1[:12], c1[:12]) in out
    assert c1 in fake.calls["checkpatch"]


def test_json_output(fake, capsys, tmp_path):
    import json
    path = tmp_path / "out.json"
    rc, _ = run(fake, capsys, fake.commits[1], "--json", str(path))
    assert rc == 0
    rows = json.loads(path.read_text())
    assert [r["commit"] for r in rows] == [fake.commits[1]]
    assert rows[0]["passed"] is True
    assert rows[0]["accel"] == "tcg"        # the row names its accelerator (guest/accel.py)
    assert rows[0]["results"] == [{"prog": "fsreport", "bfree": rows[0]["results"][0]["bfree"],
                                   "ffree": rows[0]["results"][0]["ffree"]}]


def test_bad_arguments(fake, capsys):
    rc = cli.main(["check", "no-such-rev"])
    err = capsys.readouterr().err
    assert rc == 1 and "unknown revision 'no-such-rev'" in err
    rc = cli.main(["check", "no-such-rev..series/9.9"])
    err = capsys.readouterr().err
    assert rc == 1 and "unknown revision 'no-such-rev'" in err
    rc = cli.main(["check", "--test", "nope"])
    err = capsys.readouterr().err
    assert rc == 1 and "unknown guest test 'nope'" in err
    assert fake.calls["build"] == []


def test_table_format(monkeypatch, tmp_path):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path))
    rows = [{"commit": "a" * 40, "subject": "x" * 60, "seconds": 12.4, "cached": True,
             "cells": {"checkpatch": "pass", "build": "pass", "boot": "FAIL", "test": "-",
                       "e2fsck": "-", "counts": "-"}}]
    lines = cmd_check.table(rows).splitlines()
    assert len(lines) == 3 and set(lines[1]) == {"-"}
    assert lines[2].startswith("a" * 12 + "  " + "x" * 44 + "  pass")
    assert lines[2].endswith("   12s (cached)")
    assert os.path.basename(kernel.cache_path("t" * 40, "base", "smoke")).startswith(
        "t" * 40 + "-base-smoke-")


def test_missing_qemu_is_reported_before_any_build(fake, capsys, monkeypatch):
    real_which = cmd_boot.shutil.which
    no_qemu = lambda p, *a, **k: None if p == "qemu-system-x86_64" else real_which(p)  # noqa: E731
    monkeypatch.setattr(cmd_boot.shutil, "which", no_qemu)
    with pytest.raises(ForkError) as exc:
        cmd_check.run_check(series=cmd_check.Series(), out=lambda *_: None)
    assert "apt-get install qemu-system-x86" in str(exc.value)
    assert fake.calls["build"] == []
    # the QEMU version is part of every verdict: with every commit cached,
    # no QEMU matches none of them, and the check says what is missing
    monkeypatch.setattr(cmd_boot.shutil, "which", real_which)
    rc, _ = run(fake, capsys)
    assert rc == 0 and len(fake.calls["build"]) == len(fake.commits)
    monkeypatch.setattr(cmd_boot.shutil, "which", no_qemu)
    rc = cli.main(["check"])
    err = capsys.readouterr().err
    assert rc == 1 and "apt-get install qemu-system-x86" in err
    assert len(fake.calls["build"]) == len(fake.commits)


def test_boot_gets_the_stored_image_and_the_cache_names_it(fake, capsys, monkeypatch):
    # The row must name the image that was booted; a later build of another
    # commit (or a second check running beside this one) cannot change it.
    images = {}
    real_build = kernel.build

    def build(rev, flavour="base", jobs=0, do_patchcheck=True, prog=None):
        res = real_build(rev, flavour, jobs, do_patchcheck, prog)
        res.image_sha256 = "%064x" % len(images)
        images[res.commit] = (res.image, res.image_sha256)
        return res
    monkeypatch.setattr(kernel, "build", build)
    head = fake.commits[-1]
    rc, _ = run(fake, capsys, head)
    assert rc == 0
    booted = fake.calls["boot"][-1]
    assert booted[4] == images[head][0]
    import json
    tree = fake.rev(head + "^{tree}")
    with open(kernel.cache_path(tree, "base", "smoke")) as fh:
        entry = json.load(fh)
    assert entry["image_sha256"] == images[head][1] and entry["image"] == images[head][0]
    assert entry["tree"] == tree and entry["kit"] == kernel.kit_key()
    assert set(entry["tools"]) == {"qemu", "e2fsprogs"}
    assert entry["cells"]["counts"] == "pass"
    assert entry["details"]["counts"].startswith("free blocks/inodes equal: superblock ")


def test_cache_entry_without_image_hash_is_not_trusted(fake, capsys):
    # an entry that names no booted image (or misses a cell) is re-checked
    import json
    head = fake.commits[-1]
    assert run(fake, capsys, head)[0] == 0
    path = kernel.cache_path(fake.rev(head + "^{tree}"), "base", "smoke")
    for damage in ("image_sha256", "counts"):
        with open(path) as fh:
            entry = json.load(fh)
        if damage == "counts":
            del entry["cells"]["counts"]
        else:
            del entry[damage]
        with open(path, "w") as fh:
            json.dump(entry, fh)
        n = len(fake.calls["build"])
        rc, out = run(fake, capsys, head)
        assert rc == 0 and "(cached)" not in out and len(fake.calls["build"]) == n + 1


def test_expected_reports(fake, capsys, monkeypatch):
    # A test that provokes a kernel report on purpose names it; it must
    # appear, and only lines matching it are excused.
    monkeypatch.setitem(guesttests.TESTS, "provoke",
                        ("4M", 1024, "statfs-only.sh", {"expect": [r"BUG: unable to handle"]}))
    c1, c2 = fake.commits[1:]
    fake.fail["boot"].add(c1)
    rc, out = run(fake, capsys, c1, "--test", "provoke")
    assert rc == 0, out
    rc, out = run(fake, capsys, c2, "--test", "provoke")
    assert rc == 1
    assert "not in the console: BUG: unable to handle" in out


def test_inputs_edited_during_the_run_are_not_cached(fake, capsys, monkeypatch):
    # ci/ edited while a commit was being checked: the pass was produced
    # with the old inputs, so it must not be filed under the new ones.
    for mod, name in ((guesttests, "test_key"), (kernel, "fragments_key")):
        real = getattr(mod, name)
        seen = []

        def edited(arg, real=real, seen=seen):
            seen.append(arg)
            return real(arg) + ("-edited" if len(seen) % 2 == 0 else "")
        monkeypatch.setattr(mod, name, edited)
        rc, out = run(fake, capsys, "distro/9.9")
        assert rc == 0, out
        assert not os.listdir(os.path.join(str(fake.work), "cache", "check")), name
        monkeypatch.setattr(mod, name, real)


def test_empty_or_reversed_range_is_a_failure(fake, capsys, tmp_path):
    # A range that names no commit checks nothing: that is no pass, and
    # no (empty) table is written.
    json_out, md_out = tmp_path / "out.json", tmp_path / "out.md"
    head = fake.commits[-1]
    for rng in ("%s..%s" % (head, fake.commits[0]), "%s..%s" % (head, head)):
        rc = cli.main(["check", rng, "--json", str(json_out), "--markdown", str(md_out)])
        err = capsys.readouterr().err
        assert rc == 1, err
        assert "%s names no commit: nothing was checked" % rng in err
        assert len(err.strip().splitlines()) == 1, err
        assert not json_out.exists() and not md_out.exists()
    assert fake.calls["build"] == []


def test_cache_is_keyed_by_the_tools_first_on_path(fake, capsys, tmp_path, monkeypatch):
    # Another e2fsck or QEMU first on PATH (as the kit runs them) is another
    # verdict: the rows run again and the JSON names the tools that ran.
    import json
    import shutil
    head = fake.commits[-1]
    assert run(fake, capsys, head)[0] == 0
    real_e2fsck = shutil.which("e2fsck")
    for prog, line in (("e2fsck", "e2fsck 1.99.0 (1-Jan-2030)"),
                       ("qemu-system-x86_64", "QEMU emulator version 99.1.0")):
        bindir = tmp_path / ("bin-" + prog)
        bindir.mkdir()
        tool = bindir / prog
        tool.write_text('#!/bin/sh\ncase "$1" in -V|--version) echo "%s"; exit 0;; esac\n'
                        'exec %s "$@"\n' % (line, real_e2fsck))
        tool.chmod(0o755)
        monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
        n = len(fake.calls["build"])
        out_json = tmp_path / ("%s.json" % prog)
        rc, out = run(fake, capsys, head, "--json", str(out_json))
        assert rc == 0 and "(cached)" not in out, out
        assert len(fake.calls["build"]) == n + 1
        tools = json.loads(out_json.read_text())[0]["tools"]
        assert any(v.startswith(line) for v in tools.values()), tools
        # and with the same tools again, the new verdict is the cached one
        rc, out = run(fake, capsys, head)
        assert rc == 0 and rows_of(out)[0].endswith("(cached)")


def flaky_line(out, commit):
    return next(l for l in out.splitlines() if l.startswith(commit[:12] + " flaky: "))


def test_a_failure_stays_on_the_record(fake, capsys, tmp_path):
    # A cell that failed once and passed later is flaky, not a pass: the
    # cache keeps the failure, and --force adds a run without erasing it.
    import json
    c1 = fake.commits[1]
    fake.fail["boot"].add(c1)
    rc, out = run(fake, capsys)
    assert rc == 1 and rows_of(out)[1].split()[-7:-1] == ["pass", "pass", "FAIL", "FAIL",
                                                          "pass", "pass"], out
    builds = len(fake.calls["build"])
    # the failure is cached as passes are: nothing runs again
    rc, out = run(fake, capsys)
    assert rc == 1 and len(fake.calls["build"]) == builds
    assert rows_of(out)[1].endswith("(cached)") and "FAIL" in rows_of(out)[1]
    # the detector does not see it this time: flaky, still no pass
    fake.fail["boot"].clear()
    path = tmp_path / "rows.json"
    rc, out = run(fake, capsys, "--force", "--json", str(path))
    assert rc == 1, out
    assert rows_of(out)[1].endswith("flaky: 1 of 2 runs failed"), out
    assert "BUG: unable to handle page fault" in flaky_line(out, c1)
    assert "flaky" not in rows_of(out)[0] + rows_of(out)[2]
    rows = json.loads(path.read_text())
    assert [r["passed"] for r in rows] == [True, False, True]
    assert rows[1]["flaky"] == "flaky: 1 of 2 runs failed"
    assert [r["passed"] for r in rows[1]["runs"]] == [False, True]
    assert set(rows[1]["cells"].values()) == {"pass"}
    # cached, and another --force run adds a run
    rc, out = run(fake, capsys)
    assert rc == 1 and rows_of(out)[1].endswith("(cached)  flaky: 1 of 2 runs failed"), out
    rc, out = run(fake, capsys, c1, "--force")
    assert rc == 1 and rows_of(out)[0].endswith("flaky: 1 of 3 runs failed"), out
    # what export reads: no passing check for that tree
    tree = fake.rev(c1 + "^{tree}")
    assert kernel.cached(tree, "base", "smoke")["passed"] is False
    md = tmp_path / "rows.md"
    assert run(fake, capsys, "--markdown", str(md))[0] == 1
    assert "- %s flaky: 1 of 3 runs failed" % c1[:12] in md.read_text()


TICK_RACE = ["[   31.000000] " + "=" * 66,
             "[   31.000001] BUG: KCSAN: data-race in tick_nohz_idle_stop_tick / "
             "tick_sched_do_timer",
             "[   31.000003] write to 0xffffffff82a4c3e0 of 4 bytes by interrupt on cpu 1:",
             "[   31.000004]  tick_sched_do_timer+0x4c/0x120",
             "[   31.000005]  tick_nohz_handler+0x3a/0x190",
             "[   31.000006]",
             "[   31.000007] read to 0xffffffff82a4c3e0 of 4 bytes by task 0 on cpu 0:",
             "[   31.000008]  tick_nohz_idle_stop_tick+0x80/0x3c0",
             "[   31.000009]  do_idle+0x10a/0x180",
             "[   31.000012] " + "=" * 66]


def test_a_flaky_failure_the_base_shows_passes(fake, capsys):
    # The known-report rule for a failed run: once the base shows the
    # report that failed it (and a later run passes), the cell passes,
    # named flaky with the base's evidence.
    (fake.repo / "ci" / "kconfig" / "kcsan.config").write_text("CONFIG_KCSAN=y\n")
    base, c1 = fake.commits[:2]
    fake.fail["console"][c1] = TICK_RACE
    rc, out = run(fake, capsys, "--config", "kcsan")
    assert rc == 1 and "kernel (not shown by the base) report" in out, out
    fake.fail["console"].clear()
    rc, out = run(fake, capsys, c1, "--config", "kcsan", "--force")
    assert rc == 1 and rows_of(out)[0].endswith("flaky: 1 of 2 runs failed"), out
    # the base shows the race: the failed run is the base's
    fake.fail["console"][base] = TICK_RACE
    rc, out = run(fake, capsys, "--config", "kcsan", "--force")
    assert rc == 0, out
    assert rows_of(out)[1].endswith("flaky: 1 of 3 runs failed"), out
    line = flaky_line(out, c1)
    assert "each failed run failed on reports the base shows too" in line
    assert "the base %s shows it too" % base[:12] in line


def test_committed_records_without_runs_still_load():
    # records/checks/**/*.json were written before runs were kept: each row is its
    # own one run.  The audit's example: 004eb887 (6.12, kcsan/stress)
    # failed in one run and passed in the next, which together is flaky.
    import glob
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "records" / "checks"
    files = sorted(glob.glob(str(root / "**" / "*.json"), recursive=True))
    assert files
    for path in files:
        if path.endswith("/explained.json"):     # not a table (checkrecords.EXPLAINED)
            continue
        for row in json.loads(Path(path).read_text()):
            (run1,) = kernel.runs_of(row)
            assert run1["passed"] == all(row["cells"][c] in ("pass", "n/a")
                                         for c in kernel.RUN_CELLS), path

    def row_of(name):
        rows = json.loads((root / "6.12" / "3541088105fd" / name).read_text())
        return next(r for r in rows if r["commit"].startswith("004eb887"))
    failed, passed = (row_of("kcsan-stress-20261205-081145.json"),
                      row_of("kcsan-stress-20261205-085819.json"))
    assert "ext2_new_inode" in kernel.runs_of(failed)[0]["failure"]
    both = kernel.judge_runs(dict(passed, runs=kernel.runs_of(failed) + kernel.runs_of(passed)),
                             known={})
    assert both["flaky"] == "flaky: 1 of 2 runs failed" and both["passed"] is False


def test_judge_runs():
    ok = {c: "pass" for c in kernel.CELLS}
    bad = dict(ok, boot="FAIL", test="FAIL")

    def row(*runs):
        return {"cells": dict(ok if runs[-1][0] else bad),
                "runs": [{"passed": p, "excuse": e} for p, e in runs]}
    # every failed run failed only on reports the base shows: a pass
    r = kernel.judge_runs(row((False, ["S"]), (True, None)), {"S": "base ev"})
    assert r["passed"] and r["flaky"] == "flaky: 1 of 2 runs failed"
    assert r["flaky_excused"] == "base ev"
    # the base has not shown it, or the run failed on something else too
    for known, excuse in (({}, ["S"]), ({"S": "ev"}, None), ({"S": "ev"}, ["S", "T"]),
                          ("base", ["S"]), (None, ["S"])):
        r = kernel.judge_runs(row((False, excuse), (True, None)), known)
        assert not r["passed"] and "flaky_excused" not in r, (known, excuse)
    # the latest run failed: no pass, whatever the base shows
    r = kernel.judge_runs(row((True, None), (False, ["S"])), {"S": "ev"})
    assert not r["passed"] and r["flaky"] == "flaky: 1 of 2 runs failed"
    # all runs failed: a failure, not flaky; all passed: a pass
    r = kernel.judge_runs(row((False, None), (False, None)))
    assert not r["passed"] and "flaky" not in r
    assert kernel.judge_runs(row((True, None), (True, None)))["passed"]


def test_json_and_markdown_name_paths_relative_to_the_work_directory(fake, capsys, tmp_path):
    """What --json and --markdown write may be committed as a record
    (records/checks/): no path of this machine, the work directory's files
    named relative to it; the terminal still names them where they are."""
    import json
    c1 = fake.commits[1]
    fake.fail["boot"].add(c1)
    js, md = tmp_path / "out.json", tmp_path / "out.md"
    rc, out = run(fake, capsys, c1, "--json", str(js), "--markdown", str(md))
    assert rc == 1
    assert "%s test: kernel report in the console log (%s/logs/check-" % (c1[:12], fake.work) \
        in out
    for f in (js, md):
        assert str(fake.work) not in f.read_text(), f
    (row,) = json.loads(js.read_text())
    assert row["log"].startswith("logs/check-") and (fake.work / row["log"]).is_file()
    assert row["details"]["boot"] == row["log"] + ".console"
    assert "console log (%s.console)" % row["log"] in row["details"]["test"]
    assert "- %s test: " % c1[:12] in md.read_text()
