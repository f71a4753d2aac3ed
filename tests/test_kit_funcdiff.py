"""funcdiff and the rule it serves: a report in ext2's code is known for a
commit only where that code is still stock (the commit changed other ext2
functions, no header, nothing outside function bodies) and the base
shows the same report."""

import subprocess

import pytest

from forkkit.guest import reports
from forkkit.repo import funcdiff

NAMEI = """\
// SPDX-License-Identifier: GPL-2.0
#include "ext2.h"

#define NAMEI_FLAG 1

static inline int ext2_add_nondir(struct dentry *dentry, struct inode *inode)
{
	return ext2_add_link(dentry, inode);
}

/*
 * The comment of ext2_unlink(); "{" below is at column 0.
 */
static int ext2_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);

	inode_dec_link_count(inode);
	return 0;
}

static int ext2_rmdir(struct inode *dir, struct dentry *dentry)
{
	return ext2_unlink(dir, dentry);
}

static int ext2_create(struct mnt_idmap *idmap, struct inode *dir)
{
	return ext2_add_nondir(NULL, dir);
}

const struct inode_operations ext2_dir_inode_operations = {
	.unlink		= ext2_unlink,
	.rmdir		= ext2_rmdir,
};
"""

BALLOC = """\
#include "ext2.h"

int ext2_new_blocks(struct inode *inode)
{
	return group_adjust_blocks(inode);
}

static int
group_adjust_blocks(struct inode *inode)
{
	return 0;
}
"""


def test_split_functions_kernel_style():
    funcs, outside, unnamed = funcdiff.split_functions(NAMEI)
    assert unnamed == 0
    assert sorted(funcs) == ["ext2_add_nondir", "ext2_create", "ext2_rmdir", "ext2_unlink"]
    # a definition carries its comment; the initializer and the macro stay outside
    assert "The comment of ext2_unlink()" in funcs["ext2_unlink"][0]
    assert ".unlink" in outside and "#define NAMEI_FLAG" in outside
    assert "inode_dec_link_count" not in outside
    # a header split over two lines ("static int\nname(...)") is found too
    assert sorted(funcdiff.split_functions(BALLOC)[0]) == ["ext2_new_blocks",
                                                           "group_adjust_blocks"]


@pytest.fixture
def ktree(tmp_path, monkeypatch):
    repo = tmp_path / "linux"
    (repo / "fs" / "ext2").mkdir(parents=True)
    (repo / "fs" / "ext2" / "namei.c").write_text(NAMEI)
    (repo / "fs" / "ext2" / "balloc.c").write_text(BALLOC)
    (repo / "fs" / "ext2" / "ext2.h").write_text("struct ext2_sb_info { int x; };\n")
    (repo / "MAINTAINERS").write_text("EXT2\n")

    def git(*args):
        return subprocess.run(["git", "-C", str(repo)] + list(args), check=True,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    monkeypatch.setenv("FORK_KTREE", str(repo))

    def commit(path, old, new, base="HEAD"):
        git("checkout", "-q", "--detach", base)
        p = repo / path
        text = p.read_text()
        assert old in text
        p.write_text(text.replace(old, new))
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "change")
        return git("rev-parse", "HEAD")
    commit.base = git("rev-parse", "HEAD")
    return commit


def test_changed_functions(ktree):
    base = ktree.base
    # a body change: the function and its callers (an inlined helper has
    # no frame of its own), not the initializer that points at it
    c = ktree("fs/ext2/namei.c", "inode_dec_link_count(inode);",
              "if (inode->i_nlink)\n\t\tinode_dec_link_count(inode);", base)
    assert funcdiff.changed_functions(base, c) == {"ext2_unlink", "ext2_rmdir"}
    c = ktree("fs/ext2/namei.c", "return ext2_add_link(dentry, inode);",
              "return ext2_add_link(dentry, inode) ?: 0;", base)
    assert funcdiff.changed_functions(base, c) == {"ext2_add_nondir", "ext2_create"}
    # a function's comment belongs to it
    c = ktree("fs/ext2/namei.c", "The comment of", "The log of", base)
    assert funcdiff.changed_functions(base, c) == {"ext2_unlink", "ext2_rmdir"}
    # callers across files of fs/ext2
    c = ktree("fs/ext2/balloc.c", "\treturn 0;", "\treturn 1;", base)
    assert funcdiff.changed_functions(base, c) == {"group_adjust_blocks", "ext2_new_blocks"}
    # outside function bodies, a header, another directory: everything
    for path, old, new in (("fs/ext2/namei.c", "#define NAMEI_FLAG 1", "#define NAMEI_FLAG 2"),
                           ("fs/ext2/namei.c", ".rmdir\t\t= ext2_rmdir,", ""),
                           ("fs/ext2/ext2.h", "int x;", "long x;"),
                           ("MAINTAINERS", "EXT2", "EXT2 FILE SYSTEM")):
        assert funcdiff.changed_functions(base, ktree(path, old, new, base)) == funcdiff.ALL
    assert funcdiff.changed_functions(base, base) == set()


