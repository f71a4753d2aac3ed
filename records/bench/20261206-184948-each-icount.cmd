#!/bin/sh
# fork bench 20261206-184948: A = next-topic/7.3/counters-reload (f0ede345db1d19ba1a6f3c207b1120cf0d23b792), B = 2d4d0983e8867bda264746234c7f42a804c6247c (2d4d0983e8867bda264746234c7f42a804c6247c)
# as run: tools/fork bench next-topic/7.3/counters-reload next-topic/7.3/overhead-once --control --mode icount --each --lockstat --only statfs,seed,inode --out work/bench-each
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench f0ede345db1d19ba1a6f3c207b1120cf0d23b792 2d4d0983e8867bda264746234c7f42a804c6247c --reps 3 --control --mode icount --each --lockstat --only statfs,seed,inode
