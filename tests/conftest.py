"""Shared fixtures for the fork kit tests (tests/test_kit_*.py).

Everything runs against a scratch "project repo" (FORK_REPO), work dir
(FORK_WORKDIR), kernel tree (FORK_KTREE) and source dir (FORK_SRCDIR) under
pytest's tmp_path, with a tiny synthetic linux-source-9.9 tarball whose
Makefile fakes allnoconfig/olddefconfig/bzImage.  No real kernel, no QEMU.
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
FORK = TOOLS / "fork"
PYTHON = "/usr/bin/python3"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

# A shell starts a background job with SIGINT ignored, and a program
# inherits that: then neither this process nor the kits it starts react
# to the Ctrl-C the interrupt tests send.  The tests stand for a program
# run from a terminal, so SIGINT gets Python's own handler back (a child
# started from here gets the default action).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

KVER = "9.9"
DEBVER = "9.9.1-1"
PACKAGE = "linux-source-9.9"

# The fake kernel's Makefile: just enough of kbuild for cmd_build.
# allnoconfig copies KCONFIG_ALLCONFIG to $(O)/.config but drops $(DROP),
# as if that option's `depends on` were not met.  `%.o` prints a compiler
# warning for any source containing WARNME (for the W=1 patchcheck), naming
# the file as gcc does in kbuild's O= layout (relative to the build dir).
FAKE_MAKEFILE = """\
VERSION = 9
PATCHLEVEL = 9
SUBLEVEL = 1
O ?= .
DROP ?= CONFIG_NEEDS_DEP

allnoconfig:
\tgrep -v '^$(DROP)=' $(KCONFIG_ALLCONFIG) > $(O)/.config || true

olddefconfig:
\t@:

bzImage:
\tmkdir -p $(O)/arch/x86/boot $(O)/fs/ext2
\tcp $(O)/.config $(O)/arch/x86/boot/bzImage
\ttouch $(O)/fs/ext2/balloc.o $(O)/fs/ext2/inode.o
\techo built >> $(O)/build-count

%.o: %.c
\t@mkdir -p $(dir $(O)/$@) && touch $(O)/$@
\t@if grep -q WARNME $<; then echo "../../src/$<:2:1: warning: WARNME is not allowed"; fi
"""

BALLOC = "".join("/* balloc line %d */\n" % i for i in range(1, 21))
INODE = "".join("/* inode line %d */\n" % i for i in range(1, 21))

KERNEL_FILES = {
    # path: (mode, content) ; content None + mode "link:<target>" for symlinks
    "Makefile": (0o644, FAKE_MAKEFILE),
    "Kconfig": (0o644, "config EXT2_FS\n\tbool \"ext2\"\n\nconfig NEEDS_DEP\n\tbool\n"),
    "README": (0o644, "Fake linux-source for the fork kit tests.\n"),
    ".gitignore": (0o644, "*.gen\n"),
    "include/config.gen": (0o644, "shipped but matched by .gitignore\n"),
    "fs/ext2/Kconfig": (0o644, "config EXT2_FS_XATTR\n\tbool\n"),
    "fs/ext2/balloc.c": (0o644, BALLOC),
    "fs/ext2/inode.c": (0o644, INODE),
    "scripts/gen.sh": (0o755, "#!/bin/sh\necho generated\n"),
    "scripts/link": ("link:gen.sh", None),
}


def make_tarball(path, files=KERNEL_FILES, top="linux-source-9.9"):
    """A deterministic .tar.xz of `files` under `top/`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        dirs = set()
        for name in sorted(files):
            parts = name.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    ti = tarfile.TarInfo("%s/%s" % (top, d))
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 946684800
                    tf.addfile(ti)
            mode, content = files[name]
            ti = tarfile.TarInfo("%s/%s" % (top, name))
            ti.mtime = 946684800
            if isinstance(mode, str) and mode.startswith("link:"):
                ti.type, ti.mode, ti.linkname = tarfile.SYMTYPE, 0o777, mode[5:]
                tf.addfile(ti)
            else:
                data = content.encode()
                ti.mode, ti.size = mode, len(data)
                tf.addfile(ti, io.BytesIO(data))
    import lzma
    with open(path, "wb") as fh:
        fh.write(lzma.compress(buf.getvalue()))
    return path


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return "rc=%s\n--- stdout\n%s\n--- stderr\n%s" % (self.rc, self.out, self.err)


