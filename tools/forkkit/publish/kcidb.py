"""The committed records as a KCIDB report (KernelCI's common database,
schema kcidb-io v5.3), and its validation by the upstream schema.

    report(root)      -> the report (a dict) of the records under root/records
    dumps(report)     -> its bytes: the same records give the same bytes
    validate(report)  -> kcidb-io's verdict, or a ForkError in one line

The mapping (records/README.md describes the records):

origin
    ``ext2fork``.  Every id is ``ext2fork:<kind>-<what names it>``.
checkouts
    One per commit checked (a check row's or an fstests record's
    ``commit``): each commit of a series is the base snapshot plus the
    first k patches, which is what a KCIDB checkout is (a base commit and a
    patchset applied on it).  ``git_commit_hash`` is the base's import
    commit, which the kit makes from the Debian tarball (repo/snapshot.py):
    reproducible, but in no public repository, so there is no
    ``git_repository_url`` and ``misc.base`` says so.  ``tree_name`` is the
    Debian package (``linux-source-7.3``); ``misc.base`` holds its Debian
    version and the upstream version, read from the import commit's
    subject.  ``patchset_hash`` (KCIDB's definition: sha256 over the
    newline-terminated sha256 of each patch file, in order) and
    ``misc.patch_files`` come from the patch files of a series directory of
    this repository, and only when they make the recorded commit: each
    patch committed on its parent as ``branches`` commits it (author and
    date from the patch, committer the author) over the recorded tree must
    give the recorded commit id, patch by patch from the base.  A commit no
    stored series makes (an older version of a series, a test fault patch
    on top) has no ``patchset_hash``; ``misc.patchset`` says why.  The base
    alone has patchset_hash ``""`` (no patches).  ``patchset_files`` needs a
    URL per file: given ``base_url`` (where this repository is published),
    each file's URL is base_url/<series dir>/<file>; without it the field
    is left out.  ``valid`` is true: the checkout was built.
builds
    One per image and commit (an image built from two commits with the same
    tree is a build of each): id ``build-<image sha256>-<commit[:12]>``,
    ``config_name`` the flavour (``ci/kconfig/``), ``architecture``
    x86_64, ``status`` the check rows' ``build`` cell over every run of the
    image (PASS, FAIL when one failed), ``misc``: kit, tree, image path in
    the work directory, config key, whether sparse ran.  fstests images
    (flavour ``fstests``) come from the fstests records' ``kernel.json``;
    their status is PASS (the image booted).  The records do not name the
    compiler: no ``compiler``.
tests, check
    One per cell of each judged check cell (checkrecords.cells(): version,
    commit, flavour, guest test, judged on all its runs): ``checkpatch``,
    ``boot``, ``test``, ``e2fsck``, ``counts`` (``build`` is the build's
    status), path ``ext2fork.<guest test>.<cell>``, under the build of the
    image of the cell's latest run.  Status: ``pass`` PASS, ``FAIL`` FAIL,
    ``n/a`` SKIP (not applicable: checkpatch of a base snapshot, host cells
    of a non-ext2 disk), ``-`` MISS (not reached: an earlier cell failed);
    a cell whose runs disagree is FAIL (the kit's flaky rule: a flaky cell
    is no pass) with ``misc.flaky`` and every run in ``misc.runs``.  A
    failed run that records/checks/explained.json explains counts here as
    it ran (a FAIL stays FAIL: KCIDB holds results, not their excuses);
    ``misc.explained`` names each such run with the why and where it is
    documented, and ``misc.verdict`` is the kit's verdict on the other
    runs.  The records time a whole row, not a cell: ``misc.row_seconds``,
    no ``duration``.  A run whose runner failed, not the kernel (an
    ``error`` run: a LAVA job that booted no kernel) gives no result: the
    status is that of the cell's completed runs, and ERROR when it has none
    (its ``boot`` cell ``error`` is ERROR, the cells it did not reach
    MISS); ``misc.errors`` names each such run and why.
tests, fstests
    One per result in an fstests record's ``tests.json``: path
    ``xfstests.<dir>.<number>`` (``generic/001`` is
    ``xfstests.generic.001``), status pass PASS, fail FAIL, notrun SKIP,
    ``duration`` its seconds, fstests' message in ``misc.message``.
environment
    QEMU, the accelerator the records name (a check run's ``accel``, an
    fstests record's ``kernel.json``; a record without one is TCG's, as
    every record was before the kit knew KVM; a check cell whose runs
    name two is both) and the kit's guest size (guest/qemu.py's defaults:
    the records do not hold them), in ``environment.comment`` and
    ``environment.misc``; a check run's QEMU and e2fsprogs versions in
    ``misc.tools``.

No field holds a time that is not in the records, and every list is
sorted by id.
"""

