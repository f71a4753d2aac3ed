"""The series as mails for the mailing list, and every check on them
before anything is written (``tools/fork export`` describes it for the
user): the sender, the recipients, the cover letter and its parts, the
checkpatch, git am, git send-email and b4 round trips, the recorded
versions."""

import email.charset
import email.header
import json
import mailbox
import os
import re
import shlex
import shutil
import textwrap

from ..core.errors import ForkError
from ..core.paths import ensure_dir, ktree, repo_root, workdir_relative, wpath
from ..core.proc import run
from ..guest import guesttests
from . import docs
from ..repo.branches import apply_patches
from ..repo.debian import dep14
from ..repo.git import git, git_ok, rev_parse
from ..repo.maintainers import address, yielded
from ..repo.patchfile import mailinfo, patch_id_of_commit, patch_id_of_file
from ..repo.series import fork_command, read_kv
from ..verify import kernel
from ..verify import checkrecords
from ..verify.checkrecords import LOG_TIME
from ..verify.checkpatch import run_checkpatch_pl

PLACEHOLDERS = ["summary", "check_table", "bench", "changelog", "range_diff", "base"]
EXTRA_PLACEHOLDERS = ["version", "count"]
NO_BENCH = "no benchmark results recorded (run `tools/fork bench`)"
LORE = "https://lore.kernel.org/r/"
# format-patch must produce the same files whatever the user's diff config
FP_CONFIG = ["-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
             "-c", "diff.relative=false", "-c", "format.suffix=.patch",
             "-c", "format.coverFromDescription=default"]


# -- repository paths ---------------------------------------------------------

def mailing(*parts):
    return os.path.join(repo_root(), "mailing", *parts)


def series_mailing(series, *parts):
    """Where a series' versions and changelogs live: mailing/ for the primary
    series, mailing/<series dir>/ (e.g. mailing/backports/6.1/) for others."""
    if series.is_primary:
        return mailing(*parts)
    return mailing(series.rel, *parts)


def cover_template(series):
    """The series' own cover letter template (mailing/<series dir>/
    cover-letter.tmpl, e.g. for fixes/), else the primary series'."""
    own = series_mailing(series, "cover-letter.tmpl")
    return own if os.path.isfile(own) else mailing("cover-letter.tmpl")


def rel(path):
    return os.path.relpath(path, repo_root())


def recorded_versions(series):
    """{N: directory} of the versions recorded in mailing/versions/."""
    out = {}
    top = series_mailing(series, "versions")
    if os.path.isdir(top):
        for name in os.listdir(top):
            m = re.match(r"^v([1-9][0-9]*)$", name)
            if m and os.path.isfile(os.path.join(top, name, "base")):
                out[int(m.group(1))] = os.path.join(top, name)
    return out


def version_patches(vdir):
    """The patch files (not the cover letter) of a recorded version, in order."""
    with open(os.path.join(vdir, "series")) as fh:
        names = [l.strip() for l in fh if l.strip() and not l.startswith("#")]
    return [os.path.join(vdir, n) for n in names]


# -- input checks ---------------------------------------------------------------

def identity():
    """(name, email) of the sender, from the kernel tree's git config."""
    how = ("set it with `git config --global user.name \"Your Name\"` and "
           "`git config --global user.email you@example.org` (or without --global in "
           "%s); it signs off every patch and is the From: of the mails" % ktree())
    proc = run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=ktree(), check=False)
    name = run(["git", "config", "user.name"], cwd=ktree(), check=False).stdout.strip() \
        or os.environ.get("GIT_COMMITTER_NAME", "")
    mail = run(["git", "config", "user.email"], cwd=ktree(), check=False).stdout.strip() \
        or os.environ.get("GIT_COMMITTER_EMAIL", "") or os.environ.get("EMAIL", "")
    m = re.match(r"^(.*) <(.*)> \d+ [-+]\d{4}$", proc.stdout.strip())
    if proc.returncode != 0 or not m or not name.strip() or not mail.strip():
        raise ForkError("no sender identity (git user.name/user.email) for the "
                        "Signed-off-by: lines: %s" % how)
    name, mail = m.group(1), m.group(2)
    if "@" not in mail or not name.strip():
        raise ForkError("the sender identity %r <%s> is not usable: %s" % (name, mail, how))
    return name, mail


# Addresses that name nobody (RFC 2606/6761 reserved names, localhost): the
# kernel takes patches only from a real person (submitting-patches.rst,
# "Developer's Certificate of Origin").
PLACEHOLDER_RE = re.compile(r"(\.(invalid|test|example|localhost)|@(localhost|localdomain))$",
                            re.I)


def is_placeholder(mail):
    return bool(PLACEHOLDER_RE.search(mail.strip().rstrip(">")))


def mail_commits(base, commits, author):
    """The commits as they are mailed: with `author` (name, email) as author
    unless None, and without Signed-off-by lines of placeholder addresses
    (format-patch --signoff adds the sender's own).  Same trees; returns the
    new ids (the branches do not move)."""
    out, parent = [], base
    for c in commits:
        name, mail, date = git(["log", "-1", "--format=%an%x00%ae%x00%ad", "--date=raw",
                                c]).split("\0")
        if author:
            name, mail = author
        msg = git(["log", "-1", "--format=%B", c])
        lines = [l for l in msg.splitlines()
                 if not (re.match(r"^Signed-off-by: .*<([^>]*)>\s*$", l)
                         and is_placeholder(re.match(r".*<([^>]*)>", l).group(1)))]
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail, "GIT_AUTHOR_DATE": date,
               "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": mail,
               "GIT_COMMITTER_DATE": date}
        parent = git(["commit-tree", c + "^{tree}", "-p", parent, "-F", "-"], env=env,
                     input="\n".join(lines).rstrip("\n") + "\n")
        out.append(parent)
    return out


def check_address(addr, where):
    if not address(addr) or "\n" in addr or "," in addr.replace('",', ""):
        raise ForkError("%s: %r is not one e-mail address (give `Name <a@b.org>` or "
                        "`a@b.org`, one per option or line)" % (where, addr))
    return addr.strip()


def read_recipients(path):
    to, cc = [], []
    if not os.path.exists(path):
        return to, cc
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^(To|Cc):\s*(.+)$", line, re.I)
            if not m:
                raise ForkError("%s:%d: expected `To: address` or `Cc: address`, got %r"
                                % (rel(path), n, line))
            (to if m.group(1).lower() == "to" else cc).append(
                check_address(m.group(2), "%s:%d" % (rel(path), n)))
    return to, cc


