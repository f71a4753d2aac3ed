"""Debian's archive as a source of kernel snapshots, without touching the
system's apt configuration.

The machine's own apt sources (``/etc/apt/sources.list`` and
``sources.list.d/*.sources``) name the mirror URIs and keyrings.  This module
writes a private apt state under ``work/apt/`` that uses the same mirrors and
keyrings for more suites -- the machine's own plus bookworm-backports,
trixie, trixie-backports, trixie-security and sid -- and asks it for
``linux-source-<ver>`` packages: ``apt-cache madison`` for the versions and
suites, ``apt-cache show`` for the .deb's SHA256 as the signed index lists
it, ``apt-get download`` for the .deb (apt checks it against the index; the
hash is checked here again and recorded), then ``dpkg-deb --fsys-tarfile``
to take the tarball out without installing anything.

The private state checks Release files as a clean Debian does (expiry and
date), whatever the machine's own apt.conf.d says.  A suite that cannot be
read (an expired Release file, a mirror without it) is skipped with one line
naming it and apt's reason; its packages are not considered, the other
suites' are.  Only when no suite can be read does the update fail.
"""

import json
import os
import re
import time

from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, wpath
from ..core.proc import run, sha256_file

# Suites the kit adds to the machine's own, per kind of mirror.
EXTRA_SUITES = {
    "archive": ["bookworm-backports", "trixie", "trixie-backports", "sid"],
    "security": ["trixie-security"],
}
LISTS_MAX_AGE = 24 * 3600


def sources_files():
    """The machine's apt source files (/etc/apt)."""
    out = ["/etc/apt/sources.list"]
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        out += [os.path.join(d, f) for f in sorted(os.listdir(d))
                if f.endswith((".list", ".sources"))]
    return [f for f in out if os.path.isfile(f)]