import email.utils
import hashlib
import inspect
import json
import os
import re
import sys
import time

from ..core.errors import ForkError
from ..core.paths import repo_root, workdir
from ..core.proc import run
from ..guest.qemu import run_guest
from ..repo.patchfile import mailinfo
from ..repo.series import stored_series
from ..verify import checkrecords, fsrecord
from ..verify.kernel import runs_of

ORIGIN = "ext2fork"
VERSION = {"major": 5, "minor": 3}
# where the kcidb-io bundle is, relative to the repository's parent
BUNDLE = "shared/kcidb/kcidb-io.bundle"
ENV = "FORK_KCIDB_IO"
CLONE = "kcidb-io"           # in the work directory
CHECK_CELLS = ("checkpatch", "boot", "test", "e2fsck", "counts")
CELL_STATUS = {"pass": "PASS", "FAIL": "FAIL", "n/a": "SKIP", "-": "MISS", "error": "ERROR"}
FSTESTS_STATUS = {"pass": "PASS", "fail": "FAIL", "notrun": "SKIP"}
IMPORT_RE = re.compile(r"^Import Debian (linux-source-\S+) (\S+)")


def _id(kind, what):
    return "%s:%s-%s" % (ORIGIN, kind, what)


def _segment(name):
    """A KCIDB path segment: [a-zA-Z0-9_-]+."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name) or "_"


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def patchset_hash(files):
    """KCIDB's patchset hash: sha256 over the newline-terminated sha256 of
    each file, in order ("" for no files)."""
    if not files:
        return ""
    return hashlib.sha256("".join(_sha256(f) + "\n" for f in files).encode()).hexdigest()


def _git_date(date):
    """A mail Date: as git writes it in a commit: '<unix time> <+hhmm>'."""
    parsed = email.utils.parsedate_tz(date)
    if not parsed:
        return None
    off = parsed[9] or 0
    sign = "-" if off < 0 else "+"
    off = abs(off) // 60
    return "%d %s%02d%02d" % (email.utils.mktime_tz(parsed), sign, off // 60, off % 60)


def commit_id(tree, parent, patch, info=None):
    """The id of the commit repo.branches.apply_patch() makes of `patch` on
    `parent` when the result's tree is `tree` (author and committer from the
    patch), computed without the kernel tree; None if the patch's date
    cannot be read.  `info`: the patch's mailinfo(), when known."""
    author, mail, date, message = info or mailinfo(patch)
    when = _git_date(date)
    if when is None:
        return None
    ident = "%s <%s> %s" % (author, mail, when)
    body = ("tree %s\nparent %s\nauthor %s\ncommitter %s\n\n%s"
            % (tree, parent, ident, ident, message)).encode()
    return hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()


# ---------------------------------------------------------------------------
# what the records hold

