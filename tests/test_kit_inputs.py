"""Bad or destructive input: each gets a one-line error that says what to
do, and nothing the user has is lost (issue: a check that cannot lie)."""

import os
import re
import types

import pytest

from forkkit import cli
from forkkit.core import paths, proc, records
from forkkit.repo import series as series_mod
from forkkit.core.errors import ForkError


def one_line_error(res, verb):
    assert res.rc == 1, res
    lines = res.err.strip().splitlines()
    assert lines[-1].startswith("fork %s: error: " % verb), res
    assert "Traceback" not in res.err
    return lines[-1]


def test_empty_series_file_does_not_move_the_series_branch(kit):
    kit.laid_out()
    head = kit.rev("series/9.9")
    (kit.repo / "patches" / "series").write_text("")
    err = one_line_error(kit.fork("branches"), "branches")
    assert "patches/series lists no patches" in err and "2 commits" in err
    assert kit.rev("series/9.9") == head
    # a comment-only file is just as empty
    (kit.repo / "patches" / "series").write_text("# nothing yet\n")
    one_line_error(kit.fork("branches"), "branches")
    assert kit.rev("series/9.9") == head


def test_duplicate_topic_name_is_refused(kit):
    kit.laid_out()
    refs = kit.refs()
    names = sorted(p.name for p in (kit.repo / "patches").glob("*.patch"))
    (kit.repo / "patches" / "series").write_text("%s same\n%s same\n" % tuple(names))
    err = one_line_error(kit.fork("branches"), "branches")
    assert "topic name 'same' is given to both %s and %s" % tuple(names) in err
    (kit.repo / "patches" / "series").write_text("%s\n%s\n" % (names[0], names[0]))
    err = one_line_error(kit.fork("branches"), "branches")
    assert "lists %s twice" % names[0] in err
    assert kit.refs() == refs


def test_save_from_the_base_deletes_nothing(kit):
    kit.laid_out()
    before = {p.name: p.read_bytes() for p in (kit.repo / "patches").iterdir()}
    err = one_line_error(kit.fork("save", "--from", "distro/9.9"), "save")
    assert "nothing to save" in err and "git rm" in err
    assert {p.name: p.read_bytes() for p in (kit.repo / "patches").iterdir()} == before


def test_save_says_how_to_get_removed_patches_back(kit):
    kit.laid_out()
    last = sorted((kit.repo / "patches").glob("*.patch"))[-1]
    res = kit.fork("save", "--from", "series/9.9~1")
    assert res.rc == 0, res
    assert not last.exists()
    assert "removed patches/%s" % last.name in res.err
    assert "git -C %s checkout HEAD -- patches/%s" % (kit.repo, last.name) in res.err
    kit.git("checkout", "HEAD", "--", "patches", cwd=kit.repo)
    assert last.exists()


def test_non_utf8_base_file(kit):
    kit.imported()
    (kit.repo / "patches" / "base").write_bytes(b"package: linux-source-9.9\nversion: 9\xff\n")
    err = one_line_error(kit.fork("branches"), "branches")
    assert "patches/base is not UTF-8 text (byte 0xff at offset 36): save it as UTF-8" in err


def test_unwritable_work_dir(kit, tmp_path):
    # (CI runs as root, which may write anywhere: a path under a plain file
    # cannot be created by anyone)
    kit.imported()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = kit.fork("build", "distro/9.9", env={"FORK_WORKDIR": str(blocker / "work"),
                                 "FORK_KTREE": str(kit.ktree)}, subprocess_=True)
    err = one_line_error(res, "build")
    assert "Not a directory" in err and "writable" in err


def test_json_path_is_checked_before_any_work(kit, tmp_path, capsys):
    kit.laid_out()
    missing = tmp_path / "no-such-dir" / "out.json"
    rc = cli.main(["check", "--json", str(missing)])
    err = capsys.readouterr().err
    assert rc == 1 and "--json %s: directory %s does not exist" % (missing, missing.parent) in err
    assert not (kit.work / "logs").exists() or not any(
        n.startswith("check-") for n in os.listdir(kit.work / "logs"))
    rc = cli.main(["compare", "--output", str(missing)])
    assert rc == 1 and "--output" in capsys.readouterr().err
    rc = cli.main(["frag", "--json", str(tmp_path)])
    assert rc == 1 and "is a directory" in capsys.readouterr().err