EXT2 = {"ext2_new_blocks", "ext2_try_to_allocate", "ext2_unlink", "ext2_rmdir",
        "ext2_get_blocks", "ext2_statfs"}


def at(frame):
    return frame if "+0x" in frame else frame + "+0x1c5/0x8b0"


def race(stack_a, stack_b, title="BUG: KCSAN: data-race in ext2_new_blocks / ext2_new_blocks"):
    lines = ["[    1.000000] " + "=" * 66, "[    1.000001] " + title, "[    1.000002] ",
             "[    1.000003] write to 0xffff888004a3c0d8 of 4 bytes by task 95 on cpu 1:"]
    lines += ["[    1.000004]  %s" % at(f) for f in stack_a]
    lines += ["[    1.000005] ",
              "[    1.000006] read to 0xffff888004a3c0d8 of 4 bytes by task 96 on cpu 0:"]
    lines += ["[    1.000007]  %s" % at(f) for f in stack_b]
    lines += ["[    1.000008] ", "[    1.000009] " + "=" * 66]
    return reports.Report(lines[1], lines, "console")


STOCK = (["ext2_new_blocks", "ext2_get_blocks", "ext2_get_block", "__block_write_begin"],
         ["ext2_new_blocks", "ext2_get_blocks", "ext2_get_block", "__block_write_begin",
          "ext2_write_begin", "do_unlinkat_deeper"])


def base_evidence(report):
    """What cmd_check keeps of a base row: its ext2 reports by ext2_key."""
    failing, excused = reports.judge([report], EXT2, "base")
    assert failing == [report] and not excused       # the base row itself fails
    return {failing[0].ext2_key: "the base shows it too: base.console"}


def test_stock_ext2_report_is_known_for_a_commit_that_did_not_change_it():
    known = base_evidence(race(*STOCK))
    r = race(*STOCK)
    failing, excused = reports.judge([r], EXT2, known, {"ext2_unlink", "ext2_rmdir"})
    assert not failing and excused[0][0] is r
    assert "ext2_rmdir, ext2_unlink" in excused[0][1] and "base.console" in excused[0][1]
    # the key is the two racing instructions, not the callers
    assert r.as_dict()["ext2_key"] == ("ext2: KCSAN: read 4 bytes in ext2_new_blocks"
                                       " / write 4 bytes in ext2_new_blocks")
    # the same race reached through other callers (they vary from boot to
    # boot) is the same report
    other_callers = race(["ext2_new_blocks", "ext2_get_blocks", "ext2_iomap_begin"],
                         ["ext2_new_blocks", "ext2_alloc_blocks"])
    failing, excused = reports.judge([other_callers], EXT2, known, {"ext2_unlink"})
    assert not failing and len(excused) == 1


@pytest.mark.parametrize("changed", [
    funcdiff.ALL,                       # a header or a non-body change
    {"ext2_new_blocks"},                # the racing function itself
    {"ext2_get_block"},                 # a caller among the access's top frames
    {"ext2_write_begin"},               # a caller deeper down: still the commit's code
])
def test_stock_ext2_report_fails_where_the_commit_changed_its_code(changed):
    known = base_evidence(race(*STOCK))
    r = race(*STOCK)
    failing, excused = reports.judge([r], EXT2, known, changed)
    assert failing == [r] and not excused


