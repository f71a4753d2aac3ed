"""A guest boot as a LAVA job: the job definition and the device of one
check cell, `lava-run` on them (LAVA's dispatcher without a server, as
tuxrun runs it), and the job's log read back into what qemu.run_guest()
returns, so that the verdict is the kit's own.

What LAVA is given and what it is not:

* The kernel and the initramfs are the job's deploy images (`to: tmpfs`),
  each with its sha256 (LAVA checks it when it copies them).  The
  initramfs is one newc archive (single_archive()): the base archive with
  /fork/cmd added before its trailer.
* The guest test's disks are not deploy images (LAVA would copy and hash
  each, 27 s for 2 GiB): they are QEMU arguments in the job's context
  (`extra_options`), so QEMU writes the kit's own files and the host's
  e2fsck and free-count comparison read them after the job as after any
  boot.  The kernel command line, -smp and the accelerator are context
  too; the device (device_dict()) is a QEMU device that reads them, written
  by the kit (the dispatcher of Debian 12 ships no device-type templates)
  and, for a LAVA server, as a device-type template of the same text
  (device_template()).
* The test is a `monitors` test: LAVA waits for the guest init's
  FORK-GUEST-START line and for the kernel's "reboot: Restarting system"
  and records the FORK-EXIT-STATUS line as a test case.  LAVA's own job
  result is not the verdict (it says "pass" of a job whose guest test
  failed): the console, taken from the log's "target" records, goes
  through the kit's console scan like any boot's.
* The job's metadata names the cell (identity()): the image's sha256, the
  guest test and its inputs' key, the kit's code key, the flavour and the
  QEMU the kit's record names (`qemu-system-x86_64 --version`).  Just
  before the boot the job runs the device's user command
  fork_qemu_version on the worker (`qemu-system-x86_64 --version`, the
  QEMU the boot runs, found on the same PATH), whose output is in the
  log.  A result whose job does not carry the identity asked for, or whose
  log shows another kernel deployed or another QEMU, is refused
  (check_identity()).
* A job in which LAVA failed rather than the kernel (runner_error(): QEMU
  never started, or the kernel printed nothing; or LAVA ended the job on
  an error of its own before the guest's exit status, with no kernel
  report in the console; or the kit stopped it at its deadline before the
  guest had its timeout, by LAVA's time stamps from the "Boot command"
  record on: guest_seconds()) raises core.errors.RunnerError: no
  verdict, the check records an error of the runner.  A console that
  shows the guest's exit status or a kernel report is the kit's to judge.  A console that shows the kernel
  running is judged by the kit as any boot's: a panic after which QEMU
  exits is the kernel's failure, whatever LAVA calls the closed
  connection ("Infrastructure").

Job definitions and devices are written as JSON, which is YAML's flow
style: LAVA reads them as YAML, the kit reads them back with json.
"""

import datetime
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid

from ..core import interrupt
from ..core.errors import ForkError, RunnerError
from ..core.locks import GuestSlots
from ..core.paths import ensure_dir, new_log, wpath
from ..core.progress import Progress
from ..core.proc import dying_with_thread, sha256_file, tail
from . import initramfs
from .qemu import EXIT_RE, PROBLEM_RE, BootResult, disk_format, guest_output, scan

DEVICE_TYPE = "fork-qemu"
START = "FORK-GUEST-START"
END = "reboot: Restarting system"
# the exit status as a LAVA test case: its first digit is 0 only for 0
EXIT_PATTERN = r"(?P<test_case_id>FORK-EXIT-STATUS): (?P<result>\d)"
EXIT_FIXUP = dict([("0", "pass")] + [(str(d), "fail") for d in range(1, 10)])
BASE_APPEND = "console=ttyS0 panic=-1 rdinit=/init printk.devkmsg=on"
# what LAVA needs besides the guest's own time: copying the kernel and
# initramfs, starting QEMU, ending the job
DEPLOY_SECONDS = 300
COMMAND_SECONDS = 60        # the worker's `qemu-system-x86_64 --version` (QEMU_COMMAND)
BOOT_SECONDS = 120
MARGIN = DEPLOY_SECONDS + COMMAND_SECONDS + BOOT_SECONDS + 120
INSTALL = "apt-get install --no-install-recommends lava-dispatcher"
# the device's user command that shows, in the job's log, the QEMU the
# worker boots with (the program the device's boot command names)
QEMU_COMMAND = "fork_qemu_version"
QEMU_VERSION = "qemu-system-x86_64 --version"
# what LAVA's run_cmd() logs before the command's output lines (">> ")
QEMU_CALLING = "Calling: 'nice' '%s'" % "' '".join(QEMU_VERSION.split())
# lava_common.exceptions' error types of LAVA's own failures (a LAVA bug,
# a job canceled, a bad device or job), which are not the kernel's
LAVA_OWN_ERRORS = ("Bug", "Canceled", "Configuration", "Job")
# a console line that only a running kernel (or the kit's guest init)
# prints: the kernel's banner, a printk time stamp
KERNEL_LINE = re.compile(r"Linux version \d|^\[\s*\d+\.\d+\]")