def _norm_msg(text):
    return "\n".join(l.rstrip() for l in text.strip().splitlines())


def series_commits(series):
    """(base, head, [commits]) after checking series/<ver> is what the repo records."""
    base = rev_parse(series.distro_branch)
    head = rev_parse(series.head_branch)
    if git(["merge-base", base, head]) != base:
        raise ForkError("%s is not based on %s: rebase it (`tools/fork rebase`) or lay the "
                        "branches out again (`tools/fork branches`)"
                        % (series.head_branch, series.distro_branch))
    if git(["rev-list", "--merges", "%s..%s" % (base, head)]):
        raise ForkError("%s..%s contains merge commits: a patch series must be linear"
                        % (series.distro_branch, series.head_branch))
    commits = git(["rev-list", "--reverse", "%s..%s" % (base, head)]).split()
    how = ("export sends what %s/ records: store the branch with `tools/fork save`, or "
           "reset the branches to the stored series with `tools/fork branches`" % series.rel)
    if len(commits) != len(series.patches):
        raise ForkError("%s has %d commits on %s but %s/series lists %d patches: %s"
                        % (series.head_branch, len(commits), series.distro_branch,
                           series.rel, len(series.patches), how))
    for k, (commit, patch) in enumerate(zip(commits, series.patches), 1):
        with open(patch, encoding="utf-8", errors="replace") as fh:
            marks = sorted(set(re.findall(r"@[A-Z]+@", fh.read())))
        if marks:
            raise ForkError("%s still holds the placeholder %s: write the figure or text it "
                            "stands for (edit the commit, `tools/fork save`); nothing was "
                            "exported" % (rel(patch), ", ".join(marks)))
        same = patch_id_of_commit(commit) == patch_id_of_file(patch) and \
            _norm_msg(mailinfo(patch)[3]) == _norm_msg(git(["log", "-1", "--format=%B", commit]))
        if not same:
            raise ForkError("commit %d of %s (%s %s) differs from %s: %s"
                            % (k, series.head_branch, commit[:12],
                               git(["log", "-1", "--format=%s", commit]), rel(patch), how))
    return base, head, commits


def base_info(series, base):
    """Package/Version/Upstream/SHA256 of the distro commit (its message)."""
    body = git(["log", "-1", "--format=%B", base])
    info = dict(re.findall(r"^(Package|Version|Upstream|SHA256): *(\S+) *$", body, re.M))
    missing = [k for k in ("Package", "Version", "Upstream", "SHA256") if k not in info]
    if missing:
        raise ForkError("%s (%s) is not a `tools/fork import` snapshot: its message lacks %s"
                        % (series.distro_branch, base[:12], ", ".join(missing)))
    if info["SHA256"] != series.base["sha256"]:
        raise ForkError("%s holds %s %s (sha256 %s), but %s/base names version %s (sha256 "
                        "%s): import that snapshot (`tools/fork import`) or rebase the series "
                        "(`tools/fork rebase`) first"
                        % (series.distro_branch, info["Package"], info["Version"],
                           info["SHA256"], series.rel, series.base["version"],
                           series.base["sha256"]))
    return info


def record_passes(row):
    """A record of the check cache passes on its own runs (its "passed",
    kernel.judge_runs()'s verdict: a failed run and a later pass are flaky,
    no pass, unless the base shows every report that failed them) and its
    latest run passed every cell."""
    cells = row.get("cells", {})
    return bool(row.get("passed", bool(cells)) and cells
                and all(v in ("pass", "n/a") for v in cells.values()))


def record_name(guest_accel, runner):
    return guest_accel.upper() + ("" if runner in (None, "qemu") else " through " + runner)


def latest_run(row):
    """When `row`'s latest run ran: its log's date and time (check-<commit12>-
    <YYYYMMDD-HHMMSS>.log), "" when it names none."""
    m = LOG_TIME.search(os.path.basename(kernel.runs_of(row)[-1].get("log") or ""))
    return m.group(1) if m else ""


def _explanation(run, given):
    """The explanation of `run` in checkrecords.explained()'s `given`: a
    run of the cache names its log by its full path, the committed tables
    and explained.json by its path in the work directory."""
    return checkrecords.explanation_of(workdir_relative(run), given)


def judged_record(row, given):
    """A record of the check cache judged on its completed runs but those
    that explained.json explains: `row` itself when it has none of them,
    else a copy whose cells are its latest judged run's (checkpatch its
    own), judged by kernel.judge_runs() (an excuse of the known-report
    rule kept); None when every completed run is explained: no verdict."""
    runs = kernel.completed(kernel.runs_of(row))
    kept = [r for r in runs if not _explanation(r, given)]
    if len(kept) == len(runs):
        return row
    if not kept:
        return None
    out = dict(row, runs=kept, cells=dict(row["cells"], **kept[-1]["cells"]),
               explained=[workdir_relative(checkrecords.run_names(r)[0])
                          for r in runs if r not in kept])
    kernel.judge_runs(out)
    if row.get("flaky_excused") and "flaky" in out and kept[-1]["passed"]:
        out["flaky_excused"] = row["flaky_excused"]
        out["passed"] = kernel.row_passed(out)
    return out


def failed_runs(cache, committed, given, excused):
    """[(run, its accelerator and runner by record_name(), where it is on
    record)] of every failed run of a tree that blocks its export: in the
    check cache under any key (`cache`: kernel.every_record_of()'s) and
    in the committed tables (`committed`: checkrecords.tree_runs()'s),
    each once, but an error of the runner (no verdict), a run that
    explained.json explains (`given`) and one the kit's known-report rule
    excused (a record's `flaky_excused`; `excused`: such runs' logs in the
    committed tables)."""
    items = [(r, row, path) for path, _, _, row in cache for r in kernel.runs_of(row)]
    items += [(r, row, f) for f, r, row in committed]
    out, seen = [], set()
    for one, row, where in items:
        log = workdir_relative(one.get("log") or "")
        if one.get("error") or one.get("passed") or (log and log in seen):
            continue
        seen.add(log)
        if _explanation(one, given) or row.get("flaky_excused") or log in excused:
            continue
        name = record_name(one.get("accel") or kernel.row_accel(row),
                           one.get("runner") or row.get("runner"))
        out.append((one, name, where + (" (%s)" % row["flaky"] if row.get("flaky") else "")))
    return out


