"""The committed records (records/): what they say, whatever their layout.

records/ holds the check tables (records/checks/), the fstests records
(records/fstests/) and the bench runs (records/bench/), as records/README.md
describes them.  The layout and the form of the files may change (they
moved under records/, their host paths became relative, each boot's guest
script became one file per harness); what they say may not:

* every check cell's verdict over all its runs, and what failed each
  failing run, at AFTER (the move's last commit) are those of the records
  at BEFORE, the last commit with the old layout (checks/, fstests/,
  benchmarks/), read with today's loaders (records added since have no
  earlier verdict to compare with);
* every fstests record's test statuses, totals and boots at AFTER are
  those at BEFORE;
* every records/fstests/<ver>/quick.md is what `fstests --markdown` writes
  from the records beside it (all but the fstests URL, which no record
  holds), so the records regenerate it byte for byte;
* every guest script a boot names (by sha256) is one the kit's code
  renders: the current kit's for its harness, or one that the scripts
  kept at LAST_SCRIPTS (the last commit that kept them in records/) holds
  with those bytes.

And they are data: no path of the machine that made them (nor in any
document), no program (no guest script either), no name that says when in
the work they were made.
"""

import collections
import glob
import hashlib
import json
import lzma
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.core import paths  # noqa: E402
from forkkit.verify import checkrecords, fsrecord, fstests  # noqa: E402
from forkkit.verify import fstests_run as cmd_fstests  # noqa: E402

# The last commit with the records at checks/, fstests/ and benchmarks/.
BEFORE = "15e773d8ab2b960b743cc5988b0c574db9b28a1d"
# where each kind of record was at BEFORE, and where it is now
OLD_LAYOUT = {"checks": "records/checks", "fstests": "records/fstests"}
# The last commit of the move to records/.
AFTER = "c115545357bb6089be37da833317875d4a656d66"
NEW_LAYOUT = {"records/checks": "records/checks", "records/fstests": "records/fstests"}
# The last commit that kept the guest scripts of the boots in records/
# (records/fstests/scripts/<sha256>.sh); records hold no code since.
LAST_SCRIPTS = "b0e7bba59ba62d5cfa10b0dab5d94dd7f872033f"
FSTESTS = REPO / "records" / "fstests"


def old_records(dest, commit=BEFORE, layout=OLD_LAYOUT):
    """The check and fstests records of `commit`, laid out as records/ is
    now under `dest`; skips when this clone lacks it (a shallow one)."""
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", commit + "^{commit}"],
                      capture_output=True).returncode != 0:
        pytest.skip("commit %s is not in this clone (fetch the whole history)" % commit[:12])
    tar = dest / "old.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(tar), commit] + list(layout),
                   check=True)
    with tarfile.open(str(tar)) as tf:
        tf.extractall(str(dest / "old"))
    for old, new in layout.items():
        (dest / new).parent.mkdir(parents=True, exist_ok=True)
        (dest / "old" / old).rename(dest / new)
    return dest


def without_paths(text):
    """A verdict with the path it names left out: "e2fsck -fn exit 4 (...)"."""
    return re.sub(r" \([^()]*/[^()]*\)", "", text)


def check_summary(root):
    """{cell: [verdict, runs, passed runs, [what failed, base shows it]]}
    of every check record under `root`/records/checks."""
    cells = checkrecords.cells(str(root))
    out = {}
    for key, c in cells.items():
        failed = sorted([without_paths(what), bool(ev)]
                        for _, what, ev in checkrecords.failures(cells, key))
        out["|".join(key)] = [c["verdict"], len(c["runs"]),
                              sum(1 for _, run in c["runs"] if run["passed"]), failed]
    return out


def fstests_summary(root):
    """{<ver>/<kernel>: statuses, totals and boots} of every fstests record
    under `root`/records/fstests."""
    out = {}
    top = root / "records" / "fstests"
    for kj in sorted(top.glob("*/*/kernel.json")):
        rec = kj.parent
        tests, boots = fsrecord.load(str(rec), json.loads(kj.read_text()))
        out[rec.relative_to(top).as_posix()] = {
            "tests": {t: [r["status"], r.get("seconds")] for t, r in tests.items()},
            "totals": dict(collections.Counter(r["status"] for r in tests.values())),
            "boots": [[b["n"], b["side"], b.get("id"), b.get("tests_asked"), b.get("tests"),
                       b.get("limit"), b.get("seconds"), b.get("harness"),
                       {d: without_paths(v) for d, v in b.get("e2fsck", {}).items()},
                       b.get("kernel_reports")] for b in boots]}
    return out


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    return old_records(tmp_path_factory.mktemp("before"))