_jobs = itertools.count(1)


# --- the cell's identity ---------------------------------------------------

def identity(test, test_key, kit, flavour, image_sha256=None, qemu=None):
    """The metadata that names a check cell in its LAVA job: the guest test
    and its inputs' key (guesttests.test_key()), the kit's code key, the
    flavour, the QEMU version line the kit records for the cell
    (kernel.tool_versions()) and the image's sha256 (the runner adds it
    from the kernel it deploys)."""
    meta = {"fork.test": test, "fork.test_key": test_key, "fork.kit": kit,
            "fork.flavour": flavour}
    if qemu:
        meta["fork.qemu"] = qemu
    if image_sha256:
        meta["fork.image_sha256"] = image_sha256
    return meta


def fstests_identity(image_sha256, root_key, root_packages, profile, fstests_commit,
                     harness, tests, kit, qemu=None):
    """identity() of an fstests shard's boot: the image's sha256, the guest
    root (its key and the hash of its Debian package versions), the profile
    key, the fstests commit, the guest script's harness key, the shard's
    tests (in the order the guest runs them), the kit's code key and the
    QEMU the kit names (check_identity() holds the worker to it)."""
    meta = {"fork.test": "fstests", "fork.image_sha256": image_sha256,
            "fork.root_key": root_key, "fork.root_packages": root_packages,
            "fork.profile": profile, "fork.fstests_commit": fstests_commit,
            "fork.harness": harness, "fork.tests": " ".join(tests), "fork.kit": kit}
    if qemu:
        meta["fork.qemu"] = qemu
    return meta