def failed_run_text(run, name, where):
    """One failed run in one line: its log, the accelerator and kit it ran
    under, what failed it and the record that holds it."""
    return "failed run %s (%s, kit %s): %s; in %s" % (
        workdir_relative(run.get("log") or run.get("console") or "(no log)"), name,
        run.get("kit") or "?", run.get("failure") or ", ".join(
            "%s: %s" % kv for kv in sorted(run.get("cells", {}).items())
            if kv[1] not in ("pass", "n/a")), where)


def check_rows(commits, flavour, test):
    """[(commit, subject, row-or-None, why)]: each commit judged on every
    run of its tree under this flavour and test, whatever kit, QEMU,
    e2fsprogs, ci/guest and fragments made it: the records of the check
    cache under every key, accelerator and runner
    (kernel.every_record_of()) and the runs of the committed tables
    (records/checks/, checkrecords.tree_runs()).  A failed run anywhere
    (not an error of the runner) leaves the commit without a passing
    check, unless records/checks/explained.json explains it
    (checkrecords.explained(); the cache's runs matched to it by their log
    as the tables name it) or the kit's known-report rule excused it
    (`flaky_excused`); a flaky record's failed runs so too.  And a pass is
    needed by this kit and tools: a record under the current key
    (kernel.records_of(): TCG or KVM, the kit's QEMU or LAVA's) that
    passes (record_passes()) on its runs but the explained ones, so what
    is mailed was checked by the kit that mails it.  `row` is that
    passing record whose latest run is the newest; `why` says, for None,
    what is missing: its first line in a few words, then a line per
    failed run (failed_run_text())."""
    if test not in guesttests.TESTS:
        raise ForkError("unknown guest test %r: one of %s" % (test, ", ".join(guesttests.TESTS)))
    root = repo_root()
    runs_by_cell = checkrecords.gather(root)
    given = checkrecords.explained(root, runs_by_cell)
    excused = checkrecords.excused_runs(root)
    rows = []
    for commit in commits:
        tree = git(["rev-parse", commit + "^{tree}"])
        cache = kernel.every_record_of(tree, flavour, test)
        committed = checkrecords.tree_runs(runs_by_cell, tree, flavour, test)
        failed = failed_runs(cache, committed, given, excused)
        current = [(a, r, judged_record(row, given))
                   for a, r, row in kernel.records_of(tree, flavour, test)]
        passing = [row for _, _, row in current if row is not None and record_passes(row)]
        row, why = None, ""
        if failed:
            names = sorted({name for _, name, _ in failed})
            why = "its check failed under %s" % ", ".join(names) + "".join(
                "\n" + failed_run_text(*f) for f in failed)
        elif passing:
            row = max(passing, key=latest_run)
        elif any(row is not None for _, _, row in current):
            # no failed run: a cell of the record's own, such as checkpatch
            why = "its check failed under %s" % ", ".join(
                "%s (%s)" % (record_name(a, r), ", ".join(
                    "%s: %s" % kv for kv in sorted(row["cells"].items())
                    if kv[1] not in ("pass", "n/a")))
                for a, r, row in current if row is not None)
        elif current:
            why = "no verdict: its runs by this kit and tools are explained failures"
        elif cache or committed:
            why = ("no check by this kit and tools (kit %s, QEMU, e2fsprogs, ci/guest, the "
                   "flavour's fragments): its runs on record are older" % kernel.kit_key())
        else:
            why = "no check on record"
        rows.append((commit, git(["log", "-1", "--format=%s", commit]), row, why))
    return rows


# -- the cover letter -------------------------------------------------------------

def first_paragraph(body):
    for para in re.split(r"\n\s*\n", body.strip()):
        lines = [l.rstrip() for l in para.strip("\n").splitlines()]
        if not lines:
            continue
        if all(re.match(r"^[A-Za-z0-9-]+: ", l) for l in lines):
            continue    # a trailer block
        return "\n".join(lines)
    return ""


def summary_text(commits):
    out = []
    for k, c in enumerate(commits, 1):
        subject = git(["log", "-1", "--format=%s", c])
        para = first_paragraph(git(["log", "-1", "--format=%b", c]))
        item = "%d/%d %s" % (k, len(commits), subject)
        if para:
            item += "\n" + "\n".join(("      " + l) if l else "" for l in para.splitlines())
        out.append(item)
    return "\n\n".join(out)


