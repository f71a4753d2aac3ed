"""fork export / fork maintainers on a tiny synthetic kernel tree.

The fake linux-source tarball of conftest gets a MAINTAINERS with an EXT2
FILE SYSTEM section and fake scripts/get_maintainer.pl (answers from that
MAINTAINERS, as the real one would for fs/ext2 patches) and
scripts/checkpatch.pl (passes unless the patch holds CHECKPATCH_BAD or lacks
a Signed-off-by).  The series is three commits made in a scratch clone and
pushed to series/9.9; `tools/fork check` results are faked in its cache.
git send-email (Debian's git-email) and b4 are the real ones.
"""

import email.header
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import AUTHOR, KERNEL_FILES, KVER, ROOT, Kit, make_tarball

FAKE_MAINTAINERS = """\
List of maintainers
===================

Descriptions of section entries and preferred order
	M: *Mail* patches to: FullName <address@domain>

Maintainers List
----------------

EXT2 FILE SYSTEM
M:	Jan Kara <jack@suse.com>
R:	Rita Reviewer <rita@example.org>
L:	linux-ext4@vger.kernel.org
S:	Maintained
F:	Documentation/filesystems/ext2.rst
T:	git git://git.kernel.org/pub/scm/linux/kernel/git/jack/linux-fs.git
F:	fs/ext2/
F:	include/linux/ext2*

EXT4 FILE SYSTEM
M:	"Theodore Ts'o" <tytso@mit.edu>
L:	linux-ext4@vger.kernel.org
S:	Maintained
F:	fs/ext4/

THE REST
M:	Linus Torvalds <torvalds@linux-foundation.org>
L:	linux-kernel@vger.kernel.org
S:	Buried alive in reporters
F:	*
F:	*/
"""

# Answers like the real one for patches touching fs/ext2 (and THE REST).
FAKE_GET_MAINTAINER = r"""#!/usr/bin/perl
use strict;
use warnings;
my %opt;
my @files;
for (@ARGV) {
    if (/^--(\w[\w-]*)$/) { $opt{$1} = 1 } else { push @files, $_ }
}
die "fake get_maintainer: not at the top of a kernel tree\n" unless -f "MAINTAINERS";
my $ext2 = 0;
for my $f (@files) {
    open(my $fh, '<', $f) or die "fake get_maintainer: $f: $!\n";
    while (<$fh>) { $ext2 = 1 if m{^\+\+\+ b/fs/ext2/}; }
}
open(my $mf, '<', "MAINTAINERS") or die;
my %sec; my $cur;
while (<$mf>) {
    if (/^\s*$/) { $cur = undef; next }
    if (/^[A-Z]:/) { $sec{$cur} .= $_ if defined $cur; next }
    $cur = $_; chomp $cur; $sec{$cur} = "$cur\n";
}
my @names = (($ext2 ? ("EXT2 FILE SYSTEM") : ()), "THE REST");
if ($opt{sections}) { print "$sec{$_}\n" for @names; exit 0 }
if ($ext2) {
    print "Jan Kara <jack\@suse.com>\nRita Reviewer <rita\@example.org>\n" unless $opt{nom};
    print "linux-ext4\@vger.kernel.org\n" unless $opt{nol};
    print "Rita Reviewer <rita\@example.org>\n" if $opt{nom} && !$opt{nol};
}
print "linux-kernel\@vger.kernel.org\n" unless $opt{nol};
"""

FAKE_CHECKPATCH = r"""#!/usr/bin/perl
use strict;
use warnings;
my $file = $ARGV[-1];
local $/;
my $p;
if ($file eq '-') {
    $p = <STDIN>;
} else {
    open(my $fh, '<', $file) or die "fake checkpatch: $file: $!\n";
    $p = <$fh>;
}
if ($ENV{FAKE_CHECKPATCH_LOG}) {
    open(my $log, '>>', $ENV{FAKE_CHECKPATCH_LOG}) or die;
    # whether checkpatch could look cited commits up (a .git in its cwd)
    my $git = (-e ($ENV{GIT_DIR} // ".git")) ? "yes" : "no";
    print $log join(' ', @ARGV), " git=$git\n";
}
if ($p =~ /CHECKPATCH_BAD/) {
    print "ERROR: CHECKPATCH_BAD marker in the patch\n";
    print "total: 1 errors, 0 warnings, 0 checks, 3 lines checked\n";
    exit 1;
}
if ($p !~ /^Signed-off-by: /m) {
    print "ERROR: Missing Signed-off-by: line(s)\n";
    print "total: 1 errors, 0 warnings, 0 checks, 3 lines checked\n";
    exit 1;
}
print "total: 0 errors, 0 warnings, 0 checks, 3 lines checked\n";
"""

EXPORT_FILES = dict(KERNEL_FILES)
EXPORT_FILES.update({
    "MAINTAINERS": (0o644, FAKE_MAINTAINERS),
    "scripts/get_maintainer.pl": (0o755, FAKE_GET_MAINTAINER),
    "scripts/checkpatch.pl": (0o755, FAKE_CHECKPATCH),
})

SOB = "Signed-off-by: A U Thor <author@example.org>"
SERIES = [
    ("fs/ext2/balloc.c", "/* balloc line 10 */\n", "/* balloc line 10: faster */\n",
     "ext2: make balloc faster", "Replace the na\u00efve slow path.\n\n" + SOB),
    ("fs/ext2/inode.c", "/* inode line 5 */\n", "/* inode line 5: scalable */\n",
     "ext2: scale inode allocation",
     "Per-group locks instead of one lock\nfor the whole filesystem.\n\n"
     "A second paragraph that is not in the summary.\n\n" + SOB),
    ("fs/ext2/balloc.c", "/* balloc line 15 */\n", "/* balloc line 15: locking */\n",
     "ext2: document the allocator locking", "Say which lock covers what.\n\n" + SOB),
]
# v2: the second patch reworked
SERIES_V2 = list(SERIES)
SERIES_V2[1] = ("fs/ext2/inode.c", "/* inode line 5 */\n", "/* inode line 5: scalable v2 */\n",
                "ext2: scale inode allocation",
                "Per-group locks instead of one lock\nfor the whole filesystem.\n\n" + SOB)

TMPL = ROOT / "mailing" / "cover-letter.tmpl"
RECIPIENTS = ROOT / "mailing" / "recipients"
IDENT = "Test User <test@example.org>"


def have_send_email():
    proc = subprocess.run(["git", "send-email", "-h"], capture_output=True, text=True)
    if "not a git command" in proc.stderr:
        subprocess.run(["apt-get", "install", "-y", "-q", "git-email"], capture_output=True,
                       timeout=300)
        proc = subprocess.run(["git", "send-email", "-h"], capture_output=True, text=True)
    return "not a git command" not in proc.stderr


@pytest.fixture(scope="session")
def send_email():
    if not have_send_email():
        pytest.skip("git send-email is missing and `apt-get install git-email` failed")
    if not shutil.which("b4"):
        pytest.skip("b4 is not installed: run tools/setup (it installs Debian's b4)")
    return True


@pytest.fixture(scope="session")
def export_tarball(tmp_path_factory):
    d = tmp_path_factory.mktemp("export-tarball")
    return make_tarball(d / "linux-source-9.9.tar.xz", files=EXPORT_FILES)


class ExportKit(Kit):
    def push_series(self, patches=SERIES):
        """Commit `patches`, store them in patches/, point series/9.9 at them."""
        ids = self.make_patches(patches)
        self.git("push", "-q", "-f", str(self.ktree), "work:refs/heads/series/%s" % KVER,
                 cwd=self.tmp / "scratch")
        self.commit_repo("series")
        return ids

    def fake_checks(self, commits):
        from forkkit.verify import kernel
        for c in commits:
            tree = self.rev(c + "^{tree}")
            row = {"commit": c, "tree": tree, "subject": "x", "flavour": "base",
                   "test": "smoke", "cells": {k: "pass" for k in kernel.CELLS},
                   "details": {}, "seconds": 42.0, "passed": True,
                   "image_sha256": "5" * 64}
            with open(kernel.cache_path(tree, "base", "smoke"), "w") as fh:
                json.dump(row, fh)

    def outdir(self, n):
        return self.work / "export" / ("v%d" % n)

    def versions(self):
        d = self.repo / "mailing" / "versions"
        return sorted(os.listdir(d)) if d.is_dir() else []

    def mails(self, n):
        d = self.outdir(n)
        return [d / f for f in sorted(os.listdir(d))]


def export_kit(tmp_path, export_tarball, monkeypatch, patches=SERIES):
    """An ExportKit whose series is `patches`, each checked."""
    kit = ExportKit(tmp_path, export_tarball, monkeypatch)
    (kit.repo / "mailing").mkdir()
    shutil.copyfile(TMPL, kit.repo / "mailing" / "cover-letter.tmpl")
    shutil.copyfile(RECIPIENTS, kit.repo / "mailing" / "recipients")
    kit.do_import()
    kit.ids = kit.push_series(patches)
    kit.fake_checks(kit.ids)
    return kit


@pytest.fixture
def ek(tmp_path, export_tarball, monkeypatch):
    return export_kit(tmp_path, export_tarball, monkeypatch)


def headers(path):
    head = path.read_text().split("\n\n", 1)[0]
    out = {}
    for m in re.finditer(r"^([A-Za-z-]+): (.*(?:\n[ \t].*)*)", head, re.M):
        out.setdefault(m.group(1).lower(), " ".join(m.group(2).split()))
    return out


def assert_nothing_written(kit, n):
    assert not kit.outdir(n).exists()
    assert "v%d" % n not in kit.versions()
    assert kit.git("worktree", "list", "--porcelain").count("worktree ") == 1
    assert not list((kit.work / "tmp").glob("export-*"))


# -- the good path ------------------------------------------------------------

