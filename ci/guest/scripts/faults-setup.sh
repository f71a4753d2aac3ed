set -e
d=/sys/kernel/debug
[ -d $d/failslab ] || { echo "FAIL: no failslab in debugfs: boot a fault injection kernel (--config faults)"; exit 1; }
for a in failslab fail_page_alloc; do
	echo 0 > $d/$a/verbose
	echo N > $d/$a/ignore-gfp-wait
done
echo N > $d/fail_page_alloc/ignore-gfp-highmem
echo 0 > $d/fail_page_alloc/min-order
