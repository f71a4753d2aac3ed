"""fork import: a linux-source tarball becomes one reproducible commit."""

import os

from conftest import DEBVER, KERNEL_FILES, KVER, PACKAGE, make_tarball, sha256


def test_import_installed_package(kit):
    res = kit.fork("import", KVER, subprocess_=True)           # the real tools/fork
    assert res.rc == 0, res
    commit = res.out.strip()
    assert len(commit) == 40
    assert kit.rev("refs/heads/distro/9.9") == commit
    assert kit.rev("refs/tags/debian/%s^{commit}" % DEBVER) == commit
    # a fresh tree gets the snapshot checked out
    assert kit.git("symbolic-ref", "HEAD") == "refs/heads/distro/9.9"
    assert (kit.ktree / "fs" / "ext2" / "balloc.c").is_file()
    assert kit.git("status", "--porcelain") == ""
    body = kit.git("log", "-1", "--format=%B", commit)
    assert "Version: %s" % DEBVER in body
    assert "SHA256: %s" % sha256(kit.tarball) in body
    assert "Upstream: 9.9.1" in body
    assert kit.git("log", "-1", "--format=%an <%ae> %at", commit) == \
        "Debian linux-source snapshot <fork-kit@localhost> 946684800"
    assert kit.git("rev-list", "--count", commit) == "1"


def test_import_keeps_ignored_files_exec_bits_and_symlinks(kit):
    commit = kit.do_import()
    entries = {}
    for line in kit.git("ls-tree", "-r", commit).splitlines():
        meta, path = line.split("\t")
        mode, _type, blob = meta.split()
        entries[path] = (mode, blob)
    assert set(entries) == set(KERNEL_FILES)
    assert entries["include/config.gen"][0] == "100644"      # matched by .gitignore
    assert entries["scripts/gen.sh"][0] == "100755"
    assert entries["Makefile"][0] == "100644"
    assert entries["scripts/link"][0] == "120000"
    assert kit.git("cat-file", "blob", entries["scripts/link"][1]) == "gen.sh"
    assert kit.git("show", "%s:include/config.gen" % commit) == \
        KERNEL_FILES["include/config.gen"][1].strip()
    assert os.path.islink(kit.ktree / "scripts" / "link")
    assert os.access(kit.ktree / "scripts" / "gen.sh", os.X_OK)


def test_import_tarball_option_and_package_name(kit, tmp_path):
    other = tmp_path / "elsewhere.tar.xz"
    other.write_bytes(kit.tarball.read_bytes())
    res = kit.fork("import", PACKAGE, "--tarball", other, "--debian-version", "9.9.1-1~bpo1")
    assert res.rc == 0, res
    commit = res.out.strip()
    # DEP-14: ~ -> _
    assert kit.rev("refs/tags/debian/9.9.1-1_bpo1^{commit}") == commit
    assert "Tarball: elsewhere.tar.xz" in kit.git("log", "-1", "--format=%B", commit)


def test_tarball_needs_debian_version(kit):
    res = kit.fork("import", KVER, "--tarball", kit.tarball)
    assert res.rc == 1
    assert "--debian-version" in res.err


def test_default_version_comes_from_the_series_base(kit):
    res = kit.fork("import")
    assert res.rc == 0, res
    assert kit.rev("refs/heads/distro/9.9") == res.out.strip()


def test_import_is_reproducible_across_trees(kit, tmp_path):
    first = kit.do_import()
    other = tmp_path / "other-tree"
    res = kit.fork("import", KVER, env={"FORK_KTREE": str(other),
                                       "FORK_WORKDIR": str(tmp_path / "other-work")},
                   subprocess_=True)
    assert res.rc == 0, res
    assert res.out.strip() == first
    assert kit.git("rev-parse", "distro/9.9", cwd=other) == first


def test_reimport_is_a_no_op(kit):
    first = kit.do_import()
    before = kit.refs()
    res = kit.fork("import", KVER)
    assert res.rc == 0, res
    assert res.out.strip() == first
    assert "nothing to do" in res.err
    assert kit.refs() == before
    # a deleted tag is restored
    kit.git("tag", "-d", "debian/%s" % DEBVER)
    res = kit.fork("import", KVER)
    assert res.rc == 0, res
    assert kit.rev("refs/tags/debian/%s^{commit}" % DEBVER) == first


