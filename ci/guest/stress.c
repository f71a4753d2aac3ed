// SPDX-License-Identifier: GPL-2.0
/*
 * stress - multi-task filesystem stress with data verification.
 *
 * Each forked task runs random operations on files in the shared
 * directory DIR/shared and in its private directory DIR/p<task>:
 * create, write/extend (some sparse; a quarter of the writes with
 * O_DIRECT, which maps many blocks in one ext2_get_blocks() call and so
 * grows reservation windows), truncate, unlink, mkdir/rmdir, rename,
 * fsync, read-back verification and periodic statfs() sanity checks.
 * Every task keeps a model of the files it owns (name, size, data key)
 * and checks the filesystem against it:
 *
 *  - data just written reads back identically;
 *  - the size reported by fstat() matches the model;
 *  - every byte of a file is either zero (hole, truncated-and-extended
 *    area) or the pattern byte for its offset, never anything else;
 *  - newly exposed areas (beyond the old size) read as zeros;
 *  - rmdir() of a non-empty directory fails;
 *  - the private directory holds exactly the modelled entries.
 */
#include <dirent.h>
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
#define MAX_FILES	48
#define MAX_DIRS	8
#define MAX_IO		(256 * 1024)
#define MAX_FILE_SIZE	(4 * 1024 * 1024)
#define MAX_SPARSE_GAP	(1024 * 1024)
#define ZERO_CHECK	(64 * 1024)
#define STATFS_EVERY	50
#define DIO_ALIGN	4096

struct stress_conf {
	const char *dir;
	char shared[PATH_MAX];
	uint64_t seed;
	uint64_t max_ops;	/* per task, 0 = unlimited */
	uint64_t duration;	/* ns, 0 = unlimited */
	int all_shared;		/* -S: every file in DIR/shared */
	struct stress_result *res;	/* shared, one per task */
};

struct stress_result {
	uint64_t ops;
	uint64_t enospc;
	uint64_t dio;		/* writes made with O_DIRECT */
	uint64_t nshared;	/* files this task left in DIR/shared */
	uint64_t end_ns;
};

struct sfile {
	int used;
	int shared;
	unsigned int id;
	uint64_t key;
	off_t size;
};

struct sdir {
	int used;
	int has_sub;
	unsigned int id;
	unsigned int sub_id;
};

struct stask {
	struct stress_conf *c;
	int no;
	char priv[PATH_MAX];
	uint64_t rng;
	unsigned int next_id;
	struct sfile files[MAX_FILES];
	struct sdir dirs[MAX_DIRS];
	unsigned char *wbuf;
	unsigned char *rbuf;
	struct stress_result *r;
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: stress [-p TASKS] [-t SECONDS] [-o OPS] [-s SEED] [-S] DIR\n"
		"  TASKS tasks (default 4) run random verified filesystem\n"
		"  operations in DIR/shared and DIR/p<task> until SECONDS\n"
		"  (default 10, 0 = no limit) have passed or each task has\n"
		"  done OPS operations (default 0 = no limit).  SEED defaults\n"
		"  to a time-based value and is printed in the RESULT line.\n"
		"  -S: every task creates all its files in DIR/shared (one\n"
		"  directory, so one block group: the tasks allocate side by\n"
		"  side in the same group and its reservation windows).\n");
}

static uint64_t rnd(struct stask *t, uint64_t n)
{
	return rng_below(&t->rng, n);
}

/* Tolerate ENOSPC (counted), fail on anything else. */
static void check_err(struct stask *t, const char *op, const char *path)
{
	if (errno == ENOSPC) {
		t->r->enospc++;
		return;
	}
	fail_errno(op, path);
}

static void file_path(struct stask *t, const struct sfile *f, char *buf)
{
	if (f->shared)
		path_fmt(buf, PATH_MAX, "%s/t%d_f%u", t->c->shared, t->no,
			 f->id);
	else
		path_fmt(buf, PATH_MAX, "%s/f%u", t->priv, f->id);
}

