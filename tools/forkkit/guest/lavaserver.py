"""A LAVA server and worker on this machine, started without systemd
(`tools/fork lava up`), and guest boots as jobs submitted to it
(run_guest_server(): `check --runner lava-server`).

`up` starts what Debian's lava-server and lava-dispatcher packages would
start as services: the PostgreSQL cluster, gunicorn serving lava_server
on 127.0.0.1, lava-scheduler and one lava-worker, each in a process group of
its own with its log and pid in work/lava/.  It makes the kit's device
type (guest/lava.py's device_template()) and `--devices` devices of it on
that worker (one job each at a time), a superuser "fork" with an API
token and the worker's token, and writes what a submitter needs to
work/lava/server.json (mode 0600), each pid with what identifies its
process (its start time in /proc/<pid>/stat on this boot: identify()).
`down` ends the processes it started, each only while its pid still names
that process (after a reboot or a long pause the pid may be another's: it
is left alone and said so), and the PostgreSQL cluster if it started it;
`status` and a second `up` go by the same identity.

A job submitted here is the job lava-run runs (guest/lava.py): the same
definition, device and console, read back from the server's log.  Its
result is refused unless the job the server ran carries the cell's
identity in its metadata, deployed the image's kernel and ran on a worker
whose QEMU printed the version line the kit records for the cell
(lava.check_identity()).  Where the server or LAVA fails rather than the
kernel, the boot raises core.errors.RunnerError (an error of the runner,
no verdict: lava.runner_error()).  The job has QUEUE_SECONDS to leave the
queue and then its own time from when it is seen Running (wait_job()), so
a queue never eats the guest's time; a request that only reads is asked
again when the server does not answer (api()), and the job's log is
fetched once (collect()): a result read is never lost to a later request.
The disks are paths on this machine: a worker
elsewhere needs them at the same paths (tools/forkkit/README.md, "LAVA").
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from ..core import interrupt
from ..core.errors import ForkError, RunnerError
from ..core.locks import GuestSlots
from ..core.paths import ensure_dir, new_log, wpath
from ..core.progress import Progress
from ..core.records import read_json, write_json
from . import lava

INSTALL = "apt-get install --no-install-recommends lava-server lava-dispatcher postgresql"
CONFIG_DIR = "/etc/lava-server/dispatcher-config"
USER = "fork"
PORT = 8000
# how long a job may wait for a device before the kit gives up on it
QUEUE_SECONDS = 1800
POLL = 2.0
# a request that only reads is asked this many times, RETRY_PAUSE * n
# seconds after the n-th failure; the polls of a job go on while the
# server does not answer for up to UNANSWERED_SECONDS
TRIES = 3
RETRY_PAUSE = 2.0
UNANSWERED_SECONDS = 120


def state_dir():
    return ensure_dir(wpath("lava"))


def config_path():
    return os.path.join(state_dir(), "server.json")


def read_config():
    """work/lava/server.json as `up` wrote it; a ForkError without it."""
    cfg = read_json(config_path(), None)
    if not isinstance(cfg, dict) or not all(cfg.get(k) for k in ("url", "token")):
        raise ForkError("no LAVA server: start one with `tools/fork lava up` (it writes %s)"
                        % config_path())
    return cfg


# --- the REST API --------------------------------------------------------------

class _NoAnswer(RunnerError):
    """The server did not answer, or answered as it should not (a 5xx, no
    JSON): worth asking again."""


def _call(cfg, path, data=None, timeout=60):
    """One request of the server's REST API: the decoded JSON answer (a
    log's text); a RunnerError when it fails (_NoAnswer where asking again
    may help)."""
    url = cfg["url"].rstrip("/") + "/api/v0.2/" + path.lstrip("/")
    headers = {"Authorization": "Token %s" % cfg["token"]}
    body = None
    if data is not None:
        body = json.dumps(data).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:500]
        raise (_NoAnswer if exc.code >= 500 else RunnerError)(
            "LAVA server %s: %s %s: %s" % (url, exc.code, exc.reason, " ".join(detail.split())))
    except (urllib.error.URLError, OSError) as exc:
        raise _NoAnswer("LAVA server %s does not answer (%s): is it up (`tools/fork lava "
                        "status`)?" % (url, getattr(exc, "reason", exc)))
    if path.endswith("/logs/"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        raise _NoAnswer("LAVA server %s answered no JSON: %s" % (url, " ".join(
            text[:200].split())))


def api(cfg, path, data=None, timeout=60):
    """A call of the server's REST API (v0.2): the decoded JSON answer; a
    RunnerError when the server does not answer or not as it should (the
    check records it as an error of the runner, not of the kernel).  A
    request that only reads (no `data`) is asked up to TRIES times while
    the server does not answer (a server busy or restarting: one lost
    answer must not lose a job's result); a submission is asked once (a
    second one could run the job twice)."""
    tries = 1 if data is not None else TRIES
    for n in range(1, tries + 1):
        try:
            return _call(cfg, path, data, timeout)
        except _NoAnswer as exc:
            if n == tries:
                raise RunnerError(str(exc) + (" (asked %d times)" % tries if tries > 1 else ""))
            time.sleep(RETRY_PAUSE * n)


def submit(cfg, definition):
    """Submit a job definition (text); its job id."""
    ans = api(cfg, "jobs/", {"definition": definition})
    ids = ans.get("job_ids") if isinstance(ans, dict) else None
    if not ids:
        raise RunnerError("the LAVA server took no job: %s" % " ".join(str(ans).split()))
    return ids[0]


def wait_job(cfg, job_id, deadline, prog=None, run_seconds=None):
    """The job's detail once it is Finished (or Canceled); None when its
    deadline (time.monotonic()) passed first: `deadline`, or, given
    `run_seconds`, `deadline` for the job to start (to leave the queue) and
    then `run_seconds` from when it is first seen Running, so that the
    time it waited for a device is never taken from the guest's.  A poll
    the server does not answer is asked again (api()) and the polls go on
    for up to UNANSWERED_SECONDS of no answer."""
    started = None
    unanswered = None
    while True:
        # the process stops its guests (stop_all() has canceled the job:
        # run_guest_server()): Stopped, at once, not after the next poll
        interrupt.check()
        now = time.monotonic()
        if now >= (started + run_seconds if started is not None and run_seconds is not None
                   else deadline):
            return None
        try:
            job = api(cfg, "jobs/%s/" % job_id)
        except RunnerError:
            unanswered = now if unanswered is None else unanswered
            if now - unanswered >= UNANSWERED_SECONDS:
                raise
            pause(POLL)
            continue
        unanswered = None
        if job.get("state") in ("Finished", "Canceled"):
            return job
        if started is None and job.get("state") in ("Running", "Canceling"):
            started = time.monotonic()
            if prog:
                prog.say("LAVA job %s started on %s" % (job_id, job.get("actual_device")))
        pause(POLL)


def pause(seconds):
    """The pause between two polls of a job: a stop of the process's
    guests ends it at once (interrupt.pause(): Stopped)."""
    interrupt.pause(seconds)


def cancel(cfg, job_id):
    try:
        api(cfg, "jobs/%s/cancel/" % job_id)
    except ForkError:
        pass


def collect(cfg, job_id, expected, lava_log=None, job=None):
    """The records of a finished job's log, once the job is shown to be the
    cell asked for (lava.check_identity(): its metadata, and the kernel it
    deployed and the QEMU its worker booted it with); a ForkError refuses
    it.  The log is fetched once, and its text written to `lava_log` when
    given; `job`: the job's detail, when the caller has it already.
    Returns (detail, records)."""
    if job is None:
        job = api(cfg, "jobs/%s/" % job_id)
    text = api(cfg, "jobs/%s/logs/" % job_id)
    if lava_log:
        with open(lava_log, "w") as fh:
            fh.write(text)
    records = lava.parse_records(text)
    lava.check_identity(job.get("original_definition") or job.get("definition") or "",
                        expected, records)
    return job, records


def run_guest_server(kernel, script, disks=(), timeout=600, smp=2, mem="2048", kvm=False,
                     append="", log=None, prog=None, label="boot", extra_files=None,
                     icount=False, cache="unsafe", follow=None, every_slot=False, meta=None,
                     test="boot"):
    """qemu.run_guest() as a job of the LAVA server (`tools/fork lava up`):
    the job lava-run would run, submitted, waited for, and its console
    read back from the server's log.  The guest takes a guest slot here,
    as the server's worker runs on this machine.  A RunnerError where the
    server or LAVA failed, not the kernel: the server did not answer, the
    job did not boot in time (queued, deploy), it booted no kernel or it
    was canceled by someone other than the kit (lava.boot_result())."""
    if icount:
        raise ForkError("the LAVA runner has no icount mode (bench's): use the kit's own runner")
    prog = prog or Progress("boot")
    cfg = read_config()
    log = log or new_log(label)
    jobdir, job_file, _, initrd, job = lava.prepare(
        kernel, script, disks, timeout, smp, mem, kvm, append, log, label, cache, meta or {},
        test, extra_files)
    expected = job["metadata"]
    with open(job_file) as fh:
        definition = fh.read()
    killed = False
    try:
        with GuestSlots(every=every_slot):
            # the job's time, and its QUEUE_SECONDS, from its submission: a
            # wait for a slot here (a shard beyond the free slots) is
            # neither the queue's nor the job's
            t0 = time.monotonic()
            job_id = submit(cfg, definition)
            with open(os.path.join(jobdir, "server-job"), "w") as fh:
                fh.write("%s %s\n" % (cfg["url"], job_id))
            prog.say("booting %s as LAVA job %s on %s (timeout %ds, job: %s)"
                     % (os.path.basename(kernel), job_id, cfg["url"], timeout, job_file))
            try:
                # QUEUE_SECONDS to start; then the job's own time, the guest's
                # in it.  A stop of the process's guests (a Ctrl-C) cancels the
                # job from the stopping thread at once, whatever this one waits
                # for (a poll of a server slow to answer): the job never runs
                # on after the kit has ended
                with interrupt.guest(lambda: cancel(cfg, job_id)):
                    done = wait_job(cfg, job_id, t0 + QUEUE_SECONDS, prog,
                                    run_seconds=timeout + lava.MARGIN)
            except BaseException:
                cancel(cfg, job_id)
                raise
            if done is None:
                killed = True
                cancel(cfg, job_id)
                done = wait_job(cfg, job_id, time.monotonic() + 120)
    finally:
        try:
            os.unlink(initrd)
        except OSError:
            pass
    secs = time.monotonic() - t0
    job, records = collect(cfg, job_id, expected, os.path.join(jobdir, "lava.log"), done)
    if killed and lava.boot_command(records) is None:
        raise RunnerError("LAVA job %s on %s did not boot in time (%d s to leave the queue, "
                          "then %d s to run; state %s, health %s): the kit canceled it; see %s"
                          % (job_id, cfg["url"], QUEUE_SECONDS, timeout + lava.MARGIN,
                             job.get("state", "?"), job.get("health", "?"), job_file))
    res = lava.boot_result(records, log, job_file, timeout, secs, killed,
                           canceled=not killed and job.get("health") == "Canceled")
    res.lava_server_job = "%s %s" % (cfg["url"], job_id)
    if follow is not None:
        follow.start()
        follow.stop()
    prog.say("guest finished in %.1fs as LAVA job %s (LAVA: %s): exit %s%s"
             % (secs, job_id, res.lava.get("result"), res.rc if res.error is None else "-",
                ", %d kernel reports" % len(res.problems) if res.problems else ""))
    return res


# --- standing the server up ---------------------------------------------------

def _need(prog, package):
    path = shutil.which(prog)
    if not path:
        raise ForkError("%s not found: run `%s` (tools/forkkit/README.md, \"LAVA\")"
                        % (prog, INSTALL))
    return path


def manage(*args, check=True):
    """`lava-server manage ARGS`: its output."""
    proc = subprocess.run(["lava-server", "manage"] + list(args), capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise ForkError("lava-server manage %s failed (exit %d): %s" % (
            " ".join(args), proc.returncode, (proc.stdout + proc.stderr).strip()[-500:]))
    return proc.stdout + proc.stderr


BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _boot_id():
    try:
        with open(BOOT_ID) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _stat(pid):
    """(state, start time in clock ticks since boot) of process `pid` from
    /proc/<pid>/stat, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % int(pid)) as fh:
            text = fh.read()
    except (OSError, TypeError, ValueError):
        return None
    # the name (field 2) may hold spaces and parentheses: the fields after
    # it start at the last ")"
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % int(pid), "rb") as fh:
            words = fh.read().split(b"\0")
    except (OSError, TypeError, ValueError):
        return ""
    return " ".join(w.decode(errors="replace") for w in words if w)


