"""Records the kit keeps as JSON files: written whole or not at all."""

import itertools
import json
import os
import threading

_serial = itertools.count()


def write_json(path, data):
    """`data` as indented, key-sorted JSON at `path`, replacing the file in
    one step: a reader never sees half of it, two writers (processes or
    threads) never share a temporary file, a crash after the call leaves
    the new file (its data and its name are synced to the disk), and a
    write that fails leaves the file as it was and no temporary file
    behind.  Two writers of one file still have to agree who goes first:
    a read-modify-write holds the store's lock (core.locks.DirLock)."""
    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_text(path, text):
    """`text` at `path`, replaced in one step as write_json() does."""
    tmp = "%s.tmp-%d-%d-%d" % (path, os.getpid(), threading.get_ident(), next(_serial))
    try:
        with open(tmp, "w") as fh:
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
