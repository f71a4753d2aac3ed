"""Every verb of tools/fork against broken and hostile input, on the
synthetic kits of conftest.py: missing, empty, duplicate, CRLF and
non-UTF-8 files, paths that leave the repository, outputs that cannot be
written, and two runs at once.

Each refusal must be one line, "fork VERB: error: ...", the last line on
stderr, with a non-zero exit and no traceback; and it must change nothing
the user has: the kernel tree's branches and tags (git for-each-ref) and
every file of the project repository (patches, series, base, records) are
the same before and after.
"""

import argparse
import hashlib
import os
import shutil
import subprocess

import pytest

from conftest import DEBVER, FORK, KERNEL_FILES, KVER, PYTHON, make_tarball, sha256
from forkkit import cli

# How each verb is run when the input under test is not one of its arguments.
VERBS = {
    "import": ["import", KVER],
    "branches": ["branches"],
    "save": ["save"],
    "build": ["build"],
    "boot": ["boot"],
    "check": ["check"],
    "bench": ["bench", "--reps", "1", "--quick"],
    "export": ["export", "--dry-run", "--allow-unchecked"],
    "maintainers": ["maintainers"],
    "frag": ["frag", "distro/9.9", "series/9.9"],
    "rebase": ["rebase", "--onto", "9.9", "--no-check"],
    "update": ["update", "--dry-run"],
    "bisect": ["bisect", "distro/9.9", "series/9.9"],
    "compare": ["compare"],
    "fstests": ["fstests", "distro/9.9", "series/9.9", "generic/001"],
    "report": ["report", "--docs", "--check"],
    "lava": ["lava", "status"],
    "scale": ["scale", "--series", "patches", "--no-fstests", "--rounds", "1"],
}
# frag and bisect take their commits as arguments and read no series;
# report reads only records/ and docs/; lava reads an image and its server
SERIES_VERBS = [v for v in VERBS if v not in ("frag", "bisect", "report", "lava")]


def test_every_verb_is_driven():
    assert set(VERBS) == {verb for verb, _ in cli.VERBS}


# -- what must not change ------------------------------------------------------

def state(kit):
    """The kernel tree's refs and a hash of every file of the project repo."""
    files = kit.git("ls-files", "-z", "--cached", "--others", "--exclude-standard",
                    cwd=kit.repo)
    digest = {}
    for path in filter(None, files.split("\0")):
        full = kit.repo / path
        digest[path] = hashlib.sha256(full.read_bytes()).hexdigest() if full.is_file() else None
    return kit.refs() if (kit.ktree / ".git").exists() else {}, digest


def refused(res, verb, *needles):
    """The one-line error of a refused run; asserts it is one."""
    assert res.rc not in (0, None), res
    assert "Traceback" not in res.err, res
    lines = res.err.strip().splitlines()
    assert lines and lines[-1].startswith("fork %s: error: " % verb), res
    assert [l for l in lines if l.startswith("fork %s: error: " % verb)] == lines[-1:], res
    for needle in needles:
        assert needle in lines[-1], (needle, res)
    return lines[-1]


def restore(kit):
    """The project repo as committed (undo the previous case's damage)."""
    kit.git("checkout", "-q", "HEAD", "--", ".", cwd=kit.repo)
    kit.git("clean", "-q", "-f", "-d", cwd=kit.repo)


def refuses_without_change(kit, verb, args, *needles, env=None):
    before = state(kit)
    err = refused(kit.fork(*args, env=env), verb, *needles)
    assert state(kit) == before, err
    return err


# -- broken series files, for every verb that reads the series ---------------

def first_patch(kit):
    return sorted((kit.repo / "patches").glob("*.patch"))[0]


def append(path, data):
    path.write_bytes(path.read_bytes() + data)


SERIES_INPUTS = [
    ("base missing", lambda kit: (kit.repo / "patches" / "base").unlink(),
     "no series at patches (missing "),
    ("base empty", lambda kit: (kit.repo / "patches" / "base").write_bytes(b""),
     "missing `package:` line"),
    ("base key twice", lambda kit: append(kit.repo / "patches" / "base", b"version: 9.9.9-1\n"),
     "`version:` is given twice"),
    ("base not UTF-8", lambda kit: append(kit.repo / "patches" / "base", b"# \xff\n"),
     "base is not UTF-8 text"),
    ("series not UTF-8", lambda kit: append(kit.repo / "patches" / "series", b"# \xe9t\xe9\n"),
     "series is not UTF-8 text"),
    ("series names a missing file", lambda kit: first_patch(kit).unlink(),
     "which does not exist"),
    ("series names a patch twice",
     lambda kit: append(kit.repo / "patches" / "series", first_patch(kit).name.encode() + b"\n"),
     "twice"),
    ("series entry outside the directory",
     lambda kit: append(kit.repo / "patches" / "series", b"../../outside.patch\n"),
     "../../outside.patch"),
]