def test_ext2_report_the_base_did_not_show_fails():
    known = base_evidence(race(*STOCK))
    # another racing function under the same title, or another kind of access
    other = race(["ext2_try_to_allocate", "ext2_new_blocks"], STOCK[1])
    failing, _ = reports.judge([other], EXT2, known, {"ext2_unlink"})
    assert failing == [other]
    lines = [l.replace("of 4 bytes", "of 2 bytes") for l in race(*STOCK).lines]
    other = reports.Report(lines[1], lines, "console")
    failing, _ = reports.judge([other], EXT2, known, {"ext2_unlink"})
    assert failing == [other]
    # outside-ext2 evidence never excuses an ext2 report, nor the reverse
    r = race(*STOCK)
    failing, _ = reports.judge([r], EXT2, {r.signature: "base"}, {"ext2_unlink"})
    assert failing == [r]


def test_ext2_messages_are_never_known():
    lines = ["[    2.0] EXT2-fs (vdb): error: ext2_new_blocks: allocating block in system zone",
             "[    2.1]  ext2_new_blocks+0x1/0x2"]
    msg = reports.Report(lines[0], lines, "console")
    failing, _ = reports.judge([msg], EXT2, "base")
    assert failing == [msg] and msg.ext2_key is None
    failing, _ = reports.judge([msg], EXT2, {"ext2: " + msg.signature + " [ext2_new_blocks]": "x"},
                               set())
    assert failing == [msg]


def test_base_evidence_keeps_the_base_ext2_reports(kit, monkeypatch, tmp_path):
    """The base row fails on its ext2 reports, and they still become the
    base's evidence (by ext2_key), from its row and from its stored
    console; its reports without one (ext2's own messages) do not."""
    from forkkit.build import kbuild
    from forkkit.guest import guesttests
    from forkkit.verify import check as cmd_check, kernel
    monkeypatch.setattr(cmd_check, "git", lambda args: "t" * 40)
    monkeypatch.setattr(kernel, "cached", lambda *key: None)
    monkeypatch.setattr(kbuild, "read_index", lambda path: {"sha256": "a" * 64,
                                                            "ext2_symbols": sorted(EXT2)})
    console = tmp_path / "base.console"
    import os
    console.write_text("\n".join([
        "# qemu-system-x86_64 -kernel /w/%s.bzImage -initrd /w/initrd-%d-1.cpio -append x"
        % ("a" * 64, os.getpid()),
        "FORK-GUEST-START 6.12 cpus=2",
        "[   20.000000] " + "=" * 66,
        "[   20.000001] BUG: KCSAN: data-race in ext2_new_blocks / ext2_new_blocks",
        "[   20.000002] write to 0xffff888004a3c0d8 of 4 bytes by task 95 on cpu 1:",
        "[   20.000003]  ext2_new_blocks+0x1c5/0x210",
        "[   20.000004] read to 0xffff888004a3c0d8 of 4 bytes by task 96 on cpu 0:",
        "[   20.000005]  ext2_new_blocks+0x2f1/0x6f0",
        "[   20.000006] " + "=" * 66,
        "[   21.000000] EXT2-fs (vdb): error: ext2_check_folio: bad entry in directory #2",
        "FORK-EXIT-STATUS: 0", ""]))
    row = {"commit": "b" * 40, "tree": "t" * 40, "flavour": "kcsan", "test": "stress",
           "image_sha256": "a" * 64, "config_key": "c", "details": {"boot": str(console)},
           "reports": [{"signature": "S", "verdict": "FAIL", "title": "S",
                        "ext2_key": "ext2: S [ext2_new_blocks]"},
                       {"signature": "M", "verdict": "FAIL", "title": "EXT2-fs (vdb): error"},
                       {"signature": "K", "verdict": "known", "title": "K"}]}
    stored = cmd_check.add_evidence(row, guesttests.test_key("stress"))
    got = cmd_check.base_reports("b" * 40, [row], "kcsan", "stress", print)
    race = ("ext2: KCSAN: read 4 bytes in ext2_new_blocks / "
            "write 4 bytes in ext2_new_blocks")
    assert sorted(got) == sorted(["K", "ext2: S [ext2_new_blocks]", race])
    assert got["ext2: S [ext2_new_blocks]"] == \
        "the base bbbbbbbbbbbb shows it too: %s" % console
    assert got[race] == "the base bbbbbbbbbbbb shows it too: %s" % stored


