"""Building one revision: the config flavours (ci/kconfig fragments merged
onto allnoconfig and asserted), the private build worktree, the W=1/sparse
patchcheck, checkpatch, and the store of built images (work/kernels/, by
sha256, indexed by tree, flavour and config).  The verb's help (cmd_build)
describes it for the user; kernel.py puts it together with the boot and the
verdict.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from .common import (ForkError, Lock, Progress, cpu_count, ensure_dir, git, ktree, new_log,
                     repo_root, require_ktree, rev_parse, run, sha256_file, tail, wpath)

FLAVOURS = {
    "base": ["base.config"],
    "debug": ["base.config", "debug.config"],
    "lockstat": ["base.config", "lockstat.config"],
    "kcsan": ["base.config", "kcsan.config"],
    "kasan": ["base.config", "kasan.config"],
    # only to measure inline against outline KASAN (CHECKS.md)
    "kasan-inline": ["base.config", "kasan.config", "kasan-inline.config"],
    "faults": ["base.config", "faults.config"],
    # the guest of `fstests` (Debian root on a virtio disk, loop, dm, quota)
    "fstests": ["base.config", "fstests.config"],
}
# Flavours whose kernels report races, bad accesses or leaks outside
# ext2 as well: reports there are judged by kernel.judge_reports().
SANITIZERS = ("kcsan", "kasan", "kasan-inline", "faults")
# Flavours with kmemleak: the guest init scans after the test, and a run
# whose scan did not happen (kmemleak disabled itself) fails.
KMEMLEAK_FLAVOURS = ("kasan", "kasan-inline", "faults")
BUILD_DEPS = [("make", "make"), ("gcc", "gcc"), ("flex", "flex"), ("bison", "bison"),
              ("bc", "bc"), ("cpio", "cpio")]


class BuildResult:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def check_deps():
    for prog, pkg in BUILD_DEPS:
        if not shutil.which(prog):
            raise ForkError("build dependency %s is missing: run `apt-get install %s` "
                            "(tools/setup installs all of them)" % (prog, pkg))
    for header, pkg in (("/usr/include/libelf.h", "libelf-dev"),
                        ("/usr/include/openssl/ssl.h", "libssl-dev")):
        if not os.path.exists(header):
            raise ForkError("build dependency %s is missing (%s): run `apt-get install %s`"
                            % (pkg, header, pkg))


def default_rev():
    from .series import Series
    return Series().head_branch


def src_tree():
    return wpath("src")


def checkout(commit, log):
    """Check `commit` out, detached, in the private src worktree."""
    src = src_tree()
    if not os.path.exists(os.path.join(src, ".git")):
        run(["git", "worktree", "prune"], cwd=ktree(), log=log)
        run(["git", "worktree", "add", "-f", "--detach", src, commit], cwd=ktree(), log=log)
        return src
    dirty = git(["status", "--porcelain", "--untracked-files=no"], cwd=src)
    if dirty:
        raise ForkError("the build worktree %s has local changes (%s): it belongs to the fork "
                        "kit; commit them in %s instead, then `git -C %s reset --hard` to drop "
                        "them there" % (src, dirty.splitlines()[0].strip(), ktree(), src))
    if git(["rev-parse", "HEAD"], cwd=src) != commit:
        run(["git", "checkout", "-q", "--detach", commit], cwd=src, log=log)
    return src


def parse_fragment(path):
    """[(symbol, value, if_present)] from a Kconfig fragment."""
    out = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if_present = "# if-present" in line
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", line)
            if not m:
                raise ForkError("%s:%d: not a CONFIG_X=value line: %r" % (path, n, line))
            out.append((m.group(1), m.group(2), if_present))
    return out


def fragment_options(flavour):
    """The flavour's options; a later fragment's value for a symbol
    replaces an earlier one's."""
    opts = {}
    for name in FLAVOURS[flavour]:
        for sym, val, if_present in parse_fragment(os.path.join(repo_root(), "ci", "kconfig",
                                                                name)):
            opts.pop(sym, None)
            opts[sym] = (sym, val, if_present)
    return list(opts.values())


