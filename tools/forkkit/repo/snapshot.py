"""A Debian linux-source tarball as one reproducible commit on
``distro/<major.minor>``, tagged ``debian/<version>`` (what ``tools/fork
import`` does, and ``rebase`` before it replays)."""

import os
import re
import shutil
import tempfile

from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, ktree, new_log, wpath
from ..core.progress import Progress
from ..core.proc import run, sha256_file, tail
from . import debian
from . import series as series_mod
from .debian import dep14
from .git import git, git_ok, require_clean

IDENT = {
    "GIT_AUTHOR_NAME": "Debian linux-source snapshot",
    "GIT_AUTHOR_EMAIL": "fork-kit@localhost",
    "GIT_AUTHOR_DATE": "946684800 +0000",
    "GIT_COMMITTER_NAME": "Debian linux-source snapshot",
    "GIT_COMMITTER_EMAIL": "fork-kit@localhost",
    "GIT_COMMITTER_DATE": "946684800 +0000",
}


def normalize_version(version):
    """(major.minor, Debian version or None) of the version argument."""
    if version is None:
        return series_mod.Series().kver, None
    m = re.match(r"^(?:linux-source-)?(\d+\.\d+)$", version)
    if m:
        return m.group(1), None
    m = re.match(r"^(?:linux-source-(\d+\.\d+)=)?((\d+)\.(\d+)(?:\.\d+)?-[0-9A-Za-z.+~]+)$",
                 version)
    if m and (m.group(1) is None or m.group(1) == "%s.%s" % (m.group(3), m.group(4))):
        return "%s.%s" % (m.group(3), m.group(4)), m.group(2)
    raise ForkError("unknown version %r: give major.minor (6.12), a package name "
                    "(linux-source-6.12) or a Debian version (6.12.117-1)" % version)


def upstream_of(debian_version):
    return re.sub(r"-[^-]*$", "", debian_version.split(":")[-1])


def expected_base(kver):
    """The repo's base file for this version, if a series uses it."""
    for s in series_mod.all_series():
        if s.kver == kver:
            return s
    return None


def message(package, version, tarball, sha):
    return ("Import Debian %s %s\n\n"
            "Package: %s\nVersion: %s\nUpstream: %s\nTarball: %s\nSHA256: %s\n"
            % (package, version, package, version, upstream_of(version),
               os.path.basename(tarball), sha))


def recorded_sha(commit):
    body = git(["log", "-1", "--format=%B", commit])
    m = re.search(r"^SHA256: ([0-9a-f]{64})$", body, re.M)
    return m.group(1) if m else None


def init_tree(path):
    if os.path.isdir(os.path.join(path, ".git")):
        return
    ensure_dir(path)
    git(["init", "-q", path], cwd=os.path.dirname(path))
    git(["config", "core.autocrlf", "false"], cwd=path)
    git(["config", "gc.auto", "0"], cwd=path)


def extract(tarball, dest, log):
    proc = run(["tar", "-x", "-f", tarball, "-C", dest, "--strip-components=1",
                "--no-same-owner"], log=log, check=False)
    if proc.returncode != 0:
        said = [l.strip() for l in tail(log, 10).splitlines() if l.startswith(("tar:", "xz:"))]
        raise ForkError("%s cannot be extracted (%s; log: %s): name a linux-source .tar.xz "
                        "as Debian ships it; nothing changed"
                        % (tarball, said[0] if said else "tar exit %d" % proc.returncode, log))


