"""The KVM probe (guest/accel.py) with a fake guest: once per QEMU and
host kernel, TCG when the guest does not answer or nothing is built, one
line that says which."""

import json
import shutil
import types

import pytest

from test_fstests import pipeline, repo, run_main, stores   # noqa: F401 (the fixtures)
from forkkit.core.errors import ForkError
from forkkit.core.progress import Progress
from forkkit.guest import accel
from forkkit.verify import fstests_run as cmd_fstests


@pytest.fixture
def machine(tmp_path, monkeypatch):
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    monkeypatch.setenv("FORK_ACCEL", "auto")
    here = {"qemu": "QEMU emulator version 7.2.22", "host_kernel": "6.1.0-test"}
    monkeypatch.setattr(accel, "machine", lambda: dict(here))
    monkeypatch.setattr(accel.os, "access", lambda path, mode: True)
    store = tmp_path / "kernels"
    store.mkdir()
    boots = []

    def boot(kernel, script, answer):
        def run(k, s, timeout, smp, mem, kvm, label):
            boots.append((k, s, timeout, kvm))
            if answer:
                return types.SimpleNamespace(rc=0, output=[accel.PROBE_LINE], seconds=2.0,
                                             error=None)
            return types.SimpleNamespace(rc=255, output=[], seconds=timeout,
                                         error="guest timed out after %ds" % timeout)
        return run
    return types.SimpleNamespace(store=store, here=here, boots=boots, boot=boot)


def test_tcg_unless_asked_even_where_a_probe_would_answer(machine, monkeypatch, capsys):
    """A tiny guest can answer under KVM on a host whose real guests hang:
    without FORK_ACCEL nothing is probed and the guests run under TCG."""
    (machine.store / "a.bzImage").write_bytes(b"x")
    answers = machine.boot(None, None, True)
    monkeypatch.delenv("FORK_ACCEL")
    assert accel.choose(str(machine.store), answers, Progress("t")) == "tcg"
    assert machine.boots == []
    assert "accelerator: TCG (FORK_ACCEL=auto probes KVM" in capsys.readouterr().err
    monkeypatch.setenv("FORK_ACCEL", "kvm")
    assert accel.choose(str(machine.store), answers, Progress("t")) == "kvm"
    assert machine.boots == []
    monkeypatch.setenv("FORK_ACCEL", "fast")
    with pytest.raises(ForkError, match="FORK_ACCEL=fast: give one of tcg, auto, kvm"):
        accel.choose(str(machine.store), answers, Progress("t"))


def test_no_image_is_tcg_not_probed(machine, capsys):
    assert accel.choose(str(machine.store), machine.boot(None, None, True),
                        Progress("t")) == "tcg"
    assert "accelerator: TCG (KVM not probed: no kernel image built yet)" in \
        capsys.readouterr().err
    assert machine.boots == []


def test_a_hanging_guest_gives_tcg_and_is_probed_once(machine, capsys):
    (machine.store / "big.bzImage").write_bytes(b"x" * 200)
    (machine.store / "small.bzImage").write_bytes(b"x" * 100)
    hang = machine.boot(None, None, False)
    assert accel.choose(str(machine.store), hang, Progress("t")) == "tcg"
    assert accel.choose(str(machine.store), hang, Progress("t")) == "tcg"
    assert len(machine.boots) == 1                       # once per machine
    kernel, script, timeout, kvm = machine.boots[0]
    assert kernel.endswith("/small.bzImage") and kvm and timeout == accel.PROBE_TIMEOUT
    err = capsys.readouterr().err.splitlines()
    assert err[-1].endswith("accelerator: TCG (KVM probe on 6.1.0-test: a guest under "
                            "-accel kvm did not answer in %ds)" % accel.PROBE_TIMEOUT)
    kept = json.load(open(accel.probe_path()))
    assert kept["kvm"] is False and kept["qemu"] == machine.here["qemu"]
    # another QEMU: probed again, and here it answers
    machine.here["qemu"] = "QEMU emulator version 8.2.0"
    assert accel.choose(str(machine.store), machine.boot(None, None, True),
                        Progress("t")) == "kvm"
    assert len(machine.boots) == 2
    assert "accelerator: KVM (KVM probe on 6.1.0-test: a guest under -accel kvm answered" \
        in capsys.readouterr().err


def test_without_dev_kvm_no_guest_boots(machine, monkeypatch):
    (machine.store / "a.bzImage").write_bytes(b"x")
    monkeypatch.setattr(accel.os, "access", lambda path, mode: False)
    assert accel.choose(str(machine.store), machine.boot(None, None, True),
                        Progress("t")) == "tcg"
    assert machine.boots == []
    assert "not accessible" in json.load(open(accel.probe_path()))["why"]


