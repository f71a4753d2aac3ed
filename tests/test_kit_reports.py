"""reports: kernel reports split out of a console log, told apart by
whether they are in ext2's code, and judged against the base's reports
(the sanitizer flavours' rule)."""

import json

import pytest

from forkkit.build import kbuild, kconfig
from forkkit.guest import reports
from forkkit.verify import kernel
from forkkit.core.errors import ForkError

EXT2 = ["ext2_new_blocks", "ext2_try_to_allocate_with_rsv", "try_to_extend_reservation",
        "find_next_reservable_window", "ext2_fill_super", "ext2_statfs"]

# KCSAN in 7.3's spelling (kernel/kcsan/report.c), kmemleak in 6.1's
# ("[<address>] symbol" frames; 7.3's are below), cut short.
CONSOLE = """\
[    1.000000] Run /init as init process
FORK-GUEST-START 7.3.4-forkkit cpus=2
[   20.100000] ==================================================================
[   20.100001] BUG: KCSAN: data-race in ext2_try_to_allocate_with_rsv / try_to_extend_reservation
[   20.100002]
[   20.100003] write to 0xffff888004a3c0d8 of 8 bytes by task 95 on cpu 1:
[   20.100004]  try_to_extend_reservation+0x1c5/0x210
[   20.100005]  ext2_try_to_allocate_with_rsv+0x3a0/0x6f0
[   20.100006]  ext2_new_blocks+0x4b2/0xa30
[   20.100007]
[   20.100008] read to 0xffff888004a3c0d8 of 8 bytes by task 96 on cpu 0:
[   20.100009]  ext2_try_to_allocate_with_rsv+0x2f1/0x6f0
[   20.100010]  ext2_new_blocks+0x4b2/0xa30
[   20.100011]
[   20.100012] Reported by Kernel Concurrency Sanitizer on:
[   20.100013] CPU: 0 UID: 0 PID: 96 Comm: stress Not tainted 7.3.4-forkkit #1
[   20.100014] ==================================================================
[   31.000000] ==================================================================
[   31.000001] BUG: KCSAN: data-race in tick_nohz_idle_stop_tick / tick_sched_do_timer
[   31.000002]
[   31.000003] write to 0xffffffff82a4c3e0 of 4 bytes by interrupt on cpu 1:
[   31.000004]  tick_sched_do_timer+0x4c/0x120
[   31.000005]  tick_nohz_handler+0x3a/0x190
[   31.000006]
[   31.000007] read to 0xffffffff82a4c3e0 of 4 bytes by task 0 on cpu 0:
[   31.000008]  tick_nohz_idle_stop_tick+0x80/0x3c0
[   31.000009]  do_idle+0x10a/0x180
[   31.000010]
[   31.000011] value changed: 0x00000001 -> 0x00000000
[   31.000012] ==================================================================
[   40.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
FORK-KMEMLEAK-BEGIN
unreferenced object 0xffff888006a40000 (size 65536):
  comm "failmount", pid 88, jiffies 4294897296
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 0):
    [<ffffffff812c3a4e>] __kmalloc_large_node_noprof+0x10e/0x140
    [<ffffffff812c8f21>] __kvmalloc_node_noprof+0x61/0x120
    [<ffffffff81484c21>] ext2_fill_super+0x7a1/0x1300
    [<ffffffff813421bc>] get_tree_bdev_flags+0x15c/0x220
unreferenced object 0xffff888003b1c200 (size 192):
  comm "swapper/0", pid 1, jiffies 4294892000
  backtrace (crc 5e1c):
    [<ffffffff812c1a0e>] kmalloc_trace_noprof+0x21e/0x300
    [<ffffffff815d11a2>] acpi_ds_init_one_object+0x82/0x120
FORK-KMEMLEAK-END
FORK-EXIT-STATUS: 0
"""


@pytest.fixture
def console(tmp_path):
    path = tmp_path / "console.log"
    path.write_text(CONSOLE)
    return str(path)


def test_parse_splits_reports(console):
    found = reports.parse(console)
    assert [r.kind for r in found] == ["console", "console", "kmemleak", "kmemleak"]
    kcsan = found[0]
    assert kcsan.title == ("BUG: KCSAN: data-race in ext2_try_to_allocate_with_rsv / "
                           "try_to_extend_reservation")
    assert "try_to_extend_reservation" in kcsan.symbols
    # the whole block, from the ===== line to the closing one, is one report
    assert kcsan.lines[0].endswith("=" * 66) and kcsan.lines[-1].endswith("=" * 66)
    assert "Reported by Kernel Concurrency Sanitizer" in kcsan.text()
    leak = found[2]
    assert leak.title == ("kmemleak: unreferenced object (size 65536) from ext2_fill_super "
                          "< get_tree_bdev_flags")
    # the "N new suspected memory leaks" line is told by the objects
    assert not any("new suspected memory leaks" in r.title for r in found)


