"""The fstests guest root: a Debian root made with debootstrap (mirror and
keyring from the machine's own apt sources) with the packages of
ci/fstests/packages, fstests cloned from the configured git URL at the
configured commit and built inside it (chroot), and the fsgqa users; made
into an ext4 image (``mke2fs -d``, no loop mount) that the guest mounts
from /dev/vda.  Cached by the hash of its inputs in $FORK_FSTESTS_ROOTS,
by default ~/.cache/fork-kit/fstests-roots/ ($XDG_CACHE_HOME if set):
outside work/, so that every clone of the repository on a machine (CI's
fresh clone included) reuses one image instead of spending ~16 minutes
on debootstrap and the fstests build.  The image is read-only: each
boot writes a copy-on-write overlay of its own (qcow2 backed by the
image, verify.fstests_run.root_overlay()), so guests that run at once
share it and the cached one is never written.

ci/fstests/source.conf names the fstests URL, commit and Debian suite;
$FORK_FSTESTS_URL / $FORK_FSTESTS_COMMIT override them.
"""

import hashlib
import json
import os
import re
import shutil
import time

from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, repo_root
from ..core.proc import run, which
from ..repo import debian

FSTESTS_DIR = "/opt/xfstests"     # in the guest root


def conf_dir():
    return os.path.join(repo_root(), "ci", "fstests")


def read_conf(path=None):
    """KEY=VALUE lines of ci/fstests/source.conf as a dict."""
    path = path or os.path.join(conf_dir(), "source.conf")
    out = {}
    try:
        fh = open(path)
    except OSError:
        raise ForkError("%s is missing: it names the fstests git URL, commit and suite "
                        "(restore it from git)" % path)
    with fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([A-Z_]+)=(.*)$", line)
            if not m:
                raise ForkError("%s:%d: not a KEY=value line: %r" % (path, n, line))
            out[m.group(1)] = m.group(2).strip()
    for key in ("URL", "COMMIT", "SUITE"):
        if not out.get(key):
            raise ForkError("%s names no %s=: add it" % (path, key))
    return out


def source():
    """(url, commit) of fstests: the environment, else the local bundle when
    it exists, else the configured upstream URL."""
    conf = read_conf()
    url = os.environ.get("FORK_FSTESTS_URL")
    if not url:
        url = conf["URL"]
        bundle = conf.get("LOCAL_BUNDLE")
        if bundle:
            local = os.path.join(os.path.dirname(repo_root()), bundle)
            if os.path.exists(local):
                url = os.path.abspath(local)
    commit = os.environ.get("FORK_FSTESTS_COMMIT") or conf["COMMIT"]
    if not re.match(r"^[0-9a-f]{7,40}$", commit):
        raise ForkError("fstests commit %r is not a hex commit id: fix COMMIT= in "
                        "ci/fstests/source.conf or $FORK_FSTESTS_COMMIT" % commit)
    return url, commit


def packages(path=None):
    path = path or os.path.join(conf_dir(), "packages")
    with open(path) as fh:
        pkgs = [l.split("#", 1)[0].strip() for l in fh]
    pkgs = [p for p in pkgs if p]
    bad = [p for p in pkgs if not re.match(r"^[a-z0-9][a-z0-9+.-]+$", p)]
    if bad:
        raise ForkError("%s: %r is not a Debian package name: fix the line" % (path, bad[0]))
    return pkgs


def mirror(suite):
    """(uri, keyring) of the machine's apt entry for `suite`."""
    for e in debian.parse_sources(debian.sources_files()):
        if suite in e["suites"] and "security" not in e["uri"]:
            return e["uri"], e["keyring"]
    raise ForkError("no `deb` entry for suite %s in %s: the fstests root is made from the "
                    "machine's own Debian mirror; set SUITE= in ci/fstests/source.conf to "
                    "a suite the apt sources name" % (suite, ", ".join(debian.sources_files())
                                                     or "/etc/apt"))


def patches():
    """[(name, path, sha256)] of ci/fstests/patches/*.patch in name order:
    the project's own changes to fstests, applied after the checkout."""
    d = os.path.join(conf_dir(), "patches")
    if not os.path.isdir(d):
        return []
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".patch"):
            path = os.path.join(d, name)
            with open(path, "rb") as fh:
                out.append((name, path, hashlib.sha256(fh.read()).hexdigest()))
    return out


def inputs():
    """Everything the root image is made from (its cache key hashes this)."""
    conf = read_conf()
    url, commit = source()
    uri, keyring = mirror(conf["SUITE"])
    with open(os.path.join(conf_dir(), "setup-root.sh"), "rb") as fh:
        setup = hashlib.sha256(fh.read()).hexdigest()
    inp = {"suite": conf["SUITE"], "mirror": uri, "keyring": keyring,
           "packages": packages(), "fstests_commit": commit, "setup_root_sh": setup}
    pl = patches()
    if pl:      # absent when there are none: the key of an unpatched root stays
        inp["fstests_patches"] = ["%s %s" % (sha[:16], name) for name, _, sha in pl]
    return inp


def root_key(inp):
    # the URL is recorded but not hashed: the same commit from the bundle
    # or from upstream is the same source
    return hashlib.sha256(json.dumps(inp, sort_keys=True).encode()).hexdigest()[:16]


def roots_dir():
    path = os.environ.get("FORK_FSTESTS_ROOTS")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        path = os.path.join(base, "fork-kit", "fstests-roots")
    return ensure_dir(path)


def cached(key):
    """The metadata of a finished root image, or None.  The image is the
    one beside the metadata, wherever the directory has been moved."""
    meta = os.path.join(roots_dir(), "root-%s.json" % key)
    try:
        with open(meta) as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return None
    image = os.path.join(roots_dir(), "root-%s.img" % key)
    if not isinstance(info, dict) or info.get("key") != key or not os.path.isfile(image):
        return None
    info["image"] = image
    return info


