"""export: the series as a patch set for the mailing list.

``git format-patch`` of ``distro/<ver>..series/<ver>`` with a cover letter,
``--thread=shallow``, no ``base-commit:`` (the snapshot is not a public
commit: the cover letter names the upstream version and the tarball) and the sender's
``Signed-off-by`` (``-s``, from ``git var GIT_COMMITTER_IDENT``; the sender is
also the ``From:``, with the author kept as an in-body From: line when it
differs).  Subjects are ``[PATCH k/n]`` for v1 -- as git and b4 do, the
first version carries no "v1" -- and ``[PATCH vN k/n]`` from v2 on.  A
series of one patch is sent as b4 sends one: ``[PATCH]`` (``[PATCH vN]``),
no 0/1 cover letter, the letter's body below the patch's ``---`` (where
git am drops it) and its subject line unused.

The output goes to ``work/export/v<N>/`` (or ``--outdir``) and holds only
the mails, so ``git send-email work/export/v<N>/*.patch`` sends them as
they are (To:/Cc: are in every file).
To:/Cc: headers are in every file: the base tree's own
``scripts/get_maintainer.pl`` run as b4 runs it (To: maintainers and
reviewers, ``--nol``; Cc: lists, ``--nom``), for the whole series and the
same on every mail, plus ``mailing/recipients`` and ``--to``/``--cc``.

The cover letter is a series' own ``mailing/<series>/cover-letter.tmpl``,
else ``mailing/cover-letter.tmpl`` (first line: subject)
with its placeholders filled: ``{summary}`` (each patch's subject and first
paragraph), ``{check_table}`` (the cached ``tools/fork check`` results of
exactly these commits), ``{bench}`` (the newest ``work/bench`` run measured
on exactly this series head, else ``latest.md`` with a note; and its
command), ``{base}`` (Debian package, version, upstream stable version,
distro commit), and from v2 on ``{changelog}``
(``mailing/changelog/v<N>.md``, required) and ``{range_diff}`` (against
v<N-1>, re-created from ``mailing/versions/v<N-1>/`` on the distro commit,
so it works on a fresh machine).  A line ``@@ bench-steps RUN...``,
``@@ bench-locks RUN...`` or ``@@ frag RUN`` is rendered from the committed
records as the documents render it (then ``{bench}`` may be left out); each
run it names must have measured this series (every --each step one of its
changes, by patch id; every other kernel its base's or a commit's tree).
A line ``@@ check-summary VER HEAD`` sums up every check table of
``records/checks/VER/HEAD/`` (one item per config and guest test, each
patch, a tree, judged on every run on record of its cell, the base
apart); the trees of those tables' rows must be exactly the trees of the
series and its base (a head whose tables were carried to a reword has
them), and the table that numbers the patches (one holding the base and
every tree) must number them as the series does.

Before anything is written: the kernel tree is clean, ``series/<ver>`` is
what ``patches/`` records, every commit has a passing check (or
``--allow-unchecked``, which the cover letter then says).  A commit is
judged on every run of its tree under the flavour and test: every record
of ``work/cache/check/`` whatever its key (an older kit, QEMU or
e2fsprogs, another ci/guest or fragments), accelerator (TCG, KVM) and
runner (the kit's QEMU, ``lava``, ``lava-server``), and every run of the
committed tables (``records/checks/``).  A failed run anywhere (an error
of the runner is none: it judges nothing) blocks it, a flaky record's
too, unless ``records/checks/explained.json`` explains it (named by its
log as the tables record it, ``logs/check-<commit12>-<date>-<time>.log``,
so it must be in a committed table: records/README.md) or the kit's
known-report rule excused it; the refusal names each such run, the kit
that ran it and the record that holds it.  And one pass is needed under
the current key (this kit, QEMU, e2fsprogs, ci/guest and fragments),
whichever accelerator or runner: what is mailed was checked by the kit
that mails it.  Every mail has the
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

import os
import re
import shutil
import tempfile
import textwrap

from ..core.errors import ForkError
from ..core.paths import check_output_dir, ensure_dir, ktree, wpath
from ..core.progress import Progress
from ..publish.export import (am_roundtrip, b4_roundtrip, base_info, base_text, bench_text,
                              changelog_problem, changelog_text, check_address,
                              check_measured, check_rows, check_signoff, check_summarized,
                              check_text, checkpatch,
                              cover_template, fill_cover,
                              format_patch, header, identity, is_placeholder, mail_commits,
                              mix_in_letter,
                              mailing, outdir_entries, range_diff_text, read_recipients,
                              recipients, recorded_base, recorded_versions, rel, render_template,
                              send_email, send_hint, series_commits, series_mailing,
                              summary_text, uses_bench)
from ..repo import maintainers
from ..repo import series as series_mod
from ..repo.git import git, require_clean, require_ktree
from ..repo.series import fork_command, read_kv
from ..repo.worktree import BaseTree
from ..verify.checkrecords import EXPLAINED

HELP = "format the series for the mailing list: cover letter, recipients, checks"


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
        problem = changelog_problem(n, open(changelog).read())
        if problem:
            raise ForkError("%s %s" % (rel(changelog), problem))
        prev = versions.get(n - 1)
        if prev is None:
            raise ForkError("cannot make the range-diff against v%d: v%d is not recorded in "
                            "%s/ (export it first with `tools/fork export -v %d`, or restore "
                            "that directory from git history)"
                            % (n - 1, n - 1, rel(series_mailing(series, "versions",
                                                                "v%d" % (n - 1))), n - 1))
        recorded_base(prev)

    rows = check_rows(commits, args.config, args.test)
    unchecked = [(k, c, s, why) for k, (c, s, r, why) in enumerate(rows, 1) if r is None]
    if unchecked and not args.allow_unchecked:
        failed = any("\n" in why for *_, why in unchecked)
        raise ForkError("no cached passing `tools/fork check` (config %s, test %s) for:\n%s\n"
                        "%sRun `%s` (it checks every commit and caches passes; a failure stays "
                        "on record), or export anyway with --allow-unchecked (the cover letter "
                        "then says so)"
                        % (args.config, args.test,
                           "\n".join("  %d/%d %s %s (%s)%s" % (
                               k, len(rows), c[:12], s, why.split("\n")[0],
                               "".join("\n      " + l for l in why.split("\n")[1:]))
                               for k, c, s, why in unchecked),
                           ("A failed run blocks until %s explains it, naming its log (the "
                            "run must be in a table of records/checks/, `check --json`; "
                            "records/README.md gives the form); a failure of the commit's "
                            "own is fixed in the commit, and checked again.\n" % EXPLAINED)
                           if failed else "",
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

    template = cover_template(series)
    unchecked_runs = check_measured(template, base, commits)
    check_summarized(template, base, commits)
    for note in unchecked_runs:
        prog.say("warning: " + note)
    values = {
        "summary": summary_text(commits),
        "check_table": check_text(rows, args.config, args.test, args.allow_unchecked),
        # a letter that names its runs (@@ bench-steps ...) may leave {bench} out
        "bench": bench_text(head, prog, base) if uses_bench(template) else "",
        "base": base_text(info, base),
        "changelog": changelog_text(n, changelog, prev_msgid) if changelog else "",
        "range_diff": "{range_diff}",     # filled in once the mails exist
        "version": "v%d" % n,
        "count": str(len(commits)),
    }
    # a series' own letter (the fixes) may leave out the benchmarks; the
    # letter of one patch, which goes below its `---`, its summary (the
    # patch's own subject and log, just above)
    subject, body = render_template(template, values, optional=(
        ("bench",) if template != mailing("cover-letter.tmpl") else ()) +
        (("summary",) if len(commits) == 1 else ()))
    if unchecked_runs:
        note = "\n".join(textwrap.wrap("Note on the benchmark figures: %s."
                                       % "; ".join(unchecked_runs), 72))
        body = (body.replace("{range_diff}", note + "\n\n{range_diff}", 1)
                if "{range_diff}" in body else body + "\n" + note + "\n")

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
            # one patch goes without a 0/1 letter: the letter's body goes
            # below its `---`, as b4 sends one (its subject is the patch's)
            cover, patches = format_patch(base, head, mails, n, sender, to, cc,
                                          args.subject_prefix, cover=len(commits) > 1)
            range_diff = range_diff_text(n, prev, base, patches, prog) if prev else ""
            body = re.sub(r"\n*\{range_diff\}\n*",
                          lambda m: ("\n\n" + range_diff + "\n\n") if range_diff else "\n\n",
                          body).strip("\n") + "\n"
            if cover:
                fill_cover(cover, subject, body)
            else:
                mix_in_letter(patches[0], body)
            check_signoff(patches, name, mail)
            prog.say("checkpatch.pl --strict on %d patches" % len(patches))
            checkpatch(bt, patches, series)
            prog.say("git am round trip on a fresh checkout of %s" % base[:12])
            am_roundtrip(bt, patches, commits, "the exported patches")
            prog.say("git send-email, into a capturing sendmail")
            files = ([cover] if cover else []) + patches
            emls = send_email(bt, files, sender, to, cc, tmp)
            prog.say("b4 am round trip on the captured mails")
            b4_roundtrip(bt, emls, commits, tmp, (name, mail))
            maint = maintainers.generate(series, bt) \
                if series.is_primary and not args.dry_run else None
        # every check passed: write the mails, record the version
        for e in existing:
            os.unlink(os.path.join(outdir, e))
        ensure_dir(outdir)
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
                        info["Upstream"], series_head,
                        header(files[0], "Message-Id") or ""))
        prog.say("recorded %s/ (commit it)" % rel(vdir))
        if maint and maintainers.compare(maint):
            maintainers.write(maint)
            prog.say("regenerated MAINTAINERS (commit it)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prog.say("wrote %d mails to %s; %s" % (len(files), outdir, send_hint(outdir)))
    out(outdir)
    return outdir


def main(args):
    export(args)
    return 0
