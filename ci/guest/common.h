/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the guest-side test programs: error reporting,
 * option parsing, timing, pseudo-random data and forked task groups.
 */
#ifndef GUEST_COMMON_H
#define GUEST_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define NSEC_PER_SEC	1000000000ULL

/* Set by each program before doing anything else. */
extern const char *prog_name;
extern void (*prog_usage)(FILE *out);

/* -1 in the parent, the task number in a forked task. */
extern int task_no;

/* Print "FAIL: <message>" to stderr and exit with status 1. */
_Noreturn void fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Print "FAIL: <op> <path>: <strerror(errno)>" and exit with status 1. */
_Noreturn void fail_errno(const char *op, const char *path);

/* Same message as fail_errno() for error number @err, without exiting. */
void report_errno(const char *op, const char *path, int err);

/* Print the usage text to stderr and exit with status 2. */
_Noreturn void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Handle -h: usage text on stdout, exit status 0. */
_Noreturn void usage_help(void);

/* Parse an unsigned decimal in [min, max] or exit through usage_error(). */
uint64_t parse_u64(const char *s, char opt, uint64_t min, uint64_t max);

/* Parse a positive number of seconds ("2", "0.5") into nanoseconds. */
uint64_t parse_seconds(const char *s, char opt);

uint64_t now_ns(void);

/* snprintf() into @buf, failing the program if the result is truncated. */
void path_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Zeroed memory shared between the parent and its forked tasks. */
void *shared_alloc(size_t size);

/* Write all of @len bytes at @off.  Returns 0, or -1 with errno set;
 * *done (if not NULL) receives the number of bytes actually written.
 */
int pwrite_full(int fd, const void *buf, size_t len, off_t off, size_t *done);

/* Read up to @len bytes at @off, stopping early only at end of file.
 * Returns the number of bytes read, or -1 with errno set.
 */
ssize_t pread_full(int fd, void *buf, size_t len, off_t off);

/* Little-endian on-disk fields (little-endian hosts only), read from an
 * unaligned buffer.
 */
uint32_t get32(const unsigned char *p);
uint16_t get16(const unsigned char *p);

/* splitmix64-based generator and mixing function. */
uint64_t mix64(uint64_t x);
uint64_t rng_next(uint64_t *state);
/* Uniform-ish value in [0, n); n must be > 0. */
uint64_t rng_below(uint64_t *state, uint64_t n);

/* Fill @buf with the data pattern of file @key starting at offset @off.
 * The byte at a given file offset depends only on (key, offset).
 */
void fill_pattern(unsigned char *buf, size_t len, uint64_t key, uint64_t off);

/*
 * The DIR operands after the options (argv[optind..]), one task each:
 * stores their number in *ntasks, or exits through usage_error() when
 * there are none or more than @max.
 */
char **dir_args(int argc, char **argv, int max, int *ntasks);

/*
 * Run @ntasks forked tasks.  Task i runs fn(i, arg) and exits with its
 * return value.  Every task must call task_wait_start() once it has
 * finished its set-up; tasks are released together once all of them
 * are ready, and *start_ns receives the release time.  Returns 0 when
 * every task exited with status 0, 1 otherwise (after printing a FAIL
 * line per failed task).
 */
typedef int (*task_fn)(int taskno, void *arg);
int run_tasks(int ntasks, task_fn fn, void *arg, uint64_t *start_ns);

/* Returns 0 when released, -1 when the group was aborted in set-up. */
int task_wait_start(void);

#endif /* GUEST_COMMON_H */
