"""fstests --runner lava / lava-server without LAVA and without a kernel:
lava-run is replaced by a program that reads the kit's job (its disks,
its initramfs' guest script, its metadata), writes fstests' result.xml
onto the results disk as the guest would and prints a job log; the
server's API is replaced by one that runs the same program on the job
submitted.  The results land in the runner's own store (`-lava`,
`-lava-server`) with the runner named, a LAVA failure records nothing of
its shard and the same command resumes it, and the kit's QEMU store and a
LAVA store never answer for each other."""

import json
import os
import re
import stat
import subprocess
import types
from pathlib import Path

import pytest

from conftest import PYTHON
from forkkit.core.errors import ForkError
from forkkit.guest import initramfs, lava, lavaserver, runners
from forkkit.verify import fsrecord, fstests, fstests_run as cmd_fstests

from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (fixtures)

TESTS = ("generic/001", "generic/002", "generic/013")
QEMU_LINE = "QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7+deb12u13)"

# A lava-run that does what the kit's job asks of a worker, without QEMU:
# the guest's tests are read from /fork/cmd in the job's initramfs, their
# statuses from $FAKE_OUTCOMES ({kernel file name: {test: status}}); it
# writes result.xml onto the fourth disk and makes the test and scratch
# disks clean ext2, and prints LAVA's log records of the job.
# $FAKE_FAIL ({kernel file name: [mode, test]}): a job of that kernel
# whose tests include `test` (any, for null) ends without QEMU
# ("nodeploy") or with a console that shows no kernel ("noconsole").
FAKE_LAVA_RUN = r'''#!%(python)s
import datetime, hashlib, json, os, re, subprocess, sys, tempfile

job_file = sys.argv[-1]
job = json.load(open(job_file))
kernel = job["actions"][0]["deploy"]["images"]["kernel"]["url"][len("file://"):]
ramdisk = job["actions"][0]["deploy"]["images"]["ramdisk"]["url"][len("file://"):]
disks = [re.match(r"-drive file=([^,]+),", o).group(1)
         for o in job["context"]["extra_options"] if o.startswith("-drive ")]
name = os.path.basename(kernel)
with open(os.environ["FAKE_CALLS"], "a") as fh:
    fh.write(json.dumps([name, job_file]) + "\n")


def cmd_of(data):
    pos = 0
    while data[pos:pos + 6] == b"070701":
        f = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        size, namesize = f[6], f[11]
        entry = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += (4 - pos %% 4) %% 4
        if entry == "fork/cmd":
            return data[pos:pos + size].decode()
        pos += size
        pos += (4 - pos %% 4) %% 4
    raise SystemExit("no /fork/cmd in " + ramdisk)


script = cmd_of(open(ramdisk, "rb").read())
tests = script.split("fork-tests <<'FORK_EOF'\n", 1)[1].split("\nFORK_EOF")[0].split()
outcome = json.loads(os.environ.get("FAKE_OUTCOMES", "{}")).get(name, {})
fail = json.loads(os.environ.get("FAKE_FAIL", "{}")).get(name)
if fail and fail[1] is not None and fail[1] not in tests:
    fail = None


def rec(lvl, msg):
    print(json.dumps({"dt": datetime.datetime.now().isoformat(), "lvl": lvl, "msg": msg}))


rec("info", "lava-dispatcher, installed at version: 2023.01")
if fail and fail[0] == "nodeploy":
    rec("results", {"case": "job", "definition": "lava", "result": "fail",
                    "error_type": "Infrastructure",
                    "error_msg": "Unable to download: connection refused"})
    sys.exit(1)
sha = hashlib.sha256(open(kernel, "rb").read()).hexdigest()
rec("results", {"case": "file-download", "definition": "lava",
                "extra": {"label": "kernel", "sha256sum": sha}})
rec("info", "Running user command 'fork_qemu_version'")
rec("debug", "Calling: 'nice' 'qemu-system-x86_64' '--version'")
rec("debug", ">> %%s\r" %% job["metadata"].get("fork.qemu", "?"))
rec("debug", "Returned 0 in 0 seconds")
rec("info", "Boot command: /usr/bin/qemu-system-x86_64 -kernel %%s" %% kernel)
if fail and fail[0] == "noconsole":
    rec("target", "SeaBIOS (version 1.16.2-debian-1.16.2-1)")
    rec("results", {"case": "job", "definition": "lava", "result": "fail",
                    "error_type": "Infrastructure", "error_msg": "Connection closed"})
    sys.exit(1)
console = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START", "FSTESTS-BEGIN"]
cases = []
for t in tests:
    st = outcome.get(t, "pass")
    console += ["run fstests %%s at now" %% t, "%%s 3s ...  3s" %% t]
    body = {"pass": "", "notrun": "<skipped message='no'/>",
            "fail": "<failure message='output mismatch' type='TestFail'/>"}[st]
    cases.append("<testcase classname='xfstests.global' name='%%s' time='3'>%%s</testcase>"
                 %% (t, body))
console += ["FSTESTS-END check-exit=0", "FORK-EXIT-STATUS: 0", "reboot: Restarting system"]
with tempfile.TemporaryDirectory() as tmp:
    xml = os.path.join(tmp, "result.xml")
    with open(xml, "w") as fh:
        fh.write("<?xml version='1.0'?><testsuite>%%s</testsuite>" %% "".join(cases))
    for req in ("mkdir xfstests", "write %%s xfstests/result.xml" %% xml):
        subprocess.run(["debugfs", "-w", "-R", req, disks[3]], check=True,
                       capture_output=True)
for d in disks[1:3]:
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", d], check=True)
for line in console:
    rec("target", line)
rec("results", {"case": "job", "definition": "lava", "result": "pass"})
'''