def test_a_command_that_hangs_is_an_error_not_a_traceback():
    with pytest.raises(ForkError, match=r"`sleep 5` did not finish within 0.2s"):
        proc.run(["sleep", "5"], timeout=0.2)
    with pytest.raises(ForkError, match=r"did not finish"):
        proc.run(["sleep", "5"], timeout=0.2, log=os.devnull)


def test_a_record_write_that_fails_leaves_the_record_as_it_was(tmp_path):
    """A record (fstests' tests.json, the rebase state, an image's index
    entry) is replaced whole or not at all: a write that fails midway
    (here: a value JSON cannot hold) keeps the old file and leaves no
    temporary file behind."""
    path = tmp_path / "tests.json"
    records.write_json(str(path), {"generic/001": {"status": "pass"}})
    before = path.read_text()
    assert before == '{\n "generic/001": {\n  "status": "pass"\n }\n}\n'
    with pytest.raises(TypeError):
        records.write_json(str(path), {"generic/002": {"status": object()}})
    assert path.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["tests.json"]
    assert records.read_json(str(path), None) == {"generic/001": {"status": "pass"}}
    assert records.read_json(str(tmp_path / "none.json"), []) == []


def test_unknown_revision_says_which_import(kit):
    kit.imported()
    err = one_line_error(kit.fork("build", "series/9.9"), "build")
    assert "run `tools/fork import 9.9` and `tools/fork branches` first" in err
    err = one_line_error(kit.fork("build", "distro/4.2"), "build")
    assert "no series of this repository is on 4.2" in err
    assert "tools/fork rebase --onto 4.2 --into backports/4.2" in err
    backport = types.SimpleNamespace(is_primary=False, rel="backports/6.1")
    assert series_mod.fork_command("check", backport, "--test", "smoke") == \
        "tools/fork check --series backports/6.1 --test smoke"
    assert series_mod.fork_command("save", types.SimpleNamespace(is_primary=True)) == \
        "tools/fork save"


def test_readme_verbs_are_the_cli_verbs():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "README.md")) as fh:
        readme = fh.read()
    section = readme.split("## Verbs", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\* `([a-z]+)[ `]", section, re.M))
    verbs = {v for v, m in cli.VERBS if cli.load(m) is not None}
    assert documented == verbs
    assert all(cli.load(m) is not None for v, m in cli.VERBS)   # no verb without a module


# -- patch files, output paths, base files, MAINTAINERS (issue 34, item 10) --

def tracked_files(kit):
    """{path: bytes} of every file of the project repo (tracked or not)."""
    out = kit.git("ls-files", "-z", "--cached", "--others", "--exclude-standard",
                  cwd=kit.repo)
    return {p: (kit.repo / p).read_bytes() for p in out.split("\0")
            if p and (kit.repo / p).is_file()}


def test_empty_or_crlf_patch_is_named(kit):
    kit.laid_out()
    first = sorted((kit.repo / "patches").glob("*.patch"))[0]
    text = first.read_bytes()
    refs = kit.refs()
    first.write_bytes(b"")
    err = one_line_error(kit.fork("branches"), "branches")
    assert "patches/%s is empty" % first.name in err
    assert "git -C %s checkout HEAD -- patches/%s" % (kit.repo, first.name) in err
    first.write_bytes(text.replace(b"\n", b"\r\n"))
    before = tracked_files(kit)
    err = one_line_error(kit.fork("branches"), "branches")
    assert "patches/%s has CRLF line endings: convert it with `dos2unix" % first.name in err
    assert kit.refs() == refs and tracked_files(kit) == before


