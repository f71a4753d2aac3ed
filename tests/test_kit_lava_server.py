"""guest/lavaserver.py's run of a job against a fake REST API, on a fake
clock (no LAVA, no waiting): the guest's deadline starts when the job
leaves the queue, a job the kit stops before the guest had its time is an
error of the runner (never the kernel's timeout), a result the kit has
read is never lost to one unanswered request, and reading requests are
asked again while a submission is asked once."""

import io
import types
import urllib.error

import pytest

from forkkit.core.errors import RunnerError
from forkkit.guest import lava, lavaserver

from test_kit_lava import QEMU, job_log, rec, server

RUNNING = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"]
PASSED = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2",
          "FORK-EXIT-STATUS: 0", "[    3.0] reboot: Restarting system"]
BUG = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2",
       "[    1.0] BUG: unable to handle page fault", "FORK-EXIT-STATUS: 0"]
META = {"fork.test_key": "k1", "fork.qemu": QEMU}


class Clock:
    """time.monotonic(), time.sleep() and the pause between polls
    (lavaserver.pause()) of lavaserver, without waiting."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(lavaserver, "time", types.SimpleNamespace(monotonic=c.monotonic,
                                                                  sleep=c.sleep))
    monkeypatch.setattr(lavaserver, "pause", c.sleep)
    return c


QUEUED = job_log([], "fail", "Canceled", qemu=None, boot=False, error_type="Canceled")


class Server:
    """The REST API of a server whose job 7 is Submitted until `runs`
    (clock seconds after submission), Running until `ends`, then Finished
    (Complete); a cancel finishes it (Canceled).  `log`: its log, but
    QUEUED for a job canceled before it ran."""

    def __init__(self, clock, log, runs, ends=None):
        self.clock, self.log, self.runs, self.ends = clock, log, runs, ends
        self.asked = []
        self.canceled = None

    def api(self, cfg, path, data=None, timeout=60):
        self.asked.append(path)
        if path == "jobs/":
            self.definition = data["definition"]
            self.t0 = self.clock.now
            return {"job_ids": [7]}
        if path == "jobs/7/logs/":
            return QUEUED if self.canceled is not None and self.canceled < self.runs \
                else self.log
        if path == "jobs/7/cancel/":
            self.canceled = self.clock.now - self.t0
            return {}
        age = self.clock.now - self.t0
        if self.canceled is not None:
            state, health = "Finished", "Canceled"
        elif age < self.runs:
            state, health = "Submitted", "Unknown"
        elif self.ends is None or age < self.ends:
            state, health = "Running", "Unknown"
        else:
            state, health = "Finished", "Complete"
        return {"state": state, "health": health, "original_definition": self.definition}


def boot(kernel, tmp_path, timeout=900):
    return lavaserver.run_guest_server(kernel, "true", [], timeout=timeout,
                                       log=str(tmp_path / "c.log"), meta=META, test="smoke")


def test_the_guests_deadline_starts_when_the_job_leaves_the_queue(tmp_path, monkeypatch,
                                                                    kit, clock):
    """The queue has QUEUE_SECONDS, the job's run timeout + MARGIN from
    when it is first seen Running.  A job that waited 3290 s for a device
    is canceled in the queue, an error of the runner (before, the deadline
    counted from submission for both: the kit canceled the job 10 s into
    the guest's run and failed the kernel on a timeout).  A job that waited
    1790 s and ran 1490 s has its whole run."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    ksha = lava.sha256_file(kernel)
    api = Server(clock, job_log(RUNNING, "fail", "Canceled", kernel_sha=ksha,
                                error_type="Canceled"), runs=3290)
    monkeypatch.setattr(lavaserver, "api", api.api)
    with pytest.raises(RunnerError, match=r"LAVA job 7 on http://127.0.0.1:8000/ did not "
                                          r"boot in time \(1800 s to leave the queue"):
        boot(kernel, tmp_path)
    assert lavaserver.QUEUE_SECONDS <= api.canceled < lavaserver.QUEUE_SECONDS + 2 * lavaserver.POLL
    api = Server(clock, job_log(PASSED, kernel_sha=ksha), runs=1790, ends=1790 + 1490)
    monkeypatch.setattr(lavaserver, "api", api.api)
    res = boot(kernel, tmp_path)
    assert api.canceled is None
    assert (res.rc, res.error, res.problems) == (0, None, [])


def test_a_job_past_its_deadline_is_the_kernels_timeout_after_the_guests_time(
        tmp_path, monkeypatch, kit, clock):
    """A job that runs on past timeout + margin from its start is canceled
    by the kit then; the guest had 1199 s of its 900 (LAVA's time stamps):
    the kernel's timeout."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    ksha = lava.sha256_file(kernel)
    late = [rec("info", "Canceling the job", "2026-01-01T00:20:00.000000")]
    api = Server(clock, job_log(RUNNING, "fail", "Canceled", late, kernel_sha=ksha,
                                error_type="Canceled"), runs=100)
    monkeypatch.setattr(lavaserver, "api", api.api)
    res = boot(kernel, tmp_path)
    assert 100 + 900 + lava.MARGIN <= api.canceled < 100 + 900 + lava.MARGIN + 2 * lavaserver.POLL
    assert res.error.startswith("guest timed out after 900s")


def test_a_job_the_kit_stopped_before_the_guests_time_is_an_error_not_a_timeout(
        tmp_path, monkeypatch, kit):
    """The kit's deadline passed (here: wait_job says so at once) while the
    guest had run 8 s of its 900 (LAVA's Boot command record to the log's
    end): no hang is shown, so no kernel timeout but an error of the runner."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    ksha = lava.sha256_file(kernel)
    api = Server(Clock(), job_log(RUNNING, "fail", "Canceled", error_type="Canceled",
                                  kernel_sha=ksha), runs=0)
    calls = []

    def wait_job(cfg, job_id, deadline, prog=None, run_seconds=None):
        calls.append(deadline)
        return None if len(calls) == 1 else api.api(cfg, "jobs/7/")   # the deadline passed

    monkeypatch.setattr(lavaserver, "api", api.api)
    monkeypatch.setattr(lavaserver, "wait_job", wait_job)
    with pytest.raises(RunnerError, match=r"^the kit stopped the job at its deadline after "
                                          r"8 s of the guest's time, less than the guest's "
                                          r"timeout of 900 s: no hang is shown"):
        boot(kernel, tmp_path)


@pytest.mark.parametrize("console, extra, want", [
    # 8 s of 60: an error of the runner
    (RUNNING, [], "error"),
    # 89 s of 60 (a record at 00:01:30): the kernel's timeout
    (RUNNING, [rec("info", "Canceling", "2026-01-01T00:01:30.000000")], "timeout"),
    # a report in the console: the kernel's, however short its time
    (RUNNING + ["[    1.0] BUG: unable to handle page fault"], [], "report"),
    # an exit status 3: the guest test failed, no timeout claimed
    (RUNNING + ["FORK-EXIT-STATUS: 3"], [], "exit 3"),
    # an exit status 0 but no reboot, 8 s of 60: neither pass nor hang shown
    (RUNNING + ["FORK-EXIT-STATUS: 0"], [], "error"),
])
def test_a_killed_job_is_judged_by_the_guests_own_time(tmp_path, console, extra, want):
    records = lava.parse_records(job_log(console, "fail", "Canceled", extra,
                                         error_type="Canceled"))
    log = str(tmp_path / "c.log")
    if want == "error":
        with pytest.raises(RunnerError, match="less than the guest's timeout of 60 s"):
            lava.boot_result(records, log, "j", 60, 1.0, killed=True)
        return
    res = lava.boot_result(records, log, "j", 60, 1.0, killed=True)
    assert not res.ok
    if want == "timeout":
        assert res.error.startswith("guest timed out after 60s")
    elif want == "report":
        assert res.problems == ["[    1.0] BUG: unable to handle page fault"]
        assert "timed out" not in res.error
    else:
        assert (res.rc, res.error) == (3, None)


def test_a_kernel_failure_read_back_is_kept_when_a_later_request_fails(tmp_path, monkeypatch,
                                                                       kit):
    """collect() has the job's log (a kernel BUG in the console); the log
    is fetched once and lava.log written from that text, so a request that
    fails after it cannot turn the kernel's failure into an error of the
    runner (before: a second GET of the log wrote lava.log, and its failure
    lost the result and the disk)."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    log = job_log(BUG, kernel_sha=lava.sha256_file(kernel))
    api = Server(Clock(), log, runs=0, ends=0)

    def flaky(cfg, path, data=None, timeout=60):
        if path == "jobs/7/logs/" and api.asked.count(path) >= 1:
            raise RunnerError("LAVA server %s does not answer (timed out)" % path)
        return api.api(cfg, path, data, timeout)

    monkeypatch.setattr(lavaserver, "api", flaky)
    res = boot(kernel, tmp_path)
    assert res.problems == ["[    1.0] BUG: unable to handle page fault"] and not res.ok
    assert api.asked.count("jobs/7/logs/") == 1
    assert open(tmp_path / "c.log.lava" / "lava.log").read() == log


def test_one_unanswered_poll_does_not_lose_the_job(monkeypatch, clock):
    """wait_job() polls on while the server does not answer, for up to
    UNANSWERED_SECONDS; then it gives up (an error of the runner)."""
    answers = [RunnerError("no answer")] * 3 + [{"state": "Running"},
                                                {"state": "Finished", "health": "Complete"}]

    def api(cfg, path, data=None, timeout=60):
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(lavaserver, "api", api)
    assert lavaserver.wait_job({}, 7, clock.now + 3600)["state"] == "Finished"
    monkeypatch.setattr(lavaserver, "api", lambda *a, **kw: (_ for _ in ()).throw(
        RunnerError("LAVA server x does not answer")))
    start = clock.now
    with pytest.raises(RunnerError, match="does not answer"):
        lavaserver.wait_job({}, 7, clock.now + 3600)
    assert clock.now - start == pytest.approx(lavaserver.UNANSWERED_SECONDS, abs=lavaserver.POLL)


class Answer(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_reading_requests_are_asked_again_and_a_submission_once(monkeypatch, clock):
    tries = []
    script = []

    def urlopen(req, timeout=60):
        tries.append((req.get_method(), req.full_url))
        got = script.pop(0)
        if isinstance(got, Exception):
            raise got
        return Answer(got)

    monkeypatch.setattr(lavaserver.urllib.request, "urlopen", urlopen)
    cfg = {"url": "http://127.0.0.1:8000/", "token": "t"}
    refused = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    # one lost answer, then the job
    script[:] = [refused, b'{"state": "Finished"}']
    assert lavaserver.api(cfg, "jobs/7/") == {"state": "Finished"}
    assert len(tries) == 2
    # a 502 of a proxy, then the log
    del tries[:]
    script[:] = [urllib.error.HTTPError("u", 502, "Bad Gateway", {}, io.BytesIO(b"")), b"log"]
    assert lavaserver.api(cfg, "jobs/7/logs/") == "log"
    assert len(tries) == 2
    # no answer at all: asked TRIES times, then an error of the runner
    del tries[:]
    script[:] = [refused] * lavaserver.TRIES
    with pytest.raises(RunnerError, match=r"does not answer .* \(asked 3 times\)$"):
        lavaserver.api(cfg, "jobs/7/")
    assert len(tries) == lavaserver.TRIES
    # a 404 is an answer: asked once
    del tries[:]
    script[:] = [urllib.error.HTTPError("u", 404, "Not Found", {}, io.BytesIO(b"no job"))]
    with pytest.raises(RunnerError, match="404 Not Found: no job"):
        lavaserver.api(cfg, "jobs/8/")
    assert len(tries) == 1
    # a submission is never asked twice (it could run the job twice)
    del tries[:]
    script[:] = [refused, b'{"job_ids": [9]}']
    with pytest.raises(RunnerError, match="does not answer"):
        lavaserver.submit(cfg, "definition")
    assert tries == [("POST", "http://127.0.0.1:8000/api/v0.2/jobs/")]
