"""check: checkpatch, build, boot and a guest ext2 test, commit by commit.

For each commit of RANGE (default: the series' base commit, then every
commit of ``distro/<ver>..series/<ver>``): ``checkpatch.pl --strict`` on the
commit, ``build`` (with the W=1/sparse patchcheck), ``boot`` in QEMU, the
guest test (default ``smoke``: mkfs.ext2 on the host, mount in the guest,
create/write/read back/truncate/unlink across directories from 2 tasks,
statfs, umount) and on the host ``e2fsck -fn``, which must be clean, with the
guest's last statfs equal to the free counts e2fsck verified.

Prints a table and exits non-zero if any cell failed.  Passing results are
cached by the commit's tree id (plus config flavour and a hash of the guest
test and ci/), so a rebase that changes nothing re-checks nothing;
``--force`` redoes them.
"""

import json
import os
import time

from . import guesttests
from .cmd_boot import failure_message, qemu_binary, run_guest
from .cmd_build import FLAVOURS, build
from .common import (ForkError, Progress, ensure_dir, git, ktree, new_log, require_ktree,
                     rev_parse, run, which, wpath)
from .series import PRIMARY, Series

HELP = "checkpatch + build + boot + guest ext2 test + e2fsck for every commit"

CELLS = ["checkpatch", "build", "boot", "test", "e2fsck"]