def test_ext2_reports_always_fail(console):
    found = reports.parse(console)
    failing, known = reports.judge(found, EXT2, "base")
    assert [r.title for r in failing] == [found[0].title, found[2].title]
    assert [r.title for r, _ in known] == [found[1].title, found[3].title]


def test_reports_elsewhere_need_the_base(console):
    found = reports.parse(console)
    failing, known = reports.judge(found, EXT2, {})
    assert len(failing) == 4 and not known
    base = {found[1].signature: "the base shows it too"}
    failing, known = reports.judge(found, EXT2, base)
    assert [r.title for r, _ in known] == [found[1].title]
    assert known[0][1] == "the base shows it too"


def test_signature_is_the_same_in_another_boot(console, tmp_path):
    other = tmp_path / "other.log"
    other.write_text(CONSOLE.replace("[   31.0000", "[  131.4567")
                     .replace("0xffffffff82a4c3e0", "0xffffffff82b00000")
                     .replace("0x4c/0x120", "0x50/0x120")
                     .replace("pid 1,", "pid 7,").replace("task 0 on cpu 0", "task 3 on cpu 1"))
    a = reports.parse(console)
    b = reports.parse(str(other))
    assert [r.signature for r in a] == [r.signature for r in b]
    assert a[0].signature != a[1].signature


def test_without_ext2_symbols_nothing_is_judged(tmp_path):
    """A build without the list of ext2's functions would let every report
    pass as 'elsewhere' on the base: refused."""
    with pytest.raises(ForkError, match="functions fs/ext2 defines"):
        kernel.run_test(str(tmp_path / "bzImage"), "smoke", 10, None, str(tmp_path / "log"),
                        "t", known="base", ext2_symbols=[])


def test_sanitizer_flavours_exist_and_override():
    for name in ("kcsan", "kasan", "kasan-inline", "faults"):
        assert name in kconfig.FLAVOURS and name in kconfig.SANITIZERS
    opts = {s: v for s, v, _ in kconfig.fragment_options("kasan-inline")}
    assert opts["CONFIG_KASAN_INLINE"] == "y" and opts["CONFIG_KASAN_OUTLINE"] == "n"
    opts = {s: v for s, v, _ in kconfig.fragment_options("kcsan")}
    assert opts["CONFIG_KCSAN"] == "y" and opts["CONFIG_KCSAN_REPORT_VALUE_CHANGE_ONLY"] == "n"
    assert "CONFIG_KASAN" not in opts       # KCSAN and KASAN exclude each other


def test_defined_functions(tmp_path):
    """The ext2 list comes from nm of the build's objects: static
    functions too, without the compiler's .isra/.constprop suffixes."""
    import shutil
    import subprocess
    if not shutil.which("gcc") or not shutil.which("nm"):
        pytest.skip("gcc or nm not available")
    d = tmp_path / "fs" / "ext2"
    d.mkdir(parents=True)
    (d / "balloc.c").write_text("static int helper(int x) { return x * 3; }\n"
                                "int ext2_thing(int x) { return helper(x) + 1; }\n"
                                "int ext2_data = 1;\n")
    subprocess.run(["gcc", "-O0", "-c", "-o", str(d / "balloc.o"), str(d / "balloc.c")],
                   check=True)
    assert kbuild.defined_functions(str(tmp_path), "fs/ext2") == ["ext2_thing", "helper"]
    assert kbuild.defined_functions(str(tmp_path), "fs/ext4") == []


def test_base_reports_from_this_run_or_the_cache(kit, monkeypatch):
    from forkkit.verify import check as cmd_check
    rows = [{"commit": "b" * 40, "image_sha256": "a" * 64,
             "details": {"boot": "/logs/base.console"},
             "reports": [{"signature": "S1", "verdict": "known", "title": "t1"},
                         {"signature": "S2", "verdict": "FAIL", "title": "t2"}]}]
    monkeypatch.setattr(cmd_check, "git", lambda args: "t" * 40)
    got = cmd_check.base_reports("b" * 40, rows, "kcsan", "stress", print)
    assert list(got) == ["S1"] and "/logs/base.console" in got["S1"]
    notes = []
    monkeypatch.setattr(kernel, "cached", lambda *key: None)
    assert cmd_check.base_reports("c" * 40, [], "kcsan", "stress", notes.append) == {}
    assert "has no kcsan/stress result" in notes[0]
    monkeypatch.setattr(kernel, "cached", lambda *key: json.loads(
        json.dumps(rows[0])))
    assert list(cmd_check.base_reports("c" * 40, [], "kcsan", "stress", print)) == ["S1"]