@pytest.mark.parametrize("verb", SERIES_VERBS)
def test_broken_series_files(kit, verb):
    kit.laid_out()
    (kit.tmp / "outside.patch").write_bytes(first_patch(kit).read_bytes())
    for name, damage, needle in SERIES_INPUTS:
        restore(kit)
        damage(kit)
        refuses_without_change(kit, verb, VERBS[verb], needle)


def series_options():
    """The verbs that take a series directory (--series), from the parser."""
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [verb for verb, p in sub.choices.items()
            if any("--series" in a.option_strings for a in p._actions)]


@pytest.mark.parametrize("verb", series_options())
def test_series_directory_outside_or_missing(kit, verb):
    kit.laid_out()
    # a complete series, but outside the repository: save would write there
    shutil.copytree(kit.repo / "patches", kit.tmp / "elsewhere")
    for where, needle in (("../..", "is outside this repository"),
                          ("/etc", "is outside this repository"),
                          ("patches/missing", "no series at"),
                          ("", "an empty --series"),
                          (str(kit.tmp / "elsewhere"), "is outside this repository"),
                          ("patches/../../elsewhere", "is outside this repository")):
        refuses_without_change(kit, verb, VERBS[verb] + ["--series", where], needle)


def test_crlf_base_and_series_files_read_as_lf(kit):
    kit.laid_out()

    def branches():
        return {r: c for r, c in kit.refs().items() if r.startswith(("refs/heads/", "refs/tags/"))}
    before = branches()
    for name in ("base", "series"):
        path = kit.repo / "patches" / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    res = kit.fork("branches")
    assert res.rc == 0, res
    assert branches() == before        # the same version, sha256 and patches: nothing moved


# -- patch files that cannot be mails ------------------------------------------

PATCH_INPUTS = [
    ("empty", lambda p: p.write_bytes(b""), "is empty"),
    ("CRLF", lambda p: p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n")),
     "has CRLF line endings"),
    ("whitespace only", lambda p: p.write_bytes(b"\n \n"), "is empty"),
]


@pytest.mark.parametrize("verb", ["branches", "export", "rebase"])
def test_patch_files_that_are_no_mails(kit, verb):
    kit.laid_out()
    args = VERBS[verb]
    if verb == "rebase":        # onto another snapshot: the patches are replayed
        other = make_tarball(kit.tmp / "b.tar.xz",
                             dict(KERNEL_FILES, README=(0o644, "a newer point release\n")))
        args = args + ["--tarball", other, "--debian-version", "9.9.2-1"]
    committed = kit.git("rev-parse", "HEAD", cwd=kit.repo)
    for name, damage, needle in PATCH_INPUTS:
        kit.git("reset", "-q", "--hard", committed, cwd=kit.repo)
        damage(first_patch(kit))
        if verb == "rebase":    # which refuses a dirty patches/ first
            kit.commit_repo("damage: %s" % name)
        refuses_without_change(kit, verb, args, needle, "patches/" + first_patch(kit).name)


# -- outputs that cannot be written ------------------------------------------------

FILE_OUTPUTS = [("check", "--json"), ("check", "--markdown"), ("compare", "--output"),
                ("frag", "--json"), ("fstests", "--json"), ("fstests", "--markdown")]
DIR_OUTPUTS = [("bench", "--out"), ("export", "--outdir")]


def logs(kit):
    d = kit.work / "logs"
    return sorted(os.listdir(d)) if d.is_dir() else []


@pytest.mark.parametrize("verb, opt", FILE_OUTPUTS + DIR_OUTPUTS)
def test_outputs_that_cannot_be_written(kit, tmp_path, verb, opt):
    kit.laid_out()
    a_dir = tmp_path / "a-dir"
    a_dir.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    if (verb, opt) in DIR_OUTPUTS:
        bad = [("/proc/x", "cannot be written"), (str(a_file), "is a file")]
    else:
        bad = [("/dev/full", "cannot be written (No space left on device)"),
               ("/proc/version", "cannot be written (Input/output error)"),
               (str(a_dir), "is a directory"),
               (str(tmp_path / "no-dir" / "f"), "does not exist")]
    for path, needle in bad:
        before = logs(kit)
        refuses_without_change(kit, verb, VERBS[verb] + [opt, path], " %s" % path, needle)
        assert logs(kit) == before, "work was done before the output was refused"
    assert a_file.read_text() == "kept\n" and os.listdir(a_dir) == []


