// SPDX-License-Identifier: GPL-2.0
/*
 * createbench - create/unlink throughput of empty files.
 *
 * One forked task per DIR argument.  Each task, ITERS times, creates
 * FILES empty files in its DIR (open O_CREAT|O_EXCL, close) and then
 * unlinks them all.
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

struct create_conf {
	char **dirs;
	uint64_t files;
	uint64_t iters;
	uint64_t *end_ns;	/* shared, one per task */
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: createbench [-n FILES] [-m ITERS] DIR [DIR...]\n"
		"  One task per DIR (repeat a DIR to share it).  Each task\n"
		"  creates FILES (default 100) empty files in DIR and unlinks\n"
		"  them again, ITERS times (default 100).\n");
}

static int create_task(int taskno, void *arg)
{
	struct create_conf *c = arg;
	const char *dir = c->dirs[taskno];
	size_t plen = strlen(dir) + 32;
	char *names;
	uint64_t i, f;
	int fd;

	names = malloc(plen * c->files);
	if (!names)
		fail("out of memory");
	for (f = 0; f < c->files; f++)
		path_fmt(names + f * plen, plen, "%s/c%d_%llu", dir, taskno,
			 (unsigned long long)f);

	if (task_wait_start())
		return 1;

	for (i = 0; i < c->iters; i++) {
		for (f = 0; f < c->files; f++) {
			const char *p = names + f * plen;

			fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0)
				fail_errno("open", p);
			if (close(fd))
				fail_errno("close", p);
		}
		for (f = 0; f < c->files; f++) {
			const char *p = names + f * plen;

			if (unlink(p))
				fail_errno("unlink", p);
		}
	}
	c->end_ns[taskno] = now_ns();
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	struct create_conf c = {
		.files = 100,
		.iters = 100,
	};
	uint64_t start, end = 0, elapsed, ops;
	int opt, ntasks, i;

	prog_name = "createbench";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hn:m:")) != -1) {
		switch (opt) {
		case 'n':
			c.files = parse_u64(optarg, 'n', 1, 1 << 20);
			break;
		case 'm':
			c.iters = parse_u64(optarg, 'm', 1, UINT32_MAX);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	c.dirs = dir_args(argc, argv, MAX_TASKS, &ntasks);
	c.end_ns = shared_alloc(sizeof(*c.end_ns) * (size_t)ntasks);

	if (run_tasks(ntasks, create_task, &c, &start))
		return 1;

	for (i = 0; i < ntasks; i++)
		if (c.end_ns[i] > end)
			end = c.end_ns[i];
	elapsed = end > start ? end - start : 1;
	ops = (uint64_t)ntasks * c.iters * c.files * 2;
	printf("RESULT prog=createbench tasks=%d files=%llu iters=%llu ops=%llu elapsed_ns=%llu ops_per_s=%.1f\n",
	       ntasks, (unsigned long long)c.files,
	       (unsigned long long)c.iters, (unsigned long long)ops,
	       (unsigned long long)elapsed,
	       (double)ops * 1e9 / (double)elapsed);
	return 0;
}