@pytest.fixture
def lavafake(pipeline, tmp_path, monkeypatch):   # noqa: F811
    """The pipeline with kernel images that exist (a LAVA job deploys and
    hashes them), a one-file base initramfs and the fake lava-run; the
    kit's QEMU runner fails the test if it is used."""
    kdir = tmp_path / "k"
    kdir.mkdir()
    configs = tmp_path / "lava-configs"
    configs.mkdir()

    def fake_build(rev, flavour, do_patchcheck, prog):
        name = rev.replace("/", "-")
        (configs / name).write_text("CONFIG_QFMT_V2=y\n# %s\n" % rev)
        image = kdir / ("%s.bzImage" % name)
        image.write_bytes(b"kernel %s\n" % rev.encode())
        return types.SimpleNamespace(image=str(image), config=str(configs / name),
                                     image_sha256=rev.replace("/", "") * 8, version="7.3")

    monkeypatch.setattr(cmd_fstests, "build", fake_build)
    c = initramfs.Cpio()
    c.file("init", b"#!/bin/sh\n")
    base = tmp_path / "base.cpio"
    base.write_bytes(c.bytes())
    monkeypatch.setattr(initramfs, "base_archive", lambda extra_files=None, log=None: str(base))
    prog = tmp_path / "lava-run"
    prog.write_text(FAKE_LAVA_RUN % {"python": PYTHON})
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(lava, "lava_run_binary", lambda: str(prog))
    monkeypatch.setattr(cmd_fstests, "tool_version", lambda prog_, option: QEMU_LINE)
    calls = tmp_path / "lava-calls"
    calls.write_text("")
    monkeypatch.setenv("FAKE_CALLS", str(calls))
    state = {"pipeline": pipeline, "prog": str(prog), "calls": calls}

    def outcomes(value):
        monkeypatch.setenv("FAKE_OUTCOMES", json.dumps(value))

    def fail(value):
        monkeypatch.setenv("FAKE_FAIL", json.dumps(value or {}))

    state["outcomes"], state["fail"] = outcomes, fail
    outcomes({})
    fail({})
    return state


def jobs(fake):
    """[(kernel file name, its tests)] of every job the fake lava-run ran."""
    out = []
    for line in fake["calls"].read_text().splitlines():
        name, job_file = json.loads(line)
        out.append((name, json.load(open(job_file))["metadata"]["fork.tests"].split()))
    return out


def kernels(tmp_path):
    return tmp_path / "work" / "fstests" / "kernels"


def no_qemu(monkeypatch):
    monkeypatch.setattr(cmd_fstests, "run_guest",
                        lambda *a, **kw: pytest.fail("the kit's QEMU runner was used"))


