"""Locks shared by every tools/fork process of one work directory."""

import fcntl
import os
import sys

from .paths import ensure_dir, wpath


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


class DirLock:
    """An exclusive lock on one store of records (a directory): flock on the
    directory itself, so that a store that is committed (an fstests
    --record directory) gets no lock file.  Each read-modify-write of the
    store's files holds it; two processes, or two threads of one, exclude
    each other (each takes its own open file description)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.fd = os.open(ensure_dir(self.path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
