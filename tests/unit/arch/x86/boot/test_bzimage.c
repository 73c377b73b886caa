// SPDX-License-Identifier: MIT
/*
 * The boot protocol loader: the zero page built for a known synthetic
 * bzImage header, the e820 map of VMs below and above the MMIO hole,
 * initrd placement and refusal, and every malformed header refused as
 * "not a kernel".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/boot/bzimage.h"
#include "tests/harness/hv_test.h"

#define KFILE (64u << 10)
#define RAM (64ULL << 20)
#define SETUP_SECTS 3
#define INIT_SIZE (8u << 20)

static void put16(uint8_t *p, uint32_t o, uint16_t v)
{
	p[o] = (uint8_t)v;
	p[o + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t o, uint32_t v)
{
	put16(p, o, (uint16_t)v);
	put16(p, o + 2, (uint16_t)(v >> 16));
}

static uint32_t get32(const uint8_t *p, uint32_t o)
{
	return (uint32_t)p[o] | (uint32_t)p[o + 1] << 8 |
	       (uint32_t)p[o + 2] << 16 | (uint32_t)p[o + 3] << 24;
}

static uint64_t get64(const uint8_t *p, uint32_t o)
{
	return get32(p, o) | (uint64_t)get32(p, o + 4) << 32;
}

/* A bzImage as Debian's 6.1 kernel has it: protocol 2.15, relocatable,
 * 64-bit entry, pref_address 16 MiB; its "kernel" is a byte pattern. */
static uint8_t *make_kernel(void)
{
	uint8_t *k = calloc(1, KFILE);

	k[0x1f1] = SETUP_SECTS;
	put16(k, 0x1fe, 0xaa55);
	k[0x200] = 0xeb;
	k[0x201] = 0x6a; /* header ends at 0x26c */
	put32(k, 0x202, 0x53726448);
	put16(k, 0x206, 0x020f);
	k[0x211] = 0x01; /* LOADED_HIGH */
	put32(k, 0x22c, 0x7fffffff);
	put32(k, 0x230, 0x200000);
	k[0x234] = 1;
	put16(k, 0x236, 0x7f);
	put32(k, 0x238, 2047);
	put32(k, 0x258, 0x1000000);
	put32(k, 0x260, INIT_SIZE);
	for (uint32_t i = (SETUP_SECTS + 1) * 512; i < KFILE; i++)
		k[i] = (uint8_t)(i * 7);
	return k;
}

static void test_zero_page_of_a_known_header(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM), *k = make_kernel(), *zp;
	uint8_t initrd[10000];
	struct x86_linux_boot in = {k, KFILE, initrd, sizeof(initrd),
				    "console=ttyS0 reboot=k"};
	struct x86_linux_entry e;
	uint32_t pm = (SETUP_SECTS + 1) * 512;

	memset(initrd, 0x5a, sizeof(initrd));
	CU_ASSERT_EQUAL_FATAL(x86_bzimage_load(ram, &l, &in, &e), 0);
	zp = ram + e.zero_page;
	CU_ASSERT_EQUAL(e.zero_page, X86_BOOT_ZERO_PAGE_GPA);
	CU_ASSERT_EQUAL(e.load_gpa, 0x1000000);
	CU_ASSERT_EQUAL(e.entry64, 0x1000200);
	CU_ASSERT_EQUAL(e.kernel_end, 0x1000000 + INIT_SIZE);
	CU_ASSERT_EQUAL(memcmp(ram + e.load_gpa, k + pm, KFILE - pm), 0);
	/* The setup header is the file's, with the loader's fields. */
	CU_ASSERT_EQUAL(get32(zp, 0x202), 0x53726448);
	CU_ASSERT_EQUAL(get32(zp, 0x260), INIT_SIZE);
	CU_ASSERT_EQUAL(zp[0x210], 0xff);
	CU_ASSERT_EQUAL(zp[0x211], 0x81);
	CU_ASSERT_EQUAL(get32(zp, 0x228), X86_BOOT_CMDLINE_GPA);
	CU_ASSERT_STRING_EQUAL((char *)ram + X86_BOOT_CMDLINE_GPA,
			       "console=ttyS0 reboot=k");
	/* Initrd at the top of RAM, page aligned, its bytes there. */
	CU_ASSERT_EQUAL(get32(zp, 0x218), e.initrd_gpa);
	CU_ASSERT_EQUAL(get32(zp, 0x21c), sizeof(initrd));
	CU_ASSERT_EQUAL(e.initrd_gpa, (RAM - sizeof(initrd)) & ~4095ULL);
	CU_ASSERT_EQUAL(memcmp(ram + e.initrd_gpa, initrd, sizeof(initrd)), 0);
	/* Nothing past the header was copied from the file. */
	CU_ASSERT_EQUAL(zp[0x26c], 0);
	/* e820 as x86_e820_build makes it. */
	CU_ASSERT_EQUAL(zp[0x1e8], 4);
	CU_ASSERT_EQUAL(get64(zp, 0x2d0 + 3 * 20), 0x100000);
	CU_ASSERT_EQUAL(get64(zp, 0x2d0 + 3 * 20 + 8), RAM - 0x100000);
	CU_ASSERT_EQUAL(get32(zp, 0x2d0 + 3 * 20 + 16), X86_E820_RAM);
	free(ram);
	free(k);
}