def identify(pid):
    """What names the process `pid` for as long as it runs: its start time
    (/proc/<pid>/stat) on this boot (the kernel's boot id), with its
    command line (to say what it is); None when it does not run."""
    st = _stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return None
    return {"pid": int(pid), "start": st[1], "boot_id": _boot_id(), "cmdline": _cmdline(pid)}


def process_state(entry):
    """The state of a process `up` recorded (its identify()): "running"
    (that very process), "gone", "other" (its pid now names another
    process: another start time or boot) or "unverified" (a bare pid, as an
    older kit recorded it, that a process holds now)."""
    pid = entry.get("pid") if isinstance(entry, dict) else entry
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return "gone"
    now = identify(pid)
    if now is None:
        return "gone"
    if not isinstance(entry, dict):
        return "unverified"
    if (entry.get("start"), entry.get("boot_id")) != (now["start"], now["boot_id"]):
        return "other"
    return "running"


def _pid(entry):
    return entry.get("pid") if isinstance(entry, dict) else entry


def _left_alone(name, entry):
    """One line on a recorded pid that is not (or not shown to be) the
    process `up` started, which the kit leaves alone."""
    pid = _pid(entry)
    if process_state(entry) == "other":
        return "%s: pid %d is now another process (%s), not the one `up` started: left " \
               "alone" % (name, pid, _cmdline(pid) or "?")
    return "%s: pid %d was recorded without what identifies its process (an older kit's " \
           "`lava up`): left alone; end it by hand if `ps -p %d` shows LAVA's %s" % (
               name, pid, pid, name)


