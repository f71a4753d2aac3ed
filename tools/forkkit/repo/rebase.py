"""The replay of a rebase: a stored series moved onto another Debian
snapshot patch by patch in the rebase worktree (work/rebase/tree), with its
state in work/rebase/state.json so that it can stop on a conflict, go on
and be undone (``tools/fork rebase`` and ``update`` describe it for the
user).

The check of the result is the caller's: `checker` is an object (the
verify.check module, as the verbs pass it) with ``check_ready(flavour,
test)``, asked before anything moves, and ``run_check(range, series,
flavour, test, force, timeout)``, which returns the table's rows."""

import base64
import json
import os
import re
import shutil
import tempfile
import time

from ..core.errors import ForkError
from ..core.paths import ensure_dir, fork_entry, ktree, repo_root, wpath
from ..core.progress import Progress
from ..core.proc import run, sha256_file
from ..core.records import write_json
from . import debian, snapshot
from . import series as series_mod
from . import worktree as worktrees
from .branches import apply_patches, foreign_commits, foreign_report, lay_out
from .debian import dep14
from .git import git, git_ok, require_clean, require_ktree, tree_is_dirty
from .patchfile import mailinfo, patch_id_of_file
from .save import format_patches, repo_dirty, restore_dir, snapshot_dir
from .series import patch_subject, subject_of_text

# Refs a rebase may change; --abort puts exactly these back.  A series
# with a `branches: NAME` line adds refs/heads/NAME and refs/heads/NAME-topic
# (namespaces()).
NAMESPACES = ["refs/heads/distro", "refs/heads/topic", "refs/heads/backport",
              "refs/heads/series", "refs/tags/debian", "refs/fork"]

# Intermediate commits in the rebase worktree get this committer (the final
# branches are laid out again from the saved patch files anyway).
AM_ENV = {"GIT_COMMITTER_NAME": "fork rebase", "GIT_COMMITTER_EMAIL": "fork-kit@localhost",
          "GIT_EDITOR": "true"}

STATUS_TEXT = {
    "pending": "not replayed yet",
    "clean": "applied cleanly (git apply)",
    "3way": "applied with 3-way merge (git am -3)",
    "conflict": "CONFLICT",
    "resolved": "conflict, resolved by hand",
    "skipped": "conflict, dropped (--skip)",
}


# ---------------------------------------------------------------- state

def rebase_dir():
    return wpath("rebase")


def state_path():
    return os.path.join(rebase_dir(), "state.json")


def worktree():
    return os.path.join(rebase_dir(), "tree")


def load_state():
    try:
        with open(state_path()) as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ForkError("%s is unreadable (%s): look at it, then remove it by hand"
                        % (state_path(), exc))


def save_state(st):
    ensure_dir(rebase_dir())
    write_json(state_path(), st)


def drop_state():
    for path in (state_path(), os.path.join(rebase_dir(), "patches")):
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)


def namespaces(branches):
    """NAMESPACES plus those of the `branches:` name the result is laid out under."""
    if not branches:
        return list(NAMESPACES)
    return NAMESPACES + ["refs/heads/%s" % branches, "refs/heads/%s-topic" % branches]


def snapshot_refs(st=None):
    """{ref: id} of the refs this rebase may change (namespaces of `st`)."""
    out = git(["for-each-ref", "--format=%(refname) %(objectname)"]
              + (st or {}).get("namespaces", NAMESPACES))
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def claim(st, before):
    """Record the refs that changed since `before` as set by this rebase."""
    now = snapshot_refs(st)
    ours = st.setdefault("ours", {})
    for ref in set(now) | set(before):
        if now.get(ref) != before.get(ref):
            ours[ref] = now.get(ref)
    save_state(st)


def ktree_head():
    sym = git(["symbolic-ref", "-q", "HEAD"], check=False)
    return sym or git(["rev-parse", "HEAD"])


# ---------------------------------------------------------------- helpers

def ref_commit(ref):
    return git(["rev-parse", "--verify", "-q", ref + "^{commit}"], check=False) or None


def find_snapshot(s):
    """The commit of the snapshot series `s` is based on."""
    want = s.base["sha256"]
    for ref in ("refs/heads/" + s.distro_branch,
                "refs/tags/debian/" + dep14(s.base.get("version", ""))):
        c = ref_commit(ref)
        if c and snapshot.recorded_sha(c) == want:
            return c
    raise ForkError("the snapshot %s/ is based on (%s %s, sha256 %s) is not in the kernel tree "
                    "(neither %s nor tag debian/%s holds it): import it first with "
                    "`tools/fork import %s` (`apt-get install %s=%s`, or --tarball)"
                    % (s.rel, s.package, s.base.get("version"), want[:16], s.distro_branch,
                       dep14(s.base.get("version", "")), s.kver, s.package,
                       s.base.get("version")))