# A stand-in for apt-get/apt-cache on the kit's private apt state: the
# "archive" is a JSON file ($FAKE_APT_ARCHIVE) of
# {package: [{"version", "suite", "deb", "sha256"}]}, newest first.
# $FAKE_APT_UNREACHABLE makes `update` fail as apt does without a network.
# Each call's arguments are logged to $FAKE_APT_LOG.
FAKE_APT = r"""#!/usr/bin/python3
import json, os, shutil, sys
prog, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["FAKE_APT_LOG"], "a") as fh:
    fh.write(prog + " " + " ".join(args) + "\n")
words = [a for i, a in enumerate(args) if a != "-o" and (i == 0 or args[i - 1] != "-o")
         and a != "-q"]
with open(os.environ["FAKE_APT_ARCHIVE"]) as fh:
    archive = json.load(fh)
cmd = words[0]
if cmd == "update":
    if os.environ.get("FAKE_APT_UNREACHABLE"):
        print("Err:1 http://deb.example.org/debian trixie InRelease\n"
              "  Could not resolve 'deb.example.org'")
        print("E: Failed to fetch http://deb.example.org/debian/dists/trixie/InRelease",
              file=sys.stderr)
        sys.exit(100)
    sys.exit(0)
if cmd == "madison":
    for e in archive.get(words[1], []):
        print("%s | %s | http://deb.example.org/debian %s/main amd64 Packages"
              % (words[1], e["version"], e["suite"]))
    sys.exit(0)
pkg, _, ver = words[1].partition("=")
hits = [e for e in archive.get(pkg, []) if e["version"] == ver]
if not hits:
    print("E: Version '%s' for '%s' was not found" % (ver, pkg), file=sys.stderr)
    sys.exit(100)
e = hits[0]
name = "%s_%s_all.deb" % (pkg, ver)
if cmd == "show":
    print("Package: %s\nVersion: %s\nFilename: pool/main/l/linux/%s\nSize: %d\nSHA256: %s\n"
          % (pkg, ver, name, os.path.getsize(e["deb"]), e["sha256"]))
elif cmd == "download":
    shutil.copyfile(e["deb"], os.path.join(os.getcwd(), name))
"""

BASE_CONFIG = """\
# test fragment
CONFIG_EXT2_FS=y
CONFIG_MODULES=n
CONFIG_NOT_IN_THIS_TREE=y  # if-present
"""

AUTHOR = {
    "GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_AUTHOR_DATE": "1700000000 +0100",
    "GIT_COMMITTER_NAME": "A U Thor", "GIT_COMMITTER_EMAIL": "author@example.org",
    "GIT_COMMITTER_DATE": "1700000000 +0100",
}

PATCHES = [
    ("fs/ext2/balloc.c", "/* balloc line 10 */\n", "/* balloc line 10: faster */\n",
     "ext2: make balloc faster", "Replace the slow path.\n\nSigned-off-by: A U Thor <author@example.org>"),
    ("fs/ext2/inode.c", "/* inode line 5 */\n", "/* inode line 5: scalable */\n",
     "ext2: scale inode allocation", "Per-group locks.\n\nSigned-off-by: A U Thor <author@example.org>"),
]


