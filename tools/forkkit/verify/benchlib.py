"""Pure logic of `fork bench`: benchmark points, the guest script, parsing of
the guest's output, statistics, the load rule, targets, lock statistics, the
markdown / gnuplot renderings, and the figures of a record that the documents
summarising it state (record_facts(), state()).  Nothing here boots or builds
anything, so all of it is unit-tested without QEMU (tests/test_bench.py,
tests/test_docs_numbers.py).
"""

import math
import re
import statistics
import string
import types

from ..core.errors import ForkError
from ..core.tables import md_table
from ..guest import scripts

# ---------------------------------------------------------------------------
# Workloads, sizes and points

WORKLOADS = ["statfs", "seed", "inode", "dbench"]
SEED_BLOCKS = [9, 16, 32]
STATFS_GROUPS = [128, 1024, 8192]
THREADS = [1, 2]

# workload -> (program whose RESULT line is the sample, metric, better)
METRICS = {
    "seed": ("seedload", "ops_per_s", "higher"),
    "statfs": ("statfsbench", "ns_per_call", "lower"),
    "inode": ("createbench", "ops_per_s", "higher"),
    "dbench": ("dbench", "mb_per_s", "higher"),
}
UNITS = {
    "seed": "seed ops/s (one op = write N blocks + truncate to 0)",
    "statfs": "ns per statfs() call (elapsed x threads / calls)",
    "inode": "create+unlink ops/s",
    "dbench": "dbench MB/s (client.txt load)",
}

# Disks attached to every guest, in order (/dev/vda, /dev/vdb, ...).
# "work": the 4 KiB-block ext2 image of seed/inode/dbench (the ext2 driver
# mounts vda, the ext4 driver vdb: two copies of one template, so both
# drivers start from the very same bytes).  "g<N>": the 1 KiB-block ext2
# images of statfs with N block groups (8 MiB each); each is mounted by the
# ext2 driver, then by the ext4 driver.
WORK_IMAGE = ("work", "2G", 4096)
DISKS = [("work-ext2", WORK_IMAGE), ("work-ext4", WORK_IMAGE)] + \
    [("g%d" % g, ("g%d" % g, "%dM" % (8 * g), 1024)) for g in STATFS_GROUPS]


def device_of(disk_name):
    """/dev/vdX of a disk by name (the order of DISKS)."""
    names = [d[0] for d in DISKS]
    return "/dev/vd" + "abcdefghijklmnopqrstuvwxyz"[names.index(disk_name)]


# Sizes.  "full": a point takes a few seconds under TCG on the stock kernel
# (measured on the 2-core development host, see BENCHMARKS.md); "quick": a
# few hundred milliseconds, for tests and smoke runs.
SIZES = {
    "full": {
        "seed_iters": {9: 4000, 16: 3000, 32: 2000},
        "statfs_seconds": 2,
        "create_files": 100,
        "create_iters": 15,
        "dbench_seconds": 5,
        "dbench_clients": 2,
    },
    "quick": {
        "seed_iters": {9: 400, 16: 300, 32: 200},
        "statfs_seconds": 0.2,
        "create_files": 50,
        "create_iters": 4,
        "dbench_seconds": 2,
        "dbench_clients": 2,
    },
}

# Under --mode icount the guest's clock counts instructions at 1 GHz,
# several times faster than TCG executes them: the counted workloads get
# ICOUNT_SCALE times the iterations so that their points still last more
# than a second of guest time (the fixed-duration ones need nothing).
ICOUNT_SCALE = 3


def sizes_for(quick=False, mode="wall"):
    """The sizes of a run: "quick" or "full", the counted workloads scaled
    for icount."""
    sizes = dict(SIZES["quick" if quick else "full"])
    if mode == "icount":
        sizes["seed_iters"] = {n: m * ICOUNT_SCALE for n, m in sizes["seed_iters"].items()}
        sizes["create_iters"] = sizes["create_iters"] * ICOUNT_SCALE
    return sizes


PARAM_ORDER = ["groups", "n", "tasks", "threads", "dirs", "clients"]
FS_ORDER = ["ext2", "ext4", "tmpfs"]


class Point:
    """One benchmark point: a workload on one filesystem with parameters."""

    def __init__(self, workload, fs, params, cmd, phase):
        self.workload = workload
        self.fs = fs
        self.params = dict(params)
        self.cmd = cmd          # guest command line (prints one RESULT line)
        self.phase = phase      # (fs, disk name or None): what must be mounted
        self.prog, self.metric, self.better = METRICS[workload]

    @property
    def key(self):
        parts = ["%s=%s" % (k, self.params[k]) for k in PARAM_ORDER if k in self.params]
        return " ".join(["workload=" + self.workload, "fs=" + self.fs] + parts)

    def to_json(self):
        return {"key": self.key, "workload": self.workload, "fs": self.fs,
                "params": self.params, "program": self.prog, "metric": self.metric,
                "better": self.better, "cmd": self.cmd}

    def __repr__(self):
        return "Point(%s)" % self.key


def parse_only(only):
    """--only value (comma-separated) -> list of workloads, in run order."""
    if not only:
        return list(WORKLOADS)
    want = [w.strip() for w in only.split(",") if w.strip()]
    bad = [w for w in want if w not in WORKLOADS]
    if bad or not want:
        raise ValueError("unknown workload %s: choose from %s"
                         % (", ".join(bad) or "''", ", ".join(WORKLOADS)))
    return [w for w in WORKLOADS if w in want]


def make_points(sizes, workloads=None):
    """Every point of one guest boot, in the order the guest runs them."""
    workloads = workloads or list(WORKLOADS)
    pts = []
    if "statfs" in workloads:
        secs = sizes["statfs_seconds"]
        for g in STATFS_GROUPS:
            for fs in ("ext2", "ext4"):
                for th in THREADS:
                    pts.append(Point("statfs", fs, {"groups": g, "threads": th},
                                     "statfsbench -T %d -t %s /mnt" % (th, secs),
                                     (fs, "g%d" % g)))
        for th in THREADS:
            pts.append(Point("statfs", "tmpfs", {"threads": th},
                             "statfsbench -T %d -t %s /mnt" % (th, secs), ("tmpfs", None)))
    for fs in FS_ORDER:
        phase = (fs, {"ext2": "work-ext2", "ext4": "work-ext4", "tmpfs": None}[fs])
        if "seed" in workloads:
            for n in SEED_BLOCKS:
                m = sizes["seed_iters"][n]
                variants = [(1, "separate", "/mnt/t0"),
                            (2, "shared", "/mnt/s /mnt/s"),
                            (2, "separate", "/mnt/t0 /mnt/t1")]
                for tasks, dirs, args in variants:
                    pts.append(Point("seed", fs, {"n": n, "tasks": tasks, "dirs": dirs},
                                     "seedload -n %d -m %d %s" % (n, m, args), phase))
        if "inode" in workloads:
            for tasks in THREADS:
                dirs = " ".join("/mnt/c%d" % i for i in range(tasks))
                pts.append(Point("inode", fs, {"tasks": tasks, "dirs": "separate"},
                                 "createbench -n %d -m %d %s" % (sizes["create_files"],
                                                                 sizes["create_iters"], dirs),
                                 phase))
        if "dbench" in workloads:
            c = sizes["dbench_clients"]
            pts.append(Point("dbench", fs, {"clients": c},
                             "run_dbench %s %d" % (sizes["dbench_seconds"], c), phase))
    return pts


def estimate_seconds(points, quick):
    """A generous guess of one boot's duration (for the guest timeout)."""
    per = {"seed": 4, "statfs": 3, "inode": 4, "dbench": 12}
    if quick:
        per = {"seed": 1, "statfs": 1, "inode": 1, "dbench": 5}
    return 60 + sum(per[p.workload] for p in points)


# ---------------------------------------------------------------------------
# Guest script

DBENCH_GUEST = "/usr/bin/dbench"
DBENCH_LOADFILE = "/usr/share/dbench/client.txt"

# The guest script of a boot, ci/guest/scripts/bench.sh: BENCH_HEAD (the
# shell functions: fail, run_dbench with dbench's LOADFILE, lockstat_reset,
# lockstat_dump), then the POINTS points between a BENCH-BEGIN and a
# BENCH-END line, as the LINES that guest_script() makes of them
SCRIPT_FILE = "bench.sh"
BENCH_HEAD = "bench-head.sh"


