"""Check tables carried to another commit of the same tree (``check
--carry``).

A row's runs (build, boot, guest test, e2fsck, counts) depend on the
commit's tree, the flavour, the guest test, the kit and the host tools;
only checkpatch reads the commit's log.  A reword of a series (measured
figures filled into the logs) gives every commit a new id and leaves
every tree as it was: carry() writes each table of an old head's
directory again for the new range, each row with the new commit and
subject, checkpatch run again on the new commit, and the old row's runs,
cells and details otherwise, and a field ``carried`` naming the commit
and table the runs were recorded for.  A failed run stays failed: the
runs are copied as recorded and the row is judged on them as check judges
it (kernel.row_passed()).

It refuses, with nothing written, a tree of the range that has no row in
a table (that commit changed: check it), a row whose tree is no commit's
of the range (the table checked other commits), and a table that exists
already (a table is never overwritten).

mark(), table_mark() and notes() are what the check's tables
(verify/check.py) say of a carried row.
"""

import copy
import json
import os

from ..core.errors import ForkError
from ..core.paths import ensure_dir, new_log, repo_root, workdir_relative
from ..repo.git import git, require_ktree
from . import checkrecords, kernel

TOP = ("records", "checks")


def source_tables(src, series):
    """(version, [table path relative to the repository]) of `src`: a
    directory records/checks/<ver>/<head>/ (each table in it) or one table
    in one, as a path relative to the working directory or to the
    repository, or absolute."""
    root = os.path.realpath(repo_root())
    found = [p for p in ([src] if os.path.isabs(src) else [src, os.path.join(root, src)])
             if os.path.exists(p)]
    what = "--carry %s: " % src
    hint = "name a directory records/checks/<ver>/<head>/ of %s or a table in one" % root
    if not found:
        raise ForkError(what + "no such directory or table: " + hint)
    path = os.path.realpath(found[0])
    rel = os.path.relpath(path, root).split(os.sep)
    is_dir = os.path.isdir(path)
    if tuple(rel[:2]) != TOP or len(rel) < (4 if is_dir else 5) \
            or not (is_dir or path.endswith(".json")):
        raise ForkError(what + "not a check directory or table: " + hint)
    ver = rel[2]
    if ver != series.kver:
        raise ForkError(what + "holds %s tables and the series %s is on %s: name the series "
                        "of %s with --series" % (ver, series.rel, series.kver, ver))
    rel = "/".join(rel)
    if not is_dir:
        return ver, [rel]
    tables = sorted(rel + "/" + f for f in os.listdir(path)
                    if f.endswith(".json") and os.path.isfile(os.path.join(path, f)))
    if not tables:
        raise ForkError(what + "no table (*.json) in it: " + hint)
    return ver, tables


def pair_rows(rel, rows, commits, trees):
    """[(new commit, old row)] in the order of `commits` (the range) with
    `trees` ({commit: tree}): each commit gets the row of its tree; a
    ForkError when a tree has no row or a row's tree no commit."""
    rng = "%s..%s" % (commits[0][:12], commits[-1][:12])
    old = {}
    for r in rows:
        if not r.get("tree"):
            raise ForkError("%s: the row of commit %s names no tree: it cannot be carried; "
                            "check the range instead" % (rel, r["commit"][:12]))
        old.setdefault(r["tree"], []).append(r)
    new = {}
    for c in commits:
        new.setdefault(trees[c], []).append(c)
    for c in commits:
        if trees[c] not in old:
            raise ForkError("%s has no row of tree %s (commit %s \"%s\" of %s): its tree is "
                            "not the one checked; check the range (`tools/fork check`) "
                            "instead of carrying it" % (rel, trees[c][:12], c[:12],
                                                        subject(c), rng))
    for r in rows:
        if r["tree"] not in new:
            raise ForkError("%s: the row of commit %s (tree %s) is the tree of no commit of "
                            "%s: the table checked other commits; carry it with the range it "
                            "checked, or check this one" % (rel, r["commit"][:12],
                                                            r["tree"][:12], rng))
    for tree, cs in new.items():
        if len(old[tree]) > 1 and len(old[tree]) != len(cs):
            raise ForkError("%s has %d rows of tree %s and %s %d commits: they cannot be "
                            "paired; check the range instead" % (rel, len(old[tree]),
                                                                 tree[:12], rng, len(cs)))
    return [(c, old[trees[c]][new[trees[c]].index(c) if len(old[trees[c]]) > 1 else 0])
            for c in commits]


def subject(commit):
    return git(["log", "-1", "--format=%s", commit])


