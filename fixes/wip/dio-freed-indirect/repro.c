// SPDX-License-Identifier: GPL-2.0
/*
 * dio-alias-repro.c - make a stale write of a freed ext2 indirect block land
 * on top of an O_DIRECT write that reused the block.
 *
 * Per iteration, in a private directory on the ext2 filesystem:
 *
 *   1. A = new file; O_DIRECT write of one block at file block 12.  This
 *      allocates A's indirect block IND (dirty bh in the bdev page cache,
 *      on A's associated-buffers list) and one data block right after it.
 *   2. Start writeback of IND without waiting for it ("kick"), from a
 *      separate kicker process:
 *        srf:   sync_file_range(bdev, IND, SYNC_FILE_RANGE_WRITE)
 *        fsync: fsync(A)  (sync_mapping_buffers()/mmb_sync() writes IND)
 *   3. ftruncate(A, 0): ext2_free_branches() zeroes IND's pointers in
 *      memory, bforget()s it and frees the block while the write may still
 *      be in flight.
 *   4. B = new file; O_DIRECT write of nblk blocks at 0.  Same directory,
 *      same thread (same allocation colour), so B's block 0 normally gets
 *      IND's block number (B is checked with FIBMAP: "hit").
 *   5. Wait for the kicked write to finish, O_DIRECT-read B and compare.
 *
 * On an affected kernel a hit block reads back as zeros (or A's old block
 * pointers) when the stale IND write reached the disk after B's write.
 *
 * Build: gcc -O2 -Wall -static -pthread -o dio-alias-repro dio-alias-repro.c
 * Run as root (FIBMAP, opening the block device, cgroup setup).
 *
 * Options:
 *   -d <bdev>    block device holding the filesystem (required)
 *   -n <iters>   iterations (default 2000)
 *   -b <nblk>    size of B in fs blocks (default 30, i.e. 120 KiB at 4 KiB)
 *   -m srf|fsync how to start writeback of IND (default srf)
 *   -D <usec>    fsync mode: delay between kick and truncate, random in
 *                [0, usec] unless -c is given (default 200)
 *   -c <wiops>   fsync mode: run the kicker in cgroup v2 "dio-alias" with
 *                io.max wiops=<wiops> on the disk (needs
 *                CONFIG_BLK_DEV_THROTTLING); makes the stale write wait in
 *                blk-throttle while B's write passes (nearly deterministic)
 *   -i           idle I/O priority for the kicker (helps with mq-deadline
 *                or bfq when the queue is busy, e.g. with -l)
 *   -l <n>       n background buffered writers (queue and wbt pressure)
 *   -w           sample /sys/block/<disk>/inflight writes right after the
 *                truncate and right after B's write returned (is the stale
 *                write still in flight when IND is freed / when B is done?)
 *   -v           verbose
 *
 * Exit status: 0 no corruption seen, 1 corruption seen, 2 setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>

#ifndef FIBMAP
#define FIBMAP			_IO(0x00, 1)
#endif

#define IOPRIO_CLASS_SHIFT	13
#define IOPRIO_CLASS_IDLE	3
#define IOPRIO_WHO_PROCESS	1

#define CG_DIR			"/sys/fs/cgroup/dio-alias"
#define A_LBLK			12	/* first block mapped via the IND block */
#define LOAD_CHUNK		(1 << 20)
#define LOAD_MAX		(64 << 20)

enum kick_mode { KICK_SRF, KICK_FSYNC };

struct kick_cmd {
	char op;		/* 's' srf, 'f' fsync, 'q' quit */
	uint64_t blk;
};

static unsigned int bs;
static int bdevfd = -1;
static int verbose;
static volatile int load_stop;
static void whole_disk(dev_t dev, unsigned int *maj, unsigned int *min);
static void die(const char *what);
static int inflight_fd = -1;

