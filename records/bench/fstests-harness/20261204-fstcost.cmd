# fstests' harness cost per test in the TCG guest (FSTESTS.md): fstcost.py boots
# an fstests-flavour kernel twice on a copy of a guest root (QEMU thread=multi,
# then thread=single) and times ./check -R xunit on 8 ext4/ tests that end
# "not run" on ext2, with stock fstests' common/config and common/report and
# with those of a checkout carrying the first version of ci/fstests/patches.
# The script: git show a4bf571:records/bench/fstests-harness/fstcost.py
# (run from the top directory of a checkout of that commit).  Its output:
# 20261204-fstcost.out.  The command:
records/bench/fstests-harness/fstcost.py work/kernels/c27bf4ccea8f444cc9840257bc93d5b007de9ce1ec4f50521e0360bd895c36d4.bzImage ~/.cache/fork-kit/fstests-roots/root-c7c6babb5cf53367.img work/tmp/fstcost2 <fstests checkout with the patches>
