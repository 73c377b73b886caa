// SPDX-License-Identifier: MIT
/*
 * Guest RAM above 3 GiB (hvcore/vm.h, hvcore/ram_layout.h): RAM offsets
 * [0, 3 GiB) at gpa 0, the rest from 4 GiB, the MMIO hole between. Pure
 * mapping rules first, then a soft-accelerator VM of 8 GiB (a sparse
 * memfd: only what is written costs memory) whose vCPU's region spans
 * the hole, checked page by page by the stamp oracle.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/ram_layout.h"
#include "hvcore/vm.h"
#include "hvcore/wl_verify.h"
#include "hvcore/workload.h"

#define GIB (1ULL << 30)
#define PG HV_PAGE_SIZE

static void test_gpa_and_ram_offset_map_around_the_hole(void)
{
	struct hv_ram_layout l = hv_ram_layout_std(8 * GIB);
	struct hv_ram_layout small = hv_ram_layout_std(2 * GIB);

	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 0), 0);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 3 * GIB - PG), 3 * GIB - PG);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 3 * GIB), HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 4 * GIB - 1), HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 4 * GIB), 3 * GIB);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 9 * GIB - 1), 8 * GIB - 1);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&l, 9 * GIB), HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_off_to_gpa(&l, 3 * GIB - PG), 3 * GIB - PG);
	CU_ASSERT_EQUAL(hv_ram_off_to_gpa(&l, 3 * GIB), 4 * GIB);
	CU_ASSERT_EQUAL(hv_ram_top_gpa(&l), 9 * GIB);
	CU_ASSERT_EQUAL(hv_ram_top_gpa(&small), 2 * GIB);
	CU_ASSERT_EQUAL(hv_ram_gpa_to_off(&small, 2 * GIB), HV_RAM_BAD);
	/* Ranges: one piece of RAM or nothing. */
	CU_ASSERT_EQUAL(hv_ram_range_to_off(&l, 3 * GIB - PG, PG),
			3 * GIB - PG);
	CU_ASSERT_EQUAL(hv_ram_range_to_off(&l, 3 * GIB - PG, 2 * PG),
			HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_range_to_off(&l, 3 * GIB - PG, GIB + 2 * PG),
			HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_range_to_off(&l, 9 * GIB - PG, 2 * PG),
			HV_RAM_BAD);
	CU_ASSERT_EQUAL(hv_ram_range_to_off(&l, 0, UINT64_MAX), HV_RAM_BAD);
}

static void test_slots_are_cut_at_the_hole(void)
{
	gfn_t g;
	uint64_t n;

	/* One slot per range without slot_bytes. */
	CU_ASSERT_EQUAL(hv_vm_slot_geometry(2 * GIB, 0, 0, &g, &n), 1);
	CU_ASSERT_EQUAL(n, 2 * GIB / PG);
	CU_ASSERT_EQUAL(hv_vm_slot_geometry(3 * GIB, 0, 0, NULL, NULL), 1);
	CU_ASSERT_EQUAL(hv_vm_slot_geometry(8 * GIB, 0, 1, &g, &n), 2);
	CU_ASSERT_EQUAL(g, 4 * GIB / PG);
	CU_ASSERT_EQUAL(n, 5 * GIB / PG);
	/* 2 GiB slots: 2 + 1 below the hole (the last shorter), 3 above. */
	CU_ASSERT_EQUAL(hv_vm_slot_geometry(8 * GIB, 2 * GIB, 1, &g, &n), 5);
	CU_ASSERT_EQUAL(g, 2 * GIB / PG);
	CU_ASSERT_EQUAL(n, GIB / PG);
	hv_vm_slot_geometry(8 * GIB, 2 * GIB, 2, &g, &n);
	CU_ASSERT_EQUAL(g, 4 * GIB / PG);
	CU_ASSERT_EQUAL(n, 2 * GIB / PG);
	hv_vm_slot_geometry(8 * GIB, 2 * GIB, 4, &g, &n);
	CU_ASSERT_EQUAL(g, 8 * GIB / PG);
	CU_ASSERT_EQUAL(n, GIB / PG);
	/* No slot ends inside the hole or crosses it, at any size. */
	for (uint64_t sb = 2ULL << 20; sb <= 8 * GIB; sb *= 3) {
		unsigned cnt = hv_vm_slot_geometry(9 * GIB, sb, 0, NULL, NULL);

		for (unsigned i = 0; i < cnt; i++) {
			uint64_t a, e;

			hv_vm_slot_geometry(9 * GIB, sb, i, &g, &n);
			a = g * PG;
			e = a + n * PG;
			CU_ASSERT(n > 0);
			CU_ASSERT(e <= 3 * GIB || a >= 4 * GIB);
		}
	}
}

/* The default regions split the RAM offsets above HV_VM_WL_BASE. */
static void test_default_regions_cover_ram_above_the_hole(void)
{
	struct hv_vm_cfg cfg;
	struct hv_ram_layout l = hv_ram_layout_std(8 * GIB);
	uint64_t end;

	hv_vm_cfg_init(&cfg, HV_ACCEL_SOFT, 8 * GIB, 2);
	CU_ASSERT_EQUAL(hv_wl_region_off(&l, &cfg.wl[0]), HV_VM_WL_BASE);
	end = hv_wl_region_off(&l, &cfg.wl[1]) +
	      cfg.wl[1].region_pages * PG;
	CU_ASSERT(end <= 8 * GIB && end > 8 * GIB - 2 * PG);
	CU_ASSERT(cfg.wl[1].region_gpa >= 4 * GIB);
}

