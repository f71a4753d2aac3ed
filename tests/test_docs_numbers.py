"""The numbers of BENCHMARKS.md and CHECKS.md against the committed records.

Every figure that BENCHMARKS.md states about a bench run is recomputed
from the run's JSON in records/bench/ by the kit (benchlib.record_facts(),
written out by benchlib.state()), and the sentence that states it must be
in the document as the kit writes it; every result table is checked row by
row.  Every check row of CHECKS.md must be a row that `check --markdown`
writes from a JSON under records/checks/: a row whose record is not in the tree is
a failure.
"""

import functools
import json
import re
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.verify import benchlib, check as cmd_check  # noqa: E402

# The runs BENCHMARKS.md summarises, by the names it gives them.
RUNS = {
    "I1": "20261204-154357-icount",
    "I2": "20261204-163045-icount-statfs",
    "I3": "20261204-165938-icount",
    "I4": "20261204-174324-icount-smp1-statfs",
    "W": "20261204-172908-wall",
    "L2": "20261204-161755-lockstat-smp2",
    "L4": "20261204-162113-lockstat-smp4",
    "L8": "20261204-162346-lockstat-smp8",
    "R612": "20261203-150055",
    "R61": "20261203-162054",
}


@functools.lru_cache(maxsize=None)
def record(run):
    return json.loads((REPO / "records" / "bench" / (RUNS[run] + ".json")).read_text())


@functools.lru_cache(maxsize=None)
def facts():
    """Every run's facts, each name prefixed with the run's name."""
    out = {}
    for run in RUNS:
        out.update({"%s %s" % (run, k): v for k, v in benchlib.record_facts(record(run)).items()})
    return out


def flat(text):
    return " ".join(text.split())


@functools.lru_cache(maxsize=None)
def benchmarks_md():
    return flat((REPO / "BENCHMARKS.md").read_text())


def state(template):
    return benchlib.state(facts(), flat(template))


def iv(point, label="B/A"):
    """The template of an interval as the document prints it."""
    p = "%s %s" % (point, label)
    return "{%s:.3g} [{%s lo:.3g}..{%s hi:.3g}]" % (p, p, p)


def pct_more(x):
    """How much more work B does per operation at B/A = x, in percent."""
    return 100 * (1 / x - 1)


S128 = "statfs ext2 groups=128 threads=%d"
S1024 = "statfs ext2 groups=1024 threads=%d"
S8192 = "statfs ext2 groups=8192 threads=%d"
SEED = {"1 task": "seed ext2 n=%d tasks=1 dirs=separate",
        "2 tasks, one directory": "seed ext2 n=%d tasks=2 dirs=shared",
        "2 tasks, two directories": "seed ext2 n=%d tasks=2 dirs=separate"}
BGL = "&bgl->locks[i].lock"
RSV = "&sbi->s_rsv_window_lock"

