"""fork check: the table and the result cache, with build/boot faked."""

import os
import re

import pytest

from forkkit import cli, cmd_boot, cmd_build, cmd_check, guesttests


@pytest.fixture
def fake(kit, monkeypatch, tmp_path):
    """A laid-out series; build, checkpatch and the guest boot faked; real
    4 MiB images and real e2fsck."""
    kit.laid_out()
    calls = {"build": [], "boot": [], "checkpatch": []}
    fail = {"boot": set(), "build": set(), "ffree": set()}

    def build(rev, flavour="base", jobs=0, do_patchcheck=True, prog=None):
        commit = kit.rev(rev)
        calls["build"].append(commit)
        if commit in fail["build"]:
            raise cmd_check.ForkError("build of %s failed: boom" % commit[:12])
        image = tmp_path / "bzImage"
        image.write_text("kernel")
        return cmd_build.BuildResult(rev=rev, commit=commit, tree=kit.rev(commit + "^{tree}"),
                                     flavour=flavour, image=str(image), log="build.log")

    def checkpatch(commit, src, log):
        calls["checkpatch"].append(commit)
        if kit.git("rev-list", "--parents", "-n", "1", commit).count(" ") == 0:
            return "n/a", "base snapshot"
        return "pass", "total: 0 errors, 0 warnings, 10 lines checked"

    def run_guest(kernel, script, disks=(), timeout=600, log=None, prog=None, label="boot", **kw):
        commit = calls["build"][-1]
        calls["boot"].append((commit, script, list(disks), timeout))
        blocks, inodes = guesttests.group_sums(disks[0])
        if commit in fail["ffree"]:
            inodes += 1
        lines = ["FORK-GUEST-START 9.9.1 cpus=2",
                 "RESULT prog=fsreport bfree=%d ffree=%d" % (blocks, inodes)]
        if commit in fail["boot"]:
            lines.append("[ 1.0] BUG: unable to handle page fault")
        lines.append("FORK-EXIT-STATUS: 0")
        with open(log, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        rc, problems = cmd_boot.scan(log)
        return cmd_boot.BootResult(rc=rc, log=log, seconds=0.1, problems=problems, error=None,
                                   output=cmd_boot.guest_output(log))

    monkeypatch.setattr(cmd_check, "build", build)
    monkeypatch.setattr(cmd_check, "checkpatch", checkpatch)
    monkeypatch.setattr(cmd_check, "run_guest", run_guest)
    monkeypatch.setitem(guesttests.TESTS, "smoke", ("4M", 1024, "fsreport /mnt"))
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
                                "e2fsck", "time"]
    rows = rows_of(out)
    assert [r[:12] for r in rows] == [c[:12] for c in fake.commits]
    assert rows[0].split()[1:3] == ["Import", "Debian"]
    assert "n/a" in rows[0].split() and "ext2: make balloc faster" in rows[1]
    for r in rows:
        assert r.split()[-5:-1] == ["pass"] * 4 or r.split()[-6:-2] == ["pass"] * 4, r
        assert "(cached)" not in r
    assert fake.calls["build"] == fake.commits
    assert [b[2][0] for b in fake.calls["boot"]] == [str(fake.work / "images" / "check.img")] * 3
    assert fake.calls["boot"][0][1] == "fsreport /mnt"
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


def test_failures_are_reported_and_not_cached(fake, capsys):
    c1, c2 = fake.commits[1:]
    fake.fail["boot"].add(c1)
    fake.fail["ffree"].add(c2)
    rc, out = run(fake, capsys)
    assert rc == 1
    rows = rows_of(out)
    assert rows[1].split()[-6:-1] == ["pass", "pass", "FAIL", "FAIL", "pass"], rows[1]
    assert "%s boot: " % c1[:12] in out and "%s test: kernel report in the console log: " \
        "[ 1.0] BUG: unable to handle page fault" % c1[:12] in out
    assert re.search(r"%s e2fsck: guest statfs said bfree=\d+ ffree=(\d+), group descriptors "
                     r"hold \d+/(\d+)" % c2[:12], out)
    m = re.search(r"ffree=(\d+), group descriptors hold \d+/(\d+)", out)
    assert int(m.group(1)) == int(m.group(2)) + 1
    # the base passed and is cached; the failures are checked again
    fake.fail["boot"].clear()
    fake.fail["ffree"].clear()
    rc, out = run(fake, capsys)
    assert rc == 0
    assert fake.calls["build"] == fake.commits + [c1, c2]


def test_build_failure_row(fake, capsys):
    c1 = fake.commits[1]
    fake.fail["build"].add(c1)
    rc, out = run(fake, capsys, "%s..%s" % (fake.commits[0], fake.commits[2]))
    assert rc == 1
    rows = rows_of(out)
    assert [r[:12] for r in rows] == [c[:12] for c in fake.commits[1:]]
    assert rows[0].split()[-6:-1] == ["-", "FAIL", "-", "-", "-"], rows[0]
    assert "%s build: build of %s failed: boom" % (c1[:12], c1[:12]) in out
    assert c1 not in fake.calls["checkpatch"]


def test_json_output(fake, capsys, tmp_path):
    import json
    path = tmp_path / "out.json"
    rc, _ = run(fake, capsys, fake.commits[1], "--json", str(path))
    assert rc == 0
    rows = json.loads(path.read_text())
    assert [r["commit"] for r in rows] == [fake.commits[1]]
    assert rows[0]["passed"] is True
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
                       "e2fsck": "-"}}]
    lines = cmd_check.table(rows).splitlines()
    assert len(lines) == 3 and set(lines[1]) == {"-"}
    assert lines[2].startswith("a" * 12 + "  " + "x" * 44 + "  pass")
    assert lines[2].endswith("   12s (cached)")
    assert os.path.basename(cmd_check.cache_path("t" * 40, "base", "smoke")).startswith(
        "t" * 40 + "-base-smoke-")


def test_missing_qemu_is_reported_before_any_build(fake, capsys, monkeypatch):
    real_which = cmd_boot.shutil.which
    no_qemu = lambda p, *a, **k: None if p == "qemu-system-x86_64" else real_which(p)  # noqa: E731
    monkeypatch.setattr(cmd_boot.shutil, "which", no_qemu)
    with pytest.raises(cmd_check.ForkError) as exc:
        cmd_check.run_check(series=cmd_check.Series(), out=lambda *_: None)
    assert "apt-get install qemu-system-x86" in str(exc.value)
    assert fake.calls["build"] == []
    # once every commit is cached, check needs no qemu at all
    monkeypatch.setattr(cmd_boot.shutil, "which", real_which)
    rc, _ = run(fake, capsys)
    assert rc == 0 and len(fake.calls["build"]) == len(fake.commits)
    monkeypatch.setattr(cmd_boot.shutil, "which", no_qemu)
    rc, out = run(fake, capsys)
    assert rc == 0 and all(r.endswith("(cached)") for r in rows_of(out))