def _fstests_records(root):
    """[(version, store name, kernel.json, tests)] of every fstests record,
    read with the kit's loader (fsrecord.load())."""
    top = os.path.join(root, "records", "fstests")
    out = []
    for ver in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        vdir = os.path.join(top, ver)
        for store in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
            meta_path = os.path.join(vdir, store, "kernel.json")
            if not os.path.isfile(meta_path):
                continue
            try:
                with open(meta_path) as fh:
                    meta = json.load(fh)
            except (OSError, ValueError) as exc:
                raise ForkError("records/fstests/%s/%s/kernel.json: not readable (%s): restore "
                                "it from git" % (ver, store, exc))
            tests, _ = fsrecord.load(os.path.join(vdir, store), meta)
            out.append((ver, store, meta, tests))
    return out


def gather(root):
    """(check cells, fstests records) of the committed records under root."""
    return checkrecords.cells(root), _fstests_records(root)


def _commits(cells, fsrecs):
    """{commit: {"version", "tree", "subject"}} of every commit on record."""
    out = {}
    for (ver, commit, _, _), cell in sorted(cells.items()):
        for _, row in cell["rows"]:
            out.setdefault(commit, {"version": ver, "tree": row.get("tree"),
                                    "subject": row.get("subject", "")})
    for ver, _, meta, _ in fsrecs:
        out.setdefault(meta["commit"], {"version": ver, "tree": meta.get("tree"),
                                        "subject": ""})
    return out


def _patchsets(commits, series_list):
    """{commit: (series, [patch files], base commit)} for every commit on
    record that a stored series makes from a base on record, patch by patch."""
    bases = [c for c, info in sorted(commits.items()) if IMPORT_RE.match(info["subject"])]
    by_tree = {}
    for c, info in commits.items():
        by_tree.setdefault((info["version"], info["tree"]), []).append(c)
    out, infos = {}, {}
    for s in series_list:
        for base in bases:
            if commits[base]["version"] != s.kver:
                continue
            out.setdefault(base, (s, [], base))
            parent = base
            for k, patch in enumerate(s.patches):
                found = None
                if patch not in infos:
                    infos[patch] = mailinfo(patch)
                for c, info in sorted(commits.items()):
                    if info["version"] != s.kver or not info["tree"] or c == base:
                        continue
                    if commit_id(info["tree"], parent, patch, infos[patch]) == c:
                        found = c
                        break
                if found is None:
                    break
                out.setdefault(found, (s, s.patches[:k + 1], base))
                parent = found
    return out


# ---------------------------------------------------------------------------
# the report

ACCEL_TEXT = {"tcg": "TCG (no KVM)", "kvm": "KVM"}


def _environment(accels=("tcg",)):
    """The environment of a result produced under `accels` (the records'
    accelerators: one, or a check cell's runs under two)."""
    params = inspect.signature(run_guest).parameters
    smp, mem = params["smp"].default, params["mem"].default
    accels = sorted(set(accels))
    return {"comment": "QEMU, %s, x86_64, %s vCPUs, %s MB" % (
                " and ".join(ACCEL_TEXT.get(a, a) for a in accels), smp, mem),
            "misc": {"accel": "+".join(accels), "machine": "qemu-system-x86_64", "smp": smp,
                     "memory_mb": int(mem), "source": "the accelerator from the records "
                     "(none named: TCG); the size from the kit's guest defaults "
                     "(guest/qemu.py run_guest()), which the records do not hold"}}