def test_export_v1(ek, send_email):
    log = ek.tmp / "checkpatch.log"
    res = ek.fork("export", env={"FAKE_CHECKPATCH_LOG": str(log)})
    assert res.rc == 0, res
    out = ek.outdir(1)
    assert res.out.strip() == str(out)
    names = sorted(os.listdir(out))
    assert names == ["0000-cover-letter.patch", "0001-ext2-make-balloc-faster.patch",
                     "0002-ext2-scale-inode-allocation.patch",
                     "0003-ext2-document-the-allocator-locking.patch"]
    cover, *patches = ek.mails(1)
    base = ek.rev("distro/9.9")

    # subjects: git's numbering, no "v1"
    assert headers(cover)["subject"] == \
        "[PATCH 0/3] ext2: finish Alex Tomas's scalable block and inode allocation"
    for k, (p, s) in enumerate(zip(patches, SERIES), 1):
        assert headers(p)["subject"] == "[PATCH %d/3] %s" % (k, s[3])

    # recipients in every mail, from get_maintainer.pl: To maintainers+reviewers, Cc lists
    for f in [cover] + patches:
        h = headers(f)
        assert h["to"] == "Jan Kara <jack@suse.com>, Rita Reviewer <rita@example.org>"
        assert h["cc"] == "linux-ext4@vger.kernel.org, linux-kernel@vger.kernel.org"
        assert h["from"] == IDENT
        # threaded to the cover letter
        if f != cover:
            assert h["in-reply-to"] == headers(cover)["message-id"]

    # the sender is the author (no in-body From:); the author's sign-off
    # stays, the sender's follows
    for p in patches:
        text = p.read_text()
        assert text.index(SOB) < text.index("Signed-off-by: %s" % IDENT)
        assert "\nFrom: A U Thor <author@example.org>\n" not in text

    # the cover letter: placeholders filled, summary, checks, bench, base
    text = cover.read_text()
    assert "{" not in text and "***" not in text
    assert "In 2003 Alex Tomas posted" in text
    assert "1/3 ext2: make balloc faster\n      Replace the na\u00efve slow path.\n" in text
    assert headers(cover)["content-type"] == "text/plain; charset=UTF-8"
    assert "2/3 ext2: scale inode allocation\n      Per-group locks instead of one lock\n" \
           "      for the whole filesystem.\n" in text
    assert "A second paragraph" not in text.split("---")[0].split("The patches:")[1][:400]
    for k, c in enumerate(ek.ids, 1):
        assert re.search(r"^  %d/3 +%s +pass +pass +pass +pass +pass +pass$" % (k, c[:12]), text,
                         re.M), text
    assert "no benchmark results recorded (run `tools/fork bench`)" in text
    assert "linux-source-9.9 9.9.1-1" in text and "stable v9.9.1" in text
    assert base in text and "(tag debian/9.9.1-1)" in text
    # the snapshot is no public commit: named by version and tarball, no base-commit
    assert "base-commit:" not in text and "not a public commit" in text
    assert "Changes in" not in text and "Range-diff" not in text
    assert "WARNING" not in text

    # checkpatch --strict ran on each mailed patch, with the base tree as root
    runs = log.read_text().splitlines()
    assert len(runs) == 3 and all("--strict" in r and "--root=" in r for r in runs)
    # the snapshot has no upstream history to resolve cited commit ids
    # against: checkpatch runs where it finds no repository, so it holds
    # every citation to `commit <sha> ("title")` instead of skipping the check
    assert all("--ignore UNKNOWN_COMMIT_ID" in r and r.endswith(" git=no") for r in runs)

    # recorded for later range-diffs
    vdir = ek.repo / "mailing" / "versions" / "v1"
    assert sorted(os.listdir(vdir)) == sorted(names + ["base", "series"])
    info = (vdir / "base").read_text()
    assert "base-commit: %s" % base in info and "head: %s" % ek.ids[-1] in info
    assert "cover-message-id: %s" % headers(cover)["message-id"] in info

    # MAINTAINERS regenerated
    maint = (ek.repo / "MAINTAINERS").read_text()
    assert "\next2: make balloc faster\nM:\tJan Kara <jack@suse.com>\n" \
           "R:\tRita Reviewer <rita@example.org>\nL:\tlinux-ext4@vger.kernel.org\n" \
           "L:\tlinux-kernel@vger.kernel.org\nS:\tMaintained\nF:\tfs/ext2/balloc.c\n" in maint

    # progress names every check; nothing left behind
    for stage in ("checkpatch.pl --strict", "git am round trip", "git send-email",
                  "b4 am round trip"):
        assert stage in res.err
    assert ek.git("worktree", "list", "--porcelain").count("worktree ") == 1
    assert not list((ek.work / "tmp").glob("export-*"))


@pytest.fixture
def ek_one(tmp_path, export_tarball, monkeypatch):
    """An ExportKit whose series is one patch."""
    return export_kit(tmp_path, export_tarball, monkeypatch, SERIES[:1])


def test_one_patch_goes_without_a_cover_letter(ek_one, send_email, tmp_path):
    """As b4 sends a one-patch series: `[PATCH]`, no 0/1 letter; the
    letter's body below the `---`, which git am drops."""
    ek = ek_one
    res = ek.fork("export")
    assert res.rc == 0, res
    names = sorted(os.listdir(ek.outdir(1)))
    assert names == ["0001-ext2-make-balloc-faster.patch"]
    (patch,) = ek.mails(1)
    h = headers(patch)
    assert h["subject"] == "[PATCH] ext2: make balloc faster"
    assert "in-reply-to" not in h
    assert h["content-type"] == "text/plain; charset=UTF-8"
    text = patch.read_text()
    log, basement = text.split("\n---\n", 1)
    assert "In 2003 Alex Tomas posted" not in log
    letter, diff = basement.split(" fs/ext2/balloc.c | ", 1)
    assert "In 2003 Alex Tomas posted" in letter
    assert re.search(r"^  1/1 +%s +pass" % ek.ids[0][:12], letter, re.M), letter
    assert "{" not in letter and "***" not in letter
    # git am takes the log and the change alone
    clone = tmp_path / "reader"
    ek.git("clone", "-q", "--no-checkout", str(ek.ktree), str(clone), cwd=tmp_path)
    ek.git("checkout", "-q", "--detach", "origin/distro/9.9", cwd=clone)
    ek.git("am", "-q", str(patch), cwd=clone)
    assert ek.rev("HEAD^{tree}", cwd=clone) == ek.rev("series/9.9^{tree}")
    assert "Alex Tomas" not in ek.git("log", "-1", "--format=%B", cwd=clone)
    # the recorded version names the patch's Message-Id for v2's link
    info = (ek.repo / "mailing" / "versions" / "v1" / "base").read_text()
    assert "cover-message-id: %s" % h["message-id"] in info


@pytest.mark.parametrize("line", ["From 2003 to today nothing changed", "diff --git a/x b/x",
                                  "--- a/fs/ext2/super.c", "@@ -1,2 +1,2 @@"])
def test_a_one_patch_letter_git_am_would_misread_is_refused(tmp_path, line):
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    mail = tmp_path / "0001-x.patch"
    text = "Subject: [PATCH] x\n\nlog\n---\n f | 1 +\n\ndiff --git a/f b/f\n"
    mail.write_text(text)
    with pytest.raises(ForkError) as e:
        cmd_export.mix_in_letter(str(mail), "Some words.\n%s\n" % line)
    assert "\n" not in str(e.value) and "line 2 of the letter" in str(e.value)
    assert mail.read_text() == text
    cmd_export.mix_in_letter(str(mail), "Some words.\n  %s\n" % line)
    assert mail.read_text() == text.replace("---\n", "---\nSome words.\n  %s\n\n" % line)


