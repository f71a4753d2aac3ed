// SPDX-License-Identifier: GPL-2.0
/*
 * fsreport - sync() and print the statfs() counters of a filesystem,
 * for comparison with the counts e2fsck finds on the host.
 */
#include <stdio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common.h"

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: fsreport PATH\n"
		"  sync(), then print the statfs() counters of PATH.\n");
}

int main(int argc, char **argv)
{
	struct statfs st;
	int opt;

	prog_name = "fsreport";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "h")) != -1) {
		switch (opt) {
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind != 1)
		usage_error("expected exactly one PATH");

	sync();
	if (statfs(argv[optind], &st))
		fail_errno("statfs", argv[optind]);
	printf("RESULT prog=fsreport bsize=%llu blocks=%llu bfree=%llu bavail=%llu files=%llu ffree=%llu\n",
	       (unsigned long long)st.f_bsize,
	       (unsigned long long)st.f_blocks,
	       (unsigned long long)st.f_bfree,
	       (unsigned long long)st.f_bavail,
	       (unsigned long long)st.f_files,
	       (unsigned long long)st.f_ffree);
	return 0;
}
