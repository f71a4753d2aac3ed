// SPDX-License-Identifier: GPL-2.0
/*
 * fillspace - fill a filesystem to ENOSPC from several tasks, delete
 * everything again and check that the free block and inode counts
 * return exactly to their initial values.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common.h"

#define MAX_TASKS	256
#define FILE_SIZE	(1024 * 1024)

struct fill_result {
	uint64_t files;
	uint64_t bytes;
	uint64_t injected;		/* ENOMEM from an injected fault */
};

struct fill_conf {
	const char *dir;
	size_t bsize;
	int faults;			/* -f */
	struct fill_result *res;	/* shared, one per task */
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: fillspace [-f] [-p TASKS] DIR\n"
		"  TASKS tasks (default 2) fill DIR/fill<task>/ with 1 MiB\n"
		"  files until ENOSPC, then everything is deleted again and\n"
		"  the free block and inode counts must be back to their\n"
		"  initial values.\n"
		"  -f: the fill tasks set /proc/self/make-it-fail (fault\n"
		"  injection with task-filter set up by the caller): ENOMEM\n"
		"  from open or write is counted and the task goes on; the\n"
		"  deletion runs without injected faults.\n");
}

static void stat_fs(const char *dir, struct statfs *st)
{
	sync();
	if (statfs(dir, st))
		fail_errno("statfs", dir);
}

static int fill_task(int taskno, void *arg)
{
	struct fill_conf *c = arg;
	struct fill_result *r = &c->res[taskno];
	char dir[PATH_MAX], path[PATH_MAX];
	size_t chunk = FILE_SIZE, len, done, written;
	unsigned char *buf;
	int fd, full = 0;

	path_fmt(dir, sizeof(dir), "%s/fill%d", c->dir, taskno);
	buf = malloc(FILE_SIZE);
	if (!buf)
		fail("out of memory");
	fill_pattern(buf, FILE_SIZE, (uint64_t)taskno + 1, 0);
	if (mkdir(dir, 0755))
		fail_errno("mkdir", dir);
	if (task_wait_start())
		return 1;
	if (c->faults) {
		fd = open("/proc/self/make-it-fail", O_WRONLY);
		if (fd < 0 || write(fd, "1", 1) != 1)
			fail_errno("write", "/proc/self/make-it-fail");
		close(fd);
	}

	while (!full) {
		path_fmt(path, sizeof(path), "%s/f%llu", dir,
			 (unsigned long long)r->files);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			/* No inode or directory block left: full as well. */
			if (errno == ENOSPC)
				break;
			if (c->faults && errno == ENOMEM) {
				r->files++;	/* the name may exist */
				r->injected++;
				continue;
			}
			fail_errno("open", path);
		}
		r->files++;

		written = 0;
		while (written < FILE_SIZE) {
			len = FILE_SIZE - written;
			if (len > chunk)
				len = chunk;
			if (!pwrite_full(fd, buf, len, (off_t)written,
					 &done)) {
				written += len;
				continue;
			}
			written += done;
			if (c->faults && errno == ENOMEM) {
				r->injected++;
				continue;
			}
			if (errno != ENOSPC)
				fail_errno("pwrite", path);
			if (chunk <= c->bsize) {
				full = 1;
				break;
			}
			/* Keep filling the last bits with smaller writes. */
			chunk /= 2;
			if (chunk < c->bsize)
				chunk = c->bsize;
		}
		r->bytes += written;
		if (close(fd))
			fail_errno("close", path);
	}
	free(buf);
	return 0;
}

static int delete_task(int taskno, void *arg)
{
	struct fill_conf *c = arg;
	struct fill_result *r = &c->res[taskno];
	char dir[PATH_MAX], path[PATH_MAX];
	uint64_t f;

	path_fmt(dir, sizeof(dir), "%s/fill%d", c->dir, taskno);
	if (task_wait_start())
		return 1;
	for (f = 0; f < r->files; f++) {
		path_fmt(path, sizeof(path), "%s/f%llu", dir,
			 (unsigned long long)f);
		if (unlink(path) && !(c->faults && errno == ENOENT))
			fail_errno("unlink", path);
	}
	if (rmdir(dir))
		fail_errno("rmdir", dir);
	return 0;
}

int main(int argc, char **argv)
{
	struct statfs before, full, after;
	struct fill_conf c = { 0 };
	uint64_t start, files = 0, bytes = 0, injected = 0;
	int opt, ntasks = 2, i, bad = 0;

	prog_name = "fillspace";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hfp:")) != -1) {
		switch (opt) {
		case 'f':
			c.faults = 1;
			break;
		case 'p':
			ntasks = (int)parse_u64(optarg, 'p', 1, MAX_TASKS);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind != 1)
		usage_error("expected exactly one DIR");
	c.dir = argv[optind];
	c.res = shared_alloc(sizeof(*c.res) * (size_t)ntasks);

	stat_fs(c.dir, &before);
	c.bsize = before.f_bsize > 0 ? (size_t)before.f_bsize : 4096;
	if (c.bsize > FILE_SIZE)
		c.bsize = FILE_SIZE;

	if (run_tasks(ntasks, fill_task, &c, &start))
		return 1;
	stat_fs(c.dir, &full);
	for (i = 0; i < ntasks; i++) {
		files += c.res[i].files;
		bytes += c.res[i].bytes;
		injected += c.res[i].injected;
	}

	if (run_tasks(ntasks, delete_task, &c, &start))
		return 1;
	stat_fs(c.dir, &after);

	if (after.f_bfree != before.f_bfree) {
		fprintf(stderr, "FAIL: fillspace: f_bfree before %llu, after fill and delete %llu\n",
			(unsigned long long)before.f_bfree,
			(unsigned long long)after.f_bfree);
		bad = 1;
	}
	if (after.f_ffree != before.f_ffree) {
		fprintf(stderr, "FAIL: fillspace: f_ffree before %llu, after fill and delete %llu\n",
			(unsigned long long)before.f_ffree,
			(unsigned long long)after.f_ffree);
		bad = 1;
	}
	if (bad)
		return 1;

	printf("RESULT prog=fillspace tasks=%d files=%llu bytes=%llu injected=%llu bfree_before=%llu bfree_full=%llu bfree_after=%llu bavail_before=%llu bavail_full=%llu ffree_before=%llu ffree_after=%llu\n",
	       ntasks, (unsigned long long)files, (unsigned long long)bytes,
	       (unsigned long long)injected,
	       (unsigned long long)before.f_bfree,
	       (unsigned long long)full.f_bfree,
	       (unsigned long long)after.f_bfree,
	       (unsigned long long)before.f_bavail,
	       (unsigned long long)full.f_bavail,
	       (unsigned long long)before.f_ffree,
	       (unsigned long long)after.f_ffree);
	return 0;
}