def test_race_at_unknown_origin_in_ext2_is_never_known():
    """KCSAN prints one side only: the other, maybe the changed code, is
    not on the report."""
    lines = ["[    1.000000] " + "=" * 66,
             "[    1.000001] BUG: KCSAN: data-race in ext2_new_blocks",
             "[    1.000002] ",
             "[    1.000003] race at unknown origin, with read to 0xffff888004a3c0d8 of 4 bytes "
             "by task 96 on cpu 0:",
             "[    1.000004]  ext2_new_blocks+0x1c5/0x8b0",
             "[    1.000005]  ext2_get_blocks+0x1/0x2",
             "[    1.000009] " + "=" * 66]
    r = reports.Report(lines[1], lines, "console")
    failing, _ = reports.judge([r], EXT2, "base")
    assert failing == [r] and r.ext2_key is None
    # even where the base shows a race of the same reader with both sides
    both = race(*STOCK)
    known = base_evidence(both)
    failing, _ = reports.judge([r], EXT2, known, {"ext2_unlink"})
    assert failing == [r]


def test_kcsan_key_names_the_ext2_code_of_a_library_access():
    """A race between two library functions called from ext2 names the
    ext2 function each came from: the same library race reached from other
    ext2 code is another report."""
    ext2 = EXT2 | {"ext2_free_blocks", "ext2_new_inode"}
    base = race(["__percpu_counter_sum", "ext2_statfs"],
                ["percpu_counter_add_batch", "ext2_new_blocks"],
                title="BUG: KCSAN: data-race in __percpu_counter_sum / percpu_counter_add_batch")
    failing, _ = reports.judge([base], ext2, "base")
    known = {failing[0].ext2_key: "base"}
    assert failing[0].ext2_key == (
        "ext2: KCSAN: read 4 bytes in percpu_counter_add_batch via ext2_new_blocks"
        " / write 4 bytes in __percpu_counter_sum via ext2_statfs")
    # an ext2 function deeper than the access's top 4 frames is no "via"
    deep = race(["__percpu_counter_sum", "a", "b", "c", "ext2_statfs"],
                ["percpu_counter_add_batch", "ext2_new_blocks"])
    failing, _ = reports.judge([deep], ext2, "base")
    assert "write 4 bytes in __percpu_counter_sum /" not in failing[0].ext2_key
    assert failing[0].ext2_key.endswith("write 4 bytes in __percpu_counter_sum")
    # kinds with several attributes are read too
    marked = [l.replace("] write to", "] write (marked, reordered) to") for l in base.lines]
    rep = reports.Report(marked[1], marked, "console")
    reports.judge([rep], ext2, "base")
    assert "write (marked, reordered) 4 bytes in __percpu_counter_sum" in rep.ext2_key
    other = race(["__percpu_counter_sum", "ext2_free_blocks"],
                 ["percpu_counter_add_batch", "ext2_new_inode"],
                 title="BUG: KCSAN: data-race in __percpu_counter_sum / percpu_counter_add_batch")
    failing, _ = reports.judge([other], ext2, known, {"ext2_unlink"})
    assert failing == [other]
    same = race(["__percpu_counter_sum", "ext2_statfs", "statfs_by_dentry"],
                ["percpu_counter_add_batch", "ext2_new_blocks", "ext2_get_blocks"],
                title="BUG: KCSAN: data-race in __percpu_counter_sum / percpu_counter_add_batch")
    failing, excused = reports.judge([same], ext2, known, {"ext2_unlink"})
    assert not failing and excused


def test_leaks_are_never_known_by_the_stock_rule(tmp_path):
    """A leak's one stack is the allocation's: a changed free path is never
    on it."""
    lines = ["unreferenced object 0xffff888004a3c0d8 (size 64):",
             "  backtrace:", "    [<ffffffff81234567>] __kmalloc+0x1/0x2",
             "    [<ffffffff81234568>] ext2_new_blocks+0x1/0x2"]
    leak = reports.Report(lines[0], lines, "kmemleak")
    failing, _ = reports.judge([leak], EXT2, "base")
    assert failing == [leak] and leak.ext2_key is None


