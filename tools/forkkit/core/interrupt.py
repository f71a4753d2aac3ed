"""Stopping a process's guests when it is interrupted.

A signal reaches the main thread only (Ctrl-C as KeyboardInterrupt, and
SIGTERM and SIGHUP as well: cli.main() turns them into one).  Guests that
boot in other threads (check's cells side by side, fstests' shards) are
stopped through here: each running guest names how it is ended (its QEMU
killed, its lava-run's process group stopped) for as long as it runs,
stop_all() ends every one of them, and each of their threads then raises
Stopped instead of returning a result, so that nothing of an unfinished
guest is judged or recorded.  While the stop lasts (stopping()) no guest
starts and no thread waits on for a guest slot; a thread that pauses
(pause(): a LAVA server's job between polls) ends at once, and a thread
checks before it records what it finished (check()).

The guests run in process groups of their own, so that a terminal's
Ctrl-C reaches the kit alone and only the kit decides what an ended guest
means: a QEMU that a Ctrl-C ended by itself would look like a guest that
stopped without an exit status, a failure of the kernel.  So do the
programs a guest's thread runs after it (e2fsck, dumpe2fs, debugfs:
core/proc.py), whose answers a Ctrl-C would falsify ("e2fsck canceled",
exit 32).  Being in a group of their own, the guests would outlive a kit
killed outright (SIGKILL, `timeout -s KILL`, the OOM killer) with their
slots free: each is started with a parent-death signal (guest/qemu.py,
guest/lava.py) and ends with the thread that started it.

A second Ctrl-C during the stop is part of it (stopping()): the stop
stays on until every guest's thread has ended.  In the main thread an
interrupt is passed on to the program that runs there (core/proc.py:
git is given the time it needs) before it goes on.  cli.main() prints
one line and, from tools/fork, the process then dies by the signal, so
that a shell loop around it stops too."""

import contextlib
import signal
import threading

_lock = threading.Lock()
_running = {}
_stopping = threading.Event()


class Stopped(KeyboardInterrupt):
    """Raised in a guest's thread when its process stops its guests."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C's
    KeyboardInterrupt is (cli.main()); `signum` names the signal."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def check():
    """Raise Stopped while the guests are being stopped."""
    if _stopping.is_set():
        raise Stopped("the guests were stopped")


@contextlib.contextmanager
def guest(stop):
    """The block during which a guest runs: `stop()` (called from another
    thread) is how stop_all() ends it.  Raises Stopped at the start when
    the guests are being stopped (after calling `stop`), and at the end
    when they were stopped while it ran: the guest's end is then no
    result."""
    token = object()
    with _lock:
        stopping = _stopping.is_set()
        if not stopping:
            _running[token] = stop
    if stopping:
        stop()
        check()
    try:
        yield
    finally:
        with _lock:
            _running.pop(token, None)
    check()


def stop_all():
    """End every guest of this process that runs (each by its own stop(),
    all at once) and start none until the stop is over (stopping())."""
    with _lock:
        _stopping.set()
        stops = list(_running.values())
    done = [threading.Event() for _ in stops]
    for stop, ended in zip(stops, done):
        threading.Thread(target=_quietly, args=(stop, ended), daemon=True).start()
    for ended in done:
        # an Event, not join(): a join() that a Ctrl-C interrupts marks its
        # thread as ended while it runs on (Python 3.11)
        ended.wait()


def _quietly(stop, ended):
    try:
        stop()
    except Exception:       # noqa: BLE001 - a guest that ended already
        pass
    finally:
        ended.set()


@contextlib.contextmanager
def stopping():
    """stop_all(), and no guest starts until the block ends: the caller
    waits there for the threads of its guests.  A further Ctrl-C, SIGTERM
    or SIGHUP meanwhile is part of the stop under way (_held()), not a
    reason to leave the guests' threads running unseen.  A block that
    raises leaves the stop on (the process is ending: a guest's thread
    must still raise Stopped, never return a result to be recorded); only
    one that ends as it should lets guests start again."""
    with _held():
        stop_all()
        yield
    _stopping.clear()


def _held_signal(signum, frame):
    pass


@contextlib.contextmanager
def _held():
    """In the main thread: SIGINT, SIGTERM and SIGHUP, where they would
    raise KeyboardInterrupt (Python's handler, or ours: _raise), do
    nothing while the block runs."""
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(s) in (signal.default_int_handler, _raise):
                saved[s] = signal.signal(s, _held_signal)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def pause(seconds):
    """time.sleep(seconds) that a stop ends at once: raises Stopped when
    the guests are being stopped, before or during the pause."""
    _stopping.wait(seconds)
    check()


def _raise(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def terminate_as_interrupt():
    """SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main
    thread while the block runs, so that the guests of a terminated or
    hung-up run are stopped as a Ctrl-C stops them.  A signal that is
    ignored or handled already (nohup) stays so, and in a thread other
    than the main one nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGHUP)
             if signal.getsignal(s) == signal.SIG_DFL}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