def _checkout(commit, info, commits, bases_of_ver, patchsets, base_url):
    ver = info["version"]
    ident = _id("checkout", commit)
    co = {"id": ident, "origin": ORIGIN, "valid": True}
    matched = patchsets.get(commit)
    if IMPORT_RE.match(info["subject"]):
        base, files, how = commit, [], "the base snapshot alone: no patches"
    elif matched:
        s, files, base = matched
        how = "the first %d patch files of %s/ make this commit" % (len(files), s.rel)
    else:
        files = None
        cands = bases_of_ver.get(ver, [])
        base = cands[0] if len(cands) == 1 else None
        how = ("no series directory of this repository makes this commit (an older "
               "version of a series, or a patch on top of one): no patchset hash")
    misc = {"commit": commit, "tree": info["tree"], "kernel_version": ver, "patchset": how}
    if base:
        m = IMPORT_RE.match(commits[base]["subject"])
        package, version = m.group(1), m.group(2)
        upstream = re.split(r"[-~+]", version, 1)[0]
        co.update(git_commit_hash=base, tree_name=package,
                  git_commit_name="debian/%s" % version.replace("~", "_"))
        misc["base"] = {
            "debian_package": package, "debian_version": version, "upstream_version": upstream,
            "import_commit": "made by the kit from the Debian tarball (tools/fork import): "
                             "reproducible on any machine, in no public repository"}
        co["comment"] = "Debian %s %s (upstream %s)" % (package, version, upstream)
    else:
        co["comment"] = "linux-source-%s: the base snapshot is not on record" % ver
    if files is not None:
        co["patchset_hash"] = patchset_hash(files)
        root = repo_root()
        rels = [os.path.relpath(f, root).replace(os.sep, "/") for f in files]
        misc["patch_files"] = [{"name": r, "sha256": _sha256(f)} for r, f in zip(rels, files)]
        if base_url and files:
            co["patchset_files"] = [{"name": os.path.basename(r),
                                     "url": "%s/%s" % (base_url.rstrip("/"), r)} for r in rels]
        if files:
            co["comment"] += " + %d patch%s of %s/" % (
                len(files), "" if len(files) == 1 else "es", os.path.dirname(rels[0]))
    if info["subject"]:
        co["comment"] += ": " + info["subject"]
    co["misc"] = misc
    return co


def _cell_status(values):
    """(status, flaky text or None) of one cell over its runs' values."""
    statuses = [CELL_STATUS.get(v, "ERROR") for v in values]
    if len(set(statuses)) == 1:
        return statuses[0], None
    failed = sum(1 for s in statuses if s != "PASS")
    return "FAIL", "%d of %d runs not passed" % (failed, len(statuses))


