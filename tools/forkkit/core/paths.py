"""Shared plumbing for the fork kit: paths, errors, subprocesses, progress.

Everything here is Python 3 standard library only (Debian's python3).
"""

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time

DEFAULT_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def repo_root():
    """The project repository: $FORK_REPO (e.g. a test's scratch repo) or this checkout.

    Read at call time; use this rather than REPO, which is fixed at import.
    """
    return os.path.abspath(os.environ.get("FORK_REPO") or DEFAULT_REPO)


REPO = repo_root()


class ForkError(Exception):
    """An error the user can act on: the message says what to do."""


def workdir():
    """The git-ignored directory holding the kernel tree, builds and logs."""
    return os.path.abspath(os.environ.get("FORK_WORKDIR") or os.path.join(repo_root(), "work"))


def ktree():
    """The kernel git tree (a normal checkout the user may work in)."""
    return os.path.abspath(os.environ.get("FORK_KTREE") or os.path.join(workdir(), "linux"))


def wpath(*parts):
    path = os.path.join(workdir(), *parts)
    return path


def ensure_dir(path):
    os.makedirs(path, exist_ok=True)
    return path


def logs_dir():
    return ensure_dir(wpath("logs"))


def new_log(kind):
    """A new, empty log file of this process's own: created here, so that
    two processes asking in the same second never share one (nor the
    console and other files named after it)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.join(logs_dir(), "%s-%s" % (kind, stamp))
    path = base + ".log"
    n = 1
    while True:
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return path
        except FileExistsError:
            path = "%s.%d.log" % (base, n)
            n += 1


class Progress:
    """One line per stage with elapsed time (since the verb started)."""

    def __init__(self, verb, stream=None):
        self.verb = verb
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr

    def elapsed(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print("[%7.1fs] %s: %s" % (self.elapsed(), self.verb, msg), file=self.stream, flush=True)


def which(prog, package):
    path = shutil.which(prog)
    if not path:
        raise ForkError("%s not found: install it with `apt-get install %s` "
                        "(or run tools/setup)" % (prog, package))
    return path


def run(cmd, cwd=None, env=None, log=None, check=True, input=None, timeout=None,
        capture=True):
    """Run a command. With log=PATH, append stdout+stderr to that file.

    Returns the CompletedProcess; with check=True a failure raises ForkError
    quoting the command and (the tail of) its output.
    """
    try:
        return _run(cmd, cwd, env, log, check, input, timeout, capture)
    except subprocess.TimeoutExpired:
        raise ForkError("`%s` did not finish within %ss: it was stopped; see whether it waits "
                        "for input or the network, then retry" % (" ".join(cmd), timeout))


def _run(cmd, cwd, env, log, check, input, timeout, capture):
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    if log:
        with open(log, "a") as fh:
            fh.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
            fh.flush()
            proc = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT,
                                  input=input, timeout=timeout,
                                  text=isinstance(input, str) or input is None)
        if check and proc.returncode != 0:
            raise ForkError("command failed (exit %d): %s\n%s\nfull log: %s" % (
                proc.returncode, " ".join(cmd), tail(log, 25), log))
        return proc
    kw = {}
    if capture:
        kw = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, input=input, timeout=timeout,
                          text=not isinstance(input, bytes), **kw)
    if check and proc.returncode != 0:
        out = (as_text(proc.stdout) + as_text(proc.stderr)).strip() if capture else ""
        raise ForkError("command failed (exit %d): %s\n%s" % (
            proc.returncode, " ".join(cmd), out[-3000:]))
    return proc


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


def git(args, cwd=None, env=None, check=True, input=None):
    """Run git in the kernel tree (or cwd); return stdout stripped."""
    proc = run(["git"] + list(args), cwd=cwd or ktree(), env=env, check=check, input=input)
    return proc.stdout.strip() if proc.stdout is not None else ""


def git_ok(args, cwd=None):
    proc = run(["git"] + list(args), cwd=cwd or ktree(), check=False)
    return proc.returncode == 0


def fork_entry():
    """This tool's own entry point (tools/fork next to the forkkit package)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fork")


def fork_command(verb, series=None, *args):
    """`tools/fork VERB [--series DIR] ARGS` as a user would type it."""
    parts = ["tools/fork", verb]
    if series is not None and not series.is_primary:
        parts += ["--series", series.rel]
    return " ".join(shlex.quote(str(p)) for p in parts + list(args))


def setup_hint(rev):
    """How to create the branch `rev` names: import its version and lay out
    the series that has that version (the primary one or a backport)."""
    import re as _re
    m = _re.match(r"^(?:refs/heads/)?(?:distro|series|backport)/(\d+\.\d+)(?:/|$)", rev)
    if not m:
        return "run `tools/fork import` and `tools/fork branches` first"
    ver = m.group(1)
    from . import series as series_mod
    for s in series_mod.all_series():
        if s.kver == ver:
            return "run `tools/fork import %s` and `%s` first" % (ver, fork_command("branches", s))
    return ("no series of this repository is on %s: run `tools/fork import %s`, or "
            "`tools/fork rebase --onto %s --into backports/%s` to make one" % (ver, ver, ver, ver))