def carried_row(old, commit, rel, checked):
    """`old` (a row of the table `rel`) for `commit` (same tree): its runs
    as recorded, the new commit's subject and checkpatch (`checked`:
    (cell, detail, log)), and where the runs came from."""
    row = copy.deepcopy(old)
    row["runs"] = copy.deepcopy(kernel.runs_of(old))      # each names its own commit
    row["commit"], row["subject"] = commit, subject(commit)
    cell, detail, log = checked
    row.setdefault("cells", {})["checkpatch"] = cell
    row.setdefault("details", {})["checkpatch"] = detail
    row.pop("cached", None)                 # this row is carried, not read from the cache
    row["passed"] = kernel.row_passed(row)
    # a row carried before names the commit and table its runs were recorded for
    first = old.get("carried") or {"commit": old["commit"], "table": rel}
    row["carried"] = {"commit": first["commit"], "table": first["table"], "log": log}
    return row


def _write_new(path, text):
    """`text` as the new file `path`; a ForkError when it exists."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)          # never replaces a file
    except FileExistsError:
        raise ForkError("%s exists: a table is never overwritten; nothing was written"
                        % path)
    finally:
        os.unlink(tmp)


def carry(src, series, commits, refused=(), out=print):
    """Carry the tables of `src` (source_tables()) to `commits` (the range,
    as check computes it) under records/checks/<ver>/<last commit[:12]>/,
    each with its own file name.  Returns [(path relative to the
    repository, rows)]."""
    if refused:
        raise ForkError("--carry writes its tables itself and runs nothing but checkpatch: "
                        "leave out %s" % ", ".join("--" + o for o in refused))
    require_ktree()
    ver, tables = source_tables(src, series)
    root = repo_root()
    trees = {c: git(["rev-parse", c + "^{tree}"]) for c in commits}
    head = "/".join(TOP + (ver, commits[-1][:12]))
    plans = []
    for rel in tables:
        pairs = pair_rows(rel, checkrecords.read_rows(root, rel), commits, trees)
        dest = head + "/" + os.path.basename(rel)
        if os.path.exists(os.path.join(root, dest)):
            raise ForkError("%s exists: a table is never overwritten (carry to another head, "
                            "or remove it with git first); nothing was written" % dest)
        plans.append((rel, dest, pairs))
    # checkpatch once per new commit, as check runs it (the build worktree)
    checked = {}
    for c in commits:
        log = new_log("check-%s" % c[:12])
        cell, detail = kernel.run_checkpatch(c, log)
        checked[c] = (cell, detail, log)
    written, made = [], []
    for rel, dest, pairs in plans:
        written.append((dest, workdir_relative([carried_row(r, c, rel, checked[c])
                                                for c, r in pairs])))
    try:                # every table or none (another run may have written one meanwhile)
        for dest, rows in written:
            ensure_dir(os.path.dirname(os.path.join(root, dest)))
            _write_new(os.path.join(root, dest), json.dumps(rows, indent=1))
            made.append(os.path.join(root, dest))
    except ForkError:
        for path in made:
            os.unlink(path)
        raise
    for (rel, _, _), (dest, rows) in zip(plans, written):
        counts = {}
        for r in rows:
            counts[r["cells"]["checkpatch"]] = counts.get(r["cells"]["checkpatch"], 0) + 1
        out("%s: %d rows carried from %s (checkpatch: %s)" % (
            dest, len(rows), rel, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
        for r in rows:
            out("  %s  %s  runs of %s: %s" % (
                r["commit"][:12], r["subject"][:44], r["carried"]["commit"][:12], verdict(r)))
            for cell, detail in sorted(r.get("details", {}).items()):
                if r["cells"].get(cell) in ("FAIL", kernel.ERROR):
                    out("%s %s: %s" % (r["commit"][:12], cell, str(detail).splitlines()[0]))
    return written


def verdict(row):
    """A carried row's verdict in a word: an error of the runner (its
    boot cell "error": no verdict) is no FAIL."""
    if row["passed"]:
        return "pass"
    if row.get("error"):
        return "error" + (" (%s)" % row["flaky"] if row.get("flaky") else "")
    return row.get("flaky") or "FAIL"


def mark(row):
    """The mark of a carried row in the markdown table (its time column)."""
    return " (carried)" if row.get("carried") else ""


def table_mark(row):
    """The mark of a carried row in the terminal's table."""
    return " (carried from %s)" % row["carried"]["commit"][:12] if row.get("carried") else ""


def notes(rows):
    """The markdown lines under a table that say where each carried row's
    runs were recorded; [] when none was carried."""
    lines = ["- %s: runs recorded for commit %s, same tree (`%s`)" % (
        r["commit"][:12], r["carried"]["commit"][:12], r["carried"]["table"])
        for r in rows if r.get("carried")]
    if not lines:
        return []
    return ["", "Carried (`check --carry`: the build, boot and test runs of another commit "
            "with the same tree; checkpatch ran on this one):", ""] + lines