def normalize_rel(path):
    full = os.path.abspath(os.path.join(repo_root(), path))
    rel = os.path.relpath(full, repo_root())
    if rel.startswith("..") or rel == ".":
        raise ForkError("--into %s is not a directory inside %s" % (path, repo_root()))
    return rel


def read_series_names(rel):
    path = os.path.join(repo_root(), rel, "series")
    if not os.path.exists(path):
        return []
    names = []
    with open(path) as fh:
        for line in fh:
            words = line.split("#", 1)[0].split()
            if words:
                names.append(words[0])
    return names


def source_topics(st):
    """{subject: topic name} from the source series as it was recorded."""
    files = {k: base64.b64decode(v).decode("utf-8", "replace")
             for k, v in st["files"].get(st["source"], {}).items()}
    out = {}
    for line in files.get("series", "").splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] in files:
            out[subject_of_text(files[words[0]])] = words[1]
    return out


def am_in_progress(wt):
    path = git(["rev-parse", "--git-path", "rebase-apply"], cwd=wt)
    return os.path.isdir(os.path.join(wt, path))


def nohooks():
    return ensure_dir(os.path.join(rebase_dir(), "nohooks"))


def am(wt, args):
    return run(["git", "-c", "core.hooksPath=%s" % nohooks(), "am", "--no-gpg-sign"] + args,
               cwd=wt, env=AM_ENV, check=False)


def head_of(wt):
    return git(["rev-parse", "HEAD"], cwd=wt)


# ---------------------------------------------------------------- patch analysis

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def split_patch(text):
    """[(path, header lines, [hunk lines, ...])] of a git diff/format-patch."""
    lines = text.splitlines(keepends=True)
    files = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("diff --git "):
            i += 1
            continue
        m = re.match(r"^diff --git a/(.*) b/(.*)$", lines[i].rstrip("\n"))
        path = m.group(2) if m else lines[i].split()[-1]
        hdr = [lines[i]]
        i += 1
        while i < len(lines) and not lines[i].startswith(("@@", "diff --git ")):
            if lines[i].startswith("+++ b/"):
                path = lines[i][6:].rstrip("\n")
            hdr.append(lines[i])
            i += 1
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = HUNK_RE.match(lines[i])
            if not m:
                break
            old = int(m.group(2)) if m.group(2) is not None else 1
            new = int(m.group(4)) if m.group(4) is not None else 1
            hunk = [lines[i]]
            i += 1
            while i < len(lines) and (old > 0 or new > 0):
                line = lines[i]
                kind = line[:1]
                if kind == "\\":
                    pass
                elif kind == " " or line in ("\n", "\r\n"):
                    old -= 1
                    new -= 1
                elif kind == "-":
                    old -= 1
                elif kind == "+":
                    new -= 1
                else:
                    break
                hunk.append(line)
                i += 1
            while i < len(lines) and lines[i].startswith("\\"):
                hunk.append(lines[i])
                i += 1
            hunks.append(hunk)
        files.append((path, hdr, hunks))
    return files


def apply_check(wt, text, extra=()):
    proc = run(["git", "apply", "--check", "--cached"] + list(extra), cwd=wt,
               input=text.encode("utf-8", "surrogateescape"), check=False)
    out = proc.stdout + proc.stderr
    if isinstance(out, bytes):
        out = out.decode(errors="replace")
    return proc.returncode == 0, out


def failing_hunks(wt, patch):
    """What of `patch` does not apply on the worktree's index, as lines."""
    with open(patch, "rb") as fh:
        text = fh.read().decode("utf-8", "surrogateescape")
    out = []
    for path, hdr, hunks in split_patch(text):
        ok, msg = apply_check(wt, "".join(hdr) + "".join("".join(h) for h in hunks))
        if ok:
            continue
        if "does not exist in index" in msg:
            out.append("%s: the file does not exist in the new base" % path)
            continue
        if "already exists in index" in msg:
            out.append("%s: the patch creates it, but it already exists in the new base" % path)
            continue
        bad = []
        for n, hunk in enumerate(hunks, 1):
            ok, _ = apply_check(wt, "".join(hdr) + "".join(hunk))
            if not ok:
                bad.append("#%d (%s)" % (n, hunk[0].strip()))
        if bad:
            out.append("%s: hunk%s %s do%s not apply" % (path, "s" if len(bad) > 1 else "",
                                                         ", ".join(bad),
                                                         "" if len(bad) > 1 else "es"))
        else:
            first = [l.strip() for l in msg.splitlines() if l.startswith("error:")]
            out.append("%s: %s" % (path, first[0] if first else "does not apply"))
    return out


