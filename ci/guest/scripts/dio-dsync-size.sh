set -e
wc=$(cat /sys/block/vda/queue/write_cache)
[ "$wc" = "write through" ] || { echo "FAIL: vda's write cache is '$wc': the test needs a disk without a volatile write cache (QEMU cache=writethrough)"; exit 1; }
mount -t ext2 /dev/vda /mnt
dsyncsize /mnt/f /dev/vda
rm /mnt/f
fsreport /mnt
umount /mnt
