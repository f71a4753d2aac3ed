"""scale: the same jobs with 1 guest slot and with N.  The jobs are faked
(verbs.scale's run() writes each job's --json as its FORK_GUEST_SLOTS
says), so what is tested is the verb's own part: the slot count each job
gets, the order turned round per round, verdicts compared, a job that
gives none, the ratios, the record and its rendering in the documents."""

import json
import subprocess

import pytest

from forkkit import cli
from forkkit.core import locks
from forkkit.core.errors import ForkError
from forkkit.publish import docs
from forkkit.verbs import scale as verb
from forkkit.verify import scale


CHECK_ROW = {"commit": "a" * 40, "flavour": "base", "test": "smoke", "passed": True,
             "cells": {"boot": "pass", "test": "pass"}}
FSTESTS = {"tests": [{"test": "generic/013", "base": "pass", "series": "pass",
                      "verdict": "same"}],
           "meta": {"e2fsck": "clean (4 boots)", "report_kinds": {
               "WARNING": {"base": 0, "series": 0}, "ext2 error": {"base": 1, "series": 2}}}}


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("FORK_REPO", str(tmp_path / "repo"))
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    (tmp_path / "repo").mkdir()
    # the series scale checks must be series (it refuses one that is not)
    for ser, ver in (("patches", "7.3"), ("backports/6.12", "6.12"), ("backports/6.1", "6.1")):
        (tmp_path / "repo" / ser).mkdir(parents=True)
        (tmp_path / "repo" / ser / "base").write_text(
            "package: linux-source-%s\nversion: %s.1-1\nsha256: %s\n" % (ver, ver, "0" * 64))
    calls = []
    state = {"answer": None, "rc": 0}

    def fake_run(cmd, env=None, log=None, check=True):
        slots = int(env["FORK_GUEST_SLOTS"])
        argv = cmd[2:]
        calls.append((argv[0], argv[argv.index("--series") + 1] if "--series" in argv
                      else None, slots))
        path = argv[argv.index("--json") + 1]
        data = state["answer"](argv, slots) if state["answer"] else \
            ([CHECK_ROW] if argv[0] == "check" else FSTESTS)
        if data is not None:
            with open(path, "w") as fh:
                json.dump(data, fh)
        return subprocess.CompletedProcess(cmd, state["rc"])

    monkeypatch.setattr(verb, "run", fake_run)
    return {"calls": calls, "state": state, "tmp": tmp_path}


def main(*argv):
    return cli.main(["scale"] + list(argv))


def test_every_job_runs_with_each_slot_count_in_turned_order(env, capsys):
    assert main("--rounds", "2", "--series", "patches", "--series", "backports/6.1",
                "--record") == 0
    calls = env["calls"]
    # round 1: 1 slot then 2; round 2: 2 then 1; each job once per count
    assert [c[2] for c in calls] == [1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1]
    assert [c[:2] for c in calls[:3]] == [("check", "patches"), ("check", "backports/6.1"),
                                          ("fstests", None)]
    recs = list((env["tmp"] / "repo" / "records" / "scale").iterdir())
    assert len(recs) == 1
    rec = json.loads(recs[0].read_text())
    assert len(rec["runs"]) == 12 and all(r["verdicts"] for r in rec["runs"])
    assert rec["command"].startswith("tools/fork scale --slots 1,2 --rounds 2 --series patches")
    assert all(not r["log"].startswith("/") for r in rec["runs"])
    out = capsys.readouterr().out
    assert "the same in every job" in out


def test_verdicts_that_differ_between_slot_counts_exit_1(env, capsys):
    def answer(argv, slots):
        if argv[0] == "check" and slots == 2:
            return [dict(CHECK_ROW, passed=False, cells={"boot": "pass", "test": "fail"})]
        return [CHECK_ROW] if argv[0] == "check" else FSTESTS
    env["state"]["answer"] = answer
    assert main("--rounds", "1", "--series", "patches") == 1
    out = capsys.readouterr().out
    assert "**differ**" in out and "**not the same**" in out


