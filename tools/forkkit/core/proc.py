"""Running programs: one call for every subprocess of the kit, with a
one-line error that quotes the command and its output.

An interrupt and the programs the kit runs (call()): a program started
from a thread other than the main one (a check's cells, fstests' shards:
the e2fsck, dumpe2fs and debugfs after a guest) runs in a process group
of its own, so that a terminal's Ctrl-C never reaches it: it ends with its
own answer, and the kit decides what the interrupt means
(core/interrupt.py).  In the main thread, where Ctrl-C, SIGTERM and
SIGHUP raise KeyboardInterrupt, the running program is passed the signal
and given time to end (GRACE seconds; git as long as it takes: a git
ended by SIGKILL can leave index.lock or a half-updated tree) before the
interrupt goes on.  A program that a signal ended (or e2fsck that says it
was canceled) gave no answer: run() raises Ended, never returns its
status as a verdict."""

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time

from . import interrupt
from .errors import ForkError

# how long a program passed an interrupt has to end before SIGKILL (not git)
GRACE = 10
# the signals that end a program on request (a terminal, kill, timeout, the
# OOM killer): a program they end has given no answer
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL)


class Ended(ForkError):
    """A program was ended by a signal (or canceled itself on one) before
    it gave its answer: nothing is to be judged on its exit status."""


def which(prog, package):
    path = shutil.which(prog)
    if not path:
        raise ForkError("%s not found: install it with `apt-get install %s` "
                        "(or run tools/setup)" % (prog, package))
    return path


def run(cmd, cwd=None, env=None, log=None, check=True, input=None, timeout=None,
        capture=True, canceled=0):
    """Run a command. With log=PATH, append stdout+stderr to that file.

    Returns the CompletedProcess; with check=True a failure raises ForkError
    quoting the command and (the tail of) its output.  A program ended by
    a signal, or whose exit status has a bit of `canceled` set (e2fsck's
    32: "canceled by user request", its answer to SIGINT and SIGTERM),
    raises Ended whatever `check` says (interrupt.Stopped while the
    process stops its guests).
    """
    try:
        proc = _run(cmd, cwd, env, log, check, input, timeout, capture, canceled)
    except subprocess.TimeoutExpired:
        raise ForkError("`%s` did not finish within %ss: it was stopped; see whether it waits "
                        "for input or the network, then retry" % (" ".join(cmd), timeout))
    return proc


def _run(cmd, cwd, env, log, check, input, timeout, capture, canceled):
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    if log:
        with open(log, "a") as fh:
            fh.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
            fh.flush()
            proc = call(cmd, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT,
                        input=input, timeout=timeout,
                        text=isinstance(input, str) or input is None)
        ended(cmd, proc, canceled)
        if check and proc.returncode != 0:
            raise ForkError("command failed (exit %d): %s\n%s\nfull log: %s" % (
                proc.returncode, " ".join(cmd), tail(log, 25), log))
        return proc
    kw = {}
    if capture:
        kw = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc = call(cmd, cwd=cwd, env=full_env, input=input, timeout=timeout,
                text=not isinstance(input, bytes), **kw)
    ended(cmd, proc, canceled)
    if check and proc.returncode != 0:
        out = (as_text(proc.stdout) + as_text(proc.stderr)).strip() if capture else ""
        raise ForkError("command failed (exit %d): %s\n%s" % (
            proc.returncode, " ".join(cmd), out[-3000:]))
    return proc


def ended(cmd, proc, canceled=0):
    """Raise Ended (interrupt.Stopped while the guests are being stopped)
    when a signal ended `proc` or its exit status says it was canceled."""
    rc = proc.returncode
    how = None
    if rc < 0 and -rc in ENDING:
        how = "ended by %s" % signal.Signals(-rc).name
    elif rc > 0 and rc & canceled:
        how = "canceled (exit %d)" % rc
    if how is None:
        return
    interrupt.check()
    raise Ended("`%s` was %s before its answer: nothing is judged on it; run again"
                % (" ".join(cmd), how))


def call(cmd, input=None, timeout=None, **popen):
    """subprocess.run(cmd, input=, timeout=, **popen) without `check`, as
    the module's text says: in a thread other than the main one the
    program runs in a process group of its own; in the main thread an
    interrupt (KeyboardInterrupt, interrupt.Terminated) is passed on to
    it, and raised once it has ended."""
    if threading.current_thread() is not threading.main_thread():
        popen.setdefault("process_group", 0)
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    with subprocess.Popen(cmd, **popen) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        except KeyboardInterrupt as exc:
            pass_on(proc, exc)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def pass_on(proc, exc):
    """The interrupt `exc` (Ctrl-C's KeyboardInterrupt: SIGINT, or
    interrupt.Terminated: its signal) to the running `proc`, then wait
    until it has ended: GRACE seconds, then SIGKILL, but git is never
    killed (its lock files and the tree it updates are its to put right).
    A further interrupt while it ends is passed on too."""
    git = os.path.basename(str(proc.args[0] if isinstance(proc.args, (list, tuple))
                               else proc.args)) == "git"
    end = None if git else time.monotonic() + GRACE
    while True:
        if proc.returncode is None:
            try:
                proc.send_signal(getattr(exc, "signum", signal.SIGINT))
            except ProcessLookupError:
                pass
        try:
            proc.communicate(timeout=None if end is None else max(0, end - time.monotonic()))
            return
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return
        except KeyboardInterrupt as again:
            exc = again


def dying_with_thread(cmd, signame="KILL"):
    """`cmd` started so that it gets SIG`signame` when the thread that
    starts it ends, the kit killed outright included (SIGKILL, `timeout -s
    KILL`, a CI job's cancel, the OOM killer): a guest in a process group
    of its own (which a signal to the kit's group misses) never outlives
    the kit and the guest slot it held.  setpriv (util-linux, Essential in
    Debian: always there) sets the parent-death signal and execs `cmd`;
    not preexec_fn, which is unsafe in a process with threads, nor a
    wrapper of our own to build.  The kernel sends the signal when the
    thread that forked it ends (prctl(2), PR_SET_PDEATHSIG): the guest's
    own thread, which waits for it.  Left open: the microseconds between
    the fork and setpriv's prctl()."""
    return [which("setpriv", "util-linux"), "--pdeathsig", signame, "--"] + list(cmd)


def as_text(output):
    """A command's captured output as text (bytes when its input was bytes)."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def files_hash(top, suffix=".py", skip=("__pycache__",)):
    """12 hex digits of every file under `top` whose name ends in `suffix`,
    subdirectories included, each named by its path below `top`: what a
    stored verdict or image records as the code that made it."""
    h = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(files):
            if name.endswith(suffix):
                path = os.path.join(dirpath, name)
                with open(path, "rb") as fh:
                    h.update(os.path.relpath(path, top).encode() + b"\0" + fh.read())
    return h.hexdigest()[:12]


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
