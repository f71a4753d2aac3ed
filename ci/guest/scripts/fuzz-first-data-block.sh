set -e
mount -t ext2 /dev/vda /mnt
mkdir /mnt/a /mnt/b
old=$(ext2poke /dev/vda first-data-block)
for fuzz in 60000 0; do
	exec 3>> /mnt/f 4>> /mnt/a/f 5>> /mnt/b/f
	dd if=/dev/zero bs=4096 count=8 >&3 2>/dev/null
	dd if=/dev/zero bs=4096 count=8 >&4 2>/dev/null
	dd if=/dev/zero bs=4096 count=8 >&5 2>/dev/null
	ext2poke /dev/vda first-data-block $fuzz
	exec 3>&- 4>&- 5>&-
	ext2poke /dev/vda first-data-block $old
done
rm -r /mnt/f /mnt/a /mnt/b
stress -p 2 -o 300 -s 5 /mnt
fsreport /mnt
umount /mnt
