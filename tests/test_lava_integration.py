"""The kit's check cells through LAVA, on real kernels: opt-in.

FORK_LAVA=1: every smoke cell of the primary series (its base and each
commit) checked by the kit's own QEMU and then again through `lava-run`
(`check --runner lava --force`): the same verdict cell for cell, and each
run through LAVA recorded as such.  Needs lava-dispatcher (`apt-get
install --no-install-recommends lava-dispatcher`) and root, besides what
the integration tests need (the series imported, its images built: the
first run builds them).

FORK_LAVA_SERVER=1: a LAVA server and worker here (`tools/fork lava up`;
`apt-get install --no-install-recommends lava-server lava-dispatcher
postgresql`), the base's smoke cell as a server job with the same verdict
as the kit's own boot, a job's result refused for a cell it is not, and
`tools/fork lava down`.
"""

import json
import os
import re

import pytest

from conftest import fork_real, kver

LAVA = os.environ.get("FORK_LAVA") == "1"
SERVER = os.environ.get("FORK_LAVA_SERVER") == "1"


def need_root():
    if os.geteuid() != 0:
        pytest.fail("LAVA's lava-run and lava-server run as root: run the test as root")


def check_json(tmp_path, name, *args):
    out = tmp_path / (name + ".json")
    proc = fork_real("check", "--json", str(out), *args, timeout=6 * 3600)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, {r["commit"]: r for r in json.loads(out.read_text())}


RUN_CELLS = ("build", "boot", "test", "e2fsck", "counts")


@pytest.mark.skipif(not LAVA, reason="the lava-run test needs FORK_LAVA=1")
def test_smoke_cells_through_lava_run_have_the_kits_verdicts(tmp_path, kernel_trees):
    need_root()
    _, own = check_json(tmp_path, "qemu")
    proc, through = check_json(tmp_path, "lava", "--runner", "lava", "--force")
    assert list(through) == list(own)
    for commit, row in through.items():
        assert {c: row["cells"][c] for c in RUN_CELLS} == \
            {c: own[commit]["cells"][c] for c in RUN_CELLS}, commit
        assert row["runner"] == "lava" and row["runs"][-1]["runner"] == "lava"
        assert row["image_sha256"] == own[commit]["image_sha256"]
        # the job named the cell: the stored image and the kit's code
        job = json.load(open(os.path.join(os.environ.get("FORK_WORKDIR") or
                                          os.path.join(os.path.dirname(os.path.dirname(
                                              os.path.abspath(__file__))), "work"),
                                          row["details"]["boot"] + ".lava", "job.yaml")))
        assert job["metadata"]["fork.image_sha256"] == row["image_sha256"]
        assert job["metadata"]["fork.kit"] == row["kit"]
    assert "through lava-run" in proc.stderr


@pytest.mark.skipif(not SERVER, reason="the LAVA server test needs FORK_LAVA_SERVER=1")
def test_smoke_cell_as_a_server_job(tmp_path, kernel_trees):
    need_root()
    up = fork_real("lava", "up", "--devices", "1", timeout=600)
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        base = "distro/%s" % kver("patches")
        _, own = check_json(tmp_path, "qemu", base)
        proc, through = check_json(tmp_path, "server", base, "--runner", "lava-server",
                                   "--force")
        (commit, row), = through.items()
        assert {c: row["cells"][c] for c in RUN_CELLS} == \
            {c: own[commit]["cells"][c] for c in RUN_CELLS}
        assert row["runner"] == "lava-server"
        m = re.search(r"as LAVA job (\d+) on (\S+)", proc.stderr)
        assert m, proc.stderr[-2000:]
        # that job's result, asked for as another cell, is refused
        from forkkit.core.errors import ForkError
        from forkkit.guest import lavaserver
        cfg = lavaserver.read_config()
        job, records = lavaserver.collect(cfg, m.group(1), {"fork.kit": row["kit"]})
        assert json.loads(job["original_definition"])["metadata"]["fork.image_sha256"] == \
            row["image_sha256"]
        with pytest.raises(ForkError, match="not this cell"):
            lavaserver.collect(cfg, m.group(1), {"fork.kit": "another kit"})
    finally:
        down = fork_real("lava", "down", timeout=600)
    assert down.returncode == 0, down.stderr[-3000:]
    assert "does not answer" in fork_real("lava", "status").stdout