def test_mails_work_with_git_am_send_email_and_b4(ek, send_email, tmp_path):
    """What the list sees: the mails git am onto the base and give the series'
    trees; git send-email accepts them and mails everyone; b4 reads the mbox."""
    assert ek.fork("export", "--to", "Boss <boss@example.org>").rc == 0
    mails = [str(p) for p in ek.mails(1)]
    # git am by hand in a reader's clone
    clone = tmp_path / "reader"
    ek.git("clone", "-q", "--no-checkout", str(ek.ktree), str(clone), cwd=tmp_path)
    ek.git("checkout", "-q", "--detach", "origin/distro/9.9", cwd=clone)
    ek.git("am", "-q", *mails[1:], cwd=clone)
    assert ek.rev("HEAD^{tree}", cwd=clone) == ek.rev("series/9.9^{tree}")
    assert ek.git("log", "-3", "--format=%an|%s", cwd=clone).splitlines() == \
        ["Test User|%s" % s[3] for s in reversed(SERIES)]
    # git send-email, dry run
    proc = subprocess.run(
        ["git", "send-email", "--dry-run", "--confirm=never", "--no-format-patch",
         "--smtp-server=/bin/true", "--to=boss@example.org"] + mails,
        cwd=str(ek.ktree), capture_output=True, text=True, input="", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("Result: OK") == 4
    envelopes = re.findall(r"^Sendmail: /bin/true (.*)$", proc.stdout, re.M)
    assert len(envelopes) == 4
    for env in envelopes:
        for addr in ("jack@suse.com", "rita@example.org", "linux-ext4@vger.kernel.org",
                     "linux-kernel@vger.kernel.org", "boss@example.org"):
            assert addr in env
    # b4 am on the concatenated mbox, then git am of b4's output
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(open(m).read() for m in mails))
    out = tmp_path / "b4"
    out.mkdir()
    proc = subprocess.run(["b4", "--offline-mode", "-n", "am", "-m", str(mbox), "-o", str(out)],
                          cwd=str(ek.ktree), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Total patches: 3" in proc.stdout + proc.stderr
    mbx = list(out.glob("*.mbx"))
    assert len(mbx) == 1
    ek.git("checkout", "-q", "--detach", "origin/distro/9.9", cwd=clone)
    ek.git("am", "-q", str(mbx[0]), cwd=clone)
    assert ek.rev("HEAD^{tree}", cwd=clone) == ek.rev("series/9.9^{tree}")


# The subject of the primary series' first patch.  git format-patch folds it
# over two header lines (RFC 5322), which Debian's b4 0.12 cannot read from a
# mailbox (ValueError in get_am_message()); git send-email unfolds every
# header of the file it sends, and the round trip reads what it sends.
LONG_SUBJECT = "ext2: mark the group counts and bitmaps read without the group lock"
LONG_SERIES = [(SERIES[0][:3] + (LONG_SUBJECT, "Read them locklessly.\n"
                "From now on the counts are READ_ONCE (a body line opening with\n"
                "\"From \", which an mbox must quote).\n\n" + SOB))] + SERIES[1:]


def test_long_subjects_pass_the_b4_round_trip(ek, send_email):
    """A folded Subject (and a body line opening with "From ") goes through
    git send-email and the real b4 am, and the export is written."""
    ek.fake_checks(ek.push_series(LONG_SERIES))
    res = ek.fork("export")
    assert res.rc == 0, res
    assert "b4 am round trip on the captured mails" in res.err
    first = ek.mails(1)[1]
    raw = first.read_text().split("\n\n", 1)[0]
    assert re.search(r"^Subject: \[PATCH 1/3\] ext2: mark[^\n]*\n[ \t]+\S", raw, re.M), raw
    assert headers(first)["subject"] == "[PATCH 1/3] " + LONG_SUBJECT
    assert ek.versions() == ["v1"]


def test_sender_from_the_environment_passes_the_b4_round_trip(ek, send_email):
    """The sender given only by GIT_COMMITTER_NAME/EMAIL, no user.* in any git
    config (a fresh machine, CI): b4 am, which takes its own identity from
    git config, must still read the mails."""
    empty = ek.tmp / "empty-gitconfig"
    empty.write_text("")
    env = {"GIT_CONFIG_GLOBAL": str(empty), "GIT_COMMITTER_NAME": "Ext2 Dev",
           "GIT_COMMITTER_EMAIL": "ext2-dev@example.org"}
    assert ek.git("config", "user.email", env=env, check=False) == ""
    ek.fake_checks(ek.push_series(LONG_SERIES))
    res = ek.fork("export", "--dry-run", "--subject-prefix", "PATCH v3", env=env)
    assert res.rc == 0, res
    assert "b4 am round trip on the captured mails" in res.err
    first = sorted(os.listdir(res.out.strip()))[1]
    h = headers(ek.work / "export" / "dry-run" / "patches" / "v1" / first)
    assert h["subject"] == "[PATCH v3 1/3] " + LONG_SUBJECT
    assert h["from"] == "Ext2 Dev <ext2-dev@example.org>"


def test_bench_and_extra_recipients(ek, send_email):
    bench = ek.work / "bench"
    bench.mkdir()
    (bench / "latest.md").write_text("| test | base | series |\n|---|---|---|\n"
                                     "| creates/s | 100 | 180 |\n")
    (bench / "latest.cmd").write_text(
        "#!/bin/sh\n# fork bench 1: A = distro/9.9, B = series/9.9\n"
        "cd /somewhere && flock /tmp/heavy.lock tools/fork bench distro/9.9 series/9.9 "
        "--reps 5\n")
    (bench / "latest.json").write_text(json.dumps(
        {"kernels": {"A": {"commit": ek.rev("distro/9.9")}, "B": {"commit": ek.ids[1]}}}))
    rec = ek.repo / "mailing" / "recipients"
    rec.write_text(rec.read_text() + "Cc: Ext2 Fan <fan@example.org>\nTo: jack@suse.com\n")
    # a sender long enough that format-patch folds From: (b4 0.12 cannot
    # read a folded From:; git send-email unfolds it, and b4 reads what it sends)
    long_ident = ("Test User With A Rather Long Name",
                  "test.user.with.a.long.address@subdomain.example.org")
    cfg = ek.tmp / "long-gitconfig"
    cfg.write_text("[user]\n\tname = %s\n\temail = %s\n" % long_ident)
    res = ek.fork("export", "--to", "Boss <boss@example.org>", "--cc", "lkml@example.org",
                  "--subject-prefix", "RFC PATCH", env={"GIT_CONFIG_GLOBAL": str(cfg)})
    assert res.rc == 0, res
    cover = ek.mails(1)[0]
    h = headers(cover)
    assert h["from"] == "%s <%s>" % long_ident
    assert h["subject"].startswith("[RFC PATCH 0/3] ext2: finish")
    assert "Signed-off-by: %s <%s>" % long_ident in ek.mails(1)[1].read_text()
    assert h["to"] == ("Jan Kara <jack@suse.com>, Rita Reviewer <rita@example.org>, "
                       "Boss <boss@example.org>")
    assert h["cc"] == ("linux-ext4@vger.kernel.org, linux-kernel@vger.kernel.org, "
                       "Ext2 Fan <fan@example.org>, lkml@example.org")
    text = cover.read_text()
    assert "Benchmark results, from `tools/fork bench distro/9.9 series/9.9 --reps 5`:" in text
    # measured on an older head: the cover letter says so
    assert "Note: these results were measured on %s, not on the series as posted (%s)." \
        % (ek.ids[1][:12], ek.ids[2][:12]) in text
    assert "| creates/s | 100 | 180 |" in text
    assert "no benchmark results" not in text


def test_bench_prefers_the_run_measured_on_the_series_head(ek, send_email):
    bench = ek.work / "bench"
    head = ek.ids[-1]
    for name, rev, row in (("20260101-000000", head, "| statfs | 700 | 7 |"),
                           ("20260102-000000", ek.ids[0], "| other series | 1 | 2 |")):
        d = bench / name
        d.mkdir(parents=True)
        (d / "bench.md").write_text("| test | A | B |\n|---|---|---|\n%s\n" % row)
        (d / "bench.cmd").write_text("#!/bin/sh\ncd /x && tools/fork bench --only %s\n" % name)
        (d / "bench.json").write_text(json.dumps({"kernels": {"B": {"commit": rev}}}))
    for ext in ("md", "cmd", "json"):  # latest = the newer run, of another head
        (bench / ("latest." + ext)).symlink_to("20260102-000000/bench." + ext)
    res = ek.fork("export")
    assert res.rc == 0, res
    text = ek.mails(1)[0].read_text()
    assert "from `tools/fork bench --only 20260101-000000`" in text
    assert "| statfs | 700 | 7 |" in text
    assert "other series" not in text and "Note: these results" not in text


def test_bench_falls_back_to_an_earlier_version_of_the_series(ek, send_email):
    """No run on this very tree: an older run of the series (same base) is
    taken, with a note, rather than a newer run of another base."""
    bench = ek.work / "bench"
    other = ek.git("commit-tree", ek.rev("distro/9.9^{tree}"), "-m", "another base")
    for name, rev, row in (("20260101-000000", ek.ids[1], "| statfs | 700 | 7 |"),
                           ("20260102-000000", other, "| other base | 1 | 2 |")):
        d = bench / name
        d.mkdir(parents=True)
        (d / "bench.md").write_text("| test | A | B |\n|---|---|---|\n%s\n" % row)
        (d / "bench.cmd").write_text("#!/bin/sh\ntools/fork bench --only %s\n" % name)
        (d / "bench.json").write_text(json.dumps({"kernels": {"B": {"commit": rev}}}))
    res = ek.fork("export")
    assert res.rc == 0, res
    text = ek.mails(1)[0].read_text()
    assert "| statfs | 700 | 7 |" in text and "other base" not in text
    assert "Note: these results were measured on %s" % ek.ids[1][:12] in text


def test_v2_with_changelog_and_range_diff_on_a_fresh_tree(ek, send_email):
    assert ek.fork("export").rc == 0
    v1_msgid = headers(ek.mails(1)[0])["message-id"]
    ek.commit_repo("v1 exported")
    # a fresh machine: new work dir and kernel tree, only the repo is kept
    shutil.rmtree(ek.work)
    ek.do_import()
    ids = ek.push_series(SERIES_V2)
    ek.fake_checks(ids)
    # v2 needs its changelog
    res = ek.fork("export")
    assert res.rc == 1
    assert "mailing/changelog/v2.md" in res.err and "write" in res.err
    assert_nothing_written(ek, 2)
    cl = ek.repo / "mailing" / "changelog"
    cl.mkdir()
    # a heading of its own would stand under export's "Changes in v2:"
    (cl / "v2.md").write_text("Changes since v1:\n\n- ext2: scale inode allocation\n")
    res = ek.fork("export")
    assert res.rc == 1
    assert "mailing/changelog/v2.md starts with 'Changes since v1:', not a `- ...` item" \
        in res.err
    assert "delete any heading" in res.err and "Traceback" not in res.err
    assert_nothing_written(ek, 2)
    (cl / "v2.md").write_text("- ext2: scale inode allocation: reworked (Rita)\n")
    res = ek.fork("export")
    assert res.rc == 0, res
    names = [p.name for p in ek.mails(2)]
    assert names[0] == "v2-0000-cover-letter.patch"
    assert names[2] == "v2-0002-ext2-scale-inode-allocation.patch"
    cover, *patches = ek.mails(2)
    assert headers(cover)["subject"].startswith("[PATCH v2 0/3] ext2: finish")
    assert headers(patches[1])["subject"] == "[PATCH v2 2/3] ext2: scale inode allocation"
    text = cover.read_text()
    assert "Changes in v2:\n- ext2: scale inode allocation: reworked (Rita)\n" \
           "- Link to v1: https://lore.kernel.org/r/%s\n" % v1_msgid.strip("<>") in text
    rd = text[text.index("Range-diff against v1:"):]
    assert re.search(r"1: +[0-9a-f]+ = 1: +[0-9a-f]+ ext2: make balloc faster", rd), rd
    assert re.search(r"2: +[0-9a-f]+ ! 2: +[0-9a-f]+ ext2: scale inode allocation", rd), rd
    assert "A second paragraph" in rd and "scalable v2" in rd
    assert re.search(r"3: +[0-9a-f]+ = 3: +[0-9a-f]+ ext2: document", rd), rd
    assert ek.versions() == ["v1", "v2"]
    # the default version is now 3, which needs v3.md
    res = ek.fork("export")
    assert res.rc == 1 and "v3.md" in res.err


# -- refusals: each says what to do, and nothing is written ---------------------

def test_refuses_empty_series(tmp_path, export_tarball, monkeypatch):
    kit = ExportKit(tmp_path, export_tarball, monkeypatch)
    kit.do_import()
    res = kit.fork("export")
    assert res.rc == 1
    assert "fork export: error: patches/series lists no patches" in res.err
    assert "tools/fork save" in res.err


def test_refuses_dirty_tree(ek):
    (ek.ktree / "fs" / "ext2" / "inode.c").write_text("hack\n")
    res = ek.fork("export")
    assert res.rc == 1
    assert "uncommitted changes" in res.err and "stash" in res.err
    assert_nothing_written(ek, 1)


def test_refuses_without_identity(ek):
    empty = ek.tmp / "empty-gitconfig"
    empty.write_text("")
    res = ek.fork("export", env={"GIT_CONFIG_GLOBAL": str(empty), "EMAIL": ""})
    assert res.rc == 1
    assert "git config --global user.name" in res.err
    assert "git config --global user.email" in res.err
    assert_nothing_written(ek, 1)


def test_refuses_existing_version_without_force(ek, send_email):
    assert ek.fork("export").rc == 0
    before = {p.name: p.read_text() for p in ek.mails(1)}
    res = ek.fork("export", "-v", "1")
    assert res.rc == 1
    assert "v1 was already exported" in res.err and "--force" in res.err
    assert {p.name: p.read_text() for p in ek.mails(1)} == before
    res = ek.fork("export", "-v", "1", "--force")
    assert res.rc == 0, res
    assert sorted(p.name for p in ek.mails(1)) == sorted(before)
    # --outdir that holds other files is not cleared, even with --force
    other = ek.tmp / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    res = ek.fork("export", "-v", "1", "--force", "--outdir", other)
    assert res.rc == 1 and "notes.txt" in res.err
    assert os.listdir(other) == ["notes.txt"]


def test_refuses_unchecked_commit_unless_allowed(ek, send_email):
    from forkkit.verify import kernel
    tree = ek.rev(ek.ids[1] + "^{tree}")
    os.unlink(kernel.cache_path(tree, "base", "smoke"))
    res = ek.fork("export")
    assert res.rc == 1
    assert "2/3 %s ext2: scale inode allocation" % ek.ids[1][:12] in res.err
    assert "tools/fork check" in res.err and "--allow-unchecked" in res.err
    assert_nothing_written(ek, 1)
    res = ek.fork("export", "--allow-unchecked")
    assert res.rc == 0, res
    text = ek.mails(1)[0].read_text()
    assert re.search(r"^  2/3 +%s +not-checked" % ek.ids[1][:12], text, re.M)
    assert "WARNING: exported with --allow-unchecked: patch 2/3 has no passing" in text


def record(ek, commit, guest_accel="tcg", runner="qemu", runs=(True,), day="20260101",
           known=None):
    """A record of `commit`'s tree in the check cache under `guest_accel` and
    `runner` (and the cache key of the kit as the test has it now), with
    one run per entry of `runs` (True passed, False failed, "error" an
    error of the runner), each with its log in the work directory (dated
    `day`), as kernel.record_run() leaves it; `known`: the base's evidence
    (a failed run is excusable by {"sig": ...})."""
    from forkkit.verify import kernel
    tree = ek.rev(commit + "^{tree}")
    row = None
    for n, passed in enumerate(runs):
        row = {"commit": commit, "tree": tree, "subject": "x", "flavour": "base",
               "test": "smoke", "details": {}, "seconds": 42.0, "image_sha256": "5" * 64,
               "cells": dict({k: "pass" for k in kernel.CELLS},
                             **({} if passed is True else {"counts": "FAIL"}
                                if passed is False else {"boot": kernel.ERROR,
                                                         "test": "-", "e2fsck": "-",
                                                         "counts": "-"})),
               "log": str(ek.work / "logs" / ("check-%s-%s-00000%d.log"
                                              % (commit[:12], day, n))),
               "accel": guest_accel, "kit": kernel.kit_key(), "tools": {"qemu": "x"},
               "runs": row["runs"] if row else []}
        if runner != "qemu":
            row["runner"] = runner
        if passed == "error":
            row["error"] = "LAVA refused the job"
        row["runs"].append(kernel.run_entry(row, ["sig"] if known and not passed else None))
        kernel.judge_runs(row, known)
    path = kernel.cache_path(tree, "base", "smoke", guest_accel, runner)
    with open(path, "w") as fh:
        json.dump(row, fh)
    return path


def commit_table(ek, paths, name="base-smoke.json"):
    """The cache records at `paths` as a committed `check --json` table
    (paths in the work directory made relative, as check writes them)."""
    from forkkit.core.paths import workdir_relative
    rows = [workdir_relative(json.load(open(p))) for p in paths]
    d = ek.repo / "records" / "checks" / "9.9" / rows[-1]["commit"][:12]
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(rows, indent=1))
    return "records/checks/9.9/%s/%s" % (rows[-1]["commit"][:12], name)


