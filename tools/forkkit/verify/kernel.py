"""A kernel under test: one path from a commit to a verdict.

check, bisect, bench, frag and boot all go through here and through
build/kbuild (build), guest/qemu (boot, console scan) and
guest/guesttests (disk images, e2fsck and free counts):

* ``kbuild.build`` checks the commit out in the build worktree, builds it
  and stores its bzImage under its sha256, all under the "build" lock, so
  the image belongs to exactly that tree and config; whether the W=1/sparse
  patchcheck passed is recorded with it.
* ``run_test`` boots that stored image (one guest at a time, the "guest"
  lock) with a disk image of this process's own, scans the console, and
  verifies the disk on the host (e2fsck, free counts).
* ``check_commit`` adds checkpatch and keeps every run that booted the
  image, pass or fail, on record (the cache), keyed by the tree id, the
  config flavour, the guest test and its inputs, this kit's own code and
  the QEMU and e2fsprogs versions first on PATH; the row names the booted
  image's sha256, the config key and those versions.  A failure is never
  erased: a later pass of the same cell is flaky and does not pass, unless
  each failed run failed only on reports that the base shows too (the
  known-report rule, reports.judge()); see judge_runs().
* A run in which what boots the guest failed rather than the kernel (a
  LAVA runner's core.errors.RunnerError: guest/lava.py's runner_error())
  is an error of the runner: its `boot` cell is ERROR ("error"), the
  row and the run hold the reason (`error`), it is never a pass, and it
  is on record but judges nothing: a cell's verdict is that of its runs
  that completed (a failure among them stays), and a record with none is
  no cache hit, so the next check runs the cell again.
"""

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import time
import uuid

from ..build import kconfig
from ..build.kbuild import build, kernels_dir
from ..build.kconfig import KMEMLEAK_FLAVOURS
from ..core import interrupt
from ..core.errors import ForkError, RunnerError
from ..core.paths import KIT_DIR, ensure_dir, new_log, repo_root, wpath
from ..core.proc import files_hash, run
from ..core.records import write_json
from ..guest import accel, guesttests, lava, reports, runners
from ..guest.qemu import BOOT_ARGS, failure_message, run_guest
from ..repo.funcdiff import ALL, with_tail_calls
from ..repo.git import git
from .checkpatch import run_checkpatch

CELLS = ["checkpatch", "build", "boot", "test", "e2fsck", "counts"]
# What a run of the tree produced (checkpatch reads the commit's log).
RUN_CELLS = CELLS[1:]
# The boot cell of a run whose runner failed, not the kernel (RunnerError).
ERROR = "error"
# What a sanitizer kernel prints when it really runs: a boot without it
# fails (a detector that is built but switched off would pass everything).
ACTIVE = {
    "kcsan": r"kcsan: selftest: (\d+)/\1 tests passed",
    "kasan": r"KernelAddressSanitizer initialized",
    "kasan-inline": r"KernelAddressSanitizer initialized",
}


def _code_hash(here=None):
    """A hash of every .py file of the kit's package, subpackages included
    (named by their path inside the package)."""
    return files_hash(here or KIT_DIR)


# Hashed once, when the kit is loaded: a run that lasts hours names the
# code it runs, not files edited on disk while it ran.
_KIT_KEY = _code_hash()


def kit_key():
    """A hash of the kit's own code: a verdict is never reused by other code."""
    return _KIT_KEY


# The kit's code and the guest side it renders scripts from, in its checkout.
KIT_PATHS = ("tools", "ci")


def _kit_version():
    top = os.path.dirname(os.path.dirname(KIT_DIR))
    proc = run(["git", "-C", top, "rev-parse", "HEAD"], check=False)
    head = (proc.stdout or "").strip() or None
    dirty = run(["git", "-C", top, "status", "--porcelain", "--"] + list(KIT_PATHS),
                check=False)
    return {"commit": head, "dirty": head is None or bool((dirty.stdout or "").strip())}


# Asked once, when the kit is loaded, as _KIT_KEY: a record names the
# checkout whose code ran, not what was committed while it ran.
_KIT_VERSION = _kit_version()


