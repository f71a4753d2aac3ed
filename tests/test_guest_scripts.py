"""The guest scripts: the text every guest test, frag and bench hand the
guest.

The sha256 values below are those of the scripts as the kit rendered them
when they were still Python strings (guesttests.TESTS, frag.SCRIPT,
benchlib.SCRIPT_HEAD and guest_script()), dumped from that code before
the scripts became files in ci/guest/scripts/: what a test runs in the
guest did not change with the move, byte for byte, for every test and
every parameter set.  A script that is meant to change changes its value
here, in the same commit.
"""

import hashlib
import itertools
import shutil
from pathlib import Path

import pytest

from forkkit.core.errors import ForkError
from forkkit.guest import guesttests, scripts
from forkkit.verify import benchlib, frag

REPO = Path(__file__).resolve().parent.parent

RENDERED = {
    "smoke": "3211a3b10caa00e6b254545696662e6c73dc94c21918ae4e5dc0ea834e546bdd",
    "stress": "ba990f55208813ecf67d471455bd3d7aa17f4d4762727d6872537a146c6cc49e",
    "seed": "84b1ccbb463e6b5b9a005910daa6ad3477bf93921c0a2573f18a0cd36e7abdc7",
    "repair-remount": "02c92d89d95808bb19b079ab1446bc0be586aea6ca3a801985620d3770d1954b",
    "emergency-remount": "7e89587af2745f4461368ca2cd357cfe93d690d75108a0d34be364bcac58089a",
    "fuzz-first-data-block": "ceea17f079b37bf950a9159290aa9f28a77eb6ea75d96ef929e4b38fd331497a",
    "faults-mount": "c673ce373b151c7917a9b1ae91c3332db8288ab49f32dcb158d0bf96708b4795",
    "faults-io": "0304c27318576ad251aa4ae740e157d773a7bdd50b980543e668a8e0726aa49d",
    "faults-enospc": "6f5b93a2a0044a1d0bf11cee592b1de02d8e04d1f6210364b7f092cd316121b5",
    "rsv-race": "1f51d713b7459b132e9e6c863eee27ac9ca49a286dcefae2111ded6c2e445d89",
    "dirsync": "978dfc6bfd7f03a39599b29710cc3fe32676bf6559be5d837cb30ba5fee10a56",
    "minix-dirsync": "3a95c2963401f99fd22b5f5c37e2dbf2a8c7320e8e624dfdc2796dff6ca509cc",
    "ufs-dirsync": "182068878879cb6b6b90f509c3c51e849bf494e62cfc207b24c16470a7abe3c3",
    "minixdf-overhead": "22a44079e5a55228419f93d3da43139b0132657bdd303180d038403f5444c2a8",
    "dio-dsync-size": "c417e924acef8d9bc74e10dea34260e302d532819d80e63db32e4d1f06e97b44",
    "dio-freed-indirect": "9b6f9937f780f286f2e43b8c0b48398fec77daf42b2f50de5f15d3f097bd3217",
}
FRAG = "94fc07f63f78e3a0cd19bb1dfc8ef7d3f01ba565ff910a347c1af2b8d0393c35"
# bench: (quick, mode, workloads, lockstat, runs) -> sha256 of guest_script()
BENCH = {
    (False, "wall", None, False, 1):
        "bc24549c0103e05172d3c15e7b669a2094d75d4a21e89c51d02af60867619112",
    (True, "wall", None, True, 1):
        "e14a1bb7a72486a23593b69b8a5f1bf54df8298eae8112356e61e274a5215b94",
    (False, "icount", ("seed", "dbench"), False, 3):
        "ba5b906cbcc644401a9dbb5e9dff5f05d5a8fbb3ead88c6ee7e3e3670c928afb",
    (True, "wall", ("statfs",), False, 2):
        "c5d8ec26a820c1ddeb0fd60f22abaeee76be6f8b772d7053c0fb8b89ed85e3a7",
    # no point at all
    None: "ccae3c307002aff1c5e1bb784b3c3b9bf9d17b350d65bc43cc666d77dab9859c",
}
# every script of the grid below, each followed by a NUL, hashed as one
BENCH_GRID = "3186da1d3b6e7505dda223b86b61db81419eefb07cac2a7604cc7105d0df942a"


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(autouse=True)
def this_repo(monkeypatch):
    monkeypatch.setenv("FORK_REPO", str(REPO))


