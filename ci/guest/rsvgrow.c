// SPDX-License-Identifier: GPL-2.0
/*
 * rsvgrow - grow reservation windows side by side.
 *
 * One forked task per DIR argument (repeat a DIR to share it).  Each task
 * appends to a file of its own with O_DIRECT writes of 1..MAXB pages (a
 * pseudo-random size per write) and truncates the file to zero after
 * every APPENDS writes, until SECONDS have passed.  After opening the
 * file and after every truncate it sets the file's reservation window
 * to WINDOW blocks (EXT2_IOC_SETRSVSZ), which ext2 otherwise doubles
 * each time a window fills up and never shrinks.
 *
 * An O_DIRECT write maps its blocks in one ext2_get_blocks() call (two at
 * the end of the direct blocks).  When the goal lies near the end of the
 * inode's reservation window and the rest of the window is shorter than
 * the write, ext2 tries to extend the window (try_to_extend_reservation())
 * up to the next window; when the goal lies past it, it searches the
 * group's tree for a new one.  With small windows and the tasks' files
 * close together (in one directory of a filesystem of small groups, the
 * files start blocks apart and grow into each other and into the next
 * group), window extensions meet the other tasks' searches and
 * insertions: the accesses a data race detector needs to see side by
 * side.  Each file stays at most APPENDS * MAXB 4 KiB units long.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define MAX_TASKS	64
#define PAGE_BYTES	4096	/* the unit of a write, whatever the page size */

/* include/uapi/linux/ext2_fs.h is not exported; the kernel reads an int. */
#define EXT2_IOC_GETRSVSZ	_IOR('f', 5, long)
#define EXT2_IOC_SETRSVSZ	_IOW('f', 6, long)

struct grow_counts {
	uint64_t writes;
	uint64_t pages;
	uint64_t truncates;
};

struct grow_conf {
	char **dirs;
	uint64_t duration_ns;
	uint64_t max_pages;
	uint64_t appends;
	uint64_t seed;
	int window;			/* blocks; 0: leave ext2's choice */
	struct grow_counts *counts;	/* shared, one per task */
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: rsvgrow [-t SECONDS] [-b MAXB] [-k APPENDS] [-w WINDOW] [-s SEED] DIR...\n"
		"  One task per DIR (repeat a DIR to share it).  Each task appends\n"
		"  O_DIRECT writes of 1..MAXB pages (default 7) to its own file and\n"
		"  truncates it to zero every APPENDS writes (default 64), for\n"
		"  SECONDS (default 20), setting the file's reservation window to\n"
		"  WINDOW blocks (default 8; 0: not set) after open and truncate.\n");
}

static void set_window(int fd, const char *path, int window)
{
	if (window && ioctl(fd, EXT2_IOC_SETRSVSZ, &window))
		fail_errno("ioctl EXT2_IOC_SETRSVSZ", path);
}

static int grow_task(int taskno, void *arg)
{
	struct grow_conf *c = arg;
	struct grow_counts *n = &c->counts[taskno];
	uint64_t rng = mix64(c->seed + (uint64_t)taskno);
	uint64_t end, done = 0;
	off_t size = 0;
	char path[4096];
	void *buf;
	int fd;

	path_fmt(path, sizeof(path), "%s/rsvgrow-%d", c->dirs[taskno], taskno);
	if (posix_memalign(&buf, PAGE_BYTES, c->max_pages * PAGE_BYTES))
		fail("out of memory");
	memset(buf, 0x5a ^ taskno, c->max_pages * PAGE_BYTES);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0)
		fail_errno("open O_DIRECT", path);
	set_window(fd, path, c->window);

	if (task_wait_start())
		return 1;

	end = now_ns() + c->duration_ns;
	while (now_ns() < end) {
		size_t len = (1 + rng_below(&rng, c->max_pages)) * PAGE_BYTES;

		if (pwrite_full(fd, buf, len, size, NULL))
			fail_errno("pwrite O_DIRECT", path);
		size += len;
		n->writes++;
		n->pages += len / PAGE_BYTES;
		if (++done == c->appends) {
			if (ftruncate(fd, 0))
				fail_errno("ftruncate", path);
			set_window(fd, path, c->window);
			size = 0;
			done = 0;
			n->truncates++;
		}
	}
	if (close(fd))
		fail_errno("close", path);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct grow_conf c = {
		.duration_ns = 20 * NSEC_PER_SEC,
		.max_pages = 7,
		.appends = 64,
		.seed = 1,
		.window = 8,
	};
	struct grow_counts sum = { 0 };
	uint64_t start, elapsed;
	int opt, ntasks, i;

	prog_name = "rsvgrow";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "ht:b:k:w:s:")) != -1) {
		switch (opt) {
		case 't':
			c.duration_ns = parse_seconds(optarg, 't');
			break;
		case 'b':
			c.max_pages = parse_u64(optarg, 'b', 1, 256);
			break;
		case 'k':
			c.appends = parse_u64(optarg, 'k', 1, 1 << 20);
			break;
		case 'w':
			c.window = (int)parse_u64(optarg, 'w', 0, 1027);
			break;
		case 's':
			c.seed = parse_u64(optarg, 's', 0, UINT64_MAX);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	c.dirs = dir_args(argc, argv, MAX_TASKS, &ntasks);
	c.counts = shared_alloc(sizeof(*c.counts) * (size_t)ntasks);

	if (run_tasks(ntasks, grow_task, &c, &start))
		return 1;
	elapsed = now_ns() - start;

	for (i = 0; i < ntasks; i++) {
		sum.writes += c.counts[i].writes;
		sum.pages += c.counts[i].pages;
		sum.truncates += c.counts[i].truncates;
	}
	if (!sum.writes)
		fail("no write was made");
	printf("RESULT prog=rsvgrow tasks=%d writes=%llu pages=%llu truncates=%llu elapsed_ns=%llu\n",
	       ntasks, (unsigned long long)sum.writes,
	       (unsigned long long)sum.pages,
	       (unsigned long long)sum.truncates,
	       (unsigned long long)elapsed);
	return 0;
}
