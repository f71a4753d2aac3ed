"""A/B benchmarks of two kernels side by side (``tools/fork bench``
describes the method for the user): the kernels, the disk images, the
boots in rotating order with the host's load followed, the samples and
what benchlib makes of them."""

import json
import os
import re
import shlex
import shutil
import time

from ..build.kbuild import build
from ..core.errors import ForkError
from ..core.paths import (check_output_dir, ensure_dir, ktree, workdir_relative,
                          wpath)
from ..core.progress import Progress
from ..core.proc import run, which
from ..guest import guesttests
from ..guest.console import Follower
from ..guest.qemu import ICOUNT_ARGS, failure_message, run_guest
from ..repo.git import rev_parse
from ..repo.patchfile import patch_id_of_commit
from ..repo.series import default_revs
from . import benchlib
from .kernel import kit_version

SMP = 2
MEM = "2048"
OUTPUTS = ("json", "md", "cmd", "png")
# Fixed identifiers: the templates are byte-identical from run to run.
IMAGE_UUID = "6b1f0c1e-5e6c-4b51-9d5c-3a6f1f2a0001"
IMAGE_HASH_SEED = "6b1f0c1e-5e6c-4b51-9d5c-3a6f1f2a0002"


# ---------------------------------------------------------------------------
# Kernels

def kernel_image(rev, flavour, prog, rebuild=False):
    """Build `rev` (flavour, no patchcheck): the result is a stored image
    named by its sha256 (work/kernels/), which no later build overwrites,
    so A and B each boot exactly their own kernel."""
    commit = rev_parse(rev)
    res = build(commit, flavour, do_patchcheck=False, prog=prog, force=rebuild)
    if res.commit != commit:
        raise ForkError("build of %s produced %s, expected %s" % (rev, res.commit, commit))
    return {"rev": rev, "commit": commit, "tree": res.tree, "flavour": flavour,
            "image": res.image, "image_sha256": res.image_sha256, "build_log": res.log}


# ---------------------------------------------------------------------------
# Disk images

def make_templates(idir, log):
    """One template per distinct image in benchlib.DISKS, made sparse."""
    which("mke2fs", "e2fsprogs")
    templates = {}
    for _, (tname, size, bs) in benchlib.DISKS:
        if tname in templates:
            continue
        path = os.path.join(idir, tname + ".tmpl")
        if os.path.exists(path):
            os.unlink(path)
        # On an existing sparse file mke2fs zeroes the inode tables by
        # punching holes (38 MB for 8192 groups instead of 1.1 GB written).
        with open(path, "wb") as fh:
            fh.truncate(parse_size(size))
        run(["mke2fs", "-q", "-F", "-t", "ext2", "-b", str(bs), "-U", IMAGE_UUID,
             "-E", "hash_seed=%s" % IMAGE_HASH_SEED, path],
            env={"E2FSPROGS_FAKE_TIME": "946684800"}, log=log)
        templates[tname] = path
    return templates


def parse_size(size):
    """'2G', '512M' -> bytes."""
    m = re.match(r"^(\d+)([KMG]?)$", size)
    if not m:
        raise ValueError("bad size %r" % size)
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def fresh_disks(templates, idir, log):
    disks = []
    for name, (tname, _, _) in benchlib.DISKS:
        path = os.path.join(idir, name + ".img")
        if os.path.exists(path):
            os.unlink(path)
        run(["cp", "--sparse=always", templates[tname], path], log=log)
        disks.append(path)
    return disks


# ---------------------------------------------------------------------------
# dbench in the guest

def dbench_files():
    """{guest path: host path}: dbench, its libraries, the dynamic loader and
    the client.txt load file."""
    exe = shutil.which("dbench")
    if not exe:
        raise ForkError("dbench not found: run `apt-get install dbench`")
    if not os.path.exists(benchlib.DBENCH_LOADFILE):
        raise ForkError("%s is missing: run `apt-get install --reinstall dbench`"
                        % benchlib.DBENCH_LOADFILE)
    files = {benchlib.DBENCH_GUEST: os.path.realpath(exe),
             benchlib.DBENCH_LOADFILE: benchlib.DBENCH_LOADFILE}
    out = run(["ldd", exe]).stdout
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(/\S+)\s+\(", line) or \
            re.match(r"\s*(/\S+)\s+\(", line)
        if not m:
            continue
        path = m.group(m.lastindex)
        files[path] = os.path.realpath(path)
    loader = "/lib64/ld-linux-x86-64.so.2"
    if loader not in files:
        if not os.path.exists(loader):
            raise ForkError("the dynamic loader %s is missing on this host" % loader)
        files[loader] = os.path.realpath(loader)
    return files


# ---------------------------------------------------------------------------
# Host load

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def host_busy():
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:9]]
        # user nice system idle iowait irq softirq steal
        return f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
    except (OSError, ValueError, IndexError):
        return None