@pytest.fixture(scope="module")
def after(tmp_path_factory):
    return old_records(tmp_path_factory.mktemp("after"), AFTER, NEW_LAYOUT)


def test_every_check_verdict_is_the_one_before(before, after):
    old, new = check_summary(before), check_summary(after)
    assert len(new) > 300
    assert {k: v for k, v in new.items() if old.get(k) != v} == {}
    assert sorted(old) == sorted(new)


def test_every_fstests_record_says_what_it_said_before(before, after):
    old, new = fstests_summary(before), fstests_summary(after)
    assert len(new) >= 8
    assert sorted(old) == sorted(new)
    for rec in new:
        assert old[rec] == new[rec], rec


# ---------------------------------------------------------------------------
# quick.md from the records

def quick_docs():
    return sorted(glob.glob(str(REPO / "records" / "fstests" / "*" / "quick.md")))


def header(text, name):
    (line,) = [l for l in text.splitlines() if l.startswith("- %s: " % name)]
    return line[len("- %s: " % name):]


def regenerate(md):
    """quick.md as `fstests --markdown` writes it from the two records in
    its directory (the kernels its header names), the tests of its table
    and the command and fstests URL of its header."""
    text = Path(md).read_text()
    d = Path(md).parent
    command = header(text, "reproduce").strip("`")
    record = d.relative_to(REPO).as_posix()
    assert "--record %s" % record in command, (md, command)
    chosen = re.findall(r"^\| ([a-z0-9]+/\d+) \| ", text.split("| test | base |")[1], re.M)
    meta, results, boots = {}, {}, {}
    for side in cmd_fstests.SIDES:
        image = re.search(r"image sha256 ([0-9a-f]{16})$", header(text, side)).group(1)
        (rec,) = [p for p in d.glob(image + "-*") if p.is_dir()]
        ident = json.loads((rec / "kernel.json").read_text())
        results[side], got = fsrecord.load(str(rec), ident)
        boots[side] = [(b, [b["console"]] if b.get("console") else []) for b in got
                       if set(b.get("tests", [])) & set(chosen)]
        meta[side] = {k: ident[k] for k in ("rev", "commit", "image_sha256")}
    consoles = [(side, b, paths) for side in cmd_fstests.SIDES for b, paths in boots[side]]
    kinds, missing = fstests.kernel_reports(consoles, chosen)
    selection = re.match(r"(.*) \(\d+ tests, (\d+) excluded", header(text, "selection"))
    meta.update(command=command, fstests_url=header(text, "fstests").split(" at ")[0],
                fstests_commit=ident["fstests_commit"], fstests_patches=ident["fstests_patches"],
                root_key=ident["root_key"], root_packages=ident["root_packages"],
                suite=fsrootsuite(), selection=selection.group(1), record=record,
                e2fsck=cmd_fstests.e2fsck_summary([(s, b) for s, b, _ in consoles]),
                report_kinds=kinds,
                reports_summary=fstests.reports_summary(kinds, missing,
                                                        len(consoles) - len(missing)))
    excluded = {"excluded-%d" % n: "" for n in range(int(selection.group(2)))}
    rows = fstests.compare(chosen, results["base"], results["series"])
    return fstests.markdown(meta, rows, excluded)


def fsrootsuite():
    conf = (REPO / "ci" / "fstests" / "source.conf").read_text()
    return re.search(r"^SUITE=(\S+)$", conf, re.M).group(1)


@pytest.mark.parametrize("md", quick_docs(), ids=lambda p: Path(p).parent.name)
def test_quick_md_is_what_its_records_write(md):
    assert regenerate(md) == Path(md).read_text()


def test_every_version_has_its_quick_md():
    assert [Path(p).parent.name for p in quick_docs()] == ["6.1", "6.12", "7.3"]