def script_head(loadfile=DBENCH_LOADFILE):
    """The shell functions every bench boot starts with (bench-head.sh)."""
    return scripts.render(BENCH_HEAD, {"LOADFILE": loadfile})[0]


def mount_cmds(phase):
    fs, disk = phase
    if fs == "tmpfs":
        return ["mount -t tmpfs -o size=1g tmpfs /mnt || fail 'mount tmpfs'"]
    return ["mount -t %s %s /mnt || fail 'mount -t %s %s'" % (fs, device_of(disk), fs,
                                                               device_of(disk))]


WORK_DIRS = "/mnt/s /mnt/t0 /mnt/t1 /mnt/c0 /mnt/c1"


def has_dirs(phase):
    """Phases of seed/inode/dbench get the top-level work directories (the
    statfs images stay as mke2fs left them)."""
    return phase[1] is None or phase[1].startswith("work")


def unmount_cmds(phase):
    out = []
    if has_dirs(phase):
        out.append("rmdir %s || fail 'leftover files in /mnt'" % WORK_DIRS)
    out.append("sync; umount /mnt || fail 'umount /mnt'")
    return out


def guest_script(points, lockstat=False, runs=1):
    """The guest command for one boot: every point `runs` times in a row,
    each run announced by a `POINT id=<i> iter=<j> <key>` line and followed
    by its program's RESULT line.

    With lockstat=True only the ext2 points run, once, and /proc/lock_stat is
    reset before and dumped after each workload."""
    lines = []
    chosen = [(i, p) for i, p in enumerate(points) if not lockstat or p.fs == "ext2"]
    cur_phase = None
    cur_wl = None
    for n, (i, p) in enumerate(chosen):
        if lockstat and p.workload != cur_wl:
            if cur_wl is not None:
                lines.append("lockstat_dump %s" % cur_wl)
            cur_wl = p.workload
            pending_reset = True
        else:
            pending_reset = False
        if p.phase != cur_phase:
            if cur_phase is not None:
                lines += unmount_cmds(cur_phase)
            lines += mount_cmds(p.phase)
            if has_dirs(p.phase):
                lines.append("mkdir %s" % WORK_DIRS)
            cur_phase = p.phase
        if pending_reset:
            lines.append("sync; lockstat_reset")
        for j in range(1 if lockstat else runs):
            lines.append("sync")
            lines.append('echo "POINT id=%d iter=%d %s"' % (i, j, p.key))
            lines.append("%s || fail 'point %d: %s'" % (p.cmd, i, p.cmd))
    if lockstat and cur_wl is not None:
        lines.append("lockstat_dump %s" % cur_wl)
    if cur_phase is not None:
        lines += unmount_cmds(cur_phase)
    return scripts.render(SCRIPT_FILE, {"LOADFILE": DBENCH_LOADFILE, "POINTS": len(chosen),
                                        "LINES": lines})[0]


# ---------------------------------------------------------------------------
# Parsing the guest's output

POINT_RE = re.compile(r"POINT id=(\d+) iter=(\d+) (.*?)\s*$")


class ParseError(Exception):
    pass


def _fields(line):
    idx = line.find("RESULT ")
    out = {}
    for kv in line[idx + len("RESULT "):].split():
        if "=" in kv:
            k, v = kv.split("=", 1)
            out[k] = v
    return out


def parse_output(output, points, lockstat=False, runs=1):
    """Guest output -> ({point id: [RESULT fields of run 0, 1, ...]},
    {workload: [lockstat lines]}).

    Every run of every point the script runs (`runs` each; one with
    lockstat) must have exactly one RESULT line of the expected program, in
    order; anything else raises ParseError."""
    want = {i for i, p in enumerate(points) if not lockstat or p.fs == "ext2"}
    runs = 1 if lockstat else runs
    results = {}
    dumps = {}
    cur = None
    dump = None
    ended = False
    for line in output:
        if dump is not None:
            if "LOCKSTAT-END" in line:
                dump = None
            else:
                dump.append(line)
            continue
        m = POINT_RE.search(line)
        if m:
            i, j = int(m.group(1)), int(m.group(2))
            if i >= len(points) or points[i].key != m.group(3):
                raise ParseError("guest announced an unknown point: %s" % line.strip())
            if cur is not None:
                raise ParseError("point %d (%s) printed no RESULT line"
                                 % (cur, points[cur].key))
            if j != len(results.get(i, [])) or j >= runs:
                raise ParseError("point %d (%s): run %d out of order" % (i, points[i].key, j))
            cur = i
            continue
        if "RESULT " in line:
            if cur is None:
                raise ParseError("RESULT line outside any point: %s" % line.strip())
            fields = _fields(line)
            if fields.get("prog") != points[cur].prog:
                raise ParseError("point %d (%s): RESULT of %s, expected %s"
                                 % (cur, points[cur].key, fields.get("prog"), points[cur].prog))
            try:
                value = float(fields[points[cur].metric])
            except (KeyError, ValueError):
                raise ParseError("point %d: RESULT has no %s: %s"
                                 % (cur, points[cur].metric, line.strip()))
            if not value > 0 or not finite(value):
                raise ParseError("point %d (%s): %s=%s, not a measurement"
                                 % (cur, points[cur].key, points[cur].metric,
                                    fields[points[cur].metric]))
            results.setdefault(cur, []).append(fields)
            cur = None
            continue
        m = re.search(r"LOCKSTAT-BEGIN workload=(\S+)", line)
        if m:
            dump = dumps.setdefault(m.group(1), [])
            continue
        if "BENCH-END" in line:
            ended = True
    if cur is not None:
        raise ParseError("point %d (%s) printed no RESULT line" % (cur, points[cur].key))
    missing = sorted(i for i in want if len(results.get(i, [])) < runs)
    if missing:
        raise ParseError("%d point(s) without a result, first: %s"
                         % (len(missing), points[missing[0]].key))
    if not ended:
        raise ParseError("the guest script did not reach its end (no BENCH-END line)")
    return results, dumps


# ---------------------------------------------------------------------------
# Lock statistics

LS_CLASS_RE = re.compile(
    r"^\s*(?P<name>\S.*?)(?P<rw>-[WR])?:\s+(?P<con_bounces>\d+)\s+(?P<contentions>\d+)"
    r"\s+(?P<wait_min>[\d.]+)\s+(?P<wait_max>[\d.]+)\s+(?P<wait_total>[\d.]+)"
    r"\s+(?P<wait_avg>[\d.]+)\s+(?P<acq_bounces>\d+)\s+(?P<acquisitions>\d+)"
    r"(?:\s+(?P<hold_min>[\d.]+)\s+(?P<hold_max>[\d.]+)\s+(?P<hold_total>[\d.]+)"
    r"\s+(?P<hold_avg>[\d.]+))?\s*$")
LS_SITE_RE = re.compile(r"^\s*(?P<name>\S.*?)\s+(?P<count>\d+)\s+\[<[0-9a-fA-Fx]+>\]\s+(?P<sym>\S+)\s*$")
LS_DASH_RE = re.compile(r"^\s+-+\s*$")

# Filesystem-wide ext2 locks: one per superblock, taken on every allocation
# (reservation windows, inode generation numbers, the superblock lock).
FS_WIDE_EXT2_RE = re.compile(r"(?:^|[>.&(])(s_rsv_window_lock|s_next_gen_lock|s_lock)\b")


def parse_lockstat(lines):
    """Lines of a /proc/lock_stat dump -> [class dict], most contended first.

    Times are microseconds (as /proc/lock_stat prints them).  `sites` are the
    call sites where waiters were contended, `holders` those of the holders."""
    classes = []
    cur = None
    sets = 0
    warnings = []
    for line in lines:
        if "WARNING" in line:
            warnings.append(line.strip())
            continue
        m = LS_CLASS_RE.match(line)
        if m:
            cur = {"name": m.group("name") + (m.group("rw") or ""),
                   "contentions": int(m.group("contentions")),
                   "con_bounces": int(m.group("con_bounces")),
                   "waittime_total_us": float(m.group("wait_total")),
                   "waittime_max_us": float(m.group("wait_max")),
                   "acquisitions": int(m.group("acquisitions")),
                   "holdtime_total_us": float(m.group("hold_total") or 0),
                   "sites": [], "holders": []}
            classes.append(cur)
            sets = 0
            continue
        if cur is not None and LS_DASH_RE.match(line):
            sets += 1
            continue
        m = LS_SITE_RE.match(line)
        if m and cur is not None:
            (cur["sites"] if sets <= 1 else cur["holders"]).append(
                {"count": int(m.group("count")), "symbol": m.group("sym")})
    classes.sort(key=lambda c: (-c["contentions"], -c["waittime_total_us"]))
    return classes, warnings