def check_text(rows, flavour, test, allowed):
    cells = kernel.CELLS
    table = [["patch", "commit"] + cells]
    unchecked = []
    for k, (commit, subject, row, *_) in enumerate(rows, 1):
        if row is None:
            vals = ["not-checked"] + ["-"] * (len(cells) - 1)
            unchecked.append("%d/%d" % (k, len(rows)))
        else:
            vals = [row["cells"].get(c, "-") for c in cells]
        table.append(["%d/%d" % (k, len(rows)), commit[:12]] + vals)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    states = {row.get("details", {}).get("sparse", "not recorded")
              for _, _, row, *_ in rows if row is not None}
    sparse = "and sparse " if states == {"ran"} else ""
    lines = [
        "Each commit was checked (kernel config \"%s\", guest test \"%s\"):" % (flavour, test),
        "checkpatch.pl --strict, a W=1 %sbuild of the files it touches," % sparse,
        "a QEMU boot, the ext2 test in the guest, e2fsck -fn of its image, and",
        "its free block and inode counts (superblock = group descriptors =",
        "e2fsck = the guest's statfs); checkpatch.pl --strict also passes on the",
        "mails as sent.",
    ] + ([] if sparse or not states else textwrap.wrap(
        "Sparse: %s." % "; ".join(sorted(states)), 72)) + [
        "",
    ] + [("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths))).rstrip() for r in table]
    if unchecked:
        many = len(unchecked) > 1
        lines += [""] + textwrap.wrap(
            "WARNING: exported with --allow-unchecked: patch%s %s %s no passing check "
            "result; treat %s as untested." % ("es" if many else "", ", ".join(unchecked),
                                               "have" if many else "has",
                                               "them" if many else "it"), width=72)
    assert allowed or not unchecked
    return "\n".join(lines)


def bench_command(path):
    """The command of a bench.cmd script, without its `cd REPO &&` and lock."""
    with open(path) as fh:
        lines = [l.strip() for l in fh if l.strip() and not l.lstrip().startswith("#")]
    cmd = lines[-1] if lines else ""
    cmd = re.sub(r"^cd \S+ && ", "", cmd)
    cmd = re.sub(r"^flock \S+ ", "", cmd)
    return cmd


def bench_revision(path):
    """The B (series) commit a bench JSON was measured on, if it says."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    b = data.get("kernels", {}).get("B", {}) if isinstance(data.get("kernels"), dict) else {}
    rev = (b.get("commit") if isinstance(b, dict) else None) or data.get("commit")
    return rev if isinstance(rev, str) and re.match(r"^[0-9a-f]{7,40}$", rev) else None


def bench_runs():
    """(md, cmd, json) of the latest bench run, then of every run, newest first."""
    root = wpath("bench")
    runs = [tuple(os.path.join(root, "latest." + e) for e in ("md", "cmd", "json"))]
    if os.path.isdir(root):
        for d in sorted(os.listdir(root), reverse=True):
            if os.path.isfile(os.path.join(root, d, "bench.md")):
                runs.append(tuple(os.path.join(root, d, "bench." + e)
                                  for e in ("md", "cmd", "json")))
    return [r for r in runs if os.path.isfile(r[0])]


def bench_text(head, prog, base=None):
    """The newest benchmark run measured on exactly this tree; else the newest
    run of an earlier version of this series (on the same base), else the
    latest run, with a note in both cases (a run of another series, e.g. a
    backport, may be the latest)."""
    runs = bench_runs()
    if not runs:
        return "Benchmarks: " + NO_BENCH + "."
    want = git(["rev-parse", head + "^{tree}"])

    def tree_of(js):
        rev = bench_revision(js)
        return rev and git(["rev-parse", "-q", "--verify", rev + "^{tree}"], check=False)

    def on_base(js):
        rev = bench_revision(js)
        return bool(base and rev and git_ok(["merge-base", "--is-ancestor", base, rev]))

    md, cmd, js = next((r for r in runs if tree_of(r[2]) == want),
                       next((r for r in runs if on_base(r[2])), runs[0]))
    with open(md) as fh:
        table = fh.read().strip()
    command = "(command not recorded)"
    if os.path.isfile(cmd):
        command = "`%s`" % bench_command(cmd)
    text = "Benchmark results, from %s:\n\n%s" % (command, table)
    measured = bench_revision(js)
    if measured and tree_of(js) != want:
        note = ("these results were measured on %s, not on the series as posted (%s); "
                "rerun `tools/fork bench`" % (measured[:12], head[:12]))
        prog.say("warning: " + note)
        text = "Note: " + note[0].lower() + note[1:].split("; rerun")[0] + ".\n\n" + text
    return text


def base_text(info, base):
    """The base named so that the list can find it: the upstream version
    and Debian's package.  No base-commit: the snapshot commit exists only
    in trees that `tools/fork import` made (b4 and the CI bots would look it
    up upstream and not find it); the tarball's sha256 names it instead."""
    tag = "debian/%s" % dep14(info["Version"])
    if not git(["rev-parse", "--verify", "-q", "refs/tags/%s^{commit}" % tag], check=False):
        tag = None
    intro = textwrap.fill(
        "Base: v%s as Debian ships it in %s %s (upstream stable v%s plus Debian's "
        "patches).  That tree is not a public commit, so there is no base-commit "
        "line; it is the tarball below, imported as one commit:"
        % (info["Upstream"], info["Package"], info["Version"], info["Upstream"]),
        width=72, break_long_words=False, break_on_hyphens=False)
    return intro + "\n\n" + "\n".join("  %-9s %s" % kv for kv in [
        ("Package:", info["Package"]),
        ("Version:", info["Version"]),
        ("Upstream:", "v" + info["Upstream"]),
        ("Commit:", base + (" (tag %s)" % tag if tag else "") + ", not public"),
        ("SHA256:", info["SHA256"] + " (tarball)")])


def changelog_problem(n, text):
    """What is wrong with the text of the changelog of v<n>, or None.  It
    is the list of changes alone, one `- ...` item per change: export
    writes its "Changes in v<n>:" line above it, so a heading of its own
    would come out twice."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if not first:
        return "is empty: write one `- ...` line per change"
    if not re.match(r"[-*] \S", first):
        return ("starts with %r, not a `- ...` item: export writes \"Changes in v%d:\" "
                "itself; delete any heading of your own and begin with the first change"
                % (first, n))
    return None


def changelog_text(n, path, prev_msgid):
    with open(path) as fh:
        text = fh.read().strip()
    out = "Changes in v%d:\n%s" % (n, text)
    if prev_msgid:
        out += "\n- Link to v%d: %s%s" % (n - 1, LORE, prev_msgid.strip("<>"))
    return out


BENCH_DIRECTIVES = ("bench", "bench-facts", "bench-locks", "bench-steps", "frag",
                    "frag-table")
# the check tables of a head, summarized (docs.d_check_summary()); an
# fstests run of the base and the head (docs.d_fstests_summary())
SUMMARY_DIRECTIVES = ("check-summary", "fstests-summary")
# what a cover letter may use: each is checked against the series it sends
LETTER_DIRECTIVES = BENCH_DIRECTIVES + SUMMARY_DIRECTIVES


def template_directives(path, names):
    """[(directive, [args])] of the `@@` lines of a cover letter template
    whose directive is one of `names`."""
    out = []
    if os.path.isfile(path):
        with open(path) as fh:
            for line in fh:
                words = line[2:].split() if line.startswith("@@") else []
                if words and words[0] in names:
                    out.append((words[0], words[1:]))
    return out


def bench_directives(path):
    """[(directive, [args])] of the `@@` lines of a cover letter template
    that name benchmark or fragmentation runs."""
    return template_directives(path, BENCH_DIRECTIVES)


def check_summarized(path, base, commits):
    """Every `@@ check-summary VER HEAD` line of the template speaks of
    the series being exported: the trees of the rows of HEAD's tables
    (every table of records/checks/VER/HEAD/, docs.summary_rows()) are
    exactly the trees of `base` and `commits`, no other and none missing,
    and the summary numbers its patches as the series does: its base is
    `base`'s tree and its patches (docs.summary_series(), a tree each)
    are the trees of `commits`, one each, in their order.  A head whose
    tables were carried to a reword (`check --carry`) has the same trees
    and passes; the tables of another version of the series, or a head
    that lacks a commit or the base, are refused."""
    for directive, args in template_directives(path, SUMMARY_DIRECTIVES):
        line = "`@@ %s %s`" % (directive, " ".join(args))
        if directive == "fstests-summary":
            fstests_summarized(path, line, args, base, commits)
            continue
        if len(args) != 2:
            raise ForkError("%s: %s: %s takes VER HEAD (a directory of records/checks/)"
                            % (rel(path), line, directive))
        ver, head = args
        want = {}
        for k, c in enumerate([base] + list(commits)):
            want.setdefault(git(["rev-parse", c + "^{tree}"]),
                            "the base %s" % c[:12] if k == 0 else
                            "%d/%d %s" % (k, len(commits), c[:12]))
        # A reword whose tables were not carried (`check --carry`) is taken
        # on its trees alone, by decision: its runs are those of its trees,
        # and the one cell of a commit's own, checkpatch, export runs itself
        # on the very patches it sends (checkpatch(), below).
        rows = docs.summary_rows(repo_root(), ver, head)
        other, seen = [], set()
        for f, row in rows:
            tree = row.get("tree")
            if tree in want:
                seen.add(tree)
            elif (tree, row["commit"]) not in {(t, c) for t, c, _ in other}:
                other.append((tree, row["commit"], f))
        lacking = [name for tree, name in want.items() if tree not in seen]
        if other or lacking:
            what = []
            if other:
                tree, commit, f = other[0]
                what.append("%d commit%s of other trees (%s %s in %s%s)" % (
                    len(other), "" if len(other) == 1 else "s", commit[:12],
                    "tree %s" % tree[:12] if tree else "without a tree", f,
                    ", ..." if len(other) > 1 else ""))
            if lacking:
                what.append("no row of %s%s" % (", ".join(lacking[:3]), ", and %d more"
                                                 % (len(lacking) - 3) if len(lacking) > 3
                                                 else ""))
            raise ForkError("%s: %s summarizes tables that did not check the series being "
                            "exported (%s): name the head whose tables checked these commits "
                            "and their base, check them (`tools/fork check --json "
                            "records/checks/<ver>/<head>/<flavour>-<test>.json`), or carry "
                            "the tables of a reword (`tools/fork check --carry`)"
                            % (rel(path), line, "; ".join(what)))
        summary_base, series = docs.summary_series(repo_root(), ver, head)
        got = [tree for tree, _ in series]
        trees = [git(["rev-parse", c + "^{tree}"]) for c in commits]
        if summary_base[0] != git(["rev-parse", base + "^{tree}"]) or got != trees:
            k = next(k for k in range(max(len(got), len(trees)))
                     if k >= len(got) or k >= len(trees) or got[k] != trees[k])
            raise ForkError("%s: %s would number the patches otherwise than the series being "
                            "exported (its tables give %d patches on base %s, the series sends "
                            "%d on %s; patch %d is %s there, %s here): name the head whose "
                            "tables checked this series in its order, or check it (`tools/fork "
                            "check --json records/checks/<ver>/<head>/<flavour>-<test>.json`)"
                            % (rel(path), line, len(got), summary_base[1][0][:12], len(trees),
                               base[:12], k + 1,
                               series[k][1][0][:12] if k < len(got) else "not",
                               commits[k][:12] if k < len(trees) else "not"))


def fstests_summarized(path, line, args, base, commits):
    """An `@@ fstests-summary VER NAME` line of the template speaks of the
    series being exported: the run's base kernel is `base` and its series
    kernel the head, by commit."""
    if len(args) != 2:
        raise ForkError("%s: %s: fstests-summary takes VER NAME (records/fstests/VER/NAME.md)"
                        % (rel(path), line))
    mdrel, _, _, head, _ = docs.fstests_markdown(repo_root(), args[0], args[1],
                                                 "fstests-summary")
    sides = docs.fstests_sides(mdrel, head)
    for side, want in (("base", base), ("series", commits[-1])):
        rev, commit = sides[side]
        if not git(["rev-parse", want]).startswith(commit):
            raise ForkError("%s: %s tested %s `%s` (%s), not the %s being exported (%s): name "
                            "the run of this series (`tools/fork fstests BASE HEAD --markdown "
                            "records/fstests/<ver>/<name>.md`)"
                            % (rel(path), line, side, rev, commit,
                               "base" if side == "base" else "head", want[:12]))


def uses_bench(path):
    """Whether a cover letter template has the {bench} placeholder."""
    if not os.path.isfile(path):
        return True     # render_template() says what is missing
    with open(path) as fh:
        return "{bench}" in "".join(l for l in fh if not l.startswith("#"))


def recorded_images():
    """{(flavour, image sha256): {tree}} of every row of the check tables in
    records/checks/ (all series and heads): which trees the kit built into
    which kernel image.  Its builds are reproducible, so an image is the
    build of those trees under that flavour's config."""
    root, out = repo_root(), {}
    for _, rel_path in checkrecords.record_files(root):
        for row in checkrecords.read_rows(root, rel_path):
            if row.get("tree") and row.get("image_sha256"):
                out.setdefault((row.get("flavour"), row["image_sha256"]), set()).add(row["tree"])
    return out


def check_measured(path, base, commits):
    """Every run the template's `@@` lines name measured this series.  Each
    step of an --each run: the change of one of `commits` on the very trees
    of the series (its parent's tree and its own); the same change (patch
    id) on other trees is taken, with a note that says so (e.g. measured on
    a fix applied below it); other changes are refused.  An A/B run: A the
    base's tree and B the head's.  A frag run: trees of the base or of
    `commits`.  What cannot be checked here (a record without ids whose
    commits this kernel tree lacks) is a note, never taken as checked.
    Returns the notes for the cover letter."""
    directives = bench_directives(path)
    if not directives:
        return []
    tree_of = {c: git(["rev-parse", c + "^{tree}"]) for c in [base] + list(commits)}
    trees = set(tree_of.values())
    changes = {patch_id_of_commit(c) for c in commits}
    # each commit of the series with its parent's tree
    steps = list(zip(commits, [tree_of[c] for c in [base] + list(commits)[:-1]]))
    images = None
    notes = []

    def same_images(what):
        """The series commit whose build and whose parent's build are, byte
        for byte, the two kernel images the step measured, or None."""
        nonlocal images
        if not (what.get("image") and what.get("parent_image")):
            return None
        if images is None:
            images = recorded_images()
        built = images.get((what.get("flavour"), what["image"]), set())
        parent_built = images.get((what.get("flavour"), what["parent_image"]), set())
        for c, parent_tree in steps:
            if tree_of[c] in built and parent_tree in parent_built and tree_of[c] != parent_tree:
                return c
        return None

    def have(commit):
        return git_ok(["cat-file", "-e", commit + "^{commit}"])

    def tree(commit, recorded):
        return recorded or (git(["rev-parse", commit + "^{tree}"]) if have(commit) else None)

    def refuse(line, what):
        raise ForkError("%s: %s measured %s, which is not in the series being exported: "
                        "name a run of this version (or measure it: see BENCHMARKS.md)"
                        % (rel(path), line, what))

    for directive, args in directives:
        line = "`@@ %s %s`" % (directive, " ".join(args))
        for what in docs.measured_changes(repo_root(), directive, args):
            if "step" in what:
                commit = what["step"]
                name = ('"%s" (%s)' % (what["subject"], commit[:12]) if what.get("subject")
                        else "the change of %s" % commit[:12])
                t, pt = tree(commit, what["tree"]), tree(what["parent"], what["parent_tree"])
                if t in trees and pt in trees and t != pt:
                    continue
                pid = what["patch_id"] or (patch_id_of_commit(commit) if have(commit) else None)
                same = same_images(what) if pid is None else None
                if same:
                    notes.append("%s was measured on kernel images identical to this series' "
                                 "builds of %s and its parent (sha256 %s and %s, as the check "
                                 "tables in records/checks/ record them)"
                                 % (name, same[:12], what["image"][:12],
                                    what["parent_image"][:12]))
                elif pid is None:
                    notes.append("%s could not be checked against this series here (its "
                                 "record has no patch or tree id and this tree lacks commit "
                                 "%s)" % (name, commit[:12]))
                elif pid not in changes:
                    refuse(line, name)
                elif t is None or pt is None:
                    notes.append("%s is one of this series' changes (by patch id); the trees "
                                 "it was measured on could not be checked here" % name)
                else:
                    notes.append("%s was measured as the same patch on other trees than "
                                 "this series' (on %s)" % (name, what["parent"][:12]))
                continue
            commit, role = what["tree"], what["role"]
            name = "the tree of %s" % commit[:12]
            t = tree(commit, what["id"])
            want = {"A": {tree_of[base]}, "B": {tree_of[commits[-1]]}}.get(role, trees)
            if t is None:
                notes.append("%s could not be checked against this series here (its record "
                             "has no tree id and this tree lacks the commit)" % name)
            elif t not in want:
                refuse(line, "%s%s" % (name, {"A": " as A (the base)",
                                               "B": " as B (the series head)"}.get(role, "")))
    return notes


def render_template(path, values, optional=()):
    """(subject, body) of the cover letter template with `values` filled in;
    every placeholder but those in `optional` must be used."""
    if not os.path.isfile(path):
        raise ForkError("no cover letter template %s: restore it from git (`git checkout -- "
                        "%s`)" % (rel(path), rel(path)))
    with open(path) as fh:
        lines = [l.rstrip("\n") for l in fh if not l.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise ForkError("%s is empty: its first line is the subject" % rel(path))
    for line in lines[1:]:
        words = line[2:].split() if line.startswith("@@") else []
        if words and words[0] not in LETTER_DIRECTIVES:
            raise ForkError("%s: `@@ %s` cannot be checked against the series a letter "
                            "sends: a cover letter may use %s" % (
                                rel(path), words[0], ", ".join("@@ " + d
                                                               for d in LETTER_DIRECTIVES)))
    body_lines = docs.render_lines(repo_root(), lines[1:], rel(path))
    subject, body = lines[0].strip(), "\n".join(body_lines)
    found = set(re.findall(r"\{([a-z_]+)\}", subject + body))
    unknown = found - set(values)
    if bench_directives(path):
        # the letter names its benchmark runs itself
        optional = tuple(optional) + ("bench",)
    missing = set(PLACEHOLDERS) - found - set(optional)
    if unknown or missing:
        raise ForkError("%s: %s%s; the placeholders are %s" % (
            rel(path),
            "unknown placeholder(s) %s" % ", ".join("{%s}" % u for u in sorted(unknown))
            if unknown else "",
            ("; " if unknown and missing else "") +
            ("missing %s" % ", ".join("{%s}" % m for m in sorted(missing)) if missing else ""),
            ", ".join("{%s}" % p for p in PLACEHOLDERS + EXTRA_PLACEHOLDERS)))

    def fill(text):
        return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], text)

    body = fill(body).strip("\n")
    body = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", body)
    return " ".join(fill(subject).split()), body + "\n"


def encode_subject(subject):
    try:
        subject.encode("ascii")
        return subject
    except UnicodeEncodeError:
        charset = email.charset.Charset("utf-8")
        charset.header_encoding = email.charset.QP      # readable, as git does
        return email.header.Header(subject, charset).encode()


def fill_cover(path, subject, body):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if "*** SUBJECT HERE ***" not in text or "*** BLURB HERE ***" not in text:
        raise ForkError("git format-patch wrote a cover letter without its *** SUBJECT HERE "
                        "*** / *** BLURB HERE *** placeholders (%s): check your format.* "
                        "git config" % path)
    text = text.replace("*** SUBJECT HERE ***", encode_subject(subject), 1)
    text = text.replace("*** BLURB HERE ***", body.rstrip("\n"), 1)
    write_mail(path, text)


def write_mail(path, text):
    """The mail `text` to `path`, saying it is UTF-8 where it is not ASCII
    and its header does not say what it is."""
    head, sep, rest = text.partition("\n\n")
    if not text.isascii() and not re.search(r"^Content-Type:", head, re.M | re.I):
        head += ("\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
                 "Content-Transfer-Encoding: 8bit")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + sep + rest)


