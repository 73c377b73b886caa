// SPDX-License-Identifier: MIT
/* The memory map's page numbering (migrated/mig/memmap.c). */
#include "tests/harness/hv_test.h"
#include "migrated/mig/memmap.h"

#include <stdint.h>
#include <stdlib.h>

/*
 * Pages are numbered back to back in ascending slot id order, whatever
 * order the slots were given in and wherever their gfns lie; a gfn
 * outside its slot, on either side, or an unknown slot has no index.
 */
static void test_index_numbers_pages_in_slot_id_order(void)
{
	static uint8_t mem[3][4 * 4096] __attribute__((aligned(4096)));
	struct mig_memmap_slot s[3] = {
		{ 7, 0x100, 4, mem[0] },  /* third by id */
		{ 2, 0x9000, 2, mem[1] }, /* first */
		{ 5, 0x10, 3, mem[2] },	  /* second */
	};
	struct mig_memmap *map;

	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(s, 3, &map), 0);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 2, 0x9000), 0);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 2, 0x9001), 1);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 5, 0x10), 2);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 5, 0x12), 4);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 7, 0x100), 5);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 7, 0x103), 8);
	/* Outside the slot, below and above; unknown slots. */
	CU_ASSERT_EQUAL(mig_memmap_index(map, 2, 0x8fff), UINT64_MAX);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 2, 0x9002), UINT64_MAX);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 7, 0x104), UINT64_MAX);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 3, 0x100), UINT64_MAX);
	CU_ASSERT_EQUAL(mig_memmap_index(map, 8, 0), UINT64_MAX);
	mig_memmap_destroy(map);
}

static CU_TestInfo tests[] = {
	{ "index_numbers_pages_in_slot_id_order",
	  test_index_numbers_pages_in_slot_id_order },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/memmap", NULL, NULL, tests);