def kit_version():
    """The commit of the kit that runs (the checkout this package is in, which
    need not be $FORK_REPO: a kit pinned in a worktree of its own may run on
    the project's repository), and whether its code (KIT_PATHS: tools/ and
    ci/, untracked files included) differed from that commit when the kit
    was loaded: where the code that made a record is, when `dirty` is
    false.  Records and documents of the checkout do not count."""
    return dict(_KIT_VERSION)


# The host programs behind a verdict: (what, program, version option).
HOST_TOOLS = (("qemu", "qemu-system-x86_64", "--version"), ("e2fsprogs", "e2fsck", "-V"),
              ("e2fsprogs", "mke2fs", "-V"), ("e2fsprogs", "dumpe2fs", "-V"))


@functools.lru_cache(maxsize=None)
def _version_line(path, option, stamp):
    """The first line `path option` prints; `stamp` (the file's identity
    and mtime) makes another binary at the same path ask again."""
    proc = run([path, option], check=False)
    text = ((proc.stdout or "") + (proc.stderr or "")).strip()
    return text.splitlines()[0] if text else "?"


def tool_version(prog, option):
    """The version line of `prog` as the kit runs it: the one first on PATH."""
    path = shutil.which(prog)
    try:
        st = os.stat(path or "")
        return _version_line(path, option, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
    except OSError:
        return "not installed"


def tool_versions():
    """The QEMU and e2fsprogs that produce (and so are part of) a verdict:
    each program's version line, from the one first on PATH.  e2fsprogs is
    e2fsck's line, with mke2fs's and dumpe2fs's added where their version
    differs from it."""
    lines = {}
    for name, prog, option in HOST_TOOLS:
        lines.setdefault(name, []).append(tool_version(prog, option))
    version = lambda line: line.split(" ", 1)[-1]      # noqa: E731 - without the name
    return {name: "; ".join([ls[0]] + [l for l in ls[1:] if version(l) != version(ls[0])])
            for name, ls in lines.items()}


def tools_key():
    """A hash of tool_versions(): part of every cache key."""
    text = json.dumps(tool_versions(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def fragments_key(flavour):
    """A hash of the flavour's fragments as they are now (names and text).
    Here rather than in the build package: the hash of its modules names
    every stored image (kbuild.build_key())."""
    if flavour not in kconfig.FLAVOURS:
        raise ForkError("unknown config flavour %r: choose one of %s"
                        % (flavour, ", ".join(sorted(kconfig.FLAVOURS))))
    h = hashlib.sha256(flavour.encode())
    for name in kconfig.FLAVOURS[flavour]:
        with open(os.path.join(repo_root(), "ci", "kconfig", name), "rb") as fh:
            h.update(name.encode() + b"\0" + fh.read())
    return h.hexdigest()[:12]


def cache_key(flavour, test, guest_accel="tcg", runner="qemu"):
    """What a verdict was produced by, besides the tree: the config flavour
    and its fragments, the guest test and its inputs (ci/guest), the kit's
    code, the QEMU and e2fsprogs versions first on PATH (tools_key();
    named in the entry as `tools`) and the accelerator the guest ran
    under (TCG's key names none, as before the kit knew KVM), and what
    booted it when not the kit's own QEMU (a LAVA runner: its verdict
    never answers a request for the other, nor joins its runs)."""
    return "%s-%s-%s-%s-%s-%s%s%s" % (flavour, test, fragments_key(flavour),
                                      guesttests.test_key(test), kit_key(), tools_key(),
                                      "" if guest_accel == "tcg" else "-" + guest_accel,
                                      "" if runner in (None, "qemu") else "-" + runner)


def cache_path(tree, flavour, test, guest_accel="tcg", runner="qemu"):
    return os.path.join(ensure_dir(wpath("cache", "check")),
                        "%s-%s.json" % (tree, cache_key(flavour, test, guest_accel, runner)))


def cached(tree, flavour, test, guest_accel="tcg", runner="qemu"):
    """The record of this cell under that accelerator: the row of its
    latest completed run with every run (`runs`), pass or fail ("passed"
    says which), or None (also when every run on record was an error of
    the runner: the cell has no verdict yet)."""
    row = read_record(cache_path(tree, flavour, test, guest_accel, runner), tree, guest_accel,
                      runner)
    return row if row and completed(runs_of(row)) else None


def records_of(tree, flavour, test):
    """[(accel, runner, row)]: the record of this cell (cached()) under each
    accelerator and runner that has one (TCG, KVM; the kit's QEMU, lava,
    lava-server), whose verdicts never answer for each other's requests:
    what judges the tree on every run it had (export)."""
    return [(a, r, row) for a in accel.ACCELS for r in runners.RUNNERS
            for row in [cached(tree, flavour, test, a, r)] if row is not None]


def cache_files(tree, flavour, test):
    """[(path, accel, runner)] of every file of the check cache that may
    hold a record of `tree` under `flavour` and `test`, whatever its key
    (an older kit, QEMU, e2fsprogs, ci/guest or fragments: the file name
    after `<tree>-<flavour>-<test>-` is hashes, then `-<accel>` when not
    TCG and `-<runner>` when not the kit's QEMU: cache_key())."""
    top = wpath("cache", "check")
    prefix = "%s-%s-%s-" % (tree, flavour, test)
    out = []
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        if not (name.startswith(prefix) and name.endswith(".json")):
            continue
        rest = name[len(prefix):-len(".json")]
        # hashes first: "emergency-remount-<hash>" is not test "emergency"'s
        if not re.match(r"[0-9a-f]+(-|$)", rest):
            continue
        guest_accel, runner = "tcg", "qemu"
        for r in runners.RUNNERS:
            if r != "qemu" and rest.endswith("-" + r):
                runner, rest = r, rest[:-len(r) - 1]
                break
        for a in accel.ACCELS:
            if a != "tcg" and rest.endswith("-" + a):
                guest_accel = a
        out.append((os.path.join(top, name), guest_accel, runner))
    return out


def every_record_of(tree, flavour, test):
    """[(path, accel, runner, row)]: every record of this cell in the check
    cache whatever its key (cache_files()), each read as cached() reads
    one (a record whose row disagrees with its key's accelerator or
    runner, or with no completed run, is none): every run the tree had
    here, for export to judge it on."""
    out = []
    for path, guest_accel, runner in cache_files(tree, flavour, test):
        row = read_record(path, tree, guest_accel, runner)
        if row and row.get("flavour", flavour) == flavour and row.get("test", test) == test \
                and completed(runs_of(row)):
            out.append((path, guest_accel, runner, row))
    return out


def row_accel(row):
    """The accelerator a row or run was produced under: a record that names
    none is TCG's (the kit's only one before)."""
    return row.get("accel") or "tcg"


def read_record(path, tree, guest_accel="tcg", runner="qemu"):
    try:
        with open(path) as fh:
            row = json.load(fh)
    except (OSError, ValueError):
        return None
    # Only a complete row of exactly this tree that booted its image under
    # this accelerator counts.
    if not isinstance(row, dict) or row.get("tree") != tree or not row.get("image_sha256") \
            or set(row.get("cells", {})) != set(CELLS) or row_accel(row) != guest_accel \
            or (row.get("runner") or "qemu") != (runner or "qemu"):
        return None
    return row


def choose_accel(prog):
    """The accelerator this process's check guests run under (guest/accel.py)."""
    return accel.choose_once(kernels_dir(), run_guest, prog)


@contextlib.contextmanager
def _records_locked(path):
    """One writer at a time for the records beside `path` (two checks at
    once must not lose each other's runs)."""
    with open(os.path.join(os.path.dirname(path), "records.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def cells_pass(cells):
    return all(v in ("pass", "n/a") for v in cells.values())


def failure_text(row):
    """What failed a run, in one line: the failing reports' titles, else
    each failing cell with the start of its detail."""
    titles = [r["title"] for r in row.get("reports", []) if r.get("verdict") == "FAIL"]
    if titles:
        return "; ".join(titles[:3]) + (" (and %d more)" % (len(titles) - 3)
                                         if len(titles) > 3 else "")
    failed = [c for c in RUN_CELLS if row["cells"].get(c) not in ("pass", "n/a")]
    details = row.get("details", {})
    return "; ".join("%s: %s" % (c, " ".join(str(details.get(c, "FAIL")).splitlines()[:2]))
                     for c in failed if c != "boot" or failed == ["boot"])


def run_entry(row, excuse=None):
    """One run on record: its verdict on the tree (RUN_CELLS), what it
    booted and, for a failure, what failed it and `excuse` (the keys under
    which the base's evidence would excuse each report that failed it,
    None when something else failed it too); for an error of the runner,
    `error` (why) instead."""
    cells = {c: row["cells"].get(c, "-") for c in RUN_CELLS}
    entry = {"commit": row.get("commit"), "passed": cells_pass(cells), "cells": cells,
             "image_sha256": row.get("image_sha256"),
             "console": row.get("details", {}).get("boot"), "log": row.get("log"),
             "kit": row.get("kit"), "tools": row.get("tools"), "accel": row.get("accel")}
    if row.get("runner"):
        entry["runner"] = row["runner"]
    if row.get("error"):
        entry["error"] = row["error"]
        # the console the runner wrote before it failed (lava.boot_result()), or none
        entry["console"] = row.get("details", {}).get("console")
    elif not entry["passed"]:
        entry["failure"] = failure_text(row)
        entry["excuse"] = excuse
    return entry


def runs_of(row):
    """The runs on record for `row`; a row written before runs were kept (an
    older record, a committed --json file) is its own one run."""
    return row.get("runs") or [run_entry(row)]


def completed(runs):
    """The runs that give a verdict: all but the errors of the runner."""
    return [r for r in runs if not r.get("error")]


def base_shows(failed, known):
    """The base's evidence (`known`: {key: evidence}, see reports.judge())
    for every report that failed the runs `failed`, or None when one of
    them failed on anything else or on a report the base has not shown."""
    if not isinstance(known, dict):
        return None
    evidence = set()
    for r in failed:
        keys = r.get("excuse")
        if not keys or any(k not in known for k in keys):
            return None
        evidence |= {known[k] for k in keys}
    return "; ".join(sorted(evidence))


def judge_runs(row, known=None):
    """Judge `row` on every run on record that completed (an error of the
    runner judges nothing): "flaky" ("flaky: k of n runs failed") when some
    failed and others passed, and then no pass, unless the latest run
    passed and the base shows every report that failed the others
    ("flaky_excused": its evidence); sets "passed" (never for a row whose
    own cells are an error's)."""
    runs = completed(runs_of(row))
    failed = [r for r in runs if not r["passed"]]
    row.pop("flaky", None)
    row.pop("flaky_excused", None)
    if failed and len(failed) < len(runs):
        row["flaky"] = "flaky: %d of %d runs failed" % (len(failed), len(runs))
        shown = base_shows(failed, known) if runs[-1]["passed"] else None
        if shown:
            row["flaky_excused"] = shown
    row["passed"] = row_passed(row)
    return row


def row_passed(row):
    return cells_pass(row["cells"]) and ("flaky" not in row or "flaky_excused" in row)


def record_run(path, row, known=None, excuse=None):
    """Add `row`'s run to the record at `path` (the runs before it kept: a
    failure is never erased), judge the row on all of them (judge_runs())
    and store it.  An error of the runner adds its run only: a record with
    a completed run keeps that run's row (its cells and verdict)."""
    with _records_locked(path):
        before = read_record(path, row["tree"], row_accel(row), row.get("runner") or "qemu")
        row["runs"] = (runs_of(before) if before else []) + [run_entry(row, excuse)]
        judge_runs(row, known)
        stored = row
        if row.get("error") and before and completed(runs_of(before)):
            stored = judge_runs(dict(before, runs=row["runs"]), known)
        write_json(path, stored)    # synced, replaced in one step


class _AnyKey(dict):
    """A `known` for reports.judge() that holds every key: the reports it
    still fails are those that no evidence of the base excuses."""

    def __contains__(self, key):
        return key is not None

    def __getitem__(self, key):
        return key


def excuse_keys(failing, ext2_symbols, changed):
    """The keys under which the base's evidence would excuse each report of
    `failing` by reports.judge() (outside ext2 its signature, in ext2's code
    its ext2_key), or None when one of them is never excused (ext2's own
    message, a leak of unknown origin, a report in code the commit
    changed)."""
    functions = set(ext2_symbols)
    still, excusable = reports.judge(list(failing), ext2_symbols, _AnyKey(), changed)
    if still:
        return None
    return [r.ext2_key if r.in_code(functions) else r.signature for r, _ in excusable]


def sanitizer_reports(log, spec):
    """(every report parsed from console `log`, those of them that the guest
    test `spec` neither expects nor allows): what a sanitizer kernel's
    reports are judged on."""
    allowed = [re.compile(e) for e in spec.expect + spec.allow]
    parsed = reports.parse(log)
    return parsed, [r for r in parsed if not any(e.search(r.first_line) for e in allowed)]


def run_test(image, test, timeout, prog, log, label, known=None, ext2_symbols=(),
             flavour="base", changed=ALL, runner="qemu"):
    """Boot `image` with guest test `test`; return {"cells", "details",
    "results", "reports"} for boot, test, e2fsck and counts.

    With `known` None every kernel report fails the boot.  For sanitizer
    kernels `known` is "base" or {signature: evidence} and the reports are
    judged by reports.judge() against `ext2_symbols` and `changed` (the
    ext2 functions the commit changed relative to the base, or
    funcdiff.ALL).  `flavour` adds its
    boot arguments (qemu.BOOT_ARGS) and, for kmemleak kernels, requires
    the guest's leak scan to have run.  `runner`: what boots the guest
    (guest.runners: the kit's QEMU, lava-run or a LAVA server); where it
    fails rather than the kernel (RunnerError), boot is ERROR and "error"
    says why, with no other cell reached."""
    if known is not None and not ext2_symbols:
        raise ForkError("no list of the functions fs/ext2 defines for %s: reports cannot be "
                        "told apart; rebuild it (`tools/fork build --force`)" % image)
    # the disk is this run's own (cells of one process may run side by side)
    disk = guesttests.image_path("%s-%d-%s" % (label, os.getpid(), uuid.uuid4().hex[:8]))
    try:
        return _boot_and_judge(disk, image, test, timeout, prog, log, label, known,
                               ext2_symbols, flavour, changed, runner)
    except BaseException:
        # an interrupted or failed run (the boot, or e2fsck and the counts
        # after it: a Ctrl-C in the main thread) is no run: its disk is no
        # evidence, and nothing names it
        with contextlib.suppress(OSError):
            os.unlink(disk)
        raise


def _boot_and_judge(disk, image, test, timeout, prog, log, label, known, ext2_symbols,
                    flavour, changed, runner):
    """run_test() on its disk `disk`, which it makes."""
    spec = guesttests.spec(test)
    cells = {"boot": "-", "test": "-", "e2fsck": "-", "counts": "-"}
    details = {}
    guesttests.make_image(disk, spec.size, spec.blocksize, log=log, mkfs_args=spec.mkfs,
                          fs=spec.fs)
    # KVM where the machine's probe showed it works, else TCG (guest/accel.py)
    guest_accel = choose_accel(prog)
    boot_fn = run_guest if runner in (None, "qemu") else runners.boot_function(
        runner, lava.identity(test, guesttests.test_key(test), kit_key(), flavour,
                              qemu=tool_versions()["qemu"]), test)
    try:
        boot = boot_fn(image, spec.script, [disk], timeout=timeout, prog=prog,
                       log=log + ".console", label=label, append=BOOT_ARGS.get(flavour, ""),
                       cache=spec.cache, kvm=guest_accel == "kvm")
    except RunnerError as exc:
        # no verdict on the kernel: an error of the runner, with its reason
        prog.say("%s: error of the runner %s, no verdict: %s" % (label, runner, exc))
        if os.path.exists(disk):
            os.unlink(disk)
        details = {"boot": str(exc)}
        if os.path.exists(log + ".console"):
            details["console"] = log + ".console"   # what the runner read of the guest's console
        return {"cells": dict(cells, boot=ERROR), "details": details,
                "results": [], "reports": [], "accel": guest_accel, "excuse": None,
                "error": str(exc)}
    with open(boot.log, errors="replace") as fh:
        started = any("FORK-GUEST-START" in line for line in fh)
    expected = [re.compile(e) for e in spec.expect]
    allowed = [re.compile(e) for e in spec.expect + spec.allow]
    excused = [p for p in boot.problems if any(e.search(p) for e in allowed)]
    missing = [e.pattern for e in expected if not any(e.search(p) for p in boot.problems)]
    boot.problems = [p for p in boot.problems if p not in excused]
    judged = []
    failing = None
    keys = None       # what would excuse the failing reports (excuse_keys())
    if known is not None:
        parsed, found = sanitizer_reports(boot.log, spec)
        failing, excused_reports = reports.judge(found, ext2_symbols, known, changed)
        if known != "base":
            keys = excuse_keys(failing, ext2_symbols, changed)
        # a report line no parsed report covers is never excused
        covered = {line for r in parsed for line in r.lines}
        failing += [reports.Report(p, [p], "console") for p in boot.problems
                    if p not in covered]
        if keys is not None and len(keys) < len(failing):
            keys = None
        failing.sort(key=lambda r: not r.in_code(set(ext2_symbols)))   # ext2's first
        boot.problems = [r.first_line for r in failing]
        judged = [dict(r.as_dict(), verdict="FAIL") for r in failing] + \
            [dict(r.as_dict(), verdict="known", evidence=ev) for r, ev in excused_reports]
        if excused_reports:
            details["known reports"] = "; ".join(
                "%s (%s)" % (r.title, ev) for r, ev in excused_reports[:5])
    cells["boot"] = "pass" if started and not boot.problems and not boot.error else "FAIL"
    details["boot"] = boot.log
    if excused:
        details["expected reports"] = "; ".join(excused[:3])
    no_scan = flavour in KMEMLEAK_FLAVOURS and started and boot.error is None \
        and not reports.kmemleak_listed(boot.log)
    if no_scan:
        missing.append("the guest's kmemleak scan (FORK-KMEMLEAK-BEGIN/END)")
    if flavour in ACTIVE and started:
        with open(boot.log, errors="replace") as fh:
            if not re.search(ACTIVE[flavour], fh.read()):
                missing.append("the %s kernel's sign that it runs (/%s/)" % (flavour, ACTIVE[flavour]))
    if boot.ok and not missing:
        cells["test"] = "pass"
    else:
        cells["test"] = "FAIL"
        if failing and not boot.error:
            r = failing[0]
            details["test"] = "%s report%s (console log: %s):\n%s" % (
                "ext2" if r.in_code(set(ext2_symbols)) else "kernel (not shown by the base)",
                "" if len(failing) == 1 else " (and %d more)" % (len(failing) - 1),
                boot.log, r.text())
        elif not boot.ok:
            details["test"] = failure_message(boot)
        else:
            details["test"] = "not in the console: %s (console log: %s)" \
                % (", ".join(missing), boot.log)
    results = guesttests.results(boot.output)
    if started and boot.error is None:
        verdicts = guesttests.verify_other(disk, spec.fs, log=log) if spec.fs != "ext2" else \
            guesttests.verify_image(disk, results, log=log, need_statfs=spec.need_statfs,
                                    repair=spec.repair)
        for cell, (verdict, detail) in verdicts.items():
            cells[cell] = verdict
            details[cell] = detail
    if cells_pass(cells):
        if os.path.exists(disk):
            os.unlink(disk)
    else:
        details["disk"] = disk
    # a run that failed only on reports the base may show
    only_reports = keys and started and boot.error is None and boot.rc == 0 and not missing \
        and all(cells[c] in ("pass", "n/a") for c in ("e2fsck", "counts"))
    return {"cells": cells, "details": details, "results": results, "reports": judged,
            "accel": guest_accel,
            "excuse": keys if only_reports else None}


def check_commit(commit, flavour, test, timeout, prog, known=None, changed=ALL, runner="qemu"):
    """checkpatch, build (with patchcheck), boot, guest test, e2fsck and
    counts for one commit; a run that booted the image is added to the
    record (record_run()).  `known`, `changed`: see run_test()."""
    return finish_commit(prepare_commit(commit, flavour, test, prog, known, changed, runner),
                         timeout, prog)


def prepare_commit(commit, flavour, test, prog, known=None, changed=ALL, runner="qemu"):
    """check_commit()'s first half, which takes no guest: checkpatch and
    the build.  Returns the cell that finish_commit() boots (check runs
    the builds one after another and the boots of several cells at once)."""
    tree = git(["rev-parse", commit + "^{tree}"])
    subject = git(["log", "-1", "--format=%s", commit])
    log = new_log("check-%s" % commit[:12])
    # What the run is recorded under (the key hashes ci/): taken before
    # the build and the guest's initramfs read ci/, and compared after the
    # run; the accelerator is the one the guest ran under.
    key = cache_key(flavour, test, runner=runner)
    row = {"commit": commit, "tree": tree, "subject": subject, "flavour": flavour,
           "test": test, "log": log, "cells": {c: "-" for c in CELLS}, "details": {},
           "kit": kit_key(), "tools": tool_versions()}
    t0 = time.monotonic()
    prog.say("%s %s" % (commit[:12], subject))
    row["cells"]["checkpatch"], row["details"]["checkpatch"] = run_checkpatch(commit, log)
    try:
        res = build(commit, flavour, prog=prog)
    except ForkError as exc:
        row["cells"]["build"] = "FAIL"
        row["details"]["build"] = str(exc)
        res = None
    if res is not None:
        if res.tree != tree:
            raise ForkError("built tree %s, expected %s" % (res.tree, tree))
        row["cells"]["build"] = "pass"
        row["details"]["build"] = res.log
        row["details"]["sparse"] = res.sparse
        row.update(image=res.image, image_sha256=res.image_sha256, config_key=res.config_key)
        if known is not None and known != "base":
            # the build's tail calls: their targets stand for a changed
            # function that has no frame of its own
            changed = with_tail_calls(changed, res.ext2_tail_calls, res.ext2_symbols)
            row["ext2_changed_vs_base"] = changed if changed == ALL else sorted(changed)
        choose_accel(prog)      # here, not in a guest's thread: it may probe KVM
    return {"row": row, "key": key, "build": res, "known": known, "changed": changed,
            "spent": time.monotonic() - t0, "runner": runner}


def finish_commit(cell, timeout, prog):
    """check_commit()'s second half: the boot of a prepare_commit() cell
    with a built image (in a guest slot), its verdict and its record;
    returns the row."""
    row, res, known, runner = cell["row"], cell["build"], cell["known"], cell["runner"]
    flavour, test = row["flavour"], row["test"]
    t0 = time.monotonic()
    excuse = None
    if res is not None:
        out = run_test(res.image, test, timeout, prog, row["log"], "check", known=known,
                       ext2_symbols=res.ext2_symbols, flavour=flavour, changed=cell["changed"],
                       runner=runner)
        row["cells"].update(out["cells"])
        row["details"].update(out["details"])
        row["results"] = out["results"]
        row["reports"] = out["reports"]
        row["accel"] = out["accel"]         # the accelerator its guest ran under
        if runner not in (None, "qemu"):
            row["runner"] = runner          # what booted it, if not the kit's QEMU
        if out.get("error"):
            row["error"] = out["error"]     # the runner failed: no verdict (run_test())
        excuse = out.get("excuse")
    row["seconds"] = round(cell["spent"] + time.monotonic() - t0, 1)
    row["passed"] = cells_pass(row["cells"])
    if row["cells"]["boot"] == "-":
        pass                # no image booted: nothing to record
    elif cache_key(flavour, test, runner=runner) != cell["key"]:
        prog.say("%s: not recorded: the test's inputs (ci/guest or the flavour's fragments) "
                 "changed during the run" % row["commit"][:12])
    else:
        # a run whose end the process's stop overtook (its e2fsck still
        # ran) is not recorded: the check is being interrupted
        interrupt.check()
        record_run(cache_path(row["tree"], flavour, test, row["accel"], runner), row, known,
                   excuse)
    return row


def cached_row(commit, flavour, test, prog, runner="qemu"):
    """The recorded row for `commit`'s tree (pass, fail or flaky), or None.
    The same tree under another commit (a reworded log) keeps the build
    and guest results, but checkpatch reads the log, so it runs again."""
    tree = git(["rev-parse", commit + "^{tree}"])
    hit = cached(tree, flavour, test, choose_accel(prog), runner)
    if not hit:
        return None
    if hit["commit"] != commit:
        cell, detail = run_checkpatch(commit, new_log("check-%s" % commit[:12]))
        hit["cells"]["checkpatch"], hit["details"]["checkpatch"] = cell, detail
        hit["passed"] = row_passed(hit)
    hit["cached"] = True
    hit["commit"] = commit
    hit["subject"] = git(["log", "-1", "--format=%s", commit])
    prog.say("%s cached %s (tree %s, image %s, %s)" % (
        commit[:12], "pass" if hit["passed"] else hit.get("flaky", "failure"), tree[:12],
        hit["image_sha256"][:12], row_accel(hit).upper()))
    return hit