def test_definition_names_are_not_misread():
    """A macro continued onto a line that looks like a call, a comment
    without a leading "*", an attribute macro before the name: none of them
    names the function after it."""
    text = ("#define CLAMP(x) \\\n\tmin_t(int, (x), 64)\n"
            "static int bar(int x)\n{\n\treturn CLAMP(x);\n}\n\n"
            "/*\n   Called by ext2_free_blocks() under the lock.\n */\n"
            "static void group_adjust(int n)\n{\n\tn++;\n}\n\n"
            "static __printf(2, 3) void ext2_warn_once(int a, const char *fmt, ...)\n{\n}\n\n"
            "__attribute__((noinline)) static int f(int (*cb)(void))\n{\n\treturn cb();\n}\n\n"
            "/**\n * g() - a kernel-doc whose lines end in code\n * otherwise, return 0;\n"
            " * }\n */\nstatic int g(spinlock_t *l)\n\t__releases(l)\n{\n\treturn 0;\n}\n")
    text += ("static unsigned long ext2_count_locked(struct super_block *sb)\n"
             "\t__must_hold_shared(&EXT2_SB(sb)->s_lock)\n{\n\treturn 1;\n}\n\n"
             "#define GLOB \"/*\"\nstatic int x;\nstatic int h2(void)\n{\n\treturn x;\n}\n")
    funcs, outside, unnamed = funcdiff.split_functions(text)
    assert sorted(funcs) == ["bar", "ext2_count_locked", "ext2_warn_once", "f", "g",
                             "group_adjust", "h2"]
    assert "min_t(int" in outside and unnamed == 0
    # a string's "/*" opens no comment: the declaration stays outside
    assert "static int x;" in outside and "static int x;" not in funcs["h2"][0]
    # an unknown annotation before the name: which one is the name is not known
    assert funcdiff.definition_name("static __unknown(1) int f(int a)") is None
    assert funcdiff.definition_name("static __printf(2, 3) int f(int a)") == "f"
    # a body whose header cannot be named is counted: its callers are unknown
    assert funcdiff.split_functions("/* open\nint h(void)\n{\n}\n")[2] == 1


def test_changed_functions_across_files_and_headers(ktree):
    base = ktree.base
    # ext2_create (namei.c) calls group_adjust_blocks (balloc.c) in this tree
    c1 = ktree("fs/ext2/namei.c", "return ext2_add_nondir(NULL, dir);",
               "return ext2_add_nondir(NULL, dir) + group_adjust_blocks(dir);", base)
    c2 = ktree("fs/ext2/balloc.c", "\treturn 0;", "\treturn 2;", c1)
    assert funcdiff.changed_functions(c1, c2) == {"group_adjust_blocks", "ext2_new_blocks",
                                                  "ext2_create"}
    # a body whose header cannot be named (a function returning a function
    # pointer) may call anything: a change anywhere in its file is ALL
    w = ktree("fs/ext2/namei.c", "const struct inode_operations",
              "int (*weird(void))(void)\n{\n\treturn NULL;\n}\n\nconst struct inode_operations",
              base)
    w2 = ktree("fs/ext2/namei.c", "return ext2_add_link(dentry, inode);",
               "return ext2_add_link(dentry, inode) ?: 1;", w)
    assert funcdiff.changed_functions(w, w2) == funcdiff.ALL
    # ... and so is a change in another file: the unnamed body may call it
    w3 = ktree("fs/ext2/balloc.c", "\treturn 0;", "\treturn 3;", w)
    assert funcdiff.changed_functions(w, w3) == funcdiff.ALL
    # a function body in a header is no exception: ALL
    h = ktree("fs/ext2/ext2.h", "struct ext2_sb_info { int x; };",
              "struct ext2_sb_info { int x; };\nstatic inline int f(void)\n{\n\treturn 1;\n}",
              base)
    h2 = ktree("fs/ext2/ext2.h", "\treturn 1;", "\treturn 2;", h)
    assert funcdiff.changed_functions(h, h2) == funcdiff.ALL


