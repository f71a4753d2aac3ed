"""The committed records (records/): what they say, whatever their layout.

records/ holds the check tables (records/checks/), the fstests records
(records/fstests/) and the bench runs (records/bench/), as records/README.md
describes them.  The layout and the form of the files may change (they
moved under records/, their host paths became relative, each boot's guest
script became one file per harness); what they say may not:

* every check cell's verdict over all its runs, and what failed each
  failing run, are those of the records at BEFORE, the last commit with
  the old layout (checks/, fstests/, benchmarks/);
* every fstests record's test statuses, totals and boots are those at
  BEFORE;
* every records/fstests/<ver>/quick.md is what `fstests --markdown` writes
  from the records beside it (all but the fstests URL, which no record
  holds), so the records regenerate it byte for byte.
"""

import collections
import glob
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit import checkrecords, cmd_fstests, fsrecord, fstests  # noqa: E402

# The last commit with the records at checks/, fstests/ and benchmarks/.
BEFORE = "15e773d8ab2b960b743cc5988b0c574db9b28a1d"
# where each kind of record was at BEFORE, and where it is now
OLD_LAYOUT = {"checks": "records/checks", "fstests": "records/fstests"}


def old_records(dest):
    """The check and fstests records of BEFORE, laid out as records/ is
    now under `dest`; skips when this clone lacks BEFORE (a shallow one)."""
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", BEFORE + "^{commit}"],
                      capture_output=True).returncode != 0:
        pytest.skip("commit %s is not in this clone (fetch the whole history)" % BEFORE[:12])
    tar = dest / "old.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(tar), BEFORE] + list(OLD_LAYOUT),
                   check=True)
    with tarfile.open(str(tar)) as tf:
        tf.extractall(str(dest / "old"))
    for old, new in OLD_LAYOUT.items():
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


def test_every_check_verdict_is_the_one_before(before):
    old, new = check_summary(before), check_summary(REPO)
    assert len(new) > 300
    assert {k: v for k, v in new.items() if old.get(k) != v} == {}
    assert sorted(old) == sorted(new)


def test_every_fstests_record_says_what_it_said_before(before):
    old, new = fstests_summary(before), fstests_summary(REPO)
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