def header(path, name):
    with open(path, errors="replace") as fh:
        head = fh.read().split("\n\n", 1)[0]
    m = re.search(r"^%s:[ \t]*(.*(?:\n[ \t].*)*)" % re.escape(name), head, re.M | re.I)
    return " ".join(m.group(1).split()) if m else None


# -- producing and verifying the mails --------------------------------------------

def format_patch(base, head, outdir, n, sender, to, cc, prefix="PATCH", cover=True):
    """git format-patch of base..head into outdir: (the cover letter, [the
    patches]).  Without `cover` (a one-patch series, as b4 sends one) no
    cover letter and no numbering: (None, [the patch])."""
    cmd = ["git"] + FP_CONFIG + ["format-patch"]
    cmd += ["--cover-letter", "--cover-from-description=default", "--numbered"] if cover \
        else ["--no-cover-letter", "--no-numbered"]
    cmd += ["--subject-prefix=%s" % prefix, "--thread=shallow", "--no-base", "--signoff",
            "--from=%s" % sender, "--no-attach", "--no-to", "--no-cc", "-o", outdir]
    if n > 1:
        cmd.append("--reroll-count=%d" % n)
    cmd += ["--to=%s" % a for a in to] + ["--cc=%s" % a for a in cc]
    cmd.append("%s..%s" % (base, head))
    run(cmd, cwd=ktree())
    names = sorted(f for f in os.listdir(outdir) if f.endswith(".patch"))
    letters = [f for f in names if re.match(r"^(v\d+-)?0000-cover-letter\.patch$", f)]
    if not cover:
        if letters or len(names) != 1:
            raise ForkError("git format-patch wrote %d mails into %s, not the one patch "
                            "alone: check your format.* git config" % (len(names), outdir))
        return None, [os.path.join(outdir, names[0])]
    if len(letters) != 1:
        raise ForkError("git format-patch wrote no cover letter into %s" % outdir)
    return (os.path.join(outdir, letters[0]),
            [os.path.join(outdir, f) for f in names if f != letters[0]])