# Sentences of BENCHMARKS.md, each with the figures it states.
CLAIMS = [
    # the two modes and their A/A controls (icount)
    "seed: C/A within **±{I1 C/A seed ext2 ± max:.1f}%** at all {I1 C/A seed ext2 within!w}"
    " ext2 points (I1: {I1 C/A seed ext2 min:.3f}, half-widths {I1 C/A seed ext2 ± min:.1f}"
    "-{I1 C/A seed ext2 ± max:.1f}%)",
    "the ext4-driver and tmpfs rows, which no patch touches, give B/A = {I1 B/A seed ext4 min:.3f}"
    " within ±{I1 B/A seed ext4 ± max:.1f}% as well",
    "with one run per point (I1) C/A was within ±3% by the interval (the target's rule) at only"
    " {I1 C/A statfs ext2 within} of {I1 C/A statfs ext2 points} ext2 points and up to"
    " **±{I1 C/A statfs ext2 ± max:.1f}%** at the first point of a boot",
    "(A at 128 groups made {I1 statfs ext2 groups=128 threads=1 A calls min:,.0f} calls in one"
    " boot and {I1 statfs ext2 groups=128 threads=1 A calls max:,.0f} in another)",
    "the sixth (1024 groups, 1 thread) is ±{I2 statfs ext2 groups=1024 threads=1 C/A ±:.1f}%",
    "C/A is within **±{I4 C/A statfs ext2 ± max:.1f}%** at all {I4 C/A statfs ext2 within!w}"
    " ext2 statfs points (±0.0% at {I4 C/A statfs ext2 ±0.0%!w})",
    "the same kernel gives the same figure to {I4 statfs ext2 groups=128 threads=1 A rep spread:.2f}%"
    " from boot to boot (A at 128 groups: {I4 statfs ext2 groups=128 threads=1 A rep min:,.1f} to"
    " {I4 statfs ext2 groups=128 threads=1 A rep max:,.1f} ns, the medians of its three boots)",
    "seed within ±{I1 C/A seed ext2 ± max:.1f}% (I1, 2 vCPUs), statfs within"
    " ±{I4 C/A statfs ext2 ± max:.1f}% (I4, 1 vCPU)",
    "took {I3 inode ext2 tasks=1 dirs=separate A elapsed s min:.0f}"
    "-{I3 inode ext2 tasks=1 dirs=separate A elapsed s max:.0f} s of guest time for"
    " {I3 inode ext2 tasks=1 dirs=separate A ops min:.0f} operations"
    " ({I3 inode ext2 tasks=1 dirs=separate A min:.0f}-{I3 inode ext2 tasks=1 dirs=separate A max:.0f}"
    " ops/s), with two tasks {I3 inode ext2 tasks=2 dirs=separate A elapsed s min:.1f}"
    "-{I3 inode ext2 tasks=2 dirs=separate A elapsed s max:.1f} s for"
    " {I3 inode ext2 tasks=2 dirs=separate A ops min:,.0f}",
    # wall
    "W, on an idle host: {W loaded} of {W samples} samples marked loaded): C/A within ±3% at"
    " **{W C/A * ext2 within!w}** of the {W C/A * ext2 points} ext2 seed and statfs points",
    "and {W C/A seed ext2 ± min:.0f}-{W C/A seed ext2 ± max:.0f}% at the seed points"
    " (C/A {W C/A seed ext2 min:.2f}-{W C/A seed ext2 max:.2f})",
    "Only the statfs effect (B/A {W B/A statfs ext2 min:.2g}-{W B/A statfs ext2 max:.2g})",
    "its A/A control is within ±{I1 C/A seed ext2 ± max:.1f}% for seed and within"
    " ±{I4 C/A statfs ext2 ± max:.1f}% for statfs (one vCPU, 3 runs per point)",
    "only for effects far larger than its ±{W C/A * ext2 ± min:.0f}-{W C/A * ext2 ± max:.0f}% noise",
    # sizing on 7.3
    "a wall boot of seed and statfs with the control took {W boot s min:.0f}-{W boot s max:.0f} s"
    " (W); an icount boot of the same {I1 boot s min:.0f}-{I1 boot s max:.0f} s (I1, one run per"
    " point), of statfs with 3 runs per point {I2 boot s min:.0f}-{I2 boot s max:.0f} s (I2), of"
    " seed (3x iterations), inode and dbench {I3 boot s min:.0f}-{I3 boot s max:.0f} s (I3)",
    # question 1
    "(its tmpfs rows moved {R612 B/A seed tmpfs min:.2f}-{R612 B/A seed tmpfs max:.2f} in the same"
    " boots)",
    "the filesystem-wide `s_rsv_window_lock` ({L2 lock seed %s A acq/op:.3g} acquisitions per"
    " operation in A) is gone" % RSV,
    "(%s -> %s)" % ("{L2 lock seed %s A acq/op:.3g}" % BGL, "{L2 lock seed %s B acq/op:.3g}" % BGL),
    "at n=32 its B/A is %s, %s and %s, and its own A/A control is %s" % (
        iv("W " + SEED["1 task"] % 32), iv("W " + SEED["2 tasks, one directory"] % 32),
        iv("W " + SEED["2 tasks, two directories"] % 32), iv("W " + SEED["1 task"] % 32, "C/A")),
    # question 3
    "| statfs, 128 groups | 1 / 2 threads | %s / %s | B {I2 %s A/B:.1f}x cheaper (I4: %s and %s) |" % (
        iv("I2 " + S128 % 1), iv("I2 " + S128 % 2), S128 % 1, iv("I4 " + S128 % 1),
        iv("I4 " + S128 % 2)),
    "| statfs, 1024 groups | 1 / 2 threads | %s / %s | B {I2 %s A/B:.0f}x cheaper (I4: %s both) |" % (
        iv("I2 " + S1024 % 1), iv("I2 " + S1024 % 2), S1024 % 1, iv("I4 " + S1024 % 1)),
    "| statfs, 8192 groups | 1 / 2 threads | %s / %s | B {I2 %s A/B:.0f}x cheaper, flat in the group"
    " count: {I2 %s B:,.0f}, {I2 %s B:,.0f} and {I2 %s B:,.0f} ns per call at 128, 1024 and 8192"
    " groups (1 thread; I4: %s and %s, {I4 %s A/B:.0f}x, {I4 %s B:,.0f} ns at every group count) |" % (
        iv("I2 " + S8192 % 1), iv("I2 " + S8192 % 2), S8192 % 1, S128 % 1, S1024 % 1, S8192 % 1,
        iv("I4 " + S8192 % 1), iv("I4 " + S8192 % 2), S8192 % 1, S128 % 1),
    "| seed | all {I3 B/A seed ext2 points} points | {I3 B/A seed ext2 min:.3f}-{I3 B/A seed ext2"
    " max:.3f}, every interval within [{I3 B/A seed ext2 lo:.3f}..{I3 B/A seed ext2 hi:.3f}] |",
    "| inode | 1 / 2 tasks | %s / %s |" % (iv("I3 inode ext2 tasks=1 dirs=separate"),
                                            iv("I3 inode ext2 tasks=2 dirs=separate")),
    "| dbench | 2 clients | %s |" % iv("I3 dbench ext2 clients=2"),
    # lock statistics
    "B takes no filesystem-wide ext2 lock except `s_lock` {L2 lock seed &sbi->s_lock B acq/op:.1g}"
    " (seed) and {L2 lock inode &sbi->s_lock B acq/op:.2g} (inode) times per operation, the same"
    " as A: {L2 lock seed &sbi->s_lock B acquisitions} and {L2 lock inode &sbi->s_lock B"
    " acquisitions} acquisitions in the whole workload",
    "`s_next_gen_lock` {L2 lock inode &sbi->s_next_gen_lock A acq/op:.1g} times per inode operation",
    "B's group locks see {L2 lock seed %s B cont/op:.2f} / {L4 lock seed %s B cont/op:.2f} /"
    " {L8 lock seed %s B cont/op:.2f} contentions per seed operation at 2 / 4 / 8 vCPUs against"
    " A's {L2 lock seed %s A cont/op:.3f} / {L4 lock seed %s A cont/op:.3f} /"
    " {L8 lock seed %s A cont/op:.3f}" % ((BGL,) * 6),
    # 6.12, old rule
    "(on an otherwise idle machine; {R612 loaded} of {R612 samples} samples marked loaded)",
    "{R612 %s A/B:.0f}x cheaper than stock at 8192 groups with one thread, {R612 %s A/B:.0f}x with"
    " two" % (S8192 % 1, S8192 % 2),
    "`s_rsv_window_lock` ({R612 lock seed %s A contentions} contentions in A's seed run) and"
    " `s_next_gen_lock` ({R612 lock inode &sbi->s_next_gen_lock A contentions} in A's inode run)"
    % RSV,
    # 6.1, old rule
    "Idle host, {R61 loaded} of {R61 samples} samples marked loaded.",
    "{R61 %s A/B:.0f}x/{R61 %s A/B:.0f}x cheaper than stock" % (S8192 % 1, S8192 % 2),
    "the one \"B worse\" seed point has a spread down to"
    " {R61 seed ext2 n=16 tasks=2 dirs=shared B/A lo:.2f}",
    "(inode with 2 tasks {R61 inode ext4 tasks=2 dirs=separate B/A:.2f}"
    " [{R61 inode ext4 tasks=2 dirs=separate B/A lo:.2f}..{R61 inode ext4 tasks=2 dirs=separate"
    " B/A hi:.2f}], \"B worse\")",
]

