"""guest/lava.py and guest/lavaserver.py without LAVA: the job and device a
check cell is written as, the device-type template, the job log read back
into a boot result, the identity check, the single initramfs archive, and
check --runner lava with lava-run replaced by a program that writes a
job log (no kernel, no QEMU).  Where LAVA's own packages are installed,
their schemas judge the job and the device too."""

import json
import os
import shlex
import signal
import subprocess
import stat
import time

import pytest

from forkkit import cli
from forkkit.core.errors import ForkError, RunnerError
from forkkit.guest import initramfs, lava, lavaserver, qemu

from test_kit_boot import slot_comes_late
from test_kit_check import fake, rows_of, run  # noqa: F401 - the fixture


def rec(lvl, msg, dt="2026-01-01T00:00:01.000000"):
    """A record as LAVA's logger writes it (yaml, flow style, every scalar
    double-quoted)."""
    def q(v):
        if isinstance(v, dict):
            return "{" + ", ".join("%s: %s" % (q(k), q(x)) for k, x in v.items()) + "}"
        if isinstance(v, bool):
            return '!!bool "%s"' % str(v).lower()
        if isinstance(v, int):
            return '!!int "%d"' % v
        return json.dumps(v)
    return q({"dt": dt, "lvl": lvl, "msg": msg})


def target(line, n=1):
    # LAVA escapes every double quote of the console before it logs it
    return rec("target", line.replace('"', '\\"'), "2026-01-01T00:00:02.%06d" % n)


BOOT = rec("info", "Boot command: /usr/bin/qemu-system-x86_64 -cpu max -kernel "
           "/var/lib/lava/dispatcher/tmp/1/deployimages-x/kernel/%s.bzImage -initrd "
           "/var/lib/lava/dispatcher/tmp/1/deployimages-x/ramdisk/initrd-7-1.cpio" % ("a" * 64))


QEMU = "QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7+deb12u13)"


def qemu_said(line=QEMU):
    """The records of the job's fork_qemu_version command on the worker, as
    LAVA's run_cmd() logs them (the output through a pty: CR LF)."""
    return [rec("info", "Running user command 'fork_qemu_version'"),
            rec("debug", "Calling: 'nice' 'qemu-system-x86_64' '--version'"),
            rec("debug", ">> %s\r" % line),
            rec("debug", ">> Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project "
                "developers\r"),
            rec("debug", "Returned 0 in 0 seconds")]


def job_log(console, job_result="pass", error=None, extra=(), kernel_sha="a" * 64, qemu=QEMU,
            error_type="Test", boot=True):
    lines = [rec("info", "lava-dispatcher, installed at version: 2023.01"),
             rec("results", {"case": "file-download", "definition": "lava",
                             "extra": {"label": "kernel", "sha256sum": kernel_sha}})]
    lines += qemu_said(qemu) if qemu else []
    lines += [BOOT] if boot else []
    lines += [target(l, i) for i, l in enumerate(console)]
    lines += list(extra)
    lines.append(rec("input", "poweroff\n", "2026-01-01T00:00:09.000000"))
    lines.append(target("poweroff", 999999).replace("00:00:02.999999", "00:00:09.100000"))
    res = {"case": "job", "definition": "lava", "result": job_result}
    if error:
        res.update(error_msg=error, error_type=error_type)
    lines.append(rec("results", res))
    return "\n".join(lines) + "\n"


def test_log_records_are_read_back_with_every_escape():
    text = "\n".join([
        rec("target", 'quote \\" tab\t esc \x1b bell \x07 \u00e9 \u2028 back \\\\'),
        '{"dt": "x", "lvl": "results", "msg": {"case": "c", "level": !!int "3", '
        '"ok": !!bool "true", "none": !!null "", "f": !!float "0.5", "l": ["a", "b"]}}',
        "- " + rec("info", "a server log line"),
        "Traceback (most recent call last): not a record",
        '{"dt": "x", "lvl": "info", "msg": "unterminated',
    ])
    records = lava.parse_records(text)
    assert [r["lvl"] for r in records] == ["target", "results", "info"]
    assert records[1]["msg"] == {"case": "c", "level": 3, "ok": True, "none": None, "f": 0.5,
                                 "l": ["a", "b"]}
    assert records[2]["msg"] == "a server log line"
    try:
        import yaml
    except ImportError:
        return
    # where PyYAML is installed: each record as LAVA itself would dump it
    data = {"dt": "2026", "lvl": "target",
            "msg": 'quote \\" tab\t esc \x1b bell \x07 \u00e9 \u2028 \U0001f600 back \\\\'}
    line = yaml.dump(data, default_flow_style=True, default_style='"', width=10**6)[:-1]
    assert lava.parse_records(line) == [data]
    res = {"dt": "1", "lvl": "results", "msg": {"n": 3, "ok": True, "x": None, "f": 0.25,
                                                 "extra": {"a": ["b", 1]}}}
    line = yaml.dump(res, default_flow_style=True, default_style='"', width=10**6)[:-1]
    assert lava.parse_records(line) == [res]


def test_console_is_the_target_lines_unescaped_up_to_lava_input(tmp_path):
    console = ["[    0.000000] Linux version 9.9", 'FORK-GUEST-START 9.9 cpus=2',
               'echo "quoted" output', "FORK-EXIT-STATUS: 0", "[    3.0] reboot: Restarting system"]
    records = lava.parse_records(job_log(console))
    assert lava.console_lines(records) == console          # no "poweroff" of LAVA's
    log = str(tmp_path / "console.log")
    res = lava.boot_result(records, log, "job.yaml", 60, 1.5)
    assert res.rc == 0 and res.error is None and res.problems == []
    assert res.output == ['echo "quoted" output']
    first = open(log).readline()
    # the console's first line names the image and the initramfs as
    # qemu.run_guest()'s does (verify/check.py's booted_here() reads it)
    assert first.startswith("# /usr/bin/qemu-system-x86_64 ")
    assert ("/%s.bzImage " % ("a" * 64)) in first and "/initrd-7-1.cpio " in first