def test_package_not_installed_nor_in_the_archive(kit):
    kit.fake_dpkg(DEBVER, installed=False)
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert "no linux-source-9.9 in the Debian suites the kit knows (bookworm, " \
        "bookworm-updates, bookworm-backports, trixie, trixie-backports, sid)" in res.err
    assert not kit.ktree.exists()


def test_package_removed_but_config_left(kit):
    script = kit.bin / "dpkg-query"
    script.write_text("#!/bin/sh\nprintf 'rc  9.9.1-1'\n")
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert "no linux-source-9.9 in the Debian suites" in res.err


def test_installed_but_tarball_missing(kit):
    kit.tarball.unlink()
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert str(kit.tarball) in res.err
    assert "apt-get install --reinstall linux-source-9.9" in res.err


def test_checksum_differs_from_series_base(kit):
    kit.write_base("0" * 64)
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert sha256(kit.tarball) in res.err
    assert "0" * 64 in res.err
    assert "apt-get install linux-source-9.9=%s" % DEBVER in res.err
    assert not kit.ktree.exists()


def test_unknown_version_string(kit):
    for bad in ("nine", "9.9.1", "linux-image-9.9", "linux-source-9"):
        res = kit.fork("import", bad)
        assert res.rc == 1, (bad, res)
        assert "unknown version %r" % bad in res.err


def test_other_snapshot_needs_update_and_keeps_old_tag(kit, tmp_path):
    first = kit.do_import()
    files = dict(KERNEL_FILES)
    files["README"] = (0o644, "A newer snapshot.\n")
    newer = make_tarball(tmp_path / "newer.tar.xz", files)
    res = kit.fork("import", KVER, "--tarball", newer, "--debian-version", "9.9.2-1")
    assert res.rc == 1
    assert "patches/base expects %s" % sha256(kit.tarball) in res.err
    assert kit.rev("refs/heads/distro/9.9") == first
    assert kit.rev("refs/tags/debian/9.9.2-1") is None

    res = kit.fork("import", KVER, "--tarball", newer, "--debian-version", "9.9.2-1", "--update")
    assert res.rc == 0, res
    second = res.out.strip()
    assert second != first
    assert kit.rev("refs/heads/distro/9.9") == second
    assert kit.rev("refs/tags/debian/%s^{commit}" % DEBVER) == first
    assert kit.rev("refs/tags/debian/9.9.2-1^{commit}") == second
    # distro/9.9 was checked out: the work tree follows the branch
    assert kit.git("rev-parse", "HEAD") == second
    assert kit.git("status", "--porcelain") == ""
    assert (kit.ktree / "README").read_text() == "A newer snapshot.\n"


def test_update_with_a_taken_tag_changes_nothing(kit, tmp_path):
    first = kit.do_import()
    files = dict(KERNEL_FILES)
    files["README"] = (0o644, "Repacked, same version number.\n")
    repack = make_tarball(tmp_path / "repack.tar.xz", files)
    res = kit.fork("import", KVER, "--tarball", repack, "--debian-version", DEBVER, "--update")
    assert res.rc == 1
    assert "tag debian/%s already exists" % DEBVER in res.err
    assert kit.rev("refs/heads/distro/9.9") == first
    assert kit.git("status", "--porcelain") == ""


def test_other_snapshot_without_a_series_base(kit, tmp_path):
    # no series is based on 9.9: only the branch's own snapshot protects it
    first = kit.do_import()
    kit.write_base("0" * 64, version="9.8.1-1", package="linux-source-9.8")
    files = dict(KERNEL_FILES)
    files["README"] = (0o644, "A newer snapshot.\n")
    newer = make_tarball(tmp_path / "newer.tar.xz", files)
    res = kit.fork("import", KVER, "--tarball", newer, "--debian-version", "9.9.2-1")
    assert res.rc == 1
    assert "distro/9.9 already holds another snapshot (%s" % first[:12] in res.err
    assert "--update" in res.err
    assert kit.rev("refs/heads/distro/9.9") == first
    assert kit.rev("refs/tags/debian/9.9.2-1") is None