static void make_cfg(struct hv_vm_cfg *cfg, uint64_t mem)
{
	hv_vm_cfg_init(cfg, HV_ACCEL_SOFT, mem, 1);
	/* 64 pages below the hole, 64 from 4 GiB. */
	cfg->wl[0].region_gpa = 3 * GIB - 64 * PG;
	cfg->wl[0].region_pages = 128;
	cfg->wl[0].max_writes = 300;
}

static void test_soft_vm_above_4g_maps_and_stamps_across_the_hole(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	struct hv_wl_verify r;
	uint32_t id;
	gfn_t base;
	uint64_t np, pg = 0;
	uint8_t *ram;
	const struct hv_wl_stamp *s;

	make_cfg(&cfg, 8 * GIB);
	CU_ASSERT_EQUAL_FATAL(hv_vm_create(&cfg, &vm), 0);
	CU_ASSERT_EQUAL(hv_vm_slot_count(vm), 2);
	CU_ASSERT_EQUAL(hv_vm_slot_info(vm, 1, &id, &base, &np), 0);
	CU_ASSERT_EQUAL(base, 4 * GIB / PG);
	CU_ASSERT_EQUAL(np, 5 * GIB / PG);
	ram = hv_vm_ram(vm);
	CU_ASSERT_PTR_EQUAL(hv_vm_gpa_to_hva(vm, 4 * GIB, PG), ram + 3 * GIB);
	CU_ASSERT_PTR_NULL(hv_vm_gpa_to_hva(vm, 3 * GIB - PG, 2 * PG));
	CU_ASSERT_PTR_NULL(hv_vm_gpa_to_hva(vm, 3 * GIB, PG));
	CU_ASSERT_PTR_NULL(hv_vm_gpa_to_hva(vm, 9 * GIB, PG));
	CU_ASSERT_EQUAL(hv_vm_write_guest(vm, 3 * GIB - 8, &pg, 16), -EFAULT);
	CU_ASSERT_EQUAL(hv_vm_read_guest(vm, 9 * GIB - 8, &pg, 8), 0);

	CU_ASSERT_EQUAL_FATAL(hv_vm_start(vm), 0);
	CU_ASSERT_EQUAL(hv_vm_wait(vm, 20000), 0);
	/* Pages 64.. of the region are at 4 GiB, RAM offset 3 GiB. */
	s = (const struct hv_wl_stamp *)(ram + 3 * GIB);
	CU_ASSERT_EQUAL(s->magic, HV_WL_STAMP_MAGIC);
	CU_ASSERT_EQUAL((s->seq - 1) % 128, 64);
	s = hv_vm_gpa_to_hva(vm, 3 * GIB - PG, PG);
	CU_ASSERT_EQUAL((s->seq - 1) % 128, 63);
	CU_ASSERT_EQUAL(hv_wl_verify_fd(ram, 8 * GIB, hv_vm_mem_fd(vm), &r),
			0);
	CU_ASSERT(hv_wl_verify_clean(&r));
	CU_ASSERT_EQUAL(r.pages, 128);
	CU_ASSERT_EQUAL(r.written, 128);
	/* A page lost above the hole is found, and named by its gpa. */
	memset(ram + 3 * GIB + 5 * PG, 0, PG);
	CU_ASSERT_EQUAL(hv_wl_verify_fd(ram, 8 * GIB, hv_vm_mem_fd(vm), &r),
			0);
	CU_ASSERT_EQUAL(r.bad, 1);
	CU_ASSERT_EQUAL(r.bad_gfns[0], (4 * GIB + 5 * PG) / PG);
	hv_vm_destroy(vm);
}

static void test_cfg_refuses_regions_in_the_hole_or_past_ram(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	make_cfg(&cfg, 8 * GIB);
	cfg.wl[0].region_gpa = 3 * GIB + PG;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	make_cfg(&cfg, 8 * GIB);
	cfg.wl[0].region_gpa = 9 * GIB - 64 * PG;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	make_cfg(&cfg, HV_VM_MAX_MEM + (2ULL << 20));
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	/* More slots than a memslot set holds. */
	make_cfg(&cfg, 128 * GIB);
	cfg.slot_bytes = 2ULL << 20;
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	CU_ASSERT_PTR_NULL(vm);
}

static CU_TestInfo tests[] = {
	{ "gpa_and_ram_offset_map_around_the_hole",
	  test_gpa_and_ram_offset_map_around_the_hole },
	{ "slots_are_cut_at_the_hole", test_slots_are_cut_at_the_hole },
	{ "default_regions_cover_ram_above_the_hole",
	  test_default_regions_cover_ram_above_the_hole },
	{ "soft_vm_above_4g_maps_and_stamps_across_the_hole",
	  test_soft_vm_above_4g_maps_and_stamps_across_the_hole },
	{ "cfg_refuses_regions_in_the_hole_or_past_ram",
	  test_cfg_refuses_regions_in_the_hole_or_past_ram },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/vm/layout", NULL, NULL, tests);
