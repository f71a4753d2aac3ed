mkdir -p /mnt/root
mount -t ext4 @ROOT_DEV@ /mnt/root || { echo 'FSTESTS-ERROR: cannot mount the root disk'; exit 90; }
mount -t proc proc /mnt/root/proc
mount -t sysfs sysfs /mnt/root/sys
mount -t devtmpfs devtmpfs /mnt/root/dev
mkdir -p /mnt/root/dev/shm /mnt/root/dev/pts /mnt/root/results
mount -t tmpfs tmpfs /mnt/root/dev/shm
mount -t devpts devpts /mnt/root/dev/pts 2>/dev/null
mount -t tmpfs tmpfs /mnt/root/tmp
mount -t ext4 @RESULTS_DEV@ /mnt/root/results || { echo 'FSTESTS-ERROR: cannot mount the results disk'; exit 90; }
ip link set lo up || echo 'FSTESTS-WARNING: cannot bring up lo: tests over TCP to localhost will fail'
cat > /mnt/root/opt/xfstests/local.config <<'FORK_EOF'
@PROFILE@
FORK_EOF
cat > /mnt/root/results/fork-tests <<'FORK_EOF'
@TESTS@
FORK_EOF
cat > /mnt/root/results/fork-run.sh <<'FORK_EOF'
@RUN@
FORK_EOF
chroot /mnt/root /bin/bash /results/fork-run.sh
rc=$?
sync
for m in $(awk '$2 ~ "^/mnt/root/" { print $2 }' /proc/mounts | sort -r); do umount $m 2>/dev/null || umount -l $m; done
exit $rc
