"""fstests results kept in the repository (``fstests --record DIR``).

A quick-group run takes hours per kernel under TCG, longer than a session
on a machine that may be fresh next time: the run is done in sittings, and
each sitting's per-test results must outlive the machine's work/.  With
--record DIR, after every boot the kit writes what that kernel has
finished into DIR/<store>/, a directory to commit:

    kernel.json   what produced the results: the image's full sha256, the
                  commit, tree and kernel version, the guest root's key and
                  the hash of its Debian package versions, the fstests
                  commit and patches, the profile
    tests.json    every finished test: status, seconds, message
    boots.json    every boot: tests asked and done, e2fsck of both disks,
                  kernel reports, time
    boot-<n>/     result.xml (fstests' xunit), e2fsck.txt, console.log.xz

<store> is the name of the kit's own store for that kernel
(<image sha256[:16]>-<root key>-<root packages>-<profile>).  The next
sitting, here or on a fresh machine, builds the same commit and gets the
same image (kbuild's builds are reproducible: fixed timestamp, user, host
and build number), finds the record by that name and runs only what is
missing.  Another image, another root or other package versions give
another name: nothing recorded for something else is reused.
"""

import hashlib
import json
import lzma
import os
import shutil

from ..core.errors import ForkError
from ..core.paths import ensure_dir
from ..core.records import write_json

# kernel.json keys that must match for a record to be read as this kernel's
IDENTITY = ("image_sha256", "root_key", "root_packages", "profile", "fstests_commit",
            "fstests_patches")
PATH_KEYS = ("dir", "console", "xunit")


def packages_key(root):
    """8 hex digits of the root's Debian package versions (debootstrap of the
    same inputs on another day may install other versions)."""
    versions = root.get("package_versions")
    if not versions:
        raise ForkError("the fstests root %s names no package versions: remove it from %s and "
                        "run again to make it anew" % (root.get("key"), root.get("image")))
    return hashlib.sha256("\n".join(sorted(versions)).encode()).hexdigest()[:8]


def _read(path, default, kind):
    """JSON of `kind` (dict or list) from path; default if there is none."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise ForkError("cannot read %s (%s): restore it from git (git checkout -- %s)"
                        % (path, exc, path))
    if not isinstance(data, kind) or (kind is list and not all(
            isinstance(b, dict) and isinstance(b.get("n"), int) for b in data)):
        raise ForkError("%s is not a record the kit wrote: restore it from git (git checkout "
                        "-- %s)" % (path, path))
    return data


def boot_dirs(recdir):
    """Numbers of the boot-<n> directories in recdir."""
    try:
        names = os.listdir(recdir)
    except FileNotFoundError:
        return []
    return [int(d[5:]) for d in names if d.startswith("boot-") and d[5:].isdigit()]


def load(recdir, identity):
    """(tests, boots) recorded in recdir for this kernel, ({}, []) if none.
    Boot paths come back absolute; each boot has "recorded": True."""
    recdir = os.path.abspath(recdir)
    meta = _read(os.path.join(recdir, "kernel.json"), None, dict)
    if meta is None:
        if os.path.isdir(recdir) and os.listdir(recdir):
            raise ForkError("%s has no kernel.json: it is not a record of this kernel; restore "
                            "it from git or move it away" % recdir)
        return {}, []
    for key in IDENTITY:
        if meta.get(key) != identity.get(key):
            raise ForkError("%s/kernel.json was recorded for another %s (%s, this run: %s): "
                            "record this run elsewhere (--record)"
                            % (recdir, key.replace("_", " "), meta.get(key), identity.get(key)))
    tests = _read(os.path.join(recdir, "tests.json"), {}, dict)
    boots = []
    for b in _read(os.path.join(recdir, "boots.json"), [], list):
        b = dict(b, recorded=True)
        for k in PATH_KEYS:
            if b.get(k):
                b[k] = os.path.join(recdir, b[k])
        boots.append(b)
    return tests, boots


# a boot's console in its record, xz'd
CONSOLE = "console.log.xz"


def console_path(recdir, n):
    """Where the record in recdir keeps boot n's console."""
    return os.path.join(recdir, "boot-%d" % n, CONSOLE)


def _xz(src, dest):
    with open(src, "rb") as fh, lzma.open(dest + ".tmp", "wb") as out:
        shutil.copyfileobj(fh, out)
    os.replace(dest + ".tmp", dest)


def save(recdir, identity, tests, boots):
    """Write the record of this kernel: identity, boots, tests.  The files
    of a boot made here are copied into boot-<n>/ (the console xz'd); a
    boot-<n> that the record holds for another boot is refused."""
    recdir = os.path.abspath(recdir)
    ensure_dir(recdir)
    on_disk = {}
    if os.path.exists(os.path.join(recdir, "kernel.json")):
        on_disk = {b["n"]: b for b in _read(os.path.join(recdir, "boots.json"), [], list)}
    out = []
    for b in sorted(boots, key=lambda b: b["n"]):
        recorded = b.get("recorded")
        b = {k: v for k, v in b.items() if k != "recorded"}
        name = "boot-%d" % b["n"]
        dest = os.path.join(recdir, name)
        there = on_disk.get(b["n"])
        if there is not None and there.get("id") != b.get("id"):
            raise ForkError("%s holds another boot (id %s) than this machine's boot %d (id %s): "
                            "move one of them away" % (dest, there.get("id"), b["n"], b.get("id")))
        if not recorded and there is None:
            if os.path.exists(dest):
                raise ForkError("%s exists but %s/boots.json does not list it (a sitting "
                                "killed while saving?): move it away" % (dest, recdir))
            ensure_dir(dest)
            if b.get("console") and os.path.exists(b["console"]):
                _xz(b["console"], console_path(recdir, b["n"]))
            if b.get("xunit") and os.path.exists(b["xunit"]):
                shutil.copy(b["xunit"], os.path.join(dest, "result.xml"))
            for f in ("e2fsck.txt", "guest-script.sh"):
                if os.path.exists(os.path.join(b["dir"], f)):
                    shutil.copy(os.path.join(b["dir"], f), os.path.join(dest, f))
        b["dir"] = name
        b["console"] = os.path.join(name, CONSOLE) if b.get("console") else None
        b["xunit"] = name + "/result.xml" if b.get("xunit") else None
        out.append(b)
    write_json(os.path.join(recdir, "kernel.json"), identity)
    write_json(os.path.join(recdir, "boots.json"), out)
    write_json(os.path.join(recdir, "tests.json"), tests)
