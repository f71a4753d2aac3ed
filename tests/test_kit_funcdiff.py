"""funcdiff and the rule it serves: a report in ext2's code is known for a
commit only where that code is still stock (the commit changed other ext2
functions, no header, nothing outside function bodies) and the base
shows the same report."""

import subprocess

import pytest

from forkkit import funcdiff, reports

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
    funcs, outside = funcdiff.split_functions(NAMEI)
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


def race(stack_a, stack_b, title="BUG: KCSAN: data-race in ext2_new_blocks / ext2_new_blocks"):
    lines = ["[    1.000000] " + "=" * 66, "[    1.000001] " + title, "[    1.000002] ",
             "[    1.000003] write to 0xffff888004a3c0d8 of 4 bytes by task 95 on cpu 1:"]
    lines += ["[    1.000004]  %s+0x1/0x2" % f for f in stack_a]
    lines += ["[    1.000005] ",
              "[    1.000006] read to 0xffff888004a3c0d8 of 4 bytes by task 96 on cpu 0:"]
    lines += ["[    1.000007]  %s+0x1/0x2" % f for f in stack_b]
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
    assert r.as_dict()["ext2_key"].startswith("ext2: BUG: KCSAN: data-race in ext2_new_blocks")


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
    # same title, another ext2 function on the racing stacks
    other = race(["ext2_new_blocks", "ext2_try_to_allocate"], STOCK[1])
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


def test_base_evidence_keeps_the_base_ext2_reports(kit, monkeypatch):
    """The base row fails on its ext2 reports, and they still become the
    base's evidence (by ext2_key); its reports without one (ext2's own
    messages) do not."""
    from forkkit import cmd_check, kernel
    monkeypatch.setattr(cmd_check, "git", lambda args: "t" * 40)
    monkeypatch.setattr(kernel, "cached", lambda tree, flavour, test: None)
    row = {"commit": "b" * 40, "tree": "t" * 40, "details": {"boot": "/logs/1"},
           "reports": [{"signature": "S", "verdict": "FAIL", "title": "S",
                        "ext2_key": "ext2: S [ext2_new_blocks]"},
                       {"signature": "M", "verdict": "FAIL", "title": "EXT2-fs (vdb): error"},
                       {"signature": "K", "verdict": "known", "title": "K"}]}
    cmd_check.add_evidence(row, cmd_check.evidence_path("t" * 40, "kcsan", "stress"))
    got = cmd_check.base_reports("b" * 40, [], "kcsan", "stress", print)
    assert sorted(got) == ["K", "ext2: S [ext2_new_blocks]"]
    assert got["ext2: S [ext2_new_blocks]"] == "the base bbbbbbbbbbbb shows it too: /logs/1"