def snapshot_commit(tarball, msg, prog, log):
    """Extract tarball into a temp dir and write it as a parentless commit."""
    tmp = tempfile.mkdtemp(prefix="import-", dir=ensure_dir(wpath("tmp")))
    index = os.path.join(tmp, "index")
    tree_dir = os.path.join(tmp, "tree")
    os.mkdir(tree_dir)
    try:
        prog.say("extracting %s (log: %s)" % (tarball, log))
        extract(tarball, tree_dir, log)
        prog.say("hashing the tree into git")
        env = {"GIT_INDEX_FILE": index, "GIT_WORK_TREE": tree_dir}
        run(["git", "-c", "core.autocrlf=false", "-c", "core.fileMode=true",
             "add", "-A", "-f", "."], cwd=tree_dir, env=dict(env, GIT_DIR=os.path.join(ktree(), ".git")),
            log=log)
        tree = git(["write-tree"], env=env)
        env = dict(IDENT)
        commit = git(["commit-tree", tree, "-F", "-"], env=env, input=msg)
        return commit
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def do_import(version=None, tarball=None, debian_version=None, update=False, out=print,
              archive=False, refresh=False):
    prog = Progress("import")
    kver, wanted = normalize_version(version)
    package = "linux-source-%s" % kver
    base = expected_base(kver)
    tarball, pkg_version = debian.snapshot(
        kver, wanted, tarball, debian_version, archive, refresh, prog,
        default_version=base.base["version"] if base and not update else None)
    log = new_log("import-%s" % kver)
    prog.say("checksumming %s" % tarball)
    sha = sha256_file(tarball)
    if base and base.base["sha256"] != sha and not update:
        raise ForkError(
            "%s has sha256 %s, but %s/base expects %s (version %s; installed: %s): "
            "install the version the series was made for (`apt-get install %s=%s`), or move "
            "the series to this snapshot with `tools/fork rebase --onto %s`."
            % (tarball, sha, base.rel, base.base["sha256"], base.base["version"], pkg_version,
               package, base.base["version"], kver))
    # two imports at once: the second waits, then finds the snapshot in place
    with Lock("import"):
        return record(kver, package, pkg_version, tarball, sha, update, prog, log, out)


def record(kver, package, pkg_version, tarball, sha, update, prog, log, out):
    """Commit the tarball to distro/<kver> and tag it (under the import lock)."""
    init_tree(ktree())
    branch = "distro/%s" % kver
    tag = "debian/%s" % dep14(pkg_version)
    if git_ok(["rev-parse", "--verify", "-q", "refs/heads/" + branch]):
        have = git(["rev-parse", "refs/heads/" + branch])
        if recorded_sha(have) == sha:
            prog.say("%s already holds this snapshot (%s): nothing to do" % (branch, have[:12]))
            if not git_ok(["rev-parse", "--verify", "-q", "refs/tags/" + tag]):
                git(["tag", tag, have])
            out(have)
            return have
        if not update:
            raise ForkError("%s already holds another snapshot (%s, sha256 %s); nothing changed: "
                            "use `tools/fork rebase --onto %s` to move the series, or "
                            "`tools/fork import %s --update` to move only the branch "
                            "(the old snapshot keeps its debian/ tag)."
                            % (branch, have[:12], recorded_sha(have), kver, kver))
    commit = snapshot_commit(tarball, message(package, pkg_version, tarball, sha), prog, log)
    # Refuse before the branch moves (the tag names the version, so it must not
    # end up on another snapshot).
    existing_tag = git(["rev-parse", "--verify", "-q", "refs/tags/" + tag + "^{commit}"],
                       check=False)
    if existing_tag and existing_tag != commit:
        raise ForkError("tag %s already exists at %s, not at the new import %s: delete or "
                        "rename that tag first; nothing changed"
                        % (tag, existing_tag[:12], commit[:12]))
    if git(["symbolic-ref", "-q", "HEAD"], check=False) == "refs/heads/" + branch \
            and git_ok(["rev-parse", "--verify", "-q", "HEAD"]):
        # --update of the checked-out branch: move the work tree along with it.
        require_clean(ktree())
        run(["git", "reset", "-q", "--keep", commit], cwd=ktree(), log=log)
    else:
        git(["update-ref", "-m", "fork import %s %s" % (package, pkg_version),
             "refs/heads/" + branch, commit])
    if not existing_tag:
        git(["tag", tag, commit])
    if not git_ok(["rev-parse", "--verify", "-q", "HEAD"]):
        prog.say("checking out %s in %s" % (branch, ktree()))
        run(["git", "checkout", "-q", branch], cwd=ktree(), log=log)
    prog.say("%s = %s, tagged %s" % (branch, commit[:12], tag))
    out(commit)
    return commit