def proc_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])   # utime + stime (all threads)
    except (OSError, ValueError, IndexError):
        return None


def find_qemu():
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as fh:
                st = fh.read()
        except OSError:
            continue
        comm = st[st.find("(") + 1:st.rfind(")")]
        rest = st.rsplit(")", 1)[1].split()
        if comm.startswith("qemu") and rest and int(rest[1]) == me:
            return int(d)
    return None


class LoadWatcher(Follower):
    """Follows the console log of a running guest (run_guest's `follow`)
    and snapshots the host's load when each POINT line and its RESULT line
    appear, and around the whole boot."""

    def __init__(self, log, interval=0.25):
        super().__init__(log, interval)
        self.cur = None
        self.qemu = None
        self.events = {}
        self.boot_start = self.boot_snapshot()
        self.boot_end = None

    @staticmethod
    def boot_snapshot():
        """Host busy ticks and ours: this process and its reaped children
        (QEMU, once run_guest has waited for it)."""
        t = os.times()
        return {"t": time.monotonic(), "load": list(os.getloadavg()), "busy": host_busy(),
                "ours": (t.user + t.system + t.children_user + t.children_system) * HZ,
                "hz": HZ}

    def boot_other_cpu(self):
        return benchlib.other_cpu(self.boot_start, self.boot_end, own=("ours",))

    def snapshot(self):
        if self.qemu is None:
            self.qemu = find_qemu()
        t = os.times()
        return {"t": time.monotonic(), "load": list(os.getloadavg()), "busy": host_busy(),
                "qemu": proc_ticks(self.qemu) if self.qemu else None,
                "self": (t.user + t.system) * HZ, "hz": HZ}

    def lines(self, new):
        snap = None
        for line in new:
            m = benchlib.POINT_RE.search(line)
            if m:
                snap = snap or self.snapshot()
                self.cur = (int(m.group(1)), int(m.group(2)))
                self.events[self.cur] = {"start": snap}
            elif "RESULT " in line and self.cur is not None:
                snap = snap or self.snapshot()
                self.events[self.cur]["end"] = snap
                self.cur = None

    def stop(self):
        super().stop()
        self.boot_end = self.boot_snapshot()

    def load_of(self, point_id, run=0):
        ev = self.events.get((point_id, run), {})
        start, end = ev.get("start"), ev.get("end")
        other = benchlib.other_cpu(start, end)
        return {"before": start and start["load"], "after": end and end["load"],
                "other_cpu": None if other is None else round(other, 3),
                "boot_other_cpu": self.boot_other_cpu(),
                "seconds": round(end["t"] - start["t"], 2) if start and end else None}


# ---------------------------------------------------------------------------
# The run

def check_gnuplot(prog):
    """(path, version) of gnuplot, or (None, None) without it: the plot is
    the only thing that needs it, so a run without gnuplot just has none."""
    path = shutil.which("gnuplot")
    if not path:
        prog.say("gnuplot not found: no plot this run (`apt-get install gnuplot-nox` for one)")
        return None, None
    proc = run([path, "--version"], check=False)
    if proc.returncode != 0:
        raise ForkError("`gnuplot --version` failed: reinstall it with "
                        "`apt-get install --reinstall gnuplot-nox`")
    return path, proc.stdout.strip()


def run_id(base):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rid, n = stamp, 1
    while os.path.exists(os.path.join(base, rid)):
        rid = "%s.%d" % (stamp, n)
        n += 1
    return rid


def qemu_version():
    exe = shutil.which("qemu-system-x86_64")
    if not exe:
        return None
    proc = run([exe, "--version"], check=False)
    return (proc.stdout or "").splitlines()[0] if proc.stdout else None