# The ext2 lock classes counted per operation: the filesystem-wide ones and
# the hashed blockgroup locks (which the series uses instead).
EXT2_LOCK_RE = re.compile(r"(?:^|[>.&(])(s_rsv_window_lock|s_next_gen_lock|s_lock|locks\[i\]"
                          r"\.lock)\b")
# RESULT field that counts a workload's operations
OPS_FIELD = {"seed": "ops", "inode": "ops", "statfs": "calls"}


def lock_ops(samples, kernel, workload):
    """Operations the lockstat boot of `kernel` ran for `workload` (its
    ext2 points together), or None when the workload counts none."""
    field = OPS_FIELD.get(workload)
    if not field:
        return None
    xs = [float(s["result"][field]) for s in samples
          if s["kernel"] == kernel and s["flavour"] == "lockstat" and s["workload"] == workload
          and s["fs"] == "ext2" and field in s["result"]]
    return sum(xs) if xs else None


def lock_table(doc):
    """[(workload, class, {kernel: (acquisitions/op, contentions/op)})] of the
    ext2 lock classes in the lockstat boots."""
    ls = doc.get("lockstat") or {}
    out = []
    for wl in WORKLOADS:
        names = sorted({c["name"] for k in ("A", "B") for c in ls.get(k, {}).get(wl, [])
                        if EXT2_LOCK_RE.search(c["name"])})
        for name in names:
            per = {}
            for k in ("A", "B"):
                ops = lock_ops(doc["samples"], k, wl)
                c = next((c for c in ls.get(k, {}).get(wl, []) if c["name"] == name), None)
                if ops and wl in ls.get(k, {}):
                    per[k] = ((c["acquisitions"] if c else 0) / ops,
                              (c["contentions"] if c else 0) / ops)
            out.append((wl, name, per))
    return out


def lock_table_across(docs):
    """The ext2 lock acquisitions and contentions per operation of A and B
    in several lockstat A/B runs of the same two kernels (e.g. at 2, 4 and
    8 vCPUs), as the lines of one markdown table, a row per workload and
    class and a column pair per run, and a line naming the kernels and
    runs."""
    runs, pair = [], None
    for doc in docs:
        meta = doc.get("run", {})
        if doc.get("steps") is not None or "A" not in doc.get("kernels", {}):
            raise ForkError("bench run %s is not an A/B run: @@ bench-locks compares A and B"
                            % meta.get("id", "?"))
        if not doc.get("lockstat"):
            raise ForkError("bench run %s has no lock statistics (run it with --lockstat)"
                            % meta.get("id", "?"))
        ks = doc["kernels"]
        this = tuple(ks[k].get("tree") or ks[k]["commit"] for k in ("A", "B"))
        if pair is not None and this != pair:
            raise ForkError("bench run %s measured other kernels than %s: one table compares "
                            "one A with one B" % (meta.get("id", "?"), docs[0]["run"].get("id")))
        pair = this
        runs.append((meta.get("smp", 2), meta.get("id", "?"),
                     {(wl, name): per for wl, name, per in lock_table(doc)}))
    keys = []
    for _, _, table in runs:
        keys += [k for k in table if k not in keys]
    keys.sort(key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else 99, k[1]))
    head = ["workload", "class"]
    for smp, _, _ in runs:
        head += ["A %d vCPUs" % smp, "B %d vCPUs" % smp]
    rows = []
    for wl, name in keys:
        row = [wl, name + (" **fs-wide**" if FS_WIDE_EXT2_RE.search(name) else "")]
        for _, _, table in runs:
            per = table.get((wl, name), {})
            row += ["%.3g (%.3g)" % per[k] if k in per else "not measured" for k in ("A", "B")]
        rows.append(row)
    ks = docs[0]["kernels"]
    return md_table(head, rows) + ["", "A = `%s` (%s), B = `%s` (%s); runs %s." % (
        ks["A"]["commit"][:12], ks["A"].get("rev"), ks["B"]["commit"][:12], ks["B"].get("rev"),
        ", ".join("%s (%d vCPUs)" % (rid, smp) for smp, rid, _ in runs))]


def fs_wide_ext2(classes):
    """The contended classes that are filesystem-wide ext2 locks."""
    return [c for c in classes if c["contentions"] > 0 and FS_WIDE_EXT2_RE.search(c["name"])]


def percpu_counter_locks(classes):
    """Contended percpu_counter spinlocks (lockdep names them `key#N`):
    per counter, so filesystem-wide for a superblock's free counts; taken by
    percpu_counter_sum() as in the ext4 driver's statfs."""
    return [c for c in classes if c["contentions"] > 0 and
            any(s["symbol"].split("+")[0].lstrip("_").startswith("percpu_counter")
                for s in c["sites"])]


# ---------------------------------------------------------------------------
# Statistics

def median(xs):
    xs = list(xs)
    if not xs:
        raise ValueError("median of nothing")
    return statistics.median(xs)


def summary(xs):
    xs = list(xs)
    if not xs:
        return None
    return {"n": len(xs), "median": median(xs), "min": min(xs), "max": max(xs)}


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MARGIN = 0.03           # a point "holds" when its interval allows no loss beyond 3%
INTERVAL_RULE = (
    "B/A (and the A/A control's C/A) is the geometric mean over repetitions of each "
    "repetition's ratio, a repetition being one boot of each kernel, back to back and "
    "in rotating order; a repetition's ratio is the ratio of the medians of its samples "
    "(with --runs 2, their geometric means).  The 95%% interval is Student's t over the "
    "repetitions' log ratios (n - 1 degrees of freedom), so boot-to-boot noise is inside "
    "it; \"detectable\" is "
    "its half-width.  A point holds (no loss) when the interval allows no loss beyond "
    "%d%%, is worse when the whole interval is a loss beyond it, and is inconclusive "
    "otherwise; it changed (better/worse) when the interval excludes 1.0." % (MARGIN * 100))


def t975(df):
    if df < 1:
        raise ValueError("no degrees of freedom")
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.5 / df


def rep_log(values):
    """The log of one repetition's value: the median of its samples' logs
    (the geometric mean of two; with three or more, one outlying run, such
    as a point that a guest's periodic work happened to hit, cannot move
    it)."""
    return statistics.median(math.log(v) for v in values)


def paired_ratio(a_reps, x_reps):
    """X/A from {rep: [values]} of both kernels, paired by repetition:
    {"ratio", "lo", "hi", "n", "detectable"}; lo/hi are None with fewer
    than two repetitions that both kernels have."""
    reps = sorted(r for r in a_reps if r in x_reps and a_reps[r] and x_reps[r])
    logs = []
    for r in reps:
        a, x = a_reps[r], x_reps[r]
        if min(a) <= 0 or min(x) <= 0:
            raise ValueError("a sample is not positive")
        logs.append(rep_log(x) - rep_log(a))
    if not logs:
        return None
    mean = sum(logs) / len(logs)
    out = {"ratio": math.exp(mean), "lo": None, "hi": None, "n": len(logs), "detectable": None}
    if len(logs) >= 2:
        half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        out.update(lo=math.exp(mean - half), hi=math.exp(mean + half),
                   detectable=math.exp(half) - 1)
    return out


def judge_interval(r, better="higher", margin=MARGIN):
    """(verdict, holds) of a paired_ratio() result.  holds: True when the
    interval allows no loss beyond `margin`, False when all of it is such a
    loss, None when it is not judged or inconclusive."""
    if not r or r["lo"] is None:
        return "not judged (fewer than 2 repetitions)", None
    lo, hi = (r["lo"], r["hi"]) if better == "higher" else (1 / r["hi"], 1 / r["lo"])
    holds = True if lo >= 1 - margin else (False if hi < 1 - margin else None)
    if lo > 1:
        verdict = "B better"
    elif hi < 1:
        verdict = "B worse"
    elif lo >= 1 - margin and hi <= 1 + margin:
        verdict = "no change (within %d%%)" % (margin * 100)
    else:
        verdict = "inconclusive"
    return verdict, holds


