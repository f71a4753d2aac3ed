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

A failed run can be explained (EXPLAINED, records/checks/explained.json):
the test that failed it asserted the wrong thing and was corrected, say.
An explanation names its runs one by one by their log (or, for a run
recorded without one, its console), says why in a sentence or two and
names the file of this repository that documents it; it covers those runs
wherever they are on record (a carried row holds the same runs) and no
other, so a later run of the cell, failed or not, is judged as ever.  An
explained run stays in its cell ("runs", and "explained" with its
explanation) but is left out of the verdict: "pass (1 failed run
explained)", and a cell whose every run is explained has no verdict of its
own ("no verdict: its run is an explained failure"), never a pass.  An
explanation that names a run not on record, or one that passed, is refused.

A run whose runner failed, not the kernel (an `error` run: a LAVA job
that booted no kernel, kernel.ERROR), judges nothing either: the verdict
is on the cell's completed runs, noted "(1 error of the runner left
out)", and a cell with no completed run has the verdict "error: ...",
never a pass nor a FAIL.  An explanation cannot name such a run (it did
not fail: it has no verdict).
"""

import json
import os
import re

from . import kernel
from ..core.errors import ForkError

# The subject of a base snapshot's commit (repo.snapshot.message()).
IMPORT_SUBJECT = "Import Debian "
# checkpatch's cell and detail of a commit without a parent: a base snapshot
# (verify/checkpatch.py)
BASE_CHECKPATCH = ("n/a", "base snapshot")
# The explanations of failed runs, relative to the repository.
EXPLAINED = "records/checks/explained.json"
EXPLANATION_KEYS = ("runs", "why", "see")


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


LOG_TIME = re.compile(r"-(\d{8}-\d{6})\.log$")


def _run_order(item):
    """Oldest first: a run's log is named check-<commit>-<date>-<time>.log
    (the commits of one tree pooled, the date and time decide)."""
    f, run = item[:2]
    name = os.path.basename(run.get("log") or "")
    m = LOG_TIME.search(name)
    return (m.group(1) if m else ""), name, f


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


def is_base(row):
    """Whether `row` is a base snapshot's: the kit found its commit has no
    parent (checkpatch "n/a", BASE_CHECKPATCH), or its subject is an
    import's (a row written before checkpatch said so)."""
    return ((row.get("cells") or {}).get("checkpatch"),
            (row.get("details") or {}).get("checkpatch")) == BASE_CHECKPATCH \
        or str(row.get("subject", "")).startswith(IMPORT_SUBJECT)


def gather(root):
    """{(version, commit, flavour, test): [(file, run, row)]}, each run once
    (a cached copy of a run that a file holds as run is left out, and so is
    a carried one: a row of `check --carry` holds the runs of the row it
    was carried from), oldest first; `row` is the file's row that holds
    the run.  A commit's cell holds the runs of every commit with the same
    tree (same version, flavour and test) as well."""
    return {k: [item[:3] for item in v] for k, v in _gather(root)[0].items()}


def _gather(root):
    """gather(), each item with the run's identity as a fourth member, and
    {identity: the files that hold the run} (every copy: the row it was
    recorded in, cached and carried rows)."""
    seen, out, trees, holders = {}, {}, {}, {}
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
            holders.setdefault(ident, set()).add(f)
            if (key, ident) not in seen:
                seen[key, ident] = True
                out.setdefault(key, []).append((f, run, row, ident))
            if row.get("tree"):
                trees.setdefault((ver, row["tree"], key[2], key[3]), set()).add(key)
    # a run depends on the tree, not on the commit's log: every commit of
    # one tree (a reworded commit and the one it was carried from, or a
    # commit checked in several tables) is judged on all runs of that tree
    for keys in trees.values():
        if len(keys) < 2:
            continue
        pool = [item for k in sorted(keys) for item in out[k]]
        for key in keys:
            for item in pool:
                if (key, item[3]) not in seen:
                    seen[key, item[3]] = True
                    out[key].append(item)
    return {k: sorted(v, key=_run_order) for k, v in out.items()}, holders


def judge(runs, some_left_out=False, commit=None, own=None):
    """The verdict of a cell on its runs [(file, run, row)], oldest first:
    the latest row judged with every run (kernel.judge_runs()), and
    "pass", "FAIL" or its "flaky: k of n runs failed".  `some_left_out`:
    runs of the cell were left out (explained), so the row's own cells,
    which are its latest run's, give way to those of the latest run
    judged.  `commit`: the cell's commit, whose latest row gives the cells
    (checkpatch is the commit's own) when the runs include those of other
    commits of the same tree."""
    if own is None:
        mine = [r for _, _, r in runs if commit is None or r["commit"] == commit]
        own = mine[-1] if mine else runs[-1][2]
    row = dict(own, runs=[run for _, run, _ in runs])
    if some_left_out or own is not runs[-1][2]:
        row["cells"] = dict(row.get("cells", {}), **runs[-1][1].get("cells", {}))
    kernel.judge_runs(row)
    return row, "pass" if row["passed"] else row.get("flaky") or "FAIL"


