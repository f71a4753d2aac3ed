set -e
writes() { awk '{ print $5 }' /sys/block/vda/stat; }
changes() {
	sync
	w0=$(writes)
	createbench -n 100 -m 5 /mnt/d
	n=$(( $(writes) - w0 ))
	echo "@NAME@: $1: $n disk writes for 1000 directory changes"
}
mount @MOUNT@ /dev/vda /mnt
mkdir /mnt/d
changes "not DIRSYNC"
[ "$n" -lt 100 ] || { echo "FAIL: $n disk writes for 1000 changes of a directory that is not DIRSYNC: each change is written synchronously"; exit 1; }
umount /mnt
mount @DIRSYNC_MOUNT@ /dev/vda /mnt
changes "mounted -o dirsync"
[ "$n" -ge @AT_LEAST@ ] || { echo "FAIL: $n disk writes for 1000 changes of a DIRSYNC directory: changes are not all written synchronously"; exit 1; }
rmdir /mnt/d
@REPORT@
umount /mnt