# lines that git am (mailsplit, then git apply) reads as a new mail or as
# a patch when they stand below a patch's `---`
LETTER_BREAKS_RE = re.compile(r"^(From |diff --git |Index: |-{3} |\+{3} |@@ -\d)")


def mix_in_letter(path, body):
    """A one-patch series' letter below its patch's `---`, before the
    diffstat, as b4 sends one (its mixin_cover): git am drops what is
    there, a reader sees it."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    i = text.find("\n---\n")
    if i < 0:
        raise ForkError("%s has no `---` line after its log: cannot put the letter below it"
                        % path)
    i += len("\n---\n")
    for n, line in enumerate(body.splitlines(), 1):
        if LETTER_BREAKS_RE.match(line):
            raise ForkError("line %d of the letter, %r, would be read by git am as a mail or "
                            "a patch below the one patch's `---`: reword or indent it in the "
                            "template or the changelog" % (n, line[:60]))
    write_mail(path, text[:i] + body.strip("\n") + "\n\n" + text[i:])


def recipients(bt, patches, extra_to, extra_cc):
    """(to, cc): get_maintainer.pl's To (--nol) and Cc (--nom) plus extras, deduplicated."""
    to, cc, seen = [], [], set()
    for lst, addrs in ((to, yielded(bt.path, patches, ["--nol"]) + list(extra_to)),
                       (cc, yielded(bt.path, patches, ["--nom"]) + list(extra_cc))):
        for a in addrs:
            if address(a) not in seen:
                seen.add(address(a))
                lst.append(a)
    if not to and cc:
        to.append(cc.pop(0))
    if not to:
        raise ForkError("no recipients: get_maintainer.pl named nobody for this series; give "
                        "--to ADDR or add `To: address` to %s" % rel(mailing("recipients")))
    return to, cc