def test_a_shard_through_lava_run_lands_in_the_lava_store(lavafake, tmp_path, monkeypatch,
                                                          capsys):
    """fstests --runner lava: each kernel's shard is a LAVA job naming the
    image, root, profile and tests, given the four disks as the kit's QEMU
    gets them; the statuses are those the console and result.xml give,
    in `-lava` stores and records that name the runner, every boot with
    the job's time and the guest's own; the run ends with the time LAVA
    added."""
    no_qemu(monkeypatch)
    lavafake["outcomes"]({"series-7.3.bzImage": {"generic/013": "fail",
                                                 "generic/002": "notrun"}})
    rec = tmp_path / "rec"
    rc = run_main(*TESTS, "--runner", "lava", "--record", str(rec))
    out = capsys.readouterr()
    assert rc == 1, out
    assert re.search(r"generic/013\s+pass\s+fail\s+3s\s+3s\s+new failure", out.out)
    assert re.search(r"generic/002\s+pass\s+notrun", out.out)
    assert re.search(r"^time LAVA \(lava-run\) added: -?\d+ s per job \(2 jobs: \d+ s of jobs, "
                     r"\d+ s of it the guests' own\)$", out.out, re.M), out.out
    assert re.search(r"^repeat: .* --runner lava ", out.out, re.M)
    assert jobs(lavafake) == [("distro-7.3.bzImage", list(TESTS)),
                              ("series-7.3.bzImage", list(TESTS))]
    want = {"distro-7.3.bzImage": {t: "pass" for t in TESTS},
            "series-7.3.bzImage": {"generic/001": "pass", "generic/002": "notrun",
                                   "generic/013": "fail"}}
    for top in (kernels(tmp_path), rec):
        names = sorted(p.name for p in top.iterdir())
        assert len(names) == 2 and all(n.endswith("-lava") for n in names), names
        for d in top.iterdir():
            kernel = "distro-7.3.bzImage" if d.name.startswith("distro") else \
                "series-7.3.bzImage"
            tests = json.loads((d / "tests.json").read_text())
            assert {t: r["status"] for t, r in tests.items()} == want[kernel]
            (boot,) = json.loads((d / "boots.json").read_text())
            assert boot["runner"] == "lava" and boot["error"] is None
            assert isinstance(boot["seconds"], int) and isinstance(boot["guest_seconds"], int)
            assert boot["e2fsck"] == {"test": "clean", "scratch": "clean"}
            if top == rec:
                assert json.loads((d / "kernel.json").read_text())["runner"] == "lava"
    # the job: the shard's identity and the four disks, the root a qcow2 overlay
    store = sorted(kernels(tmp_path).iterdir())[0]
    job = json.loads((store / "boot-1" / "console.log.lava" / "job.yaml").read_text())
    meta = job["metadata"]
    assert meta["fork.tests"] == " ".join(TESTS) and meta["fork.test"] == "fstests"
    assert meta["fork.root_key"] == "rootkey" and meta["fork.qemu"] == QEMU_LINE
    assert meta["fork.profile"] == fstests.profile_key(fstests.make_profile(None))
    assert meta["fork.image_sha256"] == lava.sha256_file(str(tmp_path / "k" /
                                                             "distro-7.3.bzImage"))
    drives = [o for o in job["context"]["extra_options"] if o.startswith("-drive ")]
    assert [re.search(r"/boot-1/(\w+\.\w+),format=(\w+),", d).groups() for d in drives] == [
        ("root.qcow2", "qcow2"), ("test.img", "raw"), ("scratch.img", "raw"),
        ("results.img", "raw")]
    report = json.loads(Path(re.search(r"^results: (\S+)", out.out, re.M).group(1),
                             "fstests.json").read_text())
    assert report["meta"]["runner"] == "lava" and report["meta"]["runner_time"]["jobs"] == 2
    md = Path(report["meta"]["run_dir"], "fstests.md").read_text()
    assert re.search(r"^- runner: `lava`; time LAVA \(lava-run\) added: -?\d+ s per job "
                     r"\(2 jobs", md, re.M), md


