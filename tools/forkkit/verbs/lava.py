"""lava: the kit's guests as LAVA jobs.

``check --runner lava`` boots each guest with LAVA's ``lava-run`` (no
server) and ``check --runner lava-server`` as a job of a LAVA server;
this verb writes the jobs and runs the server:

* ``job IMAGE`` writes the LAVA job definition and the QEMU device of one
  check cell (the stored image IMAGE under ``--test`` and ``--config``)
  to ``--out`` without running it: job.yaml, device.yaml and the
  initramfs they name.  ``lava-run --job-id 1 --output-dir out --device
  device.yaml job.yaml`` runs it as the check would (with a disk the
  check makes; this one is made with the job).
* ``template`` prints the device-type template a LAVA server needs for
  the kit's jobs (``fork-qemu``), the device as a jinja2 template of the
  job context.
* ``up`` starts, without systemd, PostgreSQL, lava-server (gunicorn),
  lava-scheduler and a lava-worker on this machine, with ``--devices``
  devices of the kit's type; writes work/lava/server.json for the
  submitter.  ``status`` says what runs, ``down`` ends what ``up``
  started.

Install first (not part of tools/packages): ``apt-get install
--no-install-recommends lava-dispatcher`` for lava-run, and ``lava-server
postgresql`` besides for the server.  Both run as root.  How a worker on
another machine joins, and what must be the same on every worker:
tools/forkkit/README.md, "LAVA".
"""

import os

from ..build.kconfig import FLAVOURS
from ..core.errors import ForkError
from ..core.locks import guest_slot_count
from ..core.paths import ensure_dir
from ..guest import guesttests, lava, lavaserver
from ..guest.qemu import BOOT_ARGS
from ..verify.kernel import kit_key, tool_versions

HELP = "LAVA: write a check cell's job and device, run a LAVA server and worker here"


def add_arguments(p):
    p.add_argument("action", choices=("job", "template", "up", "down", "status"),
                   help="what to do (see above)")
    p.add_argument("image", nargs="?", help="job: the kernel image (work/kernels/<sha256>.bzImage)")
    p.add_argument("--test", default="smoke", help="job: the guest test (default: %(default)s)")
    p.add_argument("--config", default="base", choices=sorted(FLAVOURS),
                   help="job: the image's config flavour (default: %(default)s)")
    p.add_argument("--timeout", type=int, default=900,
                   help="job: guest timeout in seconds (default: %(default)s)")
    p.add_argument("--out", help="job: the directory to write to")
    p.add_argument("--devices", type=int, default=None,
                   help="up: devices (jobs at once) on the worker (default: the guest slots)")


def main(args):
    if args.action == "template":
        print(lava.device_template(), end="")
        return 0
    if args.action == "up":
        lavaserver.up(devices=args.devices or guest_slot_count())
        return 0
    if args.action == "down":
        lavaserver.down()
        return 0
    if args.action == "status":
        print("\n".join(lavaserver.status()))
        return 0
    if not args.image or not args.out:
        raise ForkError("lava job needs an IMAGE and --out DIR")
    if not os.path.isfile(args.image):
        raise ForkError("image %s does not exist" % args.image)
    spec = guesttests.spec(args.test)
    out = ensure_dir(os.path.abspath(args.out))
    disk = guesttests.make_image(os.path.join(out, "disk.img"), spec.size, spec.blocksize,
                                 mkfs_args=spec.mkfs, fs=spec.fs)
    meta = lava.identity(args.test, guesttests.test_key(args.test), kit_key(), args.config,
                         qemu=tool_versions()["qemu"])
    _, job_file, device_file, initrd, _ = lava.prepare(
        os.path.abspath(args.image), spec.script, [disk], args.timeout, 2, "2048", False,
        BOOT_ARGS.get(args.config, ""), os.path.join(out, "cell"), "job", spec.cache, meta,
        args.test, initrd_dir=out)
    print("job: %s\ndevice: %s\ninitramfs: %s\ndisk: %s" % (job_file, device_file, initrd, disk))
    return 0