def report(root=None, base_url=None, series_list=None):
    """The KCIDB v5.3 report of the committed records under `root`."""
    root = root or repo_root()
    cells, fsrecs = gather(root)
    commits = _commits(cells, fsrecs)
    series_list = stored_series() if series_list is None else series_list
    patchsets = _patchsets(commits, series_list)
    bases_of_ver = {}
    for c, info in sorted(commits.items()):
        if IMPORT_RE.match(info["subject"]):
            bases_of_ver.setdefault(info["version"], []).append(c)

    checkouts = {c: _checkout(c, info, commits, bases_of_ver, patchsets, base_url)
                 for c, info in commits.items()}
    builds, tests = {}, []

    def build_of(commit, sha, flavour):
        bid = _id("build", "%s-%s" % (sha, commit[:12]))
        if bid not in builds:
            builds[bid] = {"id": bid, "origin": ORIGIN, "checkout_id": checkouts[commit]["id"],
                           "architecture": "x86_64", "config_name": flavour,
                           "_values": [], "misc": {"image_sha256": sha, "commit": commit,
                                                   "tree": commits[commit]["tree"]}}
        return builds[bid]

    for key in sorted(cells):
        ver, commit, flavour, test = key
        cell = cells[key]
        runs = [run for _, run in cell["runs"]]
        # the runs that give a result: an error of the runner gives none
        # (the cell is ERROR only when no run completed)
        results = [run for run in runs if not run.get("error")] or runs
        latest_row = cell["rows"][-1][1]
        # each run's accelerator; a run entry without one takes its row's
        env = _environment([run.get("accel") or row.get("accel") or "tcg"
                            for (_, run), (_, row) in zip(cell["runs"], cell["rows"])])
        for _, row in cell["rows"]:
            for one in runs_of(row):
                sha = one.get("image_sha256") or row.get("image_sha256")
                if sha:
                    b = build_of(commit, sha, flavour)
                    b["_values"].append(one.get("cells", {}).get("build"))
                    b["misc"].update({k: row[k] for k in ("kit", "config_key", "image")
                                      if row.get(k)})
                    sparse = (row.get("details") or {}).get("sparse")
                    if sparse:
                        b["misc"]["sparse"] = sparse
        sha = runs[-1].get("image_sha256") or latest_row.get("image_sha256")
        build = build_of(commit, sha, flavour)
        for name in CHECK_CELLS:
            if name == "checkpatch":    # the commit's own, not a run's: its latest row's
                values = [r.get("cells", {}).get(name) for _, r in cell["rows"]
                          if r.get("commit") == commit][-1:]
            else:
                values = [run.get("cells", {}).get(name) for run in results]
            if all(v is None for v in values):
                continue
            status, flaky = _cell_status([v if v is not None else "-" for v in values])
            misc = {"version": ver, "commit": commit, "flavour": flavour, "guest_test": test,
                    "cell": name, "row_seconds": latest_row.get("seconds"),
                    "verdict": cell["verdict"], "tools": latest_row.get("tools", {}),
                    "log": runs[-1].get("log")}
            if flaky or len(runs) > 1:
                misc["runs"] = [{"log": r.get("log"), "value": r.get("cells", {}).get(name),
                                 "passed": r.get("passed"), "kit": r.get("kit"),
                                 "image_sha256": r.get("image_sha256")} for r in runs]
            if flaky:
                misc["flaky"] = flaky
            if cell.get("errors"):
                misc["errors"] = [{"run": r.get("log"), "error": r["error"]}
                                  for _, r in cell["errors"]]
            if cell.get("explained"):
                misc["explained"] = [{"run": checkrecords.run_names(r)[0],
                                      "value": r.get("cells", {}).get(name),
                                      "why": e["why"], "see": e["see"]}
                                     for _, r, e in cell["explained"]]
            t = {"id": _id("check", "%s-%s-%s-%s" % (commit, _segment(flavour), _segment(test),
                                                      name)),
                 "origin": ORIGIN, "build_id": build["id"],
                 "path": "%s.%s.%s" % (ORIGIN, _segment(test), name),
                 "status": status, "environment": env,
                 "comment": "%s %s, %s under %s: %s" % (ver, commit[:12], test, flavour, name),
                 "misc": {k: v for k, v in misc.items() if v is not None}}
            tests.append(t)

    for ver, store, meta, results in fsrecs:
        env = _environment([meta.get("accel") or "tcg"])
        build = build_of(meta["commit"], meta["image_sha256"], "fstests")
        build["_values"].append("pass")
        build["misc"].update({"fstests_record": "records/fstests/%s/%s" % (ver, store)})
        for name in sorted(results):
            res = results[name]
            parts = [_segment(p) for p in name.split("/")]
            t = {"id": _id("fstests", "%s-%s" % (store, "-".join(parts))),
                 "origin": ORIGIN, "build_id": build["id"],
                 "path": ".".join(["xfstests"] + parts),
                 "status": FSTESTS_STATUS.get(res.get("status"), "ERROR"),
                 "environment": env,
                 "misc": {"version": ver, "record": store, "test": name,
                          "fstests_commit": meta.get("fstests_commit")}}
            if isinstance(res.get("seconds"), (int, float)):
                t["duration"] = res["seconds"]
            if res.get("message"):
                t["misc"]["message"] = res["message"]
            if meta.get("runner") not in (None, "qemu"):
                t["misc"]["runner"] = meta["runner"]    # a LAVA runner booted its guest
            tests.append(t)

    for b in builds.values():
        values = b.pop("_values")
        b["status"] = "FAIL" if any(v not in ("pass", None) for v in values) else "PASS"
    used = {b["checkout_id"] for b in builds.values()}
    return {"version": dict(VERSION),
            "checkouts": sorted((c for c in checkouts.values() if c["id"] in used),
                                key=lambda c: c["id"]),
            "builds": sorted(builds.values(), key=lambda b: b["id"]),
            "tests": sorted(tests, key=lambda t: t["id"])}


