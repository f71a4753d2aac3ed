"""fstests results kept in the repository (``fstests --record DIR``).

A quick-group run takes hours per kernel under TCG, longer than one may
keep a machine, whose work/ may be fresh next time: the run is done in
parts (--time-limit), and each part's per-test results must outlive the
machine's work/.  With --record DIR, after every boot the kit writes what
that kernel has finished into DIR/<store>/, a directory to commit:

    kernel.json   what produced the results: the image's full sha256, the
                  commit, tree and kernel version, the guest root's key and
                  the hash of its Debian package versions, the fstests
                  commit and patches, the profile, the accelerator and
                  the runner
    tests.json    every finished test: status, seconds, message
    boots.json    every boot: tests asked and done, e2fsck of both disks,
                  kernel reports, its runner, its time (the runner's
                  and the guest's own), its guest script's sha256
                  (guest_script) and time limit
    boot-<n>/     result.xml (fstests' xunit), e2fsck.txt, console.log.xz

A record holds no code: a boot names its guest script by the sha256 of
the script without its test list (the tests it finished are in
boots.json, their results in tests.json) and with its time limit set to
1, the text fstests.harness_key() hashes and that
fstests.guest_script(["TESTS"], 1, profile) of the kit that ran it
renders (ci/guest/scripts/ and verify/fstests.py at a commit).  The
script itself, with its tests, stays in the work directory of the
machine that ran it (fstests/kernels/<store>/boot-<n>/guest-script.sh).
Paths in the record are relative to the record (boot-<n>/...) or to the
work directory.

<store> is the name of the kit's own store for that kernel
(<image sha256[:16]>-<root key>-<root packages>-<profile>, then -kvm for
results under KVM, then -lava or -lava-server for results whose guests
LAVA booted: store_name()).  The next
part, here or on a fresh machine, builds the same commit and gets the
same image (kbuild's builds are reproducible: fixed timestamp, user, host
and build number), finds the record by that name and runs only what is
missing.  Another image, another root or other package versions give
another name: nothing recorded for something else is reused, nor what
was recorded under another accelerator (kernel.json's accel; none is TCG)
or through another runner (kernel.json's runner; none is the kit's own
QEMU, "qemu").
"""

import hashlib
import json
import lzma
import os
import re
import shutil

from ..core.errors import ForkError
from ..core.locks import DirLock
from ..core.paths import ensure_dir, workdir_relative
from ..core.records import write_json

# kernel.json keys that must match for a record to be read as this kernel's
IDENTITY = ("image_sha256", "root_key", "root_packages", "profile", "fstests_commit",
            "fstests_patches", "accel", "runner")
# what a record without the key was made with (accel: before the kit knew
# KVM; runner: before a LAVA runner booted fstests' guests)
IDENTITY_DEFAULTS = {"accel": "tcg", "runner": "qemu"}
# the runners whose results are stores of their own, by their name's suffix
# (guest/runners.py RUNNERS but the kit's own QEMU, which names none)
LAVA_RUNNERS = ("lava", "lava-server")
PATH_KEYS = ("dir", "console", "xunit")


def store_name(image_sha256, root_key, packages, profile, accel="tcg", runner="qemu"):
    """The name of a kernel's store in work/fstests/kernels and in a
    --record directory; results under KVM are another store (a TCG store
    names no accelerator, as before the kit knew KVM), and so are results
    whose guests a LAVA runner booted: `-kvm` first, then `-lava` or
    `-lava-server` (a store of the kit's own QEMU names no runner), as the
    check cache's key names them (verify/kernel.py cache_key())."""
    if runner not in (None, "qemu") + LAVA_RUNNERS:
        raise ForkError("unknown runner %r: choose one of qemu, %s"
                        % (runner, ", ".join(LAVA_RUNNERS)))
    return "%s-%s-%s-%s%s%s" % (image_sha256[:16], root_key, packages, profile,
                                "" if accel == "tcg" else "-" + accel,
                                "" if runner in (None, "qemu") else "-" + runner)


def store_runner(name):
    """What booted the guests of a store's results, from its name
    (store_name()): "lava", "lava-server" or the kit's own "qemu"."""
    for runner in sorted(LAVA_RUNNERS, key=len, reverse=True):
        if name.endswith("-" + runner):
            return runner
    return "qemu"


def store_accel(name):
    """The accelerator a store's results were produced under, from its
    name (store_name())."""
    runner = store_runner(name)
    if runner != "qemu":
        name = name[:-len(runner) - 1]
    return "kvm" if name.endswith("-kvm") else "tcg"


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


def reserved_only(recdir):
    """None when recdir does not exist, True when it holds nothing but empty
    boot-<n> directories (numbers a run has taken for boots it has not
    saved yet), else False."""
    try:
        names = os.listdir(recdir)
    except FileNotFoundError:
        return None
    return all(n.startswith("boot-") and n[5:].isdigit() and not os.listdir(
        os.path.join(recdir, n)) for n in names)


