"""fork compare --output: the report never writes over what the project keeps."""


def compare_to(kit, out, *extra):
    return kit.fork("compare", "--against", "patches", "--output", str(out), *extra)


def test_output_over_a_tracked_or_series_file_is_refused(kit):
    kit.laid_out()
    series = kit.repo / "patches" / "series"
    notes = kit.repo / "patches" / "NOTES.md"          # untracked, in a series directory
    notes.write_text("my notes\n")
    readme = kit.repo / "README.md"                    # tracked, outside
    readme.write_text("the project\n")
    kit.commit_repo("readme")
    notes.write_text("my notes\n")
    for path, why in ((series, "is in the series directory patches/"),
                      (notes, "is in the series directory patches/"),
                      (readme, "is tracked in the project repository")):
        before = path.read_bytes()
        res = compare_to(kit, path)
        assert res.rc == 1, res
        assert res.err.count("\n") == 1 and "Traceback" not in res.err
        assert "--output %s %s" % (path, why) in res.err and "--force" in res.err
        assert path.read_bytes() == before
    # asked to, it writes there
    res = compare_to(kit, readme, "--force")
    assert res.rc == 0, res
    assert readme.read_text().startswith("# patches/ vs patches/\n")


def test_output_may_refresh_an_earlier_report(kit):
    """`compare --output backports/6.1/RANGE-DIFF.md` refreshes the tracked
    report (README): a file that holds a report of compare is not refused."""
    kit.laid_out()
    report = kit.repo / "patches" / "RANGE-DIFF.md"
    assert compare_to(kit, report).rc == 0          # a new file: written
    kit.commit_repo("report")
    report.write_text(report.read_text() + "stale line\n")
    res = compare_to(kit, report)
    assert res.rc == 0, res
    assert "stale line" not in report.read_text()


def test_summary_lists_every_pair_of_a_long_series(kit):
    """git range-diff pads the patch numbers with spaces once a side has
    nine patches or more (" 1:  abc = 1:  abc"); the summary lists those
    pairs too, not only the unpadded ones."""
    kit.imported()
    body = "Signed-off-by: A U Thor <author@example.org>"
    kit.make_patches([("fs/ext2/balloc.c", "/* balloc line %d */\n" % i,
                       "/* balloc line %d: changed */\n" % i, "ext2: change line %d" % i, body)
                      for i in range(1, 11)])
    kit.commit_repo("ten patches")
    out = kit.tmp / "cmp.md"
    res = compare_to(kit, out)
    assert res.rc == 0, res
    summary = out.read_text().split("```")[1]
    pairs = [l for l in summary.splitlines() if l.strip()]
    assert len(pairs) == 10, summary
    assert [l.split(":")[0].strip() for l in pairs] == [str(i) for i in range(1, 11)]
    assert all(" = " in l for l in pairs)
    assert pairs[9].startswith("10:  ") and pairs[9].endswith("ext2: change line 10")