def test_a_lava_failure_records_nothing_of_its_shard_and_a_rerun_resumes(
        lavafake, tmp_path, monkeypatch, capsys):
    """The series kernel's job whose shard holds generic/013 shows no
    kernel in its console: the run ends in one line naming that shard, the
    other shard's boot is kept, nothing of the failed one is recorded (no
    boot, no test, no boot directory in the record), and the same command
    runs only its tests."""
    no_qemu(monkeypatch)
    lavafake["fail"]({"series-7.3.bzImage": ["noconsole", "generic/013"]})
    rec = tmp_path / "rec"
    argv = TESTS + ("--runner", "lava", "--shards", "2", "--record", str(rec))
    assert run_main(*argv) == 1
    err = capsys.readouterr().err
    line = err.rstrip("\n").splitlines()[-1]
    assert re.match(r"fork fstests: error: series shard \d/2 \(boot \d; \d tests?: [^)]*"
                    r"generic/013[^)]*\): error of the runner lava, no verdict: QEMU started "
                    r"but the console shows no kernel .*run the same command again", line), err
    (series,) = [d for d in stores(rec) if d.name.startswith("series")]
    kept = json.loads((series / "tests.json").read_text())
    (boot,) = json.loads((series / "boots.json").read_text())
    assert "generic/013" not in kept and sorted(kept) == boot["tests"]
    assert [p.name for p in series.iterdir() if p.name.startswith("boot-")] == \
        ["boot-%d" % boot["n"]]
    failed = [t for k, t in jobs(lavafake) if k == "series-7.3.bzImage" and "generic/013" in t]
    before = len(jobs(lavafake))
    lavafake["fail"](None)
    assert run_main(*argv) == 0
    again = jobs(lavafake)[before:]
    assert {k for k, _ in again} == {"series-7.3.bzImage"}
    assert sorted(t for _, ts in again for t in ts) == sorted(failed[0])
    assert sorted(json.loads((series / "tests.json").read_text())) == sorted(TESTS)


def test_a_job_that_never_started_qemu_records_nothing(lavafake, tmp_path, monkeypatch, capsys):
    """One shard per kernel: LAVA fails the series' job before QEMU (its
    download): no series store entry and no series record at all, and the
    rerun runs the series' tests only."""
    no_qemu(monkeypatch)
    lavafake["fail"]({"series-7.3.bzImage": ["nodeploy", None]})
    rec = tmp_path / "rec"
    argv = TESTS + ("--runner", "lava", "--record", str(rec))
    assert run_main(*argv) == 1
    err = capsys.readouterr().err
    assert re.search(r"^fork fstests: error: series shard 1/1 \(boot 1; 3 tests: generic/001, "
                     r"generic/002, generic/013\): error of the runner lava, no verdict: LAVA "
                     r"did not start QEMU \(Infrastructure: Unable to download", err, re.M), err
    assert [d.name[:16] for d in stores(rec)] == ["distro7.3distro7"]     # no series record
    series_store = [d for d in kernels(tmp_path).iterdir() if d.name.startswith("series")]
    assert all(json.loads((d / "boots.json").read_text() if (d / "boots.json").exists()
                          else "[]") == [] for d in series_store)
    lavafake["fail"](None)
    before = len(jobs(lavafake))
    assert run_main(*argv) == 0
    assert jobs(lavafake)[before:] == [("series-7.3.bzImage", list(TESTS))]


def test_lava_run_missing_is_one_line_before_the_builds(lavafake, monkeypatch, capsys):
    """lava-run missing: refused in one line before any build; missing when
    a shard boots (gone since): one line naming the shard."""
    def missing():
        raise ForkError("lava-run not found: run `%s` (or use the kit's own runner)"
                        % lava.INSTALL)

    built = []
    monkeypatch.setattr(lava, "lava_run_binary", missing)
    monkeypatch.setattr(cmd_fstests, "build", lambda *a, **kw: built.append(a))
    assert run_main(*TESTS, "--runner", "lava") == 1
    err = capsys.readouterr().err
    assert err.startswith("fork fstests: error: lava-run not found") and not built, err
    assert len(err.strip().splitlines()) == 1


