"""The committed check records, read only: every run of every cell.

``check --json`` writes a table's rows to a file under records/checks/<ver>/; a
table run again (a second run, a ``--force`` of the base, a later kit) is
another file, so one cell (kernel version, commit, flavour, test) has runs
in many files, and one run can be in several (a cached row repeats the
run it was read from, with the same log).  cells() gathers every run of
every cell once and judges the cell on all of them by the kit's own rule
(kernel.judge_runs()): "pass", "FAIL", or "flaky: k of n runs failed",
which is no pass.  A row carried to another commit of the same tree
(``check --carry``, verify/carry.py) holds the runs of the row it came
from: they are the new commit's runs (a failed one stays failed), and
where both rows are one cell (a commit the reword left as it was) each
run counts once, as recorded in the older table.

The committed rows carry no excuse keys (kernel.run_entry()), so no flaky
cell is excused here.  failures() names what failed each failing run and
whether a recorded run of the base snapshot shows the same report
(same_report()); the known-report rule also asks that the base image be
the one the check booted and that the commit did not change the code on
the report's stacks, which only a check with the kernel tree can tell.
"""

import json
import os

from . import kernel
from ..core.errors import ForkError

# The subject of a base snapshot's commit (repo.snapshot.message()).
IMPORT_SUBJECT = "Import Debian "


def record_files(root):
    """[(kernel version, path relative to `root`)] of every check JSON
    under `root`/records/checks/<version>/, sorted."""
    top = os.path.join(root, "records", "checks")
    out = []
    for ver in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        for d, _, files in os.walk(os.path.join(top, ver)):
            out += [(ver, os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
                    for f in files if f.endswith(".json")]
    return sorted(out)


def read_rows(root, rel):
    try:
        with open(os.path.join(root, rel)) as fh:
            rows = json.load(fh)
    except (OSError, ValueError) as e:
        raise ForkError("%s: not a check record (%s): restore it from git" % (rel, e))
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "commit" in r
                                             for r in rows):
        raise ForkError("%s: not a check record (a list of `check --json` rows): "
                        "restore it from git" % rel)
    return rows


def _run_order(item):
    """Oldest first: a run's log is named check-<commit>-<date>-<time>.log."""
    f, run, _ = item
    return os.path.basename(run.get("log") or ""), f


def origin(f, row, index):
    """(file, commit) of the row that a carried row's runs were recorded in
    (`check --carry`, through carries of carries), or (`f`, its commit)
    for a row that was not carried; `index`: {(file, commit): row}."""
    seen = set()
    while row.get("carried") and (f, row["commit"]) not in seen:
        seen.add((f, row["commit"]))
        src = (row["carried"].get("table"), row["carried"].get("commit"))
        if src not in index:
            return src          # that table is not on record: it still names the runs
        f, row = src[0], index[src]
    return f, row["commit"]


def gather(root):
    """{(version, commit, flavour, test): [(file, run, row)]}, each run once
    (a cached copy of a run that a file holds as run is left out, and so is
    a carried one: a row of `check --carry` holds the runs of the row it
    was carried from), oldest first; `row` is the file's row that holds
    the run."""
    seen, out = {}, {}
    files = record_files(root)
    rows = [(ver, f, r) for ver, f in files for r in read_rows(root, f)]
    index = {(f, r["commit"]): r for _, f, r in rows}
    # the run as it happened before any cached or carried copy of it
    for ver, f, row in sorted(rows, key=lambda x: bool(x[2].get("cached")
                                                       or x[2].get("carried"))):
        key = (ver, row["commit"], row.get("flavour"), row.get("test"))
        for n, run in enumerate(kernel.runs_of(row)):
            # a run is its log; a run without one, its place in the row it
            # was recorded in
            ident = run.get("log") or origin(f, row, index) + (n,)
            if (key, ident) not in seen:
                seen[key, ident] = True
                out.setdefault(key, []).append((f, run, row))
    return {k: sorted(v, key=_run_order) for k, v in out.items()}


def judge(runs):
    """The verdict of a cell on its runs [(file, run, row)], oldest first:
    the latest row judged with every run (kernel.judge_runs()), and
    "pass", "FAIL" or its "flaky: k of n runs failed"."""
    row = dict(runs[-1][2], runs=[run for _, run, _ in runs])
    kernel.judge_runs(row)
    return row, "pass" if row["passed"] else row.get("flaky") or "FAIL"


def cells(root):
    """{(version, commit, flavour, test): {"key", "subject", "base" (the
    commit is a base snapshot), "runs": [(file, run)], "rows": [(file,
    row)], "verdict"}} of every committed check record under `root`."""
    out = {}
    for key, runs in gather(root).items():
        row, verdict = judge(runs)
        out[key] = {"key": key, "subject": row.get("subject", ""),
                    "base": row.get("subject", "").startswith(IMPORT_SUBJECT),
                    "runs": [(f, run) for f, run, _ in runs],
                    "rows": [(f, r) for f, _, r in runs], "verdict": verdict}
    return out


def same_report(a, b):
    """Two recorded reports are the same report: the same signature (the
    title without offsets; outside ext2, with newer kits, the ext2 function
    it came from) and, when both name one, the same ext2_key (which
    accesses of which ext2 functions race)."""
    return a.get("signature") == b.get("signature") and (
        not (a.get("ext2_key") and b.get("ext2_key")) or a["ext2_key"] == b["ext2_key"])


def base_reports(all_cells, ver, flavour, test):
    """[(file, report)] of every recorded run of the base snapshot of `ver`
    under `flavour` and `test`, pass or fail, oldest first."""
    return [(f, rep) for key, c in sorted(all_cells.items())
            if c["base"] and key[0] == ver and key[2:] == (flavour, test)
            for f, row in c["rows"] for rep in row.get("reports", [])]


def failures(all_cells, key):
    """[(file, what failed, the file of the first base run on record that
    shows the same report, or None)] for every failing run of the cell
    `key`: each report that failed it, else the failure in one line
    (kernel.failure_text()).  Any base run counts here (any kit and base
    image); the kit's own rule takes the base's evidence from the same
    base image only."""
    ver, _, flavour, test = key
    base = base_reports(all_cells, ver, flavour, test)
    out = []
    for (f, run), (_, row) in zip(all_cells[key]["runs"], all_cells[key]["rows"]):
        if run["passed"]:
            continue
        # a row's reports are those of its latest run
        latest = "runs" not in row or run is row["runs"][-1]
        reps = [r for r in row.get("reports", []) if latest and r.get("verdict") == "FAIL"]
        out += [(f, r["signature"], next((bf for bf, b in base if same_report(r, b)), None))
                for r in reps]
        if not reps:
            out.append((f, run.get("failure") or kernel.failure_text(row), None))
    return out