def not_worse(row):
    """B loses no more than MARGIN at this point: True, False, or None when
    not judged or inconclusive."""
    return row.get("holds")


# ---------------------------------------------------------------------------
# Host load

OTHER_CPU_LIMIT = 0.5    # CPUs used on average by processes other than ours
MIN_MEASURE_S = 0.5      # shorter points: CPU shares are not meaningful

LOAD_RULE = ("a sample is marked loaded (L) when processes other than the benchmark's own "
             "(its QEMU guest, itself and its children) used more than %.1f CPU on average "
             "during the point: host /proc/stat busy time minus QEMU's own CPU time; for "
             "points shorter than %.1fs, during the whole boot instead. The 1-minute load "
             "average (os.getloadavg) is recorded before and after every point and boot but "
             "not used: it counts QEMU's own threads (2.5-3.5 with nothing else running on "
             "the 2-CPU development host) and lags by a minute"
             % (OTHER_CPU_LIMIT, MIN_MEASURE_S))


def is_loaded(load):
    """Apply LOAD_RULE to one sample's load record."""
    other = load.get("other_cpu")
    if other is None:
        other = load.get("boot_other_cpu")
    return other is not None and other > OTHER_CPU_LIMIT


def other_cpu(start, end, own=("qemu", "self")):
    """CPUs used by others between two snapshots {t, busy, hz, <own>...}
    (ticks); None when too short or when one of our own counters is missing."""
    if not start or not end:
        return None
    dt = end["t"] - start["t"]
    if dt < MIN_MEASURE_S or start.get("busy") is None or end.get("busy") is None:
        return None
    hz = end.get("hz", 100)
    ours = 0
    for k in own:
        if start.get(k) is None or end.get(k) is None:
            return None
        ours += end[k] - start[k]
    return max(0.0, (end["busy"] - start["busy"] - ours) / hz / dt)


# ---------------------------------------------------------------------------
# Aggregation

MIN_POINT_S = 1.0       # shorter samples are not judged (timer and start-up noise)


def shortest(samples, p):
    """The shortest guest time (s) of a base-flavour sample of point `p`, or
    None when its program reports none."""
    xs = [float(s["result"]["elapsed_ns"]) / 1e9 for s in samples
          if s["point"] == p.key and s["flavour"] == "base" and not s.get("warmup")
          and "elapsed_ns" in s.get("result", {})]
    return min(xs) if xs else None


def aggregate(samples, points):
    """Per point: the A, B (and C, the A/A control) summaries of the metric,
    B/A paired by repetition with its interval and verdict, and C/A."""
    rows = []
    for p in points:
        vals = {"A": [], "B": [], "C": []}
        reps = {"A": {}, "B": {}, "C": {}}
        loaded = {"A": 0, "B": 0, "C": 0}
        for s in samples:
            if s["point"] == p.key and s["flavour"] == "base" and s["kernel"] in vals \
                    and not s.get("warmup"):
                vals[s["kernel"]].append(s["value"])
                reps[s["kernel"]].setdefault(s["rep"], []).append(s["value"])
                loaded[s["kernel"]] += 1 if s["loaded"] else 0
        a, b = summary(vals["A"]), summary(vals["B"])
        if not a and not b:
            continue
        row = {"point": p.key, "workload": p.workload, "fs": p.fs, "params": p.params,
               "metric": p.metric, "better": p.better, "A": a, "B": b,
               "loaded": loaded}
        pr = paired_ratio(reps["A"], reps["B"]) if a and b else None
        verdict, holds = judge_interval(pr, p.better)
        short = shortest(samples, p)
        if pr and short is not None and short < MIN_POINT_S:
            verdict, holds = "too short (a sample of %.2f s): not judged" % short, None
        row.update(ratio=pr and pr["ratio"], ratio_lo=pr and pr["lo"],
                   ratio_hi=pr and pr["hi"], detectable=pr and pr["detectable"],
                   pairs=pr["n"] if pr else 0, verdict=verdict if pr else "n/a", holds=holds)
        if vals["C"]:
            row["C"] = summary(vals["C"])
            cr = paired_ratio(reps["A"], reps["C"]) if a else None
            row["control"] = dict(cr or {}, verdict=judge_interval(cr, p.better)[0])
        rows.append(row)
    return rows


def _row(rows, workload, fs, **params):
    for r in rows:
        if r["workload"] == workload and r["fs"] == fs and \
                all(r["params"].get(k) == v for k, v in params.items()):
            return r
    return None


def _med(row, kernel):
    if row and row.get(kernel):
        return row[kernel]["median"]
    return None


def _extra(samples, workload, fs, kernel, field, **params):
    """Median of another RESULT field over the base-flavour samples."""
    xs = [float(s["result"][field]) for s in samples
          if s["workload"] == workload and s["fs"] == fs and s["kernel"] == kernel
          and s["flavour"] == "base" and field in s["result"] and not s.get("warmup")
          and all(s["params"].get(k) == v for k, v in params.items())]
    return median(xs) if xs else None


def _interval(r):
    """'0.987 [0.962..1.01] +-2.4%' for a paired_ratio()-like dict."""
    if not r or r.get("ratio") is None:
        return "-"
    if r.get("lo") is None:
        return "%.3g (1 repetition)" % r["ratio"]
    if r.get("detectable") is None:     # a record of the earlier min..max rule
        return "%.3g [%.3g..%.3g]" % (r["ratio"], r["lo"], r["hi"])
    return "%.3g [%.3g..%.3g] ±%.1f%%" % (r["ratio"], r["lo"], r["hi"],
                                          100 * r["detectable"])


def inside(r, margin=MARGIN):
    """The interval of a paired_ratio()-like dict lies within 1 +- margin
    (the A/A control target's rule)."""
    return r.get("lo") is not None and r["lo"] >= 1 - margin and r["hi"] <= 1 + margin


def _half_width(r):
    return r["detectable"] if r.get("detectable") is not None else float("inf")


def _holds_all(rows):
    """(reached, detail) over points judged with not_worse()."""
    oks = [not_worse(r) for r in rows]
    worse = [r for r, ok in zip(rows, oks) if ok is False]
    open_ = [r for r, ok in zip(rows, oks) if ok is None]
    reached = False if worse else (None if open_ else True)
    parts = []
    if worse:
        parts.append("worse: " + "; ".join("%s %s" % (_params(r), _interval(_pr(r)))
                                           for r in worse))
    if open_:
        parts.append("inconclusive or not judged: " + "; ".join(
            "%s %s" % (_params(r), _interval(_pr(r))) for r in open_))
    if not parts:
        parts.append("B/A %s" % ", ".join(_interval(_pr(r)) for r in rows))
    return reached, "; ".join(parts)


def _pr(row):
    return {"ratio": row.get("ratio"), "lo": row.get("ratio_lo"), "hi": row.get("ratio_hi"),
            "detectable": row.get("detectable")}


def _fmt_x(x):
    return "-" if x is None else ("%.3g" % x)