def test_tail_call_targets_stand_for_the_changed_function(monkeypatch, tmp_path):
    """A changed function that ends in a jump has no frame below it: its
    targets (read from the build's objects) count as changed, through
    ext2's own to a fixed point; a jump out of ext2, an unresolved one or
    unknown jumps make everything changed."""
    from forkkit.build import kbuild
    (tmp_path / "fs" / "ext2").mkdir(parents=True)
    obj = str(tmp_path / "fs" / "ext2" / "file.o")
    open(obj, "w").close()
    symtab = obj + """:     file format elf64-x86-64

SYMBOL TABLE:
0000000000000000 l     F .text.unlikely	0000000000000034 ext2_unlink.cold
0000000000000000 l     F .text.ext2_other	0000000000000008 ext2_other
"""
    dump = obj + """:     file format elf64-x86-64

0000000000000000 <ext2_file_write_iter>:
  25a:	jmp    25f <ext2_file_write_iter+0x3f>
			25b: R_X86_64_PLT32	generic_file_write_iter-0x4
  260:	jmp    270 <ext2_file_write_iter+0x50>
  270:	call   275 <ext2_file_write_iter+0x55>
			271: R_X86_64_PLT32	ext2_dax_write_iter-0x4
  280:	jmp    __x86_return_thunk
			281: R_X86_64_PLT32	__x86_return_thunk-0x4
  290:	jmp    295 <ext2_unlink>
			291: R_X86_64_PLT32	kfree-0x4

00000000000002a0 <ext2_unlink>:
  2b0:	jne    4b0 <ext2_helper.isra.0>
  2c0:	jmp    2c5 <ext2_unlink+0x25>
			2c1: R_X86_64_PC32	.text.unlikely+0x10
  2d0:	jmp    2d5 <ext2_unlink+0x35>
			2d1: R_X86_64_PC32	.text.ext2_other-0x4
  2e0:	jmp    2e5 <ext2_unlink+0x45>
			2e1: R_X86_64_PC32	.text.unlikely+0x7c

00000000000004b0 <ext2_helper.isra.0>:
  4c0:	jmp    4c5 <ext2_helper.isra.0+0x15>
			4c1: R_X86_64_PLT32	mark_buffer_dirty-0x4
"""
    outputs = {"-t": symtab, "-dr": dump}
    monkeypatch.setattr(kbuild, "run", lambda cmd, check=True: type(
        "P", (), {"stdout": outputs[cmd[1]], "returncode": 0}))
    edges = kbuild.tail_calls(str(tmp_path), "fs/ext2")
    # the relocated jump shown as "<ext2_unlink>" is kfree's, .text.unlikely+0x10
    # is ext2_unlink's own cold part, +0x7c is no function's
    assert edges == {"ext2_file_write_iter": ["generic_file_write_iter", "kfree"],
                     "ext2_unlink": ["?", "ext2_helper", "ext2_other"],
                     "ext2_helper": ["mark_buffer_dirty"]}
    ext2 = ["ext2_file_write_iter", "ext2_unlink", "ext2_helper", "ext2_rmdir", "ext2_a", "ext2_b"]
    assert funcdiff.with_tail_calls({"ext2_rmdir"}, {"ext2_rmdir": ["ext2_a"], "ext2_a": ["ext2_b"]},
                                    ext2) == {"ext2_rmdir", "ext2_a", "ext2_b"}
    assert funcdiff.with_tail_calls({"ext2_rmdir"}, edges, ext2) == {"ext2_rmdir"}
    for changed in ({"ext2_unlink"}, {"ext2_file_write_iter"}, {"ext2_helper"}):
        assert funcdiff.with_tail_calls(changed, edges, ext2) == funcdiff.ALL
    assert funcdiff.with_tail_calls({"ext2_rmdir"}, None, ext2) == funcdiff.ALL
    assert funcdiff.with_tail_calls(funcdiff.ALL, edges, ext2) == funcdiff.ALL
    # objdump failing (either call), or no objects: nothing is known
    for failing in ("-t", "-dr"):
        monkeypatch.setattr(kbuild, "run", lambda cmd, check=True: type(
            "P", (), {"stdout": outputs[cmd[1]], "returncode": int(cmd[1] == failing)}))
        assert kbuild.tail_calls(str(tmp_path), "fs/ext2") is None
    assert kbuild.tail_calls(str(tmp_path / "none"), "fs/ext2") is None


