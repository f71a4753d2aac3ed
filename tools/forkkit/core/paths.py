"""Where things are: the project repository, the work directory (kernel
tree, builds, logs) and the kit's own entry point; output paths checked
before any work."""

import os
import time

from .errors import ForkError

# tools/forkkit/core/paths.py -> the checkout holding tools/
KIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_REPO = os.path.dirname(os.path.dirname(KIT_DIR))


def repo_root():
    """The project repository: $FORK_REPO (e.g. a test's scratch repo) or this checkout.

    Read at call time: the tests change it between calls.
    """
    return os.path.abspath(os.environ.get("FORK_REPO") or DEFAULT_REPO)


def workdir():
    """The git-ignored directory holding the kernel tree, builds and logs."""
    return os.path.abspath(os.environ.get("FORK_WORKDIR") or os.path.join(repo_root(), "work"))


def ktree():
    """The kernel git tree (a normal checkout the user may work in)."""
    return os.path.abspath(os.environ.get("FORK_KTREE") or os.path.join(workdir(), "linux"))


def wpath(*parts):
    return os.path.join(workdir(), *parts)


def workdir_relative(data):
    """`data` (a string, or lists and dicts of them) with every absolute
    path into the work directory made relative to it, wherever it stands
    in a string: "console log: /home/u/fork/work/logs/x.log" becomes
    "console log: logs/x.log".  Records (records/README.md) keep paths so,
    naming no machine; a reader joins them with workdir()."""
    prefix = workdir().rstrip(os.sep) + os.sep

    def text(s):
        out, i = [], 0
        while True:
            j = s.find(prefix, i)
            if j < 0:
                return "".join(out) + s[i:]
            # only where a path begins, not inside a longer one
            if j and (s[j - 1].isalnum() or s[j - 1] in "._-~$/"):
                out.append(s[i:j + 1])
                i = j + 1
            else:
                out.append(s[i:j])
                i = j + len(prefix)

    if isinstance(data, str):
        return text(data)
    if isinstance(data, (list, tuple)):
        return [workdir_relative(v) for v in data]
    if isinstance(data, dict):
        return {k: workdir_relative(v) for k, v in data.items()}
    return data


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


def fork_entry():
    """This tool's own entry point (tools/fork next to the forkkit package)."""
    return os.path.join(os.path.dirname(KIT_DIR), "fork")


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