def _plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def run_names(run):
    """What an explanation may name a run by: its log, and its console
    (a run recorded without a log has still its console)."""
    return [n for n in (run.get("log"), run.get("console")) if isinstance(n, str) and n]


def _bad(n, what):
    return ForkError("%s: explanation %d: %s (records/README.md gives the form)"
                     % (EXPLAINED, n, what))


def read_explanations(root):
    """The explanations of EXPLAINED under `root`, each checked for its form
    (not yet against the runs: explained()): [{"n" (its place, from 1),
    "runs", "why", "see"}]; [] when there is no such file."""
    path = os.path.join(root, EXPLAINED)
    if not os.path.exists(path):
        return []
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise ForkError("%s: not readable as JSON (%s): fix it, records/README.md gives "
                        "its form" % (EXPLAINED, e))
    if not isinstance(doc, list):
        raise ForkError("%s: not a list of explanations: records/README.md gives its form"
                        % EXPLAINED)
    out = []
    for n, e in enumerate(doc, 1):
        if not isinstance(e, dict) or sorted(e) != sorted(EXPLANATION_KEYS):
            raise _bad(n, "needs exactly the keys %s, has %s" % (
                ", ".join(EXPLANATION_KEYS),
                ", ".join(sorted(e)) if isinstance(e, dict) and e else "none"))
        runs = e["runs"]
        if not isinstance(runs, list) or not runs or \
                not all(isinstance(r, str) and r.strip() == r and r for r in runs):
            raise _bad(n, '"runs" is not a list of runs named by their log, such as '
                       '"logs/check-<commit12>-<date>-<time>.log"')
        if len(set(runs)) != len(runs):
            raise _bad(n, 'names a run twice in "runs": name each once')
        why = e["why"]
        if not isinstance(why, str) or not why.strip() or "\n" in why:
            raise _bad(n, '"why" is not a sentence or two on one line')
        see = e["see"]
        if not isinstance(see, str) or not see or os.path.isabs(see) or "\\" in see \
                or ".." in see.split("/") or os.path.normpath(see) != see:
            raise _bad(n, '"see" %r is not a path relative to the repository, such as '
                       '"next/README.md"' % (see,))
        if not os.path.isfile(os.path.join(root, see)):
            raise _bad(n, '"see" %s: no such file in the repository: name the file that '
                       'documents the explanation' % see)
        out.append({"n": n, "runs": list(runs), "why": why.strip(), "see": see})
    return out


def explained(root, runs_by_cell):
    """{run's name (its log or console): its explanation} for every run that
    EXPLAINED names, each found on record (in `runs_by_cell`, gather()'s)
    and failed; a ForkError naming the explanation otherwise."""
    wanted = {}
    for e in read_explanations(root):
        for name in e["runs"]:
            if name in wanted:
                raise _bad(e["n"], "run %s is explained in explanation %d already: name it "
                           "once" % (name, wanted[name]["n"]))
            wanted[name] = e
    if not wanted:
        return {}
    found = {}
    for key, runs in runs_by_cell.items():
        for f, run, _ in runs:
            names = [n for n in run_names(run) if n in wanted]
            if len(names) > 1:
                raise _bad(wanted[names[1]]["n"], "names the run %s again by %s: name it "
                           "once, by its log" % (names[0], names[1]))
            for name in names:
                if run.get("error"):
                    raise _bad(wanted[name]["n"], "run %s is an error of the runner (%s, "
                               "commit %s), not a failure: it needs no explanation; remove it"
                               % (name, f, key[1][:12]))
                if run.get("passed"):
                    raise _bad(wanted[name]["n"], "run %s passed (%s, commit %s): only a "
                               "failed run can be explained; remove it"
                               % (name, f, key[1][:12]))
                found[name] = True
    unknown = [n for n in wanted if n not in found]
    if unknown:
        raise _bad(wanted[unknown[0]]["n"], "no run on record is %s: name a failed run by the "
                   "\"log\" of its row or run in records/checks/" % unknown[0])
    return wanted


def excused_runs(root):
    """The logs of the failed runs that a committed row excused by the
    kit's known-report rule (its `flaky_excused`: the base showed every
    report that failed its runs, kernel.judge_runs())."""
    out = set()
    for _, f in record_files(root):
        for row in read_rows(root, f):
            if row.get("flaky_excused"):
                out |= {r["log"] for r in kernel.runs_of(row)
                        if r.get("log") and not r.get("passed")}
    return out


