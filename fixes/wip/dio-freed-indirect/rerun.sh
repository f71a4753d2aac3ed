#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rerun.sh REV|--kernel IMG [ITERS] [MODES...]
#
# Run repro.c in a kit guest: build it static, put it on a fresh 256 MiB
# ext2 image with 4 KiB blocks (mke2fs -d), boot REV (or a stored bzImage)
# with `tools/fork boot` and run each mode ITERS times (default 4000) on
# /dev/vda mounted at /mnt.  A mode is a quoted argument list of repro.c;
# the default modes are the four fsync-kick ones that need no blk-throttle.
# -w (in-flight sampling) is always added.  Exit status: the guest's, 1 if
# any mode saw corruption.
#
#   fixes/wip/dio-freed-indirect/rerun.sh distro/7.3
#   fixes/wip/dio-freed-indirect/rerun.sh repro/fix-7.3 4000 "-m fsync -D 5000"
set -e
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../../.." && pwd)/tools/fork
if [ "$1" = --kernel ]; then
	target="--kernel $2"
	shift 2
else
	target=$1
	shift
fi
[ -n "$target" ] || { echo "usage: $0 REV|--kernel IMG [ITERS] [MODES...]" >&2; exit 2; }
iters=${1:-4000}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- "-m fsync -D 2000" "-m fsync -D 200" "-m fsync -D 5000" "-m fsync -D 2000 -i"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
gcc -O2 -Wall -static -pthread -o "$tmp/root/dio-alias-repro" "$here/repro.c"
{
	echo '#!/bin/sh'
	echo 'd=vda; bad=0'
	echo 'echo "sched: $(cat /sys/block/$d/queue/scheduler) hwq=$(ls /sys/block/$d/mq | wc -l) wc=$(cat /sys/block/$d/queue/write_cache)"'
	for m in "$@"; do
		echo "echo '=== $m -n $iters'"
		echo "/mnt/dio-alias-repro -d /dev/vda -w -n $iters $m /mnt || bad=1"
	done
	echo 'exit $bad'
} > "$tmp/root/modes.sh"
truncate -s 256M "$tmp/disk.img"
mke2fs -q -t ext2 -b 4096 -d "$tmp/root" "$tmp/disk.img"
set +e
# shellcheck disable=SC2086
/usr/bin/python3 "$kit" boot $target --disk "$tmp/disk.img" --timeout 1800 -- \
	sh -c 'uname -r; mount -t ext2 /dev/vda /mnt && sh /mnt/modes.sh'
rc=$?
e2fsck -fn "$tmp/disk.img" >/dev/null 2>&1 || echo "rerun.sh: e2fsck -fn of the image failed" >&2
exit $rc
