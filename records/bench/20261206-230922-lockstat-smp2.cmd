#!/bin/sh
# fork bench 20261206-230922: A = distro/7.3 (d849d5d8141afda16d04ad32a48207f5c28953b3), B = next/7.3 (7fe1f3a5911bcc7599da97d979944be8ab628311)
# as run: tools/fork bench distro/7.3 next/7.3 --reps 0 --lockstat --only seed,statfs,inode --out work/bench-lockstat
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench d849d5d8141afda16d04ad32a48207f5c28953b3 7fe1f3a5911bcc7599da97d979944be8ab628311 --reps 0 --lockstat --only seed,statfs,inode
