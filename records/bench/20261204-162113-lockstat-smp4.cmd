#!/bin/sh
# fork bench 20261204-162113: A = distro/7.3 (d849d5d8141afda16d04ad32a48207f5c28953b3), B = series/7.3 (8bb2a92651aac3f45635deb623b1dca39d803751)
# as run: tools/fork bench distro/7.3 series/7.3 --reps 0 --smp 4 --lockstat --only seed,statfs,inode --out work/bench/lockstat-smp4
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench d849d5d8141afda16d04ad32a48207f5c28953b3 8bb2a92651aac3f45635deb623b1dca39d803751 --reps 0 --smp 4 --lockstat --only seed,statfs,inode
