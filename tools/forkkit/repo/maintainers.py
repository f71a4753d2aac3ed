"""maintainers: write MAINTAINERS for this repository, in the kernel's format.

For each patch of the series there is one entry, titled with the patch
subject: ``F:`` lines name the upstream files the patch touches, and the
``M:``/``R:``/``L:``/``S:`` lines are the base tree's own entries that
``scripts/get_maintainer.pl`` yields for the patch.  They are copied from the
base tree's MAINTAINERS (the sections ``get_maintainer.pl --sections``
names, e.g. EXT2 FILE SYSTEM and THE REST), never typed in by hand, so the
file says who `tools/fork export` will mail and why.  The fork's own areas
(tools, tests, CI, backports, mailing) follow, maintained by the ext2-scale
developers.

The base tree is the series' distro commit, checked out sparsely (top-level
files, scripts/, include/ and the touched directories) in a temporary
worktree of the kernel tree; the user's checkout is not touched.

``--check`` changes nothing and exits 1 if MAINTAINERS is missing or stale.
``tools/fork export`` regenerates it.
"""

import difflib
import os
import re
import shutil
import tempfile

from . import series as series_mod
from .series import patch_subject
from .common import (ForkError, Progress, ensure_dir, git, ktree, repo_root, require_ktree,
                     rev_parse, run, wpath)

HELP = "write MAINTAINERS: upstream maintainers per patch, and the fork's own areas"

PROJECT_M = "ext2-scale developers <ext2-scale@lists.invalid>"
# title -> files, in the kernel's alphabetical order
PROJECT_AREAS = [
    ("BACKPORTS", ["backports/"]),
    ("CI", [".ci/", "ci/"]),
    ("FORK KIT TOOLS", ["tests/", "tools/"]),
    ("MAILING", ["mailing/"]),
]
# get_maintainer.pl as b4 runs it (b4's send-auto-to-cmd / send-auto-cc-cmd)
GM_OPTS = ["--nogit", "--nogit-fallback", "--nogit-chief-penguins", "--norolestats"]
# What checkpatch.pl and get_maintainer.pl need of a tree besides the files a
# series touches: top_of_kernel_tree() wants these directories to exist.
TOP_DIRS = ["Documentation", "arch", "drivers", "fs", "init", "ipc", "kernel", "lib"]
FULL_DIRS = ["scripts", "include", "LICENSES"]
TAG_ORDER = "MRLS"


def add_arguments(p):
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 if MAINTAINERS is missing or stale")


def maintainers_path():
    return os.path.join(repo_root(), "MAINTAINERS")


# -- a sparse, temporary checkout of the base tree ---------------------------

def _cone_escape(path):
    return re.sub(r"([\\*?\[\]!#])", r"\\\1", path)


def cone_patterns(full_dirs, top_dirs=TOP_DIRS):
    """Sparse-checkout (cone) patterns: every top-level file, the files
    directly in `top_dirs` and in the parents of `full_dirs`, and all of
    `full_dirs`."""
    full = set(d.strip("/") for d in full_dirs if d.strip("/"))
    full = {d for d in full if not any(d.startswith(o + "/") for o in full if o != d)}
    parents = set(top_dirs)
    for d in full:
        parts = d.split("/")
        for i in range(1, len(parts)):
            parents.add("/".join(parts[:i]))
    parents = {p for p in parents
               if not any(p == f or p.startswith(f + "/") for f in full)}
    lines = ["/*", "!/*/"]
    for d in sorted(parents | full, key=lambda s: s.split("/")):
        lines.append("/%s/" % _cone_escape(d))
        if d in parents:
            lines.append("!/%s/*/" % _cone_escape(d))
    return "".join(line + "\n" for line in lines)