def test_panic_and_timeout_and_no_exit_status(tmp_path):
    log = str(tmp_path / "c.log")
    panic = ["FORK-GUEST-START 9.9 cpus=2", "[ 2.0] Kernel panic - not syncing: sysrq"]
    res = lava.boot_result(lava.parse_records(job_log(panic, "fail", "Connection closed")),
                           log, "job.yaml", 60, 3.0)
    # LAVA's job result is beside the point: the console fails the boot
    assert res.rc == 255 and not res.ok
    assert res.problems == ["[ 2.0] Kernel panic - not syncing: sysrq"]
    assert "guest stopped without reporting an exit status" in res.error
    assert "Connection closed" in res.error

    hang = ["FORK-GUEST-START 9.9 cpus=2", "working"]
    extra = [rec("exception", "lava-test-monitor timed out after 60 seconds")]
    res = lava.boot_result(lava.parse_records(job_log(hang, "fail", "lava-test-monitor timed "
                                                      "out after 60 seconds", extra)),
                           log, "job.yaml", 60, 61.0)
    assert res.error.startswith("guest timed out after 60s")
    # LAVA says pass, the guest test said 3: the guest's status counts
    res = lava.boot_result(lava.parse_records(job_log(["FORK-GUEST-START", "FORK-EXIT-STATUS: 3"])),
                           log, "job.yaml", 60, 1.0)
    assert res.rc == 3 and res.lava["result"] == "pass" and not res.ok
    # an exit status 0, then a hang on the way to reboot: a timeout, not a pass
    late = ["FORK-GUEST-START 9.9 cpus=2", "FORK-EXIT-STATUS: 0", "stuck in reboot"]
    res = lava.boot_result(lava.parse_records(job_log(late, "fail", "lava-test-monitor timed "
                                                      "out after 60 seconds", extra)),
                           log, "job.yaml", 60, 61.0)
    assert res.error and "timed out" in res.error and not res.ok


def test_a_log_that_ends_without_the_jobs_result_is_an_error(tmp_path):
    """lava-run killed from outside (or a worker gone) in the middle of a
    guest's run: its log stops after some console lines, with no job
    result.  The guest did not end and LAVA did not end the job: no
    verdict on the kernel (the kit's QEMU runner never sees this case)."""
    log = str(tmp_path / "c.log")
    text = job_log(["FORK-GUEST-START 9.9 cpus=2", "run fstests generic/002 at 2026"])
    cut = text[:text.index('"lvl": "input"')]
    cut = cut[:cut.rindex("\n") + 1]
    with pytest.raises(RunnerError) as exc:
        lava.boot_result(lava.parse_records(cut), log, "job.yaml", 60, 3.0)
    assert "without LAVA's result of the job" in str(exc.value)
    # a console that shows the guest's end or a kernel report is judged
    done = job_log(["FORK-GUEST-START 9.9 cpus=2", "FORK-EXIT-STATUS: 0"])
    done = done[:done.index('"lvl": "input"')]
    done = done[:done.rindex("\n") + 1]
    assert lava.boot_result(lava.parse_records(done), log, "job.yaml", 60, 3.0).rc == 0
    oops = job_log(["FORK-GUEST-START 9.9 cpus=2", "[ 2.0] Kernel panic - not syncing: x"])
    oops = oops[:oops.index('"lvl": "input"')]
    oops = oops[:oops.rindex("\n") + 1]
    res = lava.boot_result(lava.parse_records(oops), log, "job.yaml", 60, 3.0)
    assert not res.ok and res.problems


def test_no_qemu_started_is_an_error_not_a_verdict(tmp_path):
    text = rec("results", {"case": "job", "definition": "lava", "result": "fail",
                           "error_type": "Infrastructure", "error_msg": "Unable to download"})
    with pytest.raises(RunnerError, match="LAVA did not start QEMU .Infrastructure: Unable to "
                                          "download"):
        lava.boot_result(lava.parse_records(text), str(tmp_path / "c.log"), "j", 60, 1.0)
    # a deploy that failed (lava-run 2023.01's records of a wrong sha256)
    text = job_log([], "fail", "sha256 for 'file:///w/k.bzImage' does not match.", qemu=None,
                   error_type="Job", boot=False)
    with pytest.raises(RunnerError, match=r"^LAVA did not start QEMU \(Job: sha256 for "
                                          r"'file:///w/k.bzImage' does not match.\); see j$"):
        lava.boot_result(lava.parse_records(text), str(tmp_path / "c.log"), "j", 60, 1.0)


QEMU_FAILED = "qemu-system-x86_64: -drive file=/w/images/d.img,format=raw,if=virtio: Could " \
    "not open '/w/images/d.img': No such file or directory"


