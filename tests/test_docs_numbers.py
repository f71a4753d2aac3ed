"""The kit's figures of a bench record (benchlib.record_facts(),
benchlib.state(), benchlib.markdown()) on synthetic and committed records.

The documents themselves are made from the records by `tools/fork report
--docs` and held to them byte for byte (tests/test_docs_report.py), so no
figure of theirs is checked here a second time.
"""

import functools
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from forkkit.verify import benchlib  # noqa: E402

RUNS = {
    "W": "20261204-172908-wall",
    "R612": "20261203-150055",
}


@functools.lru_cache(maxsize=None)
def record(run):
    return json.loads((REPO / "records" / "bench" / (RUNS[run] + ".json")).read_text())

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