def test_fstests_boots_name_their_accelerator(pipeline, tmp_path, monkeypatch):  # noqa: F811
    """The fstests guests run under what the probe chose and every boot's
    record names it; without a built image that is TCG.  What ran under
    TCG is not reused under KVM: the KVM run is a store of its own, in
    work/ and in the record, named so and with the accelerator in its
    kernel.json, and both tests run again there."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    rec = tmp_path / "rec"
    assert run_main("generic/001", "--record", str(rec)) == 0
    tcg = stores(rec)
    for d in tcg:
        assert [b["accel"] for b in json.loads((d / "boots.json").read_text())] == ["tcg"]
        assert json.loads((d / "kernel.json").read_text())["accel"] == "tcg"
    asked = []
    guest = cmd_fstests.run_guest

    def under(*a, kvm=False, **kw):
        asked.append((kvm, pipeline_tests(a[1])))
        return guest(*a, **kw)

    monkeypatch.setattr(cmd_fstests, "run_guest", under)
    monkeypatch.setattr(accel, "choose_once", lambda store, boot, prog: "kvm")
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 0
    assert asked == [(True, ["generic/001", "generic/002"])] * 2
    kvm = [d for d in stores(rec) if d not in tcg]
    assert len(kvm) == 2 and all(d.name == t.name + "-kvm" for d, t in zip(kvm, tcg))
    for d in kvm:
        assert [b["accel"] for b in json.loads((d / "boots.json").read_text())] == ["kvm"]
        assert json.loads((d / "kernel.json").read_text())["accel"] == "kvm"
        assert sorted(json.loads((d / "tests.json").read_text())) == ["generic/001",
                                                                       "generic/002"]
    for d in tcg:           # as they were
        assert [b["accel"] for b in json.loads((d / "boots.json").read_text())] == ["tcg"]
        assert list(json.loads((d / "tests.json").read_text())) == ["generic/001"]
    # and back under TCG: the TCG stores answer for generic/001, not the KVM ones
    monkeypatch.setattr(accel, "choose_once", lambda store, boot, prog: "tcg")
    asked.clear()
    assert run_main("generic/001", "generic/002", "--record", str(rec)) == 0
    assert asked == [(False, ["generic/002"])] * 2


def pipeline_tests(script):
    """The tests a guest script of fstests.guest_script() asks for."""
    return script.split("fork-tests <<'FORK_EOF'\n", 1)[1].split("\nFORK_EOF")[0].split()


def test_a_record_without_an_accelerator_is_tcg(pipeline, tmp_path, monkeypatch):  # noqa: F811
    """A record made before the kit knew KVM (no accel in kernel.json) is
    read as TCG's: a TCG run resumes from it, a record that names KVM under
    a TCG name is refused."""
    pipeline["outcomes"] = {"distro-7.3.bzImage": {}, "series-7.3.bzImage": {}}
    rec = tmp_path / "rec"
    assert run_main("generic/001", "--record", str(rec)) == 0
    for d in stores(rec):
        meta = json.loads((d / "kernel.json").read_text())
        del meta["accel"]
        (d / "kernel.json").write_text(json.dumps(meta))
    shutil.rmtree(tmp_path / "work")
    before = len(pipeline["boots"])
    assert run_main("generic/001", "--record", str(rec)) == 0
    assert len(pipeline["boots"]) == before             # resumed: nothing ran
    for d in stores(rec):
        meta = json.loads((d / "kernel.json").read_text())
        (d / "kernel.json").write_text(json.dumps(dict(meta, accel="kvm")))
    shutil.rmtree(tmp_path / "work")
    assert run_main("generic/001", "--record", str(rec)) == 1


def test_auto_without_an_image_asks_again_after_a_build(machine, monkeypatch):
    """A check looks up its cache before it builds: with FORK_ACCEL=auto and
    no image to probe with, that answer (TCG) is not kept for the process;
    once a build brought an image the probe runs, and then its answer is."""
    monkeypatch.setattr(accel, "_chosen", {})
    answers = machine.boot(None, None, True)
    assert accel.choose_once(str(machine.store), answers, Progress("t")) == "tcg"
    (machine.store / "a.bzImage").write_bytes(b"x")
    assert accel.choose_once(str(machine.store), answers, Progress("t")) == "kvm"
    assert len(machine.boots) == 1
    assert accel.choose_once(str(machine.store), answers, Progress("t")) == "kvm"
    assert len(machine.boots) == 1
