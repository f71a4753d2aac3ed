"""What boots a check's guest: the kit's own QEMU (qemu.run_guest()),
LAVA's lava-run (lava.run_guest_lava()) or a LAVA server's worker
(lavaserver.run_guest_server()); each with qemu.run_guest()'s signature
and result, the LAVA ones with the cell's identity for the job."""

from ..core.errors import ForkError
from . import lava, lavaserver, qemu

RUNNERS = ("qemu", "lava", "lava-server")


def boot_function(runner, meta, test):
    """The boot function of `runner`; `meta` (lava.identity()) and `test`
    name the cell in a LAVA job."""
    if runner in (None, "qemu"):
        return qemu.run_guest
    if runner == "lava":
        return lambda *a, **kw: lava.run_guest_lava(*a, meta=meta, test=test, **kw)
    if runner == "lava-server":
        return lambda *a, **kw: lavaserver.run_guest_server(*a, meta=meta, test=test, **kw)
    raise ForkError("unknown runner %r: choose one of %s" % (runner, ", ".join(RUNNERS)))
