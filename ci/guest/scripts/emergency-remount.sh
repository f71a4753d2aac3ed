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
# every writer has touched /tmp/$1.<writer>$2 (20 s at most)
acked() {
	for w in a b c d; do
		n=0
		until [ -e /tmp/$1.$w$2 ]; do
			n=$((n + 1))
			[ $n -lt 1000 ] || { echo "FAIL: writer $w did not acknowledge $1$2"; exit 1; }
			sleep 0.02
		done
	done
}
# the blocks (of 512 bytes) the writers' files hold, indirect blocks included
held() {
	stat -c %b /mnt/a/f /mnt/b/f /mnt/c/f /mnt/d/f | awk '{ n += $1 } END { print n }'
}
ro() {
	echo u > /proc/sysrq-trigger
	n=0
	until grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts; do
		n=$((n + 1))
		[ $n -lt 400 ] || { echo "FAIL: sysrq-u did not remount read-only"; exit 1; }
		sleep 0.02
	done
}
trap 'touch /tmp/stop; rm -f /tmp/pause /tmp/notrunc; wait' EXIT
mount -t ext2 /dev/vda /mnt
for w in a b c d; do
	mkdir /mnt/$w
	( exec 3>> /mnt/$w/f
	touch /tmp/ready.$w
	while [ ! -e /tmp/stop ]; do
		c=$(cat /tmp/pause 2>/dev/null || true)
		if [ -n "$c" ]; then touch /tmp/paused.$w.$c; sleep 0.02; continue; fi
		dd if=/dev/zero bs=64k count=32 >&3 2>/dev/null || true
		t=$(cat /tmp/notrunc 2>/dev/null || true)
		if [ -n "$t" ]; then touch /tmp/notrunc.$w.$t; continue; fi
		truncate -s 0 /mnt/$w/f 2>/dev/null || true
	done ) &
done
acked ready
sleep 2
i=0
off=0
max=0
end=$(( $(date +%s) + 90 ))
while [ $i -lt 40 ] && [ $(date +%s) -lt $end ]; do
	echo $i > /tmp/notrunc.new
	mv /tmp/notrunc.new /tmp/notrunc
	acked notrunc .$i
	ro
	b0=$(held)
	mount -o remount,rw /mnt
	b1=$(held)
	echo $i > /tmp/pause.new
	mv /tmp/pause.new /tmp/pause
	acked paused .$i
	compare "cycle $i"
	grown=$(( (b1 - b0) / 2 ))
	if [ $delta -ne 0 ]; then
		echo "cycle $i: statfs bfree=$s, group descriptors $g: $delta; the files grew by $grown blocks during the remount"
		off=$((off + 1))
		a=${delta#-}
		[ $a -le $max ] || max=$a
	fi
	[ $delta -le $((grown + 64)) ] || { echo "FAIL: cycle $i: statfs bfree=$s, group descriptors $g: $delta more free blocks, but the writers allocated only $grown during the remount"; exit 1; }
	[ $delta -ge -64 ] || { echo "FAIL: cycle $i: statfs bfree=$s, group descriptors $g: $delta, more than the writers' allocations in flight"; exit 1; }
	rm -f /tmp/pause /tmp/notrunc
	i=$((i + 1))
done
echo "emergency remount cycles: $i, free blocks off in $off, by at most $max"
[ $i -ge 10 ] || { echo "FAIL: only $i emergency remount cycles"; exit 1; }
touch /tmp/stop
wait
ro
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