/* writes in flight on the disk (dispatched to the driver), -1 if unknown */
static long inflight_writes(void)
{
	char buf[64];
	long r, w;
	ssize_t n;

	if (inflight_fd < 0)
		return -1;
	n = pread(inflight_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%ld %ld", &r, &w) != 2)
		return -1;
	return w;
}

static void open_inflight(void)
{
	struct stat st;
	unsigned int maj, min;
	char path[128];

	if (fstat(bdevfd, &st))
		die("fstat bdev");
	whole_disk(st.st_rdev, &maj, &min);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/inflight", maj, min);
	inflight_fd = open(path, O_RDONLY);
	if (inflight_fd < 0)
		die(path);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static uint32_t get_le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void udelay_spin(unsigned long usec)
{
	struct timespec s, n;

	clock_gettime(CLOCK_MONOTONIC, &s);
	do {
		clock_gettime(CLOCK_MONOTONIC, &n);
	} while ((n.tv_sec - s.tv_sec) * 1000000L +
		 (n.tv_nsec - s.tv_nsec) / 1000 < (long)usec);
}

static long fibmap(int fd, unsigned int lblk)
{
	int blk = lblk;

	if (ioctl(fd, FIBMAP, &blk) < 0)
		return -1;
	return blk;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s));
	close(fd);
	return ret == (ssize_t)strlen(s) ? 0 : -1;
}

static int full_read(int fd, void *buf, size_t len)
{
	ssize_t ret;

	while (len) {
		ret = read(fd, buf, len);
		if (ret <= 0)
			return -1;
		buf = (char *)buf + ret;
		len -= ret;
	}
	return 0;
}

/* io.max wants the whole disk, not a partition. */
static void whole_disk(dev_t dev, unsigned int *maj, unsigned int *min)
{
	char path[128], buf[32];
	int fd;
	ssize_t n;

	*maj = major(dev);
	*min = minor(dev);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition",
		 *maj, *min);
	if (access(path, F_OK))
		return;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev",
		 *maj, *min);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		sscanf(buf, "%u:%u", maj, min);
	}
}

static void join_throttled_cgroup(int wiops)
{
	struct stat st;
	unsigned int maj, min;
	char buf[64];

	if (fstat(bdevfd, &st))
		die("fstat bdev");
	whole_disk(st.st_rdev, &maj, &min);
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK)) {
		mkdir("/sys/fs/cgroup", 0755);
		if (mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL))
			die("mount cgroup2");
	}
	if (write_str("/sys/fs/cgroup/cgroup.subtree_control", "+io"))
		die("enable io controller");
	if (mkdir(CG_DIR, 0755) && errno != EEXIST)
		die("mkdir " CG_DIR);
	snprintf(buf, sizeof(buf), "%u:%u wiops=%d", maj, min, wiops);
	if (write_str(CG_DIR "/io.max", buf))
		die("write io.max (CONFIG_BLK_DEV_THROTTLING?)");
	snprintf(buf, sizeof(buf), "%d", (int)getpid());
	if (write_str(CG_DIR "/cgroup.procs", buf))
		die("join cgroup");
	if (verbose)
		fprintf(stderr, "kicker %d in " CG_DIR ", io.max %u:%u wiops=%d\n",
			(int)getpid(), maj, min, wiops);
}

/*
 * The kicker is a process, not a thread: the io controller cannot be
 * attached per thread, and I/O priority is clearer this way too.
 */
static void kicker(int cmd_fd, int reply_fd, int idle, int wiops)
{
	struct kick_cmd cmd;
	char r;
	int fd;

	if (idle && syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
			    IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT))
		die("ioprio_set");
	if (wiops)
		join_throttled_cgroup(wiops);

	while (!full_read(cmd_fd, &cmd, sizeof(cmd))) {
		r = 'k';
		switch (cmd.op) {
		case 's':
			if (sync_file_range(bdevfd, (off_t)cmd.blk * bs, bs,
					    SYNC_FILE_RANGE_WRITE))
				r = 'e';
			break;
		case 'f':
			fd = open("A", O_RDONLY);
			if (fd < 0 || fsync(fd))
				r = 'e';
			if (fd >= 0)
				close(fd);
			break;
		default:
			_exit(0);
		}
		if (write(reply_fd, &r, 1) != 1)
			_exit(2);
	}
	_exit(0);
}

static void *load_thread(void *arg)
{
	long id = (long)arg;
	char name[32];
	char *buf;
	off_t off = 0;
	int fd;

	snprintf(name, sizeof(name), "load/L%ld", id);
	fd = open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
	buf = malloc(LOAD_CHUNK);
	if (fd < 0 || !buf)
		return NULL;
	memset(buf, 0xa5, LOAD_CHUNK);
	while (!load_stop) {
		if (pwrite(fd, buf, LOAD_CHUNK, off) != LOAD_CHUNK)
			break;
		off += LOAD_CHUNK;
		if (off >= LOAD_MAX) {
			if (ftruncate(fd, 0))
				break;
			off = 0;
		}
	}
	close(fd);
	unlink(name);
	free(buf);
	return NULL;
}