# Figures that one number of a sentence stands for: each group must print alike.
SAME = [
    ["{I1 C/A seed ext2 within}", "{I1 C/A seed ext2 points}"],
    ["{I1 C/A seed ext2 min:.3f}", "{I1 C/A seed ext2 max:.3f}"],
    ["{I1 B/A seed ext4 min:.3f}", "{I1 B/A seed ext4 max:.3f}", "{I1 B/A seed tmpfs min:.3f}",
     "{I1 B/A seed tmpfs max:.3f}"],
    ["{I1 B/A seed ext4 ± max:.1f}", "{I1 B/A seed tmpfs ± max:.1f}"],
    ["{I1 %s C/A ±:.1f}" % (S128 % 1), "{I1 C/A statfs ext2 ± max:.1f}"],
    ["{I4 C/A statfs ext2 within}", "{I4 C/A statfs ext2 points}"],
    ["{I3 inode ext2 tasks=1 dirs=separate A ops min}", "{I3 inode ext2 tasks=1 dirs=separate A ops max}"],
    ["{I3 inode ext2 tasks=2 dirs=separate A ops min}", "{I3 inode ext2 tasks=2 dirs=separate A ops max}"],
    ["{I2 %s A/B:.1f}" % (S128 % 1), "{I2 %s A/B:.1f}" % (S128 % 2)],
    ["{I2 %s A/B:.0f}" % (S1024 % 1), "{I2 %s A/B:.0f}" % (S1024 % 2)],
    [iv("I4 " + S1024 % 1), iv("I4 " + S1024 % 2)],
    ["{I4 %s B:,.0f}" % (S128 % 1), "{I4 %s B:,.0f}" % (S1024 % 1), "{I4 %s B:,.0f}" % (S8192 % 1)],
    ["{L%d lock inode &sbi->s_next_gen_lock A acq/op:.1g}" % n for n in (2, 4, 8)],
] + [["{L%d lock %s &sbi->s_lock %s acq/op:.2g}" % (n, wl, k) for n in (2, 4, 8) for k in "AB"]
     for wl in ("seed", "inode")]


