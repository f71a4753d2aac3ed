"""Records the kit keeps as JSON files: written whole or not at all."""

import itertools
import json
import os
import threading

_serial = itertools.count()


def write_json(path, data, mode=None):
    """`data` as indented, key-sorted JSON at `path`, replacing the file in
    one step: a reader never sees half of it, two writers (processes or
    threads) never share a temporary file, a crash after the call leaves
    the new file (its data and its name are synced to the disk), and a
    write that fails leaves the file as it was and no temporary file
    behind.  Two writers of one file still have to agree who goes first:
    a read-modify-write holds the store's lock (core.locks.DirLock)."""
    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n", mode)


def write_text(path, text, mode=None):
    """`text` at `path`, replaced in one step as write_json() does; `mode`
    (e.g. 0o600 for a secret) is the file's from its creation on."""
    tmp = "%s.tmp-%d-%d-%d" % (path, os.getpid(), threading.get_ident(), next(_serial))
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        with os.fdopen(os.open(tmp, flags, 0o666 if mode is None else mode), "w") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _sync_dir(os.path.dirname(os.path.abspath(path)))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path, default):
    """The JSON at `path`, or `default` when there is none or it is unreadable."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def _sync_dir(path):
    """The directory's entries (a rename into it) synced to the disk."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