def offsets(msg):
    """'Hunk #1 succeeded at 12 (offset 2 lines).' -> details."""
    out = []
    cur = None
    for line in msg.splitlines():
        m = re.match(r"^Checking patch (.*)\.\.\.$", line)
        if m:
            cur = m.group(1)
        m = re.match(r"^Hunk #(\d+) succeeded at (\d+) (?:\(offset (-?\d+) lines?\))?", line)
        if m and cur:
            out.append("%s: hunk #%s at line %s (offset %+d)" % (
                cur, m.group(1), m.group(2), int(m.group(3) or 0)))
    return out


def conflict_regions(path):
    regions = []
    start = None
    try:
        with open(path, errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                if line.startswith("<<<<<<<"):
                    start = n
                elif line.startswith(">>>>>>>") and start is not None:
                    regions.append("%d-%d" % (start, n))
                    start = None
    except OSError:
        return None
    return regions


def unmerged(wt):
    """{path: set of stages} of the worktree's index."""
    out = {}
    for line in git(["ls-files", "-u", "-z"], cwd=wt).split("\0"):
        if "\t" not in line:
            continue
        info, path = line.split("\t", 1)
        out.setdefault(path, set()).add(info.split()[2])
    return out


def conflict_details(wt):
    out = []
    for path, stages in sorted(unmerged(wt).items()):
        if "2" not in stages:
            out.append("%s: deleted in the new base, changed by the patch" % path)
            continue
        if "3" not in stages:
            out.append("%s: deleted by the patch, changed in the new base" % path)
            continue
        regions = conflict_regions(os.path.join(wt, path))
        if regions:
            out.append("%s: conflict markers at lines %s" % (path, ", ".join(regions)))
        else:
            out.append("%s: unmerged, no conflict markers left (rerere?)" % path)
    return out


def replay_one(wt, patch):
    """Apply one patch on the worktree's HEAD: (status, details, am output)."""
    proc = run(["git", "apply", "--check", "-v", patch], cwd=wt, check=False)
    if proc.returncode == 0:
        res = am(wt, ["-q", patch])
        if res.returncode == 0:
            return "clean", offsets(proc.stdout + proc.stderr), ""
        am(wt, ["--abort"])  # should not happen: let the 3-way path decide
    details = failing_hunks(wt, patch)
    res = am(wt, ["-3", patch])
    if res.returncode == 0:
        return "3way", details, ""
    conflicts = conflict_details(wt)
    left = unmerged(wt)
    for path in dict.fromkeys(d.split(": ", 1)[0] for d in details):
        if conflicts and path not in left:
            conflicts.append("%s: the 3-way merge resolved its hunks" % path)
    if not conflicts:
        msg = [l for l in (res.stdout + res.stderr).splitlines()
               if l.startswith(("error:", "fatal:"))]
        conflicts = ["no 3-way merge possible: %s" % "; ".join(msg[:3] or ["see git am output"])]
    return "conflict", details + conflicts, (res.stdout + res.stderr).strip()


# ---------------------------------------------------------------- output

def patch_line(i, total, p):
    lines = ["[%d/%d] %s: %s" % (i + 1, total, p["name"], STATUS_TEXT[p["status"]])]
    lines += ["        %s" % d for d in p.get("details", [])]
    return "\n".join(lines)


def conflict_help(st, i):
    p = st["patches"][i]
    wt = worktree()
    files = sorted(unmerged(wt)) if os.path.isdir(wt) else []
    distro = "refs/heads/distro/%s" % st["onto"]["kver"]
    moved = st["refs"].get(distro) != st["new_base"]
    # Debian's 6.1 tarball ships a .gitignore with "/*" (for its packaging
    # repository), so a plain `git add` of a tracked kernel file is refused.
    ignored = files and run(["git", "check-ignore", "-q", "--no-index"] + files,
                            cwd=wt, check=False).returncode == 0
    add = "git add -f" if ignored else "git add"
    return "\n".join([
        "",
        "Patch %d/%d (%s) stopped with conflicts; `git am -3` is in progress in the rebase "
        "worktree" % (i + 1, len(st["patches"]), p["name"]),
        "  %s" % wt,
        "Resolve it there as for any `git am` conflict:",
        "  cd %s" % wt,
        "  $EDITOR %s   # the <<<<<<< ======= >>>>>>> regions listed above"
        % (" ".join(files) or "<files>"),
        "  %s %s%s" % (add, " ".join(files) or "<files>",
                       "   # -f: this tree's .gitignore ignores them" if ignored else ""),
        "  %s rebase --continue   # commits it and replays the rest" % fork_entry(),
        "Or drop the patch:  %s rebase --skip" % fork_entry(),
        "Or give up:         %s rebase --abort   (restores every branch, tag and file)"
        % fork_entry(),
        "`git am --show-current-patch=diff` there shows the patch (a copy: %s)." % p["copy"],
        "Nothing in %s/ and no topic or series branch has changed yet%s." % (
            st["dest"], "; %s already holds the new snapshot (--abort puts it back)"
            % distro[len("refs/heads/"):] if moved else ""),
    ])


# ---------------------------------------------------------------- start

def dest_branches(src, dest_rel):
    """The `branches:` name of the result: the destination's own when it has
    a base file already, else the source series' (a series keeps its branch
    names when it moves: next/ -> next/<ver>, next-topic/<ver>/...)."""
    if dest_rel != src.rel and os.path.isfile(os.path.join(repo_root(), dest_rel, "base")):
        return series_mod.Series(dest_rel).branch_name
    return src.branch_name


def head_branch(branches, kver):
    return "%s/%s" % (branches, kver) if branches else "series/%s" % kver


def check_destination(src, dest_rel, kver, sha):
    """Refuse, before anything changes, what the result could not be stored as."""
    for rel in {src.rel, dest_rel}:
        dirty = repo_dirty(os.path.join(repo_root(), rel))
        if dirty:
            raise ForkError("%s/ has uncommitted changes in this repository:\n%s\n"
                            "Commit or stash them first; nothing was changed." % (rel, dirty))
    dest_path = os.path.join(repo_root(), dest_rel)
    if dest_rel != src.rel:
        if dest_rel.startswith("backports" + os.sep) and os.path.basename(dest_rel) != kver:
            raise ForkError("--into %s does not match --onto %s: backport series live in "
                            "backports/<major.minor>/ (use --into backports/%s)"
                            % (dest_rel, kver, kver))
        if os.path.isfile(os.path.join(dest_path, "base")):
            dest = series_mod.Series(dest_rel)
            if dest.patches:
                raise ForkError("%s/ already holds %d patches: rebase that series itself "
                                "(`tools/fork rebase --series %s --onto ...`), or empty its "
                                "series file first; nothing was changed"
                                % (dest_rel, len(dest.patches), dest_rel))
            if dest.kver != kver:
                raise ForkError("%s/base is for %s, not linux-source-%s: choose another --into"
                                % (dest_rel, dest.package, kver))
    head = head_branch(dest_branches(src, dest_rel), kver)
    for other in series_mod.stored_series():
        if other.rel in (dest_rel, src.rel) or other.kver != kver:
            continue
        if dest_rel != src.rel and other.base["sha256"] != sha:
            raise ForkError("%s/ is on %s %s (distro/%s), another snapshot than the one asked "
                            "for: a series beside it must be on the same one (`--onto %s`), "
                            "or move %s/ first. Nothing was changed."
                            % (other.rel, other.package, other.base.get("version"), kver,
                               other.base.get("version"), other.rel))
    for other in series_mod.stored_series():
        if other.rel == dest_rel or other.kver != kver or other.head_branch != head:
            continue
        if other.rel == src.rel:
            raise ForkError("%s/ itself is on %s: onto the same major.minor the series moves in "
                            "place; drop --into" % (src.rel, other.package))
        raise ForkError("%s/ already lives on %s (distro/%s, %s); two series cannot "
                        "share them. Rebase into it with `--into %s` (it must hold no patches), "
                        "or move it away first. Nothing was changed."
                        % (other.rel, other.package, kver, head, other.rel))


def check_branches(src, old_base, kver, target):
    known = {patch_id_of_file(p) for p in src.patches}
    problems = foreign_report([b for _, b in src.topics()] + [src.head_branch], old_base, known)
    if problems:
        raise ForkError("these branches hold commits that are not in %s/, and a rebase replays "
                        "only the stored patches:\n%s\nSave them first (`tools/fork save "
                        "--series %s`), or keep them under another name. Nothing was changed."
                        % (src.rel, "\n".join(problems), src.rel))
    base = ref_commit("refs/heads/distro/%s" % kver)
    if base and target != src.head_branch:
        extra = foreign_commits(target, base, known)
        if extra:
            raise ForkError("%s holds commits of its own (%s): move them away first (`git -C %s "
                            "branch -m %s keep/...`); nothing was changed"
                            % (target, ", ".join(c[:12] for c in extra), ktree(), target))


def setup_worktree(commit, prog):
    """The rebase worktree at `commit` (a `git am` left over is aborted)."""
    wt = worktree()
    if worktrees.is_worktree(wt) and am_in_progress(wt):
        am(wt, ["--abort"])
    return worktrees.ensure(wt, commit, "rebase", prog=prog)


def start(onto, series=series_mod.PRIMARY, into=None, tarball=None, debian_version=None,
          archive=False, check=None, config="base", test="smoke", timeout=900, checker=None):
    """Move the series directory `series` onto the snapshot `onto` (see
    ``tools/fork rebase --help``); 0 when done, 1 when stopped on a
    conflict.  `check` None or True: check the result with `checker`."""
    prog = Progress("rebase")
    require_ktree()
    if load_state() is not None:
        raise ForkError("a rebase is already in progress (%s): `tools/fork rebase --status`, "
                        "then --continue, --skip or --abort it" % state_path())
    require_clean(ktree())
    if check is not False:
        checker.check_ready(config, test)
    src = series_mod.Series(series)
    kver, wanted = snapshot.normalize_version(onto)
    package = "linux-source-%s" % kver
    tarball, version = debian.snapshot(kver, wanted, tarball, debian_version, archive,
                                       prog=prog)
    prog.say("checksumming %s" % tarball)
    sha = sha256_file(tarball)
    dest_rel = normalize_rel(into) if into else src.rel
    if dest_rel == src.rel and sha == src.base["sha256"]:
        print("%s/ is already based on %s %s: nothing to do" % (src.rel, package, version))
        return 0
    check_destination(src, dest_rel, kver, sha)
    branches = dest_branches(src, dest_rel)
    old_base = find_snapshot(src)
    check_branches(src, old_base, kver, head_branch(branches, kver))
    prog.say("old base %s (%s %s); computing the old series head"
             % (old_base[:12], src.package, src.base.get("version")))
    old_head = apply_patches(old_base, src.patches)

    copies = os.path.join(rebase_dir(), "patches")
    if os.path.isdir(copies):
        shutil.rmtree(copies)
    ensure_dir(copies)
    patches = []
    for patch in src.patches:
        copy = os.path.join(copies, os.path.basename(patch))
        shutil.copyfile(patch, copy)
        patches.append({"name": os.path.basename(patch), "copy": copy,
                        "subject": mailinfo(patch)[3].splitlines()[0],
                        "status": "pending", "details": [], "commits": []})
    st = {
        "version": 1, "phase": "starting", "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "source": src.rel, "dest": dest_rel,
        "branches": branches, "namespaces": namespaces(branches),
        "onto": {"kver": kver, "package": package, "version": version,
                 "upstream": snapshot.upstream_of(version), "sha256": sha, "tarball": tarball},
        "old": {"kver": src.kver, "base": old_base, "head": old_head, "base_info": src.base},
        "new_base": None,
        "refs": snapshot_refs({"namespaces": namespaces(branches)}),
        "ktree_head": ktree_head(), "ktree_detached": False,
        "files": {rel: snapshot_dir(rel) for rel in sorted({src.rel, dest_rel})},
        "patches": patches,
        "check": True if check is None else check,
        "config": config, "test": test, "timeout": timeout,
    }
    save_state(st)
    prog.say("state recorded in %s" % state_path())
    try:
        branch = "refs/heads/distro/%s" % kver
        have = ref_commit(branch)
        if have and snapshot.recorded_sha(have) != sha and st["ktree_head"] == branch:
            # import moves the branch under the user's checkout: detach first
            # (no file changes), so their tree keeps showing what it showed.
            git(["checkout", "-q", "--detach"])
            st["ktree_detached"] = True
            save_state(st)
        new_base = snapshot.do_import(kver, tarball=tarball, debian_version=version,
                                        update=True, out=lambda *_: None)
        st["new_base"] = new_base
        claim(st, st["refs"])
        setup_worktree(new_base, prog)
        st["phase"] = "replaying"
        save_state(st)
    except (ForkError, KeyboardInterrupt):
        prog.say("could not set up the rebase; restoring what was changed")
        restore(st, prog)
        raise
    print("rebasing %s/ (%d patches, %s %s) onto %s %s = %s%s"
          % (src.rel, len(patches), src.package, src.base.get("version"), package, version,
             st["new_base"][:12], "" if dest_rel == src.rel else ", into %s/" % dest_rel),
          flush=True)
    return replay(st, prog, checker)


# ---------------------------------------------------------------- replay/finish

def replay(st, prog, checker):
    wt = worktree()
    total = len(st["patches"])
    for i, p in enumerate(st["patches"]):
        if p["status"] != "pending":
            continue
        base = head_of(wt)
        prog.say("replaying %s" % p["name"])
        status, details, output = replay_one(wt, p["copy"])
        p["status"], p["details"], p["base_commit"] = status, details, base
        if status == "conflict":
            p["am_output"] = output
            save_state(st)
            print(patch_line(i, total, p))
            print(conflict_help(st, i), flush=True)
            return 1
        p["commits"] = [head_of(wt)]
        save_state(st)
        print(patch_line(i, total, p), flush=True)
    return finish(st, prog, checker)


def write_series(st, head):
    """Write the dest series directory from new_base..head (as `save` does)."""
    rel = st["dest"]
    path = ensure_dir(os.path.join(repo_root(), rel))
    old_names = read_series_names(rel)
    tmp = tempfile.mkdtemp(prefix="rebase-", dir=ensure_dir(wpath("tmp")))
    try:
        names = format_patches(st["new_base"], head, tmp)
        for name in names:
            shutil.copyfile(os.path.join(tmp, name), os.path.join(path, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in old_names:
        if name not in names and os.path.exists(os.path.join(path, name)):
            os.unlink(os.path.join(path, name))
    topics = source_topics(st)
    with open(os.path.join(path, "series"), "w") as fh:
        for n in names:
            topic = topics.get(patch_subject(os.path.join(path, n)))
            fh.write("%s %s\n" % (n, topic) if topic else n + "\n")
    o = st["onto"]
    with open(os.path.join(path, "base"), "w") as fh:
        fh.write("package: %s\nversion: %s\nupstream: %s\nsha256: %s\n"
                 % (o["package"], o["version"], o["upstream"], o["sha256"]))
        if st.get("branches"):
            fh.write("branches: %s\n" % st["branches"])
    return names


def finish(st, prog, checker):
    """Write the result and lay the branches out (once), then check it."""
    if st["phase"] == "replaying":
        for rel, files in st["files"].items():
            if snapshot_dir(rel) != files:
                raise ForkError("%s/ changed in this repository while the rebase was running; "
                                "the rebase would overwrite it: put it back as it was (`git -C "
                                "%s status -- %s`), then --continue, or --abort"
                                % (rel, repo_root(), rel))
    if st["phase"] != "checking":
        write_result(st)
    return check_result(st, checker)


def settle(st):
    """Claim the refs a lay-out moved: this one's, or one cut short (Ctrl-C)."""
    if st.get("laying_out") is not None:
        claim(st, st.pop("laying_out"))


def write_result(st):
    """Series files and branches from the replayed worktree, then the report.

    The refs as they were are recorded before anything is written, so that
    whatever a lay-out interrupted at any step has moved is the rebase's own
    for --abort (settle)."""
    wt = worktree()
    settle(st)
    st["phase"] = "finishing"
    st["laying_out"] = snapshot_refs(st)
    save_state(st)
    try:
        names = write_series(st, head_of(wt))
        dest = series_mod.Series(st["dest"])
        new_head = lay_out(dest, out=lambda *_: None)
    except ForkError as exc:
        raise ForkError("%s\nThe rebase is finishing: fix that, then `tools/fork rebase "
                        "--continue` to write the series again, or `--abort` to put everything "
                        "back." % exc)
    finally:
        settle(st)
    st["phase"] = "checking"
    st["written"] = {rel: snapshot_dir(rel) for rel in st["files"]}
    save_state(st)
    report_result(st, dest, new_head, names)


def report_result(st, dest, new_head, names):
    counts = {}
    for p in st["patches"]:
        counts[p["status"]] = counts.get(p["status"], 0) + 1
    print("\n%d patches: %s" % (len(st["patches"]), ", ".join(
        "%d %s" % (counts[k], STATUS_TEXT[k]) for k in ("clean", "3way", "resolved", "skipped")
        if counts.get(k)) or "none"))
    print("%s/ is now on %s %s (distro/%s = %s); %s = %s (%d patches)"
          % (dest.rel, st["onto"]["package"], st["onto"]["version"], dest.kver,
             st["new_base"][:12], dest.head_branch, new_head[:12], len(names)))
    old = st["old"]
    rng = ["%s..%s" % (old["base"], old["head"]), "%s..%s" % (st["new_base"], new_head)]
    print("\n$ git range-diff %s %s" % (
        "%s..%s" % (old["base"][:12], old["head"][:12]),
        "%s..%s" % (st["new_base"][:12], new_head[:12])))
    proc = run(["git", "range-diff", "--no-color"] + rng, cwd=ktree(), check=False)
    print((proc.stdout + proc.stderr).rstrip() or "(both ranges are empty)")
    notes = []
    if st["ktree_detached"]:
        notes.append("the kernel tree %s was on %s and is now detached at the old snapshot "
                     "(`git -C %s checkout %s` follows the new one)"
                     % (ktree(), st["ktree_head"][len("refs/heads/"):], ktree(),
                        st["ktree_head"][len("refs/heads/"):]))
    if dest.rel == st["source"] and dest.kver != old["kver"]:
        notes.append("%s still points at the old head %s; the old topic tips are kept "
                     "under refs/fork/prev/" % (head_branch(st.get("branches"), old["kver"]),
                                                old["head"][:12]))
    notes.append("review and commit %s/ in %s" % (dest.rel, repo_root()))
    print("\n" + "\n".join("note: " + n for n in notes))


def check_result(st, checker):
    """The check of the new series; until it passes, --abort undoes the rebase."""
    if st["check"]:
        print("\n$ tools/fork check --series %s --config %s --test %s"
              % (st["dest"], st["config"], st["test"]), flush=True)
        undo = ("`tools/fork rebase --abort` puts the old series back, `--continue` checks "
                "again, `--continue --no-check` keeps the new series unchecked")
        try:
            rows = checker.run_check(None, series_mod.Series(st["dest"]), st["config"],
                                     st["test"], False, st["timeout"])
        except ForkError as exc:
            raise ForkError("the rebase is done, but `check` could not run: %s\n%s"
                            % (exc, undo))
        if not all(r["passed"] for r in rows):
            raise ForkError("the rebase is done, but `check` failed on the new series (table "
                            "above)\n%s" % undo)
    drop_state()
    return 0


# ---------------------------------------------------------------- continue/skip/abort

def current(st):
    for i, p in enumerate(st["patches"]):
        if p["status"] == "conflict":
            return i, p
    return None, None


def need_state():
    st = load_state()
    if st is None:
        raise ForkError("no rebase in progress (no %s)" % state_path())
    if st.get("phase") == "starting":
        raise ForkError("the rebase in %s did not get past its set-up: `tools/fork rebase "
                        "--abort` restores what it recorded" % state_path())
    if not os.path.exists(os.path.join(worktree(), ".git")):
        raise ForkError("the rebase worktree %s is gone: `tools/fork rebase --abort` restores "
                        "what the rebase recorded, then start again" % worktree())
    return st


def do_continue(check, prog, checker):
    """--continue: after a resolved conflict, or after a failed check."""
    st = need_state()
    if check is not None:
        st["check"] = check
    if st["check"]:
        checker.check_ready(st["config"], st["test"])
    if st["phase"] in ("finishing", "checking"):
        return finish(st, prog, checker)
    i, p = current(st)
    wt = worktree()
    if p is not None:
        if am_in_progress(wt):
            left = sorted(unmerged(wt))
            if left:
                raise ForkError("still unmerged in %s: %s\nEdit them, `git add` them, then "
                                "`tools/fork rebase --continue` (or --skip / --abort)"
                                % (wt, ", ".join(left)))
            res = am(wt, ["--continue"])
            if res.returncode != 0:
                raise ForkError("`git am --continue` in %s failed:\n%s\nIf the resolved patch "
                                "changes nothing, drop it with `tools/fork rebase --skip`."
                                % (wt, (res.stdout + res.stderr).strip()))
        dirty = tree_is_dirty(wt)
        if dirty:
            raise ForkError("%s has uncommitted changes (%s): `git add` them and run `git am "
                            "--continue` or commit them, then --continue"
                            % (wt, dirty.splitlines()[0].strip()))
        head = head_of(wt)
        if head == p["base_commit"]:
            raise ForkError("patch %s is not applied in %s and no `git am` is in progress: "
                            "drop it with `tools/fork rebase --skip`, or apply it by hand "
                            "(`git -C %s am -3 %s`) and --continue"
                            % (p["name"], wt, wt, p["copy"]))
        if not git_ok(["merge-base", "--is-ancestor", p["base_commit"], head], cwd=wt):
            raise ForkError("HEAD of %s (%s) no longer descends from %s, where patch %s was "
                            "being applied: `git -C %s reset --hard %s` and resolve again, or "
                            "--abort" % (wt, head[:12], p["base_commit"][:12], p["name"], wt,
                                         p["base_commit"][:12]))
        p["commits"] = git(["rev-list", "--reverse", "%s..%s" % (p["base_commit"], head)],
                           cwd=wt).split()
        p["status"] = "resolved"
        p["details"] = p["details"] + ["resolved in %d commit%s" % (
            len(p["commits"]), "" if len(p["commits"]) == 1 else "s")]
        save_state(st)
        print(patch_line(i, len(st["patches"]), p), flush=True)
    return replay(st, prog, checker)


def do_skip(check, prog, checker):
    """--skip: drop the patch stopped on a conflict and go on."""
    st = need_state()
    if check is not None:
        st["check"] = check
    i, p = current(st)
    if p is None:
        raise ForkError("no patch is stopped on a conflict: use --continue or --abort")
    if st["check"]:
        checker.check_ready(st["config"], st["test"])
    wt = worktree()
    if am_in_progress(wt):
        am(wt, ["--abort"])
    run(["git", "reset", "-q", "--hard", p["base_commit"]], cwd=wt)
    p["status"] = "skipped"
    p["commits"] = []
    save_state(st)
    print(patch_line(i, len(st["patches"]), p), flush=True)
    return replay(st, prog, checker)


def restore_ref(ref, old):
    head = git(["symbolic-ref", "-q", "HEAD"], check=False)
    if ref == head:
        if old is None:
            git(["checkout", "-q", "--detach"])
            git(["update-ref", "-d", ref])
        else:
            require_clean(ktree())
            git(["reset", "-q", "--keep", old])
        return
    if old is None:
        git(["update-ref", "-d", ref])
    else:
        git(["update-ref", "-m", "fork rebase --abort", ref, old])


def restore_dirs(st, prog):
    """Put the series files back, if the rebase wrote them; return the
    directories left alone: changed since the rebase wrote them."""
    if st["phase"] not in ("finishing", "checking"):
        return []
    written = st.get("written") or {}
    alone = [rel for rel in written if snapshot_dir(rel) != written[rel]]
    for rel, files in st["files"].items():
        if rel in alone:
            prog.say("left alone: %s/ (changed since the rebase wrote it)" % rel)
        else:
            restore_dir(rel, files)
    return alone


def restore(st, prog):
    """Put refs, kernel tree HEAD and (if written) series files back;
    return (refs put back, series directories left alone)."""
    wt = worktree()
    settle(st)
    if os.path.exists(os.path.join(wt, ".git")):
        if am_in_progress(wt):
            am(wt, ["--abort"])
        run(["git", "reset", "-q", "--hard"], cwd=wt, check=False)
        run(["git", "clean", "-q", "-f", "-d"], cwd=wt, check=False)
    now = snapshot_refs(st)
    orig = st["refs"]
    ours = st.get("ours", {})
    todo, alone = [], []
    for ref in sorted(set(now) | set(orig)):
        if now.get(ref) == orig.get(ref):
            continue
        # Put back what this rebase set (and nothing moved since); during the
        # set-up (phase "starting") every change is the rebase's own.
        if st["phase"] == "starting" or (ref in ours and ours[ref] == now.get(ref)):
            todo.append((ref, orig.get(ref)))
        else:
            alone.append(ref)
    head = git(["symbolic-ref", "-q", "HEAD"], check=False)
    if any(ref == head and old for ref, old in todo):
        require_clean(ktree())
    for ref, old in todo:
        restore_ref(ref, old)
    dirs_alone = restore_dirs(st, prog)
    head = st["ktree_head"]
    if st["ktree_detached"] and not git(["symbolic-ref", "-q", "HEAD"], check=False) \
            and git(["rev-parse", "HEAD"]) == st["refs"].get(head):
        git(["symbolic-ref", "HEAD", head])
    prog.say("%d refs put back" % len(todo))
    for ref in alone:
        prog.say("left alone: %s (changed outside the rebase since it started)" % ref)
    drop_state()
    return len(todo), dirs_alone


def do_abort(prog):
    """--abort: put back what the rebase changed."""
    st = load_state()
    if st is None:
        raise ForkError("no rebase in progress (no %s)" % state_path())
    changed, dirs_alone = restore(st, prog)
    dest = ("left alone" if st["dest"] in dirs_alone
            else "restored" if st["phase"] in ("finishing", "checking") else "untouched")
    print("rebase aborted: %d branches/tags put back, %s/ %s, kernel tree HEAD %s"
          % (changed, st["dest"], dest,
             st["ktree_head"] if not st["ktree_head"].startswith("refs/heads/")
             else st["ktree_head"][len("refs/heads/"):]))
    return 0


def do_status():
    """--status: the rebase in progress."""
    st = load_state()
    if st is None:
        print("no rebase in progress")
        return 0
    print("rebase of %s/ onto %s %s (into %s/), phase %s, started %s"
          % (st["source"], st["onto"]["package"], st["onto"]["version"], st["dest"],
             st["phase"], st["started"]))
    for i, p in enumerate(st["patches"]):
        print(patch_line(i, len(st["patches"]), p))
    i, p = current(st)
    if p is not None:
        print(conflict_help(st, i))
    return 0