def rev_parse(rev, cwd=None):
    proc = run(["git", "rev-parse", "--verify", "-q", rev + "^{commit}"], cwd=cwd or ktree(),
               check=False)
    if proc.returncode != 0:
        try:
            hint = setup_hint(rev)
        except ForkError:
            hint = "run `tools/fork import` and `tools/fork branches` first"
        raise ForkError("unknown revision '%s' in the kernel tree %s: see `git -C %s branch -a` "
                        "(%s)" % (rev, cwd or ktree(), cwd or ktree(), hint))
    return proc.stdout.strip()


def require_ktree():
    if not os.path.isdir(os.path.join(ktree(), ".git")):
        raise ForkError("no kernel tree at %s: run `tools/fork import` first" % ktree())
    return ktree()


def tree_is_dirty(path):
    out = git(["status", "--porcelain", "--untracked-files=no"], cwd=path)
    return out


def require_clean(path, what="kernel work tree"):
    dirty = tree_is_dirty(path)
    if dirty:
        lines = dirty.splitlines()
        raise ForkError("%s %s has uncommitted changes (%d files, e.g. %s): commit or "
                        "`git stash` them first; nothing was changed"
                        % (what, path, len(lines), lines[0].strip()))


def dep14(version):
    """Debian version -> DEP-14 git tag component (~ -> _, : -> %)."""
    return version.replace("~", "_").replace(":", "%")


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class Lock:
    """An exclusive lock in work/locks (flock): "build" guards the build
    worktree and build dirs from checkout to stored image, "guest" lets one
    QEMU guest run at a time (the machines have two cores), "import" keeps
    two imports from tagging the same snapshot.  A run that has to wait
    says so on stderr."""

    def __init__(self, name):
        self.path = os.path.join(ensure_dir(wpath("locks")), name + ".lock")

    def __enter__(self):
        self.fh = open(self.path, "w")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("fork: waiting for %s: another tools/fork run holds it" % self.path,
                  file=sys.stderr, flush=True)
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def check_output_path(path, what="output file"):
    """Refuse, before any work, an output path that cannot be written: a
    directory, a missing directory, or a file that refuses a write
    (/proc/version, /dev/full).  Leaves the path as it was."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise ForkError("%s %s is a directory: name a file" % (what, path))
    if not os.path.isdir(d):
        raise ForkError("%s %s: directory %s does not exist: create it first or name "
                        "another path" % (what, path, d))
    if not os.access(d, os.W_OK):
        raise ForkError("%s %s: directory %s is not writable: name another path"
                        % (what, path, d))
    try:
        _probe_write(path)
    except OSError as exc:
        raise ForkError("%s %s cannot be written (%s): name another file; nothing was run"
                        % (what, path, exc.strerror or exc))
    return path


def _probe_write(path):
    """Open `path` for writing and write nothing: an existing file keeps its
    bytes (append, no truncation), a new one is removed again."""
    flags = os.O_WRONLY | os.O_NONBLOCK
    created = not os.path.exists(path)
    fd = os.open(path, flags | (os.O_CREAT | os.O_EXCL if created else os.O_APPEND), 0o644)
    try:
        os.write(fd, b"")
    finally:
        os.close(fd)
        if created:
            os.unlink(path)


def check_output_dir(path, what="output directory"):
    """As check_output_path for a directory the verb creates if missing:
    its nearest existing parent must take a new file."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ForkError("%s %s is a file: name a directory" % (what, path))
    probe = os.path.abspath(path)
    while not os.path.isdir(probe):
        probe = os.path.dirname(probe)
    try:
        _probe_write(os.path.join(probe, ".fork-probe-%d" % os.getpid()))
    except OSError as exc:
        raise ForkError("%s %s cannot be written (%s in %s): name another directory; "
                        "nothing was run" % (what, path, exc.strerror or exc, probe))
    return path


def read_patch(path):
    """The bytes of a patch file of a series; a one-line error for a file
    that cannot be a format-patch mail (empty, CRLF line endings)."""
    with open(path, "rb") as fh:
        data = fh.read()
    rel = os.path.relpath(path, repo_root())
    restore = "git -C %s checkout HEAD -- %s" % (shlex.quote(repo_root()), shlex.quote(rel))
    if not data.strip():
        raise ForkError("%s is empty: restore it (`%s`) or take it out of the series file"
                        % (rel, restore))
    if data.split(b"\n", 1)[0].endswith(b"\r"):
        raise ForkError("%s has CRLF line endings: convert it with `dos2unix %s` (or "
                        "`sed -i 's/\\r$//' %s`) and run the command again"
                        % (rel, rel, rel))
    return data