def test_update_of_checked_out_branch_needs_clean_tree(kit, tmp_path):
    first = kit.do_import()
    (kit.ktree / "README").write_text("local edit\n")
    files = dict(KERNEL_FILES)
    files["Makefile"] = (0o644, KERNEL_FILES["Makefile"][1] + "# newer\n")
    newer = make_tarball(tmp_path / "newer.tar.xz", files)
    res = kit.fork("import", KVER, "--tarball", newer, "--debian-version", "9.9.2-1", "--update")
    assert res.rc == 1
    assert "uncommitted changes" in res.err and "README" in res.err
    assert kit.rev("refs/heads/distro/9.9") == first
    assert kit.rev("refs/tags/debian/9.9.2-1") is None
    assert (kit.ktree / "README").read_text() == "local edit\n"


# -- from Debian's archive (a private apt state; apt itself faked) ---------

def test_import_from_the_archive_when_not_installed(kit):
    installed = kit.do_import()                  # from /usr/src, for comparison
    import shutil
    shutil.rmtree(kit.work)
    kit.fake_dpkg(DEBVER, installed=False)
    kit.serve_archive([("9.9.2-1", "sid", kit.tarball), (DEBVER, "trixie", kit.tarball)])
    res = kit.fork("import", KVER)
    assert res.rc == 0, res
    # the version the series is based on (patches/base), not the newest
    assert "linux-source-9.9 %s from trixie: .deb sha256 " % DEBVER in res.err
    assert "tarball sha256 %s" % sha256(kit.tarball) in res.err
    assert res.out.strip() == installed        # same tarball, same commit id
    import json
    prov = json.loads(next((kit.work / "debs").glob("*/provenance.json")).read_text())
    assert prov["suite"] == "trixie" and prov["version"] == DEBVER
    assert prov["tarball_sha256"] == sha256(kit.tarball)
    # the private apt state uses the machine's mirror and keyring for more suites
    sources = (kit.work / "apt" / "sources.list").read_text().splitlines()
    assert "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] " \
        "http://deb.example.org/debian trixie-backports main" in sources
    assert len(sources) == 6
    log = (kit.tmp / "apt.log").read_text()
    assert all("Dir::Etc::sourcelist=%s" % (kit.work / "apt" / "sources.list") in l
               for l in log.splitlines())


def test_import_a_named_debian_version(kit):
    other = make_tarball(kit.tmp / "other.tar.xz",
                         dict(KERNEL_FILES, README=(0o644, "a newer point release\n")))
    kit.serve_archive([("9.9.2-1", "sid", other), (DEBVER, "trixie", kit.tarball)])
    res = kit.fork("import", "9.9.2-1", "--update")
    assert res.rc == 0, res
    assert "from sid" in res.err
    assert kit.rev("refs/tags/debian/9.9.2-1^{commit}") == res.out.strip()
    res = kit.fork("import", "linux-source-9.9=9.9.7-1")
    assert res.rc == 1 and "9.9.7-1 is in none of the suites" in res.err
    assert "9.9.2-1 (sid), %s (trixie)" % DEBVER in res.err
    res = kit.fork("import", "linux-source-9.8=9.9.2-1")
    assert res.rc == 1 and "unknown version" in res.err


# apt-get as conftest's FAKE_APT, but `update` reads the private
# sources.list and fails the suites $FAKE_APT_FAIL names ("sid:expired",
# "*:unreachable") as apt 2.6 does; an expired Release file only fails when
# apt is told to check it (this machine's apt.conf.d says not to, a clean
# Debian does), and `madison` then finds nothing of such a suite.
APT_SUITES = r"""#!/usr/bin/python3
import os, subprocess, sys
args = sys.argv[1:]
real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apt-fake-real")
fail = dict(x.split(":") for x in os.environ.get("FAKE_APT_FAIL", "").split(",") if x)
checks = {"Acquire::Check-Valid-Until=true", "Acquire::Check-Date=true"} <= set(args)
src = [a.split("=", 1)[1] for a in args if a.startswith("Dir::Etc::sourcelist=")][0]
failed = set()
for n, line in enumerate(open(src).read().splitlines(), 1):
    uri, suite = line.split()[-3:-1]
    how = fail.get(suite) or fail.get("*")
    if how == "expired" and checks:
        failed.add(suite)
        if "update" in args:
            print("Get:%d %s %s InRelease [193 kB]" % (n, uri, suite))
            print("E: Release file for %s/dists/%s/InRelease is expired (invalid since 29d "
                  "19h 50min 18s). Updates for this repository will not be applied."
                  % (uri, suite), file=sys.stderr)
    elif how == "unreachable":
        failed.add(suite)
        if "update" in args:
            print("Err:%d %s %s InRelease\n  Could not resolve 'deb.example.org'"
                  % (n, uri, suite))
            print("W: Failed to fetch %s/dists/%s/InRelease  Could not resolve "
                  "'deb.example.org'" % (uri, suite), file=sys.stderr)
    elif "update" in args:
        print("Hit:%d %s %s InRelease" % (n, uri, suite))
if "update" in args:
    with open(os.environ["FAKE_APT_LOG"], "a") as fh:
        fh.write("apt-get " + " ".join(args) + "\n")
    sys.exit(100 if failed else 0)
proc = subprocess.run([real] + args, stdout=subprocess.PIPE, text=True)
print("".join(l + "\n" for l in proc.stdout.splitlines()
              if not any(" %s/" % s in l for s in failed)), end="")
sys.exit(proc.returncode)
"""