def test_check_passes_each_commit_what_it_changed(monkeypatch):
    """run_check: the base is judged as the base, a commit on it with what
    it changed relative to the base, a commit off the base with ALL."""
    from forkkit.verify import check as cmd_check, kernel
    base, c1, off = "b" * 40, "c" * 40, "d" * 40
    got = {}
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")      # check_commit, cell after cell
    monkeypatch.setattr(cmd_check, "commits_of", lambda rng, series: [base, c1, off])
    monkeypatch.setattr(cmd_check, "rev_parse", lambda rev: base)
    monkeypatch.setattr(cmd_check, "require_ktree", lambda: None)
    monkeypatch.setattr(cmd_check, "git_ok", lambda args: args[-1] != off)
    monkeypatch.setattr(cmd_check, "git", lambda args: "t" * 40)
    monkeypatch.setattr(cmd_check, "base_reports", lambda *a: {"K": "ev"})
    monkeypatch.setattr(cmd_check, "qemu_binary", lambda: None)
    monkeypatch.setattr(cmd_check, "which", lambda *a: None)
    monkeypatch.setattr(cmd_check, "add_evidence", lambda *a: None)
    monkeypatch.setattr(funcdiff, "changed_functions",
                        lambda b, c: {"ext2_unlink"} if (b, c) == (base, c1) else set())
    monkeypatch.setattr(kernel, "cached_row", lambda *a: None)

    def check_commit(commit, flavour, test, timeout, prog, known=None, changed=None,
                     runner="qemu"):
        got[commit] = (known, changed)
        return {"commit": commit, "subject": "s", "cells": dict.fromkeys(kernel.CELLS, "pass"),
                "seconds": 0, "details": {}}
    monkeypatch.setattr(kernel, "check_commit", check_commit)
    cmd_check.run_check(flavour="kcsan", test="stress", out=lambda *a: None,
                        series=type("S", (), {"distro_branch": "distro/x", "rel": "p"})())
    assert got[base] == ("base", funcdiff.ALL)
    assert got[c1] == ({"K": "ev"}, {"ext2_unlink"})
    assert got[off] == ({}, funcdiff.ALL)


def test_check_commit_adds_the_build_tail_calls(monkeypatch, tmp_path):
    """check_commit: what the guest's reports are judged against is the
    commit's changed functions with its build's tail-call targets, and the
    row records it; a build without the jumps recorded makes it ALL."""
    from forkkit.build import kbuild
    from forkkit.verify import kernel
    seen = []
    monkeypatch.setattr(kernel, "git", lambda args: "t" * 40)
    monkeypatch.setattr(kernel, "new_log", lambda name: str(tmp_path / name))
    monkeypatch.setattr(kernel, "cache_path", lambda *a: str(tmp_path / "cache.json"))
    monkeypatch.setattr(kernel, "tool_versions", lambda: {})
    monkeypatch.setattr(kernel, "run_checkpatch", lambda commit, log: ("pass", ""))

    def run_test(image, test, timeout, prog, log, label, known=None, ext2_symbols=(),
                 flavour="base", changed=None, runner="qemu"):
        seen.append(changed)
        return {"cells": {"boot": "pass", "test": "pass", "e2fsck": "pass", "counts": "pass"},
                "details": {}, "results": [], "reports": [], "accel": "tcg"}
    monkeypatch.setattr(kernel, "run_test", run_test)
    for calls, want in (({"ext2_unlink": ["ext2_helper"], "ext2_helper": ["ext2_put"]},
                         ["ext2_helper", "ext2_put", "ext2_unlink"]),
                        ({"ext2_unlink": ["drop_nlink"]}, funcdiff.ALL),
                        (None, funcdiff.ALL)):
        res = kbuild.BuildResult(tree="t" * 40, image="img", image_sha256="s", config_key="k",
                                 log="l", sparse="ran",
                                 ext2_symbols=["ext2_unlink", "ext2_helper", "ext2_put"],
                                 ext2_tail_calls=calls)
        monkeypatch.setattr(kernel, "build", lambda commit, flavour, prog: res)
        row = kernel.check_commit("c" * 40, "kcsan", "stress", 10, type(
            "P", (), {"say": lambda self, *a: None})(), known={}, changed={"ext2_unlink"})
        assert row["ext2_changed_vs_base"] == want
        assert (sorted(seen[-1]) if seen[-1] != funcdiff.ALL else seen[-1]) == want