def qemu_line(image_sha256, pid=None):
    """The first line of a console as qemu.run_guest writes it."""
    import os
    return ("# /usr/bin/qemu-system-x86_64 -accel tcg -kernel /w/kernels/%s.bzImage "
            "-initrd /w/tmp/initrd-%d-1.cpio -append 'console=ttyS0'"
            % (image_sha256, os.getpid() if pid is None else pid))


def kcsan_console(path, *races, image="A" * 64, pid=None):
    """A console log of a boot of `image` by process `pid` (default: this
    one) with one KCSAN report per race: (first access's function, second's
    or None for a race at unknown origin)."""
    out = [qemu_line(image, pid), "[    1.000000] Run /init as init process",
           "FORK-GUEST-START 6.12 cpus=2"]
    for n, (a, b) in enumerate(races):
        t = "[   %d.%06d]" % (20 + n, 0)
        out += [t + " " + "=" * 66,
                t + " BUG: KCSAN: data-race in %s" % (a if b is None else "%s / %s" % (a, b))]
        if b is None:
            out += [t + " race at unknown origin, with read to 0xffff88800265f242 of 2 bytes "
                    "by interrupt on cpu 0:", t + "  %s+0xc3/0xf0" % a,
                    t + "  vp_interrupt+0x74/0x120"]
        else:
            caller = "ext2_new_blocks" if a.startswith("ext2") else "do_idle"
            out += [t + " write to 0xffff888004a3c0d8 of 8 bytes by task 95 on cpu 1:",
                    t + "  %s+0x1c5/0x210" % b, t + "  %s+0x4b2/0xa30" % caller, t,
                    t + " read to 0xffff888004a3c0d8 of 8 bytes by task 96 on cpu 0:",
                    t + "  %s+0x2f1/0x6f0" % a, t + "  %s+0x4b2/0xa30" % caller]
        out += [t + " value changed: 0x5284 -> 0x5285", t + " " + "=" * 66]
    out.append("FORK-EXIT-STATUS: 0")
    path.write_text("\n".join(out) + "\n")
    return str(path)


VIRTIO = "BUG: KCSAN: data-race in vring_interrupt"
EXT2_RACE = ("ext2: KCSAN: read 8 bytes in ext2_try_to_allocate_with_rsv / "
             "write 8 bytes in try_to_extend_reservation")


@pytest.fixture
def evidence(kit, monkeypatch, tmp_path):
    """cmd_check with a base tree "t"*40 whose builds are indexed by
    config key: "cA" built image "A"*64, "cB" image "B"*64, each with the
    ext2 function list EXT2; and a helper that makes a base row."""
    from forkkit.verify import check as cmd_check
    monkeypatch.setattr(cmd_check, "git", lambda args: "t" * 40)
    monkeypatch.setattr(kernel, "cached", lambda *key: None)
    monkeypatch.setattr(kbuild, "read_index", lambda path: {
        "sha256": ("A" if "-cA" in path else "B") * 64, "ext2_symbols": EXT2})

    def base_row(n, image, *races, reports=(), pid=None, flavour="kcsan", test="stress"):
        console = kcsan_console(tmp_path / ("base-%d.console" % n), *races, image=image * 64,
                                pid=pid)
        return {"commit": "b" * 40, "tree": "t" * 40, "flavour": flavour, "test": test,
                "image_sha256": image * 64, "config_key": "c" + image, "kit": "k",
                "details": {"boot": console}, "reports": list(reports)}
    return cmd_check, base_row


def test_base_evidence_adds_up_over_runs(evidence, monkeypatch):
    """A report the base image shows only in some boots (a virtio race) is
    known once any stored console of that image showed it, read again by
    the kit that judges (not the one that stored it); a console of another
    image of the base, or of other test inputs, is not evidence."""
    from forkkit.guest import guesttests
    cmd_check, base_row = evidence
    key = guesttests.test_key("stress")
    cmd_check.add_evidence(base_row(1, "A", ("vring_interrupt", None),
                                    ("ext2_try_to_allocate_with_rsv",
                                     "try_to_extend_reservation")), key)
    cmd_check.add_evidence(base_row(2, "A", ("tick_nohz_idle_stop_tick",
                                             "tick_sched_do_timer"),
                                    ("vring_interrupt", None)), key)
    cmd_check.add_evidence(base_row(3, "B", ("xas_clear_mark", "xas_find_marked")), key)
    cmd_check.add_evidence(base_row(4, "A", ("rcu_all_qs", "rcu_qs")), "0ther-inputs")
    this = base_row(5, "A")
    got = cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print)
    assert sorted(got) == sorted([VIRTIO, EXT2_RACE, "BUG: KCSAN: data-race in "
                                  "tick_nohz_idle_stop_tick / tick_sched_do_timer"])
    # the first console that showed a report is its evidence
    first = cmd_check.stored_evidence(cmd_check.evidence_dir("A" * 64, "kcsan", "stress", key),
                                      "A" * 64)[0][0]
    assert got[VIRTIO] == "the base bbbbbbbbbbbb shows it too: %s" % first
    # another kit reads the same consoles and finds the same reports
    monkeypatch.setattr(kernel, "kit_key", lambda: "otherkit")
    assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == got
    # the base row names the image: with the other image, only its own console counts
    other = base_row(6, "B")
    assert list(cmd_check.base_reports("b" * 40, [other], "kcsan", "stress", print)) == \
        ["BUG: KCSAN: data-race in xas_clear_mark / xas_find_marked"]
    # without a row of the base (this run or the cache) the image is unknown
    notes = []
    assert cmd_check.base_reports("b" * 40, [], "kcsan", "stress", notes.append) == {}
    assert "has no kcsan/stress result" in notes[0]