static void dir_path(struct stask *t, const struct sdir *d, int sub,
		     char *buf)
{
	if (sub)
		path_fmt(buf, PATH_MAX, "%s/d%u/e%u", t->priv, d->id,
			 d->sub_id);
	else
		path_fmt(buf, PATH_MAX, "%s/d%u", t->priv, d->id);
}

/* A random used file, or NULL; @priv_only restricts it to DIR/p<N>. */
static struct sfile *pick_file(struct stask *t, int priv_only)
{
	int i, start = (int)rnd(t, MAX_FILES);

	for (i = 0; i < MAX_FILES; i++) {
		struct sfile *f = &t->files[(start + i) % MAX_FILES];

		if (f->used && !(priv_only && f->shared))
			return f;
	}
	return NULL;
}

static struct sfile *free_file_slot(struct stask *t)
{
	int i;

	for (i = 0; i < MAX_FILES; i++)
		if (!t->files[i].used)
			return &t->files[i];
	return NULL;
}

static void check_size(struct stask *t, int fd, const char *path,
		       off_t expect, const char *after)
{
	struct stat st;

	if (fstat(fd, &st))
		fail_errno("fstat", path);
	if (st.st_size != expect)
		fail("%s: size %lld after %s, expected %lld", path,
		     (long long)st.st_size, after, (long long)expect);
	(void)t;
}

/* Bytes [from, to) of the file must read as zeros (checks at most
 * ZERO_CHECK bytes from @from).
 */
static void check_zero(struct stask *t, int fd, const char *path,
		       off_t from, off_t to, const char *after)
{
	size_t len, i;
	ssize_t n;

	if (to <= from)
		return;
	len = (size_t)(to - from);
	if (len > ZERO_CHECK)
		len = ZERO_CHECK;
	n = pread_full(fd, t->rbuf, len, from);
	if (n < 0)
		fail_errno("pread", path);
	if ((size_t)n != len)
		fail("%s: short read of %zd bytes at %lld, expected %zu",
		     path, n, (long long)from, len);
	for (i = 0; i < len; i++)
		if (t->rbuf[i])
			fail("%s: byte at offset %lld is 0x%02x after %s, expected zero",
			     path, (long long)from + (long long)i,
			     t->rbuf[i], after);
}

static void op_create(struct stask *t)
{
	struct sfile *f = free_file_slot(t);
	char path[PATH_MAX];
	int fd;

	if (!f)
		return;
	f->shared = t->c->all_shared || rnd(t, 3) == 0;
	f->id = t->next_id++;
	f->key = rng_next(&t->rng);
	f->size = 0;
	file_path(t, f, path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		check_err(t, "open", path);
		return;
	}
	if (close(fd))
		fail_errno("close", path);
	f->used = 1;
}

static void op_unlink(struct stask *t)
{
	struct sfile *f = pick_file(t, 0);
	char path[PATH_MAX];

	if (!f)
		return;
	file_path(t, f, path);
	if (unlink(path))
		fail_errno("unlink", path);
	f->used = 0;
}