def fail_suites(kit, how):
    """apt-get/apt-cache fail the suites `how` names (see APT_SUITES)."""
    for prog in ("apt-get", "apt-cache"):
        os.replace(kit.bin / prog, kit.bin / "apt-fake-real")
        (kit.bin / prog).write_text(APT_SUITES.replace("apt-fake-real", "apt-fake-real-" + prog))
        os.replace(kit.bin / "apt-fake-real", kit.bin / ("apt-fake-real-" + prog))
        (kit.bin / prog).chmod(0o755)
    kit.env["FAKE_APT_FAIL"] = how
    kit.mp.setenv("FAKE_APT_FAIL", how)


def test_archive_unreachable_or_tampered(kit):
    kit.fake_dpkg(DEBVER, installed=False)
    archive = kit.serve_archive([(DEBVER, "trixie", kit.tarball)])
    fail_suites(kit, "*:unreachable")
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert "apt-get update of the private apt state failed" in res.err
    assert "Could not resolve" in res.err or "Err:1" in res.err
    kit.mp.delenv("FAKE_APT_FAIL")
    # the index lists another hash than the .deb has
    archive[PACKAGE][0]["sha256"] = "0" * 64
    kit.fake_apt(archive)
    res = kit.fork("import", KVER)
    assert res.rc == 1
    assert "but the signed index of trixie lists %s" % ("0" * 64) in res.err
    assert not list((kit.work / "debs").glob("*.deb"))


def test_sources_parsing(tmp_path, monkeypatch):
    from forkkit.repo import debian
    one = tmp_path / "sources.list"
    one.write_text("# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian "
                   "bookworm main contrib\ndeb-src http://m.example/debian bookworm main\n")
    two = tmp_path / "x.sources"
    two.write_text("Types: deb\nURIs: http://m.example/debian-security\n"
                   "Suites: bookworm-security\nComponents: main\n\n"
                   "Types: deb\nEnabled: no\nURIs: http://off.example/\nSuites: sid\n")
    monkeypatch.setattr(debian, "sources_files", lambda: [str(one), str(two)])
    text, suites = debian.sources_list()
    assert text.splitlines() == [
        "deb [signed-by=/k.gpg] http://m.example/debian bookworm main",
        "deb [signed-by=/k.gpg] http://m.example/debian bookworm-backports main",
        "deb [signed-by=/k.gpg] http://m.example/debian trixie main",
        "deb [signed-by=/k.gpg] http://m.example/debian trixie-backports main",
        "deb [signed-by=/k.gpg] http://m.example/debian sid main",
        "deb http://m.example/debian-security bookworm-security main",
        "deb http://m.example/debian-security trixie-security main",
    ]