def check_identity(definition, expected, records=None):
    """Refuse a LAVA job's result unless the job is the cell asked for:
    its definition (the text the server holds) carries `expected` as its
    metadata and, given the job's log `records` of a job that started
    QEMU, the kernel LAVA deployed has the image's sha256 and the worker's
    QEMU printed the version line `expected` names ("fork.qemu").  (A job
    that never started QEMU booted nothing: boot_result() makes it an error
    of the runner.)  Returns the parsed definition."""
    try:
        job = json.loads(definition)
    except ValueError:
        raise ForkError("the LAVA job's definition is not the kit's (not JSON): its result "
                        "is refused; submit the cell again")
    meta = job.get("metadata") if isinstance(job, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    wrong = ["%s=%s (expected %s)" % (k, meta.get(k, "missing"), v)
             for k, v in sorted(expected.items()) if meta.get(k) != v]
    if wrong:
        raise ForkError("the LAVA job is not this cell: its metadata says %s; its result is "
                        "refused (submit the cell again)" % ", ".join(wrong))
    if records is not None and boot_command(records) is not None:
        want = expected.get("fork.image_sha256")
        got = deployed_sha256(records).get("kernel")
        if want and got != want:
            raise ForkError("the LAVA job deployed kernel %s, not the image %s: its result is "
                            "refused (submit the cell again)" % (got or "(none)", want))
        want = expected.get("fork.qemu")
        got = worker_qemu(records)
        if want and got != want:
            raise ForkError(
                "the LAVA worker booted the cell with %s, not with %s, which the kit's record "
                "names: its result is refused (install the same qemu-system-x86 on every "
                "worker as here: tools/forkkit/README.md, \"LAVA\")"
                % ("'%s'" % got if got else "a QEMU that did not say its version (a device "
                   "without the kit's %s command: run `tools/fork lava up` again, or give "
                   "the worker's devices the kit's device type)" % QEMU_COMMAND, "'%s'" % want))
    return job


# --- the job and the device ------------------------------------------------

def _plain(value, what):
    """`value` as one QEMU argument word: LAVA joins its command line with
    spaces and splits it again."""
    if not value or re.search(r"[\s\"'\\#?%]", value):
        raise ForkError("%s %r cannot be passed to QEMU through LAVA (it has a space, a "
                        "quote, a backslash, #, ? or %%): use a path without them"
                        % (what, value))
    return value


def context(disks, smp, mem, kvm, append, cache="unsafe"):
    """The job context: what of QEMU's command line is the cell's own (the
    disks as qemu.qemu_cmd() attaches them: qcow2 for a .qcow2 file, as
    fstests' root overlay, else raw)."""
    if '"' in append or "\\" in append:
        raise ForkError("kernel arguments %r cannot be passed through LAVA (a quote or a "
                        "backslash)" % append)
    opts = ["-accel kvm" if kvm else "-accel tcg,thread=multi", "-smp %d" % int(smp)]
    for d in disks:
        if not os.path.isfile(d):
            raise ForkError("disk image %s does not exist" % d)
        path = _plain(os.path.abspath(d), "disk image")
        if "," in path:
            raise ForkError("disk image %s: QEMU's -drive cannot take a path with a comma"
                            % path)
        opts.append("-drive file=%s,format=%s,if=virtio,cache=%s"
                    % (path, disk_format(d), cache))
    return {"arch": "amd64", "cpu": "host" if kvm else "max", "memory": int(mem),
            "extra_kernel_args": append.strip(), "extra_options": opts}


def _device(memory, cpu, append, extra_options):
    return {
        "available_architectures": ["amd64", "x86_64"],
        "constants": {
            "shutdown-message": "The system is going down for reboot NOW",
            "kernel-start-message": "Linux version [0-9]",
            "default-shell-prompt": "lava-test: # ",
            "posix": {"lava_test_sh_cmd": "/bin/sh", "lava_test_results_dir": "/lava-%s",
                      "lava_test_shell_file": "~/.bashrc"},
            "spawn_maxread": "4092",
            "failure_retry": 1,
            "boot_retry": 1,
        },
        "commands": {"users": {QEMU_COMMAND: {"do": QEMU_VERSION}}},
        "parameters": {},
        "actions": {
            "deploy": {"connections": {"serial": None},
                       "methods": {"image": {"parameters": {}}}},
            "boot": {"connections": {"serial": None},
                     "methods": {"qemu": {"parameters": {
                         "command": "qemu-system-x86_64",
                         "options": ["-cpu %s" % cpu, "-m %s" % memory, "-display none",
                                     "-monitor none", "-serial stdio", "-no-reboot",
                                     "-nodefaults", '-append "%s %s"' % (BASE_APPEND, append)],
                         "extra": extra_options}}}},
        },
        "timeouts": {"actions": {}, "connections": {}},
    }


def device_dict(ctx):
    """The QEMU device that boots a job of context `ctx` as qemu.qemu_cmd()
    boots a guest (the same arguments; only their order differs)."""
    return _device(ctx["memory"], ctx["cpu"], ctx["extra_kernel_args"], ctx["extra_options"])


_LIST = "@@extra_options@@"
# the template's variables (job context) and their values without a job
# (the scheduler renders a device without one)
TEMPLATE_DEFAULTS = {"memory": 2048, "cpu": "max", "extra_kernel_args": "", "extra_options": []}


def _var(name):
    """A template variable with its default (quoted with ', which JSON
    leaves as it is inside a string)."""
    value = TEMPLATE_DEFAULTS[name]
    return "{{ %s|default(%s) }}" % (name, "'%s'" % value if isinstance(value, str)
                                      else json.dumps(value))


def device_template():
    """device_dict() as a LAVA server's device-type template (jinja2): the
    server renders it with each job's context."""
    dev = _device(_var("memory"), _var("cpu"), _var("extra_kernel_args"), _LIST)
    text = json.dumps(dev, indent=1, sort_keys=True)
    return "{# device_type: %s (written by tools/fork lava template) #}\n%s\n" % (
        DEVICE_TYPE, text.replace(json.dumps(_LIST), "{{ extra_options|default([])|tojson }}"))


def render_template(template, ctx):
    """device_template() rendered as jinja2 renders it for the job context
    `ctx` (the tests run without jinja2)."""
    ctx = dict(TEMPLATE_DEFAULTS, **ctx)
    text = re.sub(r"\{#.*?#\}\n", "", template)
    text = text.replace("{{ extra_options|default([])|tojson }}",
                        json.dumps(ctx["extra_options"]))
    for key in ("memory", "cpu", "extra_kernel_args"):
        text = text.replace(_var(key), str(ctx[key]))
    return json.loads(text)


def job_definition(name, kernel, initrd, ctx, timeout, meta, test):
    """A LAVA job that boots `kernel` with `initrd` under context `ctx` and
    watches the console for the guest test `test` for `timeout` seconds;
    `meta`: the cell's identity().  The artifacts carry their sha256."""
    images = {}
    for label, path in (("kernel", kernel), ("ramdisk", initrd)):
        images[label] = {"image_arg": "-%s {%s}" % ("kernel" if label == "kernel" else "initrd",
                                                    label),
                         "url": "file://" + _plain(os.path.abspath(path), label),
                         "sha256sum": sha256_file(path)}
    return {
        "device_type": DEVICE_TYPE,
        "job_name": name[:200],
        "visibility": "public",
        "priority": "medium",
        "timeouts": {"job": {"seconds": int(timeout) + MARGIN},
                     "action": {"seconds": int(timeout)},
                     "connection": {"seconds": int(timeout)}},
        "context": ctx,
        "metadata": meta,
        "actions": [
            {"deploy": {"to": "tmpfs", "timeout": {"seconds": DEPLOY_SECONDS},
                        "images": images}},
            # the worker's QEMU, in the log (check_identity())
            {"command": {"name": QEMU_COMMAND, "timeout": {"seconds": COMMAND_SECONDS}}},
            {"boot": {"method": "qemu", "media": "tmpfs",
                      "timeout": {"seconds": BOOT_SECONDS}}},
            {"test": {"timeout": {"seconds": int(timeout)},
                      "monitors": [{"name": "fork-%s" % test, "start": START, "end": END,
                                    "pattern": EXIT_PATTERN, "fixupdict": EXIT_FIXUP}]}},
        ],
    }


def dump(obj):
    """A job or device as the text LAVA reads (JSON is YAML)."""
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def single_archive(base, script, dest):
    """The base archive `base` with /fork/cmd (`script`) added as one newc
    archive (one trailer) at `dest`, not a second archive after it."""
    with open(base, "rb") as fh:
        data = fh.read()
    end = _trailer_offset(data, base)
    c = initramfs.Cpio()
    c.file("fork/cmd", script.encode(), 0o755)
    with open(dest, "wb") as out:
        out.write(data[:end])
        out.write(c.bytes())
    return dest


def _trailer_offset(data, what):
    """Where the TRAILER!!! entry of the newc archive `data` starts."""
    pos = 0
    while pos + 110 <= len(data):
        if data[pos:pos + 6] != b"070701":
            break
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        size, namesize = fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1]
        if name == b"TRAILER!!!":
            return pos
        pos += 110 + namesize
        pos += (4 - pos % 4) % 4
        pos += size
        pos += (4 - pos % 4) % 4
    raise ForkError("%s is not a newc archive with a trailer: remove it (the kit builds it "
                    "again)" % what)