@pytest.mark.parametrize("template", CLAIMS, ids=lambda t: flat(t)[:60])
def test_benchmarks_sentence_states_the_record(template):
    assert state(template) in benchmarks_md()


@pytest.mark.parametrize("group", SAME, ids=lambda g: g[0][:60])
def test_one_number_for_figures_that_print_alike(group):
    assert len({state(t) for t in group}) == 1, [state(t) for t in group]


def span(values, spec, unit=""):
    lo, hi = format(min(values), spec), format(max(values), spec)
    return "%s%s" % (lo if lo == hi else "%s-%s" % (lo, hi), unit)


def test_wall_half_widths_by_group_count():
    f = facts()
    big = [f["W %s C/A ±" % (p % t)] for p in (S1024, S8192) for t in (1, 2)]
    small = [f["W %s C/A ±" % (S128 % t)] for t in (1, 2)]
    assert "The half-widths are %s at the statfs points with 1024 and 8192 groups, %s at 128" \
        " groups" % (span(big, ".0f", "%"), span(small, ".0f", "%")) in benchmarks_md()


def test_icount_statfs_two_fast_runs_of_a():
    """I2's widest A/A point: two of A's runs in one repetition against
    every other run of A and C at that point."""
    doc = record("I2")
    runs = [s for k in "AC" for s in benchlib.record_samples(doc, "statfs", "ext2", k,
                                                             groups=1024, threads=1)]
    fast = sorted(runs, key=lambda s: s["value"])[:2]
    assert {s["kernel"] for s in fast} == {"A"} and fast[0]["rep"] == fast[1]["rep"]
    others = [s["value"] for s in runs if s not in fast]
    assert "two of A's three runs came out faster (%s and %s ns against %s in every other run of" \
        " A and C)" % (format(fast[0]["value"], ",.0f"), format(fast[1]["value"], ",.0f"),
                       span(others, ",.0f")) in benchmarks_md()
    f = facts()
    rest = [f["I2 %s C/A ±" % (p % t)] for p in (S128, S1024, S8192) for t in (1, 2)
            if (p % t) != S1024 % 1]
    assert "C/A is within **±%.1f%%** at %d of 6 ext2 points" % (
        max(rest), f["I2 C/A statfs ext2 within"]) in benchmarks_md()


