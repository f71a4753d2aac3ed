"""The check of a range of commits (``tools/fork check`` describes it for
the user): each commit's cached row or a new run (kernel.check_commit()),
the base's reports as evidence for the sanitizer flavours, and the table
as text and as markdown."""

import json
import os
import re
import shutil
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ..build import kbuild
from ..build.kconfig import SANITIZERS
from ..build.make import check_deps
from ..core import interrupt
from ..core.errors import ForkError
from ..core.locks import Lock, guest_slot_count
from ..core.paths import ensure_dir, wpath
from ..core.progress import Progress
from ..core.proc import sha256_file, which
from ..core.tables import md_cell, md_table
from ..guest import guesttests, reports
from ..guest.qemu import qemu_binary
from ..repo import funcdiff
from ..repo.git import git, git_ok, require_ktree, rev_parse
from ..repo.series import Series
from . import carry, kernel

CELLS = kernel.CELLS


def commits_of(rng, series):
    if rng is None:
        base = rev_parse(series.distro_branch)
        head = rev_parse(series.head_branch)
        return [base] + git(["rev-list", "--reverse", "%s..%s" % (base, head)]).split()
    if ".." in rng:
        a, b = rng.split("..", 1)
        rev_parse(a)
        rev_parse(b or "HEAD")
        commits = git(["rev-list", "--reverse", rng]).split()
        if not commits:
            # nothing checked is no pass (and writes no empty table)
            raise ForkError("%s names no commit: nothing was checked (A..B is the commits "
                            "after A up to B: give the older commit first)" % rng)
        return commits
    return [rev_parse(rng)]


def table(rows):
    head = "%-12s  %-44s  %-10s  %-5s  %-5s  %-5s  %-6s  %-6s  %6s" % (
        "commit", "subject", "checkpatch", "build", "boot", "test", "e2fsck", "counts", "time")
    lines = [head, "-" * len(head)]
    for r in rows:
        c = r["cells"]
        lines.append("%-12s  %-44s  %-10s  %-5s  %-5s  %-5s  %-6s  %-6s  %5.0fs%s" % (
            r["commit"][:12], r["subject"][:44], c["checkpatch"], c["build"], c["boot"],
            c["test"], c["e2fsck"], c.get("counts", "-"), r["seconds"],
            " (cached)" if r.get("cached") else "") + carry.table_mark(r)
            + ("  " + r["flaky"] if r.get("flaky") else ""))
    return "\n".join(lines)


def flaky_note(r):
    """One line on a flaky row: which runs failed on what (an error of the
    runner, which judged nothing, called so), and whether the row passes
    (only when the base shows every report that failed them)."""
    failed = "; ".join("run %d: %s" % (n, "error of the runner (no verdict): " + run["error"]
                                       if run.get("error") else run.get("failure") or "failed")
                       for n, run in enumerate(kernel.runs_of(r), 1) if not run["passed"])
    verdict = "each failed run failed on reports the base shows too (%s): it passes" \
        % r["flaky_excused"] if r.get("flaky_excused") else "it does not pass"
    return "%s %s (%s): %s" % (r["commit"][:12], r["flaky"], failed, verdict)


