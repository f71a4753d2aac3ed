"""The W=1 (and sparse) recompile of the files a commit touches, as
ktest's PATCHCHECK does: a new warning there fails the build."""

import os
import re
import shutil

from ..core.proc import run
from ..repo.git import git
from .make import make_args, make_env


# gcc names the source as kbuild passed it: relative to the build dir
# ("../../src/fs/ext2/inode.c" for O=work/build/<x>), absolute, or plain.
SOURCE = r"(?:\.\./)*(?:(?:[^\s:]*?/)?src/)?([^\s:]+):(\d+)"
WARN_RE = re.compile(r"^" + SOURCE + r":(?:\d+:)? (?:warning|error): (.*)$")
# The Python kernel-doc (W=1 runs it on every C file it compiles) of
# later kernels: "Warning: FILE:LINE message", the file named the same ways.
KDOC_RE = re.compile(r"^Warning: " + SOURCE + r":? (.*)$")


def match_warning(line):
    """(file relative to the tree, line, message) of a compiler or
    kernel-doc warning line, or None."""
    m = WARN_RE.match(line) or KDOC_RE.match(line)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def commit_files(commit, src):
    """The files `commit` changes relative to its first parent."""
    parents = git(["rev-list", "--parents", "-n", "1", commit], cwd=src).split()[1:]
    if not parents:
        return []
    return git(["diff-tree", "--no-commit-id", "--name-only", "-r", parents[0], commit],
               cwd=src).split()


def patchcheck(src, bdir, commit, jobs, log, prog):
    """Recompile objects of touched files with W=1 (+sparse); return
    (warnings, what became of sparse)."""
    files = commit_files(commit, src)
    objs = set()
    for f in files:
        if f.endswith(".c"):
            cands = [f]
        elif f.endswith(".h"):
            d = os.path.dirname(f)
            cands = [os.path.join(d, x) for x in os.listdir(os.path.join(src, d))
                     if x.endswith(".c")] if d and os.path.isdir(os.path.join(src, d)) else []
        else:
            continue
        for c in cands:
            if os.path.exists(os.path.join(bdir, c[:-2] + ".o")):
                objs.add(c[:-2] + ".o")
    if not objs:
        return [], "not run: no object of a touched file"
    prog.say("patchcheck: W=1%s on %d objects of touched files"
             % (" (+ sparse if the kernel accepts it)" if shutil.which("sparse") else "",
                len(objs)))
    touched = set(files)
    warnings, failed, sparse = compile_warnings(src, bdir, objs, touched, jobs, log)
    if sparse != "ran":
        prog.say("patchcheck: sparse %s" % sparse)
    if warnings:
        # Only new warnings count: drop those the parent commit already has
        # (same file and message; line numbers move).
        parents = git(["rev-list", "--parents", "-n", "1", commit], cwd=src).split()[1:]
        if parents:
            prog.say("patchcheck: %d warnings; comparing with the parent %s"
                     % (len(warnings), parents[0][:12]))
            run(["git", "checkout", "-q", "--detach", parents[0]], cwd=src, log=log)
            try:
                old, _, _ = compile_warnings(src, bdir, objs, touched, jobs, log)
            finally:
                run(["git", "checkout", "-q", "--detach", commit], cwd=src, log=log)
            seen = {}
            for w in old:
                seen[warning_key(w)] = seen.get(warning_key(w), 0) + 1
            new = []
            for w in warnings:
                k = warning_key(w)
                if seen.get(k):
                    seen[k] -= 1
                else:
                    new.append(w)
            warnings = new
    if failed and not warnings:
        warnings.append(failed)
    return warnings, sparse


def warning_key(line):
    m = match_warning(line)
    return (m[0], m[2]) if m else line


# The kernel's Makefile (6.15 and later: scripts/checker-valid.sh) skips
# sparse with this warning when sparse is missing or cannot parse what the
# tree needs (__typeof_unqual__; bookworm's sparse 0.6.4 cannot).
SPARSE_REFUSED_RE = re.compile(r"C=\d+ specified, but \S+ is not available or not up to date")


def sparse_state(out, objs):
    """What became of sparse in a C=1 recompile of `objs` (made without
    make -s, so that kbuild prints a CHECK line per file sparse checks):
    "ran", or why not."""
    if not shutil.which("sparse"):
        return "not run: sparse is not installed"
    if SPARSE_REFUSED_RE.search(out):
        return ("not run: this kernel refuses %s (scripts/checker-valid.sh: too old for "
                "the tree)" % sparse_version())
    # kbuild names the source as given to sparse: absolute in O= builds
    checked = re.findall(r"^\s*CHECK\s+(\S+)$", out, re.M)
    missing = sorted(o[:-2] + ".c" for o in objs
                     if not any(c == o[:-2] + ".c" or c.endswith("/" + o[:-2] + ".c")
                                for c in checked))
    if missing:
        return "not run on %s (no CHECK line)" % ", ".join(missing)
    return "ran"


def sparse_version():
    proc = run(["sparse", "--version"], check=False)
    return "sparse " + ((proc.stdout or proc.stderr or "").strip() or "(unknown version)")


def compile_warnings(src, bdir, objs, touched, jobs, log):
    """Recompile `objs` with W=1 (and sparse); return (warnings in touched
    files, failure message or None, what became of sparse)."""
    for o in objs:
        try:
            os.unlink(os.path.join(bdir, o))
        except OSError:
            pass
    args = [a for a in make_args(src, bdir, jobs) if a != "-s"] + ["W=1"]
    if shutil.which("sparse"):
        args.append("C=1")
    proc = run(args + sorted(objs), env=make_env(), cwd=src, check=False)
    out = (proc.stdout or "") + (proc.stderr or "")
    with open(log, "a") as fh:
        fh.write("$ patchcheck %s\n%s\n" % (" ".join(sorted(objs)), out))
    warnings = []
    for line in out.splitlines():
        m = match_warning(line.strip())
        if m and m[0] in touched:
            warnings.append(line.strip())
    failed = None
    if proc.returncode != 0:
        failed = "recompiling %s failed: %s" % (" ".join(sorted(objs)), out.strip()[-500:])
    return warnings, failed, sparse_state(out, objs)
