// SPDX-License-Identifier: GPL-2.0
/*
 * failmount - mount an ext2 filesystem with the N-th fault injection
 * point of the mount failing, for N = 1, 2, ... until a mount passes
 * every point without an injected failure.
 *
 * Needs a kernel with CONFIG_FAULT_INJECTION (/proc/thread-self/fail-nth)
 * and the fault types to inject (failslab, fail_page_alloc) set up in
 * debugfs by the caller.  A failed mount must return an error; a mount
 * that absorbed its failure must unmount cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "common.h"

#define FAIL_NTH	"/proc/thread-self/fail-nth"

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: failmount [-m MAX] [-o OPTIONS] DEV DIR\n"
		"  For N = 1, 2, ... (at most MAX, default 100000) make the N-th\n"
		"  fault injection point of mount(DEV, DIR, \"ext2\", OPTIONS) fail,\n"
		"  until a mount passes all of them.  Every failed mount must\n"
		"  return an error and every mount that succeeded must unmount.\n");
}

static void arm(int fd, unsigned long n)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%lu", n);

	if (pwrite(fd, buf, (size_t)len, 0) != len)
		fail_errno("write", FAIL_NTH);
}

/* 0: the armed fault was injected; otherwise the calls still to go. */
static unsigned long pending(int fd)
{
	char buf[32];
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);

	if (len <= 0)
		fail_errno("read", FAIL_NTH);
	buf[len] = '\0';
	return strtoul(buf, NULL, 10);
}

int main(int argc, char **argv)
{
	unsigned long n, max = 100000, failed = 0, absorbed = 0, enomem = 0;
	const char *opts = "", *dev, *dir;
	int opt, fd, ret, err;

	prog_name = "failmount";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "hm:o:")) != -1) {
		switch (opt) {
		case 'm':
			max = (unsigned long)parse_u64(optarg, 'm', 1, 10000000);
			break;
		case 'o':
			opts = optarg;
			break;
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind != 2)
		usage_error("expected DEV and DIR");
	dev = argv[optind];
	dir = argv[optind + 1];

	fd = open(FAIL_NTH, O_RDWR);
	if (fd < 0)
		fail_errno("open", FAIL_NTH);
	for (n = 1; n <= max; n++) {
		arm(fd, n);
		ret = mount(dev, dir, "ext2", 0, opts);
		err = errno;
		if (pending(fd)) {
			arm(fd, 0);
			/* The mount went past all n - 1 points: done. */
			if (ret)
				fail("mount %s failed without an injected fault: %s",
				     dev, strerror(err));
			if (umount(dir))
				fail_errno("umount", dir);
			printf("RESULT prog=failmount points=%lu failed=%lu absorbed=%lu enomem=%lu\n",
			       n - 1, failed, absorbed, enomem);
			return 0;
		}
		if (ret) {
			failed++;
			if (err == ENOMEM)
				enomem++;
			continue;
		}
		/* The failure was absorbed (a fallback or a retry). */
		absorbed++;
		if (umount(dir))
			fail_errno("umount after an absorbed fault", dir);
	}
	fail("mount %s still met an injected fault after %lu points", dev, max);
}