def test_a_job_without_verdicts_exits_1(env, capsys):
    env["state"]["answer"] = lambda argv, slots: None if argv[0] == "fstests" else [CHECK_ROW]
    assert main("--rounds", "2", "--series", "patches") == 1
    cap = capsys.readouterr()
    assert "gave none" in cap.out
    assert "fstests CI selection 7.3 with 1 slot gave no verdicts" in cap.err
    assert "holds no fstests test" in cap.err
    assert len(env["calls"]) == 2              # it stopped there


@pytest.mark.parametrize("bad", ["1", "2,2", "0,1", "a,b", ""])
def test_bad_slots_is_one_line(env, capsys, bad):
    assert main("--slots", bad) != 0
    err = capsys.readouterr().err
    assert "give two or more different slot counts" in err and "Traceback" not in err
    assert not env["calls"]


def test_ratio_is_one_slot_over_most_per_complete_round():
    rec = {"slots": [1, 2], "rounds": 1, "jobs": [{"name": "a"}, {"name": "b"}], "runs": [
        {"rep": 1, "slots": 1, "job": "a", "seconds": 100, "verdicts": ["x"]},
        {"rep": 1, "slots": 1, "job": "b", "seconds": 50, "verdicts": ["y"]},
        {"rep": 1, "slots": 2, "job": "a", "seconds": 50, "verdicts": ["x"]},
        {"rep": 1, "slots": 2, "job": "b", "seconds": 50, "verdicts": ["y"]},
        {"rep": 2, "slots": 2, "job": "a", "seconds": 40, "verdicts": ["x"]},
        # round 2 is incomplete: it gives no ratio
    ]}
    rows = {r["job"]: r for r in scale.summary(rec)}
    assert rows["a"]["ratios"] == [2.0]
    assert rows["b"]["ratios"] == [1.0]
    assert rows["all jobs"]["ratios"] == [1.5]
    assert rows["a"]["seconds"] == {1: [100], 2: [50]}         # complete rounds only
    assert rows["all jobs"]["seconds"] == {1: [150], 2: [100]}    # their sums
    assert rows["a"]["same"] and rows["b"]["same"] and rows["all jobs"]["same"]
    # fewer complete rounds than asked for: nothing is the same yet
    rows = {r["job"]: r for r in scale.summary(dict(rec, rounds=2))}
    assert not rows["a"]["same"] and not rows["all jobs"]["same"]
    rec["runs"][4]["verdicts"] = ["z"]
    rows = {r["job"]: r for r in scale.summary(rec)}
    assert not rows["a"]["same"] and not rows["all jobs"]["same"] and rows["b"]["same"]


def test_verdicts_of_check_and_fstests():
    assert scale.verdicts("check", [CHECK_ROW]) == [
        "aaaaaaaaaaaa base/smoke pass boot=pass,test=pass"]
    assert scale.verdicts("fstests", FSTESTS) == [
        "generic/013 base=pass series=pass same", "e2fsck clean",
        "reports base: ext2 error", "reports series: ext2 error"]
    with pytest.raises(ForkError):
        scale.verdicts("check", [])
    # an fstests test its time limit left pending is no verdict
    pending = dict(FSTESTS, tests=FSTESTS["tests"] + [
        {"test": "generic/014", "base": "pass", "series": None, "verdict": "pending"}])
    with pytest.raises(ForkError, match="generic/014 did not run on both kernels"):
        scale.verdicts("fstests", pending)
    # exit 0 and 1 are verdicts (pass, something failed); others are not
    assert scale.verdicts("check", [CHECK_ROW], 1)
    for rc in (2, 3, -15):
        with pytest.raises(ForkError, match="exited"):
            scale.verdicts("check", [CHECK_ROW], rc)