def test_every_guest_test_renders_the_script_it_ran_before():
    assert sorted(guesttests.TESTS) == sorted(RENDERED)
    got = {name: sha(guesttests.spec(name).script) for name in guesttests.TESTS}
    assert {n: h for n, h in got.items() if RENDERED[n] != h} == {}


def test_frag_renders_the_script_it_ran_before():
    assert sha(frag.script()) == FRAG


def bench_script(quick, mode, workloads, lockstat, runs):
    sizes = benchlib.sizes_for(quick, mode)
    if workloads == ():
        return benchlib.guest_script([], lockstat=lockstat, runs=runs)
    points = benchlib.make_points(sizes, list(workloads) if workloads else None)
    return benchlib.guest_script(points, lockstat=lockstat, runs=runs)


@pytest.mark.parametrize("case", list(BENCH), ids=str)
def test_bench_renders_the_script_it_ran_before(case):
    text = bench_script(*case) if case else benchlib.guest_script([])
    assert sha(text) == BENCH[case]


def test_bench_renders_every_script_of_the_grid_as_before():
    """Both sizes, both clock modes, every set of workloads (none too),
    with and without lockstat, 1 to 3 runs."""
    grid = hashlib.sha256()
    for quick in (False, True):
        for mode in ("wall", "icount"):
            for r in range(len(benchlib.WORKLOADS) + 1):
                for wls in itertools.combinations(benchlib.WORKLOADS, r):
                    for lockstat in (False, True):
                        for runs in (1, 2, 3):
                            grid.update(bench_script(quick, mode, wls, lockstat, runs).encode()
                                        + b"\0")
    assert grid.hexdigest() == BENCH_GRID


# ---------------------------------------------------------------------------
# the templates: every script is a file, named by the table, used

SCRIPTS = REPO / "ci" / "guest" / "scripts"


def test_every_guest_test_names_a_template_of_ci_guest_scripts():
    for name, entry in guesttests.TESTS.items():
        assert scripts.NAME.fullmatch(entry[2]) and (SCRIPTS / entry[2]).is_file(), name


def test_every_template_is_used_and_described():
    used = set()
    for name in guesttests.TESTS:
        used.update(guesttests.render(name)[1])
    used.add(frag.SCRIPT_FILE)
    used.update(scripts.render(benchlib.SCRIPT_FILE, {"LOADFILE": "x", "POINTS": 0,
                                                      "LINES": []})[1])
    used.update(["fstests.sh", "fstests-run.sh"])     # both asserted byte for byte below
    assert sorted(p.name for p in SCRIPTS.glob("*.sh")) == sorted(used)
    readme = (SCRIPTS / "README.md").read_text()
    assert [f for f in sorted(used) if "`%s`" % f not in readme] == []


# ---------------------------------------------------------------------------
# render(): what is replaced, and what is refused

@pytest.fixture
def tmpl(tmp_path, monkeypatch):
    """A project repository of its own: write(name, text) adds a template."""
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    d = tmp_path / "ci" / "guest" / "scripts"
    d.mkdir(parents=True)

    def write(name, text):
        (d / name).write_text(text)
    return write


def test_render_fills_placeholders_lists_and_includes(tmpl):
    tmpl("lib.sh", "f() { echo @WHO@; }\n")
    tmpl("t.sh", "set -e\n@include lib.sh@\nmount @OPTS@ /dev/vda /mnt\n@REPORT@\n"
                 "@CMDS@\necho n=@N@ @N@\n@NONE@\nend\n")
    text, files = scripts.render("t.sh", {"WHO": "me", "OPTS": "-t ext2", "REPORT": "",
                                          "CMDS": ["a", "b c"], "N": 3, "NONE": []})
    assert text == ("set -e\nf() { echo me; }\nmount -t ext2 /dev/vda /mnt\n\n"
                    "a\nb c\necho n=3 3\nend\n")
    assert files == ["t.sh", "lib.sh"]
    # no placeholder, no parameter: the file as it is, byte for byte
    tmpl("plain.sh", "echo 'a@b' \\n %s %%s\n")
    assert scripts.render("plain.sh") == ("echo 'a@b' \\n %s %%s\n", ["plain.sh"])


