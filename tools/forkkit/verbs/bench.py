"""bench: A/B benchmarks of two revisions (stock vs series) side by side.

    tools/fork bench [A] [B] [--reps R] [--control] [--runs K] [--warmup W]
                     [--mode wall|icount] [--smp N] [--quick] [--lockstat]
                     [--only W,...] [--out DIR]

A defaults to ``distro/<ver>`` (stock), B to ``series/<ver>``.  Both are built
with the same config (flavour ``base``) and booted with the same QEMU
arguments (TCG, -smp 2, 2048 MiB) on fresh copies of the same disk images.
One guest boot per kernel and repetition runs every point in sequence
(each point K times in a row with ``--runs K``, the first W of them
discarded as warm-up with ``--warmup W``); a repetition is one boot of
each kernel, back to back, in an order that rotates from one repetition
to the next (A B, B A, ...), for R repetitions (default 3).  ``--control``
adds C, A's very image booted again as a third kernel of every
repetition: C/A is an A/A control that shows what difference the run can
tell from noise.

B/A is paired by repetition: each repetition's ratio (of the medians of
its samples), their geometric mean, and a 95% Student's t
interval over the repetitions (benchlib.INTERVAL_RULE); a point is judged
"no loss" only when its interval allows no loss beyond 3%, "worse" when
all of it is such a loss, and "inconclusive" otherwise.

``--mode icount`` boots with deterministic virtual time (QEMU
``-icount shift=0,sleep=off``, one TCG thread): timings count the
instructions the guest ran, reproducible under host load, but the vCPUs
take turns, so it measures CPU work per operation, not parallel scaling
(the counted workloads, seed and inode, run benchlib.ICOUNT_SCALE times
the iterations: the guest's clock runs faster than TCG);
``wall`` (default) is multi-threaded TCG.  ``--smp N`` sets the vCPUs.

Workloads (ci/guest programs plus dbench), each with reference rows from the
same boot: the ext4 driver mounting the very same ext2 image, and tmpfs.

  statfs  statfsbench, 1 and 2 threads, ext2 of 128, 1024, 8192 groups
  seed    seedload, 1 and 2 tasks, N = 9, 16, 32 blocks, the 2 tasks' files
          in one directory or in separate top-level directories
  inode   createbench, 1 and 2 tasks in private directories
  dbench  dbench -t 5 with 2 clients (client.txt load)

Each point gets median and min..max per kernel and the paired B/A
(and C/A) with its interval.  The host's load is
recorded around every point and samples taken under load are marked.
``--lockstat`` also builds the ``lockstat`` flavour of A and B and boots
each once more, resetting /proc/lock_stat before and dumping it after each
workload (ext2 points only), for the top contended lock classes.

Output: work/bench/<timestamp>/bench.{json,md,cmd,png} (every sample, the
tables with the targets, the command to reproduce, a plot) and
work/bench/latest.{json,md,cmd,png} pointing at the newest run.  Absolute
figures are TCG times: compare ratios.  A failed boot is an error.

``--each`` measures every commit of A..B against its parent, a patch
series' cost patch by patch: one kernel per commit of A..B and A itself,
every repetition boots all of them in rotating order (``--control`` adds
A's image once more), and the report has a step per commit (its B/A is the
commit against its parent, with the interval), and with ``--lockstat`` the
ext2 lock acquisitions and contentions per operation of each kernel.
"""

from ..verify import benchlib
from ..verify.bench import SMP, run_bench

HELP = "A/B benchmarks (stock vs series) in QEMU, side by side, with lock statistics"


def add_arguments(p):
    p.add_argument("a", nargs="?", metavar="A",
                   help="baseline revision (default: distro/<ver>, the stock kernel)")
    p.add_argument("b", nargs="?", metavar="B",
                   help="revision under test (default: series/<ver>)")
    p.add_argument("--each", action="store_true",
                   help="one kernel per commit of A..B and A: every commit against its "
                        "parent (a series' cost patch by patch)")
    p.add_argument("--reps", type=int, default=3,
                   help="repetitions: boots of each kernel, interleaved A B A B (default %(default)s; "
                        "0 with --lockstat for lock statistics only)")
    p.add_argument("--control", action="store_true",
                   help="also boot A's image as a third kernel C in every repetition: the "
                        "A/A control (C/A with its interval)")
    p.add_argument("--runs", type=int, default=1, metavar="K",
                   help="runs of every point per boot, back to back (default %(default)s)")
    p.add_argument("--warmup", type=int, default=0, metavar="W",
                   help="of those runs, the first W are discarded (default %(default)s)")
    p.add_argument("--mode", choices=("wall", "icount"), default="wall",
                   help="wall: multi-threaded TCG, real time; icount: deterministic "
                        "instruction-counted time, one TCG thread (default: %(default)s)")
    p.add_argument("--smp", type=int, default=SMP, metavar="N",
                   help="vCPUs of every guest (default %(default)s)")
    p.add_argument("--kvm", action="store_true",
                   help="boot under KVM (-accel kvm -cpu host) instead of TCG, wall mode "
                        "only: for a machine with working KVM and more cores than vCPUs")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (a few hundred ms per point): for tests and smoke runs")
    p.add_argument("--lockstat", action="store_true",
                   help="also boot lockstat-flavour builds of A and B once each and report "
                        "the top contended lock classes per workload")
    p.add_argument("--only", metavar="WORKLOAD",
                   help="run only these workloads (comma-separated): %s"
                        % ", ".join(benchlib.WORKLOADS))
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default work/bench): the run goes to "
                        "DIR/<timestamp>/, DIR/latest.* point at it")
    p.add_argument("--rebuild", action="store_true",
                   help="rebuild the kernels even if work/kernels holds them")
    p.add_argument("--timeout", type=int, default=0,
                   help="guest timeout per boot in seconds (default %(default)s: from the sizes)")


def main(args):
    run_bench(args)
    return 0
