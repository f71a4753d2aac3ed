#!/bin/sh
# fork bench 20261207-054218: A = distro/7.3 (d849d5d8141afda16d04ad32a48207f5c28953b3), B = next/7.3 (298749865820dae76556f50f1f0f07507bfcaf55)
# as run: tools/fork bench distro/7.3 next/7.3 --reps 0 --smp 8 --lockstat --only seed,statfs,inode --out work/bench-lockstat2
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench d849d5d8141afda16d04ad32a48207f5c28953b3 298749865820dae76556f50f1f0f07507bfcaf55 --reps 0 --smp 8 --lockstat --only seed,statfs,inode