# ---------------------------------------------------------------------------
# records as data: no host paths, no code, no history in names, scripts once

def tracked(*paths):
    return subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--"] + list(paths),
                          capture_output=True, text=True, check=True).stdout.split("\0")[:-1]


def text_of(rel):
    """A tracked file's text (an .xz one's decompressed), None if binary
    (or taken away in this checkout)."""
    if not (REPO / rel).is_file():
        return None
    data = (REPO / rel).read_bytes()
    if rel.endswith(".xz"):
        data = lzma.decompress(data)
    return None if b"\0" in data else data.decode(errors="replace")


# an absolute path into a host's directories, where a path begins
HOST_PATH = re.compile(r"(?<![\w.~$/-])/(?:work|tmp|home|root)/[^\s\"'`)\]]*")
# the lock file the kit's bench command takes: the same on every machine
SHARED_PATHS = ("/tmp/heavy.lock",)


def host_paths(rels):
    return ["%s: %s" % (rel, p) for rel in rels for p in HOST_PATH.findall(text_of(rel) or "")
            if p not in SHARED_PATHS]


def test_no_record_names_a_path_of_the_machine_that_made_it():
    rels = tracked("records")
    assert len(rels) > 250
    assert host_paths(rels) == []


def test_no_document_or_data_file_names_a_host_path():
    """The whole repository but its code: tools/, tests/, ci/ and scripts
    hold guest paths (/tmp/stress.out in the guest) and test inputs."""
    code = ("tools/", "tests/", "ci/", ".")
    rels = [r for r in tracked() if not r.startswith(code)
            and not r.endswith((".py", ".sh", ".c", ".h"))]
    assert "CHECKS.md" in rels and "README.md" in rels
    assert host_paths(rels) == []


def test_host_paths_are_found():
    """The scan finds what the old records held, and not guest paths."""
    assert HOST_PATH.findall('"log": "/work/main/work/logs/check-x.log",') == \
        ["/work/main/work/logs/check-x.log"]
    assert HOST_PATH.findall("e2fsck: /home/u/fork/work/fstests/kernels/k/boot-3/test.img: 11") \
        == ["/home/u/fork/work/fstests/kernels/k/boot-3/test.img:"]
    assert HOST_PATH.findall("mount -t tmpfs tmpfs /mnt/root/tmp; HOME=/root; $tmp/root/x") == []


def test_no_code_in_records():
    """Records are data: no program, no guest script (a boot names its
    script by sha256); the bench .cmd files are the command of their run."""
    rels = tracked("records")
    code = [r for r in rels if r.endswith((".py", ".pl", ".c", ".h", ".sh"))
            or (text_of(r) or "").startswith("#!") and not r.endswith(".cmd")]
    assert code == []
    assert [r for r in rels if r.endswith(".cmd")]      # the scan saw the commands


HISTORY_NAME = re.compile(r"(?i)(?:^|[-_.])(?:s\d+|stop\d*|before|sitting\w*|session\w*|"
                          r"run\d+)(?:[-_.]|$)")


def test_no_name_in_records_says_when_in_the_work_it_was_made():
    parts = {part for r in tracked("records") for part in r.split("/")}
    assert [p for p in sorted(parts) if HISTORY_NAME.search(p)] == []
    assert HISTORY_NAME.search("before-s25") and HISTORY_NAME.search("faults-io-s25-base.json")
    assert HISTORY_NAME.search("kcsan-stress-run1.json") and HISTORY_NAME.search("v3-s19")


def named_scripts():
    """{sha256: [(records dir, boot)]} of every boot that names its guest
    script."""
    named = collections.defaultdict(list)
    for bj in FSTESTS.glob("*/*/boots.json"):
        for b in json.loads(bj.read_text()):
            if b.get("guest_script"):
                named[b["guest_script"]].append((bj.parent, b))
            else:       # a boot of a kit that did not name its script
                assert not b.get("harness") or b.get("kit") is None, (bj, b["n"])
    return named


def profile_of(recdir):
    """The fstests profile that the record at `recdir` names (its
    kernel.json's key), or False for one this kit does not make."""
    key = json.loads((recdir / "kernel.json").read_text())["profile"]
    for block_size in (None,) + tuple(fstests.BLOCK_SIZES):
        if fstests.profile_key(fstests.make_profile(block_size)) == key:
            return fstests.make_profile(block_size)
    return False


