"""scale: the same checks and fstests with 1 guest slot and with more,
verdicts compared, wall times side by side.

    tools/fork scale [--slots 1,2] [--rounds N] [--series S ...] [--no-fstests]
                     [--record]

A round runs every job once per slot count, each as its own ``tools/fork``
process with FORK_GUEST_SLOTS set to that count: ``check --series S --test
smoke --force`` of each series (default: patches, backports/6.12,
backports/6.1) and the fstests CI selection (``fstests distro/7.3
series/7.3 --fresh`` of verify.scale.FSTESTS_CI, shards as many as the
slots).  The order of the slot counts turns round from one round to the
next.  Every run of a job must give the same verdicts (check rows: commit,
cells, pass; fstests: each test's status on both kernels and its verdict);
the table gives each job's seconds and the ratio of 1 slot's time to the
most slots' per round, as mean [min..max] over the rounds.  It exits 1
when verdicts differ, and stops at the first job that gives none (its
log says why).

Run it on an otherwise idle machine: the record notes the load average
before each job and whether another tools/fork run held a guest slot then
(it does not wait for one).  Each job's output goes to
work/logs/scale-<id>-*.log, its --json and the run so far to
work/scale/<id>/.  A job that does not finish with a verdict (an exit
status other than 0 or 1, no --json, an fstests test left pending by the
time limit) stops the run.  ``--record`` writes records/scale/<id>.json
once every round has run, which the documents render (``@@ scale
<id>``).  Images are built first by the jobs themselves: run the checks
once before, so that the rounds time guests, not builds.
"""

import glob
import os
import shlex
import sys
import time

from ..core.errors import ForkError
from ..core.locks import busy_slots
from ..core.paths import ensure_dir, fork_entry, repo_root, wpath
from ..core.proc import run
from ..core.records import read_json, write_json
from ..repo.series import Series
from ..verify import scale as scalelib
from ..verify.bench import qemu_version
from ..verify.kernel import kit_version

HELP = "the same checks and fstests with 1 guest slot and with N: same verdicts, wall times"


def add_arguments(p):
    p.add_argument("--slots", default="1,2",
                   help="the slot counts to compare, comma-separated (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=2,
                   help="rounds; each runs every job once per slot count (default: %(default)s)")
    p.add_argument("--series", action="append", default=None,
                   help="a series to check (repeatable; default: %s)"
                   % ", ".join(scalelib.CHECK_SERIES))
    p.add_argument("--no-fstests", action="store_true",
                   help="leave out the fstests CI selection")
    p.add_argument("--record", action="store_true",
                   help="write the run to records/scale/<id>.json")


def parse_slots(text):
    try:
        slots = [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        slots = []
    if len(slots) < 2 or len(set(slots)) != len(slots) or min(slots) < 1:
        raise ForkError("--slots %s: give two or more different slot counts, e.g. 1,2" % text)
    return slots


def as_run(args, slots):
    cmd = ["tools/fork", "scale", "--slots", ",".join(map(str, slots)),
           "--rounds", str(args.rounds)]
    for s in args.series or []:
        cmd += ["--series", s]
    if args.no_fstests:
        cmd.append("--no-fstests")
    return " ".join(shlex.quote(c) for c in cmd + ["--record"])


def main(args):
    slots = parse_slots(args.slots)
    if args.rounds < 1:
        raise ForkError("--rounds %d: give 1 or more rounds" % args.rounds)
    # every series must be one before the first guest runs: a broken one is
    # refused here in one line, not after the rounds have begun
    series = [Series(s).rel for s in (args.series if args.series is not None
                                      else scalelib.CHECK_SERIES)]
    # by the directory each names (`patches` and `./patches/` are one)
    if len(set(series)) != len(series):
        raise ForkError("a --series is named twice: use --rounds N to run a job more often")
    jobs = scalelib.jobs(series, not args.no_fstests)
    if not jobs:
        raise ForkError("no job to run: name a --series or leave out --no-fstests")
    run_id = time.strftime("%Y%m%d-%H%M%S")
    outdir = ensure_dir(wpath("scale", run_id))
    record = {"id": run_id, "command": as_run(args, slots), "slots": slots,
              "rounds": args.rounds, "finished": False,
              "kit": kit_version(), "qemu": qemu_version(), "host": scalelib.host_facts(),
              "jobs": [{"name": n, "kind": k, "argv": ["tools/fork"] + a} for n, k, a in jobs],
              "runs": []}
    # the record goes to records/ only when every round has run
    partial = os.path.join(outdir, "scale.json")
    watch = max(max(slots), len(glob.glob(wpath("locks", "guest*.lock"))))
    for rep in range(args.rounds):
        for n in scalelib.order(rep, slots):
            for i, (name, kind, argv) in enumerate(jobs):
                tag = "job%d-r%d-s%d" % (i + 1, rep + 1, n)
                jpath = os.path.join(outdir, tag + ".json")
                if os.path.exists(jpath):
                    os.remove(jpath)
                log = wpath("logs", "scale-%s-%s.log" % (run_id, tag))
                ensure_dir(os.path.dirname(log))
                cmd = [sys.executable, fork_entry()] + [jpath if a == "{json}" else a
                                                        for a in argv]
                entry = {"rep": rep + 1, "slots": n, "job": name,
                         "load_before": scalelib.load_average(),
                         "busy": bool(busy_slots(watch)),
                         "log": os.path.relpath(log, wpath())}
                print("scale: round %d, %d slot%s: %s" % (rep + 1, n, "" if n == 1 else "s",
                                                          name), file=sys.stderr, flush=True)
                t0 = time.monotonic()
                proc = run(cmd, env={"FORK_GUEST_SLOTS": str(n)}, log=log, check=False)
                entry["seconds"] = round(time.monotonic() - t0, 1)
                entry["rc"] = proc.returncode
                try:
                    entry["verdicts"] = scalelib.verdicts(kind, read_json(jpath, None),
                                                          proc.returncode)
                except (ForkError, KeyError, TypeError, AttributeError) as exc:
                    entry["verdicts"] = None
                    entry["error"] = "no verdicts (%s): see %s" % (exc, entry["log"])
                record["runs"].append(entry)
                write_json(partial, record)
                if entry["verdicts"] is None:
                    # the times after a job that gave no answer compare nothing
                    print("\n".join(scalelib.markdown(record)))
                    raise ForkError("%s with %d slot%s gave no verdicts (%s): see %s; the "
                                    "run stops here (kept in %s)"
                                    % (name, n, "" if n == 1 else "s", entry["error"],
                                       wpath(entry["log"]), partial))
    record["finished"] = True
    write_json(partial, record)
    if args.record:
        out = ensure_dir(os.path.join(repo_root(), "records", "scale"))
        out = os.path.join(out, run_id + ".json")
        write_json(out, record)
    print("\n".join(scalelib.markdown(record)))
    print("record: %s" % os.path.relpath(out, repo_root()) if args.record else
          "results: %s" % partial)
    rows = scalelib.summary(record)
    return 0 if rows[-1]["same"] else 1
