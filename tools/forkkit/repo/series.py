"""The series as stored in this repository.

A series directory (``patches/`` for the primary series, ``backports/<ver>/``
for a backport) holds:

``base``
    ``key: value`` lines naming the distro snapshot the series applies to:
    ``package`` (e.g. linux-source-6.12), ``version`` (the Debian package
    version), ``upstream`` (the kernel.org stable version it corresponds to)
    and ``sha256`` (of the tarball the package installs); optionally
    ``branches``, the name of this series' branches in the kernel tree
    (``fixes``: topics ``fixes-topic/<ver>/<name>``, head ``fixes/<ver>``) for a
    series that shares its snapshot with another, such as ``fixes/``.
``series``
    the patch files in order, one per line (``#`` starts a comment), quilt
    style; an optional second word names the topic branch
    (``topic/<name>``), else the name comes from the file name.
``*.patch``
    ``git format-patch`` output, one commit each.
"""

import os
import re
import shlex

from ..core.errors import ForkError
from ..core.paths import repo_root


PRIMARY = "patches"


def read_text_lines(path):
    """The lines of a text file the user edits; a one-line error if it is
    not UTF-8."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except UnicodeDecodeError as exc:
        raise ForkError("%s is not UTF-8 text (byte 0x%02x at offset %d): save it as UTF-8"
                        % (path, exc.object[exc.start], exc.start))


def read_kv(path):
    """`key: value` lines (`#` starts a comment) -> dict."""
    data, first = {}, {}
    for n, line in enumerate(read_text_lines(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" not in line:
            raise ForkError("%s:%d: expected `key: value`, got %r" % (path, n, line))
        key, value = line.split(":", 1)
        if key.strip() in first:
            raise ForkError("%s:%d: `%s:` is given twice (also on line %d): keep one"
                            % (path, n, key.strip(), first[key.strip()]))
        first[key.strip()] = n
        data[key.strip()] = value.strip()
    return data


def subject_of_text(text):
    """The subject of a format-patch mail (folded lines joined, encoded
    words decoded) without its leading [PATCH ...] tag, or None."""
    import email.header
    import email.parser
    head = text.split("\n\n", 1)[0]
    if head.startswith("From ") and "\n" in head:
        head = head.split("\n", 1)[1]          # the mbox "From <sha> <date>" line
    raw = email.parser.HeaderParser().parsestr(head + "\n\n").get("Subject")
    if raw is None:
        return None
    subject = str(email.header.make_header(email.header.decode_header(raw)))
    subject = " ".join(subject.split())
    return re.sub(r"^\[PATCH[^\]]*\]\s*", "", subject)


def patch_subject(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return subject_of_text(fh.read())


def topic_name(patch_file):
    """0002-ext2-foo-bar.patch -> ext2-foo-bar"""
    name = os.path.basename(patch_file)
    name = re.sub(r"\.patch$", "", name)
    name = re.sub(r"^[0-9]{4}-", "", name)
    return name


class Series:
    def __init__(self, path=None):
        repo = repo_root()
        if path is not None and not path.strip():
            raise ForkError("no series directory named (an empty --series): name one such as "
                            "`patches` or `backports/6.1`")
        self.path = os.path.abspath(os.path.join(repo, path or PRIMARY))
        self.rel = os.path.relpath(self.path, repo)
        if self.rel == os.pardir or self.rel.startswith(os.pardir + os.sep):
            raise ForkError("series %s is outside this repository (%s): name a series "
                            "directory in it, such as `patches` or `backports/6.1`"
                            % (path, repo))
        base_file = os.path.join(self.path, "base")
        if not os.path.isfile(base_file):
            raise ForkError("no series at %s (missing %s): name a series directory such as "
                            "`patches` or `backports/6.1`" % (self.rel, base_file))
        self.base = read_kv(base_file)
        for key in ("package", "version", "sha256"):
            if key not in self.base:
                raise ForkError("%s: missing `%s:` line" % (base_file, key))
        self.package = self.base["package"]
        m = re.match(r"linux-source-(\d+\.\d+)$", self.package)
        if not m:
            raise ForkError("%s: package %r is not linux-source-<major.minor>"
                            % (base_file, self.package))
        self.kver = m.group(1)
        self.patches = self._read_series()

    def _read_series(self):
        series_file = os.path.join(self.path, "series")
        patches = []
        self.names = {}
        if not os.path.exists(series_file):
            return patches
        topics = {}
        for line in read_text_lines(series_file):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if "/" in words[0] or words[0] in (".", ".."):
                raise ForkError("%s: %r is not a file name in %s/: each line names a patch "
                                "file of that directory" % (series_file, words[0], self.rel))
            full = os.path.join(self.path, words[0])
            if not os.path.isfile(full):
                raise ForkError("%s lists %s, which does not exist"
                                % (series_file, words[0]))
            if len(words) > 1:
                if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", words[1]):
                    raise ForkError("%s: topic name %r for %s is not a valid branch "
                                    "name component" % (series_file, words[1], words[0]))
                self.names[full] = words[1]
            if full in patches:
                raise ForkError("%s lists %s twice: each patch once" % (series_file, words[0]))
            topic = self.topic_of(full)
            if topic in topics:
                raise ForkError("%s: topic name %r is given to both %s and %s: one branch "
                                "per patch, so give one of them another name (second column)"
                                % (series_file, topic, topics[topic], words[0]))
            topics[topic] = words[0]
            patches.append(full)
        return patches

    @property
    def is_primary(self):
        return self.rel == PRIMARY

    @property
    def distro_branch(self):
        return "distro/%s" % self.kver

    @property
    def branch_name(self):
        """The `branches:` of the base file, or None (the default names)."""
        name = self.base.get("branches")
        if name is not None and not re.match(r"^[a-z][a-z0-9-]*$", name):
            raise ForkError("%s/base: branches %r is not a plain lower-case word (e.g. `fixes`)"
                            % (self.rel, name))
        return name

    @property
    def topic_prefix(self):
        if self.branch_name:
            return "%s-topic/%s/" % (self.branch_name, self.kver)
        if self.is_primary:
            return "topic/"
        return "backport/%s/" % self.kver

    @property
    def head_branch(self):
        if self.branch_name:
            return "%s/%s" % (self.branch_name, self.kver)
        return "series/%s" % self.kver

    def topic_of(self, patch):
        """The topic name: the series file's second column, else from the file name."""
        return self.names.get(patch) or topic_name(patch)

    def topics(self):
        """[(patch_path, branch_name)] in series order."""
        return [(p, self.topic_prefix + self.topic_of(p)) for p in self.patches]