static void op_write(struct stask *t)
{
	struct sfile *f = pick_file(t, 0);
	char path[PATH_MAX];
	size_t len, done;
	off_t off, old, expect;
	struct stat st;
	int fd, err = 0, flags = O_RDWR;

	if (!f) {
		op_create(t);
		return;
	}
	file_path(t, f, path);
	old = f->size;

	/* Mostly small writes, now and then up to MAX_IO. */
	len = 1 + (size_t)rnd(t, (uint64_t)1 << rnd(t, 19));
	if (len > MAX_IO)
		len = MAX_IO;
	switch (rnd(t, 4)) {
	case 0:		/* append */
		off = old;
		break;
	case 1:		/* overwrite inside */
		off = (off_t)rnd(t, (uint64_t)old + 1);
		break;
	case 2:		/* sparse extension */
		off = old + (off_t)rnd(t, MAX_SPARSE_GAP);
		break;
	default:	/* anywhere around the end */
		off = (off_t)rnd(t, (uint64_t)old + 65536);
		break;
	}
	if (off + (off_t)len > MAX_FILE_SIZE)
		off = (off_t)rnd(t, MAX_FILE_SIZE - len);
	if (rnd(t, 4) == 0) {
		/*
		 * Direct I/O: offset, length and buffers DIO_ALIGN-aligned,
		 * 1 to 32 pages, half of them appends: ext2 allocates for it
		 * only past EOF, many blocks at a time, and grows the
		 * reservation window when it is shorter than the request.
		 */
		flags |= O_DIRECT;
		len = DIO_ALIGN * (size_t)(1 + rnd(t, 32));
		if (rnd(t, 2))
			off = old;
		off = (off + DIO_ALIGN - 1) & ~(off_t)(DIO_ALIGN - 1);
		if (off + (off_t)len > MAX_FILE_SIZE)
			off = MAX_FILE_SIZE - (off_t)len;
	}

	fd = open(path, flags);
	if (fd < 0 && errno == EINVAL && (flags & O_DIRECT)) {
		flags &= ~O_DIRECT;
		fd = open(path, flags);
	}
	if (fd < 0)
		fail_errno("open", path);
	if (flags & O_DIRECT)
		t->r->dio++;
	fill_pattern(t->wbuf, len, f->key, (uint64_t)off);
	if (pwrite_full(fd, t->wbuf, len, off, &done)) {
		check_err(t, "pwrite", path);
		err = 1;
	}
	/* The checks below read at any offset: buffered from here on. */
	if ((flags & O_DIRECT) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT))
		fail_errno("fcntl", path);
	expect = off + (off_t)done > old ? off + (off_t)done : old;
	if (err) {
		/* A failed write may leave the size anywhere in between. */
		if (fstat(fd, &st))
			fail_errno("fstat", path);
		if (st.st_size < old ||
		    (st.st_size > old && st.st_size > off + (off_t)len))
			fail("%s: size %lld after failed write of %zu at %lld, old size %lld",
			     path, (long long)st.st_size, len, (long long)off,
			     (long long)old);
		f->size = st.st_size;
		if (off + (off_t)done > f->size)
			done = f->size > off ? (size_t)(f->size - off) : 0;
	} else {
		check_size(t, fd, path, expect, "write");
		f->size = expect;
	}

	/* Read back what was just written. */
	if (done) {
		ssize_t n = pread_full(fd, t->rbuf, done, off);

		if (n < 0)
			fail_errno("pread", path);
		if ((size_t)n != done)
			fail("%s: read back %zd of %zu bytes at %lld", path,
			     n, done, (long long)off);
		if (memcmp(t->rbuf, t->wbuf, done)) {
			size_t i = 0;

			while (t->rbuf[i] == t->wbuf[i])
				i++;
			fail("%s: data mismatch at offset %lld: read 0x%02x, wrote 0x%02x",
			     path, (long long)off + (long long)i, t->rbuf[i],
			     t->wbuf[i]);
		}
	}
	check_zero(t, fd, path, old, off < f->size ? off : f->size,
		   "sparse write");

	if (rnd(t, 16) == 0 && fsync(fd))
		check_err(t, "fsync", path);
	if (close(fd))
		fail_errno("close", path);
}

static void op_truncate(struct stask *t)
{
	struct sfile *f = pick_file(t, 0);
	char path[PATH_MAX];
	off_t old, size;
	int fd;

	if (!f)
		return;
	file_path(t, f, path);
	old = f->size;
	if (rnd(t, 4) == 0)
		size = 0;
	else
		size = (off_t)rnd(t, (uint64_t)old + 128 * 1024);

	fd = open(path, O_RDWR);
	if (fd < 0)
		fail_errno("open", path);
	if (rnd(t, 2) ? truncate(path, size) : ftruncate(fd, size)) {
		check_err(t, "truncate", path);
		f->size = lseek(fd, 0, SEEK_END);
		if (f->size < 0)
			fail_errno("lseek", path);
	} else {
		check_size(t, fd, path, size, "truncate");
		f->size = size;
		check_zero(t, fd, path, old, size, "extending truncate");
	}
	if (close(fd))
		fail_errno("close", path);
}

