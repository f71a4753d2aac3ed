"""Running programs: one call for every subprocess of the kit, with a
one-line error that quotes the command and its output."""

import hashlib
import os
import shlex
import shutil
import subprocess

from .errors import ForkError


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
