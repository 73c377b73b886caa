// SPDX-License-Identifier: MIT
/*
 * The PVH loader on the real guest image and on broken images: entries
 * found, segments copied and bss zeroed, and nothing written to RAM when
 * the image does not validate.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/guest/ucall.h"
#include "arch/x86/pvh.h"
#include "tests/harness/hv_test.h"

#define RAM (8u << 20)

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void test_guest_image_loads_with_both_entries(void)
{
	uint8_t *ram = calloc(1, RAM);
	struct x86_pvh_image img;
	const Elf64_Ehdr *eh;
	size_t len;
	uint8_t *elf = read_file(HV_GUEST_ELF_PATH, &len);

	CU_ASSERT_FATAL(elf != NULL && ram != NULL);
	eh = (const Elf64_Ehdr *)elf;
	CU_ASSERT_EQUAL_FATAL(x86_pvh_load_buf(elf, len, ram, RAM, &img), 0);
	CU_ASSERT_EQUAL(img.entry32, eh->e_entry);
	CU_ASSERT(img.ap_entry64 > img.lowest && img.ap_entry64 < img.end);
	CU_ASSERT_EQUAL(img.lowest, 0x100000);
	/* The first loaded bytes are the notes: "Xen" note header. */
	CU_ASSERT_EQUAL(memcmp(ram + 0x100000 + 12, "Xen", 4), 0);
	CU_ASSERT_EQUAL(x86_pvh_load(HV_GUEST_ELF_PATH, ram, RAM, &img), 0);
	free(elf);
	free(ram);
}

static void test_malformed_image_writes_nothing(void)
{
	uint8_t *ram = calloc(1, RAM);
	struct x86_pvh_image img = {0};
	size_t len;
	uint8_t *elf = read_file(HV_GUEST_ELF_PATH, &len);
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;

	CU_ASSERT_FATAL(elf != NULL && ram != NULL);
	eh = (Elf64_Ehdr *)elf;
	ph = (Elf64_Phdr *)(elf + eh->e_phoff);
	/* Truncated. */
	CU_ASSERT_EQUAL(x86_pvh_load_buf(elf, 40, ram, RAM, &img), -ENOEXEC);
	/* RAM too small for the image's segments. */
	CU_ASSERT_EQUAL(x86_pvh_load_buf(elf, len, ram, 1u << 20, &img),
			-ENOEXEC);
	/* A segment whose file range runs past the end of the file. */
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			uint64_t keep = ph[i].p_filesz;

			ph[i].p_filesz = len + 1;
			CU_ASSERT_EQUAL(
				x86_pvh_load_buf(elf, len, ram, RAM, &img),
				-ENOEXEC);
			ph[i].p_filesz = keep;
			break;
		}
	/* Wrong machine. */
	eh->e_machine = EM_AARCH64;
	CU_ASSERT_EQUAL(x86_pvh_load_buf(elf, len, ram, RAM, &img), -ENOEXEC);
	CU_ASSERT(all_zero(ram, RAM));
	CU_ASSERT_EQUAL(x86_pvh_load("/nonexistent/guest.elf", ram, RAM, &img),
			-ENOENT);
	free(elf);
	free(ram);
}

static void test_start_info_fits_and_is_refused_past_ram(void)
{
	uint8_t *ram = calloc(1, RAM);
	uint32_t magic;

	CU_ASSERT_EQUAL(
		x86_pvh_write_start_info(ram, RAM, HV_X86_START_INFO_GPA), 0);
	memcpy(&magic, ram + HV_X86_START_INFO_GPA, 4);
	CU_ASSERT_EQUAL(magic, 0x336ec578u);
	CU_ASSERT_EQUAL(x86_pvh_write_start_info(ram, RAM, RAM - 8), -EINVAL);
	free(ram);
}

static CU_TestInfo tests[] = {
	{"guest_image_loads_with_both_entries",
	 test_guest_image_loads_with_both_entries},
	{"malformed_image_writes_nothing", test_malformed_image_writes_nothing},
	{"start_info_fits_and_is_refused_past_ram",
	 test_start_info_fits_and_is_refused_past_ram},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/pvh", NULL, NULL, tests);
