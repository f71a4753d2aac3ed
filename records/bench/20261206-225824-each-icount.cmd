#!/bin/sh
# fork bench 20261206-225824: A = bench-base/7.3/dirsync-fix (ad5c597adeab3d2520e80328921f07a9536c7c7a), B = f635f3b47b3eea9a3d9a54d3666e42e8eaf15191 (f635f3b47b3eea9a3d9a54d3666e42e8eaf15191)
# as run: tools/fork bench bench-base/7.3/dirsync-fix bench/7.3/dirsync-inode-generation --control --mode icount --each --lockstat --only inode --out work/bench-each
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench ad5c597adeab3d2520e80328921f07a9536c7c7a f635f3b47b3eea9a3d9a54d3666e42e8eaf15191 --reps 3 --control --mode icount --each --lockstat --only inode