def test_busy_slots_names_a_slot_another_process_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path))
    assert locks.busy_slots(2) == []
    holder = subprocess.Popen(["flock", locks.slot_path(1), "sleep", "30"])
    try:
        for _ in range(100):
            if locks.busy_slots(2) == [1]:
                break
            import time
            time.sleep(0.05)
        assert locks.busy_slots(2) == [1]
    finally:
        holder.kill()
        holder.wait()


def test_scale_directive_renders_the_record(env, tmp_path):
    assert main("--rounds", "1", "--series", "patches", "--record") == 0
    rec = next((env["tmp"] / "repo" / "records" / "scale").iterdir())
    lines = docs.DIRECTIVES["scale"][0](str(env["tmp"] / "repo"), {}, rec.stem)
    text = "\n".join(lines)
    assert "| check patches smoke |" in text and "records/scale/%s.json" % rec.stem in text
    with pytest.raises(ForkError):
        docs.DIRECTIVES["scale"][0](str(env["tmp"] / "repo"), {}, "no-such-run")
    data = json.loads(rec.read_text())
    data["finished"] = False
    rec.write_text(json.dumps(data))
    with pytest.raises(ForkError, match="did not finish"):
        docs.DIRECTIVES["scale"][0](str(env["tmp"] / "repo"), {}, rec.stem)


def test_an_interrupted_run_leaves_no_record_in_records(env, monkeypatch):
    """A run stopped after its 1-slot jobs (a Ctrl-C in the first 2-slot
    job) writes nothing to records/: its runs stay in work/scale/<id>/,
    marked not finished."""
    calls = []

    def stop(argv, slots):
        calls.append(slots)
        if slots == 2:
            raise KeyboardInterrupt
        return [CHECK_ROW] if argv[0] == "check" else FSTESTS
    env["state"]["answer"] = stop
    with pytest.raises(KeyboardInterrupt):
        verb.main(verb_args("--rounds", "1", "--series", "patches", "--record"))
    assert not (env["tmp"] / "repo" / "records" / "scale").exists()
    part = next((env["tmp"] / "work" / "scale").iterdir()) / "scale.json"
    data = json.loads(part.read_text())
    assert data["finished"] is False and len(data["runs"]) == 2
    assert "not finished" in "\n".join(scale.markdown(data))
    assert not scale.summary(data)[-1]["same"]


def test_a_job_exiting_without_a_verdict_stops_the_run(env, capsys):
    env["state"]["rc"] = 3           # e.g. fstests: tests left to run
    assert main("--rounds", "1", "--series", "patches") == 1
    assert "exited 3, not with a verdict" in capsys.readouterr().err
    assert len(env["calls"]) == 1


def test_a_job_is_never_given_a_json_left_from_before(env, capsys, monkeypatch):
    """A job that writes no --json gets no verdicts, even where a file of
    an earlier run of the same id (started in the same second) is left."""
    import time
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101-000000")
    left = env["tmp"] / "work" / "scale" / "20260101-000000"
    left.mkdir(parents=True)
    (left / "job1-r1-s1.json").write_text(json.dumps([CHECK_ROW]))
    env["state"]["answer"] = lambda argv, slots: None
    assert main("--rounds", "1", "--series", "patches") == 1
    assert "holds no check row" in capsys.readouterr().err


@pytest.mark.parametrize("second", ["patches", "patches/", "./patches"])
def test_a_series_named_twice_is_refused(env, capsys, second):
    # the same directory however it is written
    assert main("--series", "patches", "--series", second) == 1
    assert "named twice" in capsys.readouterr().err
    assert not env["calls"]


def verb_args(*argv):
    import argparse
    p = argparse.ArgumentParser()
    verb.add_arguments(p)
    return p.parse_args(list(argv))


def test_a_series_that_is_none_is_refused_before_any_job_runs(env):
    # the last one named is broken: no job of the first may have run
    for bad, needle in (("backports/none", "no series at backports/none"),
                        ("../elsewhere", "is outside this repository")):
        with pytest.raises(ForkError, match=needle):
            verb.main(cli.parser().parse_args(["scale", "--series", "patches",
                                               "--series", bad]))
    assert env["calls"] == []