def cpio_names(data):
    """The entry names of a newc archive's bytes, up to its trailer (tests)."""
    names, pos = [], 0
    while data[pos:pos + 6] == b"070701":
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        name = data[pos + 110:pos + 110 + fields[11] - 1].decode()
        names.append(name)
        if name == "TRAILER!!!":
            break
        pos += 110 + fields[11]
        pos += (4 - pos % 4) % 4
        pos += fields[6]
        pos += (4 - pos % 4) % 4
    return names


# --- the job's log -----------------------------------------------------------

_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


class _Flow:
    """A reader of one YAML flow node as LAVA's logger writes its records:
    mappings, sequences, double-quoted scalars (every scalar, tagged !!int,
    !!float, !!bool or !!null where it is not a string), plain scalars."""

    def __init__(self, text):
        self.s = text
        self.i = 0

    def fail(self, why):
        raise ValueError("%s at %d" % (why, self.i))

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def node(self):
        self.ws()
        if self.i >= len(self.s):
            self.fail("end of text")
        c = self.s[self.i]
        if c == "{":
            return self.mapping()
        if c == "[":
            return self.sequence()
        if self.s.startswith("!!", self.i):
            j = self.i
            while self.i < len(self.s) and self.s[self.i] not in " ,}]":
                self.i += 1
            return self.tagged(self.s[j + 2:self.i], self.node())
        if c == '"':
            return self.double()
        if c == "'":
            return self.single()
        return self.plain()

    @staticmethod
    def tagged(tag, value):
        if tag == "int":
            return int(value)
        if tag == "float":
            return float(value)
        if tag == "bool":
            return str(value).lower() == "true"
        if tag == "null":
            return None
        return value

    def mapping(self):
        self.i += 1
        out = {}
        while True:
            self.ws()
            if self.s[self.i:self.i + 1] == "}":
                self.i += 1
                return out
            key = self.node()
            self.ws()
            if self.s[self.i:self.i + 1] != ":":
                self.fail("no ':' after a key")
            self.i += 1
            out[key] = self.node()
            self.ws()
            if self.s[self.i:self.i + 1] == ",":
                self.i += 1
            elif self.s[self.i:self.i + 1] != "}":
                self.fail("no ',' or '}' in a mapping")

    def sequence(self):
        self.i += 1
        out = []
        while True:
            self.ws()
            if self.s[self.i:self.i + 1] == "]":
                self.i += 1
                return out
            out.append(self.node())
            self.ws()
            if self.s[self.i:self.i + 1] == ",":
                self.i += 1
            elif self.s[self.i:self.i + 1] != "]":
                self.fail("no ',' or ']' in a sequence")

    def double(self):
        self.i += 1
        out = []
        s = self.s
        while True:
            j = self.i
            while self.i < len(s) and s[self.i] not in '"\\':
                self.i += 1
            out.append(s[j:self.i])
            if self.i >= len(s):
                self.fail("unterminated string")
            if s[self.i] == '"':
                self.i += 1
                return "".join(out)
            esc = s[self.i + 1:self.i + 2]
            if esc in _HEX:
                n = _HEX[esc]
                out.append(chr(int(s[self.i + 2:self.i + 2 + n], 16)))
                self.i += 2 + n
            elif esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                self.i += 2
            else:
                self.fail("unknown escape \\%s" % esc)

    def single(self):
        self.i += 1
        out = []
        while True:
            j = self.s.find("'", self.i)
            if j < 0:
                self.fail("unterminated string")
            out.append(self.s[self.i:j])
            if self.s[j + 1:j + 2] == "'":
                out.append("'")
                self.i = j + 2
                continue
            self.i = j + 1
            return "".join(out)

    def plain(self):
        j = self.i
        while self.i < len(self.s) and self.s[self.i] not in ",}]" \
                and not self.s.startswith(": ", self.i):
            self.i += 1
        text = self.s[j:self.i].strip()
        if text in ("null", "~", ""):
            return None
        if text in ("true", "false"):
            return text == "true"
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return text