def explain(ek, *logs):
    """records/checks/explained.json explaining the runs of those logs."""
    (ek.repo / "records" / "checks").mkdir(parents=True, exist_ok=True)
    (ek.repo / "records" / "checks" / "explained.json").write_text(json.dumps(
        [{"runs": [os.path.relpath(l, ek.work) if os.path.isabs(l) else l for l in logs],
          "why": "The test asserted the wrong thing.", "see": "patches/series"}]))


def failed_logs(path):
    return [r["log"] for r in json.load(open(path))["runs"] if not r["passed"]]


def older(ek, what, monkeypatch):
    """Make the check cache's key that of another kit (`what` "kit"), QEMU
    ("qemu") or ci/guest ("ci/guest") than the test's; returns the undo."""
    from forkkit.verify import kernel
    if what == "kit":
        monkeypatch.setattr(kernel, "_KIT_KEY", "0ldk1t0ldk1t")
        return lambda: monkeypatch.setattr(kernel, "_KIT_KEY", kernel._code_hash())
    if what == "qemu":
        real = kernel.tool_versions
        monkeypatch.setattr(kernel, "tool_versions",
                            lambda: dict(real(), qemu="QEMU emulator version 7.2.0"))
        return lambda: monkeypatch.setattr(kernel, "tool_versions", real)
    extra = ek.repo / "ci" / "guest" / "old-helper"
    extra.write_text("#!/bin/sh\n")
    return extra.unlink


@pytest.mark.parametrize("where", [("kvm", "qemu"), ("tcg", "lava"), ("kvm", "lava-server")])
def test_a_failure_under_another_accelerator_or_runner_blocks_the_export(ek, where):
    """A commit passed under TCG, but a run of its tree failed under KVM or
    through LAVA (or failed and then passed: flaky): it has no passing
    check, and export names where it failed."""
    from forkkit.publish import export
    guest_accel, runner = where
    record(ek, ek.ids[1], guest_accel, runner, runs=(False,))
    record(ek, ek.ids[2], guest_accel, runner, runs=(False, True))
    res = ek.fork("export")
    assert res.rc == 1
    name = guest_accel.upper() + ("" if runner == "qemu" else " through " + runner)
    for k in (1, 2):
        assert "%d/3 %s %s (its check failed under %s)" % (
            k + 1, ek.ids[k][:12], SERIES[k][3], name) in res.err, res.err
    assert "1/3 %s" % ek.ids[0][:12] not in res.err
    assert_nothing_written(ek, 1)
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert [r[2] is not None for r in rows] == [True, False, False]


def test_a_pass_recorded_only_under_kvm_or_lava_counts(ek):
    """A commit whose only record is a pass under KVM, or through LAVA, has
    a passing check; the row shown is the latest run's."""
    from forkkit.publish import export
    from forkkit.verify import kernel
    for k, where in ((1, ("kvm", "qemu")), (2, ("tcg", "lava"))):
        os.unlink(kernel.cache_path(ek.rev(ek.ids[k] + "^{tree}"), "base", "smoke"))
        record(ek, ek.ids[k], *where)
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert [(r[2] or {}).get("accel") for r in rows] == [None, "kvm", "tcg"]
    assert rows[2][2]["runner"] == "lava" and [r[3] for r in rows] == ["", "", ""]
    record(ek, ek.ids[1], "kvm", "lava", runs=(True, True))       # a later run
    assert export.check_rows(ek.ids, "base", "smoke")[1][2].get("runner") == "lava"
    os.unlink(kernel.cache_path(ek.rev(ek.ids[1] + "^{tree}"), "base", "smoke", "kvm"))
    os.unlink(kernel.cache_path(ek.rev(ek.ids[1] + "^{tree}"), "base", "smoke", "kvm",
                                "lava"))
    assert export.check_rows(ek.ids, "base", "smoke")[1][2:] == (None, "no check on record")