def dumps(rep):
    """The report's bytes: keys sorted, each checkout, build and test on a
    line of its own."""
    def one(obj):
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    parts = []
    for key in sorted(rep):
        if isinstance(rep[key], list):
            body = "[\n" + ",\n".join(one(o) for o in rep[key]) + "\n]" if rep[key] else "[]"
        else:
            body = one(rep[key])
        parts.append("%s:%s" % (one(key), body))
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode()


# ---------------------------------------------------------------------------
# validation by kcidb-io

HOW_TO_GET = ("clone kcidb-io (github.com/kernelci/kcidb-io) into %s, put its git bundle at "
              "%s next to this repository, or set $%s to a clone or bundle")

VALIDATOR = r"""
import json, sys
try:
    import jsonschema
    from kcidb_io import schema
except ImportError as exc:
    print("cannot import kcidb-io: %s" % exc)
    sys.exit(3)
data = json.load(sys.stdin)
try:
    schema.LATEST.validate(data)
except jsonschema.exceptions.ValidationError as exc:
    where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
    print("%s: %s" % (where, " ".join(exc.message.split())[:300]))
    sys.exit(2)
print("%d.%d" % (schema.LATEST.major, schema.LATEST.minor))
"""


def kcidb_io():
    """The directory of a kcidb-io clone: $FORK_KCIDB_IO (a clone, or a
    bundle or URL to clone), else <work>/kcidb-io, else a clone of the
    bundle next to this repository (BUNDLE) made there."""
    dest = os.path.join(workdir(), CLONE)
    given = os.environ.get(ENV)
    hint = HOW_TO_GET % (dest, BUNDLE, ENV)
    if given and os.path.isdir(os.path.join(given, "kcidb_io")):
        return given
    if not given and os.path.isdir(os.path.join(dest, "kcidb_io")):
        return dest
    src = given or os.path.join(os.path.dirname(repo_root()), BUNDLE)
    if not given and not os.path.exists(src):
        raise ForkError("kcidb-io is not available to validate the report: " + hint)
    if given:
        dest = os.path.join(workdir(), CLONE + "-" + hashlib.sha256(
            given.encode()).hexdigest()[:12])
        if os.path.isdir(os.path.join(dest, "kcidb_io")):
            return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    proc = run(["git", "clone", "-q", src, dest], check=False)
    if proc.returncode != 0 or not os.path.isdir(os.path.join(dest, "kcidb_io")):
        err = (proc.stderr or "").strip().splitlines()
        raise ForkError("cannot clone kcidb-io from %s (%s): %s"
                        % (src, err[-1] if err else "no kcidb_io in it", hint))
    return dest


def validate(rep, io_dir=None):
    """Validate `rep` with kcidb-io's schema.LATEST in Debian's python3
    (python3-jsonschema): the schema version, or a one-line ForkError."""
    io_dir = io_dir or kcidb_io()
    proc = run([sys.executable, "-c", VALIDATOR], env={"PYTHONPATH": io_dir},
               input=json.dumps(rep), check=False)
    out = (proc.stdout or "").strip()
    if proc.returncode == 3:
        raise ForkError("%s (is python3-jsonschema installed? tools/setup installs it): %s"
                        % (out, HOW_TO_GET % (os.path.join(workdir(), CLONE), BUNDLE, ENV)))
    if proc.returncode == 2:
        raise ForkError("the KCIDB report does not validate against kcidb-io v%d.%d at %s; "
                        "nothing written: fix the mapping in tools/forkkit/publish/kcidb.py"
                        % (VERSION["major"], VERSION["minor"], out))
    if proc.returncode != 0:
        err = (proc.stderr or "").strip().splitlines()
        raise ForkError("kcidb-io's validation failed to run (%s): check %s"
                        % (err[-1] if err else "exit %d" % proc.returncode, io_dir))
    return out


def timed_validate(rep, io_dir=None):
    """(schema version, seconds the validation took)."""
    start = time.monotonic()
    ver = validate(rep, io_dir)
    return ver, time.monotonic() - start