/* Whole-file check: size matches and each byte is zero or pattern. */
static void op_verify(struct stask *t)
{
	struct sfile *f = pick_file(t, 0);
	char path[PATH_MAX];
	size_t len, i;
	off_t off;
	ssize_t n;
	int fd;

	if (!f)
		return;
	file_path(t, f, path);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_errno("open", path);
	check_size(t, fd, path, f->size, "earlier operations");
	off = (off_t)rnd(t, (uint64_t)f->size + 1);
	len = 1 + (size_t)rnd(t, MAX_IO);
	n = pread_full(fd, t->rbuf, len, off);
	if (n < 0)
		fail_errno("pread", path);
	if ((off_t)n != (off + (off_t)len > f->size ?
			 f->size - off : (off_t)len))
		fail("%s: read %zd bytes at %lld, size %lld", path, n,
		     (long long)off, (long long)f->size);
	fill_pattern(t->wbuf, (size_t)n, f->key, (uint64_t)off);
	for (i = 0; i < (size_t)n; i++)
		if (t->rbuf[i] && t->rbuf[i] != t->wbuf[i])
			fail("%s: foreign data at offset %lld: 0x%02x, expected 0x%02x or zero",
			     path, (long long)off + (long long)i,
			     t->rbuf[i], t->wbuf[i]);
	if (close(fd))
		fail_errno("close", path);
}

static void op_rename(struct stask *t)
{
	struct sfile *f = pick_file(t, 1), *g;
	char from[PATH_MAX], to[PATH_MAX];
	unsigned int id;

	if (rnd(t, 4) == 0) {
		struct sdir *d = &t->dirs[rnd(t, MAX_DIRS)];

		if (!d->used)
			return;
		dir_path(t, d, 0, from);
		id = d->id;
		d->id = t->next_id++;
		dir_path(t, d, 0, to);
		if (rename(from, to)) {
			d->id = id;
			check_err(t, "rename", from);
		}
		return;
	}
	if (!f)
		return;
	file_path(t, f, from);
	g = pick_file(t, 1);
	if (g && g != f && rnd(t, 2)) {
		/* Replace an existing file. */
		file_path(t, g, to);
		if (rename(from, to)) {
			check_err(t, "rename", from);
			return;
		}
		g->key = f->key;
		g->size = f->size;
		f->used = 0;
		return;
	}
	id = f->id;
	f->id = t->next_id++;
	file_path(t, f, to);
	if (rename(from, to)) {
		/* A new name may need a new directory block. */
		f->id = id;
		check_err(t, "rename", from);
	}
}

static void op_dir(struct stask *t)
{
	struct sdir *d = &t->dirs[rnd(t, MAX_DIRS)];
	char path[PATH_MAX], sub[PATH_MAX];

	if (!d->used) {
		d->id = t->next_id++;
		dir_path(t, d, 0, path);
		if (mkdir(path, 0755)) {
			check_err(t, "mkdir", path);
			return;
		}
		d->used = 1;
		d->has_sub = 0;
		return;
	}
	dir_path(t, d, 0, path);
	if (d->has_sub) {
		/* A non-empty directory must not go away. */
		if (!rmdir(path))
			fail("rmdir %s succeeded on a non-empty directory",
			     path);
		if (errno != ENOTEMPTY && errno != EEXIST)
			fail_errno("rmdir", path);
		dir_path(t, d, 1, sub);
		if (rmdir(sub))
			fail_errno("rmdir", sub);
		d->has_sub = 0;
		return;
	}
	if (rnd(t, 2)) {
		d->sub_id = t->next_id++;
		dir_path(t, d, 1, sub);
		if (mkdir(sub, 0755)) {
			check_err(t, "mkdir", sub);
			return;
		}
		d->has_sub = 1;
		return;
	}
	if (rmdir(path))
		fail_errno("rmdir", path);
	d->used = 0;
}

