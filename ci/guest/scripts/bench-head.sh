set -e
fail() { echo "BENCH-FAIL: $*"; exit 1; }
run_dbench() {
	rm -rf /mnt/db; mkdir /mnt/db
	rc=0
	dbench -t "$1" -c @LOADFILE@ -D /mnt/db "$2" > /tmp/dbench.out 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then tail -n 20 /tmp/dbench.out; fail "dbench exited $rc"; fi
	awk '/^Throughput/ { lat = $0; sub(/.*max_latency=/, "", lat); sub(/ .*/, "", lat);
		printf "RESULT prog=dbench mb_per_s=%s clients=%s max_latency_ms=%s\n", $2, $4, lat;
		found = ($2 + 0 > 0) } END { exit !found }' /tmp/dbench.out || {
		tail -n 20 /tmp/dbench.out; fail "no dbench Throughput line (or 0 MB/s)"; }
	rm -rf /mnt/db
}
LOCK_STAT=/proc/lock_stat
lockstat_reset() { echo 0 > "$LOCK_STAT" || fail "cannot reset $LOCK_STAT"; }
# The classes of /proc/lock_stat in order of contentions, with their
# contention sites, up to the first uncontended one (at most 25 classes).
lockstat_dump() {
	echo "LOCKSTAT-BEGIN workload=$1"
	awk '/WARNING/ { print; next }
	     /class name/ { hdr = 1; next }
	     !hdr || /^-/ || /^\./ || /^[ \t]*$/ { next }
	     match($0, /:[ \t]+[0-9]+[ \t]+[0-9]+[ \t]/) {
		split(substr($0, RSTART + 1), f, " ")
		top = f[2] + 0 > 0 && ++n <= 25
		if (!top && $0 ~ /(sbi|bgl)->|s_lock|ext2/) print
	     }
	     top { print }' "$LOCK_STAT"
	echo "LOCKSTAT-END workload=$1"
}
