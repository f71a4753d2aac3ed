"""fork check --carry: a check directory's tables carried to a reworded
series (every tree the same, every commit id new), with build and guest
faked as in test_kit_check.py.  The guest runs are copied, never run;
checkpatch runs on each new commit; a tree that changed, a row that maps
to no commit and an existing table are refused with nothing written."""

import json

from forkkit import cli
from forkkit.publish import docs
from forkkit.verify import check as vcheck, checkrecords, kernel

from test_kit_check import fake  # noqa: F401  (the fixture)


def run(capsys, *args):
    rc = cli.main(["check"] + [str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def checked(fake, capsys, *tables):
    """`check --json` of the whole series under each (flavour, test) of
    `tables` into records/checks/9.9/<head12>/: the old head's directory."""
    d = fake.repo / "records" / "checks" / "9.9" / fake.commits[-1][:12]
    d.mkdir(parents=True, exist_ok=True)
    for flavour, test in tables:
        run(capsys, "--config", flavour, "--test", test, "--json", d / ("%s-%s.json"
                                                                          % (flavour, test)))
    return "records/checks/9.9/" + fake.commits[-1][:12]


def reword(fake, change=None, figure=10):
    """Every patch of series/9.9 committed again with its tree and a log
    with a measured figure added (`change`: {index: (path, text)} changes
    that patch's tree instead); returns the new commits, base first."""
    parent = fake.commits[0]
    out = [parent]
    for n, c in enumerate(fake.commits[1:], 1):
        msg = fake.git("log", "-1", "--format=%B", c)
        msg = msg.replace("\n\n", "\n\nMeasured: %d s.\n\n" % (figure * n), 1)
        tree = c + "^{tree}"
        if change and n in change:
            path, text = change[n]
            fake.git("checkout", "-q", "--detach", c)
            (fake.ktree / path).write_text(text)
            fake.git("commit", "-q", "-a", "-m", "changed")
            tree = "HEAD^{tree}"
        new = fake.git("commit-tree", tree, "-p", parent, "-m", msg)
        out.append(new)
        parent = new
    fake.git("checkout", "-q", "--detach", fake.commits[0])
    fake.git("update-ref", "refs/heads/series/9.9", parent)
    return out


def read(fake, rel):
    return json.loads((fake.repo / rel).read_text())


def test_a_reworded_series_carries_every_row(fake, capsys, monkeypatch):
    old_dir = checked(fake, capsys, ("base", "smoke"), ("debug", "smoke"))
    built = len(fake.calls["build"])
    assert built == 6
    # a table written before runs were kept: each row is its own one run
    older = read(fake, old_dir + "/debug-smoke.json")
    for r in older:
        del r["runs"]
    (fake.repo / old_dir / "debug-smoke.json").write_text(json.dumps(older))
    new = reword(fake)
    assert [fake.rev(c + "^{tree}") for c in new] == \
        [fake.rev(c + "^{tree}") for c in fake.commits]
    fake.calls["checkpatch"].clear()
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 0, out + err
    # no build, no boot: only checkpatch, once per new commit for both tables
    assert len(fake.calls["build"]) == built and len(fake.calls["boot"]) == built
    assert fake.calls["checkpatch"] == new
    new_dir = "records/checks/9.9/" + new[-1][:12]
    for name in ("base-smoke.json", "debug-smoke.json"):
        old_rows, rows = read(fake, old_dir + "/" + name), read(fake, new_dir + "/" + name)
        assert [r["commit"] for r in rows] == new
        assert [r["subject"] for r in rows] == [fake.git("log", "-1", "--format=%s", c)
                                               for c in new]
        for o, r in zip(old_rows, rows):
            assert r["tree"] == o["tree"]
            assert r["carried"] == {"commit": o["commit"], "table": old_dir + "/" + name,
                                    "log": r["carried"]["log"]}
            assert r["carried"]["log"].startswith("logs/check-%s-" % r["commit"][:12])
            assert r["runs"] == kernel.runs_of(o)          # the runs, as recorded
            assert r["runs"][0]["commit"] == o["commit"]
            assert {c: r["cells"][c] for c in kernel.RUN_CELLS} == \
                {c: o["cells"][c] for c in kernel.RUN_CELLS}
            assert r["log"] == o["log"] and r["passed"] is True
        assert rows[0]["cells"]["checkpatch"] == "n/a"
        assert [r["cells"]["checkpatch"] for r in rows[1:]] == ["pass", "pass"]
    assert "%s/base-smoke.json: 3 rows carried from %s/base-smoke.json" % (new_dir, old_dir) \
        in out
    # the same directory again: the tables exist, nothing is overwritten
    before = (fake.repo / new_dir / "base-smoke.json").read_bytes()
    fake.calls["checkpatch"].clear()
    rc, out, err = run(capsys, "--carry", new_dir)
    assert rc == 1 and "exists" in err and len(err.strip().splitlines()) == 1, err
    assert (fake.repo / new_dir / "base-smoke.json").read_bytes() == before
    assert fake.calls["checkpatch"] == []


def test_checkpatch_is_judged_on_the_new_log(fake, capsys, monkeypatch):
    """A reword that mends the log mends checkpatch; the runs stay."""
    bad = set(fake.commits[1:2])

    def checkpatch(commit, log):
        fake.calls["checkpatch"].append(commit)
        if commit == fake.commits[0]:
            return "n/a", "base snapshot"
        if commit in bad:
            return "FAIL", "total: 1 errors, 0 warnings, 10 lines checked"
        return "pass", "total: 0 errors, 0 warnings (%s)" % commit[:12]
    monkeypatch.setattr(kernel, "run_checkpatch", checkpatch)
    old_dir = checked(fake, capsys, ("base", "smoke"))
    old = read(fake, old_dir + "/base-smoke.json")
    assert old[1]["cells"]["checkpatch"] == "FAIL" and old[1]["passed"] is False
    new = reword(fake)
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 0, out + err
    rows = read(fake, "records/checks/9.9/%s/base-smoke.json" % new[-1][:12])
    assert rows[1]["cells"]["checkpatch"] == "pass" and rows[1]["passed"] is True
    assert rows[1]["details"]["checkpatch"] == "total: 0 errors, 0 warnings (%s)" % new[1][:12]


def test_a_changed_tree_is_refused_and_nothing_is_written(fake, capsys):
    old_dir = checked(fake, capsys, ("base", "smoke"))
    new = reword(fake, change={2: ("fs/ext2/inode.c", "/* changed */\n")})
    fake.calls["checkpatch"].clear()
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "has no row of tree %s" % fake.rev(new[2] + "^{tree}")[:12] in err
    assert new[2][:12] in err
    assert not (fake.repo / "records" / "checks" / "9.9" / new[-1][:12]).exists()
    assert fake.calls["checkpatch"] == []


def test_a_row_that_maps_to_no_commit_is_refused(fake, capsys):
    old_dir = checked(fake, capsys, ("base", "smoke"))
    new = reword(fake)
    # a range without the base: the table's base row has no commit in it
    rc, out, err = run(capsys, "%s..%s" % (new[0], new[-1]), "--carry", old_dir)
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "row of commit %s" % fake.commits[0][:12] in err and "no commit of" in err
    assert not (fake.repo / "records" / "checks" / "9.9" / new[-1][:12]).exists()
    # carry runs nothing but checkpatch and writes its own tables
    rc, out, err = run(capsys, "--carry", old_dir, "--force")
    assert rc == 1 and "leave out --force" in err and len(err.strip().splitlines()) == 1, err
    # and what is not a check directory is named
    for bad in ("records/checks/9.9/nope", "patches", old_dir + "/../../"):
        rc, out, err = run(capsys, "--carry", bad)
        assert rc == 1 and len(err.strip().splitlines()) == 1 and "records/checks/" in err, err


def test_one_table_of_a_range_is_carried(fake, capsys):
    """A table of part of the series is carried with the range it checked."""
    d = fake.repo / "records" / "checks" / "9.9" / fake.commits[-1][:12]
    d.mkdir(parents=True)
    run(capsys, "%s..%s" % tuple(fake.commits[1:]), "--json", d / "base-smoke.json")
    new = reword(fake)
    rc, out, err = run(capsys, "%s..%s" % tuple(new[1:]), "--carry",
                       fake.repo / "records/checks/9.9" / fake.commits[-1][:12]
                       / "base-smoke.json")
    assert rc == 0, out + err
    rows = read(fake, "records/checks/9.9/%s/base-smoke.json" % new[-1][:12])
    assert [r["commit"] for r in rows] == new[2:]


def test_a_carried_fail_stays_fail_and_each_run_counts_once(fake, capsys):
    c1 = fake.commits[1]
    fake.fail["boot"].add(c1)
    old_dir = checked(fake, capsys, ("base", "smoke"))
    new = reword(fake)
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 1, out + err                 # as check: a failed cell fails the verb
    assert "%s boot: " % new[1][:12] in out
    new_dir = "records/checks/9.9/" + new[-1][:12]
    cells = checkrecords.cells(fake.repo)
    cell = cells[("9.9", new[1], "base", "smoke")]
    assert cell["verdict"] == "FAIL" and len(cell["runs"]) == 1
    assert cell["runs"][0][1]["passed"] is False
    assert cells[("9.9", new[2], "base", "smoke")]["verdict"] == "pass"
    # the base commit is the same in both tables: its one run is counted
    # once, where it was recorded
    base = cells[("9.9", new[0], "base", "smoke")]
    assert len(base["runs"]) == 1
    assert [f for f, _ in base["runs"]] == [old_dir + "/base-smoke.json"]
    # a run without a log is still one run, also through a carry of a carry
    for d in (old_dir, new_dir):
        rows = read(fake, d + "/base-smoke.json")
        for r in rows:
            del r["log"]
            for run_ in r["runs"]:
                del run_["log"]
        (fake.repo / d / "base-smoke.json").write_text(json.dumps(rows))
    again = reword(fake, figure=20)
    rc, out, err = run(capsys, "--carry", new_dir)
    assert rc == 1 and not err, err
    cells = checkrecords.cells(fake.repo)
    assert len(cells[("9.9", new[0], "base", "smoke")]["runs"]) == 1
    assert len(cells[("9.9", again[1], "base", "smoke")]["runs"]) == 1
    assert cells[("9.9", again[1], "base", "smoke")]["verdict"] == "FAIL"


def test_the_documents_show_the_carried_table(fake, capsys):
    old_dir = checked(fake, capsys, ("base", "smoke"))
    new = reword(fake)
    assert run(capsys, "--carry", old_dir)[0] == 0
    (fake.repo / "docs").mkdir()
    (fake.repo / "docs" / "T.md.in").write_text("# T\n\n@@ checks 9.9 %s patches\n"
                                                % new[-1][:12])
    text = docs.render(str(fake.repo), "docs/T.md.in")
    rows = [l for l in text.splitlines() if l.startswith("| %s" % new[1][:12])]
    assert len(rows) == 1 and "(carried)" in rows[0], text
    note = "- %s: runs recorded for commit %s, same tree (`%s/base-smoke.json`)" % (
        new[1][:12], fake.commits[1][:12], old_dir)
    assert note in text.splitlines(), text
    assert "Every recorded run of these commits, judged together: pass: 3." in text
    # the old table shows no mark
    plain = vcheck.markdown(read(fake, old_dir + "/base-smoke.json"),
                            vcheck.Series("patches"), "base", "smoke")
    assert "carried" not in plain
    # and the terminal's table says it too
    assert vcheck.table(read(fake, "records/checks/9.9/%s/base-smoke.json"
                             % new[-1][:12])).count("(carried from ") == 3


def test_a_carried_run_counts_once_where_it_was_recorded(tmp_path):
    """On synthetic records: the carried table sorts before the one it
    came from, and the runs have no log."""
    from test_checks_records import row, write
    old = [row("base", True, None), row("c1", False, None)]
    for r in old:
        del r["log"]
    write(tmp_path, "fff/kcsan-stress.json", old)
    carried = [dict(r, runs=kernel.runs_of(r),
                    carried={"commit": r["commit"], "table":
                             "records/checks/9.9/fff/kcsan-stress.json"}) for r in old]
    carried[1]["commit"] = "n1"
    write(tmp_path, "000/kcsan-stress.json", carried)
    cells = checkrecords.cells(tmp_path)
    base = cells[("9.9", "base", "kcsan", "stress")]
    assert [f for f, _ in base["runs"]] == ["records/checks/9.9/fff/kcsan-stress.json"]
    assert cells[("9.9", "n1", "kcsan", "stress")]["verdict"] == "FAIL"
    assert len(cells[("9.9", "n1", "kcsan", "stress")]["runs"]) == 1


def test_a_carry_of_a_carry_names_where_the_runs_were_recorded(fake, capsys):
    old_dir = checked(fake, capsys, ("base", "smoke"))
    first = reword(fake, figure=10)
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 0, out + err
    mid_dir = "records/checks/9.9/" + first[-1][:12]
    second = reword(fake, figure=20)
    rc, out, err = run(capsys, "--carry", mid_dir)
    assert rc == 0, out + err
    rows = read(fake, "records/checks/9.9/%s/base-smoke.json" % second[-1][:12])
    assert [r["carried"]["commit"] for r in rows] == fake.commits
    assert {r["carried"]["table"] for r in rows} == {old_dir + "/base-smoke.json"}


def test_carry_refuses_the_options_it_would_ignore(fake, capsys):
    old_dir = checked(fake, capsys, ("base", "smoke"))
    reword(fake)
    for opt in (["--test", "stress"], ["--config", "debug"], ["--timeout", "5"]):
        rc, out, err = run(capsys, "--carry", old_dir, *opt)
        assert rc == 1 and opt[0] in err and len(err.strip().splitlines()) == 1, err


def test_a_table_written_meanwhile_leaves_nothing_written(fake, capsys, monkeypatch):
    old_dir = checked(fake, capsys, ("base", "smoke"), ("debug", "smoke"))
    new = reword(fake)
    new_dir = fake.repo / "records" / "checks" / "9.9" / new[-1][:12]
    from forkkit.verify import carry as vcarry
    real = vcarry._write_new

    def racing(path, text):             # another run writes the second table first
        if path.endswith("debug-smoke.json"):
            with open(path, "w") as fh:
                fh.write("[]")
        return real(path, text)
    monkeypatch.setattr(vcarry, "_write_new", racing)
    rc, out, err = run(capsys, "--carry", old_dir)
    assert rc == 1 and "exists" in err
    assert sorted(p.name for p in new_dir.iterdir()) == ["debug-smoke.json"]
