set -e
fi=/sys/kernel/debug/fail_make_request
[ -d $fi ] || { echo "FAIL: no $fi: boot a fault injection kernel (--config faults)"; exit 1; }
echo 0 > $fi/verbose
echo 1 > $fi/interval
echo -1 > $fi/times
io_load() {
	end=$(( $(date +%s) + 15 ))
	for t in 1 2 3 4; do
		( i=0
		while [ $(date +%s) -lt $end ]; do
			dd if=/dev/zero of=$1/f$t.$((i % 7)) bs=4k count=$((i % 13 + 1)) conv=fsync 2>/dev/null || true
			cat $1/f$t.$(((i + 3) % 7)) > /dev/null 2>&1 || true
			rm -f $1/f$t.$(((i + 5) % 7)) 2>/dev/null || true
			i=$((i + 1))
		done ) &
	done
	while [ $(date +%s) -lt $end ]; do
		echo 3 > /proc/sys/vm/drop_caches
		sleep 1
	done
	wait
}
for mode in continue remount-ro; do
	mount -t ext2 -o errors=$mode /dev/vda /mnt
	mkdir -p /mnt/$mode
	echo 1 > /sys/block/vda/make-it-fail
	echo 5 > $fi/probability
	io_load /mnt/$mode
	echo 0 > $fi/probability
	echo 0 > /sys/block/vda/make-it-fail
	grep " /mnt " /proc/mounts
	umount /mnt
done
n=$(dmesg | grep -c -e "I/O error" -e "EXT2-fs (vda): error" || true)
echo "I/O error and ext2 error lines: $n"
[ "$n" -gt 0 ] || { echo "FAIL: no I/O error was injected"; exit 1; }