def targets(rows, samples, lockstat=None):
    """The goals of the series, each reached (True), not (False) or not
    measured/judged (None), with the figures behind it."""
    out = []

    def add(name, reached, detail):
        out.append({"target": name, "reached": reached, "detail": detail})

    def no_loss(workload):
        """The workload's ext2 points, each judged by its interval."""
        judged = [r for r in rows if r["workload"] == workload and r["fs"] == "ext2"]
        name = "%s: no ext2 point loses more than %d%% (95%% interval of B/A)" % (
            workload, MARGIN * 100)
        add(name, *(_holds_all(judged) if judged else (None, "not measured")))

    # statfs
    def statfs_target(name, ratio_fn, ok_fn, fmt):
        vals, oks = [], []
        for th in THREADS:
            r = ratio_fn(th)
            if r is None:
                continue
            vals.append(fmt % (th, r))
            oks.append(ok_fn(r))
        add(name, (all(oks) if oks else None), "; ".join(vals) or "not measured")

    def b8192_vs(th, fs, groups, kernel):
        num = _med(_row(rows, "statfs", "ext2", groups=8192, threads=th), "B")
        den = _med(_row(rows, "statfs", fs, groups=groups, threads=th), kernel)
        return num / den if num and den else None

    statfs_target("statfs: B at 8192 groups within 1.2x of B at 128 groups",
                  lambda th: b8192_vs(th, "ext2", 128, "B"), lambda r: r <= 1.2,
                  "%d thread(s): %.2fx")
    statfs_target("statfs: B at 8192 groups within 1.2x of the ext4 driver on the same image",
                  lambda th: b8192_vs(th, "ext4", 8192, "B"), lambda r: r <= 1.2,
                  "%d thread(s): %.2fx")

    def a_over_b(th):
        r = _row(rows, "statfs", "ext2", groups=8192, threads=th)
        a, b = _med(r, "A"), _med(r, "B")
        return a / b if a and b else None

    statfs_target("statfs: B at 8192 groups >= 50x cheaper than A", a_over_b,
                  lambda r: r >= 50, "%d thread(s): A/B = %.1fx")
    # 2 threads at least as many calls as 1 (B, ext2, every group count)
    vals, oks = [], []
    for g in STATFS_GROUPS:
        c1 = _extra(samples, "statfs", "ext2", "B", "calls_per_s", groups=g, threads=1)
        c2 = _extra(samples, "statfs", "ext2", "B", "calls_per_s", groups=g, threads=2)
        if c1 and c2:
            vals.append("%d groups: %.2fx" % (g, c2 / c1))
            oks.append(c2 >= c1)
    add("statfs: B with 2 threads makes at least as many calls as with 1",
        all(oks) if oks else None, "; ".join(vals) or "not measured")

    # seed
    no_loss("seed")
    vals, oks = [], []
    for n in SEED_BLOCKS:
        b1 = _med(_row(rows, "seed", "ext2", n=n, tasks=1), "B")
        b2 = _med(_row(rows, "seed", "ext2", n=n, tasks=2, dirs="separate"), "B")
        t1 = _med(_row(rows, "seed", "tmpfs", n=n, tasks=1), "B")
        t2 = _med(_row(rows, "seed", "tmpfs", n=n, tasks=2, dirs="separate"), "B")
        if b1 and b2 and t1 and t2:
            sb, st = b2 / b1, t2 / t1
            vals.append("n=%d: ext2 %.2fx, tmpfs %.2fx (%.2f)" % (n, sb, st, sb / st))
            oks.append(sb >= 0.95 * st)
    add("seed: B's 2-task/1-task scaling (separate dirs) >= 0.95x tmpfs's",
        all(oks) if oks else None, "; ".join(vals) or "not measured")

    # inode
    no_loss("inode")

    # the A/A control
    name = ("control: the A/A interval (C/A) is within %d%% at every ext2 seed and statfs "
            "point" % (MARGIN * 100))
    ctl = [r for r in rows if r["workload"] in ("seed", "statfs") and r["fs"] == "ext2"
           and r.get("control")]
    if not ctl:
        add(name, None, "no control in this run (--control)")
    else:
        widest = max(ctl, key=lambda r: _half_width(r["control"]))
        within = [r for r in ctl if inside(r["control"])]
        judged = [r for r in ctl if r["control"].get("lo") is not None]
        add(name, (len(within) == len(ctl)) if len(judged) == len(ctl) else None,
            "%d of %d points within; widest: %s %s" % (
                len(within), len(ctl), _params(widest), _interval(widest["control"])))

    # lock statistics
    if not lockstat:
        add("lockstat: no filesystem-wide ext2 lock among B's contended classes", None,
            "not measured (run with --lockstat)")
    else:
        found = []
        for wl, classes in sorted(lockstat.get("B", {}).items()):
            for c in fs_wide_ext2(classes):
                found.append("%s: %s (%d contentions)" % (wl, c["name"], c["contentions"]))
        detail = "; ".join(found) or "none contended (A: %s)" % (
            "; ".join("%s: %s" % (wl, ", ".join(c["name"] for c in fs_wide_ext2(cl)))
                      for wl, cl in sorted(lockstat.get("A", {}).items())
                      if fs_wide_ext2(cl)) or "none either")
        pcpu = ["%s: %s (%d contentions at %s)" % (wl, c["name"], c["contentions"],
                                                   c["sites"][0]["symbol"])
                for wl, classes in sorted(lockstat.get("B", {}).items())
                for c in percpu_counter_locks(classes)]
        if pcpu:
            detail += "; note, percpu counter locks contended in B: " + "; ".join(pcpu)
        add("lockstat: no filesystem-wide ext2 lock among B's contended classes",
            not found, detail)
    return out


# ---------------------------------------------------------------------------
# Markdown

TCG_NOTE = ("Absolute figures are QEMU TCG (emulated CPU) times, far from native speed and "
            "host-dependent: compare the B/A ratios and the reference rows, not absolute "
            "values.")
KVM_NOTE = ("Absolute figures are QEMU KVM guest times on this host: compare the B/A ratios "
            "and the reference rows, not absolute values.")