def _start(name, cmd, pids, prog=None):
    """Start `cmd` in a process group of its own (its log in work/lava/NAME.out),
    unless the process of that name `up` started before still runs (the very
    process: identify()); records its identity in `pids`."""
    state = process_state(pids.get(name))
    if state == "running":
        return pids[name]["pid"]
    if state == "unverified":
        raise ForkError("%s; then run `tools/fork lava down` and `tools/fork lava up`"
                        % _left_alone(name, pids[name]))
    if state == "other" and prog:
        prog.say(_left_alone(name, pids[name]) + "; starting %s anew" % name)
    out = open(os.path.join(state_dir(), name + ".out"), "a")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    out.close()
    # the command as started (the child may not have exec'd it yet)
    pids[name] = dict(identify(proc.pid) or {"pid": proc.pid}, cmdline=" ".join(cmd))
    return proc.pid


def _answers(url):
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api/v0.2/", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def postgres_clusters():
    """[(version, name, online)] of the machine's PostgreSQL clusters."""
    out = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True)
    rows = []
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 4:
            rows.append((f[0], f[1], f[3] == "online"))
    return rows


def up(devices=1, port=PORT, prog=None):
    """Start PostgreSQL, lava-server (gunicorn), lava-scheduler and a
    lava-worker here; make the kit's device type and `devices` devices;
    write work/lava/server.json.  Returns the config."""
    prog = prog or Progress("lava")
    if os.geteuid() != 0:
        raise ForkError("`tools/fork lava up` must run as root (it starts PostgreSQL, "
                        "lava-server and a worker as their users)")
    for p in ("lava-server", "lava-worker", "lava-run", "gunicorn3", "pg_ctlcluster"):
        _need(p, INSTALL)
    old = read_json(config_path(), {}) or {}
    pids = dict(old.get("pids", {}))
    started_pg = list(old.get("started_postgres", []))
    clusters = postgres_clusters()
    if not clusters:
        raise ForkError("no PostgreSQL cluster: run `pg_createcluster 15 main` (Debian's "
                        "postgresql package makes one when it installs)")
    for ver, name, online in clusters:
        if not online:
            subprocess.run(["pg_ctlcluster", ver, name, "start"], check=True)
            started_pg.append([ver, name])
            prog.say("PostgreSQL %s/%s started" % (ver, name))
    manage("migrate", "--noinput")
    if not re.search(r"^\s*\*?\s*%s\b" % USER, manage("users", "list"), re.M):
        manage("users", "add", "--superuser", "--staff", "--email", "fork@localhost", USER)
    token = old.get("token") if old.get("user") == USER else None
    if not token:
        token = manage("tokens", "add", "--user", USER).strip().splitlines()[-1].strip()
    worker = socket.gethostname()
    if worker not in manage("workers", "list"):
        manage("workers", "add", worker)
    m = re.search(r"^token\s*:\s*(\S+)", manage("workers", "details", worker), re.M)
    if not m:
        raise ForkError("lava-server shows no token for worker %s" % worker)
    worker_token = m.group(1)
    # the device type and its devices
    types = ensure_dir(os.path.join(CONFIG_DIR, "device-types"))
    with open(os.path.join(types, lava.DEVICE_TYPE + ".jinja2"), "w") as fh:
        fh.write(lava.device_template())
    if lava.DEVICE_TYPE not in manage("device-types", "list"):
        manage("device-types", "add", lava.DEVICE_TYPE)
    devdir = ensure_dir(os.path.join(CONFIG_DIR, "devices"))
    listed = manage("devices", "list", "--all", check=False)
    names = ["%s-%02d" % (lava.DEVICE_TYPE, i) for i in range(1, devices + 1)]
    for dev in names:
        path = os.path.join(devdir, dev + ".jinja2")
        with open(path, "w") as fh:
            fh.write("{%% extends '%s.jinja2' %%}\n" % lava.DEVICE_TYPE)
        shutil.chown(path, "lavaserver", "lavaserver")
        if dev not in listed:
            manage("devices", "add", "--device-type", lava.DEVICE_TYPE, "--worker", worker, dev)
        manage("devices", "update", "--worker", worker, "--health", "GOOD", dev)
    # devices of an earlier `up --devices N` with a larger N take no jobs
    for dev in sorted(set(re.findall(r"\b(%s-\d+)\b" % re.escape(lava.DEVICE_TYPE), listed))
                      - set(names)):
        manage("devices", "update", "--health", "RETIRED", dev)
    url = "http://127.0.0.1:%d/" % port
    logs = state_dir()
    if not _answers(url):
        _start("gunicorn", ["gunicorn3", "lava_server.wsgi", "--bind", "127.0.0.1:%d" % port,
                            "--workers", "2", "--worker-class", "eventlet", "-u", "lavaserver",
                            "-g", "lavaserver", "--log-level", "INFO",
                            "--log-file", os.path.join(logs, "gunicorn.log")], pids, prog)
    _start("scheduler", ["lava-server", "manage", "lava-scheduler", "--level", "INFO",
                         "--log-file", os.path.join(logs, "scheduler.log")], pids, prog)
    _start("worker", ["lava-worker", "--level", "INFO", "--url", url, "--name", worker,
                      "--token", worker_token, "--log-file", os.path.join(logs, "worker.log"),
                      "--worker-dir", ensure_dir(os.path.join(logs, "worker"))], pids, prog)
    deadline = time.monotonic() + 90
    while not _answers(url):
        if time.monotonic() > deadline:
            raise ForkError("lava-server does not answer on %s after 90 s: see %s" % (
                url, os.path.join(logs, "gunicorn.log")))
        time.sleep(1)
    cfg = {"url": url, "user": USER, "token": token, "worker": worker, "devices": names,
           "device_type": lava.DEVICE_TYPE, "pids": pids, "started_postgres": started_pg}
    write_json(config_path(), cfg, mode=0o600)      # it holds the server's API token
    prog.say("LAVA server on %s, worker %s, devices %s (config: %s)"
             % (url, worker, ", ".join(names), config_path()))
    return cfg


