set -e
mount -t ext2 /dev/vda /mnt
for r in 1 2 3 4; do
	n=$((r * 64))
	mkdir /mnt/same$r /mnt/x$r /mnt/y$r /mnt/quad$r
	seedload -k -n $n -m 2 /mnt/same$r /mnt/same$r
	seedload -k -n $n -m 2 /mnt/x$r /mnt/y$r
	seedload -k -n $((n * 8)) -m 1 /mnt/quad$r /mnt/quad$r /mnt/quad$r /mnt/quad$r
done
umount /mnt