def parse_records(text):
    """The records of a LAVA job log: lava-run's stderr (one flow mapping a
    line) or a server's log (the same, each line starting "- ").  A line
    that is no record (a warning of Python's) is left out."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- "):
            line = line[2:]
        if not line.startswith("{"):
            continue
        try:
            rec = _Flow(line).node()
        except (ValueError, IndexError):
            continue
        if isinstance(rec, dict) and "lvl" in rec:
            out.append(rec)
    return out


def console_lines(records):
    """The guest's console from a job's records: the "target" records up to
    the first line LAVA itself sent to the guest (its "poweroff" at the
    end), with the escape LAVA adds to every double quote undone."""
    sent = [r.get("dt", "") for r in records if r.get("lvl") == "input"]
    first_input = min(sent) if sent else None
    lines = []
    for r in records:
        if r.get("lvl") != "target" or not isinstance(r.get("msg"), str):
            continue
        if first_input is not None and r.get("dt", "") >= first_input:
            continue
        lines.append(r["msg"].replace('\\"', '"'))
    return lines


def boot_command(records):
    """The QEMU command line LAVA ran, or None when QEMU never started."""
    for r in records:
        msg = r.get("msg")
        if r.get("lvl") == "info" and isinstance(msg, str) and msg.startswith("Boot command: "):
            return msg[len("Boot command: "):]
    return None


def results(records):
    """The job's results records (LAVA's own and the test cases)."""
    return [r["msg"] for r in records if r.get("lvl") == "results" and isinstance(r.get("msg"), dict)]


def job_result(records):
    """LAVA's verdict on the job itself: {"result", "error_type", "error_msg"}."""
    for res in reversed(results(records)):
        if res.get("definition") == "lava" and res.get("case") == "job":
            return res
    return {"result": "unknown", "error_msg": "the log has no job result"}


def worker_qemu(records):
    """The first line the job's QEMU_COMMAND printed on the worker (its
    `qemu-system-x86_64 --version`), or None when it did not run."""
    calling = False
    for r in records:
        msg = r.get("msg")
        if r.get("lvl") != "debug" or not isinstance(msg, str):
            continue
        if msg == QEMU_CALLING:
            calling = True
        elif calling and msg.startswith(">> ") and msg[3:].strip():
            return msg[3:].strip()
        elif calling and msg.startswith("Returned "):
            return None
    return None


def deployed_sha256(records):
    """{label: sha256} of the files LAVA deployed, from its download results."""
    out = {}
    for res in results(records):
        extra = res.get("extra")
        if res.get("case") == "file-download" and isinstance(extra, dict) and extra.get("label"):
            out[extra["label"]] = extra.get("sha256sum")
    return out


def after_boot(records):
    """The records from LAVA's "Boot command" record on (QEMU running), []
    when QEMU never started."""
    for i, r in enumerate(records):
        msg = r.get("msg")
        if r.get("lvl") == "info" and isinstance(msg, str) and msg.startswith("Boot command: "):
            return records[i:]
    return []


