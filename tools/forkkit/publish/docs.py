"""The documents CHECKS.md, FSTESTS.md and BENCHMARKS.md, made from the
committed records (records/) and hand-written templates (docs/<NAME>.in).

A template is markdown, copied line by line, except:

* a line starting with ``%%`` is a note on the template and is dropped;
* a line ``@@ DIRECTIVE ARGS...`` is replaced by what the records give
  (DIRECTIVES below: each reads the records with the kit's own loaders
  and writes with core/tables.py).

So the same records and templates give the same bytes, and a document
differs from what they give only when it was edited by hand or a record
changed without the document being made again (``report --docs --check``).
"""

import inspect
import json
import os
import re
import textwrap
import types

from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..core.tables import md_cell, md_table
from ..guest import guesttests
from ..verify import benchlib, checkrecords
from ..verify import frag as fraglib
from ..verify import scale as scalelib
from ..verify import check as vcheck
from ..verify import fstests as vfstests

DOCUMENTS = ("CHECKS.md", "FSTESTS.md", "BENCHMARKS.md")
TEMPLATE_DIR = "docs"
DATED = re.compile(r"^(?P<name>.*?)(?:-(?P<date>\d{8}-\d{6}))?\.json$")


def _read(root, rel):
    path = os.path.join(root, rel)
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as e:
        raise ForkError("%s: cannot read it (%s): restore it from git" % (rel, e.strerror))


def _json(root, rel):
    try:
        return json.loads(_read(root, rel))
    except ValueError as e:
        raise ForkError("%s: not JSON (%s): restore it from git" % (rel, e))


def newest_tables(root, ver, head):
    """[(flavour-test, path relative to `root`)] under
    records/checks/<ver>/<head>/: of each flavour and test the newest table
    (a dated name's date; an undated name is the older)."""
    top = "records/checks/%s/%s" % (ver, head)
    if not os.path.isdir(os.path.join(root, top)):
        raise ForkError("%s: no such record directory: name a directory of records/checks/"
                        % top)
    best = {}
    for f in sorted(os.listdir(os.path.join(root, top))):
        m = DATED.match(f)
        if not m:
            continue
        key = (m.group("date") or "", f)
        if m.group("name") not in best or key > best[m.group("name")][0]:
            best[m.group("name")] = (key, top + "/" + f)
    return [(name, best[name][1]) for name in sorted(best)]


def _verdicts(all_cells, ver, rows, flavour, test):
    """One line: every recorded run of each of the table's commits judged
    together (checkrecords.cells())."""
    out = {}
    for r in rows:
        c = all_cells.get((ver, r["commit"], flavour, test))
        if c:
            out.setdefault(c["verdict"], []).append(r["commit"][:12])
    parts = []
    for verdict in sorted(out):
        commits = out[verdict]
        parts.append("%s: %d (%s)" % (verdict, len(commits), ", ".join(commits))
                     if verdict != "pass" else "pass: %d" % len(commits))
    return "Every recorded run of these commits, judged together: " + "; ".join(parts) + "."


def _explained(all_cells, ver, rows, flavour, test):
    """The failed runs of the table's commits that are explained
    (checkrecords.EXPLAINED), left out of the verdicts: a short note, each
    explanation once with the runs it covers here, or nothing."""
    by = {}
    for r in rows:
        c = all_cells.get((ver, r["commit"], flavour, test)) or {}
        for _, run, e in c.get("explained", []):
            by.setdefault(e["n"], (e, []))[1].append(
                "%s (`%s`)" % (r["commit"][:12], checkrecords.run_names(run)[0]))
    if not by:
        return []
    out = ["", "Failed runs explained, left out of the verdicts above ([%s](%s)):"
           % (checkrecords.EXPLAINED, checkrecords.EXPLAINED), ""]
    for n in sorted(by):
        e, runs = by[n]
        why = e["why"] if e["why"].endswith((".", "!", "?")) else e["why"] + "."
        out.append("* %s: %s See [%s](%s)." % (", ".join(runs), why, e["see"], e["see"]))
    return out


def d_check(root, ctx, rel, series, heading="####"):
    parts = rel.split("/")
    if len(parts) < 4 or parts[:2] != ["records", "checks"]:
        raise ForkError("%s: not a table under records/checks/<ver>/" % rel)
    ver = parts[2]
    rows = checkrecords.read_rows(root, rel)
    flavour, test = rows[0].get("flavour", "-"), rows[0].get("test", "-")
    out = ["%s %s: %s `%s`" % (heading, ver, flavour, test), "",
           "[%s](%s)" % (rel, rel), ""]
    out += vcheck.markdown(rows, types.SimpleNamespace(rel=series), flavour, test).splitlines()
    out += ["", _verdicts(ctx.cells(), ver, rows, flavour, test)]
    out += _explained(ctx.cells(), ver, rows, flavour, test)
    return out


