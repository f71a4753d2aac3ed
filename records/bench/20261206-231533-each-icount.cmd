#!/bin/sh
# fork bench 20261206-231533: A = distro/7.3 (d849d5d8141afda16d04ad32a48207f5c28953b3), B = 3550b345f71cfa191ce5d3a393a95f829d05cc8d (3550b345f71cfa191ce5d3a393a95f829d05cc8d)
# as run: tools/fork bench distro/7.3 next-topic/7.3/gd-hints --control --mode icount --each --lockstat --only seed --out work/bench-each
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench d849d5d8141afda16d04ad32a48207f5c28953b3 3550b345f71cfa191ce5d3a393a95f829d05cc8d --reps 3 --control --mode icount --each --lockstat --only seed