@pytest.mark.parametrize("what", ["kit", "qemu", "ci/guest"])
def test_a_failure_under_an_older_kit_or_qemu_blocks(ek, what, monkeypatch):
    """ids[1] failed under yesterday's kit, QEMU or ci/guest (another cache
    key); today's kit checked it again and it passed: the failure still
    blocks the export, and the refusal names the run, its record and how
    to explain it."""
    from forkkit.publish import export
    from forkkit.verify import kernel
    os.unlink(kernel.cache_path(ek.rev(ek.ids[1] + "^{tree}"), "base", "smoke"))
    undo = older(ek, what, monkeypatch)
    old = record(ek, ek.ids[1], runs=(False,), day="20251231")
    undo()
    assert old != kernel.cache_path(ek.rev(ek.ids[1] + "^{tree}"), "base", "smoke")
    assert export.check_rows(ek.ids, "base", "smoke")[1][2] is None
    record(ek, ek.ids[1], runs=(True,))
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert json.load(open(old))["passed"] is False
    assert [r[2] is not None for r in rows] == [True, False, True]
    log = "logs/check-%s-20251231-000000.log" % ek.ids[1][:12]
    assert rows[1][3].split("\n") == [
        "its check failed under TCG",
        "failed run %s (TCG, kit %s): counts: FAIL; in %s"
        % (log, json.load(open(old))["kit"], old)]
    res = ek.fork("export")
    assert res.rc == 1 and "Traceback" not in res.err
    assert "2/3 %s %s (its check failed under TCG)\n      failed run %s" % (
        ek.ids[1][:12], SERIES[1][3], log) in res.err, res.err
    assert os.path.basename(old) in res.err
    assert "records/checks/explained.json explains it, naming its log" in res.err
    assert_nothing_written(ek, 1)


def test_a_failure_in_a_committed_table_blocks_until_explained(ek, monkeypatch):
    """A run of ids[2]'s tree failed under an older kit; only a committed
    table holds it now (the cache was cleared): it blocks the export and
    the refusal names the table.  Explained in explained.json, it blocks
    no more; a later failure blocks again."""
    from forkkit.publish import export
    undo = older(ek, "kit", monkeypatch)
    path = record(ek, ek.ids[2], runs=(True, False), day="20251231")
    undo()
    table = commit_table(ek, [path])
    os.unlink(path)
    row = export.check_rows(ek.ids, "base", "smoke")[2]
    assert row[2] is None and row[3].startswith("its check failed under TCG\nfailed run logs/")
    assert row[3].endswith("; in %s (flaky: 1 of 2 runs failed)" % table)
    explain(ek, *[r["log"] for r in json.load(open(ek.repo / table))[0]["runs"]
                  if not r["passed"]])
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert [(r[2] is not None, r[3]) for r in rows] == [(True, "")] * 3
    later = record(ek, ek.ids[2], runs=(True, False), day="20260102")
    row = export.check_rows(ek.ids, "base", "smoke")[2]
    assert row[2] is None and os.path.basename(later) in row[3]
    assert os.path.relpath(failed_logs(later)[0], ek.work) in row[3]


def test_an_explained_failure_in_the_cache_does_not_block(ek):
    """The current kit's record of ids[1] failed and then passed (flaky):
    blocked; once explained.json explains the failed run (named by its log
    in the committed table, the cache naming it by its full path), the
    record passes on the other run; with no other run it has no verdict."""
    from forkkit.publish import export
    path = record(ek, ek.ids[1], runs=(False, True))
    assert export.check_rows(ek.ids, "base", "smoke")[1][2] is None
    commit_table(ek, [path])
    explain(ek, *failed_logs(path))
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert rows[1][3] == "" and rows[1][2]["cells"]["counts"] == "pass"
    assert rows[1][2]["explained"] == [os.path.relpath(failed_logs(path)[0], ek.work)]
    # a record of a failed run alone: explained, but no pass by this kit
    first = failed_logs(path)
    path = record(ek, ek.ids[1], runs=(False,), day="20260103")
    commit_table(ek, [path], "base-smoke-2.json")
    assert export.check_rows(ek.ids, "base", "smoke")[1][3].startswith("its check failed")
    explain(ek, *first + failed_logs(path))
    assert export.check_rows(ek.ids, "base", "smoke")[1][2:] == (
        None, "no verdict: its runs by this kit and tools are explained failures")


def test_export_needs_a_pass_by_this_kit_and_ignores_errors_of_the_runner(ek, monkeypatch):
    """A pass under an older kit only is no pass: the kit that mails a
    commit must have checked it.  An error of the runner under an older
    kit judges nothing, and a failure the known-report rule excused (its
    record's flaky_excused) does not block, as under the current kit."""
    from forkkit.publish import export
    from forkkit.verify import kernel
    os.unlink(kernel.cache_path(ek.rev(ek.ids[1] + "^{tree}"), "base", "smoke"))
    undo = older(ek, "qemu", monkeypatch)
    record(ek, ek.ids[1], runs=(True,))
    record(ek, ek.ids[2], "kvm", "lava", runs=("error",))
    record(ek, ek.ids[2], "kvm", "lava-server", runs=("error", True))
    excused = record(ek, ek.ids[0], runs=(False, True), known={"sig": "base run 1"})
    undo()
    assert json.load(open(excused))["flaky_excused"] == "base run 1"
    rows = export.check_rows(ek.ids, "base", "smoke")
    assert rows[1][2] is None and rows[1][3].startswith("no check by this kit and tools")
    assert [(r[2] is not None, r[3]) for r in (rows[0], rows[2])] == [(True, "")] * 2
    record(ek, ek.ids[1], runs=(True,))
    assert export.check_rows(ek.ids, "base", "smoke")[1][3] == ""
    # no failed run, but today's record fails on the commit's own checkpatch
    path = kernel.cache_path(ek.rev(ek.ids[0] + "^{tree}"), "base", "smoke")
    row = json.load(open(path))
    row["cells"]["checkpatch"], row["passed"] = "FAIL", False
    with open(path, "w") as fh:
        json.dump(row, fh)
    assert export.check_rows(ek.ids, "base", "smoke")[0][2:] == (
        None, "its check failed under TCG (checkpatch: FAIL)")


def test_every_cache_file_of_a_cell_whatever_its_key(tmp_path, monkeypatch):
    """kernel.cache_files(): every key's file of the cell, its accelerator
    and runner read from the name's end; another test whose name starts
    like this one's is not this cell's."""
    from forkkit.verify import kernel
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path))
    d = tmp_path / "cache" / "check"
    d.mkdir(parents=True)
    t = "a" * 40
    names = ["%s-base-emergency-remount-0123-4567-kvm.json" % t,   # test emergency-remount
             "%s-base-emergency-abc-0ld.json" % t,                  # an old key's form
             "%s-base-emergency-abc-def-012-345-kvm-lava-server.json" % t,
             "%s-base-emergency-abc-def-012-345-lava.json" % t,
             "%s-base-emergency.lock" % t, "%s-base-emergency-abc.json" % ("b" * 40)]
    for n in names:
        (d / n).write_text("{}")
    assert [(os.path.basename(p), a, r) for p, a, r in kernel.cache_files(t, "base", "emergency")] \
        == [(names[1], "tcg", "qemu"), (names[2], "kvm", "lava-server"), (names[3], "tcg", "lava")]


def test_refuses_range_diff_without_previous_version(ek):
    cl = ek.repo / "mailing" / "changelog"
    cl.mkdir()
    (cl / "v2.md").write_text("- something\n")
    res = ek.fork("export", "-v", "2")
    assert res.rc == 1
    assert "v1 is not recorded" in res.err and "mailing/versions/v1" in res.err
    assert_nothing_written(ek, 2)


def test_refuses_checkpatch_failure(ek):
    bad = list(SERIES)
    bad[2] = SERIES[2][:4] + ("Say which lock covers what. CHECKPATCH_BAD\n\n" + SOB,)
    ids = ek.push_series(bad)
    ek.fake_checks(ids)
    res = ek.fork("export")
    assert res.rc == 1
    assert "checkpatch.pl --strict" in res.err and "3/3" in res.err
    assert "CHECKPATCH_BAD marker" in res.err
    assert_nothing_written(ek, 1)


def test_refuses_a_placeholder_left_in_a_log(ek):
    marked = list(SERIES)
    marked[1] = SERIES[1][:4] + ("Measured: @TBD@\n\n" + SOB,)
    ids = ek.push_series(marked)
    ek.fake_checks(ids)
    for argv in (["export"], ["export", "--dry-run"]):
        res = ek.fork(*argv)
        assert res.rc == 1, res
        assert "still holds the placeholder @TBD@" in res.err and "0002-" in res.err
        assert len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err
        assert_nothing_written(ek, 1)


def test_refuses_series_branch_not_saved(ek):
    head = ek.rev("series/9.9")
    extra = ek.git("commit-tree", head + "^{tree}", "-p", head, "-m", "wip", env=AUTHOR)
    ek.git("update-ref", "refs/heads/series/9.9", extra)
    res = ek.fork("export")
    assert res.rc == 1
    assert "tools/fork save" in res.err and "4 commits" in res.err
    assert_nothing_written(ek, 1)


# -- maintainers ------------------------------------------------------------------

def test_maintainers(ek):
    res = ek.fork("maintainers", "--check")
    assert res.rc == 1 and "missing" in res.err
    res = ek.fork("maintainers")
    assert res.rc == 0, res
    text = (ek.repo / "MAINTAINERS").read_text()
    entries = [e.strip("\n") for e in text.split("\n\n")]
    ext2 = [e for e in entries if e.startswith("ext2: ")]
    assert [e.splitlines()[0] for e in ext2] == [s[3] for s in SERIES]
    # copied from the base MAINTAINERS: M/R/L/S of EXT2 FILE SYSTEM, LKML of
    # THE REST; neither T: nor the upstream F: patterns nor THE REST's M:
    assert ext2[1] == ("ext2: scale inode allocation\nM:\tJan Kara <jack@suse.com>\n"
                       "R:\tRita Reviewer <rita@example.org>\nL:\tlinux-ext4@vger.kernel.org\n"
                       "L:\tlinux-kernel@vger.kernel.org\nS:\tMaintained\nF:\tfs/ext2/inode.c")
    for title, files in (("FORK KIT TOOLS", ["tests/", "tools/"]), ("CI", [".ci/", "ci/"]),
                         ("BACKPORTS", ["backports/"]), ("MAILING", ["mailing/"])):
        entry = [e for e in entries if e.startswith(title + "\n")]
        assert entry == [title + "\nM:\text2-scale developers <ext2-scale@lists.invalid>\n"
                         "S:\tMaintained\n" + "".join("F:\t%s\n" % f for f in files).rstrip()]
    assert "torvalds" not in text and "T:\t" not in text
    assert ek.fork("maintainers", "--check").rc == 0
    # a series change makes it stale
    ek.push_series(SERIES[:2])
    res = ek.fork("maintainers", "--check")
    assert res.rc == 1 and "stale" in res.err and "-ext2: document" in res.out
    assert ek.git("worktree", "list", "--porcelain").count("worktree ") == 1


