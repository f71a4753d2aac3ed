"""Build the guest initramfs (newc cpio) without root: busybox-static, the
project's static guest programs (ci/guest) and the init script.

The kernel accepts concatenated archives, so each boot appends a small
archive holding only ``/fork/cmd`` to the cached base archive.
"""

import hashlib
import os
import stat
import shutil
import time

from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, repo_root, wpath
from ..core.proc import run

BUSYBOX = "/bin/busybox"
# a base archive no boot has asked for in this long is deleted
PRUNE_AGE = 2 * 24 * 3600


class Cpio:
    """A minimal writer of the `newc` format (what the kernel unpacks)."""

    def __init__(self):
        self.chunks = []
        self.ino = 1000

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        self.ino += 1
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1],
                  len(name_b), 0]
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        buf = hdr + name_b
        buf += b"\0" * ((4 - len(buf) % 4) % 4)
        buf += data
        buf += b"\0" * ((4 - len(data) % 4) % 4)
        self.chunks.append(buf)

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o755):
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name, major, minor):
        self._entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def bytes(self):
        trailer = Cpio()
        trailer.ino = 0
        trailer._entry("TRAILER!!!", 0)
        data = b"".join(self.chunks) + trailer.chunks[0]
        return data + b"\0" * ((512 - len(data) % 512) % 512)


def guest_programs(log=None):
    """Build ci/guest's static programs; return {name: path}."""
    src = os.path.join(repo_root(), "ci", "guest")
    if not os.path.exists(os.path.join(src, "Makefile")):
        return {}
    out = ensure_dir(wpath("guest"))
    run(["make", "-s", "-C", src, "O=%s" % out], log=log)
    progs = {}
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if os.path.isfile(path) and os.access(path, os.X_OK) and "." not in name:
            progs[name] = path
    return progs


def base_archive(extra_files=None, log=None):
    """Return the path of the cached base archive (rebuilt when inputs change)."""
    if not os.path.exists(BUSYBOX):
        raise ForkError("%s is missing: run `apt-get install busybox-static`" % BUSYBOX)
    with open(BUSYBOX, "rb") as fh:
        if b"ld-linux" in fh.read(4096 * 4):
            raise ForkError("%s is dynamically linked: install busybox-static "
                            "(`apt-get install busybox-static`)" % BUSYBOX)
    files = {"/bin/busybox": BUSYBOX, "/init": os.path.join(repo_root(), "ci", "guest", "init")}
    for name, path in guest_programs(log).items():
        files["/bin/" + name] = path
    for name, path in (extra_files or {}).items():
        files[name] = path
    h = hashlib.sha256()
    blobs = {}
    for name in sorted(files):
        with open(files[name], "rb") as fh:
            blobs[name] = fh.read()
        h.update(name.encode() + b"\0" + hashlib.sha256(blobs[name]).digest())
    key = h.hexdigest()[:16]
    cache = ensure_dir(wpath("initramfs"))
    path = os.path.join(cache, "base-%s.cpio" % key)
    # Archives are kept by key: another process may be about to read one
    # of another file set (a bench's extra files, an older ci/guest).  Each
    # use marks it (mtime); only those unused for PRUNE_AGE are deleted,
    # under the lock that every use takes.
    with Lock("initramfs"):
        if os.path.exists(path):
            os.utime(path)
        else:
            _write_base(path, blobs)
        _prune(cache, path)
    return path


def _prune(cache, keep):
    now = time.time()
    for old in os.listdir(cache):
        p = os.path.join(cache, old)
        if not old.startswith("base-") or p == keep:
            continue
        try:
            if now - os.stat(p).st_mtime > PRUNE_AGE:
                os.unlink(p)
        except FileNotFoundError:
            pass


def _write_base(path, blobs):
    """The base archive of `blobs` ({guest path: bytes}) at `path`."""
    c = Cpio()
    made = set()
    for d in ("bin", "sbin", "usr", "usr/bin", "usr/lib", "lib", "lib64", "dev",
              "proc", "sys", "tmp", "mnt", "root", "fork", "etc"):
        c.dir(d)
        made.add(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3)
    for name in sorted(blobs):
        parent = os.path.dirname(name).lstrip("/")
        parts = parent.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in made:
                c.dir(d)
                made.add(d)
        c.file(name.lstrip("/"), blobs[name], 0o755)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as fh:
        fh.write(c.bytes())
    os.replace(tmp, path)


def with_command(base, script, dest):
    """Write base archive + an archive holding /fork/cmd to `dest`."""
    c = Cpio()
    c.file("fork/cmd", script.encode(), 0o755)
    with open(dest, "wb") as out, open(base, "rb") as fh:
        shutil.copyfileobj(fh, out)
        out.write(c.bytes())
    return dest