def ensure_root(prog, log):
    """Return the metadata dict of the root image (building it if needed):
    image, key, fstests url/commit, groups {test: [group]}, packages."""
    inp = inputs()
    key = root_key(inp)
    info = cached(key)
    if info:
        return info
    with Lock("fstests-root"):
        info = cached(key)
        if info:
            return info
        return build_root(inp, key, prog, log)


def apply_patches(dest, commit, prog=None, key=""):
    """git apply ci/fstests/patches/*.patch in the fstests checkout `dest`."""
    for name, path, _ in patches():
        if prog:
            prog.say("fstests root %s: applying ci/fstests/patches/%s" % (key, name))
        proc = run(["git", "-C", dest, "apply", "--index", path], check=False)
        if proc.returncode:
            first = (proc.stderr or proc.stdout or "").strip().splitlines()[:1]
            raise ForkError("ci/fstests/patches/%s does not apply to fstests %s (%s): refresh "
                            "it against that commit" % (name, commit[:12],
                                                       first[0] if first else "git apply failed"))


def build_root(inp, key, prog, log):
    if os.geteuid() != 0:
        raise ForkError("building the fstests guest root needs root (debootstrap, chroot, "
                        "mke2fs -d keeping owners): run `tools/fork fstests` as root once; "
                        "later runs reuse the cached image")
    debootstrap = which("debootstrap", "debootstrap")
    which("mke2fs", "e2fsprogs")
    which("git", "git")
    url, commit = source()
    t0 = time.monotonic()
    root = os.path.join(roots_dir(), "root-%s.d" % key)
    image = os.path.join(roots_dir(), "root-%s.img" % key)
    if os.path.exists(root):
        shutil.rmtree(root)
    prog.say("fstests root %s: debootstrap %s from %s (%d packages; log %s)"
             % (key, inp["suite"], inp["mirror"], len(inp["packages"]), log))
    cmd = ["nice", "-n", "10", debootstrap, "--variant=minbase",
           "--include=" + ",".join(inp["packages"])]
    if inp["keyring"]:
        cmd.append("--keyring=" + inp["keyring"])
    try:
        run(cmd + [inp["suite"], root, inp["mirror"]], log=log)
    except ForkError as exc:
        raise ForkError("debootstrap failed (is the Debian mirror reachable? is every package "
                        "in ci/fstests/packages in %s?): %s" % (inp["suite"], exc))
    dest = os.path.join(root, FSTESTS_DIR.lstrip("/"))
    prog.say("fstests root %s: git clone %s at %s" % (key, url, commit[:12]))
    try:
        run(["git", "clone", "-q", "--no-checkout", url, dest], log=log)
        run(["git", "-C", dest, "checkout", "-q", "--detach", commit], log=log)
    except ForkError as exc:
        raise ForkError("cannot get fstests %s from %s: %s\nset $FORK_FSTESTS_URL to a "
                        "reachable clone or bundle (see ci/fstests/source.conf)"
                        % (commit, url, exc))
    full = run(["git", "-C", dest, "rev-parse", "HEAD"]).stdout.strip()
    apply_patches(dest, commit, prog, key)
    shutil.copy(os.path.join(conf_dir(), "setup-root.sh"), os.path.join(root, "setup-root.sh"))
    prog.say("fstests root %s: building fstests in the chroot (nice)" % key)
    proc_dir = os.path.join(root, "proc")
    run(["mount", "-t", "proc", "proc", proc_dir], log=log)
    try:
        run(["nice", "-n", "10", "chroot", root, "/bin/sh", "/setup-root.sh"],
            env={"LC_ALL": "C", "HOME": "/root"}, log=log)
        versions = run(["chroot", root, "dpkg-query", "-W",
                        "-f=${Package} ${Version}\\n"]).stdout.split("\n")
    finally:
        run(["umount", proc_dir], log=log, check=False)
    os.unlink(os.path.join(root, "setup-root.sh"))
    groups = read_groups(dest)
    used = int(run(["du", "-sxk", root]).stdout.split()[0])
    size_mb = used // 1024 * 3 // 2 + 512
    prog.say("fstests root %s: ext4 image of %d MiB (mke2fs -d)" % (key, size_mb))
    tmp = image + ".tmp"
    if os.path.exists(tmp):
        os.unlink(tmp)
    run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "fstests-root", "-d", root, tmp,
         "%dM" % size_mb], log=log)
    os.chmod(tmp, 0o444)
    os.replace(tmp, image)
    shutil.rmtree(root)
    info = {"image": image, "key": key, "inputs": inp, "fstests_url": url,
            "fstests_commit": full, "groups": groups,
            "package_versions": sorted(v for v in versions if v.strip()),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.monotonic() - t0)}
    meta = os.path.join(roots_dir(), "root-%s.json" % key)
    with open(meta + ".tmp", "w") as fh:
        json.dump(info, fh, indent=1, sort_keys=True)
    os.replace(meta + ".tmp", meta)
    prog.say("fstests root %s ready in %ds: %s" % (key, info["seconds"], image))
    return info


def read_groups(src):
    """{test: [groups]} from the tests/<dir>/group.list files fstests' make
    writes ("NNN group group ..." per line)."""
    groups = {}
    tests = os.path.join(src, "tests")
    for d in sorted(os.listdir(tests)):
        path = os.path.join(tests, d, "group.list")
        if not os.path.isfile(path):
            continue
        with open(path) as fh:
            for line in fh:
                parts = line.split("#", 1)[0].split()
                if len(parts) >= 2:
                    groups["%s/%s" % (d, parts[0])] = parts[1:]
    return groups