def test_cover_letter_gets_mime_headers_for_utf8(tmp_path):
    """A cover letter that only its text makes non-ASCII (a changelog naming
    Jan Kára, a bench unit in µs) still says it is UTF-8."""
    from forkkit.publish.export import fill_cover
    cover = tmp_path / "0000-cover-letter.patch"
    cover.write_text("From 0 Mon Sep 17 00:00:00 2001\nFrom: T <t@example.org>\n"
                     "Subject: [PATCH 0/1] *** SUBJECT HERE ***\n\n*** BLURB HERE ***\n\n"
                     "T (1):\n  x\n")
    fill_cover(str(cover), "ext2: caf\u00e9", "Thanks to Jan K\u00e1ra; 3 \u00b5s.\n")
    text = cover.read_text(encoding="utf-8")
    h = headers(cover)
    assert h["subject"].isascii()
    assert str(email.header.make_header(email.header.decode_header(h["subject"]))) == \
        "[PATCH 0/1] ext2: caf\u00e9"
    assert h["content-type"] == "text/plain; charset=UTF-8"
    assert "\n\nThanks to Jan K\u00e1ra; 3 \u00b5s.\n\nT (1):" in text


# -- who sends: a person, not a placeholder ------------------------------------

def test_keep_author_puts_the_author_in_the_body(ek, send_email):
    res = ek.fork("export", "--keep-author")
    assert res.rc == 0, res
    for p in ek.mails(1)[1:]:
        text = p.read_text()
        assert "\nFrom: A U Thor <author@example.org>\n" in text
        assert text.index(SOB) < text.index("Signed-off-by: %s" % IDENT)


def test_placeholder_sender_is_refused_but_a_dry_run_shows_the_mails(ek, send_email):
    ek.git("config", "user.email", "ext2-scale@lists.invalid")
    ek.git("config", "user.name", "ext2-scale developers")
    res = ek.fork("export")
    assert res.rc == 1
    assert "the sender ext2-scale developers <ext2-scale@lists.invalid> is a placeholder" \
        in res.err and "Developer's Certificate of Origin" in res.err
    assert_nothing_written(ek, 1)
    res = ek.fork("export", "--dry-run")
    assert res.rc == 0, res
    out = res.out.strip()
    assert out == str(ek.work / "export" / "dry-run" / "patches" / "v1")
    assert len(os.listdir(out)) == 4 and "nothing recorded" in res.err
    assert ek.versions() == []


def test_mailed_commits_drop_placeholder_signoffs(ek):
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    c = ek.git("commit-tree", "series/9.9^{tree}", "-p", base, "-m",
               "ext2: x\n\nWhy.\n\nSigned-off-by: ext2-scale developers "
               "<ext2-scale@lists.invalid>\nSigned-off-by: A U Thor <author@example.org>",
               env=dict(AUTHOR))
    [m] = cmd_export.mail_commits(base, [c], ("Real Person", "real@example.org"))
    assert ek.rev(m + "^{tree}") == ek.rev(c + "^{tree}")
    assert ek.git("log", "-1", "--format=%an <%ae>", m) == "Real Person <real@example.org>"
    body = ek.git("log", "-1", "--format=%B", m)
    assert "lists.invalid" not in body and SOB in body
    [k] = cmd_export.mail_commits(base, [c], None)
    assert ek.git("log", "-1", "--format=%an <%ae>", k) == "A U Thor <author@example.org>"
    assert cmd_export.is_placeholder("x@lists.invalid") and cmd_export.is_placeholder("a@localhost")
    assert not cmd_export.is_placeholder("jack@suse.com")


def test_a_series_may_have_its_own_cover_letter(tmp_path, monkeypatch):
    """fixes/ is mailed with mailing/fixes/cover-letter.tmpl, the primary
    series (and a series without one) with mailing/cover-letter.tmpl."""
    import types
    from forkkit.publish import export as cmd_export
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    (tmp_path / "mailing" / "fixes").mkdir(parents=True)
    (tmp_path / "mailing" / "cover-letter.tmpl").write_text("primary\n")
    primary = types.SimpleNamespace(is_primary=True, rel="patches")
    fixes = types.SimpleNamespace(is_primary=False, rel="fixes")
    other = types.SimpleNamespace(is_primary=False, rel="backports/6.1")
    assert cmd_export.cover_template(fixes) == str(tmp_path / "mailing" / "cover-letter.tmpl")
    (tmp_path / "mailing" / "fixes" / "cover-letter.tmpl").write_text("fixes\n")
    assert cmd_export.cover_template(fixes) == \
        str(tmp_path / "mailing" / "fixes" / "cover-letter.tmpl")
    for s in (primary, other):
        assert cmd_export.cover_template(s) == str(tmp_path / "mailing" / "cover-letter.tmpl")


def test_only_a_series_own_letter_may_leave_out_the_benchmarks(tmp_path, monkeypatch):
    from forkkit.publish import export as cmd_export
    from forkkit.core.errors import ForkError
    monkeypatch.setenv("FORK_REPO", str(tmp_path))
    tmpl = tmp_path / "t.tmpl"
    tmpl.write_text("subject\n\n{summary}\n{check_table}\n{base}\n{changelog}\n"
                    "{range_diff}\n")
    values = {k: k.upper() for k in cmd_export.PLACEHOLDERS}
    with pytest.raises(ForkError, match=r"missing \{bench\}"):
        cmd_export.render_template(str(tmpl), values)
    subject, body = cmd_export.render_template(str(tmpl), values, optional=("bench",))
    assert subject == "subject" and "SUMMARY" in body and "BENCH" not in body


def each_record(kit, run, chain):
    """A bench --each record at records/bench/<run>.json whose kernels K0..Kn
    are the commits of `chain`, each a step against the one before."""
    kernels = {"K%d" % i: {"commit": c, "rev": c, "subject": "s%d" % i}
               for i, c in enumerate(chain)}
    steps = [{"a": "K%d" % (i - 1), "b": "K%d" % i, "commit": chain[i], "subject": "s%d" % i,
              "whole": False, "stats": [{"workload": "seed", "fs": "ext2", "params": {},
                                         "ratio": 1.0, "ratio_lo": 0.99, "ratio_hi": 1.01}],
              "locks": []} for i in range(1, len(chain))]
    d = kit.repo / "records" / "bench"
    d.mkdir(parents=True, exist_ok=True)
    (d / ("%s.json" % run)).write_text(json.dumps(
        {"run": {"id": run}, "kernels": kernels, "steps": steps, "samples": []}))


def test_a_letter_that_names_its_runs_renders_them_and_may_leave_out_bench(ek):
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    each_record(ek, "20260101-000000-each", [base] + ek.ids)
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("# a comment naming {bench}\nsubject\n\n{summary}\n{check_table}\n"
                    "@@ bench-steps 20260101-000000-each\n{base}\n{changelog}\n"
                    "{range_diff}\n")
    values = {k: k.upper() for k in cmd_export.PLACEHOLDERS}
    assert not cmd_export.uses_bench(str(tmpl))
    subject, body = cmd_export.render_template(str(tmpl), values)
    assert "| `%s` s1 | 1.000 [0.990..1.010] | none |" % ek.ids[0][:12] in body
    cmd_export.check_measured(str(tmpl), base, ek.ids)


def test_a_letter_naming_a_run_of_other_changes_is_refused(ek):
    """A step whose change is none of the series' (another version, another
    series) is refused; the same change measured on another tree is not."""
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ bench-steps 20260102-000000-each\n")
    # the same three changes, applied on a base with one more commit
    scratch = ek.tmp / "scratch"
    ek.git("checkout", "-q", "-b", "other", base, cwd=scratch)
    (scratch / "EXTRA").write_text("x\n")
    ek.git("add", "EXTRA", cwd=scratch)
    ek.git("commit", "-q", "-m", "extra", cwd=scratch)
    for c in ek.ids:
        ek.git("fetch", "-q", str(ek.ktree), c, cwd=scratch)
        ek.git("cherry-pick", c, cwd=scratch)
    ek.git("push", "-q", "-f", str(ek.ktree), "other:refs/heads/other", cwd=scratch)
    other = ek.git("rev-list", "--reverse", "other~%d..other" % (len(ek.ids) + 1),
                   cwd=scratch).split()
    each_record(ek, "20260102-000000-each", other)
    notes = cmd_export.check_measured(str(tmpl), base, ek.ids)
    # taken, but the letter says they were measured on other trees
    assert len(notes) == len(ek.ids)
    assert all("as the same patch on other trees" in n for n in notes)
    # a run whose first step is the unrelated commit
    each_record(ek, "20260102-000000-each", [base] + other)
    with pytest.raises(ForkError, match="not in the series being exported"):
        cmd_export.check_measured(str(tmpl), base, ek.ids)


