// SPDX-License-Identifier: GPL-2.0
/*
 * dsyncsize - is the new size of an O_DIRECT|O_DSYNC write that extends a
 * file inside its last allocated block on the disk when pwrite() returns?
 *
 * FILE is created on a mounted ext2 filesystem on DEV (a whole disk, e.g.
 * /dev/vda) with LEN1 bytes written through the page cache and fsync()ed,
 * so that its first block is allocated and its size LEN1 is on the disk.
 * Then one aligned pwrite() of one block at offset 0, opened with
 * O_DIRECT|O_DSYNC, extends the size to the block size without allocating
 * anything.  O_DSYNC asks for the data and the metadata needed to read it
 * back (the new i_size) to be durable when the call returns.
 *
 * The program reads the inode from DEV with O_DIRECT (the disk's copy,
 * not the page cache's) right after the write, and counts the writes the
 * disk completed during it (/sys/block/<dev>/stat).  It fails when the
 * on-disk size is not the new size.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define SB_OFFSET	1024
#define EXT2_MAGIC	0xef53
#define GD_SIZE		32
#define IO_ALIGN	4096

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: dsyncsize [-s LEN1] FILE DEV\n"
		"  Create FILE with LEN1 bytes (default 1000), fsync, then one\n"
		"  O_DIRECT|O_DSYNC block write at 0 that extends it; read the\n"
		"  inode's size from DEV with O_DIRECT and fail unless it is the\n"
		"  new size.  Prints the disk writes completed by the write.\n");
}

/* Writes completed, the 5th field of /sys/block/<name>/stat. */
static unsigned long long disk_writes(const char *statpath)
{
	unsigned long long f[5];
	FILE *fh = fopen(statpath, "r");

	if (!fh)
		fail_errno("open", statpath);
	if (fscanf(fh, "%llu %llu %llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4]) != 5)
		fail("%s: cannot parse", statpath);
	fclose(fh);
	return f[4];
}

/* One aligned O_DIRECT read of @len bytes at byte @off of @fd. */
static void read_direct(int fd, const char *dev, unsigned char *buf,
			size_t len, off_t off)
{
	ssize_t n = pread_full(fd, buf, len, off);

	if (n < 0)
		fail_errno("pread", dev);
	if ((size_t)n != len)
		fail("%s: short read at %lld", dev, (long long)off);
}

/* The size field (low 32 bits) of inode @ino as DEV holds it. */
static uint32_t disk_isize(const char *dev, ino_t ino)
{
	unsigned char *buf;
	uint32_t bsize, ipg, isize, first_data, gd_block, itable;
	uint64_t group, index, off;
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (fd < 0)
		fail_errno("open", dev);
	if (posix_memalign((void **)&buf, IO_ALIGN, IO_ALIGN))
		fail("out of memory");
	read_direct(fd, dev, buf, IO_ALIGN, 0);
	if (get16(buf + SB_OFFSET + 56) != EXT2_MAGIC)
		fail("%s: no ext2 superblock", dev);
	bsize = 1024U << get32(buf + SB_OFFSET + 24);
	first_data = get32(buf + SB_OFFSET + 20);
	ipg = get32(buf + SB_OFFSET + 40);
	isize = get32(buf + SB_OFFSET + 76) ? get16(buf + SB_OFFSET + 88) : 128;
	if (bsize > IO_ALIGN || !ipg || !isize)
		fail("%s: unexpected superblock (block %u, %u inodes/group)",
		     dev, bsize, ipg);

	group = (ino - 1) / ipg;
	index = (ino - 1) % ipg;
	gd_block = first_data + 1;
	off = (uint64_t)gd_block * bsize + group * GD_SIZE;
	read_direct(fd, dev, buf, IO_ALIGN, off & ~(uint64_t)(IO_ALIGN - 1));
	itable = get32(buf + (off & (IO_ALIGN - 1)) + 8);

	off = (uint64_t)itable * bsize + index * isize;
	read_direct(fd, dev, buf, IO_ALIGN, off & ~(uint64_t)(IO_ALIGN - 1));
	isize = get32(buf + (off & (IO_ALIGN - 1)) + 4);
	free(buf);
	close(fd);
	return isize;
}

int main(int argc, char **argv)
{
	unsigned long long w0, w1;
	uint64_t len1 = 1000;
	const char *file, *dev;
	char statpath[256], devcopy[256];
	unsigned char *buf;
	struct stat st;
	uint32_t ondisk;
	int fd, opt;

	prog_name = "dsyncsize";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "s:h")) != -1) {
		switch (opt) {
		case 's':
			len1 = parse_u64(optarg, 's', 1, IO_ALIGN - 1);
			break;
		case 'h':
			usage_help();
		default:
			usage_error("unknown option");
		}
	}
	if (argc - optind != 2)
		usage_error("FILE and DEV expected");
	file = argv[optind];
	dev = argv[optind + 1];
	snprintf(devcopy, sizeof(devcopy), "%s", dev);
	path_fmt(statpath, sizeof(statpath), "/sys/block/%s/stat",
		 basename(devcopy));

	if (posix_memalign((void **)&buf, IO_ALIGN, IO_ALIGN))
		fail("out of memory");
	memset(buf, 0x5a, IO_ALIGN);

	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		fail_errno("open", file);
	if (pwrite_full(fd, buf, len1, 0, NULL))
		fail_errno("pwrite", file);
	if (fsync(fd))
		fail_errno("fsync", file);
	if (fstat(fd, &st))
		fail_errno("fstat", file);
	close(fd);
	if (st.st_blksize > IO_ALIGN)
		fail("%s: block size %ld is larger than %d", file,
		     (long)st.st_blksize, IO_ALIGN);
	sync();

	fd = open(file, O_WRONLY | O_DIRECT | O_DSYNC);
	if (fd < 0)
		fail_errno("open O_DIRECT|O_DSYNC", file);
	w0 = disk_writes(statpath);
	if (pwrite_full(fd, buf, st.st_blksize, 0, NULL))
		fail_errno("pwrite O_DIRECT|O_DSYNC", file);
	w1 = disk_writes(statpath);
	ondisk = disk_isize(dev, st.st_ino);
	close(fd);

	printf("dsyncsize: %s: size %llu -> %ld by one O_DIRECT|O_DSYNC write: %llu disk writes, on-disk size %u\n",
	       file, (unsigned long long)len1, (long)st.st_blksize, w1 - w0,
	       ondisk);
	if (ondisk != (uint32_t)st.st_blksize)
		fail("%s: the O_DSYNC write returned but the disk holds size %u, not %ld: the new size is not durable",
		     file, ondisk, (long)st.st_blksize);
	printf("RESULT prog=dsyncsize writes=%llu ondisk=%u size=%ld\n",
	       w1 - w0, ondisk, (long)st.st_blksize);
	free(buf);
	return 0;
}
