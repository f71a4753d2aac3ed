// SPDX-License-Identifier: GPL-2.0
/*
 * seedload - the 2003 seed workload.
 *
 * One forked task per DIR argument.  Each task creates DIR/seed.<taskno>
 * and then, ITERS times, writes BLOCKS sequential blocks with pwrite()
 * and truncates the file back to zero length.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define MAX_TASKS	1024

struct seed_conf {
	char **dirs;
	uint64_t blocks;
	uint64_t iters;
	uint64_t bsize;
	int keep;		/* leave the last iteration's data in place */
	uint64_t *end_ns;	/* shared, one per task */
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: seedload [-k] [-n BLOCKS] [-m ITERS] [-b BLOCKSIZE] DIR [DIR...]\n"
		"  One task per DIR (repeat a DIR to share it).  Each task\n"
		"  writes BLOCKS blocks (default 9) of BLOCKSIZE bytes\n"
		"  (default 4096) to DIR/seed.<task> and truncates it to 0,\n"
		"  ITERS times (default 1000).  With -k the last iteration's\n"
		"  data is kept and the file is not removed (to inspect its\n"
		"  layout afterwards).\n");
}

static int seed_task(int taskno, void *arg)
{
	struct seed_conf *c = arg;
	char path[PATH_MAX];
	unsigned char *buf;
	uint64_t i, b;
	int fd;

	path_fmt(path, sizeof(path), "%s/seed.%d", c->dirs[taskno], taskno);
	buf = malloc(c->bsize);
	if (!buf)
		fail("out of memory");
	fill_pattern(buf, c->bsize, (uint64_t)taskno + 1, 0);

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		fail_errno("open", path);
	if (task_wait_start()) {
		close(fd);
		unlink(path);
		return 1;
	}

	for (i = 0; i < c->iters; i++) {
		for (b = 0; b < c->blocks; b++) {
			if (pwrite_full(fd, buf, c->bsize,
					(off_t)(b * c->bsize), NULL))
				fail_errno("pwrite", path);
		}
		if (c->keep && i + 1 == c->iters)
			break;
		if (ftruncate(fd, 0))
			fail_errno("ftruncate", path);
	}
	c->end_ns[taskno] = now_ns();

	if (close(fd))
		fail_errno("close", path);
	if (!c->keep && unlink(path))
		fail_errno("unlink", path);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct seed_conf c = {
		.blocks = 9,
		.iters = 1000,
		.bsize = 4096,
	};
	uint64_t start, end = 0, elapsed, ops;
	int opt, ntasks, i;

	prog_name = "seedload";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hkn:m:b:")) != -1) {
		switch (opt) {
		case 'k':
			c.keep = 1;
			break;
		case 'n':
			c.blocks = parse_u64(optarg, 'n', 1, 1 << 20);
			break;
		case 'm':
			c.iters = parse_u64(optarg, 'm', 1, UINT32_MAX);
			break;
		case 'b':
			c.bsize = parse_u64(optarg, 'b', 1, 64 << 20);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	c.dirs = dir_args(argc, argv, MAX_TASKS, &ntasks);
	c.end_ns = shared_alloc(sizeof(*c.end_ns) * (size_t)ntasks);

	if (run_tasks(ntasks, seed_task, &c, &start))
		return 1;

	for (i = 0; i < ntasks; i++)
		if (c.end_ns[i] > end)
			end = c.end_ns[i];
	elapsed = end > start ? end - start : 1;
	ops = (uint64_t)ntasks * c.iters;
	printf("RESULT prog=seedload tasks=%d blocks=%llu blocksize=%llu iters=%llu elapsed_ns=%llu ops=%llu ops_per_s=%.1f\n",
	       ntasks, (unsigned long long)c.blocks,
	       (unsigned long long)c.bsize, (unsigned long long)c.iters,
	       (unsigned long long)elapsed, (unsigned long long)ops,
	       (double)ops * 1e9 / (double)elapsed);
	return 0;
}
