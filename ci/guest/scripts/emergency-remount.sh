set -e
compare() {
	fsreport /mnt > /tmp/statfs
	ext2poke /dev/vda sums > /tmp/sums
	s=$(tr ' ' '\n' < /tmp/statfs | sed -n "s/^bfree=//p")
	g=$(tr ' ' '\n' < /tmp/sums | sed -n "s/^bfree=//p")
	si=$(tr ' ' '\n' < /tmp/statfs | sed -n "s/^ffree=//p")
	gi=$(tr ' ' '\n' < /tmp/sums | sed -n "s/^ffree=//p")
	[ -n "$s" ] && [ -n "$g" ] && [ -n "$si" ] && [ -n "$gi" ] || { echo "FAIL: $1: no counts: $(cat /tmp/statfs /tmp/sums)"; exit 1; }
	delta=$((s - g))
	[ "$si" = "$gi" ] || { echo "FAIL: $1: statfs ffree=$si, group descriptors $gi"; exit 1; }
}
mount -t ext2 /dev/vda /mnt
for d in a b c d; do
	mkdir /mnt/$d
	( exec 3>> /mnt/$d/f
	while [ ! -e /tmp/stop ]; do
		c=$(cat /tmp/pause 2>/dev/null || true)
		if [ -n "$c" ]; then touch /tmp/paused.$d.$c; sleep 0.02; continue; fi
		dd if=/dev/zero bs=64k count=32 >&3 2>/dev/null || true
		truncate -s 0 /mnt/$d/f 2>/dev/null || true
	done ) &
done
sleep 2
i=0
off=0
max=0
end=$(( $(date +%s) + 90 ))
while [ $i -lt 40 ] && [ $(date +%s) -lt $end ]; do
	echo u > /proc/sysrq-trigger
	n=0
	until grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts; do
		n=$((n + 1))
		[ $n -lt 400 ] || { echo "FAIL: sysrq-u did not remount read-only"; exit 1; }
		sleep 0.02
	done
	mount -o remount,rw /mnt
	echo $i > /tmp/pause.new
	mv /tmp/pause.new /tmp/pause
	for d in a b c d; do
		until [ -e /tmp/paused.$d.$i ]; do sleep 0.02; done
	done
	compare "cycle $i"
	if [ $delta -ne 0 ]; then
		echo "cycle $i: statfs bfree=$s, group descriptors $g: $delta"
		off=$((off + 1))
		a=${delta#-}
		[ $a -le $max ] || max=$a
		[ $a -le 8256 ] || { echo "FAIL: cycle $i: statfs bfree=$s, group descriptors $g: more than the 8256 blocks the writers can have in flight"; exit 1; }
	fi
	rm -f /tmp/pause
	i=$((i + 1))
done
echo "emergency remount cycles: $i, free blocks off in $off, by at most $max"
[ $i -ge 10 ] || { echo "FAIL: only $i emergency remount cycles"; exit 1; }
touch /tmp/stop
wait
echo u > /proc/sysrq-trigger
n=0
until grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts; do
	n=$((n + 1))
	[ $n -lt 400 ] || { echo "FAIL: sysrq-u did not remount read-only"; exit 1; }
	sleep 0.02
done
mount -o remount,rw /mnt
compare "remount read-write with no writer"
[ $delta -eq 0 ] || { echo "FAIL: remount read-write with no writer: statfs bfree=$s, group descriptors $g"; exit 1; }
umount /mnt
mount -t ext2 /dev/vda /mnt
compare "mounted again"
[ $delta -eq 0 ] || { echo "FAIL: mounted again: statfs bfree=$s, group descriptors $g"; exit 1; }
rm -rf /mnt/a /mnt/b /mnt/c /mnt/d
fsreport /mnt
umount /mnt
