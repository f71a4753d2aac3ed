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
 *   2. The kicker, a second process, fsync()s A: its first write is that of
 *      IND.  In the cgroup CGROUP, whose io.max allows a few writes a
 *      second, blk-throttle holds each of its writes for about 1/WIOPS s.
 *      The main process waits until the kicker sleeps in the fsync.
 *   3. ftruncate(A, 0) frees IND (zeroing its pointers in memory first).
 *   4. B: a new file in the same directory, written by the same process
 *      (the same allocation goal), gets IND as its block 0 and writes it
 *      with one O_DIRECT write of BLOCKS blocks.
 *   5. Once the kicker's fsync returned (its write of the inode, queued in
 *      blk-throttle behind that of IND, is done), B is read back with
 *      O_DIRECT and compared block by block.
 *
 * On a kernel that does not wait for the write of IND before freeing the
 * block, the held-back write lands after B's and B's block 0 reads back as
 * zeros.  A kernel that waits blocks in ftruncate() until the write has
 * left blk-throttle and is done.
 *
 * Whether the write was really held is read from CGROUP's io.stat: its
 * wios counts the kicker's writes of DEV as they leave blk-throttle (a
 * write it does not hold is counted when it is submitted).  An iteration
 * sets the race up when B got IND, the kicker was asleep in its fsync and
 * none of its writes had left blk-throttle when the truncate began, and
 * then either the truncate waited for that write (it returned 50 ms or
 * more later, after the write had left) or the write left only after B's
 * write was done and B's block on IND read back wrong.  A write that left
 * before the truncate, or between the truncate and the end of B's write
 * without the truncate waiting for it, and counters that never move (a
 * limit on another disk, writes not charged to CGROUP) set nothing up.
 * Without CGROUP nothing is measured and no iteration counts.
 *
 * The program fails when any block of B reads back wrong, and when fewer
 * than MIN iterations set the race up.  With -v it prints what it saw in
 * each iteration; -R replays such lines (a guest's log) through the same
 * accounting and verdict without touching a filesystem.
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
#include <sys/sysmacros.h>
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

/* when the kicker cgroup's wios is read in an iteration */
enum {
	W_CMD,		/* before the kicker is told to fsync A */
	W_TRUNC,	/* when the truncate begins */
	W_TRUNCATED,	/* when it returned */
	W_WRITTEN,	/* when B's write returned */
	W_DONE,		/* when the kicker's fsync returned */
	W_NR
};

/* what one iteration saw */
struct sample {
	int asleep;		/* the kicker slept in its fsync at the truncate */
	int reused;		/* B got IND */
	int measured;		/* w[] was read (a cgroup was given) */
	uint64_t w[W_NR];
	uint64_t truncate_ns;	/* how long ftruncate(A) took */
	unsigned int wrong;	/* B's blocks that read back wrong */
	unsigned int wrong_ind;	/* ... of them B's block on IND */
};

/* how an iteration is counted: set up, or why not */
enum verdict {
	V_WAITED,	/* set up: the truncate waited for the held write */
	V_LANDED,	/* set up: the held write landed on B's block */
	V_NOT_MEASURED,
	V_AWAKE,
	V_LEFT_EARLY,
	V_NOT_REUSED,
	V_NEVER_LEFT,
	V_LANDED_ELSEWHERE,
	V_NOT_HELD,
};

static const char *const verdict_text[] = {
	[V_WAITED] = "set up: the truncate waited for the held write",
	[V_LANDED] = "set up: the held write landed after B's, on B's block",
	[V_NOT_MEASURED] = "not set up: no cgroup, the hold is not measured",
	[V_AWAKE] = "not set up: the kicker was not asleep in its fsync",
	[V_LEFT_EARLY] = "not set up: a write of the kicker had left blk-throttle before the truncate",
	[V_NOT_REUSED] = "not set up: B did not get the freed block",
	[V_NEVER_LEFT] = "not set up: no write of the kicker left blk-throttle before its fsync returned",
	[V_LANDED_ELSEWHERE] = "not set up: a write was held past B's, but B's block on the freed block read back right",
	[V_NOT_HELD] = "not set up: the write left blk-throttle before B's was done, and the truncate did not wait for it",
};

static enum verdict classify(const struct sample *s)
{
	const uint64_t *w = s->w;

	if (!s->measured)
		return V_NOT_MEASURED;
	if (!s->asleep)
		return V_AWAKE;
	if (w[W_TRUNC] != w[W_CMD])
		return V_LEFT_EARLY;
	if (!s->reused)
		return V_NOT_REUSED;
	if (w[W_DONE] == w[W_CMD])
		return V_NEVER_LEFT;
	if (w[W_TRUNCATED] > w[W_CMD] && s->truncate_ns >= WAITED_NS)
		return V_WAITED;
	if (w[W_WRITTEN] == w[W_CMD])
		return s->wrong_ind ? V_LANDED : V_LANDED_ELSEWHERE;
	return V_NOT_HELD;
}

struct totals {
	uint64_t iters, asleep, held, reused, waited, landed, setup;
	uint64_t wrong, wrong_ind;
};

static void count(struct totals *t, const struct sample *s, enum verdict v)
{
	t->iters++;
	t->asleep += s->asleep;
	t->held += s->measured && s->asleep && s->w[W_TRUNC] == s->w[W_CMD];
	t->reused += s->reused;
	t->waited += v == V_WAITED;
	t->landed += v == V_LANDED;
	t->setup += v == V_WAITED || v == V_LANDED;
	t->wrong += s->wrong;
	t->wrong_ind += s->wrong_ind;
}

static void print_sample(uint64_t it, const struct sample *s, enum verdict v)
{
	char w[128];

	if (s->measured)
		snprintf(w, sizeof(w), "%llu,%llu,%llu,%llu,%llu",
			 (unsigned long long)s->w[W_CMD],
			 (unsigned long long)s->w[W_TRUNC],
			 (unsigned long long)s->w[W_TRUNCATED],
			 (unsigned long long)s->w[W_WRITTEN],
			 (unsigned long long)s->w[W_DONE]);
	else
		snprintf(w, sizeof(w), "-");
	printf("dioreuse: iteration %llu: asleep=%d reused=%d wios=%s truncate_us=%llu wrong=%u wrong_ind=%u: %s\n",
	       (unsigned long long)it, s->asleep, s->reused, w,
	       (unsigned long long)(s->truncate_ns / 1000), s->wrong,
	       s->wrong_ind, verdict_text[v]);
}

/* The summary, the verdict, and RESULT when it passes. */
static int finish(const struct totals *t, uint64_t min, unsigned int bs)
{
	char what[64] = "replayed";

	if (bs)
		snprintf(what, sizeof(what), "with %u-byte blocks", bs);
	printf("dioreuse: %llu iterations %s: the kicker was asleep in its fsync at the truncate in %llu, none of its writes had left blk-throttle then in %llu, B got the freed block in %llu; the race was set up in %llu: the truncate waited for the held write in %llu, the held write landed on B's block in %llu; %llu of B's blocks read back wrong (%llu of them A's freed indirect block)\n",
	       (unsigned long long)t->iters, what, (unsigned long long)t->asleep,
	       (unsigned long long)t->held, (unsigned long long)t->reused,
	       (unsigned long long)t->setup, (unsigned long long)t->waited,
	       (unsigned long long)t->landed, (unsigned long long)t->wrong,
	       (unsigned long long)t->wrong_ind);
	if (t->wrong)
		fail("%llu of B's blocks do not hold what its O_DIRECT write put there (%llu on A's freed indirect block): a write of the freed block landed after B's",
		     (unsigned long long)t->wrong,
		     (unsigned long long)t->wrong_ind);
	if (t->setup < min)
		fail("the race was set up in %llu of %llu iterations, fewer than %llu: the test proves nothing (see the counts above)",
		     (unsigned long long)t->setup, (unsigned long long)t->iters,
		     (unsigned long long)min);
	printf("RESULT prog=dioreuse iters=%llu setup=%llu waited=%llu wrong=0 blocksize=%u\n",
	       (unsigned long long)t->iters, (unsigned long long)t->setup,
	       (unsigned long long)t->waited, bs);
	return 0;
}

/* The unsigned number after " KEY=" in @line, or -1 (none, or not one). */
static int field_u64(const char *line, const char *key, uint64_t *v)
{
	char pat[32], *end;
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != ',' && *end != ':' &&
		      *end != '\n'))
		return -1;
	return 0;
}