def run_check(rng=None, series=None, flavour="base", test="smoke", force=False, timeout=900,
              out=print, runner="qemu"):
    prog = Progress("check")
    guesttests.check_test_name(test)
    require_ktree()
    series = series or Series()
    cells = SideBySide(guest_slot_count())
    preflight_done = False
    base = rev_parse(series.distro_branch)
    base_known = None
    trees = set()
    try:
        for commit in commits_of(rng, series):
            known, on_base = None, False
            if flavour in SANITIZERS:
                if commit == base:
                    known = "base"
                elif not git_ok(["merge-base", "--is-ancestor", base, commit]):
                    out("note: %s is not on %s's base %s: reports outside ext2 fail (name the "
                        "series with --series)" % (commit[:12], series.rel, base[:12]))
                    known = {}
                else:
                    if base_known is None:     # once: the base row comes first, booted
                        base_known = base_reports(base, cells.rows(), flavour, test, out,
                                                  kernel.choose_accel(prog))
                    known, on_base = base_known, True
            tree = git(["rev-parse", commit + "^{tree}"])
            if cells.pool is not None and tree in trees and not force:
                # an earlier cell boots this very tree: its row, once booted
                cells.later(lambda commit=commit, known=known: kernel.cached_row(
                    commit, flavour, test, prog, runner) or kernel.check_commit(
                    commit, flavour, test, timeout, prog, known=known, runner=runner))
                continue
            trees.add(tree)
            hit = None if force else kernel.cached_row(commit, flavour, test, prog, runner)
            if hit:
                cells.add_row(hit)
                continue
            # what the commit changed in ext2 relative to the base (for a row
            # that runs: a cached pass needs no judging)
            changed = funcdiff.changed_functions(base, commit) if on_base else funcdiff.ALL
            if not preflight_done:
                host_tools()
                preflight_done = True
            # the base's evidence is named by the test's inputs (ci/guest and
            # its TESTS entry) before the run: a run during which they changed
            # adds nothing
            test_key = guesttests.test_key(test) if known == "base" else None
            if cells.pool is None:          # one slot: cell after cell
                cells.add_row(keep_evidence(kernel.check_commit(
                    commit, flavour, test, timeout, prog, known=known, changed=changed,
                    runner=runner),
                    test, test_key))
                continue
            cell = kernel.prepare_commit(commit, flavour, test, prog, known=known,
                                         changed=changed, runner=runner)
            cells.add(lambda cell=cell, test_key=test_key: keep_evidence(
                kernel.finish_commit(cell, timeout, prog), test, test_key))
        rows = cells.rows()
    finally:
        cells.close()
    out(table(rows))
    for r in rows:
        for rep in r.get("reports", []):
            if rep["verdict"] == "known":
                out("%s known report: %s (%s)" % (r["commit"][:12], rep["title"],
                                                  rep["evidence"]))
        for cell, detail in sorted(r.get("details", {}).items()):
            if r["cells"].get(cell) in ("FAIL", kernel.ERROR):
                out("%s %s: %s" % (r["commit"][:12], cell, detail))
        if r.get("flaky"):
            out(flaky_note(r))
    return rows


def keep_evidence(row, test, test_key):
    """`row`, a base row's console kept as the base's evidence
    (add_evidence()) when the inputs of `test` are still `test_key`."""
    if test_key and guesttests.test_key(test) == test_key:
        add_evidence(row, test_key)
    return row


class SideBySide:
    """The rows of a check in commit order, and the boots that give them:
    with more than one guest slot, the caller builds every commit first,
    one at a time, and the boots then run up to that many at once, each in
    a thread of its own (a boot never shares the CPUs with a build, which
    would stretch the guests' clocks against the tests' time limits); with
    one (no pool) the caller checks cell after cell, as the kit did before."""

    def __init__(self, slots):
        self.pool = ThreadPoolExecutor(slots) if slots > 1 else None
        self.items = []

    def add_row(self, row):
        self.items.append(row)

    def add(self, fn):
        """The row fn() gives (a boot), in its place: at once without a
        pool, else when rows() starts the boots."""
        self.items.append(("boot", fn) if self.pool else fn())

    def later(self, fn):
        """The row fn() gives once every boot before it has ended (a commit
        whose tree an earlier cell of this check boots: its cached row)."""
        self.items.append(("later", fn))

    def rows(self):
        """Every row so far, in order, once its boot has ended; the first
        error of a boot, in commit order, is raised once all have ended."""
        futures = []
        try:
            items = []
            for i in self.items:
                if isinstance(i, tuple) and i[0] == "boot":
                    i = self.pool.submit(i[1])
                    futures.append(i)
                items.append(i)
            self.items = items
            wait(futures)
        except KeyboardInterrupt:
            # Ctrl-C reaches this thread only: the boots' threads end their
            # guests, record nothing and raise (core/interrupt.py).  Their
            # futures are waited for, not the pool's threads: a join() that
            # a Ctrl-C interrupts marks its thread as ended while it runs on
            # (Python 3.11); a second Ctrl-C is held (interrupt.stopping())
            for f in futures:
                f.cancel()          # a boot that has not started: dropped
            with interrupt.stopping():
                wait(futures)
            raise
        self.items = [i.result() if isinstance(i, Future) else i for i in self.items]
        self.items = [i[1]() if isinstance(i, tuple) else i for i in self.items]
        return list(self.items)

    def close(self):
        """Wait for the boots that run (a boot that has not started yet is
        dropped: this is reached with an error or an interrupt)."""
        if self.pool:
            self.pool.shutdown(wait=True, cancel_futures=True)


def host_tools():
    """Before the first (long) build: the host programs the boot and the
    guest test need, each named with its Debian package."""
    qemu_binary()
    which("mke2fs", "e2fsprogs")
    which("e2fsck", "e2fsprogs")


