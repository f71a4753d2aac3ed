@include faults-setup.sh@
for a in failslab fail_page_alloc; do
	echo Y > $d/$a/task-filter
	echo 1 > $d/$a/interval
	echo -1 > $d/$a/times
	echo 3 > $d/$a/probability
done
mount -t ext2 /dev/vda /mnt
fillspace -p 3 /mnt
fillspace -f -p 3 /mnt > /tmp/fill
cat /tmp/fill
grep -q "injected=[1-9]" /tmp/fill || { echo "FAIL: no fault was injected"; exit 1; }
stress -p 2 -o 300 -s 9 /mnt
fsreport /mnt
umount /mnt