def test_seed_cost_of_the_series():
    f = facts()
    more = span([pct_more(f["I3 B/A seed ext2 max"]), pct_more(f["I3 B/A seed ext2 min"])], ".1f")
    text = benchmarks_md()
    assert "B does %s%% more CPU work per seed operation" % more in text
    assert "The lock table below says where the %s%% goes" % more in text
    assert "| %s%% more CPU per operation: no loss beyond 3%% |" % more in text
    acq = [f["L2 lock seed %s %s acq/op" % (BGL, k)] for k in "AB"]
    assert "the group lock takes %.1f more per operation" % (acq[1] - acq[0]) in text


def test_question_1_tables():
    f = facts()
    text = benchmarks_md()
    for label, point in SEED.items():
        row = "| %s | %s |" % (label, " | ".join(state(iv("I3 " + point % n)) for n in (9, 16, 32)))
        assert row in text
    old = [f["R612 %s B/A" % (SEED[k] % 32)] for k in SEED]
    assert "The old 6.12 run's %s at n=32 was inside its own noise" % span(old, ".2f") in text


def test_lock_table_and_its_figures():
    """The table of acquisitions and contentions per operation, every row
    of lock_table() of the three lockstat runs."""
    text = benchmarks_md()
    tables = [benchlib.lock_table(record(run)) for run in ("L2", "L4", "L8")]
    rows = [(wl, name) for wl, name, _ in tables[0]]
    assert rows and all([(wl, name) for wl, name, _ in t] == rows for t in tables)
    for i, (wl, name) in enumerate(rows):
        cells = ["%.3g, %.3g" % t[i][2][k] for t in tables for k in "AB"]
        assert "| %s | `%s` | %s |" % (wl, name, " | ".join(cells)) in text
    f = facts()
    rsv = [f["%s lock seed %s A %s" % (run, RSV, what)] for run in ("L2", "L4", "L8")
           for what in ("acq/op",)]
    assert "A takes `s_rsv_window_lock` %s times per seed operation" % span(rsv, ".1f") in text
    cont = [f["%s lock seed %s A cont/op" % (run, RSV)] for run in ("L2", "L4", "L8")]
    assert "(plus A's %s on `s_rsv_window_lock`)" % span(cont, ".3f") in text
    doc = record("L2")
    per_point = {wl: f["L2 lock %s &sbi->s_lock B acquisitions" % wl]
                 / len([p for p in doc["points"] if p["workload"] == wl and p["fs"] == "ext2"])
                 for wl in ("seed", "inode")}
    assert len(set(per_point.values())) == 1
    assert "%d per point whatever its number of operations" % per_point["seed"] in text


def test_old_rule_runs():
    """The 6.12 run: the tables are the record's own report; its analysis
    states its medians and lock statistics."""
    f = facts()
    text = benchmarks_md()
    b = [f["R612 %s B" % p] / 1000 for p in (S8192 % 1, S128 % 1)]
    assert "compares %.1f us with %.1f us, and the 128-group median has a %.1f-%.1f us spread" % (
        b[0], b[1], f["R612 %s B min" % (S128 % 1)] / 1000,
        f["R612 %s B max" % (S128 % 1)] / 1000) in text
    acq = ["%dk" % round(f["R612 lock seed %s %s acquisitions" % (BGL, k)] / 1000) for k in "BA"]
    wait = ["%d ms" % round(f["R612 lock seed %s %s wait us" % (BGL, k)] / 1000) for k in "BA"]
    assert "take more acquisitions (%s vs %s) with less total wait (%s vs %s)" % (
        acq[0], acq[1], wait[0], wait[1]) in text