/* A non-relocatable kernel, or one whose pref_address does not fit,
 * goes to 1 MiB. */
static void test_kernel_at_1mib_when_pref_address_unusable(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM), *k = make_kernel();
	struct x86_linux_boot in = {k, KFILE, NULL, 0, ""};
	struct x86_linux_entry e;

	k[0x234] = 0;
	CU_ASSERT_EQUAL(x86_bzimage_load(ram, &l, &in, &e), 0);
	CU_ASSERT_EQUAL(e.load_gpa, 0x100000);
	CU_ASSERT_EQUAL(e.initrd_gpa, 0);
	k[0x234] = 1;
	put32(k, 0x260, 60u << 20); /* 16 MiB + 60 MiB > 64 MiB */
	CU_ASSERT_EQUAL(x86_bzimage_load(ram, &l, &in, &e), 0);
	CU_ASSERT_EQUAL(e.load_gpa, 0x100000);
	put32(k, 0x260, 64u << 20); /* not even at 1 MiB */
	CU_ASSERT_EQUAL(x86_bzimage_load(ram, &l, &in, &e), -ENOSPC);
	free(ram);
	free(k);
}

static void test_e820_below_and_above_the_hole(void)
{
	struct hv_ram_layout small = hv_ram_layout_std(512ULL << 20);
	struct hv_ram_layout big = hv_ram_layout_std(5ULL << 30);
	struct x86_e820 m[8];

	CU_ASSERT_EQUAL(x86_e820_build(&small, m, 8), 4);
	CU_ASSERT(m[0].addr == 0 && m[0].size == 0x9fc00 &&
		  m[0].type == X86_E820_RAM);
	CU_ASSERT(m[1].addr == 0x9fc00 && m[1].size == 0x400 &&
		  m[1].type == X86_E820_RESERVED);
	CU_ASSERT(m[2].addr == 0xf0000 && m[2].size == 0x10000 &&
		  m[2].type == X86_E820_RESERVED);
	CU_ASSERT(m[3].addr == 0x100000 &&
		  m[3].size == (512ULL << 20) - 0x100000);

	CU_ASSERT_EQUAL(x86_e820_build(&big, m, 8), 5);
	CU_ASSERT_EQUAL(m[3].addr + m[3].size, HV_RAM_HOLE_START);
	CU_ASSERT_EQUAL(m[4].addr, HV_RAM_HOLE_END);
	CU_ASSERT_EQUAL(m[4].size, (5ULL << 30) - HV_RAM_HOLE_START);
	CU_ASSERT_EQUAL(m[4].type, X86_E820_RAM);
	/* Every RAM entry maps to RAM offsets inside the VM. */
	for (int i = 0; i < 5; i++)
		if (m[i].type == X86_E820_RAM)
			CU_ASSERT(hv_ram_range_to_off(&big, m[i].addr,
						      m[i].size) != HV_RAM_BAD);
	CU_ASSERT_EQUAL(x86_e820_build(&big, m, 4), -EINVAL);
}