def all_series():
    """The primary series and every backport that has a base file."""
    out = [Series()]
    bdir = os.path.join(repo_root(), "backports")
    if os.path.isdir(bdir):
        for ver in sorted(os.listdir(bdir)):
            if os.path.isfile(os.path.join(bdir, ver, "base")):
                out.append(Series(os.path.join("backports", ver)))
    return out


FIXES = "fixes"
# the next version of the primary series while it is being reworked, and
# patches of it that go to other maintainers (next/percpu/)
NEXT = "next"


def stored_series():
    """all_series(), the fixes series (fixes/, fixes/backports/<ver>/) and
    the next version (next/, next/<part>/): each of these with its own
    `branches:` name in its base file."""
    out = all_series()
    root = repo_root()
    dirs = [FIXES]
    bdir = os.path.join(root, FIXES, "backports")
    if os.path.isdir(bdir):
        dirs += [os.path.join(FIXES, "backports", v) for v in sorted(os.listdir(bdir))]
    ndir = os.path.join(root, NEXT)
    if os.path.isdir(ndir):
        dirs += [NEXT] + [os.path.join(NEXT, d) for d in sorted(os.listdir(ndir))
                          if os.path.isdir(os.path.join(ndir, d))]
    for rel in dirs:
        if os.path.isfile(os.path.join(root, rel, "base")):
            out.append(Series(rel))
    return out


def default_revs(a=None, b=None):
    """(A, B): the revisions given, else the primary series' distro branch
    (the stock kernel) and its head."""
    if a and b:
        return a, b
    s = Series()
    return a or s.distro_branch, b or s.head_branch


def fork_command(verb, series=None, *args):
    """`tools/fork VERB [--series DIR] ARGS` as a user would type it."""
    parts = ["tools/fork", verb]
    if series is not None and not series.is_primary:
        parts += ["--series", series.rel]
    return " ".join(shlex.quote(str(p)) for p in parts + list(args))


def setup_hint(rev):
    """How to create the branch `rev` names: import its version and lay out
    the series that has that version (the primary one or a backport)."""
    m = re.match(r"^(?:refs/heads/)?(?:distro|series|backport)/(\d+\.\d+)(?:/|$)", rev)
    if not m:
        return "run `tools/fork import` and `tools/fork branches` first"
    ver = m.group(1)
    for s in all_series():
        if s.kver == ver:
            return "run `tools/fork import %s` and `%s` first" % (ver, fork_command("branches", s))
    return ("no series of this repository is on %s: run `tools/fork import %s`, or "
            "`tools/fork rebase --onto %s --into backports/%s` to make one" % (ver, ver, ver, ver))