@pytest.mark.parametrize("console, error_type, error, killed, says", [
    # QEMU started and stopped at once: no kernel ran
    ([QEMU_FAILED], "Infrastructure", "Connection closed", False,
     r"QEMU started but the console shows no kernel \(LAVA: Infrastructure: Connection "
     r"closed; last console line: qemu-system-x86_64: -drive"),
    # nothing at all in the console, LAVA stopped the job on its boot timeout
    ([], "LAVATimeout", "auto-login-action timed out after 120 seconds", True,
     r"QEMU started but the console shows no kernel \(LAVA: LAVATimeout: "),
    # the kernel ran, then LAVA failed on its own (a bug of the dispatcher, a
    # job canceled by someone): no exit status, no kernel report
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"], "Bug",
     "'NoneType' object has no attribute 'sendline'", False,
     r"LAVA ended the job before the guest's exit status, on its own error \(LAVA: Bug: "),
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2"], "Canceled",
     "Canceled", False, r"on its own error \(LAVA: Canceled: Canceled\), with no kernel "
     r"report in the console"),
])
def test_lava_failing_is_an_error_of_the_runner(tmp_path, console, error_type, error, killed,
                                                 says):
    """A job in which LAVA failed, not the kernel, gives no verdict: a
    RunnerError (check records it as an error of the runner)."""
    records = lava.parse_records(job_log(console, "fail", error, error_type=error_type))
    with pytest.raises(RunnerError, match=says):
        lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0, killed=killed)


@pytest.mark.parametrize("console, error_type, killed, canceled", [
    # QEMU exits when the kernel panics (panic=-1, -no-reboot): LAVA calls
    # the closed connection an infrastructure error; the panic is the kernel's
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2",
      "[    2.000000] Kernel panic - not syncing: Fatal exception"], "Infrastructure", False,
     False),
    # a silent reset (triple fault): QEMU exits, no report, LAVA: Infrastructure
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"],
     "Infrastructure", False, False),
    # a hang the kit's timeout ended once the guest had its time (89 s of 60:
    # LAVA's last record, "late"), which the kit's own runner fails as well
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"],
     "Canceled", True, False),
    # an exit status 3, then a job canceled on the server: the guest's verdict stands
    (["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "FORK-EXIT-STATUS: 3"],
     "Canceled", False, True),
    # a report, then a bug of LAVA's: the report fails the boot
    (["[    0.000000] Linux version 9.9", "[    1.0] BUG: unable to handle page fault"],
     "Bug", False, True),
])
def test_a_kernel_that_ran_and_failed_is_judged_whatever_lava_says(tmp_path, console,
                                                                  error_type, killed, canceled):
    late = [rec("info", "Canceling the job", "2026-01-01T00:01:30.000000")]
    records = lava.parse_records(job_log(console, "fail", "Connection closed",
                                         late if killed else (), error_type=error_type))
    res = lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0, killed=killed,
                           canceled=canceled)
    assert not res.ok


def test_only_a_timed_out_record_of_the_guests_run_is_a_timeout(tmp_path):
    """A download LAVA retried after it "timed out", before QEMU started,
    is no timeout of the guest: a later error of LAVA's own (a bug, the
    kernel running, no exit status, no report) stays an error of the
    runner, not the kernel's timeout.  One after the Boot command is."""
    running = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"]
    text = job_log(running, "fail", "'NoneType' object has no attribute 'sendline'",
                   error_type="Bug")
    lines = text.splitlines()
    early = list(lines)
    early.insert(1, rec("warning", "download of kernel timed out, retrying"))
    records = lava.parse_records("\n".join(early))
    assert not lava.timed_out(records)
    with pytest.raises(RunnerError, match="on its own error"):
        lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0)
    late = list(lines)
    late.insert(-3, rec("exception", "lava-test-monitor timed out after 60 seconds"))
    records = lava.parse_records("\n".join(late))
    assert lava.timed_out(records)
    res = lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0)
    assert res.error.startswith("guest timed out after 60s")


def test_a_console_with_an_exit_status_or_a_report_is_judged(tmp_path):
    """A console that shows the guest's exit status or a kernel report is
    the kernel's to judge, even without a banner or a printk time stamp."""
    for console in (["BUG: kernel NULL pointer dereference, address: 0"],
                    ["FORK-EXIT-STATUS: 3"]):
        records = lava.parse_records(job_log(console, "fail", "Connection closed",
                                             error_type="Infrastructure"))
        res = lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0)
        assert not res.ok and (res.problems or res.rc == 3)


def test_a_server_job_canceled_not_by_the_kit_is_an_error(tmp_path):
    console = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START 9.9 cpus=2", "working"]
    records = lava.parse_records(job_log(console, "fail", "Connection closed",
                                         error_type="Infrastructure"))
    with pytest.raises(RunnerError, match="on a cancel not the kit's"):
        lava.boot_result(records, str(tmp_path / "c.log"), "j", 60, 1.0, canceled=True)


def cell(tmp_path, disks=("d.img",), append="kasan_multi_shot acpi=noirq", kvm=False):
    kernel = tmp_path / ("%s.bzImage" % ("b" * 64))
    kernel.write_bytes(b"kernel")
    initrd = tmp_path / "initrd.cpio"
    initrd.write_bytes(b"initrd")
    paths = []
    for d in disks:
        (tmp_path / d).write_bytes(b"\0" * 1024)
        paths.append(str(tmp_path / d))
    ctx = lava.context(paths, 2, "2048", kvm, append, "writethrough")
    meta = lava.identity("smoke", "k" * 16, "kit123", "kasan", image_sha256="b" * 64,
                         qemu=QEMU)
    return lava.job_definition("fork check x", str(kernel), str(initrd), ctx, 900, meta,
                               "smoke"), ctx, str(kernel), str(initrd), paths


