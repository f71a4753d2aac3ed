set -e
mount -t ext2 /dev/vda /mnt
stress -p 2 -o 1500 -s 1 /mnt
mkdir /mnt/a /mnt/b
seedload -n 9 -m 200 /mnt/a /mnt/b
rmdir /mnt/a /mnt/b
fsreport /mnt
umount /mnt
