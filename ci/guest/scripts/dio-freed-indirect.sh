set -e
cg=/sys/fs/cgroup
disk=/sys/block/vda
nothrottle() {
	echo "FAIL: dio-freed-indirect needs blk-throttle (cgroup v2 io.max), which this kernel lacks ($1): check it with --config throttle"
	exit 1
}
grep -qw cgroup2 /proc/filesystems || nothrottle "no cgroup2: CONFIG_CGROUPS"
mount -t cgroup2 none $cg
grep -qw io $cg/cgroup.controllers || nothrottle "no io controller: CONFIG_BLK_CGROUP"
echo +io > $cg/cgroup.subtree_control
mkdir $cg/kicker
[ -e $cg/kicker/io.max ] || nothrottle "no io.max: CONFIG_BLK_DEV_THROTTLING"
limit="$(cat $disk/dev) wiops=2"
{ echo "$limit" > $cg/kicker/io.max; } 2>/dev/null || true
# read back: the kernel shows the limit as "MAJ:MIN rbps=max ... wiops=2"
if ! grep -q "^${limit% *} .*${limit#* }\$" $cg/kicker/io.max; then
	echo "FAIL: dio-freed-indirect: io.max of the kicker's cgroup did not take \"$limit\" for vda (it reads \"$(tr '\n' ' ' < $cg/kicker/io.max)\"): nothing would hold its writes back"
	exit 1
fi
echo "dio-freed-indirect: io.max of the kicker's cgroup: $(cat $cg/kicker/io.max)"
mount -t ext2 /dev/vda /mnt
rc=0
dioreuse -v -n 40 -c $cg/kicker /mnt /dev/vda || rc=1
fsreport /mnt
umount /mnt
exit $rc