def as_run_cmd(opts):
    args = ["tools/fork", "bench"] + [r for r in (opts.a, opts.b) if r]
    if opts.reps != 3:
        args += ["--reps", str(opts.reps)]
    args += extra_args(opts)
    for flag in ("each", "quick", "lockstat", "rebuild"):
        if getattr(opts, flag, False):
            args.append("--" + flag)
    for opt in ("only", "out", "timeout"):
        if getattr(opts, opt, None):
            args += ["--" + opt, str(getattr(opts, opt))]
    return " ".join(shlex.quote(a) for a in args)


def extra_args(opts):
    """The method options that differ from their defaults."""
    args = ["--control"] if getattr(opts, "control", False) else []
    if getattr(opts, "kvm", False):
        args.append("--kvm")
    for opt, default in (("runs", 1), ("warmup", 0), ("mode", "wall"), ("smp", SMP)):
        v = getattr(opts, opt, default)
        if v != default:
            args += ["--" + opt, str(v)]
    return args


def ends(kernels):
    """The first and the last kernel: A and B, or K0 and Kn with --each."""
    if "A" in kernels:
        return kernels["A"], kernels["B"]
    chain = sorted((k for k in kernels if re.match(r"^K\d+$", k)), key=lambda k: int(k[1:]))
    return kernels[chain[0]], kernels[chain[-1]]


def reproduce_cmd(opts, kernels):
    args = ["tools/fork", "bench"]
    args += [k["commit"] for k in ends(kernels)]
    args += ["--reps", str(opts.reps)]
    args += extra_args(opts)
    for flag in ("each", "quick", "lockstat"):
        if getattr(opts, flag, False):
            args.append("--" + flag)
    if opts.only:
        args += ["--only", opts.only]
    return "flock /tmp/heavy.lock " + " ".join(shlex.quote(a) for a in args)


def write_outputs(doc, rdir, base, gnuplot, prog):
    """bench.json/.md/.cmd/.png in the run directory, latest.* beside it;
    they may become records (records/bench/): bench.json names the work
    directory's files relative to it, bench.cmd runs from the top of any
    checkout."""
    with open(os.path.join(rdir, "bench.json"), "w") as fh:
        json.dump(workdir_relative(doc), fh, indent=1, sort_keys=True)
        fh.write("\n")
    md = benchlib.steps_markdown(doc) if doc.get("steps") is not None else benchlib.markdown(doc)
    with open(os.path.join(rdir, "bench.md"), "w") as fh:
        fh.write(md)
    first, last = ends(doc["kernels"])
    with open(os.path.join(rdir, "bench.cmd"), "w") as fh:
        fh.write("#!/bin/sh\n# fork bench %s: A = %s (%s), B = %s (%s)\n# as run: %s\n"
                 "# run from the top directory of the repository:\n%s\n"
                 % (doc["run"]["id"], first["rev"], first["commit"],
                    last["rev"], last["commit"],
                    doc["run"]["as_run"], doc["run"]["command"]))
    os.chmod(os.path.join(rdir, "bench.cmd"), 0o755)
    png = plot(doc, rdir, gnuplot, prog)
    made = [e for e in OUTPUTS if os.path.exists(os.path.join(rdir, "bench." + e))]
    for ext in OUTPUTS:
        link = os.path.join(base, "latest." + ext)
        if os.path.lexists(link):
            os.unlink(link)
        if ext in made:
            target = os.path.relpath(os.path.join(rdir, "bench." + ext), base)
            try:
                os.symlink(target, link)
            except OSError:
                shutil.copyfile(os.path.join(rdir, "bench." + ext), link)
    return md, png


def plot(doc, rdir, gnuplot, prog):
    if gnuplot is None or doc.get("steps") is not None:
        return None
    script, files = benchlib.gnuplot_files(doc, "bench.png")
    if script is None:
        prog.say("no seed or statfs points: no plot")
        return None
    for name, text in files.items():
        with open(os.path.join(rdir, name), "w") as fh:
            fh.write(text)
    with open(os.path.join(rdir, "plot.gp"), "w") as fh:
        fh.write(script)
    proc = run([gnuplot, "plot.gp"], cwd=rdir, check=False)
    png = os.path.join(rdir, "bench.png")
    if proc.returncode != 0 or not os.path.exists(png) or os.path.getsize(png) == 0:
        raise ForkError("gnuplot failed on %s/plot.gp (exit %d): %s"
                        % (rdir, proc.returncode, (proc.stderr or "").strip()[-800:]))
    return png