def check_ready(flavour, test):
    """Refuse, before anything moves, a check that could not run on the
    result of a rebase or update: an unknown guest test, a missing build
    dependency or host program."""
    try:
        guesttests.check_test_name(test)
        check_deps()
        host_tools()
    except ForkError as exc:
        raise ForkError("%s (the check after the rebase needs it; nothing was changed; "
                        "--no-check moves the series without the check)" % exc)


def evidence_dir(image_sha256, flavour, test, test_key):
    """Where the consoles of the base image `image_sha256` under this
    flavour and guest test (with inputs `test_key`) are kept: what that
    kernel showed, whichever kit judged it then.  Every check reads them
    again with its own code (base_reports())."""
    return wpath("cache", "base-consoles", "%s-%s-%s-%s" % (image_sha256, flavour, test,
                                                            test_key))


def booted_here(console, image_sha256):
    """Whether `console` is the log of a boot of the image `image_sha256` by
    this process: its first line is the QEMU command line, which names the
    stored image and this process's initramfs."""
    try:
        with open(console, errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return False
    return first.startswith("# ") and ("/%s.bzImage " % image_sha256) in first \
        and re.search(r"/initrd-%d-\d+\.cpio " % os.getpid(), first) is not None


def add_evidence(row, test_key):
    """Keep the console of a base row (the base kernel booted under
    `row`'s flavour and test, with the test's inputs `test_key` as they were
    when the run began) in the base's evidence directory, named by its
    sha256, with what produced it and its build's list of ext2 functions
    (to tell ext2's reports from others when it is read again).  Only a
    console that this process booted from exactly that image is kept.
    Returns the stored path, or None."""
    console = row.get("details", {}).get("boot")
    sha = row.get("image_sha256")
    if not sha or not console or not booted_here(console, sha):
        return None
    entry = kbuild.read_index(kbuild.index_path(row["tree"], row["flavour"], row["config_key"]))
    if not entry or entry.get("sha256") != sha or not entry.get("ext2_symbols"):
        return None         # no list of ext2's functions for that image: not evidence
    d = ensure_dir(evidence_dir(sha, row["flavour"], row["test"], test_key))
    with Lock("base-evidence"):
        tmp = os.path.join(d, "console.tmp-%d" % os.getpid())
        shutil.copyfile(console, tmp)
        csha = sha256_file(tmp)
        dest = os.path.join(d, "%s.console" % csha)
        os.replace(tmp, dest)
        if not os.path.exists(dest + ".json"):
            meta = {"commit": row["commit"], "tree": row["tree"], "image_sha256": sha,
                    "config_key": row["config_key"], "flavour": row["flavour"],
                    "test": row["test"], "test_key": test_key, "console_sha256": csha,
                    "console": console, "kit": row.get("kit"), "tools": row.get("tools"),
                    "stored": "%.6f" % time.time(),
                    "ext2_symbols": entry["ext2_symbols"]}
            with open(dest + ".json.tmp", "w") as fh:
                json.dump(meta, fh, indent=1)
            os.replace(dest + ".json.tmp", dest + ".json")
    return dest


def shown_by_base(row):
    """{key: "the base <commit> shows it too: <console log>"} for the
    reports of a base row: outside ext2 by signature (the known ones), in
    ext2's code by ext2_key (they fail the base row itself)."""
    ev = "the base %s shows it too: %s" % (row["commit"][:12], row["details"]["boot"])
    got = {}
    for rep in row.get("reports", []):
        if rep["verdict"] == "known":
            got[rep["signature"]] = ev
        elif rep.get("ext2_key"):
            got[rep["ext2_key"]] = ev
    return got


def shown_in_console(console, meta, test):
    """shown_by_base() of a stored base console, judged by this kit's code
    with the ext2 function list of the image's build: the reports the guest
    test does not allow, outside ext2 by signature, in ext2's code by
    ext2_key."""
    _, found = kernel.sanitizer_reports(console, guesttests.spec(test))
    failing, excused = reports.judge(found, meta["ext2_symbols"], "base")
    judged = [dict(r.as_dict(), verdict="known") for r, _ in excused] + \
        [dict(r.as_dict(), verdict="FAIL") for r in failing]
    return shown_by_base({"commit": meta["commit"], "details": {"boot": console},
                          "reports": judged})


EVIDENCE_KEYS = ("commit", "image_sha256", "console_sha256", "ext2_symbols", "stored")


def stored_evidence(d, image_sha256):
    """[(console path, record)] of the evidence directory `d` whose record
    names the image `image_sha256` and whose console is intact (its sha256
    as recorded), oldest first; any other entry is left out."""
    found = []
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if not name.endswith(".console.json"):
            continue
        console = os.path.join(d, name[:-len(".json")])
        try:
            with open(os.path.join(d, name)) as fh:
                meta = json.load(fh)
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict) or any(k not in meta for k in EVIDENCE_KEYS) \
                or meta["image_sha256"] != image_sha256 or not os.path.isfile(console) \
                or sha256_file(console) != meta["console_sha256"]:
            continue
        try:
            found.append((float(meta["stored"]), console, meta))
        except (TypeError, ValueError):
            continue
    return [(c, m) for _, c, m in sorted(found, key=lambda x: (x[0], x[1]))]