def kconfig_defines(src, symbol):
    proc = run(["git", "grep", "-q", "-E", r"^\s*(menu)?config %s\s*$" % symbol[len("CONFIG_"):],
                "HEAD", "--", "*Kconfig*"], cwd=src, check=False)
    return proc.returncode == 0


def read_config(path):
    cfg = {}
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            m = re.match(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", line)
            if m:
                cfg[m.group(1)] = m.group(2)
            m = re.match(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$", line)
            if m:
                cfg[m.group(1)] = "n"
    return cfg


def assert_config(bdir, src, opts, flavour):
    cfg = read_config(os.path.join(bdir, ".config"))
    for sym, want, if_present in opts:
        if if_present and not kconfig_defines(src, sym):
            continue
        got = cfg.get(sym, "n")
        if got != want:
            raise ForkError("config option %s=%s (asked for by ci/kconfig, flavour %s) is %s in "
                            "%s/.config after olddefconfig: one of its `depends on` is not met "
                            "or the symbol does not exist in this tree; fix the fragment"
                            % (sym, want, flavour, "not set" if got == "n" else "=" + got, bdir))


def make_env():
    # Reproducible images: the same tree, config, toolchain and paths give
    # the same bzImage in any build directory, so a fresh machine set up the
    # same way rebuilds the same image.  Without a fixed
    # KBUILD_BUILD_VERSION the "#N" of the version string counts the links
    # made in that build directory (measured: two builds of one commit
    # differed only there).  fstests --record relies on this.
    env = {
        "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2000",
        "KBUILD_BUILD_USER": "forkkit",
        "KBUILD_BUILD_HOST": "forkkit",
        "KBUILD_BUILD_VERSION": "1",
        "CCACHE_BASEDIR": os.path.dirname(wpath()),
        "CCACHE_NOHASHDIR": "true",
        "CCACHE_SLOPPINESS": "time_macros,include_file_mtime,include_file_ctime",
    }
    return env


def make_args(src, bdir, jobs):
    args = ["make", "-s", "-C", src, "O=%s" % bdir, "ARCH=x86_64", "-j%d" % jobs]
    if shutil.which("ccache"):
        args.append("CC=ccache gcc")
    return args


def configure(src, bdir, flavour, commit, log, prog):
    opts = fragment_options(flavour)
    merged = "".join("%s=%s\n" % (s, v) for s, v, ip in opts
                     if not ip or kconfig_defines(src, s))
    kconfigs = "\n".join(line for line in git(["ls-tree", "-r", commit], cwd=src).splitlines()
                          if "/Kconfig" in line or "\tKconfig" in line)
    key = hashlib.sha256((merged + kconfigs).encode()).hexdigest()
    stamp = os.path.join(bdir, ".fork-config-key")
    if os.path.exists(os.path.join(bdir, ".config")) and os.path.exists(stamp) \
            and open(stamp).read() == key:
        return key
    prog.say("configuring %s (allnoconfig + %s)" % (bdir, " + ".join(FLAVOURS[flavour])))
    if os.path.exists(stamp):
        os.unlink(stamp)    # a failed configure must not leave a matching stamp behind
    frag = os.path.join(bdir, "fork.config")
    with open(frag, "w") as fh:
        fh.write(merged)
    run(make_args(src, bdir, 1) + ["KCONFIG_ALLCONFIG=%s" % frag, "allnoconfig"],
        env=make_env(), log=log)
    run(make_args(src, bdir, 1) + ["olddefconfig"], env=make_env(), log=log)
    assert_config(bdir, src, opts, flavour)
    with open(stamp, "w") as fh:
        fh.write(key)
    return key


# gcc names the source as kbuild passed it: relative to the build dir
# ("../../src/fs/ext2/inode.c" for O=work/build/<x>), absolute, or plain.
WARN_RE = re.compile(r"^(?:\.\./)*(?:(?:[^\s:]*?/)?src/)?([^\s:]+):(\d+):(?:\d+:)? "
                     r"(?:warning|error): (.*)$")


def touched_files(commit, src):
    parents = git(["rev-list", "--parents", "-n", "1", commit], cwd=src).split()[1:]
    if not parents:
        return []
    return git(["diff-tree", "--no-commit-id", "--name-only", "-r", parents[0], commit],
               cwd=src).split()


def patchcheck(src, bdir, commit, jobs, log, prog):
    """Recompile objects of touched files with W=1 (+sparse); return
    (warnings, what became of sparse)."""
    files = touched_files(commit, src)
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
    m = WARN_RE.match(line)
    return (m.group(1), m.group(3)) if m else line


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
        m = WARN_RE.match(line.strip())
        if m and m.group(1) in touched:
            warnings.append(line.strip())
    failed = None
    if proc.returncode != 0:
        failed = "recompiling %s failed: %s" % (" ".join(sorted(objs)), out.strip()[-500:])
    return warnings, failed, sparse_state(out, objs)


def _file_hash():
    with open(os.path.abspath(__file__), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:12]


# Hashed once, when the kit is loaded (like kernel.kit_key()): an image
# is indexed under the procedure that built it, even if this file is
# edited while the build runs.
_BUILD_KEY = _file_hash()


def build_key():
    """A hash of the build procedure itself (this file): part of every
    stored image's index key, so a changed procedure never reuses an image."""
    return _BUILD_KEY


def kernels_dir():
    return ensure_dir(wpath("kernels"))


def store_image(image):
    """Copy a freshly built bzImage into the content-addressed store
    (work/kernels/<sha256>.bzImage): the shared build directory is
    overwritten by the next build, a stored image never is.  Returns
    (path, sha256)."""
    sha = sha256_file(image)
    dest = os.path.join(kernels_dir(), "%s.bzImage" % sha)
    if not os.path.exists(dest) or sha256_file(dest) != sha:
        tmp = "%s.tmp-%d" % (dest, os.getpid())
        shutil.copyfile(image, tmp)
        os.replace(tmp, dest)
    return dest, sha


def image_config(image):
    """The .config stored beside a stored image (work/kernels/<sha256>.config)."""
    base = image[:-len(".bzImage")] if image.endswith(".bzImage") else image
    return base + ".config"


def store_config(bdir, image):
    """Keep the build directory's .config beside the stored image, once:
    the build dir is reconfigured by the next build, and a guest that asks
    which options its kernel has (fstests' _require_kernel_config) needs
    the config of exactly this image."""
    dest = image_config(image)
    if not os.path.exists(dest):
        tmp = "%s.tmp-%d" % (dest, os.getpid())
        shutil.copyfile(os.path.join(bdir, ".config"), tmp)
        os.replace(tmp, dest)
    return dest


def index_path(tree, flavour, config_key):
    return os.path.join(ensure_dir(os.path.join(kernels_dir(), "index")),
                        "%s-%s-%s-%s.json" % (tree, flavour, config_key[:16], build_key()))


def read_index(path):
    """The stored image of an index entry, if it is still there and intact."""
    try:
        with open(path) as fh:
            entry = json.load(fh)
        if sha256_file(entry["image"]) == entry["sha256"]:
            return entry
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def write_index(path, entry):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as fh:
        json.dump(entry, fh, indent=1)
    os.replace(tmp, path)


def build(rev=None, flavour="base", jobs=0, do_patchcheck=True, prog=None, force=False):
    """Build `rev`; return a BuildResult whose `image` is a stored copy
    named by its sha256 (`image_sha256`).

    Everything from the checkout to the stored copy happens under one lock,
    so the image, the tree id and the checkpatch verdict belong together.
    Whether the W=1/sparse patchcheck passed is recorded with the image: a
    build without it (bench, bisect) is never taken for a checked one.
    """
    prog = prog or Progress("build")
    if flavour not in FLAVOURS:
        raise ForkError("unknown config flavour %r: choose one of %s"
                        % (flavour, ", ".join(sorted(FLAVOURS))))
    check_deps()
    require_ktree()
    rev = rev or default_rev()
    commit = rev_parse(rev)
    tree = git(["rev-parse", commit + "^{tree}"])
    jobs = jobs or cpu_count()
    log = new_log("build-%s" % commit[:12])
    with Lock("build"):
        t0 = time.monotonic()
        src = checkout(commit, log)
        mk = git(["show", commit + ":Makefile"], cwd=src)
        ver = ".".join(re.search(r"^%s = (\d+)$" % k, mk, re.M).group(1)
                       for k in ("VERSION", "PATCHLEVEL"))
        bdir = ensure_dir(wpath("build", "%s-%s" % (ver, flavour)))
        prog.say("building %s (%s) flavour %s in %s (log: %s)"
                 % (rev, commit[:12], flavour, bdir, log))
        config_key = configure(src, bdir, flavour, commit, log, prog)
        # the kit's build code is part of what made the image (make's
        # environment: a stamp of an older kit rebuilds)
        built_key = tree + " " + config_key + " " + build_key()
        ipath = index_path(tree, flavour, config_key)
        entry = None if force else read_index(ipath)
        image = os.path.join(bdir, "arch", "x86", "boot", "bzImage")
        stamp = os.path.join(bdir, ".fork-built")
        warnings = []
        if entry:
            prog.say("already built (tree %s, image %s)" % (tree[:12], entry["sha256"][:12]))
        elif not force and os.path.exists(image) and os.path.exists(stamp) \
                and open(stamp).read() == built_key:
            prog.say("already built (tree %s)" % tree[:12])
        else:
            if os.path.exists(stamp):
                os.unlink(stamp)
            prog.say("make -j%d bzImage" % jobs)
            try:
                run(make_args(src, bdir, jobs) + ["bzImage"], env=make_env(), log=log)
            except ForkError:
                raise ForkError("build of %s (%s) failed:\n%s\nfull log: %s"
                                % (rev, commit[:12], error_lines(log), log))
            with open(stamp, "w") as fh:
                fh.write(built_key)
        if entry is None:
            stored, sha = store_image(image)
            entry = {"image": stored, "sha256": sha, "commit": commit, "tree": tree,
                     "flavour": flavour, "config_key": config_key, "build_key": build_key(),
                     "patchcheck": False, "log": log,
                     "ext2_symbols": defined_functions(bdir, "fs/ext2"),
                     "ext2_tail_calls": tail_calls(bdir, "fs/ext2")}
            write_index(ipath, entry)
        # configure() has just made bdir/.config for this tree and flavour:
        # the config the image was built with (the same key, the same toolchain)
        config = store_config(bdir, entry["image"])
        if do_patchcheck and not entry.get("patchcheck"):
            warnings, entry["sparse"] = patchcheck(src, bdir, commit, jobs, log, prog)
            if warnings:
                raise ForkError("warnings in files %s touches (W=1, sparse %s):\n%s\nfull log: %s"
                                % (commit[:12], entry["sparse"], "\n".join(warnings[:20]), log))
            entry["patchcheck"] = True
            write_index(ipath, entry)
        secs = time.monotonic() - t0
        prog.say("done in %.1fs: %s" % (secs, entry["image"]))
    return BuildResult(rev=rev, commit=commit, tree=tree, flavour=flavour, bdir=bdir,
                       image=entry["image"], image_sha256=entry["sha256"], config=config,
                       config_key=config_key, patchcheck=entry["patchcheck"], log=log,
                       ext2_symbols=entry.get("ext2_symbols", []),
                       ext2_tail_calls=entry.get("ext2_tail_calls"),
                       sparse=entry.get("sparse", "not recorded"),
                       seconds=secs, warnings=warnings, version=ver)


def objects(bdir, subdir):
    """The object files of `subdir` in the build directory (not built-in.o)."""
    top = os.path.join(bdir, subdir)
    return sorted(os.path.join(top, f) for f in os.listdir(top)
                  if f.endswith(".o") and f != "built-in.o") if os.path.isdir(top) else []


def defined_functions(bdir, subdir):
    """Sorted names of the functions the objects in `subdir` of the build
    define (static ones included, without .isra/.constprop suffixes): what
    a kernel report's stack is matched against to tell whether it is in
    that code."""
    objs = objects(bdir, subdir)
    if not objs:
        return []
    proc = run(["nm", "--defined-only"] + objs, check=False)
    names = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            names.add(parts[2].split(".", 1)[0])
    return sorted(names)


OBJDUMP_FILE_RE = re.compile(r"^(\S+\.o):\s+file format ")
OBJDUMP_FUNC_RE = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
OBJDUMP_INSN_RE = re.compile(r"^\s+([0-9a-f]+):\s+(\S+)")
OBJDUMP_TARGET_RE = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>\s*$")
OBJDUMP_RELOC_RE = re.compile(r"^\s+[0-9a-f]+: R_X86_64_(?:PLT32|PC32)\s+([^\s+-]+)"
                              r"(?:([+-])0x([0-9a-f]+))?")
# "0000000000000000 l     F .text.unlikely	0000000000000034 ext2_unlink.cold"
OBJDUMP_SYM_RE = re.compile(r"^([0-9a-f]+) .{7} (\S+)\s+([0-9a-f]+) (\S+)$")
# jumps that are a return or an indirect call, not a call of a named function
THUNK_RE = re.compile(r"^__x86_(return|indirect)_thunk")


def _function_symbols(objs):
    """{(object, section): [(start, end, name), ...]} of the objects'
    function symbols (objdump -t), or None if objdump failed."""
    proc = run(["objdump", "-t"] + objs, check=False)
    if proc.returncode != 0:
        return None
    out, obj = {}, None
    for line in proc.stdout.splitlines():
        m = OBJDUMP_FILE_RE.match(line)
        if m:
            obj = m.group(1)
            continue
        m = OBJDUMP_SYM_RE.match(line)
        if m and obj and " F " in line:
            start, size = int(m.group(1), 16), int(m.group(3), 16)
            out.setdefault((obj, m.group(2)), []).append((start, start + size, m.group(4)))
    return out


def tail_calls(bdir, subdir):
    """{function: [target, ...]}: the functions that the objects in
    `subdir` of the build jump to from each of their functions, a jump
    (conditional or not) to another function being a tail call; names
    without .isra/.cold suffixes, "?" for a jump into a section where no
    function symbol covers the target.  None when there are no objects or
    objdump failed (nothing is known).  A function that ends in such a
    jump has no frame of its own on a stack below it."""
    objs = objects(bdir, subdir)
    symbols = _function_symbols(objs) if objs else None
    if not objs or symbols is None:
        return None
    proc = run(["objdump", "-dr", "--no-show-raw-insn"] + objs, check=False)
    if proc.returncode != 0:
        return None
    edges, obj, func = {}, None, None
    jump = None     # the last instruction, if a jump: its target as shown

    def add(target):
        target = target.split(".", 1)[0] if target != "?" else target
        if target not in ("", func) and not THUNK_RE.match(target):
            edges.setdefault(func, set()).add(target)

    def in_section(section, offset):
        for start, end, name in symbols.get((obj, section), ()):
            if start <= offset < end:
                return name
        return "?"

    for line in proc.stdout.splitlines() + [""]:
        m = OBJDUMP_RELOC_RE.match(line)
        if m:
            if jump is not None and func:
                target, sign, addend = m.groups()
                if target.startswith("."):
                    # a section symbol: the function at addend + 4 (the
                    # displacement is the instruction's last 4 bytes)
                    off = (-1 if sign == "-" else 1) * int(addend or "0", 16) + 4
                    target = in_section(target, off)
                add(target)
            jump = None         # a relocated jump: what objdump showed is no target
            continue
        if jump and func:
            add(jump)           # a jump the assembler resolved: "jmp 4b0 <ext2_foo>"
        jump = None
        m = OBJDUMP_FILE_RE.match(line)
        if m:
            obj, func = m.group(1), None
            continue
        m = OBJDUMP_FUNC_RE.match(line)
        if m:
            func = m.group(2).split(".", 1)[0]
            continue
        m = OBJDUMP_INSN_RE.match(line)
        if m and m.group(2).startswith("j"):
            t = OBJDUMP_TARGET_RE.search(line)
            jump = t.group(1) if t else ""
    return {f: sorted(t) for f, t in sorted(edges.items())}


# checkpatch as a maintainer with a full tree runs it.  The imported
# snapshot has no upstream history, so cited commits cannot be looked up.
# Run from a directory without .git (GIT_DIR unset), checkpatch does not
# try: the GIT_COMMIT_ID check then compares each citation with itself, which
# enforces its form `commit <12+ hex> ("<title>")` (run inside a git tree
# that lacks the commit, it would skip that check silently).  Without a
# repository every citation also gets UNKNOWN_COMMIT_ID, which says nothing
# about the patch, so that one warning is ignored.  --root gives checkpatch
# the whole tree (spelling list, MAINTAINERS, const structs, ...).
CHECKPATCH_ARGS = ["--strict", "--color=never", "--ignore", "UNKNOWN_COMMIT_ID"]


def run_checkpatch_pl(root, patch):
    """checkpatch.pl of `root` on `patch` (text) as described above;
    returns the CompletedProcess."""
    script = os.path.join(root, "scripts", "checkpatch.pl")
    if not os.path.isfile(script):
        raise ForkError("%s has no scripts/checkpatch.pl" % root)
    nogit = tempfile.mkdtemp(prefix="checkpatch-", dir=ensure_dir(wpath("tmp")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        return subprocess.run(["perl", script] + CHECKPATCH_ARGS + ["--root=%s" % root, "-"],
                              input=patch, cwd=nogit, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        shutil.rmtree(nogit, ignore_errors=True)


def checkpatch(commit, src, log):
    """checkpatch.pl --strict on one commit, with `src` (a checkout of it)
    as the tree; return (cell, detail)."""
    parents = git(["rev-list", "--parents", "-n", "1", commit]).split()[1:]
    if not parents:
        return "n/a", "base snapshot"
    patch = git(["format-patch", "-1", "--stdout", commit])
    try:
        proc = run_checkpatch_pl(src, patch + "\n")
    except ForkError as exc:
        return "FAIL", str(exc)
    with open(log, "a") as fh:
        fh.write("$ checkpatch.pl %s %s\n%s%s\n" % (" ".join(CHECKPATCH_ARGS), commit,
                                                   proc.stdout, proc.stderr))
    summary = [l for l in proc.stdout.splitlines() if l.startswith("total:")]
    if proc.returncode != 0:
        problems = [l for l in proc.stdout.splitlines() if l.startswith(("ERROR:", "WARNING:",
                                                                          "CHECK:"))]
        return "FAIL", "; ".join(([summary[0]] if summary else []) + problems[:5]) \
            or proc.stdout.strip()[-300:]
    return "pass", summary[0] if summary else ""


def run_checkpatch(commit, log):
    """checkpatch() of `commit` in the build worktree, under the build lock."""
    with Lock("build"):
        return checkpatch(commit, checkout(commit, log), log)


def error_lines(log):
    lines = [l.rstrip() for l in open(log, errors="replace") if "error" in l.lower()]
    return "\n".join(lines[:15]) or tail(log, 20)