def test_base_evidence_needs_the_image_and_its_ext2_list(evidence, monkeypatch):
    """A console is kept only when this process booted exactly that image
    (its QEMU line) and with the build's list of ext2 functions for that
    image (else ext2's races could not be told from others when it is read
    again); a stored console that is gone or was edited, or whose record
    names another image or is not a record, adds nothing."""
    import os
    from forkkit.guest import guesttests
    cmd_check, base_row = evidence
    key = guesttests.test_key("stress")
    row = base_row(1, "A", ("vring_interrupt", None))
    this = base_row(2, "A")
    # another process's boot (a log path shared by two checks), another image
    assert cmd_check.add_evidence(base_row(3, "A", ("vring_interrupt", None), pid=1), key) \
        is None
    other = base_row(4, "B", ("vring_interrupt", None))
    assert cmd_check.add_evidence(dict(other, image_sha256="A" * 64, config_key="cA"),
                                  key) is None
    for entry in ({"sha256": "B" * 64, "ext2_symbols": EXT2}, None,
                  {"sha256": "A" * 64, "ext2_symbols": []}):
        monkeypatch.setattr(kbuild, "read_index", lambda path, e=entry: e)
        assert cmd_check.add_evidence(row, key) is None
    assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == {}
    monkeypatch.setattr(kbuild, "read_index", lambda path: {"sha256": "A" * 64,
                                                            "ext2_symbols": EXT2})
    stored = cmd_check.add_evidence(row, key)
    assert stored and cmd_check.add_evidence(row, key) == stored     # once
    assert list(cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print)) == [VIRTIO]
    with open(stored + ".json") as fh:
        meta = json.load(fh)
    assert meta["tools"] is None or isinstance(meta["tools"], dict)
    assert (meta["flavour"], meta["test"], meta["test_key"]) == ("kcsan", "stress", key)

    def rewrite(m):
        with open(stored + ".json", "w") as fh:
            json.dump(m, fh)
    for bad in (dict(meta, image_sha256="B" * 64), ["not", "a", "record"],
                {k: v for k, v in meta.items() if k != "ext2_symbols"}):
        rewrite(bad)
        assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == {}
    rewrite(meta)
    with open(stored, "a") as fh:
        fh.write("[   99.000000] edited\n")
    assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == {}
    os.unlink(stored)
    assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == {}


def test_base_evidence_is_per_flavour_and_test(evidence):
    """A console of the base image under another test or flavour (smoke,
    kasan's boot arguments) is not evidence for kcsan/stress; a report the
    guest test allows is not evidence either."""
    from forkkit.guest import guesttests
    cmd_check, base_row = evidence
    race = ("tick_nohz_idle_stop_tick", "tick_sched_do_timer")
    cmd_check.add_evidence(base_row(1, "A", race, test="smoke"), guesttests.test_key("smoke"))
    cmd_check.add_evidence(base_row(2, "A", race, flavour="kasan"),
                           guesttests.test_key("stress"))
    this = base_row(3, "A")
    assert cmd_check.base_reports("b" * 40, [this], "kcsan", "stress", print) == {}
    assert list(cmd_check.base_reports("b" * 40, [dict(this, test="smoke")], "kcsan", "smoke",
                                       print)) == ["BUG: KCSAN: data-race in "
                                                   "tick_nohz_idle_stop_tick / "
                                                   "tick_sched_do_timer"]


