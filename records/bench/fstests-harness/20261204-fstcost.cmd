# command (stop 21; the patched checkout had the first version of ci/fstests/patches):
benchmarks/fstests-harness/fstcost.py work/kernels/c27bf4ccea8f444cc9840257bc93d5b007de9ce1ec4f50521e0360bd895c36d4.bzImage ~/.cache/fork-kit/fstests-roots/root-c7c6babb5cf53367.img work/tmp/fstcost2 <fstests checkout with the patches>
