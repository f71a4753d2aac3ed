"""An fstests comparison run, base kernel against series kernel
(``tools/fork fstests`` describes it for the user): the builds, the
boots with what each left on its disks, the results kept per kernel image
and in a --record directory, and the report."""

import hashlib
import os
import shlex
import shutil
import statistics
import tempfile
import threading
import time
import uuid

from ..build.kbuild import build, kernels_dir
from ..core import interrupt
from ..core.errors import ForkError, RunnerError
from ..core.locks import DirLock, guest_slot_count
from ..core.paths import check_output_path, ensure_dir, new_log, repo_root, wpath
from ..core.progress import Progress
from ..core.proc import run, which
from ..core.records import read_json, write_json
from ..guest import accel, fsroot, guesttests, lava, runners
from ..guest.console import Follower
from ..guest.qemu import failure_message, qemu_binary, run_guest
from ..repo.git import rev_parse
from ..repo.series import PRIMARY, Series
from . import fsrecord, fstests
from .kernel import kit_key, kit_version, tool_version

# seconds a boot gets beyond the test time limit: boot, mkfs, report, power off
BOOT_MARGIN = 600
# without --time-limit: the most one boot may take before QEMU is stopped
NO_LIMIT = 12 * 3600
SIDES = ("base", "series")


def split_args(words):
    """(revisions, tests): test names look like generic/001."""
    revs, tests = [], []
    for w in words:
        if fstests.TEST_RE.match(w):
            tests.append(w)
        elif tests:
            raise ForkError("%r comes after test names: give BASE and SERIES first, then the "
                            "tests" % w)
        else:
            revs.append(w)
    if len(revs) > 2:
        raise ForkError("%r is neither a test name (like generic/001) nor needed as a revision: "
                        "give at most BASE and SERIES" % revs[2])
    return revs, tests


def no_probe(*args, **kwargs):
    """The boot FORK_ACCEL=auto's probe would take, under --no-boot."""
    raise ForkError("FORK_ACCEL=auto has not probed KVM with this QEMU and host kernel, and "
                    "--no-boot boots nothing: set FORK_ACCEL=tcg or kvm to name the results "
                    "to report")


def repeat_command(args, revs, tests, group):
    parts = ["tools/fork", "fstests"] + list(revs)
    if args.series != PRIMARY:
        parts += ["--series", args.series]
    if group:
        parts += ["--group", group]
    if getattr(args, "block_size", None):
        parts += ["--block-size", str(args.block_size)]
    if args.time_limit:
        parts += ["--time-limit", str(args.time_limit)]
    if getattr(args, "shards", None):
        parts += ["--shards", str(args.shards)]
    if getattr(args, "runner", None) not in (None, "qemu"):
        parts += ["--runner", args.runner]
    if args.record:
        parts += ["--record", args.record]
    parts += tests
    cmd = " ".join(shlex.quote(p) for p in parts)
    if os.environ.get("FORK_FSTESTS_URL"):
        cmd = "FORK_FSTESTS_URL=%s %s" % (shlex.quote(os.environ["FORK_FSTESTS_URL"]), cmd)
    return cmd


def check_record_dir(record):
    """Refuse a --record directory at or under the work directory's stores
    (work/fstests/kernels): a kernel's record would be its store, or lie
    inside another kernel's, and the two are written under locks of their
    own."""
    kernels = os.path.realpath(wpath("fstests", "kernels"))
    where = os.path.realpath(record)
    if where == kernels or where.startswith(kernels + os.sep):
        raise ForkError("--record %s is among the kit's own fstests stores (%s): name a "
                        "directory outside them, e.g. records/fstests/<ver>" % (record, kernels))


