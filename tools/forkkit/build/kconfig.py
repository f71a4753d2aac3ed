"""The config flavours: the fragments of ci/kconfig merged onto
allnoconfig, every option a fragment asks for asserted afterwards."""

import hashlib
import os
import re

from ..core.errors import ForkError
from ..core.paths import repo_root
from ..core.proc import run
from ..repo.git import git
from .make import make_args, make_env


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
    # cgroup v2 io.max (blk-throttle): the fixes series' dio-freed-indirect
    "throttle": ["base.config", "throttle.config"],
}
# Flavours whose kernels report races, bad accesses or leaks outside
# ext2 as well: reports there are judged by kernel.judge_reports().
SANITIZERS = ("kcsan", "kasan", "kasan-inline", "faults")
# Flavours with kmemleak: the guest init scans after the test, and a run
# whose scan did not happen (kmemleak disabled itself) fails.
KMEMLEAK_FLAVOURS = ("kasan", "kasan-inline", "faults")


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
