"""export: the series as a patch set for the mailing list.

``git format-patch`` of ``distro/<ver>..series/<ver>`` with a cover letter,
``--thread=shallow``, ``--base=<distro commit>`` and the sender's
``Signed-off-by`` (``-s``, from ``git var GIT_COMMITTER_IDENT``; the sender is
also the ``From:``, with the author kept as an in-body From: line when it
differs).  Subjects are ``[PATCH k/n]`` for v1 -- as git and b4 do, the
first version carries no "v1" -- and ``[PATCH vN k/n]`` from v2 on.

The output goes to ``work/export/v<N>/`` (or ``--outdir``) and holds only
the mails, so ``git send-email work/export/v<N>/*.patch`` sends them as
they are (To:/Cc: are in every file).
To:/Cc: headers are in every file: the base tree's own
``scripts/get_maintainer.pl`` run as b4 runs it (To: maintainers and
reviewers, ``--nol``; Cc: lists, ``--nom``), for the whole series and the
same on every mail, plus ``mailing/recipients`` and ``--to``/``--cc``.

The cover letter is ``mailing/cover-letter.tmpl`` (first line: subject)
with its placeholders filled: ``{summary}`` (each patch's subject and first
paragraph), ``{check_table}`` (the cached ``tools/fork check`` results of
exactly these commits), ``{bench}`` (the newest ``work/bench`` run measured
on exactly this series head, else ``latest.md`` with a note; and its
command), ``{base}`` (Debian package, version, upstream stable version,
distro commit), and from v2 on ``{changelog}``
(``mailing/changelog/v<N>.md``, required) and ``{range_diff}`` (against
v<N-1>, re-created from ``mailing/versions/v<N-1>/`` on the distro commit,
so it works on a fresh machine).

Before anything is written: the kernel tree is clean, ``series/<ver>`` is
what ``patches/`` records, every commit has a cached passing check (or
``--allow-unchecked``, which the cover letter then says), every mail has the
sign-off, ``checkpatch.pl --strict`` (the base tree's) passes on every
patch, the files ``git am`` onto a fresh checkout of the distro commit and
give the very trees (and authors) of the series commits, ``git send-email``
accepts them and addresses every recipient (its sendmail is a script that
only captures the messages: nothing is sent), and ``b4 am`` reads the
captured messages -- what the list would receive -- and its output
``git am``s to the same trees.  Only then are the files
written, recorded in ``mailing/versions/v<N>/`` (commit that) and MAINTAINERS
regenerated.  An exported version is never overwritten without ``--force``.

A backport series (``--series backports/6.1``) keeps its versions and
changelogs under ``mailing/backports/6.1/`` and exports to
``work/export/backports/6.1/v<N>/``; it leaves MAINTAINERS alone.
"""

import email.charset
import email.header
import json
import mailbox
import os
import re
import shlex
import shutil
import tempfile
import textwrap

from . import guesttests, kernel
from . import series as series_mod
from .series import read_kv
from .cmd_branches import apply_patches, mailinfo, patch_id_of_commit, patch_id_of_file
from .cmd_maintainers import BaseTree, address, yielded
from .kbuild import run_checkpatch_pl
from . import cmd_maintainers
from .common import (ForkError, Progress, check_output_dir, dep14, fork_command, ensure_dir, git, git_ok, ktree, repo_root,
                     require_clean, require_ktree, rev_parse, run, wpath)

HELP = "format the series for the mailing list: cover letter, recipients, checks"

PLACEHOLDERS = ["summary", "check_table", "bench", "changelog", "range_diff", "base"]
EXTRA_PLACEHOLDERS = ["version", "count"]
NO_BENCH = "no benchmark results recorded (run `tools/fork bench`)"
LORE = "https://lore.kernel.org/r/"
# format-patch must produce the same files whatever the user's diff config
FP_CONFIG = ["-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
             "-c", "diff.relative=false", "-c", "format.suffix=.patch",
             "-c", "format.coverFromDescription=default"]