def base_reports(base, rows, flavour, test, out, guest_accel="tcg"):
    """{key: evidence} of the reports that the base snapshot showed under
    this flavour and test: in this run's row of the base or its recorded
    result (pass or fail), and in every stored console of the same base
    image under the same test inputs (evidence_dir()), each read again by
    this kit; {}
    (every report fails) when the base has no row that names its image.
    A recorded row is one of the accelerator `guest_accel`."""
    tree = git(["rev-parse", base + "^{tree}"])
    row = next((r for r in rows if r["commit"] == base and r.get("image_sha256")), None)
    if row is None:
        row = kernel.cached(tree, flavour, test, guest_accel)
    if row is None:
        out("note: the base %s has no %s/%s result: reports outside ext2 cannot be compared "
            "with it and fail (check the whole series, base first)" % (base[:12], flavour, test))
        return {}
    got = {}
    d = evidence_dir(row["image_sha256"], flavour, test, guesttests.test_key(test))
    for console, meta in stored_evidence(d, row["image_sha256"]):
        for key, ev in shown_in_console(console, meta, test).items():
            got.setdefault(key, ev)
    if row.get("details", {}).get("boot"):
        got.update(shown_by_base(row))
    return got


def markdown(rows, series, flavour, test):
    """The table as markdown, with what produced each row: the booted
    image's sha256, the kit's code hash and the QEMU/e2fsprogs versions."""
    runners = sorted({r.get("runner") or "qemu" for r in rows} - {"qemu"})
    out = ["`tools/fork check --series %s --config %s --test %s%s`" % (
        series.rel, flavour, test, "".join(" --runner %s" % r for r in runners)),
           ""] + md_table(["commit", "subject"] + CELLS + ["time", "image sha256", "kit"], [
               [r["commit"][:12], md_cell(r["subject"])[:60]]
               + [r["cells"].get(c, "-") for c in CELLS]
               + ["%.0f s%s%s%s" % (r["seconds"], " (cached)" if r.get("cached") else "",
                                    " flaky" if r.get("flaky") else "", carry.mark(r)),
                  (r.get("image_sha256") or "-")[:16], r.get("kit", "-")]
               for r in rows])
    tools = sorted({"%s: %s" % kv for r in rows for kv in r.get("tools", {}).items()})
    if tools:
        out += ["", "Tools: " + "; ".join(tools) + "."]
    sparse = {}
    for r in rows:
        state = r.get("details", {}).get("sparse")
        if state:
            sparse.setdefault(state, []).append(r["commit"][:12])
    if sparse:
        out += ["", "Sparse (with the W=1 recompile of the touched files): " + "; ".join(
            "%s (%s)" % (state, ", ".join(commits)) for state, commits in sorted(sparse.items()))
            + "."]
    known = ["- %s: %s (%s)" % (r["commit"][:12], rep["title"], rep["evidence"])
             for r in rows for rep in r.get("reports", []) if rep["verdict"] == "known"]
    failed = ["- %s %s: %s" % (r["commit"][:12], cell, detail.splitlines()[0])
              for r in rows for cell, detail in sorted(r.get("details", {}).items())
              if r["cells"].get(cell) == "FAIL"]
    if known:
        out += ["", "Known reports (shown by the base as well; outside ext2, or in ext2 code "
                "the commit did not change):", ""] + known
    if failed:
        out += ["", "Failures:", ""] + failed
    errors = ["- %s: %s" % (r["commit"][:12], md_cell(r["error"])) for r in rows if r.get("error")]
    if errors:
        out += ["", "Errors of the runner (it failed, not the kernel: no verdict):", ""] + errors
    flaky = ["- " + md_cell(flaky_note(r)) for r in rows if r.get("flaky")]
    if flaky:
        out += ["", "Flaky (runs of the same tree, flavour and test that failed and passed):",
                ""] + flaky
    out += carry.notes(rows)
    return "\n".join(out) + "\n"

