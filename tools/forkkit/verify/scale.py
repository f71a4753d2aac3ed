"""What more guest slots buy on one machine: the same runs with 1 slot and
with N, their verdicts compared and their wall times side by side.

A round runs every job once per slot count, each job as its own
``tools/fork`` process with FORK_GUEST_SLOTS set; the order of the slot
counts turns round from one round to the next (1, 2 then 2, 1), so that a
drift of the machine's load over the run weighs on both.  A job's
verdicts are what its --json says, reduced to what the verdict is (a check
row's commit, cells and pass; an fstests test's status on both kernels and
its verdict): every run of a job must give the same, whatever its slots.

The record (records/scale/<id>.json) names what ran (commands, the kit,
QEMU, the host's CPUs and memory, the load before each job and whether
another tools/fork held a guest slot then) and what came of it; markdown()
renders it for the documents (``@@ scale <id>``).
"""

import os
import statistics

from ..core.errors import ForkError
from ..core.locks import memory_mb
from ..core.proc import cpu_count

# The fstests CI selection (tests/test_fstests_integration.py runs it in
# CI): block and inode allocation, each followed by fstests' fsck of the
# disks: fsstress (013; 070 with xattrs), truncfile (014), fsx buffered
# (075), O_DIRECT (091) and AIO (112), and the quota charged for what is
# allocated by buffered, direct and mmap writes (219).
FSTESTS_CI = ["generic/013", "generic/014", "generic/070", "generic/075", "generic/091",
              "generic/112", "generic/219"]

# the three series of the primary version and its backports
CHECK_SERIES = ["patches", "backports/6.12", "backports/6.1"]


def jobs(series=None, fstests=True):
    """[(name, kind, argv after tools/fork)] of one round; a job writes its
    verdicts to the path given by the {json} field of its argv."""
    out = []
    for s in series if series is not None else CHECK_SERIES:
        out.append(("check %s smoke" % s, "check",
                    ["check", "--series", s, "--test", "smoke", "--force", "--json", "{json}"]))
    if fstests:
        out.append(("fstests CI selection 7.3", "fstests",
                    ["fstests", "distro/7.3", "series/7.3", "--fresh", "--time-limit", "1200"]
                    + FSTESTS_CI + ["--json", "{json}"]))
    return out


def order(rep, slots):
    """The slot counts in the order round `rep` (0-based) runs them."""
    return list(slots) if rep % 2 == 0 else list(reversed(slots))


def verdicts(kind, data, rc=0):
    """What a job's --json says, reduced to its verdicts (a list of
    strings, comparable between runs).  A job that did not finish (an exit
    status other than 0, all passed, or 1, something failed), or whose
    answer is incomplete (an fstests test left pending by its time limit)
    gives none: ForkError."""
    if rc not in (0, 1):
        raise ForkError("it exited %s, not with a verdict" % rc)
    if kind == "check":
        if not isinstance(data, list) or not data:
            raise ForkError("its --json holds no check row")
        return ["%s %s/%s %s %s" % (r["commit"][:12], r["flavour"], r["test"],
                                    "pass" if r.get("passed") else "FAIL",
                                    ",".join("%s=%s" % kv for kv in sorted(r["cells"].items())))
                for r in data]
    if kind == "fstests":
        if not isinstance(data, dict) or not data.get("tests"):
            raise ForkError("its --json holds no fstests test")
        rows = []
        for t in data["tests"]:
            if t.get("base") is None or t.get("series") is None or t.get("verdict") == "pending":
                raise ForkError("%s did not run on both kernels" % t.get("test"))
            rows.append("%s base=%s series=%s %s" % (t["test"], t["base"], t["series"],
                                                     t["verdict"]))
        # the host's e2fsck of every boot's disks, and which kinds of kernel
        # report the consoles hold on each side (how many lines depends on
        # how many boots, which the shards change)
        meta = data.get("meta") or {}
        rows.append("e2fsck %s" % str(meta.get("e2fsck") or "none").split()[0])
        kinds = meta.get("report_kinds") or {}
        for side in ("base", "series"):
            rows.append("reports %s: %s" % (side, ",".join(
                sorted(k for k, n in kinds.items() if (n or {}).get(side))) or "none"))
        return rows
    raise ForkError("unknown job kind %r" % kind)


