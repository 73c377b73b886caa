// SPDX-License-Identifier: MIT
/*
 * Linux's PVH entry (arch/x86/boot/pvh_linux.h), on the project's own
 * PVH guest image standing in for a vmlinux: the start info a kernel
 * reads at %ebx (magic, version, command line, the initrd as module 0,
 * the e820 map of the layout as its memory map), the segments and the
 * initrd in RAM, and the refusals.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/boot/pvh_linux.h"
#include "arch/x86/pvh.h"
#include "tests/harness/hv_test.h"

#define RAM (64ULL << 20)

static uint8_t *read_guest(size_t *len)
{
	FILE *f = fopen(HV_GUEST_ELF_PATH, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static void test_start_info_of_a_pvh_image(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM), *ram2, initrd[8192];
	struct x86_hvm_start_info si;
	struct x86_hvm_modlist_entry mod;
	struct x86_hvm_memmap_entry mm;
	struct x86_e820 map[16];
	struct x86_pvh_linux_entry e;
	struct x86_pvh_image img;
	size_t len = 0;
	uint8_t *k = read_guest(&len);
	struct x86_linux_boot in = {k, len, initrd, sizeof(initrd),
				    "console=ttyS0 hv.size=8"};
	int n;

	CU_ASSERT_FATAL(k != NULL && ram != NULL);
	CU_ASSERT(x86_is_elf(k, len));
	memset(initrd, 0xa5, sizeof(initrd));
	CU_ASSERT_EQUAL_FATAL(x86_pvh_linux_load(ram, &l, &in, &e), 0);
	/* The same entry and segments as the PVH loader finds. */
	ram2 = calloc(1, RAM);
	CU_ASSERT_FATAL(ram2 != NULL);
	CU_ASSERT_EQUAL_FATAL(x86_pvh_load_buf(k, len, ram2, RAM, &img), 0);
	free(ram2);
	CU_ASSERT_EQUAL(e.entry32, img.entry32);
	CU_ASSERT_EQUAL(e.kernel_end, img.end);
	CU_ASSERT_EQUAL(e.start_info, X86_BOOT_ZERO_PAGE_GPA);
	CU_ASSERT_EQUAL(memcmp(ram + 0x100000 + 12, "Xen", 4), 0);

	memcpy(&si, ram + e.start_info, sizeof(si));
	CU_ASSERT_EQUAL(si.magic, X86_HVM_START_MAGIC);
	CU_ASSERT_EQUAL(si.version, 1);
	CU_ASSERT_EQUAL(si.cmdline_paddr, X86_BOOT_CMDLINE_GPA);
	CU_ASSERT_STRING_EQUAL((char *)ram + si.cmdline_paddr, in.cmdline);
	CU_ASSERT_EQUAL(si.rsdp_paddr, 0);

	/* Module 0 is the initrd, page-aligned, at the top of RAM. */
	CU_ASSERT_EQUAL_FATAL(si.nr_modules, 1);
	memcpy(&mod, ram + si.modlist_paddr, sizeof(mod));
	CU_ASSERT_EQUAL(mod.paddr, e.initrd_gpa);
	CU_ASSERT_EQUAL(mod.size, sizeof(initrd));
	CU_ASSERT_EQUAL(mod.paddr % 4096, 0);
	CU_ASSERT_EQUAL(mod.paddr + 2 * 4096, RAM);
	CU_ASSERT(mod.paddr >= e.kernel_end);
	CU_ASSERT_EQUAL(memcmp(ram + mod.paddr, initrd, sizeof(initrd)), 0);

	/* The memory map is the e820 map the bzImage path writes. */
	n = x86_e820_build(&l, map, 16);
	CU_ASSERT_FATAL(n > 2);
	CU_ASSERT_EQUAL_FATAL(si.memmap_entries, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		memcpy(&mm, ram + si.memmap_paddr + i * sizeof(mm), sizeof(mm));
		CU_ASSERT_EQUAL(mm.addr, map[i].addr);
		CU_ASSERT_EQUAL(mm.size, map[i].size);
		CU_ASSERT_EQUAL(mm.type, map[i].type);
	}
	/* The tables stay within the zero page's 4 KiB. */
	CU_ASSERT(si.memmap_paddr + n * sizeof(mm) <=
		  X86_BOOT_ZERO_PAGE_GPA + 4096);
	free(k);
	free(ram);
}

static void test_no_initrd_no_module(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM);
	struct x86_hvm_start_info si;
	struct x86_pvh_linux_entry e;
	size_t len = 0;
	uint8_t *k = read_guest(&len);
	struct x86_linux_boot in = {k, len, NULL, 0, ""};

	CU_ASSERT_FATAL(k != NULL && ram != NULL);
	CU_ASSERT_EQUAL_FATAL(x86_pvh_linux_load(ram, &l, &in, &e), 0);
	memcpy(&si, ram + e.start_info, sizeof(si));
	CU_ASSERT_EQUAL(si.nr_modules, 0);
	CU_ASSERT_EQUAL(si.modlist_paddr, 0);
	CU_ASSERT_EQUAL(e.initrd_gpa, 0);
	CU_ASSERT_EQUAL(ram[si.cmdline_paddr], 0);
	free(k);
	free(ram);
}

static void test_refusals(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(RAM);
	uint8_t *ram = calloc(1, RAM), *big = malloc(RAM);
	struct x86_pvh_linux_entry e;
	size_t len = 0;
	uint8_t *k = read_guest(&len);
	char *line = malloc(X86_BOOT_CMDLINE_MAX + 1);
	struct x86_linux_boot in = {k, len, NULL, 0, line};
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;

	CU_ASSERT_FATAL(k && ram && big && line);
	/* A command line that does not fit its 64 KiB. */
	memset(line, 'a', X86_BOOT_CMDLINE_MAX);
	line[X86_BOOT_CMDLINE_MAX] = 0;
	CU_ASSERT_EQUAL(x86_pvh_linux_load(ram, &l, &in, &e), -E2BIG);
	line[X86_BOOT_CMDLINE_MAX - 1] = 0;
	CU_ASSERT_EQUAL(x86_pvh_linux_load(ram, &l, &in, &e), 0);
	/* An initrd as big as RAM. */
	in.cmdline = "";
	in.initrd = big;
	in.initrd_bytes = RAM;
	CU_ASSERT_EQUAL(x86_pvh_linux_load(ram, &l, &in, &e), -ENOSPC);
	in.initrd = NULL;
	in.initrd_bytes = 0;
	/* Not an ELF (a bzImage's first bytes are not "\x7fELF"). */
	CU_ASSERT_FALSE(x86_is_elf("MZ\0\0", 4));
	CU_ASSERT_FALSE(x86_is_elf(k, 3));
	/* A segment below 1 MiB would overwrite our low tables. */
	eh = (Elf64_Ehdr *)k;
	ph = (Elf64_Phdr *)(k + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			ph[i].p_paddr = 0x8000;
			break;
		}
	CU_ASSERT_EQUAL(x86_pvh_linux_load(ram, &l, &in, &e), -ENOEXEC);
	/* No PVH entry note: not a PVH kernel. */
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE)
			ph[i].p_type = PT_NULL;
	CU_ASSERT_EQUAL(x86_pvh_linux_load(ram, &l, &in, &e), -ENOEXEC);
	free(line);
	free(big);
	free(k);
	free(ram);
}

static CU_TestInfo tests[] = {
	{"start_info_of_a_pvh_image", test_start_info_of_a_pvh_image},
	{"no_initrd_no_module", test_no_initrd_no_module},
	{"refusals", test_refusals},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/boot/pvh_linux", NULL, NULL, tests);