def test_job_names_the_cell_and_its_artifacts(tmp_path):
    import hashlib
    job, ctx, kernel, initrd, disks = cell(tmp_path, ("root.qcow2", "test.img"))
    assert job["metadata"] == {"fork.image_sha256": "b" * 64, "fork.test": "smoke",
                               "fork.test_key": "k" * 16, "fork.kit": "kit123",
                               "fork.flavour": "kasan", "fork.qemu": QEMU}
    images = job["actions"][0]["deploy"]["images"]
    assert images["kernel"]["url"] == "file://" + kernel
    assert images["kernel"]["sha256sum"] == hashlib.sha256(b"kernel").hexdigest()
    assert images["ramdisk"]["sha256sum"] == hashlib.sha256(b"initrd").hexdigest()
    # the disks are QEMU arguments, not deploy images (LAVA would copy them)
    assert set(images) == {"kernel", "ramdisk"}
    assert "-drive file=%s,format=qcow2,if=virtio,cache=writethrough" % disks[0] \
        in ctx["extra_options"]
    assert "-drive file=%s,format=raw,if=virtio,cache=writethrough" % disks[1] \
        in ctx["extra_options"]
    assert job["timeouts"]["action"] == {"seconds": 900}
    # the worker's QEMU says its version in the log, just before the boot,
    # through the device's user command
    assert [list(a)[0] for a in job["actions"]] == ["deploy", "command", "boot", "test"]
    assert job["actions"][1]["command"]["name"] == "fork_qemu_version"
    assert lava.device_dict(ctx)["commands"] == {
        "users": {"fork_qemu_version": {"do": "qemu-system-x86_64 --version"}}}
    assert lava.device_dict(ctx)["actions"]["boot"]["methods"]["qemu"]["parameters"][
        "command"] == "qemu-system-x86_64"
    mon = job["actions"][3]["test"]["monitors"][0]
    assert (mon["start"], mon["end"]) == ("FORK-GUEST-START", "reboot: Restarting system")
    import re
    for status, verdict in (("0", "pass"), ("1", "fail"), ("255", "fail"), ("12", "fail")):
        m = re.search(mon["pattern"], "FORK-EXIT-STATUS: %s" % status)
        assert mon["fixupdict"][m.group("result")] == verdict
    # the text LAVA reads (YAML) is JSON, which the kit reads back
    assert json.loads(lava.dump(job)) == job
    try:
        from lava_common.schemas import validate
        from lava_common.schemas.device import validate as validate_device
    except ImportError:
        return
    validate(json.loads(lava.dump(job)), strict=True)
    validate_device(lava.device_dict(ctx))


def lava_command(device, job):
    """The QEMU command line the dispatcher builds from a device and a job
    (lava_dispatcher/actions/boot/qemu.py): command, options, extra, then
    each image's image_arg; LAVA joins it with spaces and splits it again."""
    p = device["actions"]["boot"]["methods"]["qemu"]["parameters"]
    words = [p["command"]] + p["options"] + p["extra"]
    for label, img in job["actions"][0]["deploy"]["images"].items():
        words.append(img["image_arg"].replace("{%s}" % label, img["url"][len("file://"):]))
    return shlex.split(" ".join(words))


def pairs(cmd):
    """A QEMU command line as a sorted list of (option, value) pairs."""
    out, i = [], 1
    while i < len(cmd):
        if i + 1 < len(cmd) and not cmd[i + 1].startswith("-"):
            out.append((cmd[i], cmd[i + 1]))
            i += 2
        else:
            out.append((cmd[i], None))
            i += 1
    return sorted(out)


@pytest.mark.parametrize("kvm", [False, True])
def test_device_boots_as_the_kit_boots(tmp_path, monkeypatch, kvm):
    """The QEMU that LAVA starts for a cell gets the arguments the kit's own
    runner gives it (qemu.qemu_cmd()), in another order."""
    monkeypatch.setattr(qemu, "qemu_binary", lambda: "qemu-system-x86_64")
    job, ctx, kernel, initrd, disks = cell(tmp_path, kvm=kvm)
    ours = qemu.qemu_cmd(kernel, initrd, disks, 2, "2048", kvm, "kasan_multi_shot acpi=noirq",
                         cache="writethrough")
    theirs = lava_command(lava.device_dict(ctx), job)
    assert theirs[0] == "qemu-system-x86_64"
    assert pairs(theirs) == pairs(ours)


def test_template_renders_to_the_device(tmp_path):
    """The server's device-type template, rendered with a job's context, is
    the device lava-run is given for that job."""
    _, ctx, _, _, _ = cell(tmp_path, ("a.img", "b.img"))
    template = lava.device_template()
    assert lava.render_template(template, ctx) == lava.device_dict(ctx)
    try:
        import jinja2
    except ImportError:
        return
    env = jinja2.Environment()
    assert json.loads(env.from_string(template).render(**ctx)) == lava.device_dict(ctx)
    # without a job (the scheduler renders every device so) it is valid too
    assert json.loads(env.from_string(template).render())["actions"]["boot"]["methods"][
        "qemu"]["parameters"]["extra"] == []


def test_paths_lava_cannot_pass_are_refused(tmp_path):
    for name in ("a b.img", "a#b.img", "a%20b.img"):
        (tmp_path / name).write_bytes(b"x")
        with pytest.raises(ForkError, match="cannot be passed to QEMU through LAVA"):
            lava.context([str(tmp_path / name)], 2, "2048", False, "")
    with pytest.raises(ForkError, match="does not exist"):
        lava.context([str(tmp_path / "missing.img")], 2, "2048", False, "")
    with pytest.raises(ForkError, match="a quote"):
        lava.context([], 2, "2048", False, 'x="y"')


