"""What boots a check's or an fstests shard's guest: the kit's own QEMU
(qemu.run_guest()), LAVA's lava-run (lava.run_guest_lava()) or a LAVA
server's worker (lavaserver.run_guest_server()); each with
qemu.run_guest()'s signature and result, the LAVA ones with the cell's or
the shard's identity for the job."""

from ..core.errors import ForkError
from . import lava, lavaserver, qemu

RUNNERS = ("qemu", "lava", "lava-server")
# how a line names each runner
NAMES = {"qemu": "the kit's QEMU", "lava": "LAVA (lava-run)", "lava-server": "a LAVA server"}


def _known(runner):
    if runner not in (None,) + RUNNERS:
        raise ForkError("unknown runner %r: choose one of %s" % (runner, ", ".join(RUNNERS)))


def boot_function(runner, meta, test):
    """The boot function of `runner`; `meta` (lava.identity(),
    lava.fstests_identity()) and `test` name the cell in a LAVA job."""
    _known(runner)
    if runner in (None, "qemu"):
        return qemu.run_guest
    if runner == "lava":
        return lambda *a, **kw: lava.run_guest_lava(*a, meta=meta, test=test, **kw)
    return lambda *a, **kw: lavaserver.run_guest_server(*a, meta=meta, test=test, **kw)


def check_ready(runner):
    """Refuse in one line a runner this machine cannot use now, before a
    run builds anything: lava-run missing or not run as root, no LAVA
    server started (`tools/fork lava up`).  A server that does not answer
    is found by the boot (an error of the runner)."""
    _known(runner)
    if runner == "lava":
        lava.lava_run_binary()
    elif runner == "lava-server":
        lavaserver.read_config()
