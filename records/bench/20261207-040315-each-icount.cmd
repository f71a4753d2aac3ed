#!/bin/sh
# fork bench 20261207-040315: A = next-topic/7.3/overhead-once (eebfffe4ad392ec4dcd4a00de832b728a713d3ab), B = c5aeb2906f3b61343b4d3e32dcdb74402369eab9 (c5aeb2906f3b61343b4d3e32dcdb74402369eab9)
# as run: tools/fork bench next-topic/7.3/overhead-once next/7.3 --control --mode icount --each --lockstat --only seed --out work/bench-each2
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench eebfffe4ad392ec4dcd4a00de832b728a713d3ab c5aeb2906f3b61343b4d3e32dcdb74402369eab9 --reps 3 --control --mode icount --each --lockstat --only seed