def add_arguments(p):
    p.add_argument("-v", "--reroll-count", dest="version", type=int, metavar="N",
                   help="version to export (default: one after the highest in mailing/versions/)")
    p.add_argument("--series", default=series_mod.PRIMARY,
                   help="series directory (default: %(default)s)")
    p.add_argument("--to", action="append", default=[], metavar="ADDR",
                   help="another To: recipient (repeatable)")
    p.add_argument("--cc", action="append", default=[], metavar="ADDR",
                   help="another Cc: recipient (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="export a version again that was already exported (overwrites it)")
    p.add_argument("--allow-unchecked", action="store_true",
                   help="export commits without a cached passing `tools/fork check` "
                        "(the cover letter says so)")
    p.add_argument("--outdir", help="write the mails here (default: work/export/v<N>)")
    p.add_argument("--subject-prefix", default="PATCH",
                   help="subject prefix (default: %(default)s; e.g. \"RFC PATCH\")")
    p.add_argument("--config", default="base",
                   help="config flavour whose check results count (default: %(default)s)")
    p.add_argument("--test", default="smoke",
                   help="guest test whose check results count (default: %(default)s)")
    p.add_argument("--keep-author", action="store_true",
                   help="keep each commit's author (an in-body From: line) instead of making "
                        "the sender the author")
    p.add_argument("--dry-run", action="store_true",
                   help="make and check the mails in work/export/dry-run/ without recording "
                        "the version; allowed with a placeholder identity")


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


def check_rows(commits, flavour, test):
    """[(commit, subject, row-or-None)] from the check cache."""
    if test not in guesttests.TESTS:
        raise ForkError("unknown guest test %r: one of %s" % (test, ", ".join(guesttests.TESTS)))
    rows = []
    for commit in commits:
        tree = git(["rev-parse", commit + "^{tree}"])
        row = kernel.cached(tree, flavour, test)
        if row is not None:
            cells = row.get("cells", {})
            ok = row.get("passed", bool(cells)) and cells and \
                all(v in ("pass", "n/a") for v in cells.values())
            if not ok:
                row = None
        rows.append((commit, git(["log", "-1", "--format=%s", commit]), row))
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
    for k, (commit, subject, row) in enumerate(rows, 1):
        if row is None:
            vals = ["not-checked"] + ["-"] * (len(cells) - 1)
            unchecked.append("%d/%d" % (k, len(rows)))
        else:
            vals = [row["cells"].get(c, "-") for c in cells]
        table.append(["%d/%d" % (k, len(rows)), commit[:12]] + vals)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    states = {row.get("details", {}).get("sparse", "not recorded")
              for _, _, row in rows if row is not None}
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
    tag = "debian/%s" % dep14(info["Version"])
    if not git(["rev-parse", "--verify", "-q", "refs/tags/%s^{commit}" % tag], check=False):
        tag = None
    intro = textwrap.fill(
        "Base: Debian's %s %s, which corresponds to upstream stable v%s plus Debian's "
        "patches.  base-commit below is that source, imported reproducibly from the "
        "Debian tarball:" % (info["Package"], info["Version"], info["Upstream"]),
        width=72, break_long_words=False, break_on_hyphens=False)
    return intro + "\n\n" + "\n".join("  %-9s %s" % kv for kv in [
        ("Package:", info["Package"]),
        ("Version:", info["Version"]),
        ("Upstream:", "v" + info["Upstream"]),
        ("Commit:", base + (" (tag %s)" % tag if tag else "")),
        ("SHA256:", info["SHA256"] + " (tarball)")])


def changelog_text(n, path, prev_msgid):
    with open(path) as fh:
        text = fh.read().strip()
    out = "Changes in v%d:\n%s" % (n, text)
    if prev_msgid:
        out += "\n- Link to v%d: %s%s" % (n - 1, LORE, prev_msgid.strip("<>"))
    return out


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
    subject, body = lines[0].strip(), "\n".join(lines[1:])
    found = set(re.findall(r"\{([a-z_]+)\}", subject + body))
    unknown = found - set(values)
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

def format_patch(base, head, outdir, n, sender, to, cc, prefix="PATCH"):
    cmd = ["git"] + FP_CONFIG + [
        "format-patch", "--cover-letter", "--cover-from-description=default", "--numbered",
        "--subject-prefix=%s" % prefix, "--thread=shallow", "--base=%s" % base, "--signoff",
        "--from=%s" % sender, "--no-attach", "--no-to", "--no-cc", "-o", outdir]
    if n > 1:
        cmd.append("--reroll-count=%d" % n)
    cmd += ["--to=%s" % a for a in to] + ["--cc=%s" % a for a in cc]
    cmd.append("%s..%s" % (base, head))
    run(cmd, cwd=ktree())
    names = sorted(f for f in os.listdir(outdir) if f.endswith(".patch"))
    cover = [f for f in names if re.match(r"^(v\d+-)?0000-cover-letter\.patch$", f)]
    if len(cover) != 1:
        raise ForkError("git format-patch wrote no cover letter into %s" % outdir)
    return (os.path.join(outdir, cover[0]),
            [os.path.join(outdir, f) for f in names if f != cover[0]])


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


# -- the verb -----------------------------------------------------------------------

def export(args, out=print):
    prog = Progress("export")
    if args.outdir:
        check_output_dir(args.outdir, "--outdir")
    require_ktree()
    series = series_mod.Series(args.series)
    if not series.patches:
        raise ForkError("%s/series lists no patches: nothing to export (make commits on %s "
                        "and store them with `tools/fork save`)" % (series.rel,
                                                                    series.head_branch))
    require_clean(ktree(), "kernel tree")
    name, mail = identity()
    sender = "%s <%s>" % (name, mail)
    if is_placeholder(mail) and not args.dry_run:
        raise ForkError("the sender %s is a placeholder, not a person: the kernel takes patches "
                        "only with a real name and address that sign the Developer's "
                        "Certificate of Origin (Documentation/process/submitting-patches.rst). "
                        "Set git user.name and user.email, or look at the mails with --dry-run"
                        % sender)
    base, head, commits = series_commits(series)
    if args.keep_author and not args.dry_run:
        fake = sorted({a for a in (git(["log", "-1", "--format=%an <%ae>", c]) for c in commits)
                       if is_placeholder(a)})
        if fake:
            raise ForkError("--keep-author, but %s is a placeholder author: drop --keep-author "
                            "to send as %s, or --dry-run" % (", ".join(fake), sender))
    info = base_info(series, base)

    versions = recorded_versions(series)
    n = args.version if args.version is not None else max(versions, default=0) + 1
    if n < 1:
        raise ForkError("-v %d: versions start at 1" % n)
    default_out = wpath("export", "v%d" % n) if series.is_primary else \
        wpath("export", series.rel, "v%d" % n)
    if args.dry_run:
        default_out = wpath("export", "dry-run", series.rel, "v%d" % n)
    outdir = os.path.abspath(args.outdir or default_out)
    vdir = series_mailing(series, "versions", "v%d" % n)
    if n in versions and not args.force and not args.dry_run:
        old = read_kv(os.path.join(versions[n], "base"))
        raise ForkError("v%d was already exported (%s, series head %s): export the next "
                        "version with `tools/fork export -v %d` (after writing "
                        "%s), or pass --force to export v%d again and "
                        "overwrite it" % (n, rel(versions[n]), old.get("head", "?")[:12],
                                          max(versions) + 1,
                                          rel(series_mailing(series, "changelog", "v%d.md"
                                                             % (max(versions) + 1))), n))
    existing = outdir_entries(outdir)
    if existing and not args.force and not args.dry_run:
        raise ForkError("%s already holds %d files (%s...): pass --force to replace them, or "
                        "choose another --outdir" % (outdir, len(existing), existing[0]))
    if existing and any(not e.endswith(".patch") for e in existing):
        raise ForkError("%s holds files other than *.patch (%s): export only replaces mails; "
                        "choose an empty --outdir" % (
                            outdir, ", ".join(e for e in existing if not e.endswith(".patch"))))
    changelog = prev = None
    if n > 1:
        changelog = series_mailing(series, "changelog", "v%d.md" % n)
        if not os.path.isfile(changelog) or not open(changelog).read().strip():
            raise ForkError("v%d needs a changelog: write %s (what changed since v%d, one "
                            "`- ...` line per change, crediting reviewers), then export again"
                            % (n, rel(changelog), n - 1))
        prev = versions.get(n - 1)
        if prev is None:
            raise ForkError("cannot make the range-diff against v%d: v%d is not recorded in "
                            "%s/ (export it first with `tools/fork export -v %d`, or restore "
                            "that directory from git history)"
                            % (n - 1, n - 1, rel(series_mailing(series, "versions",
                                                                "v%d" % (n - 1))), n - 1))
        recorded_base(prev)

    rows = check_rows(commits, args.config, args.test)
    unchecked = [(k, c, s) for k, (c, s, r) in enumerate(rows, 1) if r is None]
    if unchecked and not args.allow_unchecked:
        raise ForkError("no cached passing `tools/fork check` (config %s, test %s) for:\n%s\n"
                        "Run `%s` (it checks every commit and caches passes), or "
                        "export anyway with --allow-unchecked (the cover letter then says so)"
                        % (args.config, args.test,
                           "\n".join("  %d/%d %s %s" % (k, len(rows), c[:12], s)
                                     for k, c, s in unchecked),
                           fork_command("check", series, "--config", args.config,
                                        "--test", args.test)))
    prog.say("v%d of %s: %d patches on %s %s (%s), checks: %d cached, %d unchecked"
             % (n, series.rel, len(commits), info["Package"], info["Version"], base[:12],
                len(rows) - len(unchecked), len(unchecked)))

    extra_to, extra_cc = read_recipients(mailing("recipients"))
    extra_to += [check_address(a, "--to") for a in args.to]
    extra_cc += [check_address(a, "--cc") for a in args.cc]

    prev_msgid = None
    if prev:
        prev_msgid = read_kv(os.path.join(prev, "base")).get("cover-message-id")

    values = {
        "summary": summary_text(commits),
        "check_table": check_text(rows, args.config, args.test, args.allow_unchecked),
        "bench": bench_text(head, prog, base),
        "base": base_text(info, base),
        "changelog": changelog_text(n, changelog, prev_msgid) if changelog else "",
        "range_diff": "{range_diff}",     # filled in once the mails exist
        "version": "v%d" % n,
        "count": str(len(commits)),
    }
    template = cover_template(series)
    # a series' own letter (the fixes) may leave out the benchmarks
    subject, body = render_template(template, values, optional=(
        ("bench",) if template != mailing("cover-letter.tmpl") else ()))

    # what is mailed: the sender as author (unless --keep-author), no
    # placeholder sign-offs; the trees are those that were checked
    series_head = head
    commits = mail_commits(base, commits, None if args.keep_author else (name, mail))
    head = commits[-1]
    touched = git(["diff", "--name-only", "--no-renames", base, head]).splitlines()
    dirs = sorted({os.path.dirname(f) for f in touched if os.path.dirname(f)})
    tmp = tempfile.mkdtemp(prefix="export-", dir=ensure_dir(wpath("tmp")))
    try:
        prog.say("sparse checkout of %s (%s) for the checks" % (series.distro_branch, base[:12]))
        with BaseTree(base, dirs, prefix="export-wt-") as bt:
            _, raw = format_patch(base, head, ensure_dir(os.path.join(tmp, "raw")), n,
                                  sender, [], [], args.subject_prefix)
            to, cc = recipients(bt, raw, extra_to, extra_cc)
            prog.say("To: %s" % ", ".join(to))
            prog.say("Cc: %s" % ", ".join(cc))
            mails = ensure_dir(os.path.join(tmp, "out"))
            cover, patches = format_patch(base, head, mails, n, sender, to, cc,
                                          args.subject_prefix)
            range_diff = range_diff_text(n, prev, base, patches, prog) if prev else ""
            body = re.sub(r"\n*\{range_diff\}\n*",
                          lambda m: ("\n\n" + range_diff + "\n\n") if range_diff else "\n\n",
                          body).strip("\n") + "\n"
            fill_cover(cover, subject, body)
            check_signoff(patches, name, mail)
            prog.say("checkpatch.pl --strict on %d patches" % len(patches))
            checkpatch(bt, patches, series)
            prog.say("git am round trip on a fresh checkout of %s" % base[:12])
            am_roundtrip(bt, patches, commits, "the exported patches")
            prog.say("git send-email, into a capturing sendmail")
            emls = send_email(bt, [cover] + patches, sender, to, cc, tmp)
            prog.say("b4 am round trip on the captured mails")
            b4_roundtrip(bt, emls, commits, tmp, (name, mail))
            maint = cmd_maintainers.generate(series, bt) \
                if series.is_primary and not args.dry_run else None
        # every check passed: write the mails, record the version
        for e in existing:
            os.unlink(os.path.join(outdir, e))
        ensure_dir(outdir)
        files = [cover] + patches
        for f in files:
            shutil.copyfile(f, os.path.join(outdir, os.path.basename(f)))
        if args.dry_run:
            prog.say("dry run: %d mails in %s, as %s; nothing recorded (not for sending)"
                     % (len(files), outdir, sender))
            out(outdir)
            return outdir
        if os.path.isdir(vdir):
            shutil.rmtree(vdir)
        ensure_dir(vdir)
        for f in files:
            shutil.copyfile(f, os.path.join(vdir, os.path.basename(f)))
        with open(os.path.join(vdir, "series"), "w") as fh:
            fh.write("".join(os.path.basename(p) + "\n" for p in patches))
        with open(os.path.join(vdir, "base"), "w") as fh:
            fh.write("# v%d of %s as exported by `tools/fork export`: the mails in this\n"
                     "# directory, so that later versions can range-diff against it.\n"
                     "version: %d\nbase-commit: %s\npackage: %s\ndebian-version: %s\n"
                     "upstream: %s\nhead: %s\ncover-message-id: %s\n"
                     % (n, series.rel, n, base, info["Package"], info["Version"],
                        info["Upstream"], series_head, header(cover, "Message-Id") or ""))
        prog.say("recorded %s/ (commit it)" % rel(vdir))
        if maint and cmd_maintainers.compare(maint):
            cmd_maintainers.write(maint)
            prog.say("regenerated MAINTAINERS (commit it)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prog.say("wrote %d mails to %s; %s" % (len(files), outdir, send_hint(outdir)))
    out(outdir)
    return outdir


def send_hint(outdir):
    """The one way to send an export (README says the same)."""
    return ("send them with `git send-email %s/*.patch` (To:/Cc: are in every mail)"
            % shlex.quote(outdir))


def main(args):
    export(args)
    return 0