def test_identity_check_refuses_another_cell():
    meta = lava.identity("smoke", "k" * 16, "kit123", "base", image_sha256="b" * 64)
    definition = lava.dump({"job_name": "x", "metadata": meta})
    records = lava.parse_records(job_log([], kernel_sha="b" * 64))
    assert lava.check_identity(definition, meta, records)["metadata"] == meta
    other = dict(meta, **{"fork.kit": "kit999"})
    with pytest.raises(ForkError, match=r"not this cell: its metadata says fork.kit=kit123 "
                                        r"\(expected kit999\)"):
        lava.check_identity(definition, other, records)
    with pytest.raises(ForkError, match="fork.flavour=missing"):
        lava.check_identity(lava.dump({"metadata": {}}), meta)
    # the right metadata on a job that deployed another kernel
    with pytest.raises(ForkError, match="deployed kernel a{64}, not the image b{64}"):
        lava.check_identity(definition, meta, lava.parse_records(job_log([])))
    with pytest.raises(ForkError, match="not JSON"):
        lava.check_identity("job_name: x\n", meta)


def test_single_archive_has_one_trailer_and_the_command(tmp_path):
    c = initramfs.Cpio()
    c.dir("bin")
    c.file("init", b"#!/bin/sh\n")
    c.file("bin/odd", b"abc")        # a size that needs padding
    base = tmp_path / "base.cpio"
    base.write_bytes(c.bytes())
    out = lava.single_archive(str(base), "#!/bin/sh\necho hi\n", str(tmp_path / "one.cpio"))
    data = open(out, "rb").read()
    assert lava.cpio_names(data) == ["bin", "init", "bin/odd", "fork/cmd", "TRAILER!!!"]
    assert data.count(b"TRAILER!!!") == 1 and len(data) % 4 == 0
    assert b"echo hi" in data
    (tmp_path / "bad.cpio").write_bytes(b"not an archive")
    with pytest.raises(ForkError, match="not a newc archive"):
        lava.single_archive(str(tmp_path / "bad.cpio"), "x", str(tmp_path / "x.cpio"))


def small_base(tmp_path, monkeypatch):
    """A base initramfs of one file instead of busybox and ci/guest."""
    c = initramfs.Cpio()
    c.file("init", b"#!/bin/sh\n")
    base = tmp_path / "base.cpio"
    base.write_bytes(c.bytes())
    monkeypatch.setattr(initramfs, "base_archive", lambda extra_files=None, log=None: str(base))


FAKE_LAVA_RUN = """#!/bin/sh
# a lava-run that writes a job log: the job file must be the kit's, and
# the guest slot must be held while it runs
for a; do job=$a; done
grep -q '"fork.kit"' "$job" || { echo "no identity in $job" >&2; exit 2; }
if flock -n "$SLOT" true; then echo "guest slot not held" >&2; exit 3; fi
cat "$LOG"
"""


def canned_lava_run(kit, tmp_path, monkeypatch, console):
    """FAKE_LAVA_RUN as the kit's lava-run, giving a job log of `console`
    for a kernel of the test's own (returned), one guest slot."""
    prog = tmp_path / "lava-run"
    prog.write_text(FAKE_LAVA_RUN)
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    kernel = tmp_path / "k.bzImage"
    kernel.write_bytes(b"k")
    log = tmp_path / "canned.log"
    log.write_text(job_log(console, kernel_sha=lava.sha256_file(kernel)))
    monkeypatch.setenv("LOG", str(log))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")
    monkeypatch.setenv("SLOT", str(kit.work / "locks" / "guest.lock"))
    monkeypatch.setattr(lava, "lava_run_binary", lambda: str(prog))
    small_base(tmp_path, monkeypatch)
    return kernel


def test_lava_runner_takes_a_slot_and_returns_the_guests_result(kit, tmp_path, monkeypatch):
    kernel = canned_lava_run(kit, tmp_path, monkeypatch, [
        "FORK-GUEST-START 9.9", "RESULT prog=x a=1", "FORK-EXIT-STATUS: 0",
        "reboot: Restarting system"])
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * 512)
    res = lava.run_guest_lava(str(kernel), "true", [str(disk)], timeout=30,
                              log=str(tmp_path / "c.log"), meta={"fork.kit": "x"}, test="smoke")
    assert (res.rc, res.error, res.output) == (0, None, ["RESULT prog=x a=1"])
    job = json.load(open(res.lava_job))
    assert job["metadata"] == {"fork.kit": "x", "fork.image_sha256": lava.sha256_file(kernel)}
    # the initramfs the job named was the runner's own and is gone
    assert not os.path.exists(job["actions"][0]["deploy"]["images"]["ramdisk"]["url"][7:])


def test_a_lava_jobs_time_starts_once_it_holds_its_slot(kit, tmp_path, monkeypatch):
    """The wait for a guest slot is no part of the job's time (the time
    LAVA adds per job is read from it)."""
    kernel = canned_lava_run(kit, tmp_path, monkeypatch, [
        "FORK-GUEST-START 9.9", "FORK-EXIT-STATUS: 0", "reboot: Restarting system"])
    slot_comes_late(lava, monkeypatch)
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * 512)
    res = lava.run_guest_lava(str(kernel), "true", [str(disk)], timeout=30,
                              log=str(tmp_path / "c.log"), meta={"fork.kit": "x"}, test="smoke")
    assert res.rc == 0 and 0 <= res.seconds < 1000, res.seconds