def test_a_run_on_the_same_kernel_images_is_tied_to_the_series_by_them(ek):
    """A record without ids whose commits this tree lacks, but whose kernels
    are, by sha256, the images the committed check tables record for a
    series commit and its parent (the same flavour): tied to that commit,
    with a note that says how.  Images of no such pair stay unchecked."""
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ bench-steps 20260104-000000-each\n")
    chain = [base] + ek.ids
    image = {c: "%064x" % (n + 7) for n, c in enumerate(chain)}
    table = ek.repo / "records" / "checks" / KVER / ek.ids[-1][:12] / "base-smoke.json"
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text(json.dumps([{"commit": c, "tree": ek.rev(c + "^{tree}"),
                                  "flavour": "base", "image_sha256": image[c]}
                                 for c in chain]))
    gone = ["%040x" % n for n in range(1, 4)]

    def record(images, flavour="base"):
        each_record(ek, "20260104-000000-each", gone)
        rec = ek.repo / "records" / "bench" / "20260104-000000-each.json"
        doc = json.loads(rec.read_text())
        for k, img in zip(("K0", "K1", "K2"), images):
            doc["kernels"][k].update(image_sha256=img, flavour=flavour)
        rec.write_text(json.dumps(doc))
        return cmd_export.check_measured(str(tmpl), base, ek.ids)

    # K0..K2 built as the series' first three commits (base and two patches)
    notes = record([image[c] for c in chain[:3]])
    assert len(notes) == 2
    for n, (c, parent) in enumerate(zip(chain[1:3], chain[:2])):
        assert notes[n].startswith('"s%d" (%s) was measured on kernel images identical to '
                                   "this series' builds of %s and its parent (sha256 %s and %s"
                                   % (n + 1, gone[n + 1][:12], c[:12], image[c][:12],
                                      image[parent][:12])), notes[n]
    # the same images under another flavour's config: not the same builds
    assert all("could not be checked" in n for n in record([image[c] for c in chain[:3]],
                                                             flavour="kasan"))
    # a step from the base's image to the second patch's is no step of the series
    notes = record([image[base], image[ek.ids[1]], image[ek.ids[2]]])
    assert "could not be checked" in notes[0] and "identical" in notes[1]


def test_a_run_this_tree_cannot_check_is_a_note_not_a_pass(ek):
    """A record without patch ids whose commits this tree lacks (made
    elsewhere by an older kit) is neither refused nor taken as checked; with
    the ids recorded, the check needs no commit of the run."""
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ bench-steps 20260103-000000-each\n")
    gone = ["%040x" % n for n in range(1, 4)]
    each_record(ek, "20260103-000000-each", gone)
    notes = cmd_export.check_measured(str(tmpl), base, ek.ids)
    assert len(notes) == 2 and all("could not be checked" in n for n in notes)
    # the same run with the patch ids recorded: checked without the commits
    rec = ek.repo / "records" / "bench" / "20260103-000000-each.json"
    doc = json.loads(rec.read_text())
    from forkkit.repo.patchfile import patch_id_of_commit
    for k, c in zip(("K1", "K2"), ek.ids[1:]):
        doc["kernels"][k]["patch_id"] = patch_id_of_commit(c)
    rec.write_text(json.dumps(doc))
    notes = cmd_export.check_measured(str(tmpl), base, ek.ids)
    assert len(notes) == 2 and all("could not be checked here" in n for n in notes)
    # with the trees recorded too, and the series' own: checked, no note
    for k, c in zip(("K0", "K1", "K2"), ek.ids):
        doc["kernels"][k]["tree"] = ek.rev(c + "^{tree}")
    rec.write_text(json.dumps(doc))
    assert cmd_export.check_measured(str(tmpl), base, ek.ids) == []
    doc["kernels"]["K2"]["tree"] = "9" * 40
    doc["kernels"]["K2"]["patch_id"] = "0" * 40
    rec.write_text(json.dumps(doc))
    with pytest.raises(ForkError, match="not in the series being exported"):
        cmd_export.check_measured(str(tmpl), base, ek.ids)


def test_an_ab_run_must_be_base_against_head_and_a_letter_only_checkable_lines(ek):
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    d = ek.repo / "records" / "bench"
    d.mkdir(parents=True, exist_ok=True)

    def ab(a, b):
        (d / "20260104-000000.json").write_text(json.dumps(
            {"run": {"id": "20260104-000000"}, "samples": [],
             "kernels": {"A": {"commit": a}, "B": {"commit": b},
                         "A-lockstat": {"commit": a}, "B-lockstat": {"commit": b}}}))

    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ bench-locks 20260104-000000\n")
    ab(base, ek.ids[-1])
    assert cmd_export.check_measured(str(tmpl), base, ek.ids) == []
    for a, b in ((ek.ids[-1], base), (base, ek.ids[0]), (base, base)):
        ab(a, b)
        with pytest.raises(ForkError, match="not in the series being exported"):
            cmd_export.check_measured(str(tmpl), base, ek.ids)
    # a line that reads records but cannot be checked is refused in a letter
    tmpl.write_text("subject\n{summary}\n@@ include README.md\n")
    values = {k: k.upper() for k in cmd_export.PLACEHOLDERS}
    with pytest.raises(ForkError, match="cannot be checked"):
        cmd_export.render_template(str(tmpl), values)


# -- @@ fstests-summary: an fstests run of the base and the head ---------------------

def fstests_md(ek, name, base, head, rows,
               e2fsck="clean (2 boots, test and scratch disks)"):
    """records/fstests/9.9/<name>.md as `fstests --markdown` writes it, of
    `base` and `head` (commits), rows [(test, base, series, verdict)]."""
    d = ek.repo / "records" / "fstests" / KVER
    d.mkdir(parents=True, exist_ok=True)
    tot = {s: {k: sum(1 for r in rows if r[i] == k) for k in ("pass", "fail", "notrun")}
           for i, s in ((1, "base"), (2, "series"))}
    text = ["# fstests on ext2: distro/9.9 vs series/9.9", "",
            "- base: `distro/9.9` (%s), image sha256 00" % base[:12],
            "- series: `series/9.9` (%s), image sha256 11" % head[:12],
            "- selection: group auto (%d tests, 0 excluded by ci/fstests/ext2.exclude)"
            % len(rows),
            "- mkfs: `mkfs.ext2 -b 1024` on the test and scratch disks",
            "- e2fsck -fn after each boot: %s" % e2fsck,
            "- kernel reports in the consoles: 1 kind of line (0 on the base, 1 on the "
            "series)",
            "- reproduce: `tools/fork fstests distro/9.9 series/9.9 --group auto`", "",
            "| | pass | fail | notrun | test time |", "| --- | ---: | ---: | ---: | ---: |"]
    text += ["| %s | %d | %d | %d | 9s |" % (s, t["pass"], t["fail"], t["notrun"])
             for s, t in tot.items()]
    text += ["", "| test | base | series | base time | series time | verdict | why not pass |",
             "| --- | --- | --- | ---: | ---: | --- | --- |"]
    text += ["| %s | %s | %s | 1s | 1s | %s | |" % r for r in rows]
    (d / (name + ".md")).write_text("\n".join(text) + "\n")


def letter_body(ek, lines):
    """The body of a letter with `lines` among the placeholders, its @@
    summaries checked against the series of `ek`."""
    from forkkit.publish import export as cmd_export
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n\n{summary}\n{check_table}\n%s{base}\n{changelog}\n"
                    "{range_diff}\n" % lines)
    cmd_export.check_summarized(str(tmpl), ek.rev("distro/9.9"), ek.ids)
    values = {k: k.upper() for k in cmd_export.PLACEHOLDERS}
    return cmd_export.render_template(str(tmpl), values, optional=("bench",))[1]


def test_a_letter_summarizes_an_fstests_run_of_its_kernels(ek):
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    fstests_md(ek, "auto-1k", base, ek.ids[-1], [
        ("generic/001", "pass", "pass", "same"), ("generic/002", "fail", "fail", "same"),
        ("generic/003", "pass", "fail", "**new failure**"), ("generic/004", "-", "-", "pending"),
        ("generic/005", "-", "fail", "pending"), ("generic/006", "notrun", "pass", "changed")])
    body = letter_body(ek, "@@ fstests-summary 9.9 auto-1k\n")
    assert ("fstests group auto (6 tests, 0 excluded by ci/fstests/ext2.exclude), distro/9.9 "
            "against series/9.9 (%s):\n- mkfs: `mkfs.ext2 -b 1024` on the test and scratch "
            "disks\n- base: 2 pass, 1 fail, 1 not run (9s of tests)\n- series: 2 pass, 3 fail, "
            "0 not run (9s of tests)\n- verdicts: 2 pending, 2 same, 1 changed, 1 new failure\n"
            "- new failures on the series: generic/003\n- 2 of 6 "
            "tests have yet to run on one kernel or both: the run is not finished\n"
            "- failed on the kernel that ran them, yet to run on the other: generic/005 "
            "(series)\n- e2fsck -fn after each boot: clean (2 boots, test and scratch disks)\n"
            "- kernel reports in the consoles: 1 kind of line (0 on the base, 1 on the series)\n"
            % ek.ids[-1][:12]).split() == \
        body[body.index("fstests group"):body.index("- reproduce:")].split()
    # a mail's columns
    assert all(len(l) <= 72 for l in body[body.index("fstests group"):].splitlines()
               if " " in l.strip())


def test_a_letter_names_no_work_directory_path_in_the_e2fsck_findings(ek):
    """The run's e2fsck line names each finding's output by its place in the
    work directory of the machine that ran it; the letter keeps the
    findings and leaves those paths out."""
    # a record's boot names it relative to the work directory; a boot of
    # this machine's store by its absolute path
    store = "fstests/kernels/0468ea733f40c0b6-0a559d79f76748e3-5dc2ed09-05cb085c"
    found = ("boot series 2: scratch e2fsck -fn exit 4 (%s/boot-2/e2fsck.txt); boot series 2: "
             "test e2fsck -fn exit 0 but superblock state: not clean (%s/%s/boot-2/e2fsck.txt)"
             % (store, ek.work, store))
    fstests_md(ek, "auto", ek.rev("distro/9.9"), ek.ids[-1],
               [("generic/001", "pass", "pass", "same")], e2fsck=found)
    body = letter_body(ek, "@@ fstests-summary 9.9 auto\n")
    text = " ".join(body.split())
    assert "fstests/kernels/" not in body and str(ek.work) not in body
    assert "- new failures on the series: none\n" in body
    assert ("- e2fsck -fn after each boot: boot series 2: scratch e2fsck -fn exit 4; boot "
            "series 2: test e2fsck -fn exit 0 but superblock state: not clean - kernel") in text