def schedule(reps, lockstat, control=False, labels=("A", "B")):
    """[(rep, kernel, flavour)]: every repetition boots each kernel once, the
    order rotating from one repetition to the next (A B, B A, A B, ... or
    A B C, B C A, C A B, ...), so no kernel always boots first or after
    the same one; then the lockstat boots."""
    ks = list(labels) + (["C"] if control else [])
    out = []
    for r in range(1, reps + 1):
        k = (r - 1) % len(ks)
        out += [(r, x, "base") for x in ks[k:] + ks[:k]]
    if lockstat:
        out += [(1, x, "lockstat") for x in labels]
    return out


MAX_EACH = 16


def each_revs(a, b):
    """[A, first commit of A..B, ..., B]: a linear range of 1..MAX_EACH commits."""
    ca, cb = rev_parse(a), rev_parse(b)
    proc = run(["git", "-C", ktree(), "rev-list", "--reverse", "--parents", "%s..%s" % (ca, cb)],
               check=False)
    if proc.returncode != 0:
        raise ForkError("--each: git rev-list %s..%s failed: %s"
                        % (a, b, (proc.stderr or "").strip()[-300:]))
    rows = [l.split() for l in proc.stdout.splitlines() if l.strip()]
    if not rows:
        raise ForkError("--each: %s..%s has no commits: give A before B" % (a, b))
    if len(rows) > MAX_EACH:
        raise ForkError("--each: %s..%s has %d commits, more than %d: give a shorter range"
                        % (a, b, len(rows), MAX_EACH))
    parent = ca
    for row in rows:
        if row[1:] != [parent]:
            raise ForkError("--each: %s..%s is not a line of single-parent commits on %s "
                            "(at %s)" % (a, b, a, row[0][:12]))
        parent = row[0]
    return [a] + [r[0] for r in rows]


def subject_of(commit):
    proc = run(["git", "-C", ktree(), "log", "-1", "--format=%s", commit], check=False)
    return (proc.stdout or "").strip()


