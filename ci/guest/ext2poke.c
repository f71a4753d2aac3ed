// SPDX-License-Identifier: GPL-2.0
/*
 * ext2poke - read and rewrite ext2 metadata through the block device, as
 * debugfs -w, e2fsck or a fuzzer would, also while the filesystem is
 * mounted (buffered I/O: the block device's page cache is the memory that
 * holds the mounted filesystem's superblock and group descriptors).
 * Little-endian hosts only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define SB_OFFSET	1024
#define EXT2_MAGIC	0xef53
#define EXT2_ERROR_FS	0x0002
#define GD_SIZE		32

static int fd = -1;
static const char *dev;

/* The superblock fields this program uses. */
static unsigned char sbuf[1024];
static uint32_t inodes_count, blocks_count, first_data_block, block_size;
static uint32_t blocks_per_group, inodes_per_group, inode_size, groups;

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: ext2poke DEV COMMAND [ARGS]\n"
		"  sums                      RESULT line with the free counts summed over\n"
		"                            the group descriptors and the superblock's\n"
		"  first-data-block [VALUE]  print, or set, s_first_data_block\n"
		"  iblock INO                print the first block pointer of inode INO\n"
		"  leak GROUP COUNT          mark COUNT contiguous free blocks of GROUP in\n"
		"                            use (bitmap, descriptor and superblock counts),\n"
		"                            owned by no inode; print the first block\n"
		"  unleak GROUP FIRST COUNT  free them again (as e2fsck would)\n"
		"  clear-error               clear the error flag in s_state\n");
}

static void rd(void *buf, size_t len, off_t off)
{
	ssize_t n = pread_full(fd, buf, len, off);

	if (n < 0)
		fail_errno("pread", dev);
	if ((size_t)n != len)
		fail("short read of %s at %lld", dev, (long long)off);
}

static void wr(const void *buf, size_t len, off_t off)
{
	if (pwrite_full(fd, buf, len, off, NULL))
		fail_errno("pwrite", dev);
	if (fsync(fd))
		fail_errno("fsync", dev);
}

static void read_sb(void)
{
	rd(sbuf, sizeof(sbuf), SB_OFFSET);
	if (get16(sbuf + 56) != EXT2_MAGIC)
		fail("%s: no ext2 superblock", dev);
	inodes_count = get32(sbuf + 0);
	blocks_count = get32(sbuf + 4);
	first_data_block = get32(sbuf + 20);
	block_size = 1024u << get32(sbuf + 24);
	blocks_per_group = get32(sbuf + 32);
	inodes_per_group = get32(sbuf + 40);
	inode_size = get32(sbuf + 76) ? get16(sbuf + 88) : 128;
	if (!blocks_per_group || !inodes_per_group || first_data_block >= blocks_count)
		fail("%s: implausible superblock", dev);
	groups = (blocks_count - first_data_block + blocks_per_group - 1) /
		 blocks_per_group;
}

static void write_sb(void)
{
	wr(sbuf, sizeof(sbuf), SB_OFFSET);
}

/* Byte offset of the descriptor of @group. */
static off_t gd_off(uint32_t group)
{
	if (group >= groups)
		fail("group %u out of range (%u groups)", group, groups);
	return (off_t)(first_data_block + 1) * block_size + (off_t)group * GD_SIZE;
}

static void cmd_sums(void)
{
	uint64_t bfree = 0, ffree = 0, dirs = 0;
	unsigned char gd[GD_SIZE];
	uint32_t g;

	for (g = 0; g < groups; g++) {
		rd(gd, sizeof(gd), gd_off(g));
		bfree += get16(gd + 12);
		ffree += get16(gd + 14);
		dirs += get16(gd + 16);
	}
	printf("RESULT prog=ext2poke groups=%u bfree=%llu ffree=%llu dirs=%llu sb_bfree=%u sb_ffree=%u state=%u\n",
	       groups, (unsigned long long)bfree, (unsigned long long)ffree,
	       (unsigned long long)dirs, get32(sbuf + 12), get32(sbuf + 16),
	       get16(sbuf + 58));
}

static void cmd_iblock(uint32_t ino)
{
	unsigned char gd[GD_SIZE], raw[4];
	uint32_t group, index;
	off_t off;

	if (!ino || ino > inodes_count)
		fail("inode %u out of range", ino);
	group = (ino - 1) / inodes_per_group;
	index = (ino - 1) % inodes_per_group;
	rd(gd, sizeof(gd), gd_off(group));
	off = (off_t)get32(gd + 8) * block_size + (off_t)index * inode_size;
	rd(raw, sizeof(raw), off + 40);	/* i_block[0] */
	printf("%u\n", get32(raw));
}