static void op_fsync(struct stask *t)
{
	struct sfile *f = pick_file(t, 0);
	char path[PATH_MAX];
	int fd;

	if (!f || rnd(t, 4) == 0) {
		/* fsync the private directory itself */
		fd = open(t->priv, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			fail_errno("open", t->priv);
		if (fsync(fd))
			check_err(t, "fsync", t->priv);
		if (close(fd))
			fail_errno("close", t->priv);
		return;
	}
	file_path(t, f, path);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail_errno("open", path);
	if ((rnd(t, 2) ? fdatasync(fd) : fsync(fd)))
		check_err(t, "fsync", path);
	if (close(fd))
		fail_errno("close", path);
}

static void op_statfs(struct stask *t)
{
	struct statfs st;
	const char *dir = t->c->dir;

	if (statfs(dir, &st))
		fail_errno("statfs", dir);
	if (st.f_bfree > st.f_blocks)
		fail("statfs %s: f_bfree %llu > f_blocks %llu", dir,
		     (unsigned long long)st.f_bfree,
		     (unsigned long long)st.f_blocks);
	if (st.f_bavail > st.f_bfree)
		fail("statfs %s: f_bavail %llu > f_bfree %llu", dir,
		     (unsigned long long)st.f_bavail,
		     (unsigned long long)st.f_bfree);
	if (st.f_ffree > st.f_files)
		fail("statfs %s: f_ffree %llu > f_files %llu", dir,
		     (unsigned long long)st.f_ffree,
		     (unsigned long long)st.f_files);
}

/* The number of entries in @dir other than "." and "..". */
static uint64_t count_entries(const char *dir)
{
	struct dirent *de;
	uint64_t n = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		fail_errno("opendir", dir);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	}
	if (errno)
		fail_errno("readdir", dir);
	closedir(d);
	return n;
}

static void cleanup_task(struct stask *t)
{
	char path[PATH_MAX];
	uint64_t expect = 0, n;
	int i;

	for (i = 0; i < MAX_FILES; i++) {
		if (t->files[i].used && t->files[i].shared)
			t->r->nshared++;
		else if (t->files[i].used)
			expect++;
	}
	for (i = 0; i < MAX_DIRS; i++)
		expect += t->dirs[i].used;
	n = count_entries(t->priv);
	if (n != expect)
		fail("%s holds %llu entries, expected %llu", t->priv,
		     (unsigned long long)n, (unsigned long long)expect);

	for (i = 0; i < MAX_FILES; i++) {
		struct sfile *f = &t->files[i];

		if (!f->used || f->shared)
			continue;
		file_path(t, f, path);
		if (unlink(path))
			fail_errno("unlink", path);
		f->used = 0;
	}
	for (i = 0; i < MAX_DIRS; i++) {
		struct sdir *d = &t->dirs[i];

		if (!d->used)
			continue;
		if (d->has_sub) {
			dir_path(t, d, 1, path);
			if (rmdir(path))
				fail_errno("rmdir", path);
		}
		dir_path(t, d, 0, path);
		if (rmdir(path))
			fail_errno("rmdir", path);
		d->used = 0;
	}
	if (rmdir(t->priv))
		fail_errno("rmdir", t->priv);
}

static int stress_task(int taskno, void *arg)
{
	struct stress_conf *c = arg;
	struct stask *t;
	uint64_t deadline = 0, ops = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		fail("out of memory");
	t->c = c;
	t->no = taskno;
	t->r = &c->res[taskno];
	t->rng = c->seed ^ mix64((uint64_t)taskno + 1);
	if (posix_memalign((void **)&t->wbuf, DIO_ALIGN, MAX_IO))
		t->wbuf = NULL;
	if (posix_memalign((void **)&t->rbuf, DIO_ALIGN, MAX_IO))
		t->rbuf = NULL;
	if (!t->wbuf || !t->rbuf)
		fail("out of memory");
	path_fmt(t->priv, sizeof(t->priv), "%s/p%d", c->dir, taskno);
	if (mkdir(t->priv, 0755))
		fail_errno("mkdir", t->priv);

	if (task_wait_start())
		return 1;
	if (c->duration)
		deadline = now_ns() + c->duration;

	for (;;) {
		uint64_t r;

		if (c->max_ops && ops >= c->max_ops)
			break;
		if (deadline && now_ns() >= deadline)
			break;
		ops++;
		if (ops % STATFS_EVERY == 0) {
			op_statfs(t);
			continue;
		}
		r = rnd(t, 100);
		if (r < 15)
			op_create(t);
		else if (r < 45)
			op_write(t);
		else if (r < 55)
			op_truncate(t);
		else if (r < 65)
			op_unlink(t);
		else if (r < 75)
			op_dir(t);
		else if (r < 85)
			op_rename(t);
		else if (r < 90)
			op_fsync(t);
		else
			op_verify(t);
	}
	t->r->ops = ops;
	t->r->end_ns = now_ns();
	cleanup_task(t);
	free(t->wbuf);
	free(t->rbuf);
	free(t);
	return 0;
}

