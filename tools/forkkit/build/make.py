"""make in the kit's build worktree (work/src): the build dependencies,
the worktree, make's command line and environment."""

import os
import shutil

from ..core.errors import ForkError
from ..core.paths import wpath
from ..repo import worktree


BUILD_DEPS = [("make", "make"), ("gcc", "gcc"), ("flex", "flex"), ("bison", "bison"),
              ("bc", "bc"), ("cpio", "cpio")]


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


def src_tree():
    return wpath("src")


def checkout(commit, log):
    """Check `commit` out, detached, in the private src worktree."""
    return worktree.ensure(src_tree(), commit, "build", log=log)


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
