#!/bin/sh
# fork bench 20261207-053606: A = distro/7.3 (d849d5d8141afda16d04ad32a48207f5c28953b3), B = next/7.3 (c5aeb2906f3b61343b4d3e32dcdb74402369eab9)
# as run: tools/fork bench distro/7.3 next/7.3 --reps 0 --lockstat --only seed,statfs,inode --out work/bench-lockstat2
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench d849d5d8141afda16d04ad32a48207f5c28953b3 c5aeb2906f3b61343b4d3e32dcdb74402369eab9 --reps 0 --lockstat --only seed,statfs,inode