def timed_out(records):
    """Whether LAVA stopped the guest on a timeout of its own: a "timed out"
    record once QEMU ran (one before it, a download LAVA retried, is no
    timeout of the guest's), or the job's result."""
    running = after_boot(records)
    if not running:
        return False
    for r in running:
        msg = r.get("msg")
        if r.get("lvl") in ("error", "exception", "warning") and isinstance(msg, str) \
                and "timed out" in msg:
            return True
    return "timed out" in str(job_result(records).get("error_msg", ""))


def _when(record):
    try:
        return datetime.datetime.fromisoformat(str(record.get("dt", "")))
    except ValueError:
        return None


def guest_seconds(records):
    """How long the guest had: from LAVA's "Boot command" record (QEMU
    started) to the log's last record (the job's end, or the cancel that
    ended it), by LAVA's own time stamps; None when QEMU never started or
    the records carry no time."""
    running = after_boot(records)
    start = _when(running[0]) if running else None
    times = [t for t in (_when(r) for r in running) if t is not None]
    if start is None or not times:
        return None
    return (max(times) - start).total_seconds()


def console_seconds(records):
    """The guest's own time in a job: from LAVA's "Boot command" record
    (QEMU started) to the last console line the guest printed (QEMU exits
    on the guest's reboot: -no-reboot), by LAVA's time stamps, as the kit's
    own runner times QEMU from its start to its exit; None when QEMU never
    started or the records carry no time.  Beside the job's wall time it
    shows what LAVA adds to a boot (its start, the deploy, its end)."""
    running = after_boot(records)
    start = _when(running[0]) if running else None
    sent = [r.get("dt", "") for r in running if r.get("lvl") == "input"]
    first_input = min(sent) if sent else None
    last = None
    for r in running:
        if r.get("lvl") == "target" and (first_input is None or r.get("dt", "") < first_input):
            last = _when(r) or last
    if start is None or last is None:
        return None
    return max(0.0, (last - start).total_seconds())


def write_console(records, log, job_file):
    """The console log of a LAVA boot at `log`, as qemu.run_guest() writes
    one: its first line the QEMU command line (LAVA's copies of the kernel
    and initramfs keep their names), then the guest's console."""
    cmd = boot_command(records)
    with open(log, "w") as fh:
        fh.write("# %s (LAVA job: %s)\n" % (cmd or "(QEMU did not start)", job_file))
        for line in console_lines(records):
            fh.write(line + "\n")
    return cmd


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def lava_says(records):
    """LAVA's job result in one line: "<error type>: <message>"."""
    res = job_result(records)
    return "%s: %s" % (res.get("error_type") or res.get("result") or "?",
                       _one_line(res.get("error_msg") or "no error message", 240))


def kernel_started(lines):
    """Whether console `lines` show a kernel that ran (its banner, a printk
    line, the kit's guest init)."""
    return any(KERNEL_LINE.search(l) or START in l for l in lines)


def had_its_time(records, timeout):
    """Whether the guest of a job had `timeout` seconds once QEMU started
    (guest_seconds())."""
    had = guest_seconds(records)
    return had is not None and timeout is not None and had >= timeout


def _seconds(had):
    return "%.0f s" % had if had is not None else "an unknown part (no time stamps in the log)"


