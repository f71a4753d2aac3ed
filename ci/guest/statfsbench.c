// SPDX-License-Identifier: GPL-2.0
/*
 * statfsbench - statfs() throughput from several threads at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_THREADS	1024

struct bench_thread {
	pthread_t tid;
	uint64_t calls;
	int err;
};

static const char *bench_path;
static pthread_barrier_t bench_barrier;
static atomic_int bench_stop;

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: statfsbench [-T THREADS] [-t SECONDS] PATH\n"
		"  THREADS threads (default 1) call statfs(PATH) in a loop\n"
		"  for SECONDS (default 5, fractions allowed).\n");
}

static void *bench_thread_fn(void *arg)
{
	struct bench_thread *t = arg;
	struct statfs st;
	uint64_t calls = 0;

	pthread_barrier_wait(&bench_barrier);
	while (!atomic_load_explicit(&bench_stop, memory_order_relaxed)) {
		if (statfs(bench_path, &st)) {
			t->err = errno;
			atomic_store(&bench_stop, 1);
			break;
		}
		calls++;
	}
	t->calls = calls;
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_thread *threads;
	uint64_t nthreads = 1, duration = 5 * NSEC_PER_SEC;
	uint64_t start, elapsed, calls = 0;
	struct timespec ts;
	const char *secs = "5";
	uint64_t i;
	int opt, ret, failed = 0;

	prog_name = "statfsbench";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hT:t:")) != -1) {
		switch (opt) {
		case 'T':
			nthreads = parse_u64(optarg, 'T', 1, MAX_THREADS);
			break;
		case 't':
			duration = parse_seconds(optarg, 't');
			secs = optarg;
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind != 1)
		usage_error("expected exactly one PATH");
	if (duration == 0)
		usage_error("-t: duration must be positive");
	bench_path = argv[optind];

	/* Fail early, and with a clear message, on a bad PATH. */
	{
		struct statfs st;

		if (statfs(bench_path, &st))
			fail_errno("statfs", bench_path);
	}

	threads = calloc(nthreads, sizeof(*threads));
	if (!threads)
		fail("out of memory");
	ret = pthread_barrier_init(&bench_barrier, NULL,
				   (unsigned int)nthreads + 1);
	if (ret)
		fail("pthread_barrier_init: %s", strerror(ret));
	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&threads[i].tid, NULL, bench_thread_fn,
				     &threads[i]);
		if (ret)
			fail("pthread_create: %s", strerror(ret));
	}

	pthread_barrier_wait(&bench_barrier);
	start = now_ns();
	ts.tv_sec = (time_t)(duration / NSEC_PER_SEC);
	ts.tv_nsec = (long)(duration % NSEC_PER_SEC);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	atomic_store(&bench_stop, 1);
	for (i = 0; i < nthreads; i++) {
		ret = pthread_join(threads[i].tid, NULL);
		if (ret)
			fail("pthread_join: %s", strerror(ret));
	}
	elapsed = now_ns() - start;

	for (i = 0; i < nthreads; i++) {
		if (threads[i].err) {
			report_errno("statfs", bench_path, threads[i].err);
			failed = 1;
		}
		calls += threads[i].calls;
	}
	if (failed)
		return 1;
	if (calls == 0)
		fail("no statfs() call completed in %s seconds", secs);

	printf("RESULT prog=statfsbench threads=%llu seconds=%.9g calls=%llu elapsed_ns=%llu calls_per_s=%.1f ns_per_call=%.1f\n",
	       (unsigned long long)nthreads, (double)duration / 1e9,
	       (unsigned long long)calls, (unsigned long long)elapsed,
	       (double)calls * 1e9 / (double)elapsed,
	       (double)elapsed * (double)nthreads / (double)calls);
	free(threads);
	return 0;
}