def test_a_letter_says_none_so_far_while_tests_are_pending(ek):
    """No new failure among the tests run on both kernels is not yet the
    run's result while others are pending."""
    fstests_md(ek, "auto", ek.rev("distro/9.9"), ek.ids[-1],
               [("generic/001", "pass", "pass", "same"), ("generic/002", "-", "pass", "pending")])
    body = letter_body(ek, "@@ fstests-summary 9.9 auto\n")
    assert "- new failures on the series: none so far\n" in body
    assert "- 1 of 2 tests have yet to run on one kernel or both" in body


@pytest.mark.parametrize("which", ["base", "series"])
def test_a_letter_summarizing_an_fstests_run_of_other_kernels_is_refused(ek, which):
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    # a run of another head (the series' first commit), or on another base
    fstests_md(ek, "auto", ek.ids[0] if which == "base" else base,
               ek.ids[0] if which == "series" else ek.ids[-1],
               [("generic/001", "pass", "pass", "same")])
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ fstests-summary 9.9 auto\n")
    with pytest.raises(ForkError) as e:
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    msg = str(e.value)
    assert "\n" not in msg and "`@@ fstests-summary 9.9 auto` tested %s" % which in msg
    assert "not the %s being exported" % ("base" if which == "base" else "head") in msg
    fstests_md(ek, "auto", base, ek.ids[-1], [("generic/001", "pass", "pass", "same")])
    cmd_export.check_summarized(str(tmpl), base, ek.ids)


# -- @@ check-summary: the check tables of a head, summarized ----------------------

def summary_tables(ek, head, commits, names=("base-stress", "kcsan-stress"), suffix="",
                   with_base=True):
    """Tables under records/checks/9.9/<head>/ (named <name><suffix>.json),
    each a passing row of the base (unless not `with_base`) and of every
    commit of `commits` (their trees)."""
    d = ek.repo / "records" / "checks" / KVER / head
    d.mkdir(parents=True, exist_ok=True)
    base = ek.rev("distro/9.9")
    for name in names:
        flavour, test = name.split("-", 1)
        rows = []
        for k, c in enumerate(([base] if with_base else []) + list(commits)):
            rows.append({"commit": c, "tree": ek.rev(c + "^{tree}"),
                         "subject": ek.git("log", "-1", "--format=%s", c),
                         "flavour": flavour, "test": test, "details": {}, "passed": True,
                         "cells": {x: "pass" for x in ("checkpatch", "build", "boot", "test",
                                                       "e2fsck", "counts")},
                         "log": "logs/check-%s-2026010%d-000000.log"
                                % (c[:12], names.index(name) + 1)})
        (d / ("%s%s.json" % (name, suffix))).write_text(json.dumps(rows))


def test_a_letter_summarizes_the_check_tables_of_its_own_trees(ek):
    """The tables of the series' head, and those carried to a reword of it
    (other commit ids, the same trees), are summarized in the letter."""
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    summary_tables(ek, "head", ek.ids)
    tmpl = ek.repo / "mailing" / "own.tmpl"
    body = letter_body(ek, "Every other check:\n\n@@ check-summary 9.9 head\n")
    assert "Every other check:\n\n- base, stress: passes on all 3 patches (3 runs here). " \
        "The base passes\n  in its 1 run.\n- kcsan, stress: passes on all 3 patches (3 runs " \
        "here). The base passes\n  in its 1 run.\nBASE" in body
    # a reword: new commit ids, the same trees; its tables, not carried,
    # beside the old ones: each tree is one patch, its runs counted once
    reworded = cmd_export.mail_commits(base, ek.ids, ("Someone Else", "else@example.org"))
    assert reworded != ek.ids
    summary_tables(ek, "head", reworded, suffix="-20260109-000000")
    cmd_export.check_summarized(str(tmpl), base, ek.ids)
    cmd_export.check_summarized(str(tmpl), base, reworded)
    values = {k: k.upper() for k in cmd_export.PLACEHOLDERS}
    _, body = cmd_export.render_template(str(tmpl), values, optional=("bench",))
    assert "Every other check:\n\n- base, stress: passes on all 3 patches (6 runs here). " \
        "The base passes\n  in its 1 run.\n- kcsan, stress: passes on all 3 patches (6 runs " \
        "here). The base passes\n  in its 1 run.\nBASE" in body


def test_a_letter_summarizing_other_trees_is_refused_in_one_line(ek):
    """A head of another version of the series (one tree differs), a head
    whose tables lack a commit or the base, and a line without its two
    arguments are refused, in one line that says what to do; the verb
    writes nothing."""
    from forkkit.core.errors import ForkError
    from forkkit.publish import export as cmd_export
    base = ek.rev("distro/9.9")
    tmpl = ek.repo / "mailing" / "own.tmpl"
    tmpl.write_text("subject\n@@ check-summary 9.9 head\n")
    # v2: its second commit another tree
    scratch = ek.tmp / "scratch"
    ek.git("checkout", "-q", "-b", "v2", ek.ids[0], cwd=scratch)
    (scratch / "fs" / "ext2" / "inode.c").write_text("/* inode line 5: scalable v2 */\n")
    ek.git("commit", "-q", "-am", "ext2: scale inode allocation", cwd=scratch)
    ek.git("push", "-q", "-f", str(ek.ktree), "v2:refs/heads/v2", cwd=scratch)
    v2 = ek.ids[:1] + [ek.rev("v2")]
    summary_tables(ek, "head", v2)
    with pytest.raises(ForkError) as e:
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    msg = str(e.value)
    assert "\n" not in msg and "`@@ check-summary 9.9 head`" in msg
    assert "1 commit of other trees (%s" % v2[1][:12] in msg
    assert "no row of 2/3 %s, 3/3 %s" % (ek.ids[1][:12], ek.ids[2][:12]) in msg
    assert "tools/fork check --carry" in msg
    # every tree of the series, and one more
    shutil.rmtree(ek.repo / "records" / "checks" / KVER / "head")
    summary_tables(ek, "head", ek.ids + v2[1:])
    with pytest.raises(ForkError, match=r"\(1 commit of other trees \(%s tree [0-9a-f]{12} in "
                       r"records/checks/9.9/head/base-stress.json\)\)" % v2[1][:12]):
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    # the series' own commits, but tables without 3/3
    shutil.rmtree(ek.repo / "records" / "checks" / KVER / "head")
    summary_tables(ek, "head", ek.ids[:2])
    with pytest.raises(ForkError, match=r"no row of 3/3 %s\)" % ek.ids[2][:12]):
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    # every commit of the series, but no table with the base
    shutil.rmtree(ek.repo / "records" / "checks" / KVER / "head")
    summary_tables(ek, "head", ek.ids, with_base=False)
    with pytest.raises(ForkError, match=r"\(no row of the base %s\): " % base[:12]):
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    # the series' trees and base, numbered otherwise than the series
    shutil.rmtree(ek.repo / "records" / "checks" / KVER / "head")
    summary_tables(ek, "head", [ek.ids[1], ek.ids[0], ek.ids[2]])
    with pytest.raises(ForkError) as e:
        cmd_export.check_summarized(str(tmpl), base, ek.ids)
    assert "`@@ check-summary 9.9 head` would number the patches otherwise than the series " \
        "being exported (its tables give 3 patches on base %s, the series sends 3 on %s; " \
        "patch 1 is %s there, %s here)" % (base[:12], base[:12], ek.ids[1][:12],
                                           ek.ids[0][:12]) in str(e.value)
    assert "\n" not in str(e.value)
    for line in ("@@ check-summary 9.9", "@@ check-summary 9.9 head extra"):
        tmpl.write_text("subject\n%s\n" % line)
        with pytest.raises(ForkError, match="check-summary takes VER HEAD"):
            cmd_export.check_summarized(str(tmpl), base, ek.ids)
    # through the verb: the primary series' letter names the head of v2
    summary_tables(ek, "head", v2)
    letter = ek.repo / "mailing" / "cover-letter.tmpl"
    letter.write_text(letter.read_text().replace(
        "{check_table}\n", "{check_table}\n\n@@ check-summary 9.9 head\n", 1))
    ek.commit_repo("letter")
    res = ek.fork("export")
    assert res.rc == 1, res
    # the progress lines, then the refusal in one line
    err = [l for l in res.err.strip().splitlines() if not l.startswith("[")]
    assert len(err) == 1 and "summarizes tables that did not check the series" in err[0], err
    assert "Traceback" not in res.err
    assert_nothing_written(ek, 1)


def test_changelog_problem_and_the_repository_changelogs():
    """A changelog is the list alone: export writes "Changes in vN:" above
    it.  Every changelog this repository holds must pass."""
    from forkkit.publish.export import changelog_problem
    assert changelog_problem(3, "- Split.\n") is None
    assert changelog_problem(3, "* Split.\n") is None
    assert changelog_problem(3, "- Changes since v2: none in patch 1\n") is None
    for heading in ("Changes since v2 (on 6.12):", "Changes in v3:", "## Changes since v2",
                    "Changes since v2", "Since v2:", "v2 -> v3:", "Changes in version 3:"):
        assert changelog_problem(3, heading + "\n\n- Split.\n").startswith(
            "starts with %r, not a `- ...` item" % heading), heading
    assert changelog_problem(3, "\n").startswith("is empty")
    found = sorted((ROOT / "mailing").rglob("changelog/v*.md"))
    assert found
    for path in found:
        n = int(re.match(r"v(\d+)\.md$", path.name).group(1))
        assert changelog_problem(n, path.read_text()) is None, path