def test_what_a_killed_lava_run_leaves_running_is_ended(kit, tmp_path, monkeypatch):
    """lava-run killed from outside leaves its QEMU (here a sleep in its
    process group) running on the cell's disks: it is ended before the
    kit reads them, and the job is an error of the runner."""
    prog = tmp_path / "lava-run"
    prog.write_text("#!/bin/sh\nsleep 300 &\necho $! > \"$PIDS\"\nhead -c 900 \"$LOG\"\n"
                    "kill -9 $$\n")
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    kernel = tmp_path / "k.bzImage"
    kernel.write_bytes(b"k")
    log = tmp_path / "canned.log"
    log.write_text(job_log(["FORK-GUEST-START 9.9", "working"],
                           kernel_sha=lava.sha256_file(kernel)))
    pids = tmp_path / "pids"
    monkeypatch.setenv("LOG", str(log))
    monkeypatch.setenv("PIDS", str(pids))
    monkeypatch.setenv("FORK_GUEST_SLOTS", "1")
    monkeypatch.setattr(lava, "lava_run_binary", lambda: str(prog))
    small_base(tmp_path, monkeypatch)
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * 512)
    with pytest.raises(RunnerError):
        lava.run_guest_lava(str(kernel), "true", [str(disk)], timeout=30,
                            log=str(tmp_path / "c.log"), meta={"fork.kit": "x"}, test="smoke")
    pid = int(pids.read_text())
    for _ in range(100):
        try:
            with open("/proc/%d/stat" % pid) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the killed lava-run's QEMU still runs")


def test_check_runner_lava_gives_the_kits_verdict_and_names_the_runner(fake, capsys,
                                                                      monkeypatch):
    """check --runner lava: the guest boots through guest/lava.py with the
    cell's identity, the cells are judged as the kit's own boots are, and
    the record says which runner booted each run."""
    asked = []

    def run_guest_lava(kernel, script, disks=(), meta=None, test=None, **kw):
        asked.append((meta, test))
        return kernel_run_guest(kernel, script, disks, **kw)

    from forkkit.verify import kernel
    kernel_run_guest = kernel.run_guest         # the fixture's fake boot
    monkeypatch.setattr(kernel, "run_guest", lambda *a, **kw: pytest.fail("qemu runner used"))
    monkeypatch.setattr(lava, "run_guest_lava", run_guest_lava)
    fake.fail["boot"].add(fake.commits[1])
    rc, out = run(fake, capsys, "--runner", "lava")
    assert rc == 1
    rows = rows_of(out)
    assert rows[1].split()[-5:-3] == ["FAIL", "FAIL"] and rows[2].split()[-6:-1] == ["pass"] * 5
    meta, test = asked[0]
    from forkkit.guest import guesttests
    assert test == "smoke"
    assert meta == {"fork.test": "smoke", "fork.test_key": guesttests.test_key("smoke"),
                    "fork.kit": kernel.kit_key(), "fork.flavour": "base",
                    "fork.qemu": kernel.tool_versions()["qemu"]}
    tree = fake.rev(fake.commits[2] + "^{tree}")
    row = kernel.cached(tree, "base", "smoke", runner="lava")
    assert row["runner"] == "lava" and row["runs"][-1]["runner"] == "lava"
    assert kernel.cached(tree, "base", "smoke") is None      # no answer for the kit's QEMU
    with pytest.raises(SystemExit):
        cli.main(["check", "--runner", "nope"])


def test_server_runner_refuses_a_job_of_another_cell(tmp_path, monkeypatch, kit):
    """run_guest_server(): a job whose definition on the server does not
    carry the cell's identity is refused, and nothing is returned."""
    kernel = server(tmp_path, monkeypatch)
    log = job_log(["FORK-GUEST-START", "FORK-EXIT-STATUS: 0"],
                  kernel_sha=lava.sha256_file(kernel))
    # the server holds another cell
    fake_api(monkeypatch, log, meta_edit={"fork.test_key": "edited"})
    with pytest.raises(ForkError, match=r"not this cell: its metadata says "
                                        r"fork.test_key=edited \(expected k1\)"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30,
                                    log=str(tmp_path / "c.log"),
                                    meta={"fork.test_key": "k1"}, test="smoke")
    fake_api(monkeypatch, log)
    res = lavaserver.run_guest_server(kernel, "true", [], timeout=30,
                                      log=str(tmp_path / "c2.log"),
                                      meta={"fork.test_key": "k1"}, test="smoke")
    assert res.rc == 0 and res.error is None and res.lava_server_job.endswith(" 7")


def server(tmp_path, monkeypatch, url="http://127.0.0.1:1/"):
    """work/lava/server.json of a server at `url`, a base initramfs of one
    file and a kernel: what run_guest_server() needs besides the server."""
    small_base(tmp_path, monkeypatch)
    os.makedirs(os.path.dirname(lavaserver.config_path()), exist_ok=True)
    with open(lavaserver.config_path(), "w") as fh:
        json.dump({"url": url, "token": "t"}, fh)
    kernel = tmp_path / "k.bzImage"
    kernel.write_bytes(b"k")
    return str(kernel)


def fake_api(monkeypatch, log, detail=None, meta_edit=None):
    """The server's REST API: it takes the job (id 7), shows it Finished
    with `detail` and serves `log` as its log."""
    served = {}

    def api(cfg_, path, data=None, timeout=60):
        if path == "jobs/":
            served["definition"] = data["definition"]
            return {"job_ids": [7]}
        if path == "jobs/7/logs/":
            return log
        definition = served["definition"]
        if meta_edit:
            edited = json.loads(definition)
            edited["metadata"].update(meta_edit)
            definition = json.dumps(edited)
        return dict({"state": "Finished", "health": "Complete",
                     "original_definition": definition}, **(detail or {}))

    monkeypatch.setattr(lavaserver, "api", api)
    return served