# -- arguments that name nothing usable ------------------------------------------

def test_import_inputs(kit, tmp_path):
    kit.laid_out()
    empty = tmp_path / "empty.tar.xz"
    empty.write_bytes(b"")
    crlf = tmp_path / "crlf.tar.xz"
    crlf.write_bytes(b"not a tarball\r\n")
    other = make_tarball(tmp_path / "other.tar.xz",
                         dict(KERNEL_FILES, README=(0o644, "a newer point release\n")))
    kit.write_base(sha256(other))
    kit.commit_repo("the base names the other tarball")
    for args, needle in (
            (["import", "--tarball", tmp_path / "missing.tar.xz", "--debian-version", DEBVER],
             "does not exist"),
            (["import", "--tarball", empty, "--debian-version", "9.9.3-1", "--update"],
             "empty.tar.xz"),
            (["import", "--tarball", crlf, "--debian-version", "9.9.3-1", "--update"],
             "crlf.tar.xz"),
            (["import", "--tarball", tmp_path, "--debian-version", "9.9.3-1"], "does not exist"),
            (["import", "../../9.9"], "unknown version"),
            (["import", "9.9\udcff"], "unknown version"),
            (["import", "--tarball", empty], "--debian-version"),
            # not the tarball patches/base names; another snapshot than distro/9.9's
            (["import", "--tarball", empty, "--debian-version", DEBVER], "patches/base expects"),
            (["import", "--tarball", other, "--debian-version", "9.9.2-1"],
             "already holds another snapshot")):
        refuses_without_change(kit, "import", [str(a) for a in args], needle)


@pytest.mark.parametrize("verb, args, needle", [
    ("build", ["build", "no-such-branch"], "unknown revision"),
    ("boot", ["boot", "--kernel", "/nonexistent/bzImage"], "/nonexistent/bzImage"),
    ("check", ["check", "no-such-branch"], "no-such-branch"),
    ("bisect", ["bisect", "distro/9.9", "no-such-branch"], "no-such-branch"),
    ("frag", ["frag", "no-such-branch"], "no-such-branch"),
    ("save", ["save", "--from", "no-such-branch"], "no-such-branch"),
    ("compare", ["compare", "--against", "../../etc"], "is outside this repository"),
    ("compare", ["compare", "--against", "backports/none"], "no series at backports/none"),
    ("rebase", ["rebase", "--onto", "../../9.9"], "unknown version"),
    ("update", ["update", "--to", "../../9.9"], "../../9.9"),
    ("fstests", ["fstests", "distro/9.9", "no-such-branch", "generic/001"], "no-such-branch"),
    ("lava", ["lava", "job", "/nonexistent/bzImage", "--out", "lava-job"], "/nonexistent/bzImage"),
    ("lava", ["lava", "job", "/nonexistent/bzImage"], "--out DIR"),
])
def test_arguments_that_name_nothing(kit, verb, args, needle):
    kit.laid_out()
    refuses_without_change(kit, verb, args, needle)


# -- two runs at once -------------------------------------------------------------

def run_twice(kit, *args):
    procs = [subprocess.Popen([PYTHON, str(FORK)] + [str(a) for a in args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    return [p.communicate(timeout=300) + (p.returncode,) for p in procs]


@pytest.mark.parametrize("verb", ["import", "branches", "build"])
def test_two_runs_at_once(kit, verb):
    kit.laid_out()
    if verb == "import":
        # a fresh tree, and a slow tar: both runs are inside the import at once
        kit.git("update-ref", "-d", "refs/heads/distro/9.9")
        kit.git("tag", "-d", "debian/%s" % DEBVER)
        tar = kit.bin / "tar"
        tar.write_text("#!/bin/sh\nsleep 1\nexec /bin/tar \"$@\"\n")
        tar.chmod(0o755)
    before = state(kit)
    results = run_twice(kit, *VERBS[verb])
    # the second run waits for the first (import, build) or redoes the same
    # deterministic work (branches): both pass, and they agree
    assert [rc for _, _, rc in results] == [0, 0], results
    assert not any("Traceback" in err for _, err, _ in results), results
    assert results[0][0] == results[1][0], results
    if verb == "import":
        commit = results[0][0].strip()
        assert kit.rev("refs/heads/distro/9.9") == commit
        assert kit.rev("refs/tags/debian/%s^{commit}" % DEBVER) == commit
    else:
        assert state(kit) == before