class Kit:
    """A scratch project repo + work dir + kernel tree, and helpers."""

    def __init__(self, tmp, tarball, monkeypatch, templates=None):
        self.tmp = Path(tmp)
        self.mp = monkeypatch
        self.templates = templates
        self.repo = self.tmp / "repo"
        self.work = self.tmp / "work"
        self.ktree = self.work / "linux"
        self.srcdir = self.tmp / "usr-src"
        self.bin = self.tmp / "bin"
        for d in (self.repo, self.work, self.srcdir, self.bin):
            d.mkdir(parents=True, exist_ok=True)
        self.tarball = self.srcdir / ("%s.tar.xz" % PACKAGE)
        shutil.copyfile(tarball, self.tarball)
        gitconfig = self.tmp / "gitconfig"
        gitconfig.write_text("[user]\n\tname = Test User\n\temail = test@example.org\n"
                             "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
        self.env = {
            "FORK_REPO": str(self.repo),
            "FORK_WORKDIR": str(self.work),
            "FORK_FSTESTS_ROOTS": str(self.work / "fstests-roots"),
            "FORK_KTREE": str(self.ktree),
            "FORK_SRCDIR": str(self.srcdir),
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C.UTF-8",
            "PATH": "%s:%s" % (self.bin, os.environ.get("PATH", "/usr/bin:/bin")),
        }
        for k, v in self.env.items():
            monkeypatch.setenv(k, v)
        for k in list(os.environ):
            if k.startswith("GIT_") and k not in self.env:
                monkeypatch.delenv(k)
        self.fake_dpkg(DEBVER)
        self.fake_apt({})
        # the project repo: patches/base for 9.9, ci/kconfig, ci/guest/init
        # and the guest scripts (ci/guest/scripts/, this checkout's)
        (self.repo / "patches").mkdir()
        self.write_base(sha256(self.tarball))
        (self.repo / "patches" / "series").write_text("")
        kc = self.repo / "ci" / "kconfig"
        kc.mkdir(parents=True)
        (kc / "base.config").write_text(BASE_CONFIG)
        (kc / "debug.config").write_text("CONFIG_DEBUG_KERNEL=y\n")
        (kc / "lockstat.config").write_text("CONFIG_LOCK_STAT=y\n")
        (self.repo / "ci" / "guest").mkdir()
        (self.repo / "ci" / "guest" / "init").write_text("#!/bin/busybox sh\necho init\n")
        shutil.copytree(ROOT / "ci" / "guest" / "scripts", self.repo / "ci" / "guest" / "scripts")
        self.git("init", "-q", cwd=self.repo)
        self.commit_repo("initial")

    # -- helpers ---------------------------------------------------------
    def write_base(self, sha, version=DEBVER, package=PACKAGE):
        (self.repo / "patches" / "base").write_text(
            "package: %s\nversion: %s\nupstream: 9.9.1\nsha256: %s\n" % (package, version, sha))

    def fake_dpkg(self, version, installed=True):
        script = self.bin / "dpkg-query"
        if installed:
            script.write_text("#!/bin/sh\nprintf 'ii  %s'\n" % version)
        else:
            script.write_text("#!/bin/sh\necho \"dpkg-query: no packages found matching $4\" >&2\n"
                              "exit 1\n")
        script.chmod(0o755)

    def fake_apt(self, archive, sources=None):
        """apt-get/apt-cache stand-ins serving `archive` (see FAKE_APT), and
        the machine's apt sources as `sources` (deb822 text; in this
        process: a subprocess reads the machine's own)."""
        for prog in ("apt-get", "apt-cache"):
            script = self.bin / prog
            script.write_text(FAKE_APT)
            script.chmod(0o755)
        (self.tmp / "archive.json").write_text(json.dumps(archive))
        src = self.tmp / "debian.sources"
        src.write_text(sources or (
            "Types: deb\nURIs: http://deb.example.org/debian\nSuites: bookworm bookworm-updates\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"))
        for k, v in (("FAKE_APT_ARCHIVE", self.tmp / "archive.json"),
                     ("FAKE_APT_LOG", self.tmp / "apt.log")):
            self.env[k] = str(v)
            self.mp.setenv(k, str(v))
        from forkkit.repo import debian
        self.mp.setattr(debian, "sources_files", lambda: [str(src)])

    def serve_archive(self, versions):
        """Serve [(version, suite, tarball)] of linux-source-9.9 from the fake
        archive (real .deb files)."""
        archive = {PACKAGE: []}
        for version, suite, tarball in versions:
            deb, sha = self.make_deb(tarball, version)
            archive[PACKAGE].append({"version": version, "suite": suite, "deb": deb,
                                     "sha256": sha})
        self.fake_apt(archive)
        return archive

    def make_deb(self, tarball, version, package=PACKAGE):
        """A real .deb holding ./usr/src/<package>.tar.xz; returns (path, sha256)."""
        root = self.tmp / ("deb-%s" % version)
        if root.exists():
            shutil.rmtree(root)
        (root / "DEBIAN").mkdir(parents=True)
        (root / "usr" / "src").mkdir(parents=True)
        shutil.copyfile(tarball, root / "usr" / "src" / ("%s.tar.xz" % package))
        (root / "DEBIAN" / "control").write_text(
            "Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: T <t@example.org>\n"
            "Description: test\n" % (package, version))
        deb = self.tmp / ("%s_%s_all.deb" % (package, version))
        subprocess.run(["dpkg-deb", "-Zxz", "--root-owner-group", "--build", str(root), str(deb)],
                       check=True, capture_output=True)
        return str(deb), sha256(deb)

    def commit_repo(self, msg):
        self.git("add", "-A", cwd=self.repo)
        self.git("commit", "-q", "--allow-empty", "-m", msg, cwd=self.repo)

    def git(self, *args, cwd=None, env=None, check=True, input=None):
        full = dict(os.environ)
        full.update(env or {})
        proc = subprocess.run(["git"] + list(args), cwd=str(cwd or self.ktree), env=full,
                              capture_output=True, text=True, input=input)
        if check:
            assert proc.returncode == 0, "git %s: %s%s" % (args, proc.stdout, proc.stderr)
        return proc.stdout.strip()

    def rev(self, ref, cwd=None):
        return self.git("rev-parse", "--verify", "-q", ref, cwd=cwd, check=False) or None

    def refs(self):
        """{refname: id} of every branch and tag in the kernel tree."""
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split() for line in out.splitlines())

    def fork(self, *args, env=None, timeout=120, subprocess_=False):
        """Run `tools/fork ARGS` with the kit's environment (plus `env`).

        In-process through cli.main (what tools/fork calls) by default,
        which saves a Python start per call; subprocess_=True runs the real
        script.  Returns rc, out, err."""
        args = [str(a) for a in args]
        if subprocess_:
            full = dict(os.environ)
            full.update(env or {})
            proc = subprocess.run([PYTHON, str(FORK)] + args, env=full, capture_output=True,
                                  text=True, timeout=timeout, cwd=str(self.tmp))
            return Result(proc)
        from forkkit import cli
        out, err = io.StringIO(), io.StringIO()
        saved = dict(os.environ)
        os.environ.update(env or {})
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = cli.main(args)
                except SystemExit as exc:       # argparse
                    rc = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return Result(types.SimpleNamespace(returncode=rc, stdout=out.getvalue(),
                                            stderr=err.getvalue()))

    def do_import(self, *extra):
        res = self.fork("import", KVER, *extra)
        assert res.rc == 0, res
        return res.out.strip()

    def path_without(self, missing, progs=("git", "tar", "xz", "make", "gcc", "flex", "bison",
                                            "bc", "cpio", "sh", "grep", "cp", "mkdir", "touch",
                                            "qemu-system-x86_64", "mke2fs", "e2fsck")):
        """A PATH holding (symlinks to) `progs` except `missing`: a machine
        where that one program is not installed.  (Cheaper than mirroring
        all of /usr/bin.)"""
        d = self.tmp / ("path-without-" + missing)
        d.mkdir()
        for prog in progs:
            where = shutil.which(prog)
            if prog != missing and where:
                os.symlink(where, d / prog)
        return str(d)

    def make_patches(self, patches=PATCHES, dest=None):
        """Commit `patches` in a scratch clone on distro/9.9, write them with
        git format-patch into patches/ (or dest) with a series file; return
        the scratch clone's commit ids."""
        scratch = self.tmp / "scratch"
        if scratch.exists():
            shutil.rmtree(scratch)
        self.git("clone", "-q", "--no-checkout", str(self.ktree), str(scratch), cwd=self.tmp)
        self.git("checkout", "-q", "-B", "work", "origin/distro/%s" % KVER, cwd=scratch)
        ids = []
        for path, old, new, subject, body in patches:
            f = scratch / path
            text = f.read_text()
            assert old in text
            f.write_text(text.replace(old, new))
            self.git("commit", "-q", "-a", "-m", subject + "\n\n" + body, cwd=scratch, env=AUTHOR)
            ids.append(self.git("rev-parse", "HEAD", cwd=scratch))
        dest = Path(dest or self.repo / "patches")
        for old in dest.glob("*.patch"):
            old.unlink()
        self.git("format-patch", "-q", "-o", str(dest), "origin/distro/%s..work" % KVER,
                 cwd=scratch)
        names = sorted(p.name for p in dest.glob("*.patch"))
        (dest / "series").write_text("".join(n + "\n" for n in names))
        return ids

    def copy_from(self, template):
        """Take over a template kit's repo and work dir (kernel tree included)."""
        for name in ("repo", "work"):
            shutil.rmtree(self.tmp / name)
            shutil.copytree(template.tmp / name, self.tmp / name, symlinks=True)

    def imported(self):
        """A kernel tree with distro/9.9 imported (a copy: fast)."""
        if self.templates is None:
            return self.do_import()
        template = self.templates.get("imported")
        self.copy_from(template)
        return template.imported_id

    def laid_out(self):
        """imported() + the 2-patch series in patches/ (committed) + branches
        (a copy: fast); returns the original commits' ids."""
        if self.templates is None:
            return self.setup_series()
        template = self.templates.get("series")
        self.copy_from(template)
        return template.series_ids

    def setup_series(self, commit=True):
        """import + 2-patch series + branches; returns the scratch ids."""
        self.do_import()
        ids = self.make_patches()
        if commit:
            self.commit_repo("series")
        res = self.fork("branches")
        assert res.rc == 0, res
        return ids