def test_a_server_that_does_not_answer_is_an_error_of_the_runner(tmp_path, monkeypatch, kit):
    """Port 1 of the loopback: nothing listens.  Not a verdict, not a
    refusal: a RunnerError (the check records an error of the runner)."""
    kernel = server(tmp_path, monkeypatch)
    with pytest.raises(RunnerError, match=r"LAVA server http://127.0.0.1:1/api/v0.2/jobs/ "
                                          r"does not answer"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30, log=str(tmp_path / "c.log"),
                                    meta={"fork.test_key": "k1"}, test="smoke")


def test_an_incomplete_server_job_that_booted_nothing_is_an_error(tmp_path, monkeypatch, kit):
    """A job the server ends Incomplete on its deploy: its metadata is the
    cell's, it deployed no kernel and started no QEMU.  An error of the
    runner, not a refusal ("deployed kernel (none)") nor a verdict."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    fake_api(monkeypatch, job_log([], "fail", "Unable to download: connection refused",
                                  qemu=None, error_type="Infrastructure", boot=False),
             {"health": "Incomplete"})
    with pytest.raises(RunnerError, match=r"LAVA did not start QEMU \(Infrastructure: Unable "
                                          r"to download"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30, log=str(tmp_path / "c.log"),
                                    meta={"fork.test_key": "k1"}, test="smoke")
    # a job canceled on the server, not by the kit, while the guest ran
    fake_api(monkeypatch, job_log(["[    0.000000] Linux version 9.9", "FORK-GUEST-START"],
                                  "fail", "Connection closed", error_type="Infrastructure",
                                  kernel_sha=lava.sha256_file(kernel)),
             {"health": "Canceled"})
    with pytest.raises(RunnerError, match="on a cancel not the kit's"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30, log=str(tmp_path / "c.log"),
                                    meta={"fork.test_key": "k1"}, test="smoke")


def test_a_result_from_a_worker_with_another_qemu_is_refused(tmp_path, monkeypatch, kit):
    """The worker's QEMU, as the job's fork_qemu_version command printed it
    there, must be the QEMU the kit's record names for the cell (the job's
    "fork.qemu"); any other, or none from a job that booted, is refused in
    one line, and nothing is returned to record."""
    kernel = server(tmp_path, monkeypatch, "http://127.0.0.1:8000/")
    ksha = lava.sha256_file(kernel)
    ran = ["[    0.000000] Linux version 9.9", "FORK-GUEST-START", "FORK-EXIT-STATUS: 0"]
    meta = {"fork.test_key": "k1", "fork.qemu": QEMU}
    other = "QEMU emulator version 8.2.1 (Debian 1:8.2.1+ds-1)"
    fake_api(monkeypatch, job_log(ran, kernel_sha=ksha, qemu=other))
    with pytest.raises(ForkError, match=r"^the LAVA worker booted the cell with 'QEMU emulator "
                                        r"version 8.2.1 \(Debian 1:8.2.1\+ds-1\)', not with "
                                        r"'QEMU emulator version 7.2.15 .*', which the kit's "
                                        r"record names: its result is refused \(install "
                                        r"the same qemu-system-x86"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30, log=str(tmp_path / "c.log"),
                                    meta=meta, test="smoke")
    fake_api(monkeypatch, job_log(ran, kernel_sha=ksha, qemu=None))
    with pytest.raises(ForkError, match="a QEMU that did not say its version .a device without "
                                        "the kit's fork_qemu_version command"):
        lavaserver.run_guest_server(kernel, "true", [], timeout=30, log=str(tmp_path / "c.log"),
                                    meta=meta, test="smoke")
    # the same QEMU: the result is the guest's
    fake_api(monkeypatch, job_log(ran, kernel_sha=ksha))
    res = lavaserver.run_guest_server(kernel, "true", [], timeout=30,
                                      log=str(tmp_path / "c.log"), meta=meta, test="smoke")
    assert res.rc == 0 and res.error is None
    assert json.load(open(res.lava_job))["metadata"]["fork.qemu"] == QEMU


def test_a_lava_verdict_and_a_qemu_verdict_never_answer_each_other(tmp_path, monkeypatch):
    """The runner is part of the check cache key (the kit's own QEMU keeps
    its key) and of what a record must say to count."""
    from forkkit.verify import kernel
    monkeypatch.setattr(kernel, "fragments_key", lambda flavour: "f")
    monkeypatch.setattr(kernel.guesttests, "test_key", lambda test: "t")
    monkeypatch.setattr(kernel, "kit_key", lambda: "k")
    monkeypatch.setattr(kernel, "tools_key", lambda: "o")
    assert kernel.cache_key("base", "smoke") == "base-smoke-f-t-k-o"
    assert kernel.cache_key("base", "smoke", runner="lava") == "base-smoke-f-t-k-o-lava"
    row = {"tree": "T", "image_sha256": "x", "cells": {c: "pass" for c in kernel.CELLS}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(row))
    assert kernel.read_record(str(path), "T") is not None
    assert kernel.read_record(str(path), "T", runner="lava") is None
    path.write_text(json.dumps(dict(row, runner="lava")))
    assert kernel.read_record(str(path), "T") is None
    assert kernel.read_record(str(path), "T", runner="lava") is not None


def test_a_secret_is_written_private_from_the_start(tmp_path):
    import os
    import stat
    from forkkit.core.records import write_json
    old = os.umask(0o022)
    try:
        path = tmp_path / "server.json"
        write_json(str(path), {"token": "s"}, mode=0o600)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        write_json(str(path), {"token": "t"}, mode=0o600)          # rewritten: still private
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        write_json(str(tmp_path / "plain.json"), {})
        assert stat.S_IMODE((tmp_path / "plain.json").stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_a_lava_cell_keeps_every_run_on_record(tmp_path, monkeypatch):
    """record_run() adds a LAVA run to the LAVA record's earlier runs (a
    failure stays on it) instead of starting the record afresh."""
    from forkkit.verify import kernel
    path = str(tmp_path / "rec.json")
    cells = {c: "pass" for c in kernel.CELLS}
    base = {"commit": "c", "tree": "T", "image_sha256": "x", "runner": "lava", "flavour": "base",
            "test": "smoke", "details": {}, "kit": "k", "tools": {}}
    kernel.record_run(path, dict(base, cells=dict(cells, test="FAIL"), log="l1"))
    row = dict(base, cells=cells, log="l2")
    kernel.record_run(path, row)
    rec = kernel.read_record(path, "T", runner="lava")
    assert [r["passed"] for r in rec["runs"]] == [False, True]
    assert not rec["passed"]


# --- the processes `lava up` starts, known by more than their pid -----------

def sleeper():
    """A process of this test's own; returned once it runs `sleep` (its
    command line is what the kit's messages show)."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    while lavaserver._cmdline(proc.pid) != "sleep 300":
        assert proc.poll() is None
        time.sleep(0.01)
    return proc


