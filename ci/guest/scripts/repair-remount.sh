set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/d
echo x > /mnt/d/f
ino=$(stat -c %i /mnt/d)
umount /mnt
blk=$(ext2poke /dev/vda iblock $ino)
dd if=/dev/vda of=/tmp/dirblock bs=1024 skip=$blk count=1 2>/dev/null
first=$(ext2poke /dev/vda leak 0 100)
dd if=/dev/zero of=/dev/vda bs=1024 seek=$blk count=1 conv=notrunc 2>/dev/null
sync
mount -t ext2 -o errors=remount-ro /dev/vda /mnt
seedload -n 9 -m 50 /mnt
if cat /mnt/d/f > /dev/null 2>&1; then echo "FAIL: corrupted directory read"; exit 1; fi
dmesg | grep -q "error: remounting filesystem read-only" || { echo "FAIL: no ext2 error"; exit 1; }
grep -q "^/dev/vda /mnt ext2 ro," /proc/mounts || { echo "FAIL: not read-only after the error"; exit 1; }
dd if=/tmp/dirblock of=/dev/vda bs=1024 seek=$blk count=1 conv=notrunc 2>/dev/null
ext2poke /dev/vda unleak 0 $first 100
ext2poke /dev/vda clear-error
sync
echo 3 > /proc/sys/vm/drop_caches
mount -o remount,rw /mnt
cat /mnt/d/f > /dev/null
seedload -n 9 -m 50 /mnt
fsreport /mnt > /tmp/statfs
ext2poke /dev/vda sums > /tmp/sums
cat /tmp/statfs /tmp/sums
s=$(tr ' ' '\n' < /tmp/statfs | sed -n 's/^bfree=//p')
g=$(tr ' ' '\n' < /tmp/sums | sed -n 's/^bfree=//p')
[ -n "$s" ] && [ "$s" = "$g" ] || { echo "FAIL: statfs bfree=$s, group descriptors $g"; exit 1; }
rm -r /mnt/d
fsreport /mnt
umount /mnt