def test_a_failing_command_with_bytes_input_is_a_fork_error():
    # (an empty patch file is such an input: `git mailinfo` fails on it)
    with pytest.raises(ForkError, match=r"(?s)exit 3\): sh -c .*\nerr$"):
        proc.run(["sh", "-c", "echo err >&2; exit 3"], input=b"")
    with pytest.raises(ForkError, match=r"(?s)exit 3\): sh -c .*\nout\nerr$"):
        proc.run(["sh", "-c", "cat >/dev/null; echo out; echo err >&2; exit 3"], input=b"x")


@pytest.mark.parametrize("path, why", [
    ("/proc/version", "Input/output error"),
    ("/dev/full", "No space left on device"),
])
def test_an_output_that_refuses_writes_is_refused_before_any_work(kit, path, why):
    kit.laid_out()
    for opt in ("--json", "--markdown"):
        err = one_line_error(kit.fork("check", opt, path), "check")
        assert err == "fork check: error: %s %s cannot be written (%s): name another file; " \
                      "nothing was run" % (opt, path, why)
    assert not (kit.work / "logs").exists() or not any(
        n.startswith(("check-", "build-")) for n in os.listdir(kit.work / "logs"))


def test_output_path_probe_changes_nothing(tmp_path):
    new = tmp_path / "new.json"
    assert paths.check_output_path(str(new)) == str(new)
    assert not new.exists()
    old = tmp_path / "old.json"
    old.write_text("kept\n")
    paths.check_output_path(str(old))
    assert old.read_text() == "kept\n"
    with pytest.raises(ForkError, match="is a directory: name a file"):
        paths.check_output_path(str(tmp_path))
    with pytest.raises(ForkError, match="is a file: name a directory"):
        paths.check_output_dir(str(old), "--out")
    paths.check_output_dir(str(tmp_path / "a" / "b"), "--out")
    assert not (tmp_path / "a").exists()
    with pytest.raises(ForkError, match=r"--out /proc/x cannot be written \("):
        paths.check_output_dir("/proc/x", "--out")


@pytest.mark.parametrize("verb, opt, extra", [("bench", "--out", ()),
                                              ("export", "--outdir", ("--allow-unchecked",))])
def test_an_output_directory_that_cannot_be_made_is_refused_first(kit, tmp_path, verb, opt,
                                                                   extra):
    kit.laid_out()
    refs, before = kit.refs(), tracked_files(kit)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for path, why in (("/proc/x", "cannot be written (No such file or directory in /proc)"),
                      (str(a_file), "is a file: name a directory")):
        err = one_line_error(kit.fork(verb, opt, path, *extra), verb)
        assert err.startswith("fork %s: error: %s %s %s" % (verb, opt, path, why)), err
    assert kit.refs() == refs and tracked_files(kit) == before
    assert a_file.read_text() == "x"


def test_maintainers_without_a_maintainers_file_in_the_base(kit):
    kit.laid_out()          # the synthetic linux-source ships no MAINTAINERS
    before = tracked_files(kit)
    for args in (["maintainers"], ["maintainers", "--check"]):
        err = one_line_error(kit.fork(*args), "maintainers")
        assert "the base tree distro/9.9 (Debian linux-source-9.9 9.9.1-1) has no " \
               "MAINTAINERS" in err, err
        assert "work/" not in err and "tmp" not in err
        assert "tools/fork import" in err
    assert tracked_files(kit) == before


def test_a_base_key_given_twice_is_refused(kit):
    kit.imported()
    base = kit.repo / "patches" / "base"
    base.write_text(base.read_text() + "# moved on\nversion: 9.9.2-1\n")
    refs = kit.refs()
    err = one_line_error(kit.fork("branches"), "branches")
    assert err.endswith("patches/base:6: `version:` is given twice (also on line 2): keep "
                        "one"), err
    assert kit.refs() == refs


# -- the test command without tools/setup ------------------------------------

# dpkg-query -W -f FORMAT PACKAGE...: the packages named in $FAKE_MISSING are
# not installed, every other one is.
FAKE_DPKG_QUERY = r"""#!/usr/bin/python3
import os, sys
args = sys.argv[1:]
fmt = next(a[3:] for a in args if a.startswith("-f="))
missing = os.environ.get("FAKE_MISSING", "").split()
rc = 0
for pkg in (a for a in args if not a.startswith("-")):
    if pkg in missing:
        print("dpkg-query: no packages found matching %s" % pkg, file=sys.stderr)
        rc = 1
        continue
    sys.stdout.write(fmt.replace("${Package}", pkg).replace("${db:Status-Abbrev}", "ii ")
                     .replace("\\n", "\n"))
sys.exit(rc)
"""