def check_signoff(patches, name, mail):
    sob = "Signed-off-by: %s <%s>" % (name, mail)
    for p in patches:
        with open(p, errors="replace") as fh:
            msg = fh.read().split("\n---\n", 1)[0]
        if sob not in msg.splitlines():
            raise ForkError("%s lacks `%s` after git format-patch --signoff: is a "
                            "format.signOff/trailer config interfering?"
                            % (os.path.basename(p), sob))


def checkpatch(bt, patches, series):
    bad = []
    for k, p in enumerate(patches, 1):
        with open(p, errors="replace") as fh:
            proc = run_checkpatch_pl(bt.path, fh.read())
        if proc.returncode != 0:
            out = (proc.stdout + proc.stderr).strip().splitlines()
            keep = [l for l in out if re.match(r"^(ERROR|WARNING|CHECK|total):", l)] or out[-5:]
            bad.append("  %d/%d %s:\n    %s" % (k, len(patches), header(p, "Subject"),
                                               "\n    ".join(keep[:12])))
    if bad:
        raise ForkError("checkpatch.pl --strict (of the base tree) fails on:\n%s\nFix those "
                        "commits on the series branch, `%s` and `%s` them, then export again; "
                        "nothing was written." % ("\n".join(bad), fork_command("save", series),
                                                  fork_command("check", series)))


def am_roundtrip(bt, files, commits, what):
    """git am `files` on the pristine base; they must give the commits' trees and authors."""
    bt.reset()
    proc = run(["git", "-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true",
                "am", "-q", "--no-3way", "--no-message-id", "--no-scissors"] + files,
               cwd=bt.path, check=False)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        bt.reset()
        raise ForkError("%s: `git am` on a fresh checkout of the base failed:\n%s\n"
                        "nothing was written" % (what, out[-2000:]))
    got = bt.git(["rev-list", "--reverse", "%s..HEAD" % bt.commit]).split()
    if len(got) != len(commits):
        raise ForkError("%s: `git am` made %d commits, the series has %d; nothing was written"
                        % (what, len(got), len(commits)))
    fmt = "--format=%T %an <%ae>"
    for k, (a, b) in enumerate(zip(got, commits), 1):
        if git(["log", "-1", fmt, a]) != git(["log", "-1", fmt, b]):
            raise ForkError("%s: after `git am`, commit %d/%d differs from %s (%s vs %s); "
                            "nothing was written" % (what, k, len(commits), b[:12],
                                                     git(["log", "-1", fmt, a]),
                                                     git(["log", "-1", fmt, b])))
    bt.reset()


CAPTURE = """#!/bin/sh
# sendmail for `git send-email` run by `tools/fork export`: keeps each message
# and its envelope recipients in DIR, sends nothing.
d=%s
n=$(ls "$d" | grep -c '\\.eml$')
f=$(printf '%%s/%%04d' "$d" "$n")
printf '%%s\\n' "$@" > "$f.rcpt"
cat > "$f.eml"
"""