def test_a_qemu_store_and_a_lava_store_never_answer_for_each_other(lavafake, tmp_path,
                                                                   capsys):
    """The same tests through the kit's QEMU and through lava-run, each
    telling its own story (generic/013 fails on the series under QEMU
    only): each run reads its own store and record and runs every test
    itself; either run again runs nothing and gives its own verdicts."""
    pipeline = lavafake["pipeline"]     # noqa: F811
    pipeline["outcomes"] = {"distro-7.3.bzImage": {},
                            "series-7.3.bzImage": {"generic/013": "fail"}}
    rec = tmp_path / "rec"
    assert run_main(*TESTS, "--record", str(rec)) == 1
    assert len(pipeline["boots"]) == 2 and jobs(lavafake) == []
    capsys.readouterr()
    assert run_main(*TESTS, "--runner", "lava", "--record", str(rec)) == 0
    assert len(jobs(lavafake)) == 2 and len(pipeline["boots"]) == 2
    assert re.search(r"generic/013\s+pass\s+pass", capsys.readouterr().out)
    assert run_main(*TESTS, "--record", str(rec)) == 1
    assert run_main(*TESTS, "--runner", "lava", "--record", str(rec)) == 0
    assert len(pipeline["boots"]) == 2 and len(jobs(lavafake)) == 2
    for top in (kernels(tmp_path), rec):
        names = sorted(p.name for p in top.iterdir())
        assert [fsrecord.store_runner(n) for n in names] == ["qemu", "lava", "qemu", "lava"], \
            names
        for d in top.iterdir():
            runner = fsrecord.store_runner(d.name)
            assert {b.get("runner") for b in json.loads((d / "boots.json").read_text())} == \
                {runner}
            series = json.loads((d / "tests.json").read_text()) if d.name.startswith(
                "series") else None
            if series:
                assert series["generic/013"]["status"] == ("fail" if runner == "qemu"
                                                           else "pass")
    # a record of one runner is refused for the other whatever its name
    lava_rec = next(d for d in stores(rec) if d.name.endswith("-lava"))
    ident = json.loads((lava_rec / "kernel.json").read_text())
    with pytest.raises(ForkError, match=r"recorded for another runner \(lava, this run: qemu\)"):
        fsrecord.load(str(lava_rec), dict(ident, runner="qemu"))


# ---------------------------------------------------------- a LAVA server

def server_api(monkeypatch, prog, tmp_path):
    """The server's API: a submitted job runs the fake lava-run at once
    (the job id counts up) and is shown Finished with its log."""
    jobs_ = {}

    def api(cfg, path, data=None, timeout=60):
        if path == "jobs/":
            n = len(jobs_) + 1
            job_file = tmp_path / ("server-job-%d.yaml" % n)
            job_file.write_text(data["definition"])
            proc = subprocess.run([prog, str(job_file)], capture_output=True, text=True)
            jobs_[n] = (data["definition"], proc.stdout)
            return {"job_ids": [n]}
        n = int(path.split("/")[1])
        if path.endswith("/logs/"):
            return jobs_[n][1]
        return {"state": "Finished", "health": "Complete", "original_definition": jobs_[n][0]}

    monkeypatch.setattr(lavaserver, "api", api)


def test_a_shard_through_a_lava_server_lands_in_its_store(lavafake, tmp_path, monkeypatch,
                                                          capsys):
    """--runner lava-server: a server that does not answer ends the run in
    one line naming the shard and records nothing; with the server up, the
    same command runs every test into `-lava-server` stores, apart from
    lava-run's."""
    no_qemu(monkeypatch)
    os.makedirs(os.path.dirname(lavaserver.config_path()), exist_ok=True)
    with open(lavaserver.config_path(), "w") as fh:
        json.dump({"url": "http://127.0.0.1:1/", "token": "t"}, fh)
    argv = TESTS + ("--runner", "lava-server")
    assert run_main(*argv) == 1
    err = capsys.readouterr().err
    assert re.search(r"^fork fstests: error: base shard 1/1 \(boot 1; 3 tests: .*\): error of "
                     r"the runner lava-server, no verdict: LAVA server http://127.0.0.1:1/\S+ "
                     r"does not answer", err, re.M), err
    assert all(not (d / "boots.json").exists() or json.loads((d / "boots.json").read_text())
               == [] for d in kernels(tmp_path).iterdir())
    server_api(monkeypatch, lavafake["prog"], tmp_path)
    lavafake["outcomes"]({"series-7.3.bzImage": {"generic/002": "notrun"}})
    assert run_main(*argv) == 0
    out = capsys.readouterr().out
    assert re.search(r"^time a LAVA server added: ", out, re.M), out
    assert re.search(r"generic/002\s+pass\s+notrun", out)
    names = sorted(p.name for p in kernels(tmp_path).iterdir())
    assert len(names) == 2 and all(n.endswith("-lava-server") for n in names), names
    for d in kernels(tmp_path).iterdir():
        (boot,) = json.loads((d / "boots.json").read_text())
        assert boot["runner"] == "lava-server" and boot["n"] == 2 - d.name.startswith("series")


