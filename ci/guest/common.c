// SPDX-License-Identifier: GPL-2.0
/*
 * Shared helpers for the guest-side test programs.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *prog_name = "guest";
void (*prog_usage)(FILE *out);
int task_no = -1;

/* Pipe ends a forked task uses to report readiness and await release. */
#define PATTERN_MUL	0x9e3779b97f4a7c15ULL

static int task_ready_fd = -1;
static int task_go_fd = -1;
static int *task_abort;

static void fail_prefix(void)
{
	if (task_no >= 0)
		fprintf(stderr, "FAIL: %s: task %d: ", prog_name, task_no);
	else
		fprintf(stderr, "FAIL: %s: ", prog_name);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	fail_prefix();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void report_errno(const char *op, const char *path, int err)
{
	fail_prefix();
	if (path)
		fprintf(stderr, "%s %s: %s\n", op, path, strerror(err));
	else
		fprintf(stderr, "%s: %s\n", op, strerror(err));
}

void fail_errno(const char *op, const char *path)
{
	report_errno(op, path, errno);
	exit(1);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (prog_usage)
		prog_usage(stderr);
	exit(2);
}

void usage_help(void)
{
	if (prog_usage)
		prog_usage(stdout);
	exit(0);
}

uint64_t parse_u64(const char *s, char opt, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		usage_error("-%c: not a number: '%s'", opt, s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		usage_error("-%c: not a number: '%s'", opt, s);
	if (v < min || v > max)
		usage_error("-%c: %llu out of range [%llu, %llu]", opt, v,
			    (unsigned long long)min, (unsigned long long)max);
	return v;
}

uint64_t parse_seconds(const char *s, char opt)
{
	double v;
	char *end;

	if ((*s < '0' || *s > '9') && *s != '.')
		usage_error("-%c: not a number of seconds: '%s'", opt, s);
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		usage_error("-%c: not a number of seconds: '%s'", opt, s);
	if (v > 1e6)
		usage_error("-%c: %s seconds is too long", opt, s);
	return (uint64_t)(v * 1e9);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		fail_errno("clock_gettime", NULL);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		fail("path too long (format '%s')", fmt);
}

void *shared_alloc(size_t size)
{
	void *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail_errno("mmap", NULL);
	return p;
}

int pwrite_full(int fd, const void *buf, size_t len, off_t off, size_t *done)
{
	const unsigned char *p = buf;
	size_t pos = 0;
	ssize_t n;
	int ret = 0;

	while (pos < len) {
		n = pwrite(fd, p + pos, len - pos, off + (off_t)pos);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -1;
			break;
		}
		if (n == 0) {
			/* Should not happen for a regular file. */
			errno = EIO;
			ret = -1;
			break;
		}
		pos += (size_t)n;
	}
	if (done)
		*done = pos;
	return ret;
}

ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	unsigned char *p = buf;
	size_t pos = 0;
	ssize_t n;

	while (pos < len) {
		n = pread(fd, p + pos, len - pos, off + (off_t)pos);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		pos += (size_t)n;
	}
	return (ssize_t)pos;
}

uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t rng_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ULL;
	return mix64(*state);
}

uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return rng_next(state) % n;
}

void fill_pattern(unsigned char *buf, size_t len, uint64_t key, uint64_t off)
{
	uint64_t word = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t pos = off + i;

		if (i == 0 || (pos & 7) == 0)
			word = mix64(key ^ ((pos >> 3) * PATTERN_MUL));
		buf[i] = (unsigned char)(word >> ((pos & 7) * 8));
	}
}

int task_wait_start(void)
{
	char c = 'r';
	ssize_t n;

	if (task_ready_fd < 0)
		return 0;
	while ((n = write(task_ready_fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		fail_errno("write", "(ready pipe)");
	close(task_ready_fd);
	task_ready_fd = -1;

	/* The parent releases everybody at once by closing the pipe. */
	while ((n = read(task_go_fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n < 0)
		fail_errno("read", "(start pipe)");
	close(task_go_fd);
	task_go_fd = -1;
	return *task_abort ? -1 : 0;
}

static int reap_tasks(int ntasks, const pid_t *pids)
{
	int i, status, ret = 0;

	for (i = 0; i < ntasks; i++) {
		if (pids[i] <= 0)
			continue;
		while (waitpid(pids[i], &status, 0) < 0) {
			if (errno != EINTR)
				fail_errno("waitpid", NULL);
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		ret = 1;
		if (WIFEXITED(status))
			fprintf(stderr, "FAIL: %s: task %d exited with status %d\n",
				prog_name, i, WEXITSTATUS(status));
		else if (WIFSIGNALED(status))
			fprintf(stderr, "FAIL: %s: task %d killed by signal %d (%s)\n",
				prog_name, i, WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "FAIL: %s: task %d: wait status %#x\n",
				prog_name, i, status);
	}
	return ret;
}

int run_tasks(int ntasks, task_fn fn, void *arg, uint64_t *start_ns)
{
	int ready[2], go[2];
	pid_t *pids;
	int i, nready = 0, ret = 0;
	ssize_t n;
	char c;

	pids = calloc((size_t)ntasks, sizeof(*pids));
	if (!pids)
		fail("out of memory");
	if (!task_abort)
		task_abort = shared_alloc(sizeof(*task_abort));
	*task_abort = 0;
	if (pipe(ready) || pipe(go))
		fail_errno("pipe", NULL);

	fflush(NULL);
	for (i = 0; i < ntasks; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			report_errno("fork", NULL, errno);
			*task_abort = 1;
			ret = 1;
			break;
		}
		if (pids[i] == 0) {
			task_no = i;
			close(ready[0]);
			close(go[1]);
			task_ready_fd = ready[1];
			task_go_fd = go[0];
			exit(fn(i, arg));
		}
	}
	close(ready[1]);
	close(go[0]);

	/* Each task writes one byte and closes its end once it is ready;
	 * a task that dies in set-up just closes its end.
	 */
	for (;;) {
		n = read(ready[0], &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		nready++;
	}
	close(ready[0]);
	if (nready != ntasks)
		*task_abort = 1;

	*start_ns = now_ns();
	close(go[1]);

	if (reap_tasks(ntasks, pids))
		ret = 1;
	free(pids);
	return ret;
}

char **dir_args(int argc, char **argv, int max, int *ntasks)
{
	*ntasks = argc - optind;
	if (*ntasks < 1)
		usage_error("missing DIR");
	if (*ntasks > max)
		usage_error("at most %d DIR arguments", max);
	return argv + optind;
}

uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}