static void fill_pattern(uint64_t *p, unsigned long iter, unsigned int nblk)
{
	size_t words = bs / 8, b, w;

	for (b = 0; b < nblk; b++)
		for (w = 0; w < words; w++)
			p[b * words + w] = 0x5a5a000000000000ULL ^
				((uint64_t)iter << 28) ^ (b << 16) ^ w;
}

/* Find A's indirect block: its first entry points at A's block 12 (d). */
static long find_ind(long d)
{
	unsigned char v[4];
	long cand[] = { d - 1, d - 2, d + 1, d - 3, d - 4 };
	unsigned int i;

	for (i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		if (cand[i] <= 0)
			continue;
		/* buffered read: served from the (dirty) bh, no I/O */
		if (pread(bdevfd, v, 4, (off_t)cand[i] * bs) == 4 &&
		    get_le32(v) == (uint32_t)d)
			return cand[i];
	}
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long iters = 2000, it, nverified = 0, nhit = 0;
	unsigned long ncorrupt = 0, ncorrupt_hit = 0, delay = 200;
	unsigned long nfly_free = 0, nfly_after_b = 0;
	unsigned int nblk = 30, nload = 0, b;
	enum kick_mode mode = KICK_SRF;
	const char *bdev = NULL;
	int idle = 0, wiops = 0, sample = 0, opt, cmd_pipe[2], reply_pipe[2];
	char dir[64], r;
	pthread_t *load = NULL;
	struct statvfs sv;
	uint64_t *wbuf, *rbuf;
	void *abuf;
	pid_t kpid;

	while ((opt = getopt(argc, argv, "d:n:b:m:D:c:il:wv")) != -1) {
		switch (opt) {
		case 'd': bdev = optarg; break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'b': nblk = strtoul(optarg, NULL, 0); break;
		case 'm':
			if (!strcmp(optarg, "srf"))
				mode = KICK_SRF;
			else if (!strcmp(optarg, "fsync"))
				mode = KICK_FSYNC;
			else
				goto usage;
			break;
		case 'D': delay = strtoul(optarg, NULL, 0); break;
		case 'c': wiops = atoi(optarg); break;
		case 'i': idle = 1; break;
		case 'l': nload = strtoul(optarg, NULL, 0); break;
		case 'w': sample = 1; break;
		case 'v': verbose = 1; break;
		default:
			goto usage;
		}
	}
	if (!bdev || optind != argc - 1 || !nblk)
		goto usage;

	bdevfd = open(bdev, O_RDONLY);
	if (bdevfd < 0)
		die(bdev);
	if (sample)
		open_inflight();
	if (statvfs(argv[optind], &sv))
		die("statvfs");
	bs = sv.f_bsize;
	snprintf(dir, sizeof(dir), "%s/dio-alias.%d", argv[optind],
		 (int)getpid());
	if (mkdir(dir, 0755) || chdir(dir))
		die(dir);
	rnd_state ^= (uint64_t)getpid() << 20;

	if (posix_memalign(&abuf, 4096, bs) ||
	    posix_memalign((void **)&wbuf, 4096, (size_t)nblk * bs) ||
	    posix_memalign((void **)&rbuf, 4096, (size_t)nblk * bs))
		die("posix_memalign");
	memset(abuf, 0xc3, bs);

	if (pipe(cmd_pipe) || pipe(reply_pipe))
		die("pipe");
	kpid = fork();
	if (kpid < 0)
		die("fork");
	if (!kpid) {
		close(cmd_pipe[1]);
		close(reply_pipe[0]);
		kicker(cmd_pipe[0], reply_pipe[1], idle, wiops);
	}
	close(cmd_pipe[0]);
	close(reply_pipe[1]);

	if (nload) {
		long i;

		if (mkdir("load", 0755))
			die("mkdir load");
		load = calloc(nload, sizeof(*load));
		for (i = 0; i < (long)nload; i++)
			if (pthread_create(&load[i], NULL, load_thread,
					   (void *)i))
				die("pthread_create");
	}

	printf("dio-alias-repro: bs=%u nblk=%u mode=%s iters=%lu idle=%d wiops=%d load=%u\n",
	       bs, nblk, mode == KICK_SRF ? "srf" : "fsync", iters, idle,
	       wiops, nload);

	for (it = 0; it < iters; it++) {
		struct kick_cmd cmd = { 0 };
		long d, ind, phys = -1;
		int fda, fdb, hit = -1;
		ssize_t ret;

		fda = open("A", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fda < 0)
			die("open A");
		if (pwrite(fda, abuf, bs, (off_t)A_LBLK * bs) != (ssize_t)bs)
			die("write A");
		d = fibmap(fda, A_LBLK);
		if (d <= 0)
			die("FIBMAP A (root? ext2?)");
		ind = find_ind(d);
		if (ind > 0)
			nverified++;

		/* kick writeback of IND, then free it under the write */
		if (mode == KICK_SRF) {
			cmd.op = 's';
			cmd.blk = ind > 0 ? ind : d - 1;
			if (write(cmd_pipe[1], &cmd, sizeof(cmd)) != sizeof(cmd) ||
			    read(reply_pipe[0], &r, 1) != 1)
				die("kicker");
		} else {
			cmd.op = 'f';
			if (write(cmd_pipe[1], &cmd, sizeof(cmd)) != sizeof(cmd))
				die("kicker");
			if (wiops)
				usleep(delay);
			else
				udelay_spin(rnd() % (delay + 1));
		}
		if (ftruncate(fda, 0))
			die("truncate A");
		if (sample && inflight_writes() > 0)
			nfly_free++;

		fdb = open("B", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fdb < 0)
			die("open B");
		fill_pattern(wbuf, it, nblk);
		ret = pwrite(fdb, wbuf, (size_t)nblk * bs, 0);
		if (ret != (ssize_t)nblk * bs)
			die("write B");
		if (sample && inflight_writes() > 0)
			nfly_after_b++;

		/* let the stale write (if any) complete before reading back */
		if (mode == KICK_FSYNC && read(reply_pipe[0], &r, 1) != 1)
			die("kicker");
		if (ind > 0)
			sync_file_range(bdevfd, (off_t)ind * bs, bs,
					SYNC_FILE_RANGE_WAIT_BEFORE);

		for (b = 0; b < nblk && ind > 0; b++) {
			if (fibmap(fdb, b) == ind) {
				hit = b;
				nhit++;
				break;
			}
		}

		memset(rbuf, 0xee, (size_t)nblk * bs);
		ret = pread(fdb, rbuf, (size_t)nblk * bs, 0);
		if (ret != (ssize_t)nblk * bs)
			die("read B");
		for (b = 0; b < nblk; b++) {
			const unsigned char *p = (unsigned char *)rbuf +
						 (size_t)b * bs;
			size_t z;

			if (!memcmp(p, (char *)wbuf + (size_t)b * bs, bs))
				continue;
			for (z = 0; z < bs && !p[z]; z++)
				;
			phys = fibmap(fdb, b);
			ncorrupt++;
			if ((int)b == hit)
				ncorrupt_hit++;
			printf("CORRUPT iter %lu: B block %u (offset %zu KiB) phys %ld%s: %s, first le32 %u (A's IND %ld, A blk12 %ld)\n",
			       it, b, (size_t)b * bs / 1024, phys,
			       phys == ind ? " == A's freed IND" : "",
			       z == bs ? "all zeros" : "stale data",
			       get_le32(p), ind, d);
		}
		if (verbose && !(it % 100))
			printf("iter %lu: verified %lu hits %lu corrupt %lu\n",
			       it, nverified, nhit, ncorrupt);

		close(fdb);
		close(fda);
		unlink("B");
		unlink("A");
	}

	load_stop = 1;
	for (b = 0; b < nload; b++)
		pthread_join(load[b], NULL);
	{
		struct kick_cmd q = { .op = 'q' };

		if (write(cmd_pipe[1], &q, sizeof(q)) != sizeof(q))
			kill(kpid, SIGTERM);
	}
	waitpid(kpid, NULL, 0);
	if (wiops)
		rmdir(CG_DIR);
	if (nload)
		rmdir("load");
	if (!chdir(".."))
		rmdir(strrchr(dir, '/') + 1);

	printf("done: iters %lu ind-verified %lu B-reused-IND %lu corrupt-blocks %lu (on reused IND %lu)\n",
	       iters, nverified, nhit, ncorrupt, ncorrupt_hit);
	if (sample)
		printf("inflight: writes in flight after truncate %lu, after B's write %lu (of %lu)\n",
		       nfly_free, nfly_after_b, iters);
	return ncorrupt ? 1 : 0;

usage:
	fprintf(stderr,
		"usage: %s -d <bdev> [-n iters] [-b nblk] [-m srf|fsync] [-D usec] [-c wiops] [-i] [-l nload] [-w] [-v] <ext2 dir>\n",
		argv[0]);
	return 2;
}
