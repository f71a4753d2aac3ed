"""fork update: follow Debian's point releases (archive faked, real git)."""

import re

from conftest import DEBVER, KERNEL_FILES, make_tarball


def point_release(kit, name, **changes):
    files = dict(KERNEL_FILES)
    for path, text in changes.items():
        files[path] = (0o644, text)
    return make_tarball(kit.tmp / name, files)


def test_up_to_date_dry_run_and_update(kit):
    kit.laid_out()
    kit.serve_archive([(DEBVER, "bookworm", kit.tarball)])
    res = kit.fork("update", "--no-check")
    assert res.rc == 0, res
    assert re.search(r"^patches +%s +- +up to date$" % DEBVER, res.out, re.M), res
    newer = point_release(kit, "newer.tar.xz", README="a point release\n")
    kit.serve_archive([("9.9.1-2", "trixie", newer), (DEBVER, "bookworm", kit.tarball),
                ("9.9.0-1", "sid", kit.tarball)])
    before = (kit.repo / "patches" / "base").read_text()
    res = kit.fork("update", "--dry-run")
    assert res.rc == 0 and re.search(r"9\.9\.1-2 \(trixie\) +would update", res.out), res
    assert (kit.repo / "patches" / "base").read_text() == before
    res = kit.fork("update", "--no-check")
    assert res.rc == 0, res
    assert re.search(r"^patches +%s +9\.9\.1-2 +updated$" % DEBVER, res.out, re.M), res
    assert "version: 9.9.1-2" in (kit.repo / "patches" / "base").read_text()
    assert kit.git("show", "series/9.9:README") == "a point release"
    assert kit.rev("refs/tags/debian/9.9.1-2^{commit}") == kit.rev("distro/9.9")


def test_conflict_stops_and_moves_nothing(kit):
    kit.laid_out()
    refs = kit.refs()
    base = (kit.repo / "patches" / "base").read_text()
    # the point release changes the very line patch 1 changes
    text = KERNEL_FILES["fs/ext2/balloc.c"][1].replace("/* balloc line 10 */",
                                                       "/* balloc line 10: fixed upstream */")
    newer = point_release(kit, "conflict.tar.xz", **{"fs/ext2/balloc.c": text})
    kit.serve_archive([("9.9.1-2", "trixie", newer)])
    res = kit.fork("update", "--no-check")
    assert res.rc == 1
    assert "CONFLICT: stopped in work/rebase/tree" in res.out
    assert (kit.repo / "patches" / "base").read_text() == base
    assert {k: v for k, v in kit.refs().items() if "series/" in k or "topic/" in k} == \
        {k: v for k, v in refs.items() if "series/" in k or "topic/" in k}
    assert kit.fork("rebase", "--abort").rc == 0


def test_update_to_one_point_release_at_a_time(kit):
    kit.laid_out()
    p1 = point_release(kit, "p1.tar.xz", README="point release 1\n")
    p2 = point_release(kit, "p2.tar.xz", README="point release 2\n")
    kit.serve_archive([("9.9.1-3", "sid", p2), ("9.9.1-2", "trixie", p1),
                       (DEBVER, "bookworm", kit.tarball)])
    res = kit.fork("update", "--to", "9.9.1-2", "--no-check")  # the only series
    assert res.rc == 0, res
    assert re.search(r"^patches +%s +9\.9\.1-2 +updated$" % DEBVER, res.out, re.M), res
    assert kit.git("show", "series/9.9:README") == "point release 1"
    res = kit.fork("update", "--series", "patches", "--to", "9.9.1-2", "--no-check")
    assert res.rc == 1 and "not newer than" in res.err and "Traceback" not in res.err, res
    res = kit.fork("update", "--series", "patches", "--to", "9.9.7-1", "--no-check")
    assert res.rc == 1 and "not in the archive" in res.err and "9.9.1-3" in res.err, res
    # the update rewrote patches/ (the user commits it before the next one)
    kit.commit_repo("update 1")
    res = kit.fork("update", "--series", "patches", "--no-check")
    assert res.rc == 0 and re.search(r"9\.9\.1-2 +9\.9\.1-3 +updated$", res.out, re.M), res
    assert kit.git("show", "series/9.9:README") == "point release 2"


# The host programs a check needs, but no QEMU (see Kit.path_without).
PROGS_BUT_QEMU = ("git", "tar", "xz", "make", "gcc", "flex", "bison", "bc", "cpio", "sh", "grep",
                  "cp", "mkdir", "touch", "mke2fs", "e2fsck", "dpkg", "dpkg-deb")