def status():
    """One line per part of the server: running or not (a recorded pid that
    another process holds now is not LAVA's: it is said so)."""
    cfg = read_json(config_path(), {}) or {}
    lines = ["server %s: %s" % (cfg.get("url", "-"), "answers" if cfg.get("url")
                                and _answers(cfg["url"]) else "does not answer")]
    for name, entry in sorted(cfg.get("pids", {}).items()):
        state = process_state(entry)
        if state in ("other", "unverified"):
            lines.append("%s: not shown to run (%s)" % (name, _left_alone(name, entry)))
        else:
            lines.append("%s (pid %s): %s" % (name, _pid(entry), "running" if state == "running"
                                              else "not running"))
    return lines


def down(prog=None):
    """End the processes `up` started, each only while its pid still names
    that process (identify()), and the PostgreSQL clusters it started."""
    prog = prog or Progress("lava")
    cfg = read_json(config_path(), {}) or {}
    pids = cfg.get("pids", {})
    kept = {}
    for name in ("worker", "scheduler", "gunicorn"):
        entry = pids.get(name)
        state = process_state(entry)
        if state in ("other", "unverified"):
            prog.say(_left_alone(name, entry))
            continue
        if state != "running":
            continue
        pid = entry["pid"]
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if process_state(entry) != "running":
                break
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if process_state(entry) == "running":
            kept[name] = entry          # still that process: `down` again ends it
            prog.say("%s (pid %d) did not end within 10 s of SIGTERM" % (name, pid))
        else:
            prog.say("%s (pid %d) ended" % (name, pid))
    for ver, name in cfg.get("started_postgres", []):
        subprocess.run(["pg_ctlcluster", ver, name, "stop"], check=False)
        prog.say("PostgreSQL %s/%s stopped" % (ver, name))
    cfg["pids"] = kept
    cfg["started_postgres"] = []
    if os.path.exists(config_path()):
        write_json(config_path(), cfg, mode=0o600)
