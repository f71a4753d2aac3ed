#!/bin/sh
# fork bench 20261206-214056: A = next-topic/7.3/overhead-once (995c53cfeb442b18ead46839cd7bc348d9503dfb), B = a7e738c231c6c19e707772e8697784e278d5ed67 (a7e738c231c6c19e707772e8697784e278d5ed67)
# as run: tools/fork bench next-topic/7.3/overhead-once next/7.3 --control --mode icount --each --lockstat --only seed --out work/bench-each
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench 995c53cfeb442b18ead46839cd7bc348d9503dfb a7e738c231c6c19e707772e8697784e278d5ed67 --reps 3 --control --mode icount --each --lockstat --only seed
