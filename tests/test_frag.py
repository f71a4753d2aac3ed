"""`tools/fork frag`: several boots per revision, the order rotating, and a
record (records/frag/<id>.json) that names what ran and that BENCHMARKS.md
renders."""

import json
import os
import types

import pytest

from conftest import ROOT
from forkkit import cli
from forkkit.publish import docs
from forkkit.verbs import frag as cmd_frag
from forkkit.verify import frag as fraglib


def test_rep_order_rotates():
    revs = ["a", "b", "c"]
    assert [fraglib.rep_order(revs, r) for r in (1, 2, 3, 4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_kinds_follow_the_directories_of_the_guest_script():
    files = {"/same1/f0": {"blocks": 64, "fragments": 2},
             "/x1/f0": {"blocks": 64, "fragments": 3},
             "/y1/f0": {"blocks": 64, "fragments": 5},
             "/quad4/f1": {"blocks": 2048, "fragments": 9}}
    k = fraglib.kinds(files)
    assert k["2 tasks, separate directories"]["files"] == 2
    assert k["2 tasks, separate directories"]["mean_fragments_per_file"] == 4
    assert k["2 tasks, one directory"]["fragments"] == 2
    assert k["4 tasks, one directory, 8x larger files"]["fragments"] == 9
    # every top directory frag.sh makes has a kind of its own
    script = (ROOT / "ci" / "guest" / "scripts" / "frag.sh").read_text()
    for top in ("same", "x", "y", "quad"):
        assert "/mnt/%s$r" % top in script
        assert fraglib.kind("/%s2/f" % top) != top


def test_revision_summary_is_mean_min_max_over_boots():
    runs = [{"summary": {"mean_fragments_per_file": v, "mean_blocks_per_fragment": 10 * v},
             "kinds": {"k": {"mean_fragments_per_file": v, "mean_blocks_per_fragment": 1}}}
            for v in (2.0, 4.0, 3.0)]
    s = fraglib.revision_summary(runs)
    assert s["all"]["mean_fragments_per_file"] == [3.0, 2.0, 4.0]
    assert s["all"]["mean_blocks_per_fragment"] == [30.0, 20.0, 40.0]
    assert s["kinds"]["k"]["mean_blocks_per_fragment"] == [1.0, 1, 1]


def fake_run(kit, monkeypatch, frags):
    """frag's verb with builds, boots and debugfs replaced: revision r's
    boot k (1, 2, ...) leaves one file of frags[r][k-1] fragments."""
    order = []
    booted = {}

    def build(rev, **_):
        return types.SimpleNamespace(commit="c0ffee" + rev * 34, tree="7" * 40,
                                     image="/img/" + rev, image_sha256="5" * 64)

    def run_guest(image, script, disks, **_):
        rev = image.rsplit("/", 1)[1]
        order.append(rev)
        booted[rev] = booted.get(rev, 0) + 1
        open(disks[0], "w").close()
        return types.SimpleNamespace(ok=True)

    def measure(img):
        rev = order[-1]
        n = frags[rev][booted[rev] - 1]
        return {"/same1/f0": {"blocks": 100, "fragments": n}}

    monkeypatch.setattr(cmd_frag, "build", build)
    monkeypatch.setattr(cmd_frag, "run_guest", run_guest)
    monkeypatch.setattr(cmd_frag.guesttests, "fsck", lambda *a, **k: None)
    monkeypatch.setattr(cmd_frag.guesttests, "make_image",
                        lambda path, *a, **k: open(path, "w").close() or path)
    monkeypatch.setattr(cmd_frag.fraglib, "measure", measure)
    monkeypatch.setattr(cmd_frag.fraglib, "layout", lambda img: {"Block size": "1024"})
    monkeypatch.setattr(cmd_frag, "base_archive", lambda: "/x/base-0123456789abcdef.cpio")
    monkeypatch.setattr(cmd_frag, "git", lambda args, **_: "subject of " + args[-1][-1])
    return order


def test_reps_rotate_and_the_record_names_what_ran(kit, monkeypatch, capsys):
    order = fake_run(kit, monkeypatch, {"a": [2, 4, 3], "b": [5, 5, 8]})
    assert cli.main(["frag", "a", "b", "--reps", "3", "--record"]) == 0
    assert order == ["a", "b", "b", "a", "a", "b"]
    recs = list((kit.repo / "records" / "frag").glob("*.json"))
    assert len(recs) == 1
    doc = json.loads(recs[0].read_text())
    assert doc["command"] == "tools/fork frag a b --reps 3 --record"
    assert doc["reps"] == 3 and doc["qemu"] is not None and "commit" in doc["kit"]
    assert len(doc["script_sha256"]) == 64 and doc["image"]["block_size"] == 1024
    # everything that made the figures: the guest's programs by the initramfs
    # key, the kit's code key, QEMU and e2fsprogs, the image's layout
    assert doc["initramfs"] == "base-0123456789abcdef.cpio"
    assert doc["kit"]["key"] and set(doc["tools"]) == {"qemu", "e2fsprogs"}
    assert doc["image"]["superblock"] == {"Block size": "1024"}
    a, b = doc["revisions"]
    assert a["rev"] == "a" and a["image_sha256"] == "5" * 64 and a["commit"].startswith("c0ffee")
    assert [r["summary"]["fragments"] for r in a["runs"]] == [2, 4, 3]
    assert a["over_boots"]["all"]["mean_fragments_per_file"] == [3.0, 2, 4]
    assert b["over_boots"]["all"]["mean_fragments_per_file"] == [6.0, 5, 8]
    # BENCHMARKS.md's directive renders it: every revision, mean [min..max]
    md = "\n".join(docs.d_frag(str(kit.repo), None, recs[0].stem))
    assert "| 3 [2..4] |" in md and "| 6 [5..8] |" in md
    assert "records/frag/%s.json" % recs[0].stem in md
    assert "tools/fork frag a b --reps 3 --record" in md


@pytest.mark.parametrize("argv,words", [
    (["frag", "a", "a"], "named twice"),
    (["frag", "a", "b", "--reps", "0"], "--reps 0"),
])
def test_bad_input_is_one_line(kit, monkeypatch, capsys, argv, words):
    fake_run(kit, monkeypatch, {"a": [1], "b": [1]})
    assert cli.main(argv) != 0
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_lock_table_across_runs_puts_each_vcpu_count_side_by_side():
    """BENCHMARKS.md's lock table at 2, 4 and 8 vCPUs (@@ bench-locks),
    from the committed lockstat runs of the v3 series."""
    runs = ["20261204-161755-lockstat-smp2", "20261204-162113-lockstat-smp4",
            "20261204-162346-lockstat-smp8"]
    lines = docs.d_bench_locks(str(ROOT), None, *runs)
    assert lines[0].startswith("| workload | class | A 2 vCPUs | B 2 vCPUs | A 4 vCPUs")
    row = next(l for l in lines if "s_rsv_window_lock" in l and l.startswith("| seed"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # A takes the filesystem-wide window lock on every seed op, B never
    assert cells[2] != "-" and float(cells[2].split()[0]) > 0.5
    assert all(c == "-" or c.startswith("0 (0)") for c in cells[3::2])
    statfs = next(l for l in lines if "s_lock" in l and l.startswith("| statfs"))
    assert float(statfs.split("|")[3].split()[0]) >= 1.0


def test_lock_table_across_refuses_a_run_without_lockstat():
    with pytest.raises(Exception) as e:
        docs.d_bench_locks(str(ROOT), None, "20261204-154357-icount")
    assert "--lockstat" in str(e.value)


def test_kit_version_names_the_running_kit_not_the_project_repo(kit):
    """bench and frag records name the kit that ran: this checkout, even
    when $FORK_REPO (here the test's scratch repository) is another one."""
    import subprocess
    from forkkit.verify.kernel import kit_version
    mine = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    theirs = subprocess.run(["git", "-C", str(kit.repo), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    assert theirs != mine
    assert kit_version()["commit"] == mine


def test_steps_summary_gives_each_commit_its_cost_per_workload():
    """@@ bench-steps: one row per commit of the --each runs (no
    whole-range row), statfs per filesystem size, and the lock classes whose
    acquisitions per operation change."""
    lines = docs.d_bench_steps(str(ROOT), None, "20261206-184948-each-icount")
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[1:4] == ["statfs 128 groups", "statfs 1024 groups", "statfs 8192 groups"]
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:] if l.startswith("|")]
    assert lines[-1] == ("Runs 20261206-184948: icount mode, 2 vCPUs, TCG, 3 repetitions "
                         "with the A/A control.")
    assert len(rows) == 3 and not any("whole range" in r[0] for r in rows)
    statfs_8192 = float(rows[0][3].split("-")[0].split()[0])
    assert statfs_8192 < 0.01
    assert [r[-1] != "none" for r in rows] == [False, False, True]
    assert "s_lock: 1 -> 3.61e-05" in rows[2][-1]
    with pytest.raises(Exception) as e:
        docs.d_bench_steps(str(ROOT), None, "20261204-154357-icount")
    assert "--each" in str(e.value)


def test_frag_table_is_one_row_per_revision(kit, monkeypatch):
    fake_run(kit, monkeypatch, {"a": [2, 4], "b": [6, 6]})
    assert cli.main(["frag", "a", "b", "--reps", "2", "--record"]) == 0
    run = next((kit.repo / "records" / "frag").glob("*.json")).stem
    lines = docs.d_frag_table(str(kit.repo), None, run)
    assert lines[0] == "| commit | subject | all 1 files | 2 tasks, one directory |"
    assert lines[2].endswith("| 3 [2..4] | 3 [2..4] |")
    assert lines[3].endswith("| 6 [6..6] | 6 [6..6] |") and len(lines) == 4


def test_summaries_refuse_mixed_runs_and_say_what_was_not_measured(tmp_path):
    """One bench-steps table holds one setting; one bench-locks table one
    A and one B; a step without lock statistics says "not measured", a
    one-repetition step has no interval instead of a traceback."""
    from forkkit.verify import benchlib
    doc = json.loads((ROOT / "records" / "bench" / "20261206-184948-each-icount.json")
                     .read_text())
    other = json.loads(json.dumps(doc))
    other["run"]["smp"] = 4
    with pytest.raises(Exception, match="one setting"):
        benchlib.steps_summary([doc, other])
    bare = json.loads(json.dumps(doc))
    for st in bare["steps"]:
        st.pop("locks", None)
        for r in st["stats"]:
            r["ratio_lo"] = r["ratio_hi"] = None
    row = benchlib.steps_summary([bare])[2]
    assert row.endswith("| not measured |") and "[no interval]" in row
    a = json.loads((ROOT / "records" / "bench" / "20261204-161755-lockstat-smp2.json")
                   .read_text())
    b = json.loads(json.dumps(a))
    b["kernels"]["B"]["commit"] = "f" * 40
    with pytest.raises(Exception, match="one A with one B"):
        benchlib.lock_table_across([a, b])
    with pytest.raises(Exception, match="not an A/B run"):
        benchlib.lock_table_across([doc])


def test_steps_summary_keeps_only_the_workloads_named():
    lines = docs.d_bench_steps(str(ROOT), None, "20261206-184948-each-icount", "only=seed")
    assert lines[0] == "| commit | seed | ext2 lock acquisitions per operation that change |"
    with pytest.raises(Exception, match="unknown workload"):
        docs.d_bench_steps(str(ROOT), None, "20261206-184948-each-icount", "only=nodes")


def test_summary_ratios_near_one_keep_three_decimals():
    """%.3g printed an upper bound of 1.0046 as "1", which logs then quoted
    as 1.000: near 1 the summary keeps three decimals, and says which
    points the kit did not judge."""
    lines = docs.d_bench_steps(str(ROOT), None, "20261206-184948-each-icount", "only=seed")
    assert "| 0.999-1.000 [0.998..1.002] |" in lines[2]
    lines = docs.d_bench_steps(str(ROOT), None, "20261206-225824-each-icount", "only=inode")
    assert "| 0.995-1.002 [0.957..1.049] |" in lines[2]
    assert any(l.startswith("Not judged by the kit: inode (too short") for l in lines)


def test_kit_version_is_dirty_for_the_kits_code_alone(tmp_path, monkeypatch):
    """`dirty` says whether the code that ran (tools/, ci/, a new file
    there too) differed from the commit; a record or document the run
    itself changes (fstests --record rewrites tracked records) does not
    make it dirty."""
    import subprocess
    from forkkit.verify import kernel
    top = tmp_path / "checkout"
    for rel in ("tools/forkkit/a.py", "ci/guest/x.sh", "records/r.json", "README.md"):
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("1\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@localhost",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@localhost")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(top)] + cmd, check=True, env=env)
    head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    monkeypatch.setattr(kernel, "KIT_DIR", str(top / "tools" / "forkkit"))
    assert kernel._kit_version() == {"commit": head, "dirty": False}
    (top / "records" / "r.json").write_text("2\n")
    (top / "README.md").write_text("2\n")
    assert kernel._kit_version() == {"commit": head, "dirty": False}
    (top / "ci" / "guest" / "new.sh").write_text("new\n")
    assert kernel._kit_version()["dirty"] is True
    (top / "ci" / "guest" / "new.sh").unlink()
    (top / "tools" / "forkkit" / "a.py").write_text("2\n")
    assert kernel._kit_version()["dirty"] is True