def _num(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.3g" % x


def _cell(s, loaded):
    if not s:
        return "-"
    txt = "%s [%s..%s]" % (_num(s["median"]), _num(s["min"]), _num(s["max"]))
    if s["n"] > 1:
        txt += " n=%d" % s["n"]
    if loaded:
        txt += " L%d" % loaded
    return txt


def _params(r):
    return " ".join("%s=%s" % (k, r["params"][k]) for k in PARAM_ORDER if k in r["params"])


def markdown(doc):
    meta = doc["run"]
    ka, kb = doc["kernels"].get("A", {}), doc["kernels"].get("B", {})
    out = ["# fork bench %s: %s (A) vs %s (B)" % (meta["id"], ka.get("rev"), kb.get("rev")), ""]
    out.append("- A: `%s` = %s, B: `%s` = %s%s" % (
        ka.get("rev"), (ka.get("commit") or "?")[:12], kb.get("rev"),
        (kb.get("commit") or "?")[:12],
        " (the same commit: an A/A run, every difference is noise)"
        if ka.get("commit") and ka.get("commit") == kb.get("commit") else ""))
    out.append("- %d repetition(s), each one boot per kernel (%s), the order rotating; every "
               "boot runs every point %d time(s)%s%s; mode %s, %d vCPUs%s" % (
                   meta["reps"], "A, B and the A/A control C = A's image" if meta.get("control")
                   else "A and B", meta.get("runs", 1),
                   (", the first %d discarded" % meta["warmup"]) if meta.get("warmup") else "",
                   "; --quick sizes" if meta.get("quick") else "", meta.get("mode", "wall"),
                   meta.get("smp", 2),
                   " (icount: CPU work per operation, the vCPUs take turns)"
                   if meta.get("mode") == "icount" else ""))
    out.append("- guest: %s" % meta.get("guest", ""))
    out.append("- **%s**" % (KVM_NOTE if meta.get("accel") == "kvm" else TCG_NOTE))
    out.append("- cells: median [min..max] n=samples.  %s" % INTERVAL_RULE)
    out.append("- load: %s. Loaded samples: %d of %d." % (
        LOAD_RULE, sum(1 for s in doc["samples"] if s["loaded"]), len(doc["samples"])))
    out.append("- reproduce: `%s`" % meta.get("command", ""))
    out.append("")
    out.append("## Targets")
    out.append("")
    out += md_table(["target", "result", "figures"], [
        [t["target"], {True: "reached", False: "**not reached**",
                       None: "inconclusive / not measured"}[t["reached"]], t["detail"]]
        for t in doc["targets"]])
    for wl in WORKLOADS:
        rows = [r for r in doc["stats"] if r["workload"] == wl]
        if not rows:
            continue
        out.append("")
        out.append("## %s: %s, %s is better" % (wl, UNITS[wl], rows[0]["better"]))
        out.append("")
        control = any(r.get("control") for r in rows)
        out += md_table(["fs", "point", "A", "B", "B/A [95%] ±detectable", "verdict"]
                        + (["A/A control C/A"] if control else []), [
            [r["fs"] + ("" if r["fs"] == "ext2" else " (ref)"), _params(r),
             _cell(r["A"], r["loaded"]["A"]), _cell(r["B"], r["loaded"]["B"]),
             _interval(_pr(r)), r["verdict"]]
            + ([_interval(r.get("control"))] if control else []) for r in rows])
    ls = doc.get("lockstat")
    if ls:
        out.append("")
        out.append("## Lock statistics (lockstat kernels, ext2 points only)")
        out.append("")
        out.append("Top contended lock classes per workload; wait total in microseconds "
                   "(lockstat kernels are slower still: compare A with B only).")
        for wl in WORKLOADS:
            have = [k for k in ("A", "B") if wl in ls.get(k, {})]
            if not have:
                continue
            out.append("")
            out.append("### %s" % wl)
            for k in have:
                out.append("")
                out.append("%s (%s):" % (k, doc["kernels"].get(k, {}).get("rev")))
                out.append("")
                top = [c for c in ls[k][wl] if c["contentions"] > 0][:8]
                out += md_table(
                    ["class", "contentions", "wait total us", "acquisitions", "top site"],
                    [[c["name"] + (" **fs-wide**" if FS_WIDE_EXT2_RE.search(c["name"]) else
                                   " (percpu counter)" if percpu_counter_locks([c]) else ""),
                      "%d" % c["contentions"], "%.1f" % c["waittime_total_us"],
                      "%d" % c["acquisitions"],
                      c["sites"][0]["symbol"] if c["sites"] else "-"] for c in top])
                if not top:
                    out.append("| (no contended class) | | | | |")
    table = lock_table(doc) if ls else []
    if table:
        out.append("")
        out.append("### ext2 lock acquisitions and contentions per operation (%d vCPUs)"
                   % meta.get("smp", 2))
        out.append("")
        out.append("Per operation of the workload's ext2 points in the lockstat boot "
                   "(seed: write N blocks + truncate; inode: create+unlink; statfs: one "
                   "call); the `sync` between points is counted too.  0 = the class was "
                   "not taken.")
        out.append("")
        out += md_table(["workload", "class", "A acq/op", "A cont/op", "B acq/op",
                         "B cont/op"], [
            [wl, name + (" **fs-wide**" if FS_WIDE_EXT2_RE.search(name) else "")]
            + [v for k in ("A", "B")
               for v in (["%.3g" % per[k][0], "%.3g" % per[k][1]] if k in per else ["-", "-"])]
            for wl, name, per in table])
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# --each: every commit against its parent

def _relabel(samples, names):
    """The samples of the kernels in `names` ({label: new label}), relabelled."""
    return [dict(s, kernel=names[s["kernel"]]) for s in samples if s["kernel"] in names]


def steps(doc, labels, points):
    """One step per commit of an --each run (labels K0..Kn): the commit
    against its parent as an A/B pair (aggregate(), with the A/A control on
    the first step, whose A is the image the control boots again) and the
    ext2 lock acquisitions per operation of both; then K0 against Kn, the
    whole range."""
    ls = doc.get("lockstat") or {}
    out = []
    pairs = [(labels[i - 1], labels[i]) for i in range(1, len(labels))]
    if len(labels) > 2:
        pairs.append((labels[0], labels[-1]))
    for a, b in pairs:
        names = {a: "A", b: "B"}
        if a == labels[0] and "C" in doc["kernels"]:
            names["C"] = "C"
        sub = _relabel(doc["samples"], names)
        kb = doc["kernels"][b]
        step = {"a": a, "b": b, "commit": kb["commit"], "subject": kb.get("subject"),
                "whole": (a, b) == (labels[0], labels[-1]) and len(labels) > 2,
                "stats": aggregate(sub, points)}
        if ls:
            step["locks"] = [[wl, name, {k: list(v) for k, v in per.items()}]
                             for wl, name, per in lock_table(
                                 {"lockstat": {"A": ls.get(a, {}), "B": ls.get(b, {})},
                                  "samples": sub})]
        out.append(step)
    return out


def _ratio(x):
    """A ratio for the summary tables: three decimals near 1 (where %.3g
    would print 1.0046 as "1"), three significant digits elsewhere."""
    return "%.3f" % x if 0.9 <= x < 1.1 else "%.3g" % x


def _summary_column(r):
    """The column of steps_summary() a point belongs to: its workload, and
    for statfs its filesystem size, whose cost the series changes most."""
    groups = (r.get("params") or {}).get("groups")
    return r["workload"] + (" %s groups" % groups if groups is not None else "")


def steps_summary(docs, only=None):
    """One row per commit over several --each runs of one mode, vCPU count
    and accelerator (the cost of a series, patch by patch): per workload
    (statfs per filesystem size), the range of the commit's B/A over the
    ext2 points and the range their 95% intervals span; and the ext2 lock
    classes whose acquisitions per operation change (parent -> commit).
    The whole-range steps are left out.  Lines of a markdown table and a
    line naming the runs."""
    setting = None
    for doc in docs:
        meta = doc["run"]
        if doc.get("steps") is None:
            raise ForkError("bench run %s is not an --each run" % meta.get("id", "?"))
        this = (meta.get("mode", "wall"), meta.get("smp", 2), meta.get("accel", "tcg"))
        if setting is not None and this != setting:
            raise ForkError("bench run %s ran %s, %d vCPUs, %s; %s ran %s, %d vCPUs, %s: one "
                            "table holds runs of one setting" % ((meta.get("id"),) + this + (
                                docs[0]["run"].get("id"),) + setting))
        setting = this
    cols = []
    for wl in (only or WORKLOADS):
        if wl not in WORKLOADS:
            raise ForkError("unknown workload %r: choose from %s" % (wl, ", ".join(WORKLOADS)))
        for d in docs:
            for st in d["steps"]:
                for r in st["stats"]:
                    if r["workload"] == wl and r["fs"] == "ext2" \
                            and _summary_column(r) not in cols:
                        cols.append(_summary_column(r))
    rows = []
    for doc in docs:
        for st in doc["steps"]:
            if st["whole"]:
                continue
            row = ["`%s` %s" % (st["commit"][:12], st.get("subject") or "")]
            for col in cols:
                pts = [r for r in st["stats"] if r["fs"] == "ext2"
                       and _summary_column(r) == col and r.get("ratio") is not None]
                if not pts:
                    row.append("-")
                    continue
                lo = min(r["ratio"] for r in pts)
                hi = max(r["ratio"] for r in pts)
                rng = _ratio(lo) if _ratio(lo) == _ratio(hi) else "%s-%s" % (_ratio(lo),
                                                                          _ratio(hi))
                ints = [r for r in pts if r.get("ratio_lo") is not None
                        and r.get("ratio_hi") is not None]
                if len(ints) == len(pts):
                    rng += " [%s..%s]" % (_ratio(min(r["ratio_lo"] for r in ints)),
                                          _ratio(max(r["ratio_hi"] for r in ints)))
                else:
                    rng += " [no interval]"
                row.append(rng)
            locks = st.get("locks")
            if locks is None:
                row.append("not measured")
            else:
                changes = []
                for wl, name, per in locks:
                    if "A" in per and "B" in per:
                        a, b = per["A"][0], per["B"][0]
                        if abs(a - b) > max(0.01, 0.01 * max(a, b)):
                            changes.append("%s %s: %.3g -> %.3g" % (wl, name, a, b))
                    else:
                        changes.append("%s %s: not measured in both" % (wl, name))
                row.append("; ".join(changes) or "none")
            rows.append(row)
    mode, smp, accel = setting
    unjudged = sorted({"%s (%s)" % (_summary_column(r), r["verdict"]) for d in docs
                       for st in d["steps"] if not st["whole"] for r in st["stats"]
                       if r["fs"] == "ext2" and _summary_column(r) in cols
                       and "not judged" in (r.get("verdict") or "")})
    note = (["", "Not judged by the kit: %s." % "; ".join(unjudged)] if unjudged else [])
    return md_table(["commit"] + cols + ["ext2 lock acquisitions per operation that change"],
                    rows) + note + ["", "Runs %s: %s mode, %d vCPUs, %s, %s." % (
                        ", ".join(d["run"].get("id", "?") for d in docs), mode, smp,
                        accel.upper(), ", ".join(sorted({"%d repetitions" % d["run"].get(
                            "reps", 0) + (" with the A/A control" if d["run"].get("control")
                                          else "") for d in docs})))]


def steps_markdown(doc):
    """The report of an --each run: per workload, one row per commit (its
    B/A against its parent, per ext2 point), the A/A control, and the ext2
    lock acquisitions per operation of every kernel."""
    meta = doc["run"]
    chain = sorted((k for k in doc["kernels"] if re.match(r"^K\d+$", k)),
                   key=lambda k: int(k[1:]))
    first, last = doc["kernels"][chain[0]], doc["kernels"][chain[-1]]
    out = ["# fork bench %s: each commit of %s..%s against its parent"
           % (meta["id"], first.get("rev"), last.get("rev")), ""]
    for k in chain:
        kern = doc["kernels"][k]
        out.append("- %s: %s %s" % (k, (kern.get("commit") or "?")[:12],
                                   kern.get("subject") or kern.get("rev")))
    out.append("- %d repetition(s), each one boot of every kernel (%s), the order rotating; "
               "every boot runs every point %d time(s)%s%s; mode %s, %d vCPUs%s" % (
                   meta["reps"], ", ".join(chain) + (" and the A/A control C = K0's image"
                                                     if meta.get("control") else ""),
                   meta.get("runs", 1),
                   (", the first %d discarded" % meta["warmup"]) if meta.get("warmup") else "",
                   "; --quick sizes" if meta.get("quick") else "", meta.get("mode", "wall"),
                   meta.get("smp", 2),
                   " (icount: CPU work per operation, the vCPUs take turns)"
                   if meta.get("mode") == "icount" else ""))
    out.append("- guest: %s" % meta.get("guest", ""))
    out.append("- **%s**" % (KVM_NOTE if meta.get("accel") == "kvm" else TCG_NOTE))
    out.append("- cells: a step's B/A is the commit (B) against its parent (A).  %s"
               % INTERVAL_RULE)
    out.append("- load: %s. Loaded samples: %d of %d." % (
        LOAD_RULE, sum(1 for s in doc["samples"] if s["loaded"]), len(doc["samples"])))
    out.append("- reproduce: `%s`" % meta.get("command", ""))
    steps_ = doc.get("steps") or []
    for wl in WORKLOADS:
        keys = []
        for st in steps_:
            for r in st["stats"]:
                if r["workload"] == wl and r["fs"] == "ext2" and r["point"] not in keys:
                    keys.append(r["point"])
        if not keys:
            continue
        rows0 = {r["point"]: r for st in steps_ for r in st["stats"]}
        out += ["", "## %s: %s, %s is better; B/A [95%%] of each commit against its parent"
                % (wl, UNITS[wl], rows0[keys[0]]["better"]), ""]
        rows = []
        for st in steps_:
            by = {r["point"]: r for r in st["stats"]}
            name = ("whole range (%s against %s)" % (st["b"], st["a"]) if st["whole"] else
                    "%s %s" % (st["b"], st.get("subject") or st["commit"][:12]))
            rows.append([name] + [_interval(_pr(by[k])) if k in by else "-" for k in keys])
        ctl = [by for st in steps_[:1] for by in [{r["point"]: r for r in st["stats"]}]
               if any(r.get("control") for r in st["stats"])]
        if ctl:
            rows.append(["A/A control (C = K0's image, against K0)"]
                        + [_interval(ctl[0][k].get("control")) if k in ctl[0] else "-"
                           for k in keys])
        out += md_table(["commit"] + [_params(rows0[k]) for k in keys], rows)
    if any(st.get("locks") for st in steps_):
        out += ["", "## ext2 lock acquisitions per operation (lockstat kernels, %d vCPUs)"
                % meta.get("smp", 2), "",
                "Per operation of the workload's ext2 points in each kernel's lockstat boot "
                "(seed: write N blocks + truncate; inode: create+unlink; statfs: one call); "
                "acquisitions/op, contentions/op in parentheses; 0 = not taken.", ""]
        per = {}
        for st in steps_:
            for wl, name, cells in st.get("locks") or []:
                for side, k in (("A", st["a"]), ("B", st["b"])):
                    if side in cells:
                        per.setdefault((wl, name), {})[k] = cells[side]
        out += md_table(["workload", "class"] + chain, [
            [wl, name] + ["%.3g (%.3g)" % tuple(cells[k]) if k in cells else "-"
                          for k in chain]
            for (wl, name), cells in sorted(per.items())])
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# gnuplot

def plot_data(doc):
    """(seed rows, statfs rows) for the plot: lists of tuples."""
    rows = doc["stats"]
    seed = []
    for n in SEED_BLOCKS:
        for tasks, dirs in ((1, "separate"), (2, "shared"), (2, "separate")):
            label = "n=%d %s" % (n, "1 task" if tasks == 1 else "2 %s" % dirs)
            cols = []
            for fs, k in (("ext2", "A"), ("ext2", "B"), ("ext4", "B"), ("tmpfs", "B")):
                r = _row(rows, "seed", fs, n=n, tasks=tasks, dirs=dirs)
                s = r and r.get(k)
                cols.append((s["median"], s["min"], s["max"]) if s else None)
            if any(cols):
                seed.append((label, cols))
    statfs = []
    for g in STATFS_GROUPS:
        cols = []
        for fs, k, th in (("ext2", "A", 1), ("ext2", "B", 1), ("ext4", "B", 1),
                          ("ext2", "A", 2), ("ext2", "B", 2)):
            r = _row(rows, "statfs", fs, groups=g, threads=th)
            s = r and r.get(k)
            cols.append((s["median"], s["min"], s["max"]) if s else None)
        if any(cols):
            statfs.append((g, cols))
    tmpfs = _med(_row(rows, "statfs", "tmpfs", threads=1), "B")
    return seed, statfs, tmpfs


def _dat(cols):
    out = []
    for c in cols:
        out += ["NaN"] * 3 if c is None else ["%.6g" % x for x in c]
    return " ".join(out)


def gnuplot_files(doc, png):
    """-> (script text, {data file name: text}); data files live beside the
    script (gnuplot runs in that directory)."""
    seed, statfs, tmpfs = plot_data(doc)
    files = {}
    panels = []
    if seed:
        files["seed.dat"] = "# label  A ext2 (med min max)  B ext2  B ext4-driver  B tmpfs\n" + \
            "".join('"%s" %s\n' % (label, _dat(cols)) for label, cols in seed)
        panels.append("""set title "seed: ops/s (TCG; compare ratios)"
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.6 border -1
set ylabel "ops/s"
set xtics rotate by -35 font ",8"
set yrange [0:*]
set key inside top left horizontal maxrows 2 font ",9"
set offsets 0, 0, graph 0.15, 0
unset logscale
plot "seed.dat" using 2:3:4:xtic(1) title "A ext2", \\
     "" using 5:6:7 title "B ext2", \\
     "" using 8:9:10 title "ext4 driver (B)", \\
     "" using 11:12:13 title "tmpfs (B)"
""")
    if statfs:
        files["statfs.dat"] = "# groups  A ext2 T1 (med min max)  B ext2 T1  B ext4 T1  " \
                              "A ext2 T2  B ext2 T2\n" + \
            "".join("%d %s\n" % (g, _dat(cols)) for g, cols in statfs)
        tline = ""
        if tmpfs:
            tline = ', \\\n     %.6g with lines dt 3 lc rgb "gray40" title "tmpfs (B)"' % tmpfs
        panels.append("""set title "statfs: ns per call vs block groups (TCG; compare ratios)"
set style data yerrorlines
set logscale x 2
set logscale y 10
set xrange [96:11000]
set yrange [*:*]
set xtics (128, 1024, 8192) rotate by 0 font ",9"
set ylabel "ns per call"
set format y "10^{%%T}"
set xlabel "block groups (1 KiB blocks, 8 MiB each)"
set key inside top left vertical maxrows auto font ",9"
set offsets 0, 0, 0, 0
plot "statfs.dat" using 1:2:3:4 title "A ext2, 1 thread" lw 2, \\
     "" using 1:5:6:7 title "B ext2, 1 thread" lw 2, \\
     "" using 1:8:9:10 title "ext4 driver (B), 1 thread", \\
     "" using 1:11:12:13 title "A ext2, 2 threads" dt 2, \\
     "" using 1:14:15:16 title "B ext2, 2 threads" dt 2%s
""" % tline)
    if not panels:
        return None, files
    script = ['set terminal pngcairo size %d,560 font ",10"' % (720 * len(panels)),
              'set output "%s"' % png, "set grid ytics",
              "set multiplot layout 1,%d title \"%s\"" % (
                  len(panels), "fork bench %s: A %s vs B %s" % (
                      doc["run"]["id"], doc["kernels"].get("A", {}).get("rev"),
                      doc["kernels"].get("B", {}).get("rev"))),
              ""]
    script += panels
    script += ["unset multiplot", "unset output", ""]
    return "\n".join(script), files


def finite(x):
    return x is not None and not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))