def d_checks(root, ctx, ver, head, series):
    """Every newest table of one head."""
    out = []
    for _, rel in newest_tables(root, ver, head):
        out += d_check(root, ctx, rel, series) + [""]
    return out[:-1]


def d_base_reports(root, ctx, ver):
    """The reports that runs of `ver`'s base snapshot showed, with the first
    record that shows each and how many of the base's runs show it."""
    cells = ctx.cells()
    seen = {}
    for key, c in sorted(cells.items()):
        if not c["base"] or key[0] != ver:
            continue
        runs = len(c["runs"])
        for f, row in c["rows"]:
            for rep in row.get("reports", []):
                k = (key[2], key[3], rep.get("signature", ""))
                e = seen.setdefault(k, {"file": f, "files": set(), "runs": runs})
                e["files"].add(f)
    rows = [["%s `%s`" % (fl, t), md_cell(sig), "%d of %d" % (len(e["files"]), e["runs"]),
             "[%s](%s)" % (os.path.basename(e["file"]), e["file"])]
            for (fl, t, sig), e in sorted(seen.items())]
    if not rows:
        return ["No run of the %s base snapshot on record showed a kernel report." % ver]
    return md_table(["flavour and test", "report (signature)",
                     "tables showing it, of the base's runs", "first record"], rows)


# -- @@ check-summary: the whole check matrix of a head, in a few lines ----------

SUMMARY_WIDTH = 72
SUMMARY_REPORTS = 3      # the base's reports named, the most frequent first
SUMMARY_NAMED = 3        # the commits a refusal names


def head_tables(root, ver, head):
    """{(flavour, test): [(path relative to `root`, rows)]} of every table
    under records/checks/<ver>/<head>/ (each run of a flavour and test, not
    only the newest), oldest first."""
    top = "records/checks/%s/%s" % (ver, head)
    if not os.path.isdir(os.path.join(root, top)):
        raise ForkError("%s: no such record directory: name a directory of records/checks/"
                        % top)
    out = {}
    names = [f for f in os.listdir(os.path.join(root, top)) if DATED.match(f)]
    for f in sorted(names, key=lambda f: (DATED.match(f).group("name"),
                                          DATED.match(f).group("date") or "")):
        rel = top + "/" + f
        rows = checkrecords.read_rows(root, rel)
        for ft in sorted({(r.get("flavour"), r.get("test")) for r in rows},
                         key=lambda x: tuple(map(str, x))):
            out.setdefault(ft, []).append(
                (rel, [r for r in rows if (r.get("flavour"), r.get("test")) == ft]))
    return out


def summary_rows(root, ver, head):
    """[(path, row)] of every row of every table of `head`
    (head_tables()): what `@@ check-summary VER HEAD` speaks of."""
    return [(rel, r) for tables in head_tables(root, ver, head).values()
            for rel, rows in tables for r in rows]


def _tree(row):
    """What a row checked: its tree (a row without one: its commit alone)."""
    return row.get("tree") or "commit " + row["commit"]


def _short(names):
    """At most SUMMARY_NAMED names, and how many more."""
    return ", ".join(names[:SUMMARY_NAMED]) + (", and %d more" % (len(names) - SUMMARY_NAMED)
                                               if len(names) > SUMMARY_NAMED else "")