def run_fstests(args):
    """The run `args` (the verb's arguments) ask for; the verb's exit status."""
    prog = Progress("fstests")
    revs, tests = split_args(args.args)
    group = args.group
    if not tests and not group:
        group = "quick"
    if tests and group:
        raise ForkError("give either --group or test names, not both")
    if args.time_limit < 0:
        raise ForkError("--time-limit must be a number of seconds >= 0 (0: no limit)")
    no_boot = getattr(args, "no_boot", False)
    if no_boot and args.fresh:
        raise ForkError("--fresh with --no-boot would only forget results: leave one of them "
                        "out")
    for path, what in ((args.json, "JSON file"), (args.markdown, "markdown file")):
        if path:
            check_output_path(path, what)
    if args.record and os.path.exists(args.record) and not os.path.isdir(args.record):
        raise ForkError("--record %s is a file: name a directory (it is created if missing)"
                        % args.record)
    if args.record:
        check_record_dir(args.record)
    nshards = shard_count(args)
    runner = getattr(args, "runner", None) or "qemu"
    series = Series(args.series)
    revs = list(revs) + [series.distro_branch, series.head_branch][len(revs):]
    commits = [rev_parse(r) for r in revs]
    if not no_boot:     # a report of recorded results needs neither
        qemu_binary()
        for prog_name in ("debugfs", "dumpe2fs", "e2fsck", "mke2fs"):
            which(prog_name, "e2fsprogs")
        which("qemu-img", "qemu-utils")
        # a LAVA runner this machine cannot use is refused before the builds
        runners.check_ready(runner)
    exclude = fstests.parse_exclude()
    log = new_log("fstests-root")
    root = fsroot.ensure_root(prog, log)
    chosen, excluded = fstests.select(tests, group, root["groups"], exclude)
    if not chosen:
        raise ForkError("every selected test is in ci/fstests/ext2.exclude: nothing to run")
    patched = root["inputs"].get("fstests_patches", [])
    prog.say("%d tests (%s)%s; fstests %s at %s%s" % (
        len(chosen), "group " + group if group else "named",
        ", %d excluded" % len(excluded) if excluded else "", root["fstests_url"],
        root["fstests_commit"][:12],
        " + %d patches of ci/fstests/patches" % len(patched) if patched else ""))
    # The series builds (build lock) while the base kernel boots (a guest slot).
    images = {"base": build(revs[0], "fstests", do_patchcheck=False, prog=prog)}
    # KVM where the machine's probe showed it works, else TCG (guest/accel.py)
    guest_accel = accel.choose_once(kernels_dir(), no_probe if no_boot else run_guest, prog)
    later = Background(lambda: build(revs[1], "fstests", do_patchcheck=False, prog=prog))
    profile = fstests.make_profile(getattr(args, "block_size", None))
    profile_key = fstests.profile_key(profile)
    packages = fsrecord.packages_key(root)
    identity = {"root_key": root["key"], "root_packages": packages, "profile": profile_key,
                "fstests_commit": root["fstests_commit"], "fstests_patches": patched,
                "accel": guest_accel, "runner": runner}
    stores, recdirs = {}, {}
    run_id = hashlib.sha256("\n".join([commits[0], commits[1], root["key"], profile_key,
                                       " ".join(chosen)]
                                      + ([guest_accel] if guest_accel != "tcg" else [])
                                      + ([runner] if runner != "qemu" else []))
                            .encode()).hexdigest()[:16]
    rundir = ensure_dir(wpath("fstests", "runs", run_id))
    command = repeat_command(args, revs, tests, args.group)
    meta = {"command": command, "selection": "group " + group if group else " ".join(tests),
            "fstests_url": root["fstests_url"], "fstests_commit": root["fstests_commit"],
            "root_key": root["key"], "suite": root["inputs"]["suite"],
            "fstests_patches": patched, "record": args.record, "root_packages": packages,
            "profile": profile, "tests": chosen, "excluded": excluded,
            "run_dir": rundir, "accel": guest_accel, "runner": runner}
    with open(os.path.join(rundir, "command.txt"), "w") as fh:
        fh.write(command + "\n")
    prog.say("run directory %s" % rundir)
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    results = {}
    try:
        for n, side in enumerate(SIDES):
            if side not in images:
                waited = time.monotonic()
                images[side] = later.result()
                if deadline is not None:    # builds do not count against the limit
                    deadline += time.monotonic() - waited
            img = images[side]
            meta[side] = {"rev": revs[n], "commit": commits[n], "image": img.image,
                          "image_sha256": img.image_sha256, "version": img.version}
            # results are kept per kernel image (and root, profile,
            # accelerator and runner): a base run serves every series
            # compared with it, and a LAVA runner's results are never the
            # kit's own QEMU's, nor the reverse
            name = fsrecord.store_name(img.image_sha256, root["key"], packages, profile_key,
                                       guest_accel, runner)
            store = stores[side] = ensure_dir(wpath("fstests", "kernels", name))
            rpath = os.path.join(store, "tests.json")
            bpath = os.path.join(store, "boots.json")
            ident = dict(identity, image_sha256=img.image_sha256, rev=revs[n],
                         commit=commits[n], tree=getattr(img, "tree", None),
                         version=img.version)
            recdir = recdirs[side] = os.path.join(args.record, name) if args.record else None
            # other runs of this kernel (shards of a group) may write the
            # store at the same time: every read-modify-write holds its lock
            with DirLock(store):
                results[side] = read_json(rpath, {})
                if recdir:
                    results[side] = merge_record(recdir, ident, results[side], rpath, bpath,
                                                 side, prog)
                if args.fresh:
                    results[side] = {t: r for t, r in results[side].items()
                                     if t not in chosen}
                    write_json(rpath, results[side])
                    if recdir:      # else the next run would take them back
                        fsrecord.save(recdir, ident, results[side], read_json(bpath, []),
                                      forget=chosen)
            # earlier runs' test times, which the shards are balanced by
            seconds = recorded_seconds(record_tops(args.record), guest_accel)
            while True:
                todo = [t for t in chosen if t not in results[side]]
                if not todo or no_boot:
                    break
                if deadline is not None:
                    budget = (deadline - time.monotonic()) / (len(SIDES) - n)
                    if budget < 60:
                        prog.say("%s: time limit reached, %d tests not run" % (side, len(todo)))
                        break
                else:
                    budget = NO_LIMIT
                shards = fstests.split_shards(todo, seconds, nshards)
                infos, failed = boot_shards(
                    side, img, shards, budget, store, root, prog, len(chosen) - len(todo),
                    len(chosen), recdir, ident, commits[n], profile, guest_accel, runner)
                with DirLock(store):
                    results[side] = read_json(rpath, {})
                if recdir and infos:
                    prog.say("%s: %d tests recorded in %s" % (side, len(results[side]),
                                                                recdir))
                if failed is not None:
                    raise failed
                if any(info["limit"] for info in infos):
                    break
                if not any(t in results[side] for t in todo):
                    raise ForkError("the %s guest ran no test: %s" % (
                        side, "; ".join(str(i["error"]) for i in infos)))
    finally:
        later.wait()
    # every boot that gave these kernels' results, earlier runs included;
    # its e2fsck and reports count for the side its kernel has in this run
    # (a store is per kernel image, and serves other runs too)
    consoles = [(side, b, [b.get("console")] + ([fsrecord.console_path(recdirs[side], b["n"])]
                                                if recdirs.get(side) else []))
                for side in SIDES if side in stores
                for b in read_json(os.path.join(stores[side], "boots.json"), [])
                if set(b.get("tests", [])) & set(chosen)]
    boots = [b for _, b, _ in consoles]
    rows = fstests.compare(chosen, results["base"], results["series"])
    meta["e2fsck"] = e2fsck_summary([(side, b) for side, b, _ in consoles])
    # tests a boot cut at the time limit (each ran again, or is pending)
    meta["cuts"] = ["%s boot %d: %s" % (side, b["n"], b["cut"]) for side in SIDES
                    if side in stores
                    for b in read_json(os.path.join(stores[side], "boots.json"), [])
                    if b.get("cut") in chosen]
    kinds, missing = fstests.kernel_reports(consoles, chosen)
    meta["report_kinds"] = kinds
    meta["reports_summary"] = fstests.reports_summary(kinds, missing,
                                                      len(consoles) - len(missing))
    if runner != "qemu":
        # the time LAVA adds per job: each boot's job against its guest's own
        meta["runner_time"] = fstests.runner_time(boots)
    report = {"meta": meta, "tests": rows, "boots": boots,
              "totals": {s: fstests.totals(rows, s) for s in SIDES}}
    write_json(os.path.join(rundir, "fstests.json"), report)
    md = fstests.markdown(meta, rows, excluded)
    with open(os.path.join(rundir, "fstests.md"), "w") as fh:
        fh.write(md)
    if args.json:
        write_json(args.json, report)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(md)
    print(fstests.table(rows))
    for t in sorted(excluded):
        print("excluded %s: %s" % (t, excluded[t]))
    for s in SIDES:
        tot = report["totals"][s]
        print("%s: %d pass, %d fail, %d notrun, %ds of tests" % (
            s, tot["pass"], tot["fail"], tot["notrun"], tot["seconds"]))
    print("e2fsck -fn after each boot: %s" % meta["e2fsck"])
    print("kernel reports in the consoles: %s" % meta["reports_summary"])
    if runner != "qemu":
        print(fstests.runner_time_line(runner, meta["runner_time"]))
    print("results: %s (fstests.json, fstests.md; per boot console.log, results/, e2fsck.txt "
          "under %s)" % (rundir, ", ".join(stores[s] for s in SIDES if s in stores)))
    print("repeat: %s" % command)
    new = [r for r in rows if r["verdict"] == "new failure"]
    pending = [r for r in rows if r["verdict"] == "pending"]
    if new:
        prog.say("%d new failures on the series: %s" % (len(new), ", ".join(
            "%s (%s)" % (r["test"], r["series_message"][:80]) for r in new)))
        return 1
    if pending:
        prog.say("incomplete: %d tests have not run on both kernels yet%s; run the same command "
                 "%s to continue" % (
                     len(pending),
                     " (in the stores of %s guests through %s: FORK_ACCEL and --runner name "
                     "others)" % (guest_accel.upper(), runner) if no_boot else "",
                     "without --no-boot" if no_boot else "again"))
        return 3
    prog.say("no new failures")
    return 0


