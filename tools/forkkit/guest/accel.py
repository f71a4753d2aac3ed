"""Which accelerator the check and fstests guests use: TCG unless asked
($FORK_ACCEL=kvm, or =auto for KVM where a probe showed that it works on
this machine).  TCG is the default because a probe can be fooled: a tiny
guest may answer under KVM on a host where the real guests (2 vCPUs,
virtio disks under I/O) hang, and every cell would then wait out its
timeout and stay failed on record.

/dev/kvm existing says little: on some machines it is there but a guest
under `-accel kvm` hangs before its first console line.  So KVM is
probed once per machine: the smallest kernel image of the store boots
under `-accel kvm` with a short timeout and must print PROBE_LINE.  The
answer is kept in work/accel/kvm-probe.json with the QEMU version and the
host kernel it was probed on; another QEMU or host kernel probes again.
Without a built image there is nothing to probe with: TCG, "not probed"
(asked again once an image is built).  The accelerator a verdict was
produced under is part of its identity (the check cache's key, the
fstests store's name and kernel.json): a KVM verdict never answers for
TCG, nor the other way; a record that names none is TCG's.
bench never asks: its icount mode is TCG's, and KVM is its own option.
"""

import os
import platform
import shutil
import subprocess
import threading

from ..core.paths import wpath
from ..core.records import read_json, write_json

PROBE_LINE = "FORK-KVM-PROBE-OK"
PROBE_TIMEOUT = 60


def probe_path():
    return wpath("accel", "kvm-probe.json")


def qemu_version():
    """QEMU's version line, or None when it is not installed."""
    path = shutil.which("qemu-system-x86_64")
    if not path:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def machine():
    """What a probe's answer holds for: this QEMU on this host kernel."""
    return {"qemu": qemu_version(), "host_kernel": platform.release()}


def smallest_image(store):
    """The smallest bzImage in the image store `store`, or None."""
    try:
        names = [n for n in os.listdir(store) if n.endswith(".bzImage")]
    except FileNotFoundError:
        return None
    paths = [os.path.join(store, n) for n in names]
    return min(paths, key=lambda p: (os.path.getsize(p), p)) if paths else None


def probe(kernel, boot, timeout=PROBE_TIMEOUT):
    """Boot `kernel` under KVM with `boot` (guest.qemu.run_guest's
    signature: it takes a guest slot); returns (works, why)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is missing or not accessible"
    res = boot(kernel, "echo %s" % PROBE_LINE, timeout=timeout, smp=1, mem="512", kvm=True,
               label="kvm-probe")
    if any(PROBE_LINE in line for line in res.output) and res.rc == 0:
        return True, "a guest under -accel kvm answered in %.0fs" % res.seconds
    return False, "a guest under -accel kvm did not answer in %ds" % timeout \
        if res.error and "timed out" in res.error else \
        "a guest under -accel kvm failed (exit %s)" % res.rc


ACCEL_CHOICES = ("tcg", "auto", "kvm")
# what a guest ran under, as a record names it
ACCELS = ("tcg", "kvm")


def wanted():
    """$FORK_ACCEL: tcg (default), auto (probe) or kvm (no probe)."""
    want = os.environ.get("FORK_ACCEL", "tcg").strip().lower() or "tcg"
    if want not in ACCEL_CHOICES:
        from ..core.errors import ForkError
        raise ForkError("FORK_ACCEL=%s: give one of %s" % (want, ", ".join(ACCEL_CHOICES)))
    return want


def choose(store, boot, prog):
    """"kvm" or "tcg" for the check and fstests guests; says which, in one
    line, and why.  TCG unless $FORK_ACCEL asks for KVM; with auto, probes
    at most once per QEMU and host kernel."""
    return _choose(store, boot, prog)[0]


def _choose(store, boot, prog):
    """(choose()'s answer, whether it stands for the rest of the process:
    not when auto found no image to probe with, which a build may bring)."""
    want = wanted()
    if want == "tcg":
        prog.say("accelerator: TCG (FORK_ACCEL=auto probes KVM, FORK_ACCEL=kvm uses it)")
        return "tcg", True
    if want == "kvm":
        prog.say("accelerator: KVM (FORK_ACCEL=kvm, not probed)")
        return "kvm", True
    here = machine()
    path = probe_path()
    known = read_json(path, None)
    if not (isinstance(known, dict) and all(known.get(k) == v for k, v in here.items())
            and isinstance(known.get("kvm"), bool)):
        kernel = smallest_image(store)
        if kernel is None:
            prog.say("accelerator: TCG (KVM not probed: no kernel image built yet)")
            return "tcg", False
        works, why = probe(kernel, boot)
        known = dict(here, kvm=works, why=why, image=os.path.basename(kernel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_json(path, known)
    accel = "kvm" if known["kvm"] else "tcg"
    prog.say("accelerator: %s (KVM probe on %s: %s)" % (accel.upper(), known["host_kernel"],
                                                        known["why"]))
    return accel, True


_chosen = {}
_choosing = threading.Lock()


def choose_once(store, boot, prog):
    """choose(), asked once per process (and work directory), by one
    thread at a time.  The accelerator names every verdict (the check
    cache's key, the fstests store's identity), so a process keeps the
    answer it gave; only auto's "not probed: no image yet" is asked again
    (after a build there is an image to probe with)."""
    key = probe_path()
    with _choosing:
        if key in _chosen:
            return _chosen[key]
        got, final = _choose(store, boot, prog)
        if final:
            _chosen[key] = got
        return got