def run_bench(opts, prog=None, out=print):
    prog = prog or Progress("bench")
    if opts.out:
        check_output_dir(opts.out, "--out")
    if opts.reps < 0 or (opts.reps == 0 and not opts.lockstat):
        raise ForkError("--reps must be at least 1 (0 only together with --lockstat)")
    runs, warmup = getattr(opts, "runs", 1), getattr(opts, "warmup", 0)
    smp, mode = getattr(opts, "smp", SMP), getattr(opts, "mode", "wall")
    control = getattr(opts, "control", False)
    kvm = getattr(opts, "kvm", False)
    if kvm and mode == "icount":
        raise ForkError("--kvm measures wall time: it does not go with --mode icount "
                        "(instruction counting is a TCG feature)")
    if kvm and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        raise ForkError("--kvm: /dev/kvm is missing or not accessible: run without --kvm "
                        "(TCG) or on a machine with KVM")
    if runs < 1 or warmup < 0 or warmup >= runs:
        raise ForkError("--runs must be at least 1 and --warmup less than --runs "
                        "(got --runs %d --warmup %d)" % (runs, warmup))
    if not 1 <= smp <= 64:
        raise ForkError("--smp must be between 1 and 64 (got %d)" % smp)
    if control and opts.reps < 2:
        raise ForkError("--control needs --reps 2 or more: an interval needs two repetitions")
    try:
        workloads = benchlib.parse_only(opts.only)
    except ValueError as exc:
        raise ForkError("--only: %s" % exc)
    gnuplot, gnuplot_version = check_gnuplot(prog)
    extra = dbench_files() if "dbench" in workloads else {}
    sizes = benchlib.sizes_for(opts.quick, mode)
    points = benchlib.make_points(sizes, workloads)
    rev_a, rev_b = default_revs(opts.a, opts.b)
    each = getattr(opts, "each", False)
    if each:
        revs = each_revs(rev_a, rev_b)
        labels = ["K%d" % i for i in range(len(revs))]
    else:
        revs, labels = [rev_a, rev_b], ["A", "B"]

    kernels = {}
    for k, rev in zip(labels, revs):
        if opts.reps > 0:
            kernels[k] = kernel_image(rev, "base", prog, opts.rebuild)
        if opts.lockstat:
            kernels[k + "-lockstat"] = kernel_image(rev, "lockstat", prog, opts.rebuild)
        if k not in kernels:
            kernels[k] = dict(kernels[k + "-lockstat"], flavour="lockstat")
    if each:
        for k in labels:
            kernels[k]["subject"] = subject_of(kernels[k]["commit"])
            # the change the commit makes, whatever tree it is applied to:
            # what a cover letter naming the run is checked against
            kernels[k]["patch_id"] = patch_id_of_commit(kernels[k]["commit"])
    if control and labels[0] in kernels:
        # the A/A control boots A's very image (same file, same sha256)
        kernels["C"] = dict(kernels[labels[0]], control_of=labels[0])
    if not each and kernels["A"]["commit"] == kernels["B"]["commit"]:
        prog.say("A and B are the same commit %s: an A/A run (every difference is noise)"
                 % kernels["A"]["commit"][:12])

    base = os.path.abspath(opts.out) if opts.out else wpath("bench")
    ensure_dir(base)
    rid = run_id(base)
    rdir = ensure_dir(os.path.join(base, rid))
    idir = ensure_dir(wpath("bench", "images", "%d" % os.getpid()))
    log = os.path.join(rdir, "host.log")
    as_run = as_run_cmd(opts)
    doc = {
        "version": 1,
        "run": {"id": rid, "dir": rdir, "reps": opts.reps, "quick": bool(opts.quick),
                "lockstat": bool(opts.lockstat), "workloads": workloads, "sizes": {
                    k: ({str(n): m for n, m in v.items()} if isinstance(v, dict) else v)
                    for k, v in sizes.items()},
                "command": reproduce_cmd(opts, kernels), "as_run": as_run.strip(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "guest": "QEMU %s (%s), -smp %d, %s MiB, "
                         "virtio disks (raw, cache=unsafe), fresh copies of the same "
                         "images every boot" % (
                             "KVM" if kvm else "TCG",
                             "-accel kvm -cpu host" if kvm else
                             " ".join(ICOUNT_ARGS) if mode == "icount" else
                             "-accel tcg,thread=multi -cpu max", smp, MEM),
                "accel": "kvm" if kvm else "tcg",
                "mode": mode, "smp": smp, "runs": runs, "warmup": warmup,
                "control": control, "interval_rule": benchlib.INTERVAL_RULE,
                "tcg_note": benchlib.TCG_NOTE, "load_rule": benchlib.LOAD_RULE,
                "host": {"cpus": os.cpu_count(), "uname": " ".join(os.uname()),
                         "qemu": qemu_version(), "gnuplot": gnuplot_version,
                         "load_start": list(os.getloadavg())},
                "kit": kit_version()},
        "kernels": kernels,
        "points": [p.to_json() for p in points],
        "boots": [], "samples": [], "stats": [], "targets": [], "lockstat": {},
    }
    lockstat_raw = {}
    plan = schedule(opts.reps, opts.lockstat, control, labels)
    try:
        prog.say("%d points per boot, %d boots (%s); output in %s"
                 % (len(points), len(plan), " ".join(
                     k + ("*" if f == "lockstat" else "") for _, k, f in plan), rdir))
        templates = make_templates(idir, log)
        for n, (rep, k, flavour) in enumerate(plan):
            kern = kernels[k if flavour == "base" else k + "-lockstat"]
            lockstat = flavour == "lockstat"
            est = benchlib.estimate_seconds(
                [p for p in points if not lockstat or p.fs == "ext2"], opts.quick)
            n_runs = 1 if lockstat else runs
            if mode == "icount":
                est *= benchlib.ICOUNT_SCALE
            timeout = opts.timeout or int(est * n_runs * (6 if lockstat else 3)) + 120
            disks = fresh_disks(templates, idir, log)
            script = benchlib.guest_script(points, lockstat=lockstat, runs=n_runs)
            label = "%s-%s-r%d" % (k, flavour, rep)
            clog = os.path.join(rdir, "boot-%s.log" % label)
            with open(os.path.join(rdir, "guest-%s.sh" % flavour), "w") as fh:
                fh.write(script)
            prog.say("boot %d/%d: %s %s (%s) repetition %d"
                     % (n + 1, len(plan), k, kern["rev"], flavour, rep))
            watcher = LoadWatcher(clog)
            load_before = list(os.getloadavg())
            res = run_guest(kern["image"], script, disks, timeout=timeout, smp=smp, mem=MEM,
                            log=clog, prog=prog, label="bench-" + label, extra_files=extra,
                            icount=mode == "icount", kvm=kvm, follow=watcher,
                            every_slot=True)    # no other guest beside the timings
            brec = {"index": n, "kernel": k, "flavour": flavour, "rep": rep,
                    "commit": kern["commit"], "rc": res.rc, "ok": res.ok,
                    "problems": res.problems[:5], "error": res.error,
                    "seconds": round(res.seconds, 1), "log": res.log,
                    "load_before": load_before, "load_after": list(os.getloadavg()),
                    "other_cpu": watcher.boot_other_cpu()}
            doc["boots"].append(brec)
            if not res.ok:
                raise ForkError("boot %d (%s, %s, repetition %d) failed: %s"
                                % (n + 1, k, flavour, rep, failure_message(res)))
            try:
                results, dumps = benchlib.parse_output(res.output, points, lockstat, n_runs)
            except benchlib.ParseError as exc:
                raise ForkError("boot %d (%s, %s, repetition %d): %s (console log: %s)"
                                % (n + 1, k, flavour, rep, exc, res.log))
            err = guesttests.fsck(disks[0], log=log, need_statfs=False)
            if err:
                kept = os.path.join(rdir, "damaged-%s.img" % label)
                os.replace(disks[0], kept)
                raise ForkError("boot %d (%s, %s, repetition %d): the ext2 work image is "
                                "damaged: %s (image kept: %s)" % (n + 1, k, flavour, rep, err,
                                                                  kept))
            for i, runs_fields in sorted(results.items()):
                p = points[i]
                for j, fields in enumerate(runs_fields):
                    load = watcher.load_of(i, j)
                    doc["samples"].append({
                        "kernel": k, "rev": kern["rev"], "commit": kern["commit"],
                        "flavour": flavour, "rep": rep, "boot": n, "boot_rc": res.rc,
                        "kernel_problems": len(res.problems), "point_id": i, "point": p.key,
                        "run": j, "warmup": flavour == "base" and j < warmup,
                        "workload": p.workload, "fs": p.fs, "params": p.params,
                        "metric": p.metric, "value": float(fields[p.metric]),
                        "result": fields, "load": load, "loaded": benchlib.is_loaded(load)})
            for wl, lines in dumps.items():
                classes, warnings = benchlib.parse_lockstat(lines)
                if warnings:
                    raise ForkError("boot %d (%s lockstat): /proc/lock_stat says %s: the "
                                    "statistics are not valid (console log: %s)"
                                    % (n + 1, k, warnings[0], res.log))
                doc["lockstat"].setdefault(k, {})[wl] = classes
                lockstat_raw.setdefault(k, {})[wl] = lines
            for d in disks:
                os.unlink(d)
            if n == 0 and len(plan) > 1:
                prog.say("one boot took %.0fs: about %.0f min for the whole run"
                         % (res.seconds, res.seconds * len(plan) / 60.0))
    except BaseException:
        doc["run"]["failed"] = True
        with open(os.path.join(rdir, "partial.json"), "w") as fh:
            json.dump(workdir_relative(doc), fh, indent=1, sort_keys=True)
        prog.say("partial results in %s/partial.json" % rdir)
        raise
    finally:
        shutil.rmtree(idir, ignore_errors=True)
    doc["run"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    doc["run"]["host"]["load_end"] = list(os.getloadavg())
    if each:
        doc["steps"] = benchlib.steps(doc, labels, points)
    else:
        doc["stats"] = benchlib.aggregate(doc["samples"], points)
        doc["targets"] = benchlib.targets(doc["stats"], doc["samples"],
                                          doc["lockstat"] if opts.lockstat else None)
    if lockstat_raw:
        with open(os.path.join(rdir, "lockstat.txt"), "w") as fh:
            for k in sorted(lockstat_raw):
                for wl, lines in sorted(lockstat_raw[k].items()):
                    fh.write("== %s %s\n%s\n" % (k, wl, "\n".join(lines)))
    md, png = write_outputs(doc, rdir, base, gnuplot, prog)
    out(md)
    prog.say("results: %s (latest.* in %s)" % (rdir, base))
    return doc