def summary_series(root, ver, head, tables=None):
    """The series `head`'s tables checked, its patches as trees (a commit
    reworded, same tree, is the same patch): (base, [patch]), the base and
    each patch (tree, [the commits of the head's rows with that tree]).
    The order is that of one table (a file of records/checks/VER/HEAD/)
    that holds the base (checkrecords.is_base()) and every tree any table
    of the head names; without one, or with several bases, a ForkError
    that says what to do: no patch number is guessed.  `tables`:
    head_tables()'s, when read already."""
    top = "records/checks/%s/%s" % (ver, head)
    tables = head_tables(root, ver, head) if tables is None else tables
    if not tables:
        raise ForkError("%s: holds no check table: name a head with tables "
                        "(`tools/fork check --json`)" % top)
    files, commits, bases = {}, {}, {}
    for ts in tables.values():
        for rel, rows in ts:
            files.setdefault(rel, []).extend(rows)
            for r in rows:
                have = commits.setdefault(_tree(r), [])
                if r["commit"] not in have:
                    have.append(r["commit"])
                if checkrecords.is_base(r):
                    bases.setdefault(_tree(r), r["commit"])
    if len(bases) > 1:
        raise ForkError("%s: its tables hold the rows of %d base snapshots (%s): a head's "
                        "tables check one series on one base: move the tables of the other "
                        "series to their own head" % (top, len(bases), _short(
                            [c[:12] for c in bases.values()])))
    base = next(iter(bases), None)
    fullest = None
    for rel in sorted(files):
        have = {_tree(r) for r in files[rel]}
        lacks = [t for t in commits if t not in have]
        if base is not None and not lacks:
            break
        if fullest is None or len(lacks) < len(fullest[1]):
            fullest = (rel, lacks)
    else:
        rel, lacks = fullest
        names = ([] if base is not None else ["the base"]) + [
            "the base" if t == base else commits[t][0][:12] for t in lacks]
        raise ForkError("%s: no table holds the base and every commit its tables name, which "
                        "the patch numbers are taken from (the fullest, %s, lacks %s): check "
                        "the whole series, base first, under one config and test into this "
                        "head (`tools/fork check --series <series> --config <flavour> --test "
                        "<test> --json %s/<flavour>-<test>.json`), or name the head whose "
                        "tables are complete" % (top, os.path.basename(rel), _short(names), top))
    order = []
    for r in files[rel]:
        t = _tree(r)
        if t not in [p for p, _ in order]:
            order.append((t, [r["commit"]] + [c for c in commits[t] if c != r["commit"]]))
    return order[[t for t, _ in order].index(base)], [p for p in order if p[0] != base]


def _cells_by_tree(all_cells):
    """{(version, tree, flavour, test): [cell keys of the commits of that
    tree]} of checkrecords.cells()'s `all_cells`."""
    out = {}
    for key, c in sorted(all_cells.items()):
        for t in sorted({_tree(r) for _, r in c["rows"] if r["commit"] == key[1]}):
            out.setdefault((key[0], t, key[2], key[3]), []).append(key)
    return out


def _cell_of(all_cells, by_tree, ver, patch, flavour, test):
    """The cell of `patch` (tree, commits) under `flavour` and `test`: of
    its commits in the head's tables, the first whose verdict is no pass,
    else the first (their runs are the same: those of the tree); of
    another commit of the tree on record when none of them has one; None
    when the tree was never run so."""
    tree, commits = patch
    cs = [all_cells[k] for k in ((ver, c, flavour, test) for c in commits) if k in all_cells]
    cs = cs or [all_cells[k] for k in by_tree.get((ver, tree, flavour, test), [])]
    if not cs:
        return None
    return next((c for c in cs if not c["verdict"].startswith("pass")), cs[0])


def _judged(c):
    """[(run, row, files)] of the runs the cell's verdict is on: neither
    explained nor an error of the runner; `files` hold the run."""
    left = {id(run) for _, run, _ in c["explained"]} | {id(run) for _, run in c["errors"]}
    return [(run, row, files) for (_, run), (_, row), files
            in zip(c["runs"], c["rows"], c["files"]) if id(run) not in left]


def _away(judged, top):
    """How many of the runs no table of the head (`top`) holds."""
    return sum(1 for _, _, files in judged if not any(os.path.dirname(f) == top for f in files))


def _how(judged):
    """The runs under another accelerator than TCG and through another
    runner than the kit's QEMU, counted: "2 under KVM, 1 through lava",
    or ""."""
    counts = {}
    for run, row, _ in judged:
        accel = run.get("accel") or row.get("accel") or "tcg"
        runner = run.get("runner") or row.get("runner") or "qemu"
        for how in ([(0, "under " + accel.upper())] if accel != "tcg" else []) + \
                ([(1, "through " + runner)] if runner != "qemu" else []):
            counts[how] = counts.get(how, 0) + 1
    return ", ".join("%d %s" % (n, how) for (_, how), n in sorted(counts.items()))


def _numbers(ns):
    """"patch 4", "patches 1-3, 5"."""
    spans = []
    for n in ns:
        if spans and spans[-1][1] == n - 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = ", ".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in spans)
    return ("patch " if len(ns) == 1 else "patches ") + text


def _runs(n, what="run"):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def _notes(verdict):
    """The notes of a verdict of checkrecords.cells() ("pass (1 failed run
    explained)"), or ""."""
    m = re.search(r" \((.*)\)$", verdict)
    return m.group(1) if m else ""