@pytest.mark.parametrize("run,start,end", [
    ("R612", "## Reference run on 6.12", "## 6.1 backport run"),
    ("R61", "## 6.1 backport run", None),
])
def test_old_rule_tables_are_the_records_report(run, start, end):
    """Every result and target row of the section is a row that
    benchlib.markdown() writes from the run's record."""
    text = (REPO / "BENCHMARKS.md").read_text()
    section = text[text.index(start):text.index(end) if end else None]
    rows = [line for line in section.splitlines() if line.startswith("| ")
            and not line.startswith(("| fs |", "| target |"))]
    report = set(benchlib.markdown(record(run)).splitlines())
    assert rows
    assert [r for r in rows if r not in report] == []


# ---------------------------------------------------------------------------
# CHECKS.md

CHECK_ROW = re.compile(r"^\| [0-9a-f]{12} \|")


@functools.lru_cache(maxsize=None)
def check_rows():
    """{row as `check --markdown` writes it: the JSON files that give it}."""
    out = {}
    for path in sorted((REPO / "records" / "checks").rglob("*.json")):
        rows = json.loads(path.read_text())
        md = cmd_check.markdown(rows, types.SimpleNamespace(rel="-"), "-", "-")
        for line in md.splitlines():
            if CHECK_ROW.match(line):
                out.setdefault(line, []).append(path.relative_to(REPO).as_posix())
    return out


def test_every_checks_row_has_its_json_in_the_tree():
    lines = (REPO / "CHECKS.md").read_text().splitlines()
    rows = [(n, line) for n, line in enumerate(lines, 1) if CHECK_ROW.match(line)]
    assert rows
    missing = ["CHECKS.md:%d %s" % (n, line[:60]) for n, line in rows if line not in check_rows()]
    assert missing == []


def test_checks_links_and_counts_match_their_json():
    text = (REPO / "CHECKS.md").read_text()
    links = re.findall(r"\]\((records/checks/[^)]+)\)", text)
    assert links and [p for p in links if not (REPO / p).exists()] == []
    cells = re.findall(r"\[(\d+)/(\d+) pass\]\((records/checks/[^)]+\.json)\)(?: \(kit ([0-9a-f]+)\))?", text)
    assert cells
    for passed, total, path, kit in cells:
        rows = json.loads((REPO / path).read_text())
        assert (int(passed), int(total)) == (sum(1 for r in rows if r["passed"]), len(rows)), path
        assert not kit or all(r["kit"].startswith(kit) for r in rows), path


# ---------------------------------------------------------------------------
# the kit's figures, on a synthetic record