@pytest.fixture(scope="session")
def kernel_tarball(tmp_path_factory):
    d = tmp_path_factory.mktemp("tarball")
    return make_tarball(d / ("%s.tar.xz" % PACKAGE))


class Templates:
    """Kits made once per test run and copied by Kit.imported()/laid_out()."""

    def __init__(self, base, tarball):
        self.base = base
        self.tarball = tarball
        self.kits = {}

    def get(self, kind):
        if kind not in self.kits:
            with pytest.MonkeyPatch.context() as mp:
                k = Kit(self.base / kind, self.tarball, mp)
                if kind == "imported":
                    k.imported_id = k.do_import()
                else:
                    k.series_ids = k.setup_series()
            self.kits[kind] = k
        return self.kits[kind]


@pytest.fixture(scope="session")
def templates(tmp_path_factory, kernel_tarball):
    return Templates(tmp_path_factory.mktemp("templates"), kernel_tarball)


@pytest.fixture
def kit(tmp_path, kernel_tarball, monkeypatch, templates):
    return Kit(tmp_path, kernel_tarball, monkeypatch, templates)


def pytest_sessionstart(session):
    """Stop at once, in one line, when a package of tools/packages is not
    installed (tools/setup was not run), instead of failing test by test."""
    with open(TOOLS / "packages") as fh:
        wanted = [w for line in fh for w in line.split("#", 1)[0].split()]
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\\n"]
                              + wanted, capture_output=True, text=True)
    except FileNotFoundError:
        raise pytest.UsageError("no dpkg-query: the tests run on Debian 12, after tools/setup")
    have = {line.split()[0] for line in proc.stdout.splitlines()
            if line.split()[1:2] == ["ii"]}
    missing = [p for p in wanted if p not in have]
    if missing:
        raise pytest.UsageError("Debian packages the tests need are not installed: %s: run "
                                "tools/setup first (it installs the packages of "
                                "tools/packages)" % " ".join(missing))


