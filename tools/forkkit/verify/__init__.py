"""verify: what a kernel is judged by: the check pipeline and its cache
(kernel, check, checkpatch, checkrecords), the benchmarks (bench,
benchlib), fstests (fstests, fstests_run, fsrecord) and the bisect."""
