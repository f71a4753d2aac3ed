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


def verdicts(kind, data):
    """What a job's --json says, reduced to its verdicts (a list of
    strings, comparable between runs)."""
    if kind == "check":
        if not isinstance(data, list) or not data:
            raise ForkError("a check --json holds no row")
        return ["%s %s/%s %s %s" % (r["commit"][:12], r["flavour"], r["test"],
                                    "pass" if r.get("passed") else "FAIL",
                                    ",".join("%s=%s" % kv for kv in sorted(r["cells"].items())))
                for r in data]
    if kind == "fstests":
        if not isinstance(data, dict) or not data.get("tests"):
            raise ForkError("an fstests --json holds no test")
        return ["%s base=%s series=%s %s" % (t["test"], t.get("base"), t.get("series"),
                                             t.get("verdict")) for t in data["tests"]]
    raise ForkError("unknown job kind %r" % kind)


def summary(record):
    """Per job: the seconds of each slot count (in round order), the ratio
    of 1 slot's time to the most slots' in each round, and whether every
    run gave the same verdicts; and the same for the whole round."""
    slots = record["slots"]
    lo, hi = min(slots), max(slots)
    names = [j["name"] for j in record["jobs"]]
    rows = []
    reps = sorted({r["rep"] for r in record["runs"]})

    def secs(name, n):
        """The seconds of job `name` with `n` slots, round by round (all
        jobs: each round's sum)."""
        out = []
        for rep in reps:
            ts = [r["seconds"] for r in record["runs"] if r["rep"] == rep and
                  r["slots"] == n and (name is None or r["job"] == name)]
            if ts and (name is not None or rep in full):
                out.append(sum(ts))
        return out

    def complete(rep):
        done = {(r["job"], r["slots"]) for r in record["runs"] if r["rep"] == rep}
        return all((name, n) in done for name in names for n in slots)

    full = [rep for rep in reps if complete(rep)]

    for name in names + [None]:
        runs = [r for r in record["runs"] if name is None or r["job"] == name]
        vs = {tuple(r["verdicts"]) if r.get("verdicts") is not None else None for r in runs}
        same = len(vs) == 1 and None not in vs if name is not None else \
            bool(rows) and all(row["same"] for row in rows)
        ratios = []
        for rep in full:
            t = {n: sum(r["seconds"] for r in record["runs"] if r["rep"] == rep and
                        r["slots"] == n and (name is None or r["job"] == name)) for n in (lo, hi)}
            if t[hi] > 0:
                ratios.append(t[lo] / t[hi])
        rows.append({"job": name or "all jobs",
                     "seconds": {n: secs(name, n) for n in slots},
                     "ratios": ratios,
                     "same": same,
                     "failed": sum(1 for r in runs if r.get("verdicts") is None),
                     "rows": len(runs[0]["verdicts"]) if runs and runs[0].get("verdicts") else 0})
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
        v = ("%d, the same in every run" % row["rows"] if row["same"] else
             "**differ**" if not row["failed"] else "**%d run(s) gave none**" % row["failed"])
        if row["job"] == "all jobs":
            v = "the same in every job" if row["same"] else "**not the same**"
        out.append("| " + " | ".join(
            [row["job"], v] + [", ".join("%.0f" % s for s in row["seconds"][n]) or "-"
                               for n in slots] + [_fmt_ratio(row["ratios"])]) + " |")
    host = record["host"]
    loads = [r["load_before"] for r in record["runs"]]
    busy = [r for r in record["runs"] if r.get("busy")]
    reps = len({r["rep"] for r in record["runs"]})
    out += ["",
            "%d round%s, the slot counts' order turned round each round; seconds in round "
            "order, the ratio as mean [min..max] over the rounds. Host: %s CPUs, %s MiB; "
            "load average before a job %.2f..%.2f; %s."
            % (reps, "" if reps == 1 else "s", host.get("cpus"), host.get("mem_mb"),
               min(loads) if loads else 0, max(loads) if loads else 0,
               "no other tools/fork run held a guest slot before any job" if not busy else
               "**another tools/fork run held a guest slot before %d job(s)**" % len(busy)),
            "",
            "Kit %s; %s. Command: `%s`." % ((record.get("kit") or {}).get("commit", "?")[:12],
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