# ---------------------------------------------------------------------------
# The figures of a record, for the sentences that summarise it (BENCHMARKS.md)

def record_stats(doc):
    """A record's rows, recomputed from its samples by aggregate(); a record
    judged under the earlier min..max rule (rows without "detectable") keeps
    the rows it stores, which are what its report printed."""
    if any("detectable" not in r for r in doc.get("stats", [])):
        return doc["stats"]
    points = [types.SimpleNamespace(**p) for p in doc["points"]]
    return aggregate(doc["samples"], points)


def record_samples(doc, workload, fs, kernel, **params):
    """The measured (base flavour, not warm-up) samples of one kernel at one
    point of a record, in the order they ran."""
    return [s for s in doc["samples"]
            if s["workload"] == workload and s["fs"] == fs and s["kernel"] == kernel
            and s["flavour"] == "base" and not s.get("warmup")
            and all(s["params"].get(k) == v for k, v in params.items())]


def interval_facts(intervals, margin=MARGIN):
    """What a set of paired_ratio()-like intervals says, over the judged ones:
    points; within: the interval inside 1 +- margin (the control target's
    rule); the least and greatest ratio, lo and hi; and, when the record has
    half-widths (in percent): narrow (a half-width of at most margin), the
    least and greatest half-width, and how many print as ±0.0%."""
    ivs = [r for r in intervals if r and r.get("lo") is not None]
    if not ivs:
        return {}
    out = {"points": len(ivs),
           "within": sum(1 for r in ivs if inside(r, margin)),
           "min": min(r["ratio"] for r in ivs), "max": max(r["ratio"] for r in ivs),
           "lo": min(r["lo"] for r in ivs), "hi": max(r["hi"] for r in ivs)}
    hw = [100 * r["detectable"] for r in ivs if r.get("detectable") is not None]
    if len(hw) == len(ivs):
        out.update({"narrow": sum(1 for h in hw if h <= 100 * margin),
                    "± min": min(hw), "± max": max(hw),
                    "±0.0%": sum(1 for h in hw if "%.1f" % h == "0.0")})
    return out