def parse_sources(paths):
    """[{"uri", "suites", "components", "keyring"}] of the `deb` entries."""
    entries = []
    for path in paths:
        with open(path, errors="replace") as fh:
            text = fh.read()
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[:1].isspace():
                        continue
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
                if "deb" not in fields.get("types", "").split() or "uris" not in fields:
                    continue
                if fields.get("enabled", "yes").lower() == "no":
                    continue
                for uri in fields["uris"].split():
                    entries.append({"uri": uri.rstrip("/"),
                                    "suites": fields.get("suites", "").split(),
                                    "components": fields.get("components", "main").split(),
                                    "keyring": fields.get("signed-by")})
        else:
            for line in text.splitlines():
                m = re.match(r"^\s*deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
                if not m:
                    continue
                opts = dict(o.split("=", 1) for o in (m.group(1) or "").split() if "=" in o)
                entries.append({"uri": m.group(2).rstrip("/"), "suites": [m.group(3)],
                                "components": m.group(4).split() or ["main"],
                                "keyring": opts.get("signed-by")})
    return entries


def sources_list():
    """The private sources.list: the machine's entries plus the extra suites
    on the same mirrors and keyrings.  Returns (text, [suite names])."""
    entries = parse_sources(sources_files())
    if not entries:
        raise ForkError("no Debian `deb` entry in %s: the kit takes the mirror and keyring "
                        "from the machine's apt sources" % ", ".join(sources_files()
                                                                   or ["/etc/apt"]))
    lines, suites = [], []
    done = set()
    for e in entries:
        kind = "security" if "security" in e["uri"] else "archive"
        for suite in e["suites"] + EXTRA_SUITES[kind]:
            if (e["uri"], suite) in done:
                continue
            done.add((e["uri"], suite))
            opt = "[signed-by=%s] " % e["keyring"] if e["keyring"] else ""
            lines.append("deb %s%s %s main" % (opt, e["uri"], suite))
            suites.append(suite)
    return "\n".join(lines) + "\n", suites


def apt_dir():
    return ensure_dir(wpath("apt"))


def apt_options():
    d = apt_dir()
    for sub in ("lists/partial", "archives/partial"):
        ensure_dir(os.path.join(d, sub))
    return ["-o", "Dir::Etc::sourcelist=%s" % os.path.join(d, "sources.list"),
            "-o", "Dir::Etc::sourceparts=%s" % ensure_dir(os.path.join(d, "sources.list.d")),
            "-o", "Dir::State::Lists=%s" % os.path.join(d, "lists"),
            "-o", "Dir::Cache::archives=%s" % os.path.join(d, "archives"),
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
            "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
            "-o", "Acquire::Check-Valid-Until=true", "-o", "Acquire::Check-Date=true"]


def skipped_suites(out, suites):
    """{suite: apt's reason} of the suites `apt-get update` could not read,
    from its output; None when a failure line names none of `suites`."""
    skipped = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(("Err:", "E:", "W: Failed")):
            continue
        if "Some index files failed to download" in line:
            continue                            # apt's summary of the lines above
        m = (re.search(r"/dists/([^/\s]+)/", line)
             or re.match(r"^Err:\d+ \S+ (\S+) ", line))
        if not m or m.group(1) not in suites:
            return None
        reason = re.sub(r"\. Updates for this repository will not be applied\.$", "",
                        line.strip())
        if line.startswith("Err:") and i + 1 < len(lines) and lines[i + 1][:1].isspace():
            reason += " " + lines[i + 1].strip()
        skipped.setdefault(m.group(1), reason)
    return skipped


def say_skipped(prog, skipped):
    for suite, reason in sorted(skipped.items()):
        prog.say("apt-get update: skipped %s (%s): its packages are not considered"
                 % (suite, reason))


def update(prog, refresh=False):
    """Write the private sources.list and run `apt-get update` on it when it
    changed, when the lists are older than a day, or with refresh=True.
    Returns ([suites read], {suite skipped: apt's reason})."""
    with Lock("apt"):
        return _update(prog, refresh)


def _update(prog, refresh):
    text, suites = sources_list()
    path = os.path.join(apt_dir(), "sources.list")
    stamp = os.path.join(apt_dir(), "updated")
    old = open(path).read() if os.path.exists(path) else None
    fresh = os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < LISTS_MAX_AGE
    if old == text and fresh and not refresh:
        with open(stamp) as fh:
            skipped = dict(re.findall(r"^skipped (\S+): (.*)$", fh.read(), re.M))
        say_skipped(prog, skipped)
        return [s for s in suites if s not in skipped], skipped
    with open(path, "w") as fh:
        fh.write(text)
    if os.path.exists(stamp):
        os.unlink(stamp)
    prog.say("apt-get update of a private apt state (%s): %s" % (apt_dir(), ", ".join(suites)))
    proc = run(["apt-get"] + apt_options() + ["-q", "update"], check=False, timeout=900)
    out = (proc.stdout or "") + (proc.stderr or "")
    failed = [l.strip() for l in out.splitlines() if l.startswith(("Err:", "E:", "W: Failed"))]
    trouble = proc.returncode != 0 or failed
    skipped = skipped_suites(out, suites) if trouble else {}
    if trouble and (not skipped or set(skipped) >= set(suites)):
        raise ForkError("apt-get update of the private apt state failed (%s):\n%s\n"
                        "Check the network and the mirror in the machine's apt sources; "
                        "the system's apt configuration was not touched"
                        % (path, "\n".join(failed[:6]) or out.strip()[-800:]))
    say_skipped(prog, skipped)
    with open(stamp, "w") as fh:
        fh.write(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
        fh.write("".join("skipped %s: %s\n" % sr for sr in sorted(skipped.items())))
    return [s for s in suites if s not in skipped], skipped


def not_read(skipped):
    """"; skipped: sid (reason)" for an error message, or ""."""
    if not skipped:
        return ""
    return "; skipped: " + ", ".join("%s (%s)" % sr for sr in sorted(skipped.items()))


def versions(package):
    """[(version, suite)] of `package` in the private apt state, newest first
    (apt's order)."""
    proc = run(["apt-cache"] + apt_options() + ["madison", package], check=False)
    out = []
    for line in (proc.stdout or "").splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] == package:
            m = re.match(r"^\S+\s+(\S+?)(?:/\S+)?\s", parts[2] + " ")
            out.append((parts[1], m.group(1) if m else "?"))
    return out


def index_entry(package, version):
    """{"Version", "Filename", "SHA256", "Size"} of package=version from the
    signed index."""
    proc = run(["apt-cache"] + apt_options() + ["show", "%s=%s" % (package, version)],
               check=False)
    fields = {}
    for line in (proc.stdout or "").split("\n\n", 1)[0].splitlines():
        if ":" in line and not line[:1].isspace():
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    if proc.returncode != 0 or "SHA256" not in fields:
        raise ForkError("apt-cache show %s=%s gave no SHA256" % (package, version))
    return fields


def fetch(package, version=None, prog=None, refresh=False):
    """Download linux-source-<ver> (newest, or `version`) from the known
    suites and extract its tarball.  Returns a provenance dict: package,
    version, suite, deb, deb_sha256 (checked against the index), tarball,
    tarball_sha256."""
    suites, skipped = update(prog, refresh)
    have = versions(package)
    if not have and skipped:
        raise ForkError("no %s in the Debian suites the kit could read (%s)%s"
                        % (package, ", ".join(suites), not_read(skipped)))
    if not have:
        raise ForkError("no %s in the Debian suites the kit knows (%s): `apt-cache madison` "
                        "finds none; see which versions exist with `apt-cache search "
                        "^linux-source-` after adding a suite" % (package, ", ".join(suites)))
    if version is None:
        version, suite = have[0]
    else:
        match = [s for v, s in have if v == version]
        if not match:
            raise ForkError("%s %s is in none of the suites the kit knows (%s); there are: %s%s"
                            % (package, version, ", ".join(suites),
                               ", ".join("%s (%s)" % vs for vs in have), not_read(skipped)))
        suite = match[0]
    entry = index_entry(package, version)
    ddir = ensure_dir(wpath("debs"))
    deb = os.path.join(ddir, os.path.basename(entry["Filename"]))
    if not (os.path.exists(deb) and sha256_file(deb) == entry["SHA256"]):
        prog.say("apt-get download %s=%s (%s, %s MB)" % (package, version, suite,
                                                         int(entry.get("Size", 0)) >> 20))
        run(["apt-get"] + apt_options() + ["-q", "download", "%s=%s" % (package, version)],
            cwd=ddir, timeout=3600)
        # apt-get download names the file after the version with ':' escaped
        if not os.path.exists(deb):
            raise ForkError("apt-get download left no %s" % deb)
    deb_sha = sha256_file(deb)
    if deb_sha != entry["SHA256"]:
        os.unlink(deb)
        raise ForkError("%s has sha256 %s but the signed index of %s lists %s: the download "
                        "was removed; run the import again" % (deb, deb_sha, suite,
                                                              entry["SHA256"]))
    xdir = ensure_dir(os.path.join(ddir, "%s_%s" % (package, version.replace(":", "%"))))
    member = "./usr/src/%s.tar.xz" % package
    tarball = os.path.join(xdir, "%s.tar.xz" % package)
    if not os.path.exists(tarball):
        prog.say("extracting %s from %s" % (member, os.path.basename(deb)))
        tmp = tarball + ".tmp"
        run(["sh", "-c", 'dpkg-deb --fsys-tarfile "$1" | tar -x -O -f - "$2" > "$3"',
             "sh", deb, member, tmp])
        if os.path.getsize(tmp) == 0:
            os.unlink(tmp)
            raise ForkError("%s holds no %s" % (deb, member))
        os.replace(tmp, tarball)
    info = {"package": package, "version": version, "suite": suite, "deb": deb,
            "deb_sha256": deb_sha, "tarball": tarball, "tarball_sha256": sha256_file(tarball)}
    with open(os.path.join(xdir, "provenance.json"), "w") as fh:
        json.dump(info, fh, indent=1)
    return info


def src_dir():
    return os.environ.get("FORK_SRCDIR", "/usr/src")


def installed_version(package):
    proc = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Version}", package], check=False)
    out = (proc.stdout or "").strip()
    if proc.returncode != 0 or not out.startswith("ii"):
        return None
    return out.split()[-1]


