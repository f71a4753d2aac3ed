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