def load(recdir, identity):
    """(tests, boots) recorded in recdir for this kernel, ({}, []) if none.
    Boot paths come back absolute; each boot has "recorded": True."""
    recdir = os.path.abspath(recdir)
    meta = _read(os.path.join(recdir, "kernel.json"), None, dict)
    if meta is None:
        if reserved_only(recdir) is False:
            raise ForkError("%s has no kernel.json: it is not a record of this kernel; restore "
                            "it from git or move it away" % recdir)
        return {}, []
    for key in IDENTITY:
        default = IDENTITY_DEFAULTS.get(key)
        if meta.get(key, default) != identity.get(key, default):
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
    """src xz'd to dest, its paths into the work directory made relative."""
    with open(src, "rb") as fh:
        text = fh.read().decode(errors="surrogateescape")
    tmp = "%s.tmp-%d" % (dest, os.getpid())
    with lzma.open(tmp, "wb") as out:
        out.write(workdir_relative(text).encode(errors="surrogateescape"))
    os.replace(tmp, dest)


# the guest script's test list (fstests.guest_script()) and its time limit
SCRIPT_TESTS_RE = re.compile(r"(/results/fork-tests <<'FORK_EOF'\n)(.*?)(\nFORK_EOF\n)", re.S)
SCRIPT_LIMIT_RE = re.compile(r"\( sleep (\d+); echo FSTESTS-TIME-LIMIT;")


def script_template(script):
    """(the guest script without its test list and with a time limit of 1,
    the limit it had) -- the text fstests.harness_key() hashes -- or
    (script, None) when it is not one that guest_script() writes."""
    tests, limit = SCRIPT_TESTS_RE.search(script), SCRIPT_LIMIT_RE.search(script)
    if not (tests and limit):
        return script, None
    out = SCRIPT_TESTS_RE.sub(lambda m: m.group(1) + "TESTS" + m.group(3), script, count=1)
    return SCRIPT_LIMIT_RE.sub("( sleep 1; echo FSTESTS-TIME-LIMIT;", out, count=1), \
        int(limit.group(1))


def script_identity(path):
    """The boot's keys that name the guest script at `path`: the sha256 of
    its kept form (script_template(): the text harness_key() hashes) and
    the time limit it had.  Nothing is written: records hold no code."""
    with open(path) as fh:
        text, limit = script_template(fh.read())
    return {"guest_script": hashlib.sha256(text.encode()).hexdigest(), "time_limit_s": limit}


def save(recdir, identity, tests, boots, forget=()):
    """Write the record of this kernel: identity, boots, tests, added to
    what the record holds: a boot or test result that another run (of
    this work directory or another one) put there meanwhile stays, but
    the results of the tests in `forget` (--fresh).  The files of a boot
    made here are copied into boot-<n>/ (the console xz'd), its guest
    script named by its sha256 (script_identity()); paths into the work
    directory become relative to it; a boot-<n> that the record holds for
    another boot is refused.  The record is read and written under its
    own lock (on its directory): two runs of one kernel may save it at
    once, from one work directory or two."""
    recdir = os.path.abspath(recdir)
    with DirLock(recdir):
        _save(recdir, identity, tests, boots, set(forget))


def _save(recdir, identity, tests, boots, forget):
    on_disk, recorded_tests = {}, {}
    if os.path.exists(os.path.join(recdir, "kernel.json")):
        on_disk = {b["n"]: b for b in _read(os.path.join(recdir, "boots.json"), [], list)}
        recorded_tests = _read(os.path.join(recdir, "tests.json"), {}, dict)
    tests = dict({t: r for t, r in recorded_tests.items() if t not in forget}, **tests)
    mine = {b["n"] for b in boots}
    out = [b for n, b in on_disk.items() if n not in mine]     # other runs' boots
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
            if os.path.exists(dest) and os.listdir(dest):
                raise ForkError("%s exists but %s/boots.json does not list it (a run "
                                "killed while saving?): move it away" % (dest, recdir))
            ensure_dir(dest)
            if b.get("console") and os.path.exists(b["console"]):
                _xz(b["console"], console_path(recdir, b["n"]))
            if b.get("xunit") and os.path.exists(b["xunit"]):
                shutil.copy(b["xunit"], os.path.join(dest, "result.xml"))
            fsck = os.path.join(b["dir"], "e2fsck.txt")
            if os.path.exists(fsck):
                with open(fsck, newline="") as fh, \
                        open(os.path.join(dest, "e2fsck.txt"), "w", newline="") as copy:
                    copy.write(workdir_relative(fh.read()))
            script = os.path.join(b["dir"], "guest-script.sh")
            if os.path.exists(script):
                b.update(script_identity(script))
        elif there is not None:
            # a boot once recorded does not change: the record's entry
            # stands (its script, how it was read, its paths), whatever
            # this machine's store holds for it
            b = dict(b, **there)
        b = workdir_relative(b)
        b["dir"] = name
        b["console"] = os.path.join(name, CONSOLE) if b.get("console") else None
        b["xunit"] = name + "/result.xml" if b.get("xunit") else None
        out.append(b)
    write_json(os.path.join(recdir, "kernel.json"), identity)
    write_json(os.path.join(recdir, "boots.json"), sorted(out, key=lambda b: b["n"]))
    write_json(os.path.join(recdir, "tests.json"), tests)