def e2fsck_summary(boots):
    """One line on the host's e2fsck of every boot, boots as [(side in this
    run, boot)]."""
    bad = ["boot %s %s: %s %s" % (side, b["n"], d, v) for side, b in boots
           for d, v in sorted(b["e2fsck"].items()) if v not in ("clean", fstests.WIPED)]
    if not boots:
        return "n/a"
    wiped = sum(1 for _, b in boots for v in b["e2fsck"].values() if v == fstests.WIPED)
    return "clean (%d boots, test and scratch disks%s)" % (
        len(boots), "; %d scratch disks left wiped by fstests" % wiped if wiped else "") \
        if not bad else "; ".join(bad)


class Background(threading.Thread):
    """Runs fn() in a thread; result() waits and returns it or raises what
    it raised."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.value, self.exc = fn, None, None
        self.ended = threading.Event()
        self.start()

    def run(self):
        try:
            self.value = self.fn()
        except BaseException as exc:    # re-raised in the caller's thread
            self.exc = exc
        finally:
            self.ended.set()

    def wait(self):
        """Until fn() has ended.  Not join(): a join() that a Ctrl-C
        interrupts marks the thread as ended while it runs on (Python
        3.11's Thread._wait_for_tstate_lock()), and every later join()
        returns at once."""
        self.ended.wait()

    def result(self):
        self.wait()
        if self.exc is not None:
            raise self.exc
        return self.value


class TestFollower(Follower):
    """Prints a progress line per finished test while the guest runs
    (run_guest's `follow`), from the console log (check's result line per
    test)."""

    def __init__(self, log, side, done, total, prog):
        super().__init__(log, 3)
        self.side, self.done0, self.total, self.prog = side, done, total, prog
        self.text = []
        self.seen = set()
        self.t0 = time.monotonic()

    def lines(self, new):
        self.text += new
        # every line end as text mode reads it (a lone \r ends a line too)
        text = "\n".join(self.text).replace("\r", "\n")
        for test, status in fstests.console_tests(text):
            if status is None or test in self.seen:
                continue
            self.seen.add(test)
            done = self.done0 + len(self.seen)
            el = time.monotonic() - self.t0
            est = el / len(self.seen) * (self.total - done)
            self.prog.say("%s %d/%d %s %s (boot elapsed %dm%02ds, about %dm left for %s)" % (
                self.side, done, self.total, test, status, el // 60, el % 60, est // 60,
                self.side))


def shard_count(args):
    """--shards, or as many as there are guest slots."""
    n = getattr(args, "shards", None)
    if n is None:
        return guest_slot_count()
    if n < 1:
        raise ForkError("--shards must be a number of guests >= 1 (default: the guest slots, "
                        "%d here)" % guest_slot_count())
    return n


def record_tops(record=None):
    """The directories of kernel stores whose test times balance the
    shards: this work directory's, the --record directory and every
    version's committed records in the repository."""
    top = os.path.join(repo_root(), "records", "fstests")
    versions = sorted(os.listdir(top)) if os.path.isdir(top) else []
    return [wpath("fstests", "kernels")] + ([record] if record else []) + \
        [os.path.join(top, v) for v in versions]


def recorded_seconds(tops, guest_accel):
    """{test: the median of its recorded seconds} over every kernel store
    under `tops`, each kernel once (the first top that has its store: a
    record repeats the work directory's store); stores of the accelerator
    `guest_accel` (fsrecord.store_accel()) answer for a test they hold,
    the others for the rest."""
    times, seen = {True: {}, False: {}}, set()
    for top in tops:
        try:
            names = sorted(os.listdir(top))
        except OSError:
            continue
        for name in names:
            tests = None if name in seen else \
                read_json(os.path.join(top, name, "tests.json"), None)
            if not isinstance(tests, dict):
                continue
            seen.add(name)
            same = fsrecord.store_accel(name) == guest_accel
            for t, r in tests.items():
                if isinstance(r, dict) and isinstance(r.get("seconds"), (int, float)):
                    times[same].setdefault(t, []).append(r["seconds"])
    out = {}
    for same in (False, True):
        for t, secs in times[same].items():
            out[t] = statistics.median(secs)
    return out


def shard_name(side, i, count, n, tests):
    """A shard in one line: its kernel's side, its number, its boot and
    its tests (the first three)."""
    return "%s shard %d/%d (boot %d; %d test%s: %s%s)" % (
        side, i + 1, count, n, len(tests), "" if len(tests) == 1 else "s",
        ", ".join(tests[:3]), " and %d more" % (len(tests) - 3) if len(tests) > 3 else "")


def boot_shards(side, img, shards, budget, store, root, prog, done, total, recdir, ident,
                commit, profile, guest_accel, runner="qemu"):
    """Boot `img` once per shard (a list of tests), all at once, each in a
    guest slot of its own (the runner waits for one), and add each boot to
    the store and the record as it ends.  Returns (the boots' records, the
    first error a shard raised or None; a ForkError names its shard): the
    other shards run on and are kept.  A shard whose runner failed (a LAVA
    job: RunnerError) or whose boot failed otherwise adds no boot and gives
    its number back; the same command runs its tests again.  One shard runs
    in this thread, as the kit did before shards."""
    def one(i, tests):
        n = next_boot(store, read_json(os.path.join(store, "boots.json"), []), recdir)
        label = side if len(shards) == 1 else "%s shard %d/%d" % (side, i + 1, len(shards))
        try:
            info = boot(side, img.image, tests, budget, store, root, prog,
                        done if len(shards) == 1 else 0,
                        total if len(shards) == 1 else len(tests), n, img.config, profile,
                        guest_accel, label=label, runner=runner, ident=ident)
            # a boot whose end the process's stop overtook (its e2fsck or
            # debugfs still ran) is not added: the run is being interrupted
            interrupt.check()
        except RunnerError as exc:
            release_boot(recdir, n)
            raise ForkError("%s: error of the runner %s, no verdict: %s; no boot of it is "
                            "recorded: run the same command again to run its tests"
                            % (shard_name(side, i, len(shards), n, tests), runner, exc)) \
                from None
        except ForkError as exc:
            release_boot(recdir, n)
            raise ForkError("%s: %s" % (shard_name(side, i, len(shards), n, tests), exc)) \
                from None
        except BaseException:
            release_boot(recdir, n)
            raise
        info["commit"] = commit
        add_boot(store, recdir, ident, info)
        return info

    if len(shards) == 1:
        return [one(0, shards[0])], None
    prog.say("%s: %d tests in %d shards at once (%s tests; by recorded times)" % (
        side, sum(map(len, shards)), len(shards), " + ".join(str(len(s)) for s in shards)))
    workers = [Background(lambda i=i, s=s: one(i, s)) for i, s in enumerate(shards)]
    try:
        for w in workers:
            w.wait()
    except BaseException:
        # Ctrl-C reaches this thread only: the shards' threads end their
        # guests, add no boot and raise (core/interrupt.py).  The guests
        # first, then the line (on a stderr that the same Ctrl-C may have
        # closed); a further Ctrl-C while the threads end is part of the stop
        with interrupt.stopping():
            prog.say("%s: interrupted: stopping the guests of the shards" % side)
            for w in workers:
                w.wait()
        raise
    infos = [w.value for w in workers if w.exc is None]
    failed = next((w.exc for w in workers if w.exc is not None), None)
    return infos, failed


def next_boot(store, boots, recdir=None):
    """The number of the next boot of this kernel, its store/boot-<n> (and
    with a record, recdir/boot-<n>) made here: after every boot in
    boots.json (recorded ones included) and every boot-<n> directory of
    the store and of the record.  The directories are made with mkdir,
    which only one caller wins: two runs of one kernel that ask at once
    get two numbers, from one work directory or from two that share the
    record (the empty boot-<n> of the record is the boot's until it is
    saved there)."""
    used = [b["n"] for b in boots] + fsrecord.boot_dirs(store)
    if recdir:
        used += fsrecord.boot_dirs(recdir)
    n = max(used, default=0) + 1
    while True:
        mine = os.path.join(ensure_dir(store), "boot-%d" % n)
        try:
            os.mkdir(mine)
        except FileExistsError:
            n += 1
            continue
        if recdir:
            try:
                os.makedirs(os.path.join(recdir, "boot-%d" % n))
            except FileExistsError:
                os.rmdir(mine)
                n += 1
                continue
        return n


def release_boot(recdir, n):
    """Give back boot n's number in the record when the boot ended without
    a result to save: its empty boot-<n>, and the record's directory if
    that leaves it empty."""
    if not recdir:
        return
    for d in (os.path.join(recdir, "boot-%d" % n), recdir):
        try:
            os.rmdir(d)
        except OSError:
            return


def add_boot(store, recdir, ident, info):
    """Add a finished boot (`info`, its test results in "records") to the
    store's tests.json and boots.json and to the record, as they are now:
    under the store's lock, read anew, so that what other runs of this
    kernel added meanwhile stays.  Returns the store's results."""
    with DirLock(store):
        rpath = os.path.join(store, "tests.json")
        bpath = os.path.join(store, "boots.json")
        results = read_json(rpath, {})
        results.update(info.pop("records"))
        write_json(rpath, results)
        boots = [b for b in read_json(bpath, []) if b["n"] != info["n"]] + [info]
        write_json(bpath, boots)
        if recdir:
            fsrecord.save(recdir, ident, results, boots)
    return results


def merge_record(recdir, ident, results, rpath, bpath, side, prog):
    """Add what recdir holds for this kernel to its store (tests.json and
    boots.json); tests finished here win.  Returns the merged results.
    The caller holds the store's lock; the record is read under its own."""
    rec_tests, rec_boots = {}, []
    if os.path.isdir(recdir):
        with DirLock(recdir):       # read whole, while no other run writes it
            rec_tests, rec_boots = fsrecord.load(recdir, ident)
    boots = read_json(bpath, [])
    have = {b["n"]: b for b in boots}
    added = 0
    for b in rec_boots:
        mine = have.get(b["n"])
        if mine is None:
            boots.append(b)
            added += 1
        elif mine.get("id") != b.get("id"):
            raise ForkError("boot %d of the %s kernel in %s is not the boot %d in %s: move "
                            "one of them away" % (b["n"], side, recdir, b["n"],
                                                  os.path.dirname(bpath)))
    new = {t: r for t, r in rec_tests.items() if t not in results}
    if added or new:
        results = dict(new, **results)
        write_json(rpath, results)
        write_json(bpath, sorted(boots, key=lambda b: b["n"]))
    if rec_tests:
        prog.say("%s: %d tests recorded in %s (%d of them not in this machine's store)"
                 % (side, len(rec_tests), recdir, len(new)))
    return results


def lava_identity(ident, profile, tests):
    """The LAVA job's metadata of a shard (lava.fstests_identity()): the
    kernel's identity in the store (`ident`), the harness, the shard's
    tests, the kit and the QEMU this machine names."""
    return lava.fstests_identity(ident.get("image_sha256"), ident.get("root_key"),
                                 ident.get("root_packages"), ident.get("profile"),
                                 ident.get("fstests_commit"), fstests.harness_key(profile),
                                 tests, kit_key(), tool_version("qemu-system-x86_64",
                                                                "--version"))


def root_overlay(image, overlay):
    """A copy-on-write overlay of the fstests root `image` at `overlay`
    (qcow2, backed by the raw image): the guests that run at once share
    the root, each writes only its own overlay.  The root is made
    read-only, so that no guest writes it by mistake."""
    mode = os.stat(image).st_mode
    if mode & 0o222:
        os.chmod(image, mode & ~0o222)
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
         os.path.abspath(image), overlay])


