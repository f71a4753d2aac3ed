set -e
mount -t ext2 /dev/vda /mnt
stress -p 4 -t 40 -s 7 /mnt > /tmp/stress.out
cat /tmp/stress.out
grep -q " dio=[1-9]" /tmp/stress.out || { echo "FAIL: stress made no O_DIRECT write"; exit 1; }
stress -p 4 -t 20 -s 5 -S /mnt
mkdir /mnt/a /mnt/b /mnt/c
seedload -n 16 -m 300 /mnt/a /mnt/b /mnt/c /mnt/c
rmdir /mnt/a /mnt/b /mnt/c
fillspace -p 3 /mnt
stress -p 2 -t 20 -s 11 /mnt
fsreport /mnt
umount /mnt
mount -t ext2 -o ro /dev/vda /mnt
fsreport /mnt
umount /mnt