def _what_failed(all_cells, c):
    """What failed the cell: its commit's checkpatch, then the failing
    runs the verdict is on, the first distinct failure of them
    (checkrecords.failures()) and whether the base shows it, and how many
    others there are."""
    seen = []
    own = [row for _, row in c["rows"] if row["commit"] == c["key"][1]]
    if own and own[-1].get("cells", {}).get("checkpatch") == "FAIL":
        said = str((own[-1].get("details") or {}).get("checkpatch") or "").split("; ")
        seen.append("checkpatch: " + next((s for s in said if s.startswith(
            ("ERROR", "WARNING", "CHECK"))), said[0] or "FAIL"))
    for _, what, base in checkrecords.failures(all_cells, c["key"], judged_only=True):
        item = what + (" (the base shows it)" if base else "")
        if item not in seen:
            seen.append(item)
    if not seen:
        return "no failure on record"
    return seen[0] + (" and %d other failure%s" % (len(seen) - 1, "" if len(seen) == 2 else "s")
                      if len(seen) > 1 else "")


def _base_text(all_cells, by_tree, ver, base, flavour, test, top):
    """The base's verdict on all its runs (how many, where they are, what
    else is on record), and each report its runs show with how many runs
    show it."""
    c = _cell_of(all_cells, by_tree, ver, base, flavour, test)
    if c is None:
        return "The base was not run."
    verdict = c["verdict"]
    judged = _judged(c)
    if verdict.startswith(("pass", "FAIL", "flaky")):
        flaky = verdict.split(" (")[0][len("flaky: "):] if verdict.startswith("flaky") else ""
        text = ("passes in its %s" % _runs(len(judged)) if verdict.startswith("pass") else
                "fails in its %s" % _runs(len(judged)) if not flaky else "is flaky")
        notes = [flaky] if flaky else []
        away = _away(judged, top)
        if away:
            notes.append("all in other heads' tables" if away == len(judged) else
                         "%d in other heads' tables" % away)
        how = _how(judged)
        notes += [how] if how else []
        if c["explained"]:
            notes.append("%s explained" % _runs(len(c["explained"]), "failed run"))
        if c["errors"]:
            notes.append("%s of the runner" % _runs(len(c["errors"]), "error"))
        if notes:
            text += " (%s)" % "; ".join(notes)
    else:
        text = "has " + verdict.split(" (")[0] + (
            " (%s)" % _notes(verdict) if _notes(verdict) else "")
    # a row's reports are those of its latest run
    completed = [(run, row) for run, row, _ in judged]
    known = [row for run, row in completed if "runs" not in row or run is row["runs"][-1]]
    counts = {}
    for row in known:
        for sig in {r.get("signature") or r.get("title", "?") for r in row.get("reports", [])}:
            counts[sig] = counts.get(sig, 0) + 1
    if counts:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ["%s in %d of %d" % (sig, n, len(known)) for sig, n in
                 ranked[:SUMMARY_REPORTS]]
        text += ", showing " + ", ".join(shown) + (" runs" if len(known) > 1 else " run")
        rest = [n for _, n in ranked[SUMMARY_REPORTS:]]
        if rest:
            text += ", and %d other report%s (%s)" % (
                len(rest), "" if len(rest) == 1 else "s",
                "in " + _runs(rest[0]) if len(rest) == 1 else
                "each in " + _runs(rest[0]) if min(rest) == max(rest) else
                "each in %d to %d runs" % (min(rest), max(rest)))
        if len(known) < len(completed):
            text += " whose reports are on record"
    return "The base %s." % text