/* Set (@set) or clear @count bits from group-relative block @first. */
static void flip_blocks(uint32_t group, uint32_t first, uint32_t count, int set)
{
	unsigned char gd[GD_SIZE];
	unsigned char *bitmap = malloc(block_size);
	uint32_t i, free_blocks;
	off_t boff;

	if (!bitmap)
		fail("out of memory");
	rd(gd, sizeof(gd), gd_off(group));
	boff = (off_t)get32(gd + 0) * block_size;
	rd(bitmap, block_size, boff);
	for (i = first; i < first + count; i++) {
		int bit = bitmap[i / 8] >> (i % 8) & 1;

		if (bit == set)
			fail("block %u of group %u is already %s", i, group,
			     set ? "in use" : "free");
		bitmap[i / 8] ^= 1u << (i % 8);
	}
	free_blocks = get16(gd + 12);
	put16(gd + 12, set ? free_blocks - count : free_blocks + count);
	put32(sbuf + 12, set ? get32(sbuf + 12) - count : get32(sbuf + 12) + count);
	wr(bitmap, block_size, boff);
	wr(gd, sizeof(gd), gd_off(group));
	write_sb();
	free(bitmap);
}

static void cmd_leak(uint32_t group, uint32_t count)
{
	unsigned char gd[GD_SIZE];
	unsigned char *bitmap = malloc(block_size);
	uint32_t i, run = 0, in_group = blocks_per_group;

	if (!bitmap)
		fail("out of memory");
	if (group == groups - 1)
		in_group = blocks_count - first_data_block - group * blocks_per_group;
	rd(gd, sizeof(gd), gd_off(group));
	rd(bitmap, block_size, (off_t)get32(gd + 0) * block_size);
	for (i = 0; i < in_group && run < count; i++)
		run = (bitmap[i / 8] >> (i % 8) & 1) ? 0 : run + 1;
	free(bitmap);
	if (run < count)
		fail("no %u contiguous free blocks in group %u", count, group);
	flip_blocks(group, i - count, count, 1);
	printf("%u\n", first_data_block + group * blocks_per_group + i - count);
}

static void cmd_unleak(uint32_t group, uint32_t first, uint32_t count)
{
	uint32_t start = first_data_block + group * blocks_per_group;

	if (first < start || first - start + count > blocks_per_group)
		fail("blocks %u+%u are not in group %u", first, count, group);
	flip_blocks(group, first - start, count, 0);
}

int main(int argc, char **argv)
{
	const char *cmd;
	int opt;

	prog_name = "ext2poke";
	prog_usage = print_usage;
	while ((opt = getopt(argc, argv, "h")) != -1) {
		switch (opt) {
		case 'h':
			usage_help();
		default:
			usage_error("bad option");
		}
	}
	if (argc - optind < 2)
		usage_error("expected DEV and COMMAND");
	dev = argv[optind];
	cmd = argv[optind + 1];
	argv += optind + 2;
	argc -= optind + 2;

	fd = open(dev, O_RDWR);
	if (fd < 0)
		fail_errno("open", dev);
	read_sb();

	if (!strcmp(cmd, "sums") && argc == 0) {
		cmd_sums();
	} else if (!strcmp(cmd, "first-data-block") && argc <= 1) {
		if (argc == 0) {
			printf("%u\n", first_data_block);
		} else {
			put32(sbuf + 20, parse_u64(argv[0], 'N', 0, UINT32_MAX));
			write_sb();
		}
	} else if (!strcmp(cmd, "iblock") && argc == 1) {
		cmd_iblock(parse_u64(argv[0], 'N', 1, UINT32_MAX));
	} else if (!strcmp(cmd, "leak") && argc == 2) {
		cmd_leak(parse_u64(argv[0], 'N', 0, UINT32_MAX),
			 parse_u64(argv[1], 'N', 1, UINT32_MAX));
	} else if (!strcmp(cmd, "unleak") && argc == 3) {
		cmd_unleak(parse_u64(argv[0], 'N', 0, UINT32_MAX),
			   parse_u64(argv[1], 'N', 0, UINT32_MAX),
			   parse_u64(argv[2], 'N', 1, UINT32_MAX));
	} else if (!strcmp(cmd, "clear-error") && argc == 0) {
		put16(sbuf + 58, get16(sbuf + 58) & ~EXT2_ERROR_FS);
		write_sb();
	} else {
		usage_error("bad command or arguments");
	}
	if (close(fd))
		fail_errno("close", dev);
	return 0;
}