def synthetic_record():
    """statfs at one point: A, B (5x cheaper) and C (A again, off by one
    run in repetition 2), three repetitions of two runs each."""
    point = {"key": "workload=statfs fs=ext2 groups=128 threads=1", "workload": "statfs",
             "fs": "ext2", "params": {"groups": 128, "threads": 1}, "program": "statfsbench",
             "metric": "ns_per_call", "better": "lower", "cmd": "statfsbench"}
    values = {"A": [[1000, 1000], [1000, 1000], [1000, 1000]],
              "B": [[200, 200], [200, 200], [200, 200]],
              "C": [[1000, 1000], [1000, 1100], [1000, 1000]]}
    samples = []
    for k, reps in values.items():
        for rep, runs in enumerate(reps, 1):
            for run, v in enumerate(runs):
                samples.append({"point": point["key"], "workload": "statfs", "fs": "ext2",
                                "params": point["params"], "kernel": k, "flavour": "base",
                                "rep": rep, "run": run, "value": v, "loaded": run == 1 and k == "B",
                                "warmup": False,
                                "result": {"ns_per_call": str(v), "calls": str(2e9 // v),
                                           "elapsed_ns": "2000000000", "prog": "statfsbench"}})
    return {"points": [point], "samples": samples, "stats": [],
            "boots": [{"seconds": 10.5}, {"seconds": 12.0}]}


def test_record_facts_of_a_synthetic_record():
    f = benchlib.record_facts(synthetic_record())
    p = "statfs ext2 groups=128 threads=1"
    assert (f["samples"], f["loaded"], f["boot s min"], f["boot s max"]) == (18, 3, 10.5, 12.0)
    assert f[p + " B/A"] == pytest.approx(0.2) and f[p + " A/B"] == pytest.approx(5)
    assert f[p + " B/A ±"] == pytest.approx(0.0)
    # C/A: 1, sqrt(1.1), 1 over the repetitions; a wide interval
    assert f[p + " C/A"] == pytest.approx(1.1 ** (1 / 6))
    assert f["C/A statfs ext2 points"] == 1 and f["C/A statfs ext2 within"] == 0
    assert f["C/A statfs ext2 narrow"] == 0 and f["C/A statfs ext2 ±0.0%"] == 0
    assert f["C/A * ext2 ± max"] == pytest.approx(f[p + " C/A ±"]) and f[p + " C/A ±"] > 3
    assert f["B/A statfs ext2 within"] == 0         # 0.2 is far outside 1 +- 3%
    assert f["B/A statfs ext2 narrow"] == 1 and f["B/A statfs ext2 ±0.0%"] == 1
    assert (f[p + " C rep min"], f[p + " C rep max"]) == pytest.approx((1000, 1100 ** 0.5 * 1000 ** 0.5))
    assert f[p + " A calls min"] == f[p + " A calls max"] == 2000000
    assert f[p + " A elapsed s min"] == 2.0
    assert "prog" not in " ".join(f)


def test_record_facts_recomputes_rather_than_reads_the_stored_rows():
    doc = synthetic_record()
    doc["stats"] = [{"point": "x", "ratio": 9.0, "detectable": 0.5}]
    assert benchlib.record_facts(doc)["statfs ext2 groups=128 threads=1 B/A"] == pytest.approx(0.2)


def test_state_writes_the_figures():
    f = benchlib.record_facts(synthetic_record())
    assert benchlib.state(f, "C/A within ±3% at {C/A statfs ext2 within!w} of"
                             " {C/A statfs ext2 points!w} points, B at"
                             " {statfs ext2 groups=128 threads=1 B:,.1f} ns") == \
        "C/A within ±3% at none of one points, B at 200.0 ns"
    with pytest.raises(KeyError):
        benchlib.state(f, "{C/A seed ext2 within}")


def test_interval_facts_counts_by_the_targets_rule():
    """within: the whole interval inside 0.97..1.03; narrow: a half-width of
    at most 3%, which a ratio off 1.0 can have with its interval outside."""
    ivs = [{"ratio": 1.0, "lo": 0.999, "hi": 1.001, "detectable": 0.0004},
           {"ratio": 1.01, "lo": 0.985, "hi": 1.037, "detectable": 0.026},
           {"ratio": 1.04, "lo": 0.87, "hi": 1.25, "detectable": 0.198},
           {"ratio": 1.0, "lo": None, "hi": None, "detectable": None}]
    f = benchlib.interval_facts(ivs)
    assert (f["points"], f["within"], f["narrow"], f["±0.0%"]) == (3, 1, 2, 1)
    assert (f["min"], f["max"], f["lo"], f["hi"]) == (1.0, 1.04, 0.87, 1.25)
    assert f["± max"] == pytest.approx(19.8) and f["± min"] == pytest.approx(0.04)
    assert benchlib.interval_facts(ivs[3:]) == {}


def test_markdown_of_an_old_rule_record():
    """A record judged under the min..max rule (no half-widths) renders."""
    md = benchlib.markdown(record("R612"))
    assert "| ext2 | groups=128 threads=1 | 17849 [12754..19075] n=3 | 5245 [4400..7034] n=3 |" \
        " 0.294 [0.231..0.552] | B better |" in md