def _summary_line(all_cells, by_tree, top, ver, base, series, flavour, test):
    """One flavour and test: each patch of `series` (a tree) judged on
    every run on record (checkrecords.cells()), the base apart.  A pass
    gives the runs it rests on (how many this head's tables hold, how
    many other heads', any not under TCG or not booted by the kit's
    QEMU), then what else is on record: explained failed runs, errors of
    the runner."""
    passes, judged, explained, errors, bad, missing = [], [], [], [], [], []
    n_explained = n_errors = 0
    for n, patch in enumerate(series, 1):
        c = _cell_of(all_cells, by_tree, ver, patch, flavour, test)
        if c is None:
            missing.append(n)
            continue
        v = c["verdict"]
        if v.startswith("pass"):
            passes.append(n)
            judged += _judged(c)
            if c["explained"]:
                explained.append(n)
                n_explained += len(c["explained"])
            if c["errors"]:
                errors.append(n)
                n_errors += len(c["errors"])
            continue
        head, notes = v.split(" (")[0], _notes(v)
        if head == "FAIL":
            text = "fails on patch %d (%s" % (n, _what_failed(all_cells, c))
        elif head.startswith("flaky: "):
            text = "flaky on patch %d (%s: %s" % (n, head[len("flaky: "):],
                                                 _what_failed(all_cells, c))
        else:
            text = "no verdict on patch %d (%s" % (n, head.split(": ", 1)[-1])
        bad.append(text + ("; " + notes if notes else "") + ")")
    parts = []
    if passes:
        said = ("passes on all %d patches" % len(series) if len(passes) == len(series) > 1
                else "passes on " + _numbers(passes))
        away = _away(judged, top)
        extra = ["%s here" % _runs(len(judged)) if not away else
                 "%s in other heads' tables" % _runs(away) if away == len(judged) else
                 "%s here, %d in other heads' tables" % (_runs(len(judged) - away), away)]
        how = _how(judged)
        extra += [how] if how else []
        if explained:
            extra.append("%s of %s explained in %s" % (
                _runs(n_explained, "failed run"), _numbers(explained), checkrecords.EXPLAINED))
        if errors:
            extra.append("%s of the runner on %s" % (_runs(n_errors, "error"),
                                                     _numbers(errors)))
        parts.append("%s (%s)" % (said, "; ".join(extra)))
    parts += bad
    if missing:
        parts.append("not run on " + _numbers(missing))
    text = "%s, %s: %s. %s" % (flavour, test, "; ".join(parts) or "the base alone",
                               _base_text(all_cells, by_tree, ver, base, flavour, test, top))
    return textwrap.wrap(text, SUMMARY_WIDTH, initial_indent="- ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)


def d_check_summary(root, ctx, ver, head):
    """Every flavour and guest test with a table of `head`, one item each
    in plain text (a mail's 72 columns; a markdown list): how each patch
    of the series (summary_series(): a tree, counted once) fares on every
    run on record of its cell (checkrecords.cells(): a failure stays a
    failure unless explained, a flaky cell is no pass, nor is an error of
    the runner or an explained failure alone), which patches fail or were
    not run, and the base apart (its verdict and the reports its runs
    show)."""
    tables = head_tables(root, ver, head)
    base, series = summary_series(root, ver, head, tables)
    all_cells = ctx.cells()
    by_tree = _cells_by_tree(all_cells)
    top = "records/checks/%s/%s" % (ver, head)
    out = []
    for flavour, test in sorted(tables, key=lambda ft: tuple(map(str, ft))):
        out += _summary_line(all_cells, by_tree, top, ver, base, series, flavour, test)
    return out


def d_flavours(root, ctx):
    """Each config flavour: its fragments and the head comment of its own."""
    rows = []
    for name, frags in FLAVOURS.items():
        own = frags[-1]
        text = _read(root, "ci/kconfig/" + own)
        head = []
        for line in text.splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("#").strip())
        rows.append(["`%s`" % name, " + ".join("`%s`" % f for f in frags),
                     md_cell(" ".join(head))])
    return md_table(["flavour", "fragments (ci/kconfig/)", "what it is"], rows)


def d_guest_tests(root, ctx):
    """Each guest test: disk, block size, file system and the reports it
    expects (its script is guest/guesttests.py's)."""
    rows = []
    for name in guesttests.TESTS:
        t = guesttests.spec(name)
        rows.append(["`%s`" % name, t.size, str(t.blocksize), t.fs,
                     ", ".join("`%s`" % e for e in t.expect) or "-"])
    return md_table(["test", "disk", "block size", "file system", "expected reports"], rows)