def end(*pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def write_pids(pids):
    os.makedirs(os.path.dirname(lavaserver.config_path()), exist_ok=True)
    with open(lavaserver.config_path(), "w") as fh:
        json.dump({"url": "http://127.0.0.1:1/", "token": "t", "pids": pids}, fh)


def test_down_ends_only_the_processes_up_started(kit, capsys):
    """A pid in work/lava/server.json that names another process now (another
    start time: the pid was reused) or that an older kit recorded bare is
    left alone by `down` and shown as such by `status`; the process `up`
    started (same pid, same start time, same boot) is ended."""
    ours, reused, bare = sleeper(), sleeper(), sleeper()
    try:
        mine = lavaserver.identify(ours.pid)
        assert mine["cmdline"] == "sleep 300" and mine["boot_id"]
        stale = dict(lavaserver.identify(reused.pid), cmdline="lava-worker --level INFO")
        stale["start"] -= 1                # what `up` recorded: the pid's earlier process
        write_pids({"worker": mine, "scheduler": stale, "gunicorn": bare.pid})
        status = "\n".join(lavaserver.status())
        assert "worker (pid %d): running" % ours.pid in status
        assert "scheduler: not shown to run (scheduler: pid %d is now another process " \
            "(sleep 300)" % reused.pid in status
        assert "gunicorn: pid %d was recorded without what identifies" % bare.pid in status
        lavaserver.down()
        err = capsys.readouterr().err
        assert "worker (pid %d) ended" % ours.pid in err
        assert ours.poll() is not None
        assert reused.poll() is None and bare.poll() is None      # left alone
        assert "scheduler: pid %d is now another process (sleep 300), not the one `up` " \
            "started: left alone" % reused.pid in err
        assert "gunicorn: pid %d was recorded without what identifies its process" % bare.pid \
            in err
        assert json.load(open(lavaserver.config_path()))["pids"] == {}
    finally:
        end(ours.pid, reused.pid, bare.pid)


def test_up_starts_a_process_anew_when_its_pid_is_anothers(kit, capsys):
    """_start() (`up`): a recorded process that still runs is not started
    twice; a recorded pid that another process holds now does not count as
    running (a new one starts, the other is left alone); a bare pid of a
    running process is refused in one line."""
    other = sleeper()
    started = []
    try:
        stale = lavaserver.identify(other.pid)
        stale["start"] += 1
        pids = {"worker": stale}
        pid = lavaserver._start("worker", ["sleep", "300"], pids, lavaserver.Progress("lava"))
        started.append(pid)
        assert pid != other.pid and pids["worker"]["pid"] == pid
        assert lavaserver.process_state(pids["worker"]) == "running"
        assert other.poll() is None
        assert "worker: pid %d is now another process (sleep 300)" % other.pid \
            in capsys.readouterr().err
        assert lavaserver._start("worker", ["false"], pids) == pid        # the same, running
        with pytest.raises(ForkError, match="worker: pid %d was recorded without what "
                                            "identifies its process" % other.pid):
            lavaserver._start("worker", ["false"], {"worker": other.pid})
    finally:
        end(other.pid, *started)


def test_a_table_of_lava_runs_names_the_runner_in_its_command():
    """A check table's markdown gives the command that repeats it: a table
    of runs through LAVA says --runner, one of the kit's QEMU does not."""
    import types
    from forkkit.verify import check as vcheck
    row = {"commit": "a" * 40, "subject": "s", "cells": {}, "seconds": 1.0, "kit": "k"}
    series = types.SimpleNamespace(rel="patches")
    qemu_md = vcheck.markdown([dict(row)], series, "base", "smoke")
    lava_md = vcheck.markdown([dict(row, runner="lava")], series, "base", "smoke")
    assert "`tools/fork check --series patches --config base --test smoke`" in qemu_md
    assert "`tools/fork check --series patches --config base --test smoke --runner lava`" \
        in lava_md