def test_two_imports_at_once(kit):
    # a slow tar widens the window between "no such branch yet" and the tag
    tar = kit.bin / "tar"
    tar.write_text("#!/bin/sh\nsleep 1\nexec /bin/tar \"$@\"\n")
    tar.chmod(0o755)
    import subprocess
    from conftest import FORK, PYTHON
    procs = [subprocess.Popen([PYTHON, str(FORK), "import", KVER], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert [rc for _, _, rc in results] == [0, 0], results
    assert len({out.strip() for out, _, _ in results}) == 1
    commit = results[0][0].strip()
    assert kit.rev("refs/heads/distro/9.9") == commit
    assert kit.rev("refs/tags/debian/%s^{commit}" % DEBVER) == commit
    assert any("already holds this snapshot" in err for _, err, _ in results), results
    assert any("waiting for %s" % (kit.work / "locks" / "import.lock") in err
               for _, err, _ in results), results


def test_a_suite_that_cannot_be_read_is_skipped(kit):
    # a fresh Debian 12 checks Release expiry (this machine's apt.conf.d does
    # not): the mirror's sid had expired, and 7.3 comes from trixie-backports
    kit.fake_dpkg(DEBVER, installed=False)
    kit.serve_archive([(DEBVER, "trixie-backports", kit.tarball)])
    fail_suites(kit, "sid:expired")
    res = kit.fork("import", KVER)
    assert res.rc == 0, res
    skipped = [l.split("] ", 1)[1] for l in res.err.splitlines() if "skipped" in l]
    assert skipped == ["import: apt-get update: skipped sid (E: Release file for "
                       "http://deb.example.org/debian/dists/sid/InRelease is expired (invalid "
                       "since 29d 19h 50min 18s)): its packages are not considered"], res.err
    assert "linux-source-9.9 %s from trixie-backports" % DEBVER in res.err
    update = [l for l in (kit.tmp / "apt.log").read_text().splitlines() if " update" in l]
    assert len(update) == 1 and "Acquire::Check-Valid-Until=true" in update[0]
    # the lists are fresh: no second update, and the skipped suite is still named
    res = kit.fork("import", KVER)
    assert res.rc == 0 and "skipped sid" in res.err, res
    assert len([l for l in (kit.tmp / "apt.log").read_text().splitlines()
                if " update" in l]) == 1


def test_a_version_only_in_a_skipped_suite(kit):
    kit.fake_dpkg(DEBVER, installed=False)
    kit.serve_archive([(DEBVER, "sid", kit.tarball)])
    fail_suites(kit, "sid:expired")
    refs = kit.refs() if kit.ktree.exists() else {}
    res = kit.fork("import", KVER)
    assert res.rc == 1, res
    err = res.err.strip().splitlines()[-1]
    assert err.startswith("fork import: error: no linux-source-9.9 in the Debian suites the "
                          "kit could read (bookworm, "), err
    assert err.endswith("; skipped: sid (E: Release file for http://deb.example.org/debian/"
                        "dists/sid/InRelease is expired (invalid since 29d 19h 50min 18s))"), err
    assert (kit.refs() if kit.ktree.exists() else {}) == refs


def test_skipped_suites_from_apt_output():
    from forkkit.repo import debian
    suites = ["bookworm", "trixie-backports", "sid"]
    out = ("Hit:1 http://m.example/debian bookworm InRelease\n"
           "Err:2 http://m.example/debian sid InRelease\n"
           "  Could not connect to m.example:80 (10.0.0.1), connection timed out\n"
           "Reading package lists...\n"
           "W: Failed to fetch http://m.example/debian/dists/sid/InRelease  Could not "
           "connect to m.example:80 (10.0.0.1), connection timed out\n"
           "W: Some index files failed to download. They have been ignored, or old ones "
           "used instead.\n")
    assert debian.skipped_suites(out, suites) == {
        "sid": "Err:2 http://m.example/debian sid InRelease Could not connect to "
               "m.example:80 (10.0.0.1), connection timed out"}
    # a failure that names no suite is not a suite to skip
    assert debian.skipped_suites(out + "E: Could not open lock file /x - open (13)\n",
                                 suites) is None


def test_a_tarball_that_is_no_tarball_is_one_line(kit, tmp_path):
    kit.imported()
    refs = kit.refs()
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(b"not a tarball\r\n")
    res = kit.fork("import", "--tarball", bad, "--debian-version", "9.9.3-1", "--update")
    assert res.rc == 1 and "Traceback" not in res.err, res
    err = res.err.strip().splitlines()[-1]
    assert err.startswith("fork import: error: %s cannot be extracted (tar: This does not look "
                          "like a tar archive; log: " % bad), res
    assert err.endswith("): name a linux-source .tar.xz as Debian ships it; nothing changed")
    # the checksum and the other-snapshot refusals are one line too
    res = kit.fork("import", "--tarball", bad, "--debian-version", DEBVER)
    assert res.rc == 1 and res.err.strip().splitlines()[-1].startswith(
        "fork import: error: %s has sha256 " % bad), res
    assert kit.refs() == refs
