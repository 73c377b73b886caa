// SPDX-License-Identifier: MIT
/*
 * Dirty-ring collection on synthetic rings (no /dev/kvm needed): every
 * dirty entry is handed back at take and lands in its slot's bitmap only
 * at apply, collection
 * stops at the first entry the kernel has not published, the slot is
 * looked up once per run of same-slot entries (or per entry in the
 * baseline), and entries naming no slot are counted, not applied.
 */
#include <stdlib.h>
#include <string.h>

#include "hvcore/kvm/kvm_ring.h"
#include "tests/harness/hv_test.h"

#define SLOT_PAGES 4096u

static struct hv_memslots *make_slots(unsigned n)
{
	static uint8_t backing[4096] __attribute__((aligned(4096)));
	struct hv_memslots *set = NULL;

	CU_ASSERT_FATAL(hv_memslots_create(&set) == 0);
	hv_memslots_set_initially_set(set, false);
	for (unsigned i = 0; i < n; i++) {
		struct hv_memslot_desc d = {
			.id = i + 1,
			.flags = HV_MEMSLOT_F_DIRTY_LOG,
			.base_gfn = (uint64_t)i * SLOT_PAGES,
			.npages = SLOT_PAGES,
			.hva = (hva_t)(uintptr_t)backing,
		};

		CU_ASSERT_FATAL(hv_memslots_add(set, &d) == 0);
	}
	return set;
}

static void put(struct kvm_dirty_gfn *e, uint32_t slot, uint64_t off)
{
	e->slot = slot;
	e->offset = off;
	e->flags = KVM_DIRTY_GFN_F_DIRTY;
}

static void collect_into_bitmaps_and_hand_back(bool per_entry)
{
	struct hv_memslots *set = make_slots(3);
	struct kvm_dirty_gfn ring[16] = {{0}}, taken[16];
	struct hv_kvm_ring_result res = {0};
	const struct hv_memslots_snap *snap;
	uint32_t fetch = 12; /* wraps around the end */

	/* 12..15, 0..3: slot 1 x3, slot 2 x2, slot 1, bad slot, slot 3. */
	put(&ring[12], 1, 5);
	put(&ring[13], 1, 6);
	put(&ring[14], 1, 200);
	put(&ring[15], 2, 7);
	put(&ring[0], 2, SLOT_PAGES - 1);
	put(&ring[1], 1, 9);
	put(&ring[2], 99, 1);
	put(&ring[3], 3, 0);
	put(&ring[5], 3, 1); /* after a hole: not yet published */
	snap = hv_memslots_read_lock(set);
	CU_ASSERT_EQUAL(hv_kvm_ring_take(ring, 16, &fetch, taken), 8);
	/* Taken and handed back, but no bit yet: bits wait for the reset. */
	for (uint32_t id = 1; id <= 3; id++)
		CU_ASSERT_EQUAL(hv_dirty_bitmap_count(
					hv_memslots_by_id(snap, id)->dirty),
				0);
	hv_kvm_ring_apply(taken, 8, snap, per_entry, &res);
	CU_ASSERT_EQUAL(res.entries, 8);
	CU_ASSERT_EQUAL(res.bad, 1);
	/* Runs: 1 1 1 / 2 2 / 1 / 99 / 3 -> 5 lookups. */
	CU_ASSERT_EQUAL(res.lookups, per_entry ? 8 : 5);
	CU_ASSERT_EQUAL(fetch, 20);
	{
		const struct hv_memslot *s1 = hv_memslots_by_id(snap, 1);
		const struct hv_memslot *s2 = hv_memslots_by_id(snap, 2);
		const struct hv_memslot *s3 = hv_memslots_by_id(snap, 3);

		CU_ASSERT(hv_dirty_bitmap_test(s1->dirty, 5));
		CU_ASSERT(hv_dirty_bitmap_test(s1->dirty, 6));
		CU_ASSERT(hv_dirty_bitmap_test(s1->dirty, 200));
		CU_ASSERT(hv_dirty_bitmap_test(s1->dirty, 9));
		CU_ASSERT_EQUAL(hv_dirty_bitmap_count(s1->dirty), 4);
		CU_ASSERT(hv_dirty_bitmap_test(s2->dirty, 7));
		CU_ASSERT(hv_dirty_bitmap_test(s2->dirty, SLOT_PAGES - 1));
		CU_ASSERT_EQUAL(hv_dirty_bitmap_count(s2->dirty), 2);
		CU_ASSERT(hv_dirty_bitmap_test(s3->dirty, 0));
		CU_ASSERT_FALSE(hv_dirty_bitmap_test(s3->dirty, 1));
	}
	hv_memslots_read_unlock(set);
	for (uint32_t i = 12; i < 20; i++)
		CU_ASSERT_EQUAL(ring[i % 16].flags, KVM_DIRTY_GFN_F_RESET);
	CU_ASSERT_EQUAL(ring[5].flags, KVM_DIRTY_GFN_F_DIRTY);
	hv_memslots_destroy(set);
}

static void test_collect_once_per_run_lands_every_entry(void)
{
	collect_into_bitmaps_and_hand_back(false);
}

static void test_collect_per_entry_baseline_lands_every_entry(void)
{
	collect_into_bitmaps_and_hand_back(true);
}

static void test_offset_past_slot_end_is_not_applied(void)
{
	struct hv_memslots *set = make_slots(1);
	struct kvm_dirty_gfn ring[4] = {{0}}, taken[4];
	struct hv_kvm_ring_result res = {0};
	const struct hv_memslots_snap *snap;
	uint32_t fetch = 0;

	put(&ring[0], 1, SLOT_PAGES);	/* one past the end */
	put(&ring[1], 1 | 1u << 16, 3); /* another address space */
	snap = hv_memslots_read_lock(set);
	CU_ASSERT_EQUAL(hv_kvm_ring_take(ring, 4, &fetch, taken), 2);
	hv_kvm_ring_apply(taken, 2, snap, false, &res);
	CU_ASSERT_EQUAL(res.entries, 2);
	CU_ASSERT_EQUAL(res.bad, 2);
	CU_ASSERT_EQUAL(
		hv_dirty_bitmap_count(hv_memslots_by_id(snap, 1)->dirty), 0);
	hv_memslots_read_unlock(set);
	hv_memslots_destroy(set);
}

static void test_resync_finds_kernel_position_after_a_hole(void)
{
	struct kvm_dirty_gfn ring[8] = {{0}};
	uint32_t fetch = 9; /* slot 1 */

	CU_ASSERT_EQUAL(hv_kvm_ring_resync_fetch(ring, 8, &fetch), 0);
	CU_ASSERT_EQUAL(fetch, 9);
	put(&ring[4], 1, 1);
	CU_ASSERT_EQUAL(hv_kvm_ring_resync_fetch(ring, 8, &fetch), 3);
	CU_ASSERT_EQUAL(fetch, 12);
}

static CU_TestInfo tests[] = {
	{"collect_once_per_run_lands_every_entry",
	 test_collect_once_per_run_lands_every_entry},
	{"collect_per_entry_baseline_lands_every_entry",
	 test_collect_per_entry_baseline_lands_every_entry},
	{"offset_past_slot_end_is_not_applied",
	 test_offset_past_slot_end_is_not_applied},
	{"resync_finds_kernel_position_after_a_hole",
	 test_resync_finds_kernel_position_after_a_hole},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/kvm/ring", NULL, NULL, tests);