def summary(record):
    """Per job, then for all jobs: the seconds of each slot count in each
    complete round (every job run with every slot count; all jobs: the
    round's sum), the ratio of the fewest slots' time to the most slots'
    per complete round, and whether the verdicts are the same: every run
    of the job gave verdicts, the same, in every round the record asked
    for (`rounds`)."""
    slots = record["slots"]
    lo, hi = min(slots), max(slots)
    names = [j["name"] for j in record["jobs"]]
    runs = record["runs"]
    reps = sorted({r["rep"] for r in runs})

    def complete(rep):
        done = {(r["job"], r["slots"]) for r in runs if r["rep"] == rep}
        return all((name, n) in done for name in names for n in slots)

    full = [rep for rep in reps if complete(rep)]
    whole = len(full) == record.get("rounds", 0) and bool(full)

    def secs(name, n, rep):
        return sum(r["seconds"] for r in runs if r["rep"] == rep and r["slots"] == n and
                   (name is None or r["job"] == name))

    rows = []
    for name in names + [None]:
        mine = [r for r in runs if name is None or r["job"] == name]
        failed = sum(1 for r in mine if r.get("verdicts") is None)
        if name is None:
            same = whole and bool(rows) and all(row["same"] for row in rows)
        else:
            vs = {tuple(r["verdicts"]) for r in mine if r.get("verdicts") is not None}
            same = whole and not failed and len(vs) == 1
        ratios = [secs(name, lo, rep) / secs(name, hi, rep) for rep in full
                  if secs(name, hi, rep) > 0]
        rows.append({"job": name or "all jobs",
                     "seconds": {n: [secs(name, n, rep) for rep in full] for n in slots},
                     "ratios": ratios, "same": same, "failed": failed,
                     "rows": len(mine[0]["verdicts"]) if mine and mine[0].get("verdicts")
                     else 0})
    return rows


def _fmt_ratio(ratios):
    if not ratios:
        return "-"
    if len(ratios) == 1:
        return "%.2f" % ratios[0]
    return "%.2f [%.2f..%.2f]" % (statistics.mean(ratios), min(ratios), max(ratios))


def markdown(record):
    """The record as a table and the lines that say what ran."""
    slots = record["slots"]
    lo, hi = min(slots), max(slots)
    head = ["job", "verdicts"] + ["%d slot%s (s)" % (n, "" if n == 1 else "s") for n in slots] \
        + ["%d-slot time / %d-slot" % (lo, hi)]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in summary(record):
        if row["failed"]:
            v = "**%d run(s) gave none**" % row["failed"]
        elif row["job"] == "all jobs":
            v = "the same in every job" if row["same"] else "**not the same**"
        else:
            v = "%d lines, the same in every run" % row["rows"] if row["same"] else "**differ**"
        out.append("| " + " | ".join(
            [row["job"], v] + [", ".join("%.0f" % s for s in row["seconds"][n]) or "-"
                               for n in slots] + [_fmt_ratio(row["ratios"])]) + " |")
    host = record["host"]
    loads = [r["load_before"] for r in record["runs"]]
    busy = [r for r in record["runs"] if r.get("busy")]
    reps = record.get("rounds", 0)
    kit = record.get("kit") or {}
    out += ["",
            "%d round%s%s, the order of the slot counts turned round each round; seconds "
            "per complete round, the ratio as mean [min..max] over them. Host: %s CPUs, "
            "%s MiB; 1-minute load average before a job (this run's own load included) "
            "%.2f..%.2f; %s."
            % (reps, "" if reps == 1 else "s",
               "" if record.get("finished") else " asked for, **not finished**",
               host.get("cpus"), host.get("mem_mb"),
               min(loads) if loads else 0, max(loads) if loads else 0,
               "no other tools/fork run held a guest slot before any job" if not busy else
               "**another tools/fork run held a guest slot before %d job(s)**" % len(busy)),
            "",
            "Kit %s%s; %s. Command: `%s`." % ((kit.get("commit") or "?")[:12],
                                               " (with changes)" if kit.get("dirty") else "",
                                               record.get("qemu") or "QEMU ?",
                                               record["command"])]
    return out


def host_facts():
    return {"cpus": cpu_count(), "mem_mb": memory_mb()}


def load_average():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0