/*
 * -R: the iterations of FILE (lines as -v prints them; others, as in a
 * guest's log, are skipped), counted and judged as a run would.
 */
static int replay(const char *path, uint64_t min, int min_set)
{
	static const char tag[] = "dioreuse: iteration ";
	struct totals t = { 0 };
	char line[1024];
	uint64_t lineno = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		fail_errno("open", path);
	while (fgets(line, sizeof(line), f)) {
		struct sample s = { 0 };
		uint64_t v[5];
		const char *w;
		int i, n = 0;

		lineno++;
		if (strncmp(line, tag, sizeof(tag) - 1) ||
		    !strstr(line, " asleep="))
			continue;
		w = strstr(line, " wios=");
		if (!w || field_u64(line, "asleep", &v[0]) ||
		    field_u64(line, "reused", &v[1]) ||
		    field_u64(line, "truncate_us", &v[2]) ||
		    field_u64(line, "wrong", &v[3]) ||
		    field_u64(line, "wrong_ind", &v[4]))
			fail("%s:%llu: not an iteration as -v prints it",
			     path, (unsigned long long)lineno);
		s.asleep = v[0] != 0;
		s.reused = v[1] != 0;
		s.truncate_ns = v[2] * 1000;
		s.wrong = v[3];
		s.wrong_ind = v[4];
		w += strlen(" wios=");
		if (*w != '-') {
			for (i = 0; i < W_NR; i++) {
				unsigned long long x;
				int used;

				if (sscanf(w + n, "%llu%n", &x, &used) != 1 ||
				    w[n + used] != (i < W_NR - 1 ? ',' : ' '))
					fail("%s:%llu: wios= takes %d numbers",
					     path, (unsigned long long)lineno,
					     W_NR);
				s.w[i] = x;
				n += used + 1;
			}
			s.measured = 1;
		}
		count(&t, &s, classify(&s));
	}
	fclose(f);
	if (!t.iters)
		fail("%s: no iteration in it", path);
	return finish(&t, min_set ? min : t.iters / 2, 0);
}

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: dioreuse [-v] [-n ITERS] [-b BLOCKS] [-c CGROUP] [-a MIN] DIR DEV\n"
		"       dioreuse [-a MIN] -R FILE\n"
		"  ITERS times (default 40): allocate an indirect block to a file A\n"
		"  in DIR, have a second process (in the cgroup v2 directory CGROUP,\n"
		"  whose io.max must limit the writes of DEV) fsync A, truncate A\n"
		"  while that write is held in blk-throttle, and write BLOCKS blocks\n"
		"  (default 8, at most 12) to a new file B with O_DIRECT, which gets\n"
		"  the freed block; read B back.  DEV is the disk DIR is on.  Fails\n"
		"  on any wrong block of B, and when fewer than MIN iterations\n"
		"  (default ITERS / 2) set the race up, as CGROUP's io.stat shows.\n"
		"  -v prints each iteration; -R replays such lines from FILE.\n");
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