def test_each_boot_names_a_script_of_its_harness():
    named = named_scripts()
    assert len(named) >= 3 and sum(len(v) for v in named.values()) > 30
    for sha, boots in named.items():
        assert re.match(r"^[0-9a-f]{64}$", sha)
        for recdir, b in boots:
            assert sha.startswith(b["harness"]), (recdir, b["n"])
            assert not list(recdir.glob("boot-*/guest-script.sh"))


def test_each_named_script_is_one_the_kits_code_renders():
    """A boot of the current harness names what this kit renders for its
    record's profile; one of an older harness names a script kept at
    LAST_SCRIPTS, whose bytes have that sha256 and are the kept form (no
    test list, a limit of 1), or names the clean kit commit of this
    repository whose code renders it."""
    current = 0
    for sha, boots in sorted(named_scripts().items()):
        recdir, b = boots[0]
        profile = profile_of(recdir)
        if profile is not False and b["harness"] == fstests.harness_key(profile):
            text = fstests.guest_script(["TESTS"], 1, profile)
            assert hashlib.sha256(text.encode()).hexdigest() == sha, recdir
            current += 1
            continue
        if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e",
                           LAST_SCRIPTS + "^{commit}"], capture_output=True).returncode:
            pytest.skip("commit %s is not in this clone (fetch the whole history)"
                        % LAST_SCRIPTS[:12])
        kept = subprocess.run(["git", "-C", str(REPO), "show", "%s:records/fstests/scripts/%s.sh"
                               % (LAST_SCRIPTS, sha)], capture_output=True)
        if kept.returncode:
            for recdir, b in boots:
                kit = b.get("kit_commit") or {}
                assert kit.get("commit") and kit.get("dirty") is False, \
                    ("no code renders the script of", recdir, b["n"])
                assert subprocess.run(["git", "-C", str(REPO), "cat-file", "-e",
                                       kit["commit"] + "^{commit}"]).returncode == 0
            continue
        data = kept.stdout
        assert hashlib.sha256(data).hexdigest() == sha
        assert fsrecord.script_template(data.decode()) == (data.decode(), 1)
    assert current >= 1         # the records include boots of this very harness


def test_a_boots_script_is_named_not_kept(tmp_path):
    """script_identity() of a boot's full script (tests and limit) is the
    sha256 of the text the harness key hashes, and its limit; it writes
    nothing."""
    profile = fstests.make_profile(1024)
    path = tmp_path / "guest-script.sh"
    path.write_text(fstests.guest_script(["generic/001", "generic/002"], 777, profile))
    ident = fsrecord.script_identity(str(path))
    assert ident["time_limit_s"] == 777
    assert ident["guest_script"][:16] == fstests.harness_key(profile)
    assert ident["guest_script"] == hashlib.sha256(
        fstests.guest_script(["TESTS"], 1, profile).encode()).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["guest-script.sh"]


@pytest.mark.parametrize("profile", [None, fstests.make_profile(1024)])
def test_a_guest_scripts_kept_form_is_what_the_harness_key_hashes(profile):
    script = fstests.guest_script(["generic/001", "ext4/002"], 1234, profile)
    kept, limit = fsrecord.script_template(script)
    assert (kept, limit) == (fstests.guest_script(["TESTS"], 1, profile), 1234)
    assert hashlib.sha256(kept.encode()).hexdigest()[:16] == fstests.harness_key(profile)
    assert fsrecord.script_template("echo other\n") == ("echo other\n", None)


def test_workdir_relative(monkeypatch, tmp_path):
    work = tmp_path / "w"
    monkeypatch.setenv("FORK_WORKDIR", str(work))
    data = {"log": "%s/logs/a.log" % work, "n": 3, "list": ["x (%s/k/b.img): y" % work],
            "other": "/elsewhere%s/logs/a.log and %s2/x" % (work, work)}
    assert paths.workdir_relative(data) == {
        "log": "logs/a.log", "n": 3, "list": ["x (k/b.img): y"],
        "other": "/elsewhere%s/logs/a.log and %s2/x" % (work, work)}
