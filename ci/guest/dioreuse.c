// SPDX-License-Identifier: GPL-2.0
/*
 * dioreuse - does a write of a freed indirect block that is still in flight
 * land on the O_DIRECT data of the file that got the block next?
 *
 * Each iteration, in a directory of its own on a mounted ext2 filesystem
 * on DEV:
 *
 *   1. A: one O_DIRECT block write at file block 12, which allocates A's
 *      indirect block (IND) and a data block in one run, IND first.  IND is
 *      a dirty buffer of the block device, on A's list of metadata buffers.
 *   2. The kicker, a second process, fsync()s A: that writes IND and waits
 *      for it.  In the cgroup CGROUP, whose io.max allows a few writes a
 *      second, the write of IND waits in blk-throttle for about 1/WIOPS s.
 *      Once the kicker sleeps in the wait, the write is in flight.
 *   3. ftruncate(A, 0) frees IND (zeroing its pointers in memory first).
 *   4. B: a new file in the same directory, written by the same process
 *      (the same allocation goal), gets IND as its block 0 and writes it
 *      with one O_DIRECT write of BLOCKS blocks.
 *   5. Once the kicker is done (after its fsync, one O_DIRECT write of a
 *      file of its own, which blk-throttle lets through after the write of
 *      IND), B is read back with O_DIRECT and compared block by block.
 *
 * On a kernel that does not wait for the write of IND before freeing the
 * block, the held-back write lands after B's and B's block 0 reads back as
 * zeros.  A kernel that waits blocks in ftruncate() until the write is done
 * (the iteration counts as "waited" when the call took 50 ms or more).
 *
 * An iteration sets the race up when the kicker was asleep before the
 * truncate and B got IND.  The program fails when any block of B reads
 * back wrong, and when fewer than MIN iterations set the race up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#ifndef FIBMAP
#define FIBMAP		_IO(0x00, 1)
#endif

#define IND_LBLK	12	/* the first file block mapped through IND */
#define MAX_BLOCKS	12	/* B stays within the direct blocks */
#define MAX_REPORTS	10	/* wrong blocks printed one by one */
#define ASLEEP_NS	(2 * NSEC_PER_SEC)
#define WAITED_NS	(50 * 1000 * 1000ULL)

struct kicker {
	pid_t pid;
	int cmd;	/* to the kicker */
	int reply;	/* from the kicker */
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: dioreuse [-n ITERS] [-b BLOCKS] [-c CGROUP] [-a MIN] DIR DEV\n"
		"  ITERS times (default 40): allocate an indirect block to a file A\n"
		"  in DIR, have a second process (in the cgroup v2 directory CGROUP,\n"
		"  if given) fsync A, truncate A while that write is in flight, and\n"
		"  write BLOCKS blocks (default 8, at most 12) to a new file B with\n"
		"  O_DIRECT, which gets the freed block; read B back.  DEV is the\n"
		"  disk DIR is on.  Fails on any wrong block of B, and when fewer\n"
		"  than MIN iterations (default ITERS / 2) set the race up.\n");
}

static long fibmap(int fd, long lblk)
{
	int blk = (int)lblk;

	if (ioctl(fd, FIBMAP, &blk))
		fail_errno("ioctl FIBMAP", NULL);
	return blk;
}

/*
 * A's indirect block, allocated in one run with the data block D it points
 * to (just before it): the block near D whose first entry is D.  The block
 * device's cache holds the buffer, so a buffered read of the device sees it.
 */
static long find_ind(int devfd, unsigned int bs, long d)
{
	static const int near[] = { -1, -2, 1, -3, 2, -4, 3, 4 };
	unsigned char v[4];
	unsigned int i;
	long cand;

	for (i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
		cand = d + near[i];
		if (cand > 0 &&
		    pread(devfd, v, sizeof(v), (off_t)cand * bs) == sizeof(v) &&
		    get32(v) == (uint32_t)d)
			return cand;
	}
	return -1;
}

static void send_cmd(struct kicker *k, char c)
{
	if (write(k->cmd, &c, 1) != 1)
		fail_errno("write", "(kicker pipe)");
}