/* The whole of a small file (a cgroup's), NUL-terminated, into @buf. */
static void read_small(const char *path, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_errno("open", path);
	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail_errno("read", path);
		}
		n += r;
	}
	close(fd);
	if (n == len - 1)
		fail("%s: longer than %zu bytes", path, len - 1);
	buf[n] = 0;
}

/* The line of a cgroup file (io.max, io.stat) for the disk @rdev, or NULL. */
static char *disk_line(char *text, dev_t rdev)
{
	char *line, *next;
	unsigned int maj, min;
	int n;

	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (sscanf(line, "%u:%u%n", &maj, &min, &n) == 2 &&
		    (line[n] == ' ' || !line[n]) &&
		    maj == major(rdev) && min == minor(rdev))
			return line;
	}
	return NULL;
}

/*
 * CGROUP's io.max must limit the writes a second of DEV, the disk DIR is
 * on: else none of the kicker's writes is held and nothing is set up.
 */
static void check_io_max(const char *cgroup, dev_t rdev, const char *dev)
{
	char path[512], text[4096], *line, *p;

	path_fmt(path, sizeof(path), "%s/io.max", cgroup);
	read_small(path, text, sizeof(text));
	line = disk_line(text, rdev);
	p = line ? strstr(line, " wiops=") : NULL;
	if (!p || p[7] < '1' || p[7] > '9')
		fail("%s limits no writes a second of %s (%u:%u), the disk the test writes (it reads \"%s\"): write \"%u:%u wiops=2\" to it",
		     path, dev, major(rdev), minor(rdev),
		     line ? line : "", major(rdev), minor(rdev));
}

/*
 * The writes of the disk @rdev that left blk-throttle for the cgroup: wios
 * of its io.stat (0 while the disk has no line or no counts there yet).
 */
static uint64_t cgroup_wios(const char *iostat, dev_t rdev)
{
	char text[4096], *line, *p;

	read_small(iostat, text, sizeof(text));
	line = disk_line(text, rdev);
	if (!line)
		return 0;
	p = strstr(line, " wios=");
	if (!p) {
		if (strchr(line, '='))
			fail("%s: no wios in \"%s\"", iostat, line);
		return 0;
	}
	return strtoull(p + 6, NULL, 10);
}

/* Read the cgroup's wios into s->w[@when] (when a cgroup was given). */
static void sample_wios(struct sample *s, int when, const char *iostat,
			dev_t rdev)
{
	if (s->measured)
		s->w[when] = cgroup_wios(iostat, rdev);
}

struct kicker {
	pid_t pid;
	int cmd;	/* to the kicker */
	int reply;	/* from the kicker */
};

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

/* The kicker: in CGROUP, fsync A on each 'f' and answer when it returned. */
static _Noreturn void kicker_run(int cmd, int reply, const char *cgroup)
{
	int fd;
	char c;
	ssize_t n;

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
	}
	exit(0);
}

