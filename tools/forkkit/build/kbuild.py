"""Building one revision: the commit checked out in the build worktree
(make), configured with its flavour (kconfig), built, recompiled with W=1
(patchcheck), and the store of built images (work/kernels/, by sha256,
indexed by tree, flavour, config and the build's own code).  The verb's
help (verbs/build.py) describes it for the user; verify/kernel.py puts it
together with the boot and the verdict.

Every module of this package decides what an image is: their hash
(build_key()) is part of every image's index key.  What does not decide
it stays outside the package (the boot arguments in guest/qemu.py, the
fragments' hash of the check cache in verify/kernel.py, checkpatch in
verify/checkpatch.py).
"""

import json
import os
import re
import shutil
import time

from ..core.errors import ForkError
from ..core.locks import Lock
from ..core.paths import ensure_dir, new_log, wpath
from ..core.progress import Progress
from ..core.proc import cpu_count, files_hash, run, sha256_file, tail
from ..core.records import write_json
from ..repo.git import git, require_ktree, rev_parse
from ..repo.series import Series
from .kconfig import FLAVOURS, configure
from .make import check_deps, checkout, make_args, make_env
from .patchcheck import patchcheck


class BuildResult:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def default_rev():
    return Series().head_branch


def _build_hash(here=None):
    """A hash of every module of the build package (this directory)."""
    return files_hash(here or os.path.dirname(os.path.abspath(__file__)))


# Hashed once, when the kit is loaded (like kernel.kit_key()): an image
# is indexed under the procedure that built it, even if a module is
# edited while the build runs.
_BUILD_KEY = _build_hash()


def build_key():
    """A hash of the build procedure itself (every module of this package:
    make, kconfig, patchcheck, kbuild): part of every stored image's index
    key, so a changed procedure never reuses an image."""
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
    write_json(path, entry)


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


def error_lines(log):
    lines = [l.rstrip() for l in open(log, errors="replace") if "error" in l.lower()]
    return "\n".join(lines[:15]) or tail(log, 20)