def _point_facts(name, r):
    out = {}
    for k in ("A", "B", "C"):
        if r.get(k):
            out["%s %s" % (name, k)] = r[k]["median"]
    for label, iv in (("B/A", _pr(r)), ("C/A", r.get("control"))):
        if iv and iv.get("ratio") is not None:
            out["%s %s" % (name, label)] = iv["ratio"]
            if iv.get("lo") is not None:
                out["%s %s lo" % (name, label)] = iv["lo"]
                out["%s %s hi" % (name, label)] = iv["hi"]
            if iv.get("detectable") is not None:
                out["%s %s ±" % (name, label)] = 100 * iv["detectable"]
    if r.get("ratio"):
        out["%s A/B" % name] = 1 / r["ratio"]
    return out


def _kernel_facts(doc, name, r):
    """Per kernel at a point: the least and greatest sample, the least and
    greatest repetition (rep_log()) and their spread in percent, and the
    least and greatest of every numeric RESULT field of its samples (and of
    elapsed_ns in seconds, "elapsed s")."""
    out = {}
    for k in ("A", "B", "C"):
        samples = record_samples(doc, r["workload"], r["fs"], k, **r["params"])
        if not samples:
            continue
        pre = "%s %s " % (name, k)
        out.update({pre + "min": r[k]["min"], pre + "max": r[k]["max"]} if r.get(k) else {})
        reps = {}
        for s in samples:
            reps.setdefault(s["rep"], []).append(s["value"])
        vals = [math.exp(rep_log(v)) for v in reps.values()]
        out.update({pre + "rep min": min(vals), pre + "rep max": max(vals),
                    pre + "rep spread": 100 * (max(vals) / min(vals) - 1)})
        fields = {}
        for s in samples:
            for f, v in s.get("result", {}).items():
                try:
                    x = float(v)
                except (TypeError, ValueError):
                    continue
                fields.setdefault(f, []).append(x)
        if "elapsed_ns" in fields:
            fields["elapsed s"] = [x / 1e9 for x in fields["elapsed_ns"]]
        for f, vs in fields.items():
            out.update({pre + f + " min": min(vs), pre + f + " max": max(vs)})
    return out


def _lock_facts(doc):
    out = {}
    ls = doc.get("lockstat") or {}
    for wl, name, per in lock_table(doc):
        for k, (acq, cont) in per.items():
            out["lock %s %s %s acq/op" % (wl, name, k)] = acq
            out["lock %s %s %s cont/op" % (wl, name, k)] = cont
    for k, workloads in ls.items():
        for wl, classes in workloads.items():
            for c in classes:
                if EXT2_LOCK_RE.search(c["name"]):
                    key = "lock %s %s %s " % (wl, c["name"], k)
                    out[key + "acquisitions"] = c["acquisitions"]
                    out[key + "contentions"] = c["contentions"]
                    out[key + "wait us"] = c["waittime_total_us"]
    return out


def record_facts(doc, margin=MARGIN):
    """{name: number}: the figures of one bench record that a summary states,
    from its samples (record_stats()).  Names:

    - "samples", "loaded", "boot s min", "boot s max";
    - per point ("<workload> <fs> <params>", e.g. "statfs ext2 groups=128
      threads=1"): the medians "<point> A" (B, C), "<point> B/A" with
      " lo", " hi" and " ±" (the half-width in percent), the same for "C/A",
      "<point> A/B" (how many times cheaper or faster B is), and per
      kernel "<point> A min" / " max" (samples), " rep min" / " rep max" /
      " rep spread" (repetitions) and "<point> A <RESULT field> min" / " max";
    - per workload and filesystem ("*" for every workload): "B/A <workload>
      <fs> <fact>" and "C/A ..." for each fact of interval_facts();
    - lock statistics: "lock <workload> <class> <kernel> acq/op" and
      " cont/op" (lock_table()), " acquisitions", " contentions", " wait us"
      (the ext2 classes of the lockstat dumps).
    """
    rows = record_stats(doc)
    secs = [b["seconds"] for b in doc.get("boots", []) if b.get("seconds") is not None]
    facts = {"samples": len(doc["samples"]),
             "loaded": sum(1 for s in doc["samples"] if s["loaded"])}
    if secs:
        facts.update({"boot s min": min(secs), "boot s max": max(secs)})
    groups = {}
    for r in rows:
        name = "%s %s %s" % (r["workload"], r["fs"], _params(r))
        facts.update(_point_facts(name, r))
        facts.update(_kernel_facts(doc, name, r))
        for wl in (r["workload"], "*"):
            groups.setdefault((wl, r["fs"]), []).append(r)
    for (wl, fs), rs in groups.items():
        for label, ivs in (("B/A", [_pr(r) for r in rs]), ("C/A", [r.get("control") for r in rs])):
            for k, v in interval_facts(ivs, margin).items():
                facts["%s %s %s %s" % (label, wl, fs, k)] = v
    facts.update(_lock_facts(doc))
    return facts


NUMBER_WORDS = ["none", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten", "eleven", "twelve"]


class _Facts(string.Formatter):
    """str.format over facts named with spaces and signs; the conversion
    !w writes a count as a word (0 as "none")."""

    def get_field(self, field_name, args, kwargs):
        return kwargs[field_name], field_name

    def convert_field(self, value, conversion):
        if conversion == "w":
            return NUMBER_WORDS[value] if 0 <= value < len(NUMBER_WORDS) else str(value)
        return super().convert_field(value, conversion)


def state(facts, template):
    """A sentence of `template` with the record's figures filled in:
    "{C/A statfs ext2 within} of {C/A statfs ext2 points}" and any format
    spec ("{statfs ext2 groups=128 threads=1 A:,.1f}"); KeyError names a
    figure the record does not have."""
    return _Facts().vformat(template, (), facts)