# ------------------------------------------------------------------ units

def test_store_names_put_the_runner_after_the_accelerator():
    args = ("0123456789abcdef0123", "root", "pkgs", "prof")
    assert fsrecord.store_name(*args) == "0123456789abcdef-root-pkgs-prof"
    for accel in ("tcg", "kvm"):
        for runner in runners.RUNNERS:
            name = fsrecord.store_name(*args, accel, runner)
            assert (fsrecord.store_accel(name), fsrecord.store_runner(name)) == (accel, runner)
    assert fsrecord.store_name(*args, "kvm", "lava-server").endswith("-prof-kvm-lava-server")
    with pytest.raises(ForkError, match="unknown runner 'tux'"):
        fsrecord.store_name(*args, "tcg", "tux")


def test_the_guests_own_time_is_from_qemus_start_to_its_last_console_line():
    def r(lvl, msg, t):
        return {"dt": "2026-01-01T00:%02d:%02d.000000" % divmod(t, 60), "lvl": lvl, "msg": msg}

    records = [r("info", "lava-dispatcher", 0), r("debug", "deploy", 20),
               r("info", "Boot command: qemu-system-x86_64", 25),
               r("target", "Linux version 9.9", 26), r("target", "reboot: Restarting system", 85),
               r("input", "poweroff", 90), r("target", "poweroff", 91),
               r("results", {"case": "job", "definition": "lava", "result": "pass"}, 99)]
    assert lava.console_seconds(records) == 60
    assert lava.console_seconds(records[:2]) is None        # QEMU never started
    assert fstests.runner_time([{"seconds": 99, "guest_seconds": 60},
                                {"seconds": 50, "guest_seconds": 31},
                                {"seconds": 10}]) == {
        "jobs": 2, "job_seconds": 149, "guest_seconds": 91, "added_per_job": 29}
    assert fstests.runner_time_line("lava", fstests.runner_time([])).endswith("not measured "
                                                                            "(no boot of these "
                                                                            "stores records "
                                                                            "the guest's own "
                                                                            "time)")


def test_a_server_jobs_queue_time_starts_when_it_is_submitted(tmp_path, monkeypatch, kit):
    """A shard beyond the free guest slots waits for one before its job is
    submitted: that wait (here longer than the job's QUEUE_SECONDS, on a
    clock the test moves) is neither the queue's time nor the job's, so
    the job is not canceled as one that did not boot in time."""
    from test_kit_lava import fake_api, job_log, server
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    fake_api(monkeypatch, job_log(["[    0.000000] Linux version 9.9", "FORK-GUEST-START",
                                   "FORK-EXIT-STATUS: 0", "reboot: Restarting system"],
                                  kernel_sha=lava.sha256_file(kernel)))
    clock = [1000.0]

    class SlotAfterAWait:
        def __init__(self, every=False):
            pass

        def __enter__(self):
            clock[0] += lavaserver.QUEUE_SECONDS + 600
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(lavaserver, "GuestSlots", SlotAfterAWait)
    monkeypatch.setattr(lavaserver, "time", types.SimpleNamespace(
        monotonic=lambda: clock[0], sleep=lambda s: None))
    res = lavaserver.run_guest_server(kernel, "true", [], timeout=30,
                                      log=str(tmp_path / "c.log"),
                                      meta={"fork.test_key": "k1"}, test="smoke")
    assert (res.rc, res.error, res.seconds) == (0, None, 0)