class BaseTree:
    """A temporary, sparse `git worktree add --detach` of `commit`.

    `dirs` are the directories (complete, recursively) the caller needs on top
    of the top-level files, scripts/ and include/.  Use as a context manager;
    the worktree is removed on exit.  `git(args)` runs git inside it with the
    sparse-checkout settings.
    """

    def __init__(self, commit, dirs=(), prefix="base-"):
        self.commit = commit
        self.dirs = list(dirs)
        self.prefix = prefix
        self.tmp = None
        self.path = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix=self.prefix, dir=ensure_dir(wpath("tmp")))
        self.path = os.path.join(self.tmp, "linux")
        try:
            git(["worktree", "add", "-q", "--no-checkout", "--detach", self.path, self.commit])
            gitdir = git(["rev-parse", "--absolute-git-dir"], cwd=self.path)
            ensure_dir(os.path.join(gitdir, "info"))
            with open(os.path.join(gitdir, "info", "sparse-checkout"), "w") as fh:
                fh.write(cone_patterns(FULL_DIRS + self.dirs))
            self.git(["reset", "-q", "--hard", self.commit])
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def git(self, args, check=True, input=None, env=None):
        return git(["-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true",
                    "-c", "advice.updateSparsePath=false"] + list(args),
                   cwd=self.path, check=check, input=input, env=env)

    def reset(self):
        """Back to the pristine base commit (after a `git am`)."""
        self.git(["am", "--abort"], check=False)
        self.git(["reset", "-q", "--hard", self.commit])
        self.git(["clean", "-q", "-f", "-d", "-x"])

    def __exit__(self, *exc):
        run(["git", "worktree", "remove", "--force", "--force", self.path], cwd=ktree(),
            check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)
        run(["git", "worktree", "prune"], cwd=ktree(), check=False)


# -- MAINTAINERS parsing ------------------------------------------------------

def parse_sections(text):
    """{title: [(tag, value), ...]} of a kernel-format MAINTAINERS text."""
    sections = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^([A-Z]):\s*(.*?)\s*$", line)
        if m:
            if current is not None:
                sections[current].append((m.group(1), m.group(2)))
        elif not line.strip():
            current = None
        else:
            current = line.strip()
            sections.setdefault(current, [])
    return sections


def address(text):
    """The e-mail address in 'Name <a@b>', 'a@b (moderated ...)' or 'a@b'."""
    m = re.search(r"<([^<>\s]+@[^<>\s]+)>", text)
    if m:
        return m.group(1).lower()
    for word in text.split():
        if "@" in word:
            return word.strip("<>(),;").lower()
    return None


def touched_files(patch):
    """Upstream paths a format-patch file changes (both sides of a rename)."""
    files = []
    with open(patch, errors="replace") as fh:
        for line in fh:
            m = re.match(r"^(?:---|\+\+\+) (?:a|b)/(.+?)\s*$", line)
            if not m:
                m = re.match(r"^(?:rename|copy) (?:from|to) (.+?)\s*$", line)
            if m and m.group(1) not in files:
                files.append(m.group(1))
    return sorted(files)


def get_maintainer(base_dir, args, patches):
    script = os.path.join(base_dir, "scripts", "get_maintainer.pl")
    if not os.path.isfile(script):
        raise ForkError("the base tree has no scripts/get_maintainer.pl: is distro/<ver> a "
                        "Debian linux-source import (`tools/fork import`)?")
    proc = run(["perl", script] + list(args) + [os.path.abspath(p) for p in patches],
               cwd=base_dir, check=False)
    if proc.returncode != 0:
        raise ForkError("scripts/get_maintainer.pl %s failed (exit %d):\n%s"
                        % (" ".join(args), proc.returncode,
                           (proc.stdout + proc.stderr).strip()[-2000:]))
    return proc.stdout


def yielded(base_dir, patches, which=()):
    """Address lines get_maintainer.pl yields (as b4 runs it), in its order."""
    out = []
    for line in get_maintainer(base_dir, GM_OPTS + list(which), patches).splitlines():
        line = line.strip()
        if line and address(line) and line not in out:
            out.append(line)
    return out


def section_names(base_dir, patch):
    """Titles of the MAINTAINERS sections get_maintainer.pl --sections names."""
    names = []
    block = []
    for line in get_maintainer(base_dir, ["--nogit", "--nogit-fallback", "--sections"],
                               [patch]).splitlines() + [""]:
        if line.strip():
            block.append(line)
            continue
        if block and not re.match(r"^[A-Z]:", block[0]) and block[0].strip() not in names:
            names.append(block[0].strip())
        block = []
    return names