def runner_error(records, killed=False, canceled=False, timeout=None):
    """Why a finished job says nothing of the kernel, in one line, or None
    when the kit judges its console.  A console that shows the guest's exit
    status or a kernel report is the kernel's to judge, whatever else went
    wrong (but for one case below).  Errors of the runner:

    * LAVA did not start QEMU (a deploy, a download, a job or device LAVA
      refused, a dispatcher that failed: nothing booted);
    * QEMU started but the console shows no kernel (QEMU's own error, a
      firmware that stopped: a kernel that dies before its console prints
      a line is not told apart from these, and stays without a verdict
      through LAVA; the kit's own runner judges it);
    * the kit stopped the job (`killed`) before the guest had `timeout`
      seconds of its own (guest_seconds(): from QEMU's start, by LAVA's
      time stamps; a job that waited in a queue or a slow deploy ate the
      kit's deadline) and the console shows no kernel report and no exit
      status but 0: no hang is shown, and an exit status 0 without the
      guest's reboot is no pass;
    * the job's log ends without LAVA's result of the job (lava-run killed
      from outside, a worker gone) and the console shows neither the
      guest's exit status nor a kernel report: nobody ended the job;
    * the kernel ran, but neither the guest's exit status nor a kernel
      report is in the console and LAVA ended the job on an error of its
      own (LAVA_OWN_ERRORS, or a server's job `canceled` by someone other
      than the kit), not on a timeout (the kit's after the guest's time, or
      LAVA's: a hang is the kernel's, as with the kit's own runner) nor on
      a closed connection (QEMU exits when the kernel panics or resets)."""
    if boot_command(records) is None:
        return "LAVA did not start QEMU (%s)" % lava_says(records)
    lines = console_lines(records)
    status = [int(m.group(1)) for m in (EXIT_RE.search(l) for l in lines) if m]
    reported = any(PROBLEM_RE.search(l) for l in lines)
    if not kernel_started(lines) and not status and not reported:
        last = next((l.strip() for l in reversed(lines) if l.strip()), None)
        return "QEMU started but the console shows no kernel (LAVA: %s%s)" % (
            lava_says(records), "; last console line: %s" % _one_line(last, 200) if last else "")
    if timed_out(records):
        return None
    if not killed and not canceled and not status and not reported and \
            job_result(records).get("result") == "unknown":
        return "the job's log ends without LAVA's result of the job (lava-run or the " \
            "worker ended before the job did), with no exit status and no kernel report " \
            "in the console"
    if killed:
        if not had_its_time(records, timeout) and not reported and not any(status):
            return "the kit stopped the job at its deadline after %s of the guest's time, " \
                "less than the guest's timeout of %s: no hang is shown (no kernel report, " \
                "%s in the console; LAVA: %s)" % (
                    _seconds(guest_seconds(records)), "%d s" % timeout if timeout else "?",
                    "exit status 0 but no reboot" if status else "no exit status",
                    lava_says(records))
        return None
    own = job_result(records).get("error_type") in LAVA_OWN_ERRORS
    if not (own or canceled):
        return None
    if status or reported:
        return None
    return "LAVA ended the job before the guest's exit status, on %s (LAVA: %s), with no " \
        "kernel report in the console" % ("its own error" if own else "a cancel not the kit's",
                                          lava_says(records))


def boot_result(records, log, job_file, timeout, seconds, killed=False, canceled=False):
    """What qemu.run_guest() returns, from a finished job's `records`: the
    console (written to `log`) scanned as any boot's, the guest's exit
    status, and a timeout where LAVA (or the kit, `killed`) stopped it;
    `seconds` is the job's wall time as the kit waited for it,
    `guest_seconds` the guest's own (console_seconds()).
    A RunnerError where the job says nothing of the kernel (runner_error();
    `canceled`: a server's job canceled, not by the kit)."""
    write_console(records, log, job_file)
    why = runner_error(records, killed, canceled, timeout)
    if why:
        raise RunnerError("%s; see %s" % (why, job_file))
    rc, problems = scan(log)
    error = None
    # stopped on a timeout: LAVA's own, or the kit's once the guest had its time
    stopped = timed_out(records) or (killed and had_its_time(records, timeout))
    if rc is not None and stopped:
        # an exit status, then no end (a hang on the way to reboot): a
        # timeout, as the kit's own QEMU runner counts it
        error = "guest timed out after %ds, after its exit status %d (console log: %s); " \
                "last lines:\n%s" % (timeout, rc, log, tail(log, 8))
    elif rc is None:
        if stopped:
            error = "guest timed out after %ds (console log: %s); last lines:\n%s" % (
                timeout, log, tail(log, 8))
        else:
            res = job_result(records)
            error = "guest stopped without reporting an exit status (LAVA: %s%s; console " \
                    "log: %s)%s" % (
                        res.get("result"), ", %s" % res["error_msg"] if res.get("error_msg")
                        else "", log,
                        "; first report: " + problems[0] if problems else
                        "; last lines:\n" + tail(log, 8))
    return BootResult(rc=rc if rc is not None else 255, log=log, seconds=seconds,
                      guest_seconds=console_seconds(records), problems=problems, error=error,
                      output=guest_output(log), lava=job_result(records), lava_job=job_file)


# --- running a job with lava-run ---------------------------------------------

def lava_run_binary():
    path = shutil.which("lava-run")
    if not path:
        raise ForkError("lava-run not found: run `%s` (or use the kit's own runner)" % INSTALL)
    if os.geteuid() != 0:
        raise ForkError("lava-run must run as root: run the check as root (or use the kit's "
                        "own runner)")
    return path


