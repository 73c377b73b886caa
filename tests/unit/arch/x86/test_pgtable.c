// SPDX-License-Identifier: MIT
/*
 * The VMM-built identity tables: every address of the mapped range walks
 * to itself through present, writable, user entries (the guest's ring-3
 * workloads touch all of RAM), and bad arguments are refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "arch/x86/pgtable.h"
#include "tests/harness/hv_test.h"

#define RAM (1u << 20)
#define AT 0x20000u
#define PUW 0x7ULL
#define ADDR_MASK 0x000ffffffffff000ULL

/* Walk the 4-level tables at @at for @va; returns the physical address or
 * ~0 when not mapped or missing P/W/U anywhere. */
static uint64_t walk(const uint8_t *ram, uint64_t at, uint64_t va)
{
	const uint64_t *pml4 = (const uint64_t *)(ram + at);
	uint64_t e = pml4[(va >> 39) & 511];
	const uint64_t *pdpt, *pd;

	if ((e & PUW) != PUW)
		return ~0ULL;
	pdpt = (const uint64_t *)(ram + (e & ADDR_MASK));
	e = pdpt[(va >> 30) & 511];
	if ((e & PUW) != PUW)
		return ~0ULL;
	if (e & 0x80) /* 1 GiB leaf */
		return (e & 0x000fffffc0000000ULL) | (va & 0x3fffffff);
	pd = (const uint64_t *)(ram + (e & ADDR_MASK));
	e = pd[(va >> 21) & 511];
	if ((e & PUW) != PUW || !(e & 0x80))
		return ~0ULL;
	return (e & 0x000fffffffe00000ULL) | (va & 0x1fffff);
}

static void test_identity_maps_all_with_user_bits(void)
{
	uint8_t *ram = calloc(1, RAM);
	const uint64_t map = 3ULL << 30;

	CU_ASSERT_EQUAL(x86_pgtable_build_identity(ram, RAM, AT, map, false), 5);
	for (uint64_t va = 0; va < map; va += 0x1234567)
		CU_ASSERT_EQUAL(walk(ram, AT, va), va);
	CU_ASSERT_EQUAL(walk(ram, AT, map - 1), map - 1);
	CU_ASSERT_EQUAL(walk(ram, AT, map), ~0ULL);
	free(ram);
}

/* 8 GiB of RAM span 9 GiB of guest-physical space (the hole): mapped in
 * full, with 2 MiB pages or with 1 GiB pages above 4 GiB; and a 256 GiB
 * VM's tables with 1 GiB pages need one page per GiB below 4 only. */
static void test_maps_above_4gib_with_either_leaf_size(void)
{
	uint8_t *ram = calloc(1, RAM);
	const uint64_t map = 9ULL << 30;

	for (int gb = 0; gb < 2; gb++) {
		CU_ASSERT_EQUAL(x86_pgtable_build_identity(ram, RAM, AT, map,
							   gb),
				gb ? 6 : 11);
		for (uint64_t va = 0; va < map; va += 0x1234567)
			CU_ASSERT_EQUAL(walk(ram, AT, va), va);
		CU_ASSERT_EQUAL(walk(ram, AT, map - 1), map - 1);
		CU_ASSERT_EQUAL(walk(ram, AT, map), ~0ULL);
	}
	CU_ASSERT_EQUAL(x86_pgtable_size(257ULL << 30, true), 6);
	CU_ASSERT_EQUAL(x86_pgtable_size(257ULL << 30, false), 259);
	CU_ASSERT_EQUAL(x86_pgtable_size(1025ULL << 30, true), 8);
	free(ram);
}

static void test_bad_arguments_are_refused(void)
{
	uint8_t *ram = calloc(1, RAM);

	CU_ASSERT_EQUAL(x86_pgtable_build_identity(ram, RAM, AT, 4096, false),
			-EINVAL);
	CU_ASSERT_EQUAL(x86_pgtable_build_identity(ram, RAM, AT + 8, 2 << 20, false),
			-EINVAL);
	CU_ASSERT_EQUAL(
		x86_pgtable_build_identity(ram, RAM, RAM - 4096, 2 << 20, false),
		-EINVAL);
	CU_ASSERT_EQUAL(x86_pgtable_build_identity(ram, RAM, AT, 0, false), -EINVAL);
	free(ram);
}

static CU_TestInfo tests[] = {
	{"identity_maps_all_with_user_bits",
	 test_identity_maps_all_with_user_bits},
	{"maps_above_4gib_with_either_leaf_size",
	 test_maps_above_4gib_with_either_leaf_size},
	{"bad_arguments_are_refused", test_bad_arguments_are_refused},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/pgtable", NULL, NULL, tests);