def pytest_collection_modifyitems(config, items):
    """test_verdicts_after_the_mix (test_integration.py) goes last when it
    runs with others: it asks whether the kernels that bench and bisect
    built without the W=1/sparse patchcheck change a verdict, which says
    the more the more was built before it.  It needs nothing of them:
    alone it passes too.  The order is otherwise pytest's."""
    items.sort(key=lambda item: item.name == "test_verdicts_after_the_mix")


# -- the integration tests' kernel tree -----------------------------------------
#
# The integration tests (FORK_INTEGRATION=1) run the real tools/fork of this
# checkout on its real kernel tree (work/linux, or $FORK_KTREE): they need
# every stored series imported and its branches laid out.  kernel_trees
# does that once per pytest run, for whichever of them comes first, so that
# any one of them, or any one file, runs alone.


def series_dirs():
    """The series the integration tests run: the primary one and every
    backport with patches (backports/<ver>/)."""
    out = ["patches"]
    bdir = ROOT / "backports"
    for ver in sorted(os.listdir(bdir)) if bdir.is_dir() else []:
        if (bdir / ver / "base").exists() and (bdir / ver / "series").stat().st_size > 0:
            out.append("backports/" + ver)
    return out


def kver(series):
    """The major.minor of a series directory's base (6.12, 7.3)."""
    import re
    text = (ROOT / series / "base").read_text()
    return re.search(r"^package: linux-source-(\S+)$", text, re.M).group(1)


def fork_real(*args, timeout=3600):
    """`tools/fork ARGS` of this checkout, on its own kernel tree."""
    proc = subprocess.run([PYTHON, str(FORK)] + [str(a) for a in args], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=timeout)
    sys.stderr.write(proc.stderr)
    return proc


@pytest.fixture(scope="session")
def kernel_trees():
    """Every series of series_dirs() imported (`tools/fork import <ver>`,
    from the installed package or Debian's archive) and its branches laid
    out (`tools/fork branches --series DIR`), as
    test_integration.test_import_branches_check_twice does before it
    checks them; a no-op where that is done already.  Returns the series."""
    for series in series_dirs():
        for args in (["import", kver(series)], ["branches", "--series", series]):
            proc = fork_real(*args)
            if proc.returncode != 0:
                pytest.fail("`tools/fork %s` failed (exit %d), which the integration tests "
                            "need:\n%s" % (" ".join(args), proc.returncode, proc.stderr[-3000:]))
    return series_dirs()


@pytest.fixture(scope="session")
def checked_primary(kernel_trees):
    """kernel_trees, and every commit of the primary series checked
    (`tools/fork check`: flavour base, test smoke), its rows in the check
    cache: what export's dry run needs."""
    proc = fork_real("check", timeout=4 * 3600)
    if proc.returncode != 0:
        pytest.fail("`tools/fork check` of the primary series failed:\n%s"
                    % (proc.stdout[-3000:] + proc.stderr[-3000:]))
    return kernel_trees