def test_base_evidence_wiring_in_run_check(evidence, monkeypatch):
    """run_check keeps the console of the base's row only (not of a series
    commit, not of a cached hit), under the test inputs taken before the
    run, and none when they changed during it."""
    from forkkit.guest import guesttests
    from forkkit.repo import funcdiff
    from forkkit.verify import check as cc
    _, base_row = evidence
    base, c1 = "b" * 40, "c" * 40
    added = []
    keys = iter(["k-before", "k-before", "k-before", "k-before"])
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")      # check_commit, cell after cell
    monkeypatch.setattr(guesttests, "test_key", lambda test: next(keys))
    monkeypatch.setattr(cc, "commits_of", lambda rng, series: [base, c1])
    monkeypatch.setattr(cc, "rev_parse", lambda rev: base)
    monkeypatch.setattr(cc, "require_ktree", lambda: None)
    monkeypatch.setattr(cc, "git_ok", lambda args: True)
    monkeypatch.setattr(cc, "base_reports", lambda *a: {})
    monkeypatch.setattr(cc, "qemu_binary", lambda: None)
    monkeypatch.setattr(cc, "which", lambda *a: None)
    monkeypatch.setattr(cc, "add_evidence", lambda row, key: added.append((row["commit"], key)))
    monkeypatch.setattr(funcdiff, "changed_functions", lambda b, c: set())
    monkeypatch.setattr(kernel, "cached_row", lambda *a: None)
    monkeypatch.setattr(kernel, "check_commit", lambda commit, *a, **k: dict(
        base_row(1, "A"), commit=commit, cells=dict.fromkeys(kernel.CELLS, "pass"),
        seconds=0, subject="s"))
    series = type("S", (), {"distro_branch": "distro/x", "rel": "p"})()
    cc.run_check(flavour="kcsan", test="stress", out=lambda *a: None, series=series)
    assert added == [(base, "k-before")]
    # the inputs changed during the base's run: nothing kept
    added.clear()
    keys = iter(["k-before", "k-after"])
    cc.run_check(flavour="kcsan", test="stress", out=lambda *a: None, series=series)
    assert added == []
    # a cached hit of the base runs nothing and keeps nothing
    added.clear()
    keys = iter(["k"] * 4)
    monkeypatch.setattr(kernel, "cached_row", lambda commit, *a: dict(
        base_row(2, "A"), commit=commit, cells=dict.fromkeys(kernel.CELLS, "pass"),
        seconds=0, subject="s", cached=True))
    cc.run_check(flavour="kcsan", test="stress", out=lambda *a: None, series=series)
    assert added == []


def test_markdown_names_what_produced_each_row():
    from forkkit.verify import check as cmd_check

    class S:
        rel = "patches"
    row = {"commit": "a" * 40, "subject": "ext2: x | y", "seconds": 12.3, "kit": "k1",
           "image_sha256": "f" * 64, "tools": {"qemu": "QEMU 7.2"},
           "cells": {c: "pass" for c in kernel.CELLS},
           "details": {"boot": "/l/console", "sparse": "not run: this kernel refuses sparse 0.6.4"},
           "reports": [{"title": "BUG: KCSAN: data-race in a / b", "verdict": "known",
                        "evidence": "the base shows it too: /l/base"}]}
    bad = dict(row, commit="b" * 40, cells=dict(row["cells"], test="FAIL"),
               details={"test": "ext2 report (console log: /l/c2):\nBUG: KCSAN: ..."},
               reports=[])
    md = cmd_check.markdown([row, bad], S(), "kcsan", "stress")
    assert md.startswith("`tools/fork check --series patches --config kcsan --test stress`")
    lines = md.splitlines()
    import re
    cols = [len(re.findall(r"(?<!\\)\|", line)) for line in lines[2:5]]
    assert cols[0] == cols[1] == cols[2], (cols, lines[2:5])
    assert "| aaaaaaaaaaaa | ext2: x \\| y | pass |" in md
    assert "ffffffffffffffff | k1 |" in md and "qemu: QEMU 7.2" in md
    assert "- aaaaaaaaaaaa: BUG: KCSAN: data-race in a / b (the base shows it too: /l/base)" in md
    assert "- bbbbbbbbbbbb test: ext2 report (console log: /l/c2):" in md
    assert "Sparse (with the W=1 recompile of the touched files): not run: this kernel " \
           "refuses sparse 0.6.4 (aaaaaaaaaaaa)." in md


# Review findings: a report must not swallow the next one, kmemleak's 7.3
# spellings, kernel lines printed inside the leak list, ext2's own messages.
MIXED = """\
FORK-GUEST-START 7.3.4-forkkit cpus=2
[   10.000000] EXT2-fs (vda): error: ext2_free_blocks: Freeing blocks not in datazone
[   10.000100] ------------[ cut here ]------------
[   10.000200] WARNING: CPU: 1 PID: 90 at fs/ext2/balloc.c:480 ext2_new_blocks+0x4b2/0xa30
[   10.000300] Call Trace:
[   10.000400]  <TASK>
[   10.000500]  ext2_new_blocks+0x4b2/0xa30
[   10.000600]  ext2_get_blocks+0x2f1/0x6f0
[   10.000700] ---[ end trace 0000000000000000 ]---
[   20.000000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
FORK-KMEMLEAK-BEGIN
unreferenced object (percpu) 0x0000607fd3a01234 (size 8):
  comm "mount", pid 85, jiffies 4294897296
  backtrace (crc 1a2b3c4d):
    pcpu_alloc_noprof+0x5d3/0x9a0
    __percpu_counter_init_many+0x3a/0x140
    ext2_fill_super+0x8c1/0x1300
[   21.000000] ------------[ cut here ]------------
[   21.000001] WARNING: CPU: 0 PID: 1 at mm/slub.c:1234 free_to_partial_list+0x10/0x20
[   21.000002] ---[ end trace 0000000000000000 ]---
unreferenced object 0xffff888003b1c200 (size 192):
  comm "swapper/0", pid 1, jiffies 4294892000
  backtrace (crc 5e1c):
    __kmalloc_cache_noprof+0x21e/0x300
    acpi_ds_init_one_object+0x82/0x120
FORK-KMEMLEAK-END
FORK-EXIT-STATUS: 0
"""


