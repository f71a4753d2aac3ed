@include faults-setup.sh@
failmount /dev/vda /mnt > /tmp/failmount
cat /tmp/failmount
grep -q "failed=[1-9]" /tmp/failmount || { echo "FAIL: no mount failed: nothing was injected"; exit 1; }
mount -t ext2 /dev/vda /mnt
stress -p 2 -o 300 -s 3 /mnt
fsreport /mnt
umount /mnt