static void wait_reply(struct kicker *k)
{
	char c;
	ssize_t n;

	while ((n = read(k->reply, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		fail("the kicker process exited");
}

/* Is @pid in uninterruptible sleep ("D" in /proc/PID/stat)? */
static int asleep(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	path_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_errno("open", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		fail("%s: cannot read it", path);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'D';
}

/*
 * Wait until the kicker sleeps in its fsync (1) or has answered, or
 * ASLEEP_NS have passed (0).
 */
static int kicker_asleep(struct kicker *k)
{
	struct pollfd pfd = { .fd = k->reply, .events = POLLIN };
	struct timespec pause = { 0, 20 * 1000 };
	uint64_t end = now_ns() + ASLEEP_NS;

	do {
		if (asleep(k->pid))
			return 1;
		if (poll(&pfd, 1, 0) > 0)
			return 0;
		nanosleep(&pause, NULL);
	} while (now_ns() < end);
	return 0;
}

static void join_cgroup(const char *cgroup)
{
	char path[512], pid[32];
	int fd, len;

	path_fmt(path, sizeof(path), "%s/cgroup.procs", cgroup);
	len = snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(path, O_WRONLY);
	if (fd < 0)
		fail_errno("open", path);
	if (write(fd, pid, len) != len)
		fail_errno("write", path);
	close(fd);
}

/*
 * The kicker: fsync A on each 'f', then an O_DIRECT write of its own file
 * K, which blk-throttle queues behind what the fsync left there; answer
 * when both are done.  K is written once before the kicker joins CGROUP.
 */
static _Noreturn void kicker_run(int cmd, int reply, const char *cgroup,
				 unsigned char *buf, unsigned int bs)
{
	int fd, kfd;
	char c;
	ssize_t n;

	kfd = open("K", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
	if (kfd < 0)
		fail_errno("open", "K");
	if (pwrite_full(kfd, buf, bs, 0, NULL) || fsync(kfd))
		fail_errno("write", "K");
	if (cgroup)
		join_cgroup(cgroup);
	c = 'r';
	for (;;) {
		if (write(reply, &c, 1) != 1)
			fail_errno("write", "(reply pipe)");
		while ((n = read(cmd, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1 || c != 'f')
			break;
		fd = open("A", O_RDONLY);
		if (fd < 0)
			fail_errno("open", "A");
		if (fsync(fd))
			fail_errno("fsync", "A");
		close(fd);
		if (pwrite_full(kfd, buf, bs, 0, NULL))
			fail_errno("write", "K");
	}
	close(kfd);
	exit(0);
}

static void start_kicker(struct kicker *k, const char *cgroup,
			 unsigned char *buf, unsigned int bs)
{
	int cmd[2], reply[2];

	if (pipe(cmd) || pipe(reply))
		fail_errno("pipe", NULL);
	fflush(stdout);
	k->pid = fork();
	if (k->pid < 0)
		fail_errno("fork", NULL);
	if (!k->pid) {
		close(cmd[1]);
		close(reply[0]);
		kicker_run(cmd[0], reply[1], cgroup, buf, bs);
	}
	close(cmd[0]);
	close(reply[1]);
	k->cmd = cmd[1];
	k->reply = reply[0];
	wait_reply(k);
}

static void stop_kicker(struct kicker *k)
{
	int status;

	send_cmd(k, 'q');
	if (waitpid(k->pid, &status, 0) < 0)
		fail_errno("waitpid", NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the kicker process failed (status %d)", status);
	close(k->cmd);
	close(k->reply);
}

static int all_zero(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t iters = 40, nblk = 8, min = UINT64_MAX, it;
	uint64_t ninflight = 0, nreused = 0, nsetup = 0, nwaited = 0;
	uint64_t nwrong = 0, nwrong_ind = 0;
	unsigned char *abuf, *wbuf, *rbuf;
	const char *cgroup = NULL, *dir, *dev;
	char sub[64];
	struct statvfs sv;
	struct kicker k;
	unsigned int bs, b;
	int opt, devfd;

	prog_name = "dioreuse";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "n:b:c:a:h")) != -1) {
		switch (opt) {
		case 'n':
			iters = parse_u64(optarg, 'n', 1, 100000);
			break;
		case 'b':
			nblk = parse_u64(optarg, 'b', 1, MAX_BLOCKS);
			break;
		case 'c':
			cgroup = optarg;
			break;
		case 'a':
			min = parse_u64(optarg, 'a', 0, 100000);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("unknown option");
		}
	}
	if (argc - optind != 2)
		usage_error("DIR and DEV expected");
	dir = argv[optind];
	dev = argv[optind + 1];
	if (min == UINT64_MAX)
		min = iters / 2;
	if (min > iters)
		usage_error("-a: %llu is more than the %llu iterations",
			    (unsigned long long)min, (unsigned long long)iters);

	if (statvfs(dir, &sv))
		fail_errno("statvfs", dir);
	bs = sv.f_bsize;
	if (bs < 512 || bs > 65536)
		fail("%s: unexpected block size %u", dir, bs);
	devfd = open(dev, O_RDONLY);
	if (devfd < 0)
		fail_errno("open", dev);
	path_fmt(sub, sizeof(sub), "dioreuse.%d", (int)getpid());
	if (chdir(dir))
		fail_errno("chdir", dir);
	if (mkdir(sub, 0755) || chdir(sub))
		fail_errno("mkdir", sub);
	if (posix_memalign((void **)&abuf, 4096, bs) ||
	    posix_memalign((void **)&wbuf, 4096, nblk * bs) ||
	    posix_memalign((void **)&rbuf, 4096, nblk * bs))
		fail("out of memory");
	memset(abuf, 0xc3, bs);
	start_kicker(&k, cgroup, abuf, bs);

	for (it = 0; it < iters; it++) {
		int fda, fdb, inflight, reused = 0;
		long d, ind, phys;
		uint64_t t;
		ssize_t n;

		fda = open("A", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fda < 0)
			fail_errno("open", "A");
		if (pwrite_full(fda, abuf, bs, (off_t)IND_LBLK * bs, NULL))
			fail_errno("pwrite", "A");
		d = fibmap(fda, IND_LBLK);
		ind = d > 0 ? find_ind(devfd, bs, d) : -1;

		send_cmd(&k, 'f');
		inflight = kicker_asleep(&k);
		t = now_ns();
		if (ftruncate(fda, 0))
			fail_errno("ftruncate", "A");
		if (now_ns() - t >= WAITED_NS)
			nwaited++;

		fdb = open("B", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fdb < 0)
			fail_errno("open", "B");
		fill_pattern(wbuf, nblk * bs, it + 1, 0);
		if (pwrite_full(fdb, wbuf, nblk * bs, 0, NULL))
			fail_errno("pwrite", "B");
		wait_reply(&k);

		for (b = 0; b < nblk && ind > 0; b++)
			if (fibmap(fdb, b) == ind)
				reused = 1;
		ninflight += inflight;
		nreused += reused;
		nsetup += inflight && reused;

		n = pread_full(fdb, rbuf, nblk * bs, 0);
		if (n < 0)
			fail_errno("pread", "B");
		if (n != (ssize_t)(nblk * bs))
			fail("B: %zd bytes read back, not %llu", n,
			     (unsigned long long)(nblk * bs));
		for (b = 0; b < nblk; b++) {
			size_t off = (size_t)b * bs;

			if (!memcmp(rbuf + off, wbuf + off, bs))
				continue;
			phys = fibmap(fdb, b);
			nwrong++;
			if (phys == ind)
				nwrong_ind++;
			if (nwrong <= MAX_REPORTS)
				printf("dioreuse: iteration %llu: B's block %u (disk block %ld%s) reads back %s\n",
				       (unsigned long long)it, b, phys,
				       phys == ind ? ", A's freed indirect block" : "",
				       all_zero(rbuf + off, bs) ? "as zeros" : "other data");
		}
		close(fdb);
		close(fda);
		if (unlink("B") || unlink("A"))
			fail_errno("unlink", "A or B");
	}
	stop_kicker(&k);
	if (unlink("K") || chdir("..") || rmdir(sub))
		fail_errno("remove", sub);

	printf("dioreuse: %llu iterations with %u-byte blocks: the write of A's indirect block was in flight at the truncate in %llu, B got the block in %llu, both (the race set up) in %llu; the truncate waited 50 ms or more in %llu; %llu of B's blocks read back wrong (%llu of them A's freed indirect block)\n",
	       (unsigned long long)iters, bs, (unsigned long long)ninflight,
	       (unsigned long long)nreused, (unsigned long long)nsetup,
	       (unsigned long long)nwaited, (unsigned long long)nwrong,
	       (unsigned long long)nwrong_ind);
	if (nwrong)
		fail("%llu of B's blocks do not hold what its O_DIRECT write put there (%llu on A's freed indirect block): a write of the freed block landed after B's",
		     (unsigned long long)nwrong, (unsigned long long)nwrong_ind);
	if (nsetup < min)
		fail("the race was set up in %llu of %llu iterations, fewer than %llu: the test proves nothing (see the counts above)",
		     (unsigned long long)nsetup, (unsigned long long)iters,
		     (unsigned long long)min);
	printf("RESULT prog=dioreuse iters=%llu setup=%llu waited=%llu wrong=0 blocksize=%u\n",
	       (unsigned long long)iters, (unsigned long long)nsetup,
	       (unsigned long long)nwaited, bs);
	return 0;
}