def boot(side, kernel, tests, budget, store, root, prog, done, total, n, config,
         profile=None, guest_accel="tcg", label=None, runner="qemu", ident=None):
    """One guest run of `tests` on `kernel` (whose .config is `config`);
    returns the boot's record.  Its console log, results tree and e2fsck
    output go to store/boot-<n>.  `runner` boots the guest
    (guest/runners.py): the kit's QEMU, or a LAVA job that names the
    shard by `ident` (the kernel's identity: image, root, profile, fstests)
    and its tests and is given the same four disks (the root's overlay as
    qcow2).  A RunnerError where LAVA failed, not the kernel."""
    if not config or not os.path.isfile(config):
        raise ForkError("no kernel config beside %s (%s): fstests' quota tests read it; "
                        "run `tools/fork build REV --config fstests --no-patchcheck` to store it"
                        % (kernel, config))
    bdir = ensure_dir(os.path.join(store, "boot-%d" % n))
    disks = {d: os.path.join(bdir, d + ".img") for d in ("root", "test", "scratch", "results")}
    disks["root"] = os.path.join(bdir, "root.qcow2")
    stage = tempfile.mkdtemp(prefix="fstests-results-disk-", dir=ensure_dir(wpath("tmp")))
    try:
        root_overlay(root["image"], disks["root"])
        for d in ("test", "scratch", "results"):
            with open(disks[d], "wb") as fh:
                fh.truncate(fstests.DISK_MB[d] << 20)
        # the results disk starts with the kernel's config (KCONFIG_PATH)
        staged = os.path.join(stage, fstests.KCONFIG_NAME)
        shutil.copyfile(config, staged)
        with open(staged, "rb") as fh:
            config_sha = hashlib.sha256(fh.read()).hexdigest()
        run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "results", "-d", stage,
             disks["results"]])
        limit = max(60, int(budget) - 120)
        script = fstests.guest_script(tests, limit, profile)
        with open(os.path.join(bdir, "guest-script.sh"), "w") as fh:
            fh.write(script)
        log = os.path.join(bdir, "console.log")
        prog.say("%s boot %d: %d tests on %s (test time limit %ds)"
                 % (label or side, n, len(tests), os.path.basename(kernel), limit))
        boot_fn = run_guest if runner in (None, "qemu") else runners.boot_function(
            runner, lava_identity(ident or {}, profile, tests), "fstests")
        res = boot_fn(kernel, script, [disks[d] for d in ("root", "test", "scratch",
                                                           "results")],
                      timeout=limit + fstests.CUT_GRACE + BOOT_MARGIN, prog=prog, log=log, label="fstests",
                      follow=TestFollower(log, label or side, done, total, prog),
                      kvm=guest_accel == "kvm")
        fsck = {}
        with open(os.path.join(bdir, "e2fsck.txt"), "w") as out:
            for d in ("test", "scratch"):
                proc = run(["e2fsck", "-fn", disks[d]], check=False,
                           canceled=guesttests.E2FSCK_CANCELED)
                out.write("$ e2fsck -fn %s (exit %d)\n%s%s\n" % (d, proc.returncode,
                                                                 proc.stdout, proc.stderr))
                head = run(["dumpe2fs", "-h", disks[d]], check=False)
                state = (fstests.fs_state(head.stdout) or "no state line in dumpe2fs -h") \
                    if head.returncode == 0 else "not read (dumpe2fs -h exit %d)" % head.returncode
                out.write("$ dumpe2fs -h %s (exit %d): %s\n%s\n"
                          % (d, head.returncode, state, head.stderr))
                fsck[d] = fstests.fsck_verdict(proc.returncode, proc.stdout + proc.stderr,
                                               os.path.join(bdir, "e2fsck.txt"), state)
        resdir = os.path.join(bdir, "results")
        if os.path.exists(resdir):
            shutil.rmtree(resdir)
        ensure_dir(resdir)
        run(["debugfs", "-R", "rdump /%s %s" % (fstests.RESULT_DIR, resdir), disks["results"]])
        xml = os.path.join(resdir, fstests.RESULT_DIR, "result.xml")
        xunit_notes = []
        xunit = fstests.parse_xunit(xml, xunit_notes) if os.path.exists(xml) else {}
        for note in xunit_notes:
            prog.say("%s boot %d: %s" % (side, n, note))
        with open(log, errors="replace") as fh:
            console = fh.read()
        records, limit_hit = fstests.boot_records(tests, xunit, console,
                                                  bool(res.error and "timed out" in res.error))
        cut = fstests.cut_test(console)
        if cut:
            prog.say("%s boot %d: %s was cut at the time limit: %s"
                     % (side, n, cut, "left to run again" if cut not in records else
                        "the kill did not end it, recorded as a hang"))
            if cut in records:      # a failure of its own, no test left to run
                cut = None
    finally:
        for d in ("root", "test", "scratch", "results"):
            try:
                os.unlink(disks[d])
            except OSError:
                pass
        shutil.rmtree(stage, ignore_errors=True)
    error = None if res.ok else failure_message(res)
    if res.problems:
        prog.say("%s boot %d: %d kernel reports in the console, first: %s"
                 % (side, n, len(res.problems), res.problems[0]))
    counts = {s: sum(1 for r in records.values() if r["status"] == s) for s in fstests.STATUSES}
    prog.say("%s boot %d: %d tests finished (%s) in %.0fs; e2fsck test: %s, scratch: %s"
             % (side, n, len(records), ", ".join("%d %s" % (counts[s], s)
                                                for s in fstests.STATUSES),
                res.seconds, fsck["test"], fsck["scratch"]))
    # the runner's wall time (QEMU's; a LAVA job's, as the kit waited for
    # it) and the guest's own (QEMU's; by LAVA's time stamps), which LAVA
    # may not give (None)
    guest_secs = getattr(res, "guest_seconds", res.seconds)
    return {"side": side, "n": n, "id": uuid.uuid4().hex[:16], "dir": bdir, "console": log,
            "seconds": round(res.seconds), "runner": runner or "qemu",
            "guest_seconds": round(guest_secs) if guest_secs is not None else None,
            "tests": sorted(records), "tests_asked": len(tests), "tests_done": len(records), "limit": limit_hit,
            "cut": cut,
            "error": error, "kernel_reports": res.problems[:20], "e2fsck": fsck,
            "harness": fstests.harness_key(profile), "kit": kit_key(), "kit_commit": kit_version(),
            "xunit_notes": xunit_notes,
            "kernel_config": config_sha, "accel": guest_accel,
            "xunit": xml if os.path.exists(xml) else None, "records": records}