def newer_archive(kit):
    newer = point_release(kit, "newer.tar.xz", README="a point release\n")
    kit.serve_archive([("9.9.1-2", "trixie", newer), (DEBVER, "bookworm", kit.tarball)])


def series_files(kit):
    return {p.name: p.read_bytes() for p in sorted((kit.repo / "patches").iterdir())}


def test_a_check_that_cannot_run_is_refused_before_anything_moves(kit):
    kit.laid_out()
    newer_archive(kit)
    refs, files = kit.refs(), series_files(kit)
    path = "%s:%s" % (kit.bin, kit.path_without("qemu-system-x86_64", PROGS_BUT_QEMU))
    res = kit.fork("update", env={"PATH": path})
    assert res.rc == 1, res
    assert res.err.startswith("fork update: error: qemu-system-x86_64 not found"), res
    assert "nothing was changed" in res.err and "--no-check" in res.err, res
    assert len(res.err.strip().splitlines()) == 1, res
    assert kit.refs() == refs and series_files(kit) == files
    assert not (kit.work / "rebase" / "state.json").exists()
    # rebase itself refuses the same way, and an unknown guest test too
    res = kit.fork("rebase", "--onto", "9.9.1-2", "--archive", env={"PATH": path})
    assert res.rc == 1 and "qemu-system-x86_64 not found" in res.err, res
    assert len(res.err.strip().splitlines()) == 1, res
    res = kit.fork("update", "--test", "nosuch")
    assert res.rc == 1 and "unknown guest test 'nosuch'" in res.err, res
    assert kit.refs() == refs and series_files(kit) == files
    assert not (kit.work / "rebase" / "state.json").exists()
    # --no-check needs no QEMU
    res = kit.fork("update", "--no-check", env={"PATH": path})
    assert res.rc == 0 and "version: 9.9.1-2" in (kit.repo / "patches" / "base").read_text(), res


def failing_check(monkeypatch, passed=False):
    """The check after the rebase, without QEMU: every row passes or fails."""
    from forkkit.verify import check as cmd_check
    monkeypatch.setattr(cmd_check, "check_ready", lambda *a: None)
    monkeypatch.setattr(cmd_check, "run_check", lambda *a, **kw: [{"passed": passed}])


def test_a_failed_check_after_update_can_be_aborted(kit, monkeypatch):
    kit.laid_out()
    newer_archive(kit)
    refs, files = kit.refs(), series_files(kit)
    failing_check(monkeypatch)
    res = kit.fork("update")
    assert res.rc == 1, res
    assert re.search(r"^patches +%s +9\.9\.1-2 +FAILED: the rebase is done, but `check` "
                     r"failed.*rebase --continue or --abort" % DEBVER, res.out, re.M), res
    assert "version: 9.9.1-2" in (kit.repo / "patches" / "base").read_text()
    # --continue checks again and keeps the rebase while the check fails
    res = kit.fork("rebase", "--continue")
    assert res.rc == 1 and "rebase --abort" in res.err, res
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert kit.refs() == refs and series_files(kit) == files
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    assert kit.git("status", "--porcelain", cwd=kit.repo) == ""
    assert not (kit.work / "rebase" / "state.json").exists()


def test_a_failed_check_then_a_passing_one_keeps_the_update(kit, monkeypatch):
    kit.laid_out()
    newer_archive(kit)
    failing_check(monkeypatch)
    assert kit.fork("update").rc == 1
    moved = kit.refs()
    failing_check(monkeypatch, passed=True)
    res = kit.fork("rebase", "--continue")
    assert res.rc == 0, res
    assert not (kit.work / "rebase" / "state.json").exists()
    assert kit.refs() == moved and "version: 9.9.1-2" in (kit.repo / "patches" / "base").read_text()
    assert kit.fork("rebase", "--abort").rc == 1


def test_abort_after_a_failed_check_leaves_edited_series_files_alone(kit, monkeypatch):
    kit.laid_out()
    newer_archive(kit)
    failing_check(monkeypatch)
    assert kit.fork("update").rc == 1
    series = kit.repo / "patches" / "series"
    series.write_text(series.read_text() + "# a fix made after the rebase\n")
    edited = series_files(kit)
    res = kit.fork("rebase", "--abort")
    assert res.rc == 0, res
    assert "left alone: patches/" in res.err and "patches/ left alone" in res.out, res
    assert series_files(kit) == edited
