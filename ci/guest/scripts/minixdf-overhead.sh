set -e
blocks() { fsreport /mnt | sed -n 's/.* blocks=\([0-9]*\).*/\1/p'; }
mount -t ext2 /dev/vda /mnt
a=$(blocks)
mount -o remount,minixdf /mnt
b=$(blocks)
mount -o remount,bsddf /mnt
c=$(blocks)
echo "minixdf-overhead: f_blocks bsddf $a, minixdf $b, bsddf again $c"
[ "$a" -lt "$b" ] || { echo "FAIL: f_blocks $a under bsddf is not below $b under minixdf"; exit 1; }
[ "$c" = "$a" ] || { echo "FAIL: f_blocks is $c after the remount back to bsddf, not $a: the overhead was not recomputed"; exit 1; }
fsreport /mnt
umount /mnt