@pytest.mark.parametrize("text,params,error", [
    ("echo @X@\n", {}, r"t.sh: @X@ has no value: give the parameter X"),
    ("echo\n", {"X": "1"}, r"t.sh: no @X@ in t.sh: drop the parameter or use it"),
    ("echo @X@\n", {"X": ["a"]}, r"@X@ is a list of lines: put it alone on its line"),
    ("echo @X@\n", {"X": None}, r"parameter X is None: give a text, a number or a list"),
    ("echo @x@\n", {"x": "1"}, r"parameter 'x' is not a NAME of capitals"),
    ("@include gone.sh@\n", {}, r"ci/guest/scripts/gone.sh is missing in .*: restore it from "
                                r"git \(git checkout -- ci/guest/scripts/gone.sh\)"),
    ("@include t.sh@\n", {}, r"guest script t.sh includes itself \(t.sh -> t.sh\)"),
])
def test_render_refuses_in_one_line(tmpl, text, params, error):
    tmpl("t.sh", text)
    with pytest.raises(ForkError, match=error):
        scripts.render("t.sh", params)


def test_render_reads_only_a_file_of_the_directory(tmpl):
    for name in ("../init", "t", "/etc/passwd"):
        with pytest.raises(ForkError, match="name a file of ci/guest/scripts/"):
            scripts.render(name)


# ---------------------------------------------------------------------------
# test_key(): a test's own templates, not the others'

@pytest.fixture
def guest_repo(tmp_path, monkeypatch):
    """ci/guest as the project has it (programs, init, scripts), copied."""
    top = tmp_path / "ci" / "guest"
    shutil.copytree(REPO / "ci" / "guest", top, ignore=shutil.ignore_patterns("out"))
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    return top


def keys():
    return {name: guesttests.test_key(name) for name in guesttests.TESTS}


def changed(before):
    return sorted(n for n, k in keys().items() if before[n] != k)


def append(path, text):
    with open(path, "a") as fh:
        fh.write(text)


def test_an_edit_of_a_script_changes_the_key_of_the_tests_made_of_it_only(guest_repo):
    before = keys()
    assert len(set(before.values())) == len(before)
    append(guest_repo / "scripts" / "dirsync.sh", "sync\n")
    assert changed(before) == ["dirsync", "minix-dirsync", "ufs-dirsync"]
    before = keys()
    append(guest_repo / "scripts" / "faults-setup.sh", "sync\n")
    assert changed(before) == ["faults-enospc", "faults-mount"]
    before = keys()
    append(guest_repo / "scripts" / "smoke.sh", "sync\n")
    assert changed(before) == ["smoke"]
    # a file no test is made of: no key changes
    before = keys()
    append(guest_repo / "scripts" / "README.md", "more\n")
    (guest_repo / "scripts" / "new.sh").write_text("echo new\n")
    append(guest_repo / "scripts" / "frag.sh", "sync\n")
    assert changed(before) == []


def test_an_edit_of_the_guest_programs_or_init_changes_every_key(guest_repo):
    for path in (guest_repo / "init", guest_repo / "stress.c", guest_repo / "Makefile"):
        before = keys()
        append(path, "\n")
        assert changed(before) == sorted(guesttests.TESTS), path
    # a table entry's parameters are in the key
    before = keys()
    entry = guesttests.TESTS["minix-dirsync"]
    params = dict(entry[3]["params"], AT_LEAST=999)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(guesttests.TESTS, "minix-dirsync",
                   entry[:3] + (dict(entry[3], params=params),))
        assert changed(before) == ["minix-dirsync"]


# the fstests guest script: (tests, time limit, block size) -> sha256.  An
# edit of its templates is a new harness (each boot's record names its
# harness key; the key is no part of a record's identity, so records made
# with an earlier harness still resume).  The harness before the watchdog
# cut a test overrunning the time limit was 73366b0d6a34cbcc, the one
# every boot recorded until then names.
FSTESTS = {(("generic/001", "generic/002"), 1200, None):
           "dd935301ce72222fb7fe38a3f98212d648e1da69abc67236d76d34d762da5da6",
           (("TESTS",), 1, None): "31b9c1f8f4ecc7aff76eebd8860a321313a03c3ce00ec50ebc85511bbd94a70a",
           (("x",), 5, 1024): "902666cb4fb4568045aa7f66ea88b379a321ac94291994004949544421256df3"}


def test_fstests_renders_the_script_it_ran_before():
    from forkkit.verify import fstests, fsrecord
    got = {k: sha(fstests.guest_script(list(k[0]), k[1],
                                       fstests.make_profile(k[2]) if k[2] else None))
           for k in FSTESTS}
    assert got == FSTESTS
    assert fstests.harness_key() == "31b9c1f8f4ecc7af"
    assert "harness" not in fsrecord.IDENTITY