def tree_runs(runs_by_cell, tree, flavour, test):
    """[(file, run, row)] of every run on record of `tree` under `flavour`
    and `test` (of gather()'s `runs_by_cell`, any version and commit of
    that tree), each once, oldest first."""
    seen, out = set(), []
    for key, runs in sorted(runs_by_cell.items()):
        if key[2:] != (flavour, test):
            continue
        for f, run, row in runs:
            ident = run.get("log") or id(run)
            if row.get("tree") == tree and ident not in seen:
                seen.add(ident)
                out.append((f, run, row))
    return sorted(out, key=_run_order)


def explanation_of(run, given):
    """The explanation (of explained()'s `given`) that covers `run`, or None."""
    return next((given[n] for n in run_names(run) if n in given), None)


def cells(root):
    """{(version, commit, flavour, test): {"key", "subject", "base" (the
    commit is a base snapshot: is_base()), "runs": [(file, run)], "rows":
    [(file, row)], "files": [the files that hold the run], "explained":
    [(file, run, explanation)], "errors": [(file, run)], "verdict"}} of
    every committed check record under `root`.  "runs", "rows" and
    "files" hold every run, explained, an error of the runner or neither
    (the same places in the three lists); "files", every table that holds
    a copy of the run (cached, carried), sorted; the verdict is on the
    runs that are neither explained nor errors."""
    out = {}
    items, holders = _gather(root)
    runs_by_cell = {k: [item[:3] for item in v] for k, v in items.items()}
    given = explained(root, runs_by_cell)
    for key, runs in runs_by_cell.items():
        done = [(f, run, explanation_of(run, given)) for f, run, _ in runs
                if explanation_of(run, given)]
        errors = [(f, run) for f, run, _ in runs if run.get("error")]
        judged = [r for r in runs if not explanation_of(r[1], given) and not r[1].get("error")]
        notes = []
        if done:
            notes.append("%s explained" % _plural(len(done), "failed run"))
        if judged:
            mine = [r for _, _, r in runs if r["commit"] == key[1]]
            row, verdict = judge(judged, bool(done or errors), key[1], mine[-1] if mine else None)
            if errors:
                notes.append("%s of the runner left out" % _plural(len(errors), "error"))
            if notes:
                verdict += " (%s)" % ", ".join(notes)
        elif errors:
            row = ([r for _, _, r in runs if r["commit"] == key[1]] or [runs[-1][2]])[-1]
            verdict = ("error: its run ended in an error of the runner" if len(errors) == 1 else
                       "error: its %d runs ended in errors of the runner" % len(errors))
            if done:
                verdict += " (%s)" % ", ".join(notes)
        else:
            row = ([r for _, _, r in runs if r["commit"] == key[1]] or [runs[-1][2]])[-1]
            verdict = ("no verdict: its run is an explained failure" if len(done) == 1 else
                       "no verdict: its %d runs are explained failures" % len(done))
        out[key] = {"key": key, "subject": row.get("subject", ""), "base": is_base(row),
                    "runs": [(f, run) for f, run, _ in runs],
                    "rows": [(f, r) for f, _, r in runs],
                    "files": [sorted(holders[item[3]]) for item in items[key]],
                    "explained": done,
                    "errors": errors, "verdict": verdict}
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


def failures(all_cells, key, judged_only=False):
    """[(file, what failed, the file of the first base run on record that
    shows the same report, or None)] for every failing run of the cell
    `key`: each report that failed it, else the failure in one line
    (kernel.failure_text()).  Any base run counts here (any kit and base
    image); the kit's own rule takes the base's evidence from the same
    base image only.  `judged_only`: only the runs the verdict is on (an
    explained run left out)."""
    ver, _, flavour, test = key
    base = base_reports(all_cells, ver, flavour, test)
    left_out = {id(run) for _, run, _ in all_cells[key]["explained"]} if judged_only else set()
    out = []
    for (f, run), (_, row) in zip(all_cells[key]["runs"], all_cells[key]["rows"]):
        if run["passed"] or run.get("error"):       # an error of the runner failed nothing
            continue
        if id(run) in left_out:
            continue
        # a row's reports are those of its latest run
        latest = "runs" not in row or run is row["runs"][-1]
        reps = [r for r in row.get("reports", []) if latest and r.get("verdict") == "FAIL"]
        out += [(f, r["signature"], next((bf for bf, b in base if same_report(r, b)), None))
                for r in reps]
        if not reps:
            out.append((f, run.get("failure") or kernel.failure_text(row), None))
    return out