def prepare(kernel, script, disks, timeout, smp, mem, kvm, append, log, label, cache,
            meta, test, extra_files=None, initrd_dir=None):
    """The job directory beside `log`: the single-archive initramfs, the
    job and the device.  `meta` (the cell's identity()) gets the kernel's
    sha256.  The initramfs goes to `initrd_dir` (default work/tmp, where
    the runner removes it after the job).  Returns (job dir, job file,
    device file, initramfs, job)."""
    base = initramfs.base_archive(extra_files=extra_files, log=log + ".initramfs")
    jobdir = ensure_dir(log + ".lava")
    initrd = single_archive(base, "#!/bin/sh\n" + script + "\n",
                            os.path.join(initrd_dir or ensure_dir(wpath("tmp")),
                                         "initrd-%d-%d.cpio" % (os.getpid(), next(_jobs))))
    ctx = context(disks, smp, mem, kvm, append, cache)
    meta = dict(meta, **{"fork.image_sha256": sha256_file(kernel)})
    job = job_definition("fork %s %s" % (label, os.path.basename(kernel)), kernel, initrd,
                         ctx, timeout, meta, test)
    job_file = os.path.join(jobdir, "job.yaml")
    device_file = os.path.join(jobdir, "device.yaml")
    with open(job_file, "w") as fh:
        fh.write(dump(job))
    with open(device_file, "w") as fh:
        fh.write(dump(device_dict(ctx)))
    return jobdir, job_file, device_file, initrd, job


def _end_group(proc):
    """SIGKILL whatever still runs in the process group of `proc`, which
    has ended (a group outlives its leader while a member runs)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc, grace=60):
    """End lava-run (and with it its QEMU): SIGTERM (it cancels the job),
    then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_guest_lava(kernel, script, disks=(), timeout=600, smp=2, mem="2048", kvm=False,
                   append="", log=None, prog=None, label="boot", extra_files=None,
                   icount=False, cache="unsafe", follow=None, every_slot=False, meta=None,
                   test="boot"):
    """qemu.run_guest() through `lava-run`: the same arguments and result
    (with `lava`, LAVA's job result, and `lava_job`, its definition), plus
    `meta`, the cell's identity() for the job's metadata, which the job's
    log must bear out (check_identity(): the kernel, the QEMU).  The guest
    takes a guest slot as any boot; QEMU writes `disks` in place.  A
    RunnerError where LAVA failed, not the kernel (boot_result())."""
    if icount:
        raise ForkError("the LAVA runner has no icount mode (bench's): use the kit's own runner")
    prog = prog or Progress("boot")
    binary = lava_run_binary()
    log = log or new_log(label)
    jobdir, job_file, device_file, initrd, job = prepare(
        kernel, script, disks, timeout, smp, mem, kvm, append, log, label, cache,
        meta or {}, test, extra_files)
    lava_log = os.path.join(jobdir, "lava.log")
    job_id = "fork-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    cmd = [binary, "--job-id", job_id, "--output-dir", os.path.join(jobdir, "output"),
           "--device", device_file, job_file]
    prog.say("booting %s through lava-run with %s (timeout %ds, job: %s)"
             % (os.path.basename(kernel), "KVM" if kvm else "TCG", timeout, job_file))
    killed = False
    try:
        with GuestSlots(every=every_slot), open(lava_log, "w") as fh:
            # the job's time from here: a wait for a slot is not LAVA's
            t0 = time.monotonic()
            fh.write("# %s\n" % " ".join(shlex.quote(c) for c in cmd))
            fh.flush()
            # SIGTERM, not SIGKILL, when this thread ends (the kit killed
            # outright): lava-run cancels its job and ends the job's QEMU,
            # which a SIGKILL of lava-run alone would leave running
            proc = subprocess.Popen(dying_with_thread(cmd, "TERM"), stdin=subprocess.DEVNULL,
                                    stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                # stop_all() from the main thread ends it as a Ctrl-C here does
                with interrupt.guest(lambda: _stop(proc)):
                    proc.wait(timeout=timeout + MARGIN)
            except subprocess.TimeoutExpired:
                killed = True
                _stop(proc)
            except BaseException:
                _stop(proc)
                raise
            # what lava-run left of its process group (its QEMU, when
            # lava-run was killed from outside) ends before the kit reads
            # the disks and gives the slot back
            _end_group(proc)
    finally:
        try:
            os.unlink(initrd)
        except OSError:
            pass
    secs = time.monotonic() - t0
    with open(lava_log, errors="replace") as fh:
        records = parse_records(fh.read())
    with open(job_file) as fh:
        check_identity(fh.read(), job["metadata"], records)
    res = boot_result(records, log, job_file, timeout, secs, killed)
    if follow is not None:
        follow.start()
        follow.stop()
    prog.say("guest finished in %.1fs through lava-run (LAVA: %s): exit %s%s"
             % (secs, res.lava.get("result"), res.rc if res.error is None else "-",
                ", %d kernel reports" % len(res.problems) if res.problems else ""))
    return res
