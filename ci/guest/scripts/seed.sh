set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/a /mnt/b
seedload -n 9 -m 200 /mnt/a /mnt/b /mnt/b
rmdir /mnt/a /mnt/b
fsreport /mnt
umount /mnt
