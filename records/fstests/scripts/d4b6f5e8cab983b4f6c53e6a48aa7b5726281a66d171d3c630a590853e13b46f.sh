mkdir -p /mnt/root
mount -t ext4 /dev/vda /mnt/root || { echo 'FSTESTS-ERROR: cannot mount the root disk'; exit 90; }
mount -t proc proc /mnt/root/proc
mount -t sysfs sysfs /mnt/root/sys
mount -t devtmpfs devtmpfs /mnt/root/dev
mkdir -p /mnt/root/dev/shm /mnt/root/dev/pts /mnt/root/results
mount -t tmpfs tmpfs /mnt/root/dev/shm
mount -t devpts devpts /mnt/root/dev/pts 2>/dev/null
mount -t tmpfs tmpfs /mnt/root/tmp
mount -t ext4 /dev/vdd /mnt/root/results || { echo 'FSTESTS-ERROR: cannot mount the results disk'; exit 90; }
ip link set lo up || echo 'FSTESTS-WARNING: cannot bring up lo: tests over TCP to localhost will fail'
cat > /mnt/root/opt/xfstests/local.config <<'FORK_EOF'
# written by tools/fork fstests (ext2 profile)
export FSTYP=ext2
export MKFS_OPTIONS='-b 1024'
export MOUNT_OPTIONS=''
export RESULT_BASE=/results/xfstests
export SCRATCH_DEV=/dev/vdc
export SCRATCH_MNT=/mnt/scratch
export TEST_DEV=/dev/vdb
export TEST_DIR=/mnt/test
FORK_EOF
cat > /mnt/root/results/fork-tests <<'FORK_EOF'
TESTS
FORK_EOF
cat > /mnt/root/results/fork-run.sh <<'FORK_EOF'
#!/bin/bash
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C HOME=/root
export DM_DISABLE_UDEV=1
export KCONFIG_PATH=/results/kernel-config
[ -s "$KCONFIG_PATH" ] || { echo "FSTESTS-ERROR: no kernel config at $KCONFIG_PATH"; exit 93; }
cd /opt/xfstests || exit 92
for d in /dev/vdb /dev/vdc; do mkfs.ext2 -F -q -b 1024 $d || { echo "FSTESTS-ERROR: mkfs.ext2 $d failed"; exit 91; }; done
mkdir -p /mnt/test /mnt/scratch /results/xfstests
echo "FSTESTS-BEGIN $(uname -r) fstests $(cat /opt/xfstests/.git/HEAD 2>/dev/null)"
./check -R xunit $(cat /results/fork-tests) &
pid=$!
# At the time limit the test running then may finish within 300 s and
# keep its result: check is sent SIGTERM as the next test starts (bash
# runs check's trap, which writes its report, once the command it waits on
# has ended).  The test check then waits on -- the next one, or one still
# running 300 s after the limit -- is cut: its processes are stopped and
# killed (not check's own), so the disks are unmounted and the host leaves
# the test to run again, rather than the host's timeout killing a guest
# with them mounted; so is whatever check waits on a minute after the
# signal (a check of the filesystems that does not end).  A cut that a
# minute of SIGKILL does not end (a task blocked in the kernel) is said to
# be so, with the blocked tasks' stacks: the host records it as a hang.
# check runs a test as `bash -c "...; exec ./tests/T"`, and bash execs it
# by its full path: check's one child whose command line ends in tests/T.
running() { pgrep -P $pid -f '/tests/[^/ ]+/[^/ ]+$'; }
tree() { local c; for c in $(pgrep -P "$1"); do kill -STOP "$c"; echo "$c"; tree "$c"; done; }
live() { case $(ps -o stat= -p "$1" 2>/dev/null) in Z*|"") return 1;; esac; }
( sleep 1; echo FSTESTS-TIME-LIMIT; at=$(running); end=$((SECONDS + 300))
  while kill -0 $pid 2>/dev/null && [ $SECONDS -lt $end ]; do
	now=$(running)
	[ -n "$now" ] && [ "$now" != "$at" ] && break
	sleep 1
  done
  kill -TERM $pid 2>/dev/null || exit 0
  end=$((SECONDS + 60))
  sleep 1
  roots=$(running)
  while [ -z "$roots" ]; do
	kill -0 $pid 2>/dev/null || exit 0
	[ $SECONDS -lt $end ] || { roots=$(pgrep -P $pid); break; }
	sleep 1
	roots=$(running)
  done
  [ -n "$roots" ] || exit 0
  : > /tmp/fork-cut
  echo FSTESTS-CUT
  # every process of the test as first listed, and those they fork after:
  # a worker blocked in the kernel outlives its killed parent, under init
  all=""
  for t in $roots; do kill -STOP $t && all="$all $t $(tree $t)"; done
  for i in $(seq 60); do
	p=""
	for t in $all; do live $t && p="$p $t $(tree $t)"; done
	[ -n "$p" ] || exit 0
	all="$all $p"
	kill -KILL $p 2>/dev/null; sleep 1
  done
  echo FSTESTS-CUT-FAILED
  echo w > /proc/sysrq-trigger ) &
watch=$!
wait $pid
rc=$?
# a cut goes on until the test's last process has ended (or is said not to)
if [ -e /tmp/fork-cut ]; then wait $watch; else kill $watch 2>/dev/null; fi
echo "FSTESTS-END check-exit=$rc"
sync
exit 0
FORK_EOF
chroot /mnt/root /bin/bash /results/fork-run.sh
rc=$?
sync
for m in $(awk '$2 ~ "^/mnt/root/" { print $2 }' /proc/mounts | sort -r); do umount $m 2>/dev/null || umount -l $m; done
exit $rc