def fstests_markdown(root, ver, name, directive="fstests"):
    """records/fstests/<ver>/<name>.md (`fstests --markdown`) read: (its
    path, its lines, the index of its per-test table, its header lines
    before the tables, [(row line, cells)] of that table)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ForkError("@@ %s %s %s: name a markdown file of records/fstests/%s/ "
                        "without .md (e.g. quick)" % (directive, ver, name, ver))
    rel = "records/fstests/%s/%s.md" % (ver, name)
    lines = _read(root, rel).rstrip("\n").splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ForkError("%s: not `fstests --markdown` output: restore it from git" % rel)
    tables = [i for i, l in enumerate(lines) if l.startswith("| test |")]
    if not tables:
        raise ForkError("%s: no per-test table: restore it from git" % rel)
    head = lines[1:tables[0]]
    while head and not head[0].strip():
        head = head[1:]
    rows = []
    for l in lines[tables[0] + 2:]:
        if not l.startswith("|"):
            break
        # | test | base | series | base time | series time | verdict | why |
        cells = [c.strip() for c in l.split("|")]
        if len(cells) < 8:
            raise ForkError("%s: %r is not a row of the per-test table: restore it from git"
                            % (rel, l))
        rows.append((l, cells))
    return rel, lines, tables[0], head, rows


# the kernels of an fstests markdown: "- base: `distro/7.3` (d849d5d8141a), ..."
FSTESTS_SIDE_RE = re.compile(r"^- (base|series): `([^`]+)` \(([0-9a-f]{7,40})\)")


def fstests_sides(rel, head):
    """{"base"|"series": (rev, commit prefix)} of an fstests markdown's
    header lines."""
    sides = {}
    for l in head:
        m = FSTESTS_SIDE_RE.match(l)
        if m:
            sides[m.group(1)] = (m.group(2), m.group(3))
    if set(sides) != {"base", "series"}:
        raise ForkError("%s: no `- base:` and `- series:` lines: restore it from git" % rel)
    return sides


def d_fstests_summary(root, ctx, ver, name):
    """An fstests run in a few lines of plain text, for a cover letter:
    which kernels, tests and mkfs, the totals of each kernel, the new
    failures, how many tests have yet to run, e2fsck and the command
    (records/fstests/<ver>/<name>.md; export checks that its kernels are
    the base and head it sends)."""
    rel, lines, table, head, rows = fstests_markdown(root, ver, name, "fstests-summary")
    sides = fstests_sides(rel, head)
    facts = {}
    for l in head:
        m = re.match(r"^- (selection|mkfs|e2fsck -fn after each boot|kernel reports in the "
                     r"consoles|reproduce): (.*)$", l)
        if m:
            facts[m.group(1)] = m.group(2)
    totals = {}
    for l in lines[:table]:
        cells = [c.strip() for c in l.split("|")]
        if len(cells) >= 7 and cells[1] in ("base", "series"):
            totals[cells[1]] = cells[2:6]
    if set(totals) != {"base", "series"}:
        raise ForkError("%s: no totals table of base and series: restore it from git" % rel)
    verdicts = {}
    for _, c in rows:
        v = c[6].strip("*")
        verdicts[v] = verdicts.get(v, 0) + 1
    new = [c[1] for _, c in rows if "new failure" in c[6]]
    # a failure on the kernel that has run the test, the other yet to
    failed_pending = ["%s (%s)" % (c[1], "base" if c[2] == "fail" else "series")
                      for _, c in rows if c[6] == "pending" and "fail" in c[2:4]]
    pending = verdicts.get("pending", 0)
    out = ["fstests %s, %s against %s (%s):" % (
        facts.get("selection", "(selection not named)"), sides["base"][0], sides["series"][0],
        sides["series"][1])]
    if "mkfs" in facts:
        out.append("- mkfs: %s" % facts["mkfs"])
    for side in ("base", "series"):
        p, f, n, t = totals[side]
        out.append("- %s: %s pass, %s fail, %s not run (%s of tests)" % (side, p, f, n, t))
    out.append("- verdicts: %s" % ", ".join("%d %s" % (n, v) for v, n in sorted(
        verdicts.items(), key=lambda vn: (-vn[1], vn[0]))))
    # none of the tests that have run on both kernels; while tests are
    # pending that is not yet the run's result
    out.append("- new failures on the series: %s" % (
        ", ".join(new) if new else "none so far" if pending else "none"))
    if pending:
        out.append("- %d of %d tests have yet to run on one kernel or both: the run is not "
                   "finished" % (pending, len(rows)))
    if failed_pending:
        out.append("- failed on the kernel that ran them, yet to run on the other: %s"
                   % ", ".join(failed_pending))
    for key in ("e2fsck -fn after each boot", "kernel reports in the consoles"):
        if key in facts:
            # a boot's e2fsck output is named by its place in the work
            # directory of the machine that ran it: nothing a reader of the
            # letter can open, so the letter leaves it out
            out.append("- %s: %s" % (key, re.sub(r" \((?:\S*/)?fstests/kernels/[^()\s]*\)",
                                                 "", facts[key])))
    if "reproduce" in facts:
        out.append("- reproduce: %s" % facts["reproduce"])
    # a mail's 72 columns (a long path stays whole)
    return [w for line in out for w in textwrap.wrap(
        line, 72, subsequent_indent="  " if line.startswith("- ") else "",
        break_long_words=False, break_on_hyphens=False)]


def d_fstests(root, ctx, ver, name="quick"):
    """records/fstests/<ver>/<name>.md (`fstests --markdown`; default the
    quick group's): its header and totals, and the rows of every test that
    failed on either kernel or whose verdict is not `same`; the tests a
    run has yet to run (verdict `pending`) are counted, not listed."""
    rel, lines, table, head, rows = fstests_markdown(root, ver, name)
    tables = [table]
    # a run that stopped before its end (its time limit, a guest that ended
    # early) leaves tests pending: they are counted, not listed, unless one
    # failed on the kernel that ran it
    pending = [l for l, c in rows if c[6] == "pending"]
    bad = [l for l, c in rows if "fail" in c[2:4] or c[6] not in ("same", "pending")]
    out = head
    if pending:
        out = out + ["%d of %d tests have yet to run on one kernel or both: the run stopped "
                     "before its end, and its reproduce command continues it." %
                     (len(pending), len(rows)), ""]
    out = out + ["Tests that failed on either kernel, or whose verdict is not `same`%s "
                 "(every test, and why each one that did not run did not: [%s](%s)):"
                 % (" or pending" if pending else "", rel, rel), ""]
    if bad:
        out += lines[tables[0]:tables[0] + 2] + bad
    else:
        out.append("none")
    reports = [i for i, l in enumerate(lines) if l.startswith("Kernel reports in the console")]
    if reports:
        out += [""] + lines[reports[0]:]
    return out


def d_exclude(root, ctx):
    """ci/fstests/ext2.exclude: each excluded test and its reason."""
    ex = vfstests.parse_exclude(os.path.join(root, "ci", "fstests", "ext2.exclude"))
    if not ex:
        return ["`ci/fstests/ext2.exclude` excludes no test."]
    return md_table(["test", "reason"], [["`%s`" % t, md_cell(r)] for t, r in sorted(ex.items())])


def _bench_doc(root, run):
    return _json(root, "records/bench/%s.json" % run)


def d_bench(root, ctx, run):
    """One bench run: the kit's markdown of its record (benchlib.markdown(),
    or steps_markdown() for an --each run, as bench writes it:
    what ran, the command that repeats it, the targets, the tables), its
    headings one level down."""
    doc = _bench_doc(root, run)
    # an --each run (its steps: each commit against its parent) or an A/B run
    text = benchlib.steps_markdown(doc) if doc.get("steps") is not None else \
        benchlib.markdown(doc)
    md = text.rstrip("\n").splitlines()
    md = ["#" + l if l.startswith("#") else l for l in md]
    return md[:1] + ["", "Record: [records/bench/%s.json](records/bench/%s.json)" % (run, run)] \
        + md[1:]


def d_bench_locks(root, ctx, *runs):
    """The ext2 lock acquisitions (contentions) per operation of several
    lockstat runs side by side (benchlib.lock_table_across())."""
    if not runs:
        raise ForkError("@@ bench-locks needs the ids of one or more bench runs")
    return benchlib.lock_table_across([_bench_doc(root, r) for r in runs])


def d_bench_steps(root, ctx, *args):
    """Every commit of several --each runs in one table, its cost per
    workload against its parent (benchlib.steps_summary()); an argument
    `only=W,...` keeps those workloads."""
    only = [a for a in args if a.startswith("only=")]
    runs = [a for a in args if not a.startswith("only=")]
    if not runs:
        raise ForkError("@@ bench-steps needs the ids of one or more bench --each runs")
    return benchlib.steps_summary([_bench_doc(root, r) for r in runs],
                                  only=only[-1][5:].split(",") if only else None)


def d_bench_facts(root, ctx, run, *names):
    """Named figures of a run (benchlib.record_facts()), as a table."""
    facts = benchlib.record_facts(_bench_doc(root, run))
    rows = []
    for n in names:
        n = n.replace("_", " ")
        if n not in facts:
            raise ForkError("records/bench/%s.json has no figure %r" % (run, n))
        v = facts[n]
        rows.append(["`%s`" % n, ("%.4g" % v) if isinstance(v, float) else str(v)])
    return md_table(["figure", "value"], rows)


def d_frag(root, ctx, run):
    """One fragmentation run: verify.frag.markdown() of records/frag/RUN.json."""
    md = ["#" + l if l.startswith("#") else l
          for l in fraglib.markdown(_json(root, "records/frag/%s.json" % run))]
    return md[:1] + ["", "Record: [records/frag/%s.json](records/frag/%s.json)" % (run, run)] \
        + md[1:]


def d_frag_table(root, ctx, run):
    """Only the table of a fragmentation run (verify.frag.table())."""
    return fraglib.table(_json(root, "records/frag/%s.json" % run))


def d_scale(root, ctx, run):
    """One run of `scale` (1 guest slot against N): verify.scale.markdown()
    of records/scale/RUN.json, and a link to it."""
    rec = _json(root, "records/scale/%s.json" % run)
    if not rec.get("finished"):
        raise ForkError("records/scale/%s.json is a run that did not finish: run `tools/fork "
                        "scale` again, to the end" % run)
    return scalelib.markdown(rec) \
        + ["", "Record: [records/scale/%s.json](records/scale/%s.json)" % (run, run)]


def d_include(root, ctx, rel):
    return _read(root, rel).rstrip("\n").splitlines()


DIRECTIVES = {
    "check": (d_check, "FILE SERIES"),
    "checks": (d_checks, "VER HEAD SERIES"),
    "base-reports": (d_base_reports, "VER"),
    "check-summary": (d_check_summary, "VER HEAD"),
    "flavours": (d_flavours, ""),
    "guest-tests": (d_guest_tests, ""),
    "fstests": (d_fstests, "VER [NAME]"),
    "fstests-summary": (d_fstests_summary, "VER NAME"),
    "exclude": (d_exclude, ""),
    "bench": (d_bench, "RUN"),
    "bench-facts": (d_bench_facts, "RUN FIGURE..."),
    "frag": (d_frag, "RUN"),
    "frag-table": (d_frag_table, "RUN"),
    "bench-locks": (d_bench_locks, "RUN..."),
    "bench-steps": (d_bench_steps, "RUN... [only=WORKLOAD,...]"),
    "scale": (d_scale, "RUN"),
    "include": (d_include, "FILE"),
}


class _Context:
    """What several directives share, read once."""

    def __init__(self, root):
        self.root = root
        self._cells = None

    def cells(self):
        if self._cells is None:
            self._cells = checkrecords.cells(self.root)
        return self._cells


def render(root, template_rel, ctx=None):
    """The document that the template `template_rel` (relative to `root`)
    and the records under `root` give, as text."""
    out = render_lines(root, _read(root, template_rel).splitlines(), template_rel, ctx)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"


def render_lines(root, lines, name, ctx=None):
    """`lines` of a template (`name` in messages) with every `@@ DIRECTIVE`
    line replaced by what the records under `root` give and `%%` comment
    lines dropped."""
    ctx = ctx or _Context(root)
    out = []
    for n, line in enumerate(lines, 1):
        if line.startswith("%%"):
            continue
        if line.startswith("@@"):
            words = line[2:].split()
            if not words or words[0] not in DIRECTIVES:
                raise ForkError("%s:%d: unknown directive %r: use one of %s" % (
                    name, n, words[0] if words else "",
                    ", ".join(sorted(DIRECTIVES))))
            fn = DIRECTIVES[words[0]][0]
            try:
                inspect.signature(fn).bind(root, ctx, *words[1:])
            except TypeError:
                raise ForkError("%s:%d: %s takes %s" % (name, n, words[0],
                                                         DIRECTIVES[words[0]][1] or "no argument"))
            out += fn(root, ctx, *words[1:])
            continue
        out.append(line)
    return out


def measured_changes(root, directive, args):
    """What the bench or frag runs a directive line names measured, for a
    caller that must check it is what it publishes: for each commit of an
    --each run {"step": commit, "parent": its parent, "patch_id", "tree",
    "parent_tree"} (each None when the record lacks it); for each kernel of
    an A/B bench run {"tree": commit, "id": tree id or None, "role": "A" or
    "B"}; for each revision of a frag run the same with role "frag".  A
    step also names the flavour and the image sha256 of both its kernels
    ("flavour", "image", "parent_image"; None where not recorded)."""
    out = []
    if directive in ("bench", "bench-facts", "bench-locks", "bench-steps"):
        for run in (args[:1] if directive in ("bench", "bench-facts") else
                    [a for a in args if not a.startswith("only=")]):
            doc = _bench_doc(root, run)
            kernels = doc["kernels"]
            if doc.get("steps") is not None:
                for st in doc["steps"]:
                    if not st["whole"]:
                        ka, kb = kernels[st["a"]], kernels[st["b"]]
                        out.append({"step": st["commit"], "subject": kb.get("subject"),
                                    "parent": ka["commit"],
                                    "patch_id": kb.get("patch_id"), "tree": kb.get("tree"),
                                    "parent_tree": ka.get("tree"),
                                    "flavour": kb.get("flavour"),
                                    "image": kb.get("image_sha256"),
                                    "parent_image": ka.get("image_sha256")})
            else:
                out += [{"tree": k["commit"], "id": k.get("tree"), "role": label.split("-")[0]}
                        for label, k in sorted(kernels.items())
                        if k.get("commit") and label.split("-")[0] in ("A", "B")]
    elif directive in ("frag", "frag-table"):
        out += [{"tree": r["commit"], "id": r.get("tree"), "role": "frag"} for r in
                _json(root, "records/frag/%s.json" % args[0])["revisions"]]
    return out


def generate(root, names=DOCUMENTS):
    """{document name: text} of each document."""
    ctx = _Context(root)
    return {name: render(root, "%s/%s.in" % (TEMPLATE_DIR, name), ctx) for name in names}


def differing(root, docs):
    """The names of the documents whose file under `root` is not `docs`'s text."""
    out = []
    for name, text in docs.items():
        try:
            with open(os.path.join(root, name)) as fh:
                same = fh.read() == text
        except OSError:
            same = False
        if not same:
            out.append(name)
    return out


def write(root, docs):
    for name, text in docs.items():
        tmp = os.path.join(root, name + ".tmp")
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, os.path.join(root, name))
