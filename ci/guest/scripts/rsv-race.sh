set -e
mount -t ext2 /dev/vda /mnt
rsvgrow -t 40 -b 7 -k 64 -w 8 /mnt /mnt /mnt /mnt
fsreport /mnt
umount /mnt