static void start_kicker(struct kicker *k, const char *cgroup)
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
		kicker_run(cmd[0], reply[1], cgroup);
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
	uint64_t iters = 40, nblk = 8, min = 0, it;
	unsigned char *abuf, *wbuf, *rbuf;
	const char *cgroup = NULL, *dir, *dev, *replay_file = NULL;
	char sub[64], iostat[512] = "";
	struct totals tot = { 0 };
	struct statvfs sv;
	struct stat dst, st;
	struct kicker k;
	unsigned int bs, b;
	int opt, devfd, verbose = 0, min_set = 0;

	prog_name = "dioreuse";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "n:b:c:a:R:vh")) != -1) {
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
			min_set = 1;
			break;
		case 'R':
			replay_file = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage_help();
		default:
			usage_error("unknown option");
		}
	}
	if (replay_file) {
		if (argc != optind)
			usage_error("-R takes no DIR or DEV");
		return replay(replay_file, min, min_set);
	}
	if (argc - optind != 2)
		usage_error("DIR and DEV expected");
	dir = argv[optind];
	dev = argv[optind + 1];
	if (!min_set)
		min = iters / 2;
	if (min > iters)
		usage_error("-a: %llu is more than the %llu iterations",
			    (unsigned long long)min, (unsigned long long)iters);

	if (statvfs(dir, &sv))
		fail_errno("statvfs", dir);
	bs = sv.f_bsize;
	if (bs < 512 || bs > 65536)
		fail("%s: unexpected block size %u", dir, bs);
	if (stat(dir, &dst))
		fail_errno("stat", dir);
	if (stat(dev, &st))
		fail_errno("stat", dev);
	if (!S_ISBLK(st.st_mode) || st.st_rdev != dst.st_dev)
		fail("%s is not the disk %s is on (%u:%u)", dev, dir,
		     major(dst.st_dev), minor(dst.st_dev));
	if (cgroup) {
		/* the kicker joins it, and its io.stat is read, from DIR */
		char *abs = realpath(cgroup, NULL);

		if (!abs)
			fail_errno("realpath", cgroup);
		cgroup = abs;
		check_io_max(cgroup, st.st_rdev, dev);
		path_fmt(iostat, sizeof(iostat), "%s/io.stat", cgroup);
		cgroup_wios(iostat, st.st_rdev);
	}
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
	start_kicker(&k, cgroup);

	for (it = 0; it < iters; it++) {
		struct sample s = { .measured = !!cgroup };
		int fda, fdb;
		long d, ind, phys;
		enum verdict v;
		uint64_t t;
		ssize_t n;

		fda = open("A", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fda < 0)
			fail_errno("open", "A");
		if (pwrite_full(fda, abuf, bs, (off_t)IND_LBLK * bs, NULL))
			fail_errno("pwrite", "A");
		d = fibmap(fda, IND_LBLK);
		ind = d > 0 ? find_ind(devfd, bs, d) : -1;

		sample_wios(&s, W_CMD, iostat, st.st_rdev);
		send_cmd(&k, 'f');
		s.asleep = kicker_asleep(&k);
		sample_wios(&s, W_TRUNC, iostat, st.st_rdev);
		t = now_ns();
		if (ftruncate(fda, 0))
			fail_errno("ftruncate", "A");
		s.truncate_ns = now_ns() - t;
		sample_wios(&s, W_TRUNCATED, iostat, st.st_rdev);

		fdb = open("B", O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0644);
		if (fdb < 0)
			fail_errno("open", "B");
		fill_pattern(wbuf, nblk * bs, it + 1, 0);
		if (pwrite_full(fdb, wbuf, nblk * bs, 0, NULL))
			fail_errno("pwrite", "B");
		sample_wios(&s, W_WRITTEN, iostat, st.st_rdev);
		wait_reply(&k);
		sample_wios(&s, W_DONE, iostat, st.st_rdev);

		for (b = 0; b < nblk && ind > 0; b++)
			if (fibmap(fdb, b) == ind)
				s.reused = 1;

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
			s.wrong++;
			if (phys == ind)
				s.wrong_ind++;
			if (tot.wrong + s.wrong <= MAX_REPORTS)
				printf("dioreuse: iteration %llu: B's block %u (disk block %ld%s) reads back %s\n",
				       (unsigned long long)it, b, phys,
				       phys == ind ? ", A's freed indirect block" : "",
				       all_zero(rbuf + off, bs) ? "as zeros" : "other data");
		}
		v = classify(&s);
		count(&tot, &s, v);
		if (verbose)
			print_sample(it, &s, v);
		close(fdb);
		close(fda);
		if (unlink("B") || unlink("A"))
			fail_errno("unlink", "A or B");
	}
	stop_kicker(&k);
	if (chdir("..") || rmdir(sub))
		fail_errno("remove", sub);
	return finish(&tot, min, bs);
}