/* Remove the files the tasks left in DIR/shared, then the directory. */
static void cleanup_shared(struct stress_conf *c, int ntasks)
{
	char path[PATH_MAX];
	struct dirent *de;
	uint64_t expect = 0, n = 0;
	int i, tn, len;
	unsigned int id;
	DIR *d;

	for (i = 0; i < ntasks; i++)
		expect += c->res[i].nshared;
	d = opendir(c->shared);
	if (!d)
		fail_errno("opendir", c->shared);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		len = 0;
		if (sscanf(de->d_name, "t%d_f%u%n", &tn, &id, &len) != 2 ||
		    de->d_name[len] != '\0')
			continue;
		path_fmt(path, sizeof(path), "%s/%s", c->shared, de->d_name);
		if (unlink(path))
			fail_errno("unlink", path);
		n++;
	}
	if (errno)
		fail_errno("readdir", c->shared);
	closedir(d);
	if (n != expect)
		fail("%s held %llu task files, expected %llu", c->shared,
		     (unsigned long long)n, (unsigned long long)expect);
	if (rmdir(c->shared))
		fail_errno("rmdir", c->shared);
}

int main(int argc, char **argv)
{
	struct stress_conf c = {
		.duration = 10 * NSEC_PER_SEC,
	};
	uint64_t start, end = 0, ops = 0, enospc = 0, dio = 0;
	int opt, ntasks = 4, i, have_seed = 0;

	prog_name = "stress";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hp:t:o:s:S")) != -1) {
		switch (opt) {
		case 'p':
			ntasks = (int)parse_u64(optarg, 'p', 1, MAX_TASKS);
			break;
		case 't':
			c.duration = parse_seconds(optarg, 't');
			break;
		case 'o':
			c.max_ops = parse_u64(optarg, 'o', 0, UINT64_MAX);
			break;
		case 's':
			c.seed = parse_u64(optarg, 's', 0, UINT64_MAX);
			have_seed = 1;
			break;
		case 'S':
			c.all_shared = 1;
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind != 1)
		usage_error("expected exactly one DIR");
	if (!c.duration && !c.max_ops)
		usage_error("-t 0 needs a -o limit");
	if (!have_seed)
		c.seed = mix64(now_ns() ^ ((uint64_t)getpid() << 32));
	c.dir = argv[optind];
	path_fmt(c.shared, sizeof(c.shared), "%s/shared", c.dir);
	c.res = shared_alloc(sizeof(*c.res) * (size_t)ntasks);

	if (mkdir(c.shared, 0755))
		fail_errno("mkdir", c.shared);
	if (run_tasks(ntasks, stress_task, &c, &start)) {
		fprintf(stderr, "FAIL: stress: seed was %llu\n",
			(unsigned long long)c.seed);
		return 1;
	}
	cleanup_shared(&c, ntasks);

	for (i = 0; i < ntasks; i++) {
		ops += c.res[i].ops;
		enospc += c.res[i].enospc;
		dio += c.res[i].dio;
		if (c.res[i].end_ns > end)
			end = c.res[i].end_ns;
	}
	printf("RESULT prog=stress tasks=%d ops=%llu enospc=%llu dio=%llu elapsed_ns=%llu seed=%llu\n",
	       ntasks, (unsigned long long)ops, (unsigned long long)enospc,
	       (unsigned long long)dio,
	       (unsigned long long)(end > start ? end - start : 0),
	       (unsigned long long)c.seed);
	return 0;
}