def test_review_findings_parse(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_text(MIXED)
    found = reports.parse(str(path))
    titles = [r.title for r in found]
    assert titles[0].startswith("EXT2-fs (vda): error: ext2_free_blocks")
    assert len(found[0].lines) == 1           # it ends where the WARNING block starts
    assert titles[1].startswith("WARNING: CPU: 1 PID: 90 at fs/ext2/balloc.c"), titles
    assert found[1].lines[0].endswith("[ cut here ]------------")
    # the kernel's WARNING printed inside the leak list is a console report
    assert any(t.startswith("WARNING: CPU: 0 PID: 1 at mm/slub.c") for t in titles), titles
    leaks = [r for r in found if r.kind == "kmemleak"]
    assert [r.title for r in leaks] == [
        "kmemleak: unreferenced object (size 8) from __percpu_counter_init_many < "
        "ext2_fill_super",
        "kmemleak: unreferenced object (size 192) from acpi_ds_init_one_object"]
    assert not any(r.lines[-1].startswith("[") for r in leaks)    # no console line in them
    assert reports.kmemleak_listed(str(path))
    # ext2's own messages and fs/ext2 locations count as ext2 without any
    # symbol list; the percpu leak by its ext2_fill_super frame
    failing, known = reports.judge(found, [], "base")
    assert [r.title for r in failing] == titles[:2]
    failing, known = reports.judge(found, EXT2, "base")
    assert {r.title for r in failing} == {titles[0], titles[1], leaks[0].title}
    assert len(known) == 2


def test_kmemleak_not_listed(tmp_path):
    path = tmp_path / "c.log"
    path.write_text("FORK-GUEST-START x\nFORK-KMEMLEAK-ERROR: the scan failed\n"
                    "FORK-EXIT-STATUS: 0\n")
    assert not reports.kmemleak_listed(str(path))


def test_leak_of_unknown_origin_is_never_known(tmp_path):
    path = tmp_path / "c.log"
    path.write_text("FORK-KMEMLEAK-BEGIN\nunreferenced object 0xffff888003b1c200 (size 64):\n"
                    "  comm \"x\", pid 1, jiffies 1\n  backtrace (crc 0):\nFORK-KMEMLEAK-END\n")
    found = reports.parse(str(path))
    assert found[0].title.endswith(" from ?")
    failing, known = reports.judge(found, [], {found[0].signature: "seen"})
    assert failing and not known


def test_sanitizer_kernels_must_show_they_run():
    """A detector built but switched off passes everything: each sanitizer
    flavour names the console line that proves it ran, in the spelling of
    6.1 and 7.3 (kernel/kcsan/selftest.c, kasan init)."""
    import re
    assert re.search(kernel.ACTIVE["kcsan"], "[    1.2] kcsan: selftest: 3/3 tests passed")
    assert not re.search(kernel.ACTIVE["kcsan"], "[    1.2] kcsan: selftest: 2/3 tests passed")
    assert re.search(kernel.ACTIVE["kasan"], "[0.0] kasan: KernelAddressSanitizer initialized")
    assert re.search(kernel.ACTIVE["kasan"],
                     "[0.0] kasan: KernelAddressSanitizer initialized (generic)")
    opts = {s: v for s, v, _ in kconfig.fragment_options("kcsan")}
    assert opts["CONFIG_KCSAN_EARLY_ENABLE"] == "y" and opts["CONFIG_KCSAN_SELFTEST"] == "y"


# Two reports from a 6.12 kcsan/stress run (cut short): a virtio race that
# happened while ext2 code was on the stack far below, and a race of ext2
# itself reached through a library function.
VIRTIO_RACES = """\
[   11.164025] ==================================================================
[   11.164606] BUG: KCSAN: data-race in virtqueue_kick_prepare+0x105/0x190
[   11.165024] 
[   11.165184] race at unknown origin, with read to 0xffff88800265ba44 of 2 bytes by task 48 on cpu 0:
[   11.165700]  virtqueue_kick_prepare+0x105/0x190
[   11.166058]  virtblk_add_req_batch+0xee/0x160
[   11.166281]  virtio_queue_rqs+0x205/0x260
[   11.166507]  __blk_mq_flush_plug_list+0x4d/0x60
[   11.167682]  blk_finish_plug+0x36/0x50
[   11.167867]  mpage_writepages+0xb8/0xd0
[   11.168059]  ext2_writepages+0xc/0x10
[   11.168245]  do_writepages+0xa7/0x410
[   11.168903]  ext2_add_link+0x497/0x690
[   11.169088]  ext2_create+0x44/0x90
[   11.170749] 
[   11.170852] value changed: 0x1b94 -> 0x1b96
[   11.171191] 
[   11.171342] Reported by Kernel Concurrency Sanitizer on:
[   11.171870] CPU: 0 UID: 0 PID: 48 Comm: stress Not tainted 6.12.118-forkkit+ #4 
[   11.172873] ==================================================================
[   16.327103] ==================================================================
[   16.327807] BUG: KCSAN: data-race in vring_interrupt+0xc3/0xf0
[   16.328121] 
[   16.328226] race at unknown origin, with read to 0xffff88800265d242 of 2 bytes by interrupt on cpu 0:
[   16.328613]  vring_interrupt+0xc3/0xf0
[   16.328821]  vp_interrupt+0x74/0x120
[   16.329013]  __handle_irq_event_percpu+0x61/0x120
[   16.329232]  handle_irq_event+0x76/0xe0
[   16.329418]  handle_fasteoi_irq+0x106/0x410
[   16.330239]  asm_common_interrupt+0x22/0x40
[   16.330240]  ext2_new_blocks+0x0/0x8b0
[   16.330423]  ext2_get_blocks+0xa32/0x1360
[   16.330424] 
[   16.330425] value changed: 0x0102 -> 0x0104
[   16.330426] 
[   16.330427] Reported by Kernel Concurrency Sanitizer on:
[   16.330428] ==================================================================
[   20.000000] ==================================================================
[   20.000001] BUG: KCSAN: data-race in __percpu_counter_sum / percpu_counter_add_batch
[   20.000002] 
[   20.000003] write to 0xffff888004a3c0d8 of 8 bytes by task 95 on cpu 1:
[   20.000004]  percpu_counter_add_batch+0x1c5/0x210
[   20.000005]  group_adjust_blocks+0x3a0/0x6f0
[   20.000006]  ext2_new_blocks+0x4b2/0xa30
[   20.000007] 
[   20.000008] read (marked) to 0xffff888004a3c0d8 of 8 bytes by task 96 on cpu 0:
[   20.000009]  __percpu_counter_sum+0x2f1/0x6f0
[   20.000010]  ext2_statfs+0x4b2/0xa30
[   20.000011] 
[   20.000012] Reported by Kernel Concurrency Sanitizer on:
[   20.000013] ==================================================================
"""


def test_kcsan_race_is_attributed_by_its_accesses(tmp_path):
    """A KCSAN race belongs to the code that made the racing accesses (their
    top frames), not to every function that happens to be on the stack: two
    virtio races below ext2_writepages()/an interrupted ext2_new_blocks()
    are not ext2's (so the base's evidence decides), a race in
    percpu_counter_add_batch() called from ext2 is."""
    path = tmp_path / "console.log"
    path.write_text(VIRTIO_RACES)
    found = reports.parse(str(path))
    assert len(found) == 3
    ext2 = set(EXT2 + ["ext2_writepages", "ext2_add_link", "ext2_create", "ext2_get_blocks",
                       "group_adjust_blocks"])
    assert [r.in_code(ext2) for r in found] == [False, False, True]
    assert "virtblk_add_req_batch" in found[0].symbols
    assert "ext2_writepages" not in found[0].symbols
    # the base shows the two virtio races (the first one also reached from
    # ext2_writepages(), which its signature names)
    base = reports.parse(str(path))[:2]
    _, base_known = reports.judge(base, ext2, "base")
    assert base_known[0][0].signature.endswith("[via ext2_writepages]")
    assert "via" not in base_known[1][0].signature          # interrupt: cut at its entry
    failing, known = reports.judge(found, ext2, {r.signature: "base log" for r, _ in base_known})
    assert [r.title for r in failing] == [found[2].title]
    assert len(known) == 2
    # a report whose access stacks cannot be found keeps every frame
    odd = reports.Report("BUG: KCSAN: data-race in a / b",
                         ["BUG: KCSAN: data-race in a / b", " ext2_statfs+0x1/0x2"], "console")
    assert odd.in_code(ext2)


def kcsan_report(stack_a, stack_b, title="BUG: KCSAN: data-race in a / b", between=()):
    lines = ["[    1.000000] " + "=" * 66, "[    1.000001] " + title, "[    1.000002] ",
             "[    1.000003] write to 0xffff888004a3c0d8 of 8 bytes by task 95 on cpu 1:"]
    lines += ["[    1.000004]  %s+0x1/0x2" % f for f in stack_a]
    lines += list(between)
    lines += ["[    1.000005] ",
              "[    1.000006] read to 0xffff888004a3c0d8 of 8 bytes by task 96 on cpu 0:"]
    lines += ["[    1.000007]  %s+0x1/0x2" % f for f in stack_b]
    lines += ["[    1.000008] ", "[    1.000009] " + "=" * 66]
    return lines


def test_kcsan_depth_boundary_and_blank_lines(tmp_path):
    """ext2 as the 4th frame of an access is the race's code, as the 5th it
    is context; a blank console line from another CPU inside a stack does
    not end it; an interrupt stack ends at its entry frame."""
    ext2 = {"ext2_new_blocks", "ext2_writepages", "ext2_setsize"}
    at3 = reports.Report(*(lambda l: (l[1], l, "console"))(kcsan_report(
        ["f0", "f1", "f2", "ext2_new_blocks"], ["g0"])))
    at4 = reports.Report(*(lambda l: (l[1], l, "console"))(kcsan_report(
        ["f0", "f1", "f2", "f3", "ext2_new_blocks"], ["g0"])))
    assert at3.in_code(ext2) and not at4.in_code(ext2)
    blank = reports.Report(*(lambda l: (l[1], l, "console"))(kcsan_report(
        ["percpu_counter_add_batch", "", "ext2_new_blocks"], ["g0"])))
    assert blank.in_code(ext2)
    irq = reports.Report(*(lambda l: (l[1], l, "console"))(kcsan_report(
        ["vring_interrupt", "vp_interrupt", "asm_common_interrupt", "x", "y", "ext2_new_blocks"],
        ["g0"])))
    assert not irq.in_code(ext2) and irq.context(ext2) == ""


def test_kcsan_race_reached_from_ext2_is_not_the_base_virtio_race(tmp_path):
    """Two generic functions racing because ext2 called them wrongly (deeper
    than the 4 frames) do not match a base report of the same two
    functions reached from other code: the signature names the ext2
    function each access came from."""
    ext2 = {"ext2_setsize", "ext2_writepages"}
    def mk(a, b):
        lines = kcsan_report(a, b, title="BUG: KCSAN: data-race in block_invalidate_folio / "
                                         "__block_write_full_folio")
        return reports.Report(lines[1], lines, "console")
    via_ext2 = mk(["block_invalidate_folio", "truncate_inode_pages_range", "truncate_pagecache",
                   "truncate_setsize", "ext2_setsize"],
                  ["__block_write_full_folio", "write_cache_pages", "mpage_writepages",
                   "do_writepages", "ext2_writepages"])
    other = mk(["block_invalidate_folio", "truncate_inode_pages_range", "truncate_pagecache",
                "truncate_setsize", "blkdev_setsize"],
               ["__block_write_full_folio", "write_cache_pages", "blkdev_writepages", "x", "y"])
    _, known = reports.judge([other], ext2, "base")
    base = {known[0][0].signature: "base log"}
    failing, excused = reports.judge([via_ext2], ext2, base)
    assert failing == [via_ext2] and not excused
    assert via_ext2.signature.endswith("[via ext2_setsize, ext2_writepages]")


def test_ext2_error_inside_a_report_block_is_judged(tmp_path):
    """An ext2 error line another CPU printed inside a KCSAN block makes the
    block ext2's: it is never excused as a known race."""
    lines = kcsan_report(["f0"], ["g0"], between=[
        "[    1.000004] EXT2-fs (vda): error: ext2_free_blocks: bit already cleared"])
    r = reports.Report(lines[1], lines, "console")
    assert r.in_code(set())


def test_long_kcsan_report_is_read_to_its_end(tmp_path):
    """A KCSAN report with a deep first stack (an interrupt over a task) is
    read to its closing line, so the second access is seen."""
    lines = kcsan_report(["f%d" % i for i in range(70)], ["ext2_new_blocks"])
    log = tmp_path / "c.log"
    log.write_text("\n".join(["FORK-GUEST-START x"] + lines + ["FORK-EXIT-STATUS: 0"]) + "\n")
    found = reports.parse(str(log))
    assert len(found) == 1 and found[0].in_code({"ext2_new_blocks"})


def test_kcsan_assert_title():
    r = reports.Report("BUG: KCSAN: assert: race in ext2_foo / ext2_bar",
                       ["BUG: KCSAN: assert: race in ext2_foo / ext2_bar"], "console")
    assert "ext2_foo" in r.symbols and "ext2_bar" in r.symbols