def add_arguments(p):
    p.add_argument("range", nargs="?",
                   help="commit range A..B or one revision (default: the whole series on its base)")
    p.add_argument("--series", default=PRIMARY, help="series directory (default: patches)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="config flavour (default: base)")
    p.add_argument("--test", default="smoke", help="guest test: %s" % ", ".join(guesttests.TESTS))
    p.add_argument("--force", action="store_true", help="ignore cached results")
    p.add_argument("--timeout", type=int, default=900, help="guest timeout in seconds")
    p.add_argument("--json", help="also write the results as JSON to this file")


def commits_of(rng, series):
    if rng is None:
        base = rev_parse(series.distro_branch)
        head = rev_parse(series.head_branch)
        return [base] + git(["rev-list", "--reverse", "%s..%s" % (base, head)]).split()
    if ".." in rng:
        a, b = rng.split("..", 1)
        rev_parse(a)
        rev_parse(b or "HEAD")
        return git(["rev-list", "--reverse", rng]).split()
    return [rev_parse(rng)]


def cache_path(tree, flavour, test):
    return os.path.join(ensure_dir(wpath("cache", "check")),
                        "%s-%s-%s-%s.json" % (tree, flavour, test, guesttests.test_key(test)))


def cached(tree, flavour, test):
    path = cache_path(tree, flavour, test)
    if os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    return None


# The imported snapshot is one commit without upstream history, so checkpatch
# cannot look up the upstream commits a log cites ("commit 83f99de1b7c0
# (...)") and would warn UNKNOWN_COMMIT_ID for every one; the citation format
# itself is still checked (GIT_COMMIT_ID).
CHECKPATCH_ARGS = ["--strict", "--ignore", "UNKNOWN_COMMIT_ID"]


def checkpatch(commit, src, log):
    """Run checkpatch --strict on one commit; return (cell, detail)."""
    parents = git(["rev-list", "--parents", "-n", "1", commit]).split()[1:]
    if not parents:
        return "n/a", "base snapshot"
    patch = git(["format-patch", "-1", "--stdout", commit])
    script = os.path.join(src, "scripts", "checkpatch.pl")
    proc = run(["perl", script] + CHECKPATCH_ARGS + [
                "--no-tree" if not os.path.isdir(src) else "--root=%s" % src,
                "--color=never", "-"], input=patch + "\n", check=False)
    with open(log, "a") as fh:
        fh.write("$ checkpatch.pl --strict %s\n%s%s\n" % (commit, proc.stdout, proc.stderr))
    summary = [l for l in proc.stdout.splitlines() if l.startswith("total:")]
    if proc.returncode != 0:
        return "FAIL", summary[0] if summary else proc.stdout.strip()[-300:]
    return "pass", summary[0] if summary else ""


def check_commit(commit, flavour, test, timeout, prog):
    tree = git(["rev-parse", commit + "^{tree}"])
    subject = git(["log", "-1", "--format=%s", commit])
    log = new_log("check-%s" % commit[:12])
    row = {"commit": commit, "tree": tree, "subject": subject, "flavour": flavour,
           "test": test, "log": log, "cells": {c: "-" for c in CELLS}, "details": {}}
    t0 = time.monotonic()
    prog.say("%s %s" % (commit[:12], subject))
    try:
        res = build(commit, flavour, prog=prog)
        row["cells"]["build"] = "pass"
        row["details"]["build"] = res.log
    except ForkError as exc:
        row["cells"]["build"] = "FAIL"
        row["details"]["build"] = str(exc)
        res = None
    from .cmd_build import src_tree
    if res is not None:
        cell, detail = checkpatch(commit, src_tree(), log)
    else:
        cell, detail = "-", "not built"
    row["cells"]["checkpatch"] = cell
    row["details"]["checkpatch"] = detail
    if res is not None:
        size, bs, script = guesttests.TESTS[test]
        img = guesttests.image_path("check")
        guesttests.make_image(img, size, bs, log=log)
        boot = run_guest(res.image, script, [img], timeout=timeout, prog=prog, log=log + ".console",
                         label="check")
        started = any("FORK-GUEST-START" in l for l in open(boot.log, errors="replace"))
        row["cells"]["boot"] = "pass" if started and not boot.problems and not boot.error \
            else "FAIL"
        row["cells"]["test"] = "pass" if boot.ok else "FAIL"
        row["details"]["boot"] = boot.log
        if not boot.ok:
            row["details"]["test"] = failure_message(boot)
        row["results"] = guesttests.results(boot.output)
        if started and boot.error is None:
            err = guesttests.fsck(img, row["results"], log=log)
            row["cells"]["e2fsck"] = "FAIL" if err else "pass"
            if err:
                row["details"]["e2fsck"] = err
    row["seconds"] = round(time.monotonic() - t0, 1)
    row["passed"] = all(v in ("pass", "n/a") for v in row["cells"].values())
    if row["passed"]:
        with open(cache_path(tree, flavour, test), "w") as fh:
            json.dump(row, fh, indent=1)
    return row


def table(rows):
    head = "%-12s  %-44s  %-10s  %-5s  %-4s  %-5s  %-6s  %6s" % (
        "commit", "subject", "checkpatch", "build", "boot", "test", "e2fsck", "time")
    lines = [head, "-" * len(head)]
    for r in rows:
        c = r["cells"]
        lines.append("%-12s  %-44s  %-10s  %-5s  %-4s  %-5s  %-6s  %5.0fs%s" % (
            r["commit"][:12], r["subject"][:44], c["checkpatch"], c["build"], c["boot"],
            c["test"], c["e2fsck"], r["seconds"], " (cached)" if r.get("cached") else ""))
    return "\n".join(lines)


def run_check(rng=None, series=None, flavour="base", test="smoke", force=False, timeout=900,
              out=print):
    prog = Progress("check")
    guesttests.check_test_name(test)
    require_ktree()
    series = series or Series()
    rows = []
    preflight_done = False
    for commit in commits_of(rng, series):
        tree = git(["rev-parse", commit + "^{tree}"])
        hit = None if force else cached(tree, flavour, test)
        if hit and hit["commit"] != commit:
            # Same tree, other commit (e.g. a reworded log): the build and
            # guest results stand, but checkpatch also reads the log.
            cell, detail = checkpatch(commit, ktree(), new_log("check-%s" % commit[:12]))
            if cell == "FAIL":
                hit = None
            else:
                hit["cells"]["checkpatch"] = cell
                hit["details"]["checkpatch"] = detail
        if hit:
            hit["cached"] = True
            hit["commit"] = commit
            hit["subject"] = git(["log", "-1", "--format=%s", commit])
            prog.say("%s cached pass (tree %s)" % (commit[:12], tree[:12]))
            rows.append(hit)
            continue
        if not preflight_done:
            # Before the first (long) build: the host programs the boot and
            # the guest test need, each named with its Debian package.
            qemu_binary()
            which("mke2fs", "e2fsprogs")
            which("e2fsck", "e2fsprogs")
            preflight_done = True
        rows.append(check_commit(commit, flavour, test, timeout, prog))
    out(table(rows))
    for r in rows:
        for cell, detail in sorted(r.get("details", {}).items()):
            if r["cells"].get(cell) == "FAIL":
                out("%s %s: %s" % (r["commit"][:12], cell, detail))
    return rows


def main(args):
    rows = run_check(args.range, Series(args.series), args.config, args.test, args.force,
                     args.timeout)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(r["passed"] for r in rows) else 1