def send_email(bt, files, sender, to, cc, tmp):
    """Run git send-email on the mails with a sendmail that only captures them.

    --sendmail-cmd is given explicitly: a configured sendemail.sendmailCmd
    would otherwise win over --smtp-server=/path and really send.  Returns
    the captured messages, in order, as they would go out."""
    probe = run(["git", "send-email", "-h"], check=False)
    if "not a git command" in probe.stdout + probe.stderr:
        raise ForkError("git send-email is missing: install it with `apt-get install git-email`")
    sent = ensure_dir(os.path.join(tmp, "sent"))
    script = os.path.join(tmp, "capture-sendmail")
    with open(script, "w") as fh:
        fh.write(CAPTURE % shlex.quote(sent))
    os.chmod(script, 0o755)
    cmd = ["git", "send-email", "--confirm=never", "--no-format-patch", "--no-annotate",
           "--8bit-encoding=UTF-8", "--sendmail-cmd=%s" % shlex.quote(script),
           "--from=%s" % sender, "--to=%s" % to[0]] + files
    proc = run(cmd, cwd=bt.path, check=False, input="", timeout=120)
    out = (proc.stdout + proc.stderr).strip()
    emls = sorted(os.path.join(sent, f) for f in os.listdir(sent) if f.endswith(".eml"))
    if proc.returncode != 0 or len(emls) != len(files):
        raise ForkError("`git send-email` does not accept the mails (exit %d, %d of %d "
                        "messages out):\n%s\nnothing was written"
                        % (proc.returncode, len(emls), len(files), out[-3000:]))
    for eml, f in zip(emls, files):
        with open(eml[:-4] + ".rcpt") as fh:
            rcpt = {address(a) for a in fh.read().split() if "@" in a}
        lost = [a for a in to + cc if address(a) not in rcpt]
        if lost:
            raise ForkError("`git send-email` would not mail %s to %s:\n%s\nnothing was "
                            "written" % (os.path.basename(f), ", ".join(lost), out[-3000:]))
    return emls


def git_config_env(pairs):
    """Environment that gives every git command the config `pairs` (key,
    value) on top of its files, after any GIT_CONFIG_COUNT entries the
    caller's environment already holds."""
    n = int(os.environ.get("GIT_CONFIG_COUNT") or 0)
    env = {"GIT_CONFIG_COUNT": str(n + len(pairs))}
    for k, (key, value) in enumerate(pairs, n):
        env["GIT_CONFIG_KEY_%d" % k] = key
        env["GIT_CONFIG_VALUE_%d" % k] = value
    return env


def b4_roundtrip(bt, emls, commits, tmp, reader):
    """b4 am on the mails as send-email sends them; git am of its output.

    b4 reads the captured mails byte for byte.  (git format-patch folds a
    long Subject, which Debian's b4 0.12 cannot read from a mailbox, but git
    send-email unfolds every header it sends.)  b4 0.12 takes its own
    identity, the Signed-off-by it looks for among the trailers, from git
    config's user.name/user.email only: without user.email `b4 am` stops
    with exit 1 and no reason (a KeyError it catches), although export's
    sender may come from GIT_COMMITTER_NAME/EMAIL alone.  So b4 runs as
    `reader` (name, email), given as git config through the environment."""
    b4 = shutil.which("b4")
    if not b4:
        raise ForkError("b4 is missing: install it with `apt-get install b4` (tools/setup does)")
    maildir = os.path.join(tmp, "sent-maildir")
    md = mailbox.Maildir(maildir, create=True)
    for eml in emls:
        with open(eml, "rb") as fh:
            md.add(fh.read())
    outdir = ensure_dir(os.path.join(tmp, "b4"))
    env = {"XDG_CACHE_HOME": ensure_dir(os.path.join(tmp, "b4-cache")),
           "XDG_DATA_HOME": ensure_dir(os.path.join(tmp, "b4-data"))}
    env.update(git_config_env([("user.name", reader[0]), ("user.email", reader[1])]))
    cmd = [b4, "--offline-mode", "-n", "am", "-m", maildir, "-o", outdir, "--no-cover"]
    msgid = header(emls[0], "Message-Id")
    if msgid:
        cmd.append(msgid.strip("<>"))
    proc = run(cmd, cwd=bt.path, env=env, check=False, input="", timeout=120)
    out = (proc.stdout + proc.stderr).strip()
    made = sorted(os.path.join(outdir, f) for f in os.listdir(outdir) if f.endswith(".mbx"))
    if proc.returncode != 0 or len(made) != 1:
        raise ForkError("`b4 am` cannot read the mails as git send-email sends them (exit %d, "
                        "%d mbox files):\n%s\nnothing was written"
                        % (proc.returncode, len(made), out[-2000:]))
    am_roundtrip(bt, made, commits, "b4 am output")
    return out


def recorded_base(vdir):
    """The distro commit a recorded version was exported on; it must be here."""
    info = read_kv(os.path.join(vdir, "base"))
    base = info.get("base-commit", "")
    if not re.match(r"^[0-9a-f]{40}$", base) or \
            not run(["git", "cat-file", "-e", base + "^{commit}"], cwd=ktree(),
                    check=False).returncode == 0:
        raise ForkError("%s was based on commit %s (Debian %s %s), which the kernel tree "
                        "lacks: import that snapshot (`tools/fork import --tarball ... "
                        "--debian-version %s`) so the range-diff can be made"
                        % (rel(vdir), base[:12] or "?", info.get("package", "?"),
                           info.get("debian-version", "?"), info.get("debian-version", "?")))
    return base


def recreate(vdir, prog):
    """Commit a recorded version's patches onto its base: (base, head)."""
    base = recorded_base(vdir)
    head = apply_patches(base, version_patches(vdir))
    prog.say("re-created %s as %s..%s" % (rel(vdir), base[:12], head[:12]))
    return base, head


def range_diff_text(n, prev, base, patches, prog):
    """git range-diff of v<n-1> (re-created from its record) against these mails.

    Both sides are commits made from mails, so the sender's sign-off and the
    in-body From: lines are on both and only real changes show."""
    old_base, old_head = recreate(prev, prog)
    new_head = apply_patches(base, patches)
    out = git(["range-diff", "--no-color", "%s..%s" % (old_base, old_head),
               "%s..%s" % (base, new_head)]).rstrip()
    return "Range-diff against v%d:\n%s" % (n - 1, out)


def outdir_entries(outdir):
    if not os.path.exists(outdir):
        return []
    if not os.path.isdir(outdir):
        raise ForkError("--outdir %s exists and is not a directory" % outdir)
    return sorted(os.listdir(outdir))


def send_hint(outdir):
    """The one way to send an export (README says the same)."""
    return ("send them with `git send-email %s/*.patch` (To:/Cc: are in every mail)"
            % shlex.quote(outdir))