def fake_machine(tmp_path, missing):
    """A PATH whose dpkg-query says `missing` are not installed, and whose
    apt-get logs its arguments to tmp_path/apt.log."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dpkg-query").write_text(FAKE_DPKG_QUERY)
    (bin_ / "apt-get").write_text('#!/bin/sh\necho "apt-get $*" >> %s\n' % (tmp_path / "apt.log"))
    for f in bin_.iterdir():
        f.chmod(0o755)
    return dict(os.environ, PATH="%s:%s" % (bin_, os.environ["PATH"]),
                FAKE_MISSING=" ".join(missing))


def packages():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "tools", "packages")) as fh:
        return [w for line in fh for w in line.split("#", 1)[0].split()]


def test_the_tests_stop_at_once_without_tools_setup(tmp_path):
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = fake_machine(tmp_path, ["flex", "qemu-system-x86", "cpio"])
    proc = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_kit_inputs.py::test_readme_verbs_are_the_cli_verbs"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stdout.strip() == "", proc.stdout
    assert proc.stderr.strip() == (
        "ERROR: Debian packages the tests need are not installed: flex cpio "
        "qemu-system-x86: run tools/setup first (it installs the packages of "
        "tools/packages)"), proc.stderr


def test_setup_installs_what_tools_packages_names(tmp_path):
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert {"flex", "cpio", "qemu-system-x86", "python3-pytest"} <= set(packages())
    proc = subprocess.run(["sh", os.path.join(root, "tools", "setup")], capture_output=True,
                          text=True, env=fake_machine(tmp_path, []), timeout=60)
    assert proc.returncode == 0 and proc.stdout == \
        "setup: all %d packages are installed\n" % len(packages()), proc
    (tmp_path / "bin").rename(tmp_path / "old-bin")
    env = fake_machine(tmp_path, ["cpio", "flex"])
    if os.getuid() != 0:
        pytest.skip("tools/setup runs apt-get itself as root only")
    proc = subprocess.run(["sh", os.path.join(root, "tools", "setup")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc
    assert (tmp_path / "apt.log").read_text().splitlines()[-1] == \
        "apt-get install -y -q flex cpio"


def test_an_empty_or_outside_series_directory_is_refused(kit):
    kit.laid_out()
    import shutil
    shutil.copytree(kit.repo / "patches", kit.tmp / "elsewhere")
    before = tracked_files(kit)
    # `--series "$DIR"` with DIR unset used to save the primary series
    err = one_line_error(kit.fork("save", "--series", ""), "save")
    assert "no series directory named (an empty --series)" in err
    # a complete series outside the repository used to be saved there
    for where in (str(kit.tmp / "elsewhere"), "patches/../../elsewhere"):
        err = one_line_error(kit.fork("save", "--series", where), "save")
        assert "series %s is outside this repository" % where in err
    assert tracked_files(kit) == before


def test_export_and_rebase_name_an_empty_patch(kit):
    kit.laid_out()
    first = sorted((kit.repo / "patches").glob("*.patch"))[0]
    first.write_bytes(b"")
    kit.commit_repo("an empty patch")
    refs = kit.refs()
    # export used to call it "differs from" the branch; rebase to replay it
    err = one_line_error(kit.fork("export", "--dry-run", "--allow-unchecked"), "export")
    assert "patches/%s is empty" % first.name in err
    other = kit.tmp / "other.tar.xz"
    from conftest import KERNEL_FILES, make_tarball
    make_tarball(other, dict(KERNEL_FILES, README=(0o644, "a newer point release\n")))
    err = one_line_error(kit.fork("rebase", "--onto", "9.9", "--tarball", other,
                                  "--debian-version", "9.9.2-1", "--no-check"), "rebase")
    assert "patches/%s is empty" % first.name in err
    assert kit.refs() == refs