def snapshot(kver, wanted=None, tarball=None, debian_version=None, archive=False,
             refresh=False, prog=None, default_version=None):
    """(tarball path, Debian version) of linux-source-<kver>: `tarball` as
    given (with debian_version), else the installed package when it is the
    one wanted, else Debian's archive (`wanted`, else `default_version`,
    else the newest)."""
    package = "linux-source-%s" % kver
    if tarball:
        if not debian_version:
            raise ForkError("--tarball needs --debian-version (the version to record)")
        if not os.path.isfile(tarball):
            raise ForkError("tarball %s does not exist" % tarball)
        return os.path.abspath(tarball), debian_version
    if debian_version:
        raise ForkError("--debian-version goes with --tarball")
    installed = installed_version(package)
    if installed and not archive and (wanted or default_version) in (None, installed):
        path = os.path.join(src_dir(), "%s.tar.xz" % package)
        if not os.path.isfile(path):
            raise ForkError("package %s %s is installed but %s is missing: reinstall it with "
                            "`apt-get install --reinstall %s`, or take it from the archive "
                            "with --archive" % (package, installed, path, package))
        return path, installed
    info = fetch(package, wanted or default_version, prog, refresh)
    prog.say("%s %s from %s: .deb sha256 %s (as the signed index lists it), tarball sha256 %s"
             % (package, info["version"], info["suite"], info["deb_sha256"],
                info["tarball_sha256"]))
    return info["tarball"], info["version"]


def dep14(version):
    """Debian version -> DEP-14 git tag component (~ -> _, : -> %)."""
    return version.replace("~", "_").replace(":", "%")


def newer(a, b):
    """Debian version a > b."""
    return run(["dpkg", "--compare-versions", a, "gt", b], check=False).returncode == 0


def newest_for(series, prog, refresh, to=None):
    update(prog, refresh)
    current = series.base["version"]
    found = versions(series.package)
    if to:
        match = [(v, s) for v, s in found if v == to]
        if not match:
            raise ForkError("%s %s is not in the archive (it has %s): name one of those with "
                            "--to" % (series.package, to,
                                      ", ".join(v for v, _ in found) or "no version"))
        if not newer(to, current):
            raise ForkError("%s is not newer than %s's base %s: update only moves forward "
                            "(`rebase --onto` moves anywhere)" % (to, series.rel, current))
        return match[0]
    cands = [(v, s) for v, s in found if newer(v, current)]
    if not cands:
        return None
    best = cands[0]
    for v, s in cands[1:]:
        if newer(v, best[0]):
            best = (v, s)
    return best