def topic_entry(base_dir, sections, patch):
    """(title, [(tag, value)]) for one patch."""
    title = patch_subject(patch)
    if re.match(r"^[A-Z]:", title):
        title = "[%s]" % title      # would read as a tag line otherwise
    want = {address(a) for a in yielded(base_dir, [patch])}
    lines = []
    status_m = status_any = None    # S: of the first section we took an M: / anything from
    for name in section_names(base_dir, patch):
        entries = sections.get(name)
        if entries is None:
            raise ForkError("get_maintainer.pl names section %r, which the base tree's "
                            "MAINTAINERS does not have" % name)
        kept = [(t, v) for t, v in entries if t in "MRL" and address(v) in want]
        for tv in kept:
            if tv not in lines:
                lines.append(tv)
        st = [v for t, v in entries if t == "S"]
        if kept and st:
            status_any = status_any or st[0]
            if status_m is None and any(t == "M" for t, _ in kept):
                status_m = st[0]
    status = status_m or status_any
    lines.sort(key=lambda tv: TAG_ORDER.index(tv[0]))
    if status:
        lines.append(("S", status))
    lines += [("F", f) for f in touched_files(patch)]
    return title, lines


def render(series, topics, base_desc):
    out = ["List of maintainers of the ext2-scale fork",
           "==========================================",
           "",
           "Generated by `tools/fork maintainers` (do not edit by hand; rerun it, or",
           "`tools/fork export`, after changing the series or its base).",
           "",
           "The entries use the kernel's MAINTAINERS format.  There is one entry for",
           "each patch of %s/, titled with its subject, naming the upstream" % series.rel,
           "files it touches; its maintainers, reviewers, lists and status are the",
           "base tree's own entries that scripts/get_maintainer.pl yields for the",
           "patch, copied from the MAINTAINERS of the base tree:",
           "%s." % base_desc,
           "The fork's own areas follow.",
           "",
           "Maintainers List",
           "----------------",
           ""]
    if not topics:
        out += ["(%s/series lists no patches yet.)" % series.rel, ""]
    for title, lines in topics + [(t, [("M", PROJECT_M), ("S", "Maintained")]
                                      + [("F", f) for f in files])
                                  for t, files in PROJECT_AREAS]:
        out.append(title)
        out += ["%s:\t%s" % (t, v) for t, v in lines]
        out.append("")
    return "\n".join(out[:-1]) + "\n"


def base_description(commit):
    body = git(["log", "-1", "--format=%B", commit])
    kv = dict(re.findall(r"^(Package|Version): (\S+)$", body, re.M))
    if "Package" in kv and "Version" in kv:
        return "Debian %s %s" % (kv["Package"], kv["Version"])
    return "commit %s" % commit[:12]


def generate(series, base_tree, prog=None):
    """The MAINTAINERS text for `series`, from an open BaseTree of its base."""
    path = os.path.join(base_tree.path, "MAINTAINERS")
    if not os.path.isfile(path):
        raise ForkError("the base tree %s (%s) has no MAINTAINERS file, which every kernel "
                        "source ships at its top: import an unmodified Debian linux-source "
                        "with `tools/fork import %s`; nothing was written"
                        % (series.distro_branch, base_description(base_tree.commit),
                           series.kver))
    with open(path, errors="replace") as fh:
        sections = parse_sections(fh.read())
    topics = []
    for patch in series.patches:
        if prog:
            prog.say("get_maintainer.pl %s" % os.path.basename(patch))
        topics.append(topic_entry(base_tree.path, sections, patch))
    return render(series, topics, base_description(base_tree.commit))


def series_dirs(series):
    dirs = set()
    for patch in series.patches:
        for f in touched_files(patch):
            dirs.add(os.path.dirname(f))
    return sorted(d for d in dirs if d)


def compare(text):
    """None if MAINTAINERS holds `text`, else a unified diff."""
    path = maintainers_path()
    old = open(path).read() if os.path.exists(path) else ""
    if old == text:
        return None
    return "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                        "MAINTAINERS (in the repo)", "MAINTAINERS (generated)"))


def write(text):
    path = maintainers_path()
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main(args):
    prog = Progress("maintainers")
    require_ktree()
    series = series_mod.Series()
    base = rev_parse(series.distro_branch)
    prog.say("sparse checkout of %s (%s)" % (series.distro_branch, base[:12]))
    with BaseTree(base, series_dirs(series), prefix="maintainers-") as bt:
        text = generate(series, bt, prog)
    diff = compare(text)
    if args.check:
        if diff:
            print(diff, end="")
            raise ForkError("MAINTAINERS is %s: run `tools/fork maintainers` and commit it"
                            % ("missing" if not os.path.exists(maintainers_path())
                               else "stale (see the diff above)"))
        prog.say("MAINTAINERS is up to date")
        return 0
    if diff:
        write(text)
        prog.say("wrote %s (%d patch entries): commit it" % (maintainers_path(),
                                                             len(series.patches)))
    else:
        prog.say("MAINTAINERS is up to date")
    return 0