static void test_initrd_placed_high_or_refused(void)
{
	struct hv_ram_layout big = hv_ram_layout_std(5ULL << 30);
	struct x86_bzimage bz = {.initrd_addr_max = 0x7fffffff};
	uint64_t gpa = 0;

	/* Below initrd_addr_max, not at the top of low RAM. */
	CU_ASSERT_EQUAL(x86_initrd_place(&bz, &big, 0x2000000, 5000, &gpa), 0);
	CU_ASSERT_EQUAL(gpa, (0x80000000ULL - 5000) & ~4095ULL);
	/* The top of RAM below the hole when the kernel allows more. */
	bz.initrd_addr_max = 0xffffffff;
	CU_ASSERT_EQUAL(x86_initrd_place(&bz, &big, 0x2000000, 4096, &gpa), 0);
	CU_ASSERT_EQUAL(gpa, HV_RAM_HOLE_START - 4096);
	/* Does not fit above the kernel: refused. */
	bz.initrd_addr_max = 0x2fffffff;
	CU_ASSERT_EQUAL(
		x86_initrd_place(&bz, &big, 0x20000000, 0x10000001, &gpa),
		-ENOSPC);
	CU_ASSERT_EQUAL(
		x86_initrd_place(&bz, &big, 0x20000000, 0x10000000, &gpa), 0);
	CU_ASSERT_EQUAL(gpa, 0x20000000);
}

static void test_malformed_headers_are_not_kernels(void)
{
	struct x86_bzimage bz;
	uint8_t *k = make_kernel();
	uint8_t save;

	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), 0);
	CU_ASSERT_EQUAL(bz.version, 0x020f);
	CU_ASSERT_EQUAL(bz.setup_bytes, (SETUP_SECTS + 1) * 512);
	CU_ASSERT_EQUAL(bz.hdr_end, 0x26c);
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, 0x200, &bz), -ENOEXEC);
	CU_ASSERT_EQUAL(x86_bzimage_parse(NULL, 0, &bz), -ENOEXEC);
	/* Each field broken alone, then restored. */
	k[0x1fe] = 0;
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	k[0x1fe] = 0x55;
	k[0x202] = 'X';
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	k[0x202] = 'H';
	put16(k, 0x206, 0x020b);
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	put16(k, 0x206, 0x020f);
	put16(k, 0x236, 0x7e);
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	put16(k, 0x236, 0x7f);
	save = k[0x1f1];
	k[0x1f1] = 200; /* setup past the end of the file */
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	k[0x1f1] = save;
	k[0x201] = 0xff; /* header reaching past boot_params' header */
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	k[0x201] = 0x6a;
	put32(k, 0x230, 0x3000); /* alignment not a power of two */
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	put32(k, 0x230, 0x200000);
	put32(k, 0x260, 100); /* init_size smaller than the kernel */
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), -ENOEXEC);
	put32(k, 0x260, INIT_SIZE);
	CU_ASSERT_EQUAL(x86_bzimage_parse(k, KFILE, &bz), 0);
	free(k);
}

static void test_command_line_longer_than_the_kernel_takes(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM), *k = make_kernel();
	char line[40];
	struct x86_linux_boot in = {k, KFILE, NULL, 0, line};
	struct x86_linux_entry e;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = 0;
	put32(k, 0x238, sizeof(line) - 2);
	CU_ASSERT_EQUAL(x86_bzimage_load(ram, &l, &in, &e), -E2BIG);
	put32(k, 0x238, sizeof(line) - 1);
	CU_ASSERT_EQUAL(x86_bzimage_load(ram, &l, &in, &e), 0);
	free(ram);
	free(k);
}

static CU_TestInfo tests[] = {
	{"zero_page_of_a_known_header", test_zero_page_of_a_known_header},
	{"kernel_at_1mib_when_pref_address_unusable",
	 test_kernel_at_1mib_when_pref_address_unusable},
	{"e820_below_and_above_the_hole", test_e820_below_and_above_the_hole},
	{"initrd_placed_high_or_refused", test_initrd_placed_high_or_refused},
	{"malformed_headers_are_not_kernels",
	 test_malformed_headers_are_not_kernels},
	{"command_line_longer_than_the_kernel_takes",
	 test_command_line_longer_than_the_kernel_takes},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/boot/bzimage", NULL, NULL, tests);
