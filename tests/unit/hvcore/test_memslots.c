// SPDX-License-Identifier: MIT
/*
 * hv_memslots. Slots point at fake, page-aligned host addresses: the set
 * never touches guest memory, so no memory is mapped for them.
 */
#include "hvcore/memslots.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/hvcore/memslots_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t id_at_gfn(struct hv_memslots *set, gfn_t gfn)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	const struct hv_memslot *slot = hv_memslots_by_gfn(s, gfn);
	uint32_t id = slot ? slot->id : UINT32_MAX;

	hv_memslots_read_unlock(set);
	return id;
}

/* ---- refusals ------------------------------------------------------- */

static void test_add_refuses_invalid_descriptions(void)
{
	struct hv_memslots *set = set_new();
	struct hv_memslot_desc d = { .id = 1, .npages = 1, .hva = HVA0 };
	unsigned count;

	CU_ASSERT_EQUAL(add(set, 1, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(add(set, 1, UINT64_MAX - 1, 4, 0), -EINVAL);
	CU_ASSERT_EQUAL(add(set, 1, HV_MEMSLOT_MAX_GFN - 1, 2, 0), -EINVAL);
	CU_ASSERT_EQUAL(add(set, 1, 0, HV_MEMSLOT_MAX_GFN + 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(add(set, 1, 0, 1, 1u << 2), -EINVAL);
	CU_ASSERT_EQUAL(add(set, 1, 0, 1, 0x80000000u), -EINVAL);
	CU_ASSERT_EQUAL(add(set, HV_MEMSLOT_ID_LIMIT, 0, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(add(set, UINT32_MAX, 0, 1, 0), -EINVAL);
	d.hva = HVA0 + 0x800;
	CU_ASSERT_EQUAL(hv_memslots_add(set, &d), -EINVAL);
	d.hva = UINT64_MAX & HV_PAGE_MASK;
	d.npages = 2;
	CU_ASSERT_EQUAL(hv_memslots_add(set, &d), -EINVAL);
	CU_ASSERT_EQUAL(gen_of(set, &count), 0);
	CU_ASSERT_EQUAL(count, 0);

	/* The edges themselves are accepted. */
	CU_ASSERT_EQUAL(add(set, HV_MEMSLOT_ID_LIMIT - 1, 0, 1, 0), 0);
	CU_ASSERT_EQUAL(add(set, 2, HV_MEMSLOT_MAX_GFN - 1, 1, 0), 0);
	CU_ASSERT_EQUAL(add(set, 3, 16, 1, HV_MEMSLOT_F_ALL), 0);
	CU_ASSERT_EQUAL(gen_of(set, &count), 3);
	CU_ASSERT_EQUAL(count, 3);
	hv_memslots_destroy(set);
}

static void test_add_refuses_duplicate_id(void)
{
	struct hv_memslots *set = set_new();

	CU_ASSERT_EQUAL(add(set, 7, 0x100, 4, 0), 0);
	CU_ASSERT_EQUAL(add(set, 7, 0x900, 4, 0), -EEXIST);
	CU_ASSERT_EQUAL(gen_of(set, NULL), 1);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x900), UINT32_MAX);
	hv_memslots_destroy(set);
}

static void test_add_refuses_overlap_in_every_geometry(void)
{
	static const struct {
		gfn_t base;
		uint64_t npages;
		int ret;
	} cases[] = {
		{ 100, 10, -EEXIST },  /* identical */
		{ 95, 6, -EEXIST },    /* over the first page */
		{ 109, 5, -EEXIST },   /* over the last page */
		{ 102, 3, -EEXIST },   /* inside */
		{ 90, 100, -EEXIST },  /* around both neighbours */
		{ 105, 20, -EEXIST },  /* across the gap into the next */
		{ 115, 6, -EEXIST },   /* from the gap into the next */
		{ 0, 1ULL << 30, -EEXIST }, /* around everything */
		{ 95, 5, 0 },	       /* touching the first page */
		{ 110, 10, 0 },	       /* filling the gap exactly */
	};
	struct hv_memslots *set = set_new();

	CU_ASSERT_EQUAL(add(set, 1, 100, 10, 0), 0); /* [100, 110) */
	CU_ASSERT_EQUAL(add(set, 2, 120, 10, 0), 0); /* [120, 130) */
	for (unsigned i = 0; i < HV_ARRAY_SIZE(cases); i++) {
		int ret = add(set, 10 + i, cases[i].base, cases[i].npages, 0);

		if (ret != cases[i].ret)
			fprintf(stderr, "case %u: %d\n", i, ret);
		CU_ASSERT_EQUAL(ret, cases[i].ret);
	}
	CU_ASSERT_EQUAL(id_at_gfn(set, 95), 18);
	CU_ASSERT_EQUAL(id_at_gfn(set, 119), 19);
	CU_ASSERT_EQUAL(id_at_gfn(set, 120), 2);
	hv_memslots_destroy(set);
}

static void test_add_refuses_slot_beyond_limit_with_enospc(void)
{
	struct hv_memslots *set = set_new();
	unsigned count;

	for (uint32_t i = 0; i < HV_MEMSLOT_MAX; i++)
		if (add(set, i, 2 * (gfn_t)i, 1, 0)) {
			CU_FAIL_FATAL("add below the limit failed");
		}
	CU_ASSERT_EQUAL(add(set, HV_MEMSLOT_MAX, 2 * (gfn_t)HV_MEMSLOT_MAX, 1,
			    0),
			-ENOSPC);
	CU_ASSERT_EQUAL(gen_of(set, &count), HV_MEMSLOT_MAX);
	CU_ASSERT_EQUAL(count, HV_MEMSLOT_MAX);
	/* Every slot is still found, by id and by gfn. */
	{
		const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
		unsigned bad = 0;

		for (uint32_t i = 0; i < HV_MEMSLOT_MAX; i++) {
			const struct hv_memslot *a = hv_memslots_by_id(s, i);

			bad += !a || a->id != i ||
			       hv_memslots_by_gfn(s, 2 * (gfn_t)i) != a ||
			       hv_memslots_by_gfn(s, 2 * (gfn_t)i + 1);
		}
		hv_memslots_read_unlock(set);
		CU_ASSERT_EQUAL(bad, 0);
	}
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 5), 0);
	CU_ASSERT_EQUAL(add(set, HV_MEMSLOT_MAX, 2 * (gfn_t)HV_MEMSLOT_MAX, 1,
			    0),
			0);
	hv_memslots_destroy(set);
}

static void test_updates_refuse_unknown_ids_and_bad_arguments(void)
{
	struct hv_memslots *set = set_new();
	const struct hv_memslots_snap *s;
	const struct hv_memslot *slot;

	CU_ASSERT_EQUAL(add(set, 1, 100, 10, 0), 0);
	CU_ASSERT_EQUAL(add(set, 2, 200, 10, 0), 0);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 3), -ENOENT);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 3, 0), -ENOENT);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 3, 0), -ENOENT);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, HV_MEMSLOT_ID_LIMIT), -EINVAL);
	CU_ASSERT_EQUAL(hv_memslots_move(set, HV_MEMSLOT_ID_LIMIT, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, HV_MEMSLOT_ID_LIMIT, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, 1u << 5), -EINVAL);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, 195), -EEXIST);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, 209), -EEXIST);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, HV_MEMSLOT_MAX_GFN - 5),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, UINT64_MAX - 3), -EINVAL);
	/* No-op updates succeed without a new generation. */
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, 100), 0);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, 0), 0);
	CU_ASSERT_EQUAL(gen_of(set, NULL), 2);

	s = hv_memslots_read_lock(set);
	slot = hv_memslots_by_id(s, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(slot);
	CU_ASSERT_EQUAL(slot->base_gfn, 100);
	CU_ASSERT_EQUAL(slot->npages, 10);
	CU_ASSERT_EQUAL(slot->flags, 0);
	hv_memslots_read_unlock(set);
	/* A move may overlap its own old range. */
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, 105), 0);
	CU_ASSERT_EQUAL(id_at_gfn(set, 114), 1);
	CU_ASSERT_EQUAL(id_at_gfn(set, 104), UINT32_MAX);
	hv_memslots_destroy(set);
}

/* ---- lookups -------------------------------------------------------- */

static void test_lookup_by_gfn_and_id_at_boundaries(void)
{
	static const struct {
		gfn_t gfn;
		uint32_t id;
	} probes[] = {
		{ 0, UINT32_MAX },	     { 0xff, UINT32_MAX },
		{ 0x100, 1 },		     { 0x10f, 1 },
		{ 0x110, UINT32_MAX },	     { 0x1ff, UINT32_MAX },
		{ 0x200, 2 },		     { 0x201, 3 },
		{ 0x204, 3 },		     { 0x205, UINT32_MAX },
		{ (1ULL << 39) - 1, UINT32_MAX }, { 1ULL << 39, 4 },
		{ (1ULL << 39) + 7, 4 },     { (1ULL << 39) + 8, UINT32_MAX },
		{ UINT64_MAX, UINT32_MAX },
	};
	struct hv_memslots *set = set_new();
	const struct hv_memslots_snap *s;
	const struct hv_memslot *slot;

	/* Added out of order; 2 and 3 are adjacent. */
	CU_ASSERT_EQUAL(add(set, 4, 1ULL << 39, 8, 0), 0);
	CU_ASSERT_EQUAL(add(set, 2, 0x200, 1, 0), 0);
	CU_ASSERT_EQUAL(add(set, 1, 0x100, 16, 0), 0);
	CU_ASSERT_EQUAL(add(set, 3, 0x201, 4, 0), 0);

	s = hv_memslots_read_lock(set);
	/* Twice, forwards and backwards: the last-hit hint must not lie. */
	for (int pass = 0; pass < 4; pass++) {
		for (unsigned k = 0; k < HV_ARRAY_SIZE(probes); k++) {
			unsigned i = pass & 1 ? HV_ARRAY_SIZE(probes) - 1 - k
					      : k;

			slot = hv_memslots_by_gfn(s, probes[i].gfn);
			if (probes[i].id == UINT32_MAX) {
				CU_ASSERT_PTR_NULL(slot);
			} else {
				CU_ASSERT(slot && slot->id == probes[i].id);
			}
		}
	}
	for (uint32_t id = 1; id <= 4; id++) {
		slot = hv_memslots_by_id(s, id);
		CU_ASSERT(slot && slot->id == id);
	}
	CU_ASSERT_PTR_NULL(hv_memslots_by_id(s, 0));
	CU_ASSERT_PTR_NULL(hv_memslots_by_id(s, 5));
	CU_ASSERT_PTR_NULL(hv_memslots_by_id(s, HV_MEMSLOT_ID_LIMIT - 1));
	slot = hv_memslots_by_id(s, 1);
	CU_ASSERT_EQUAL((uintptr_t)hv_memslot_gfn_to_hva(slot, 0x10f),
			HVA0 + (1ULL << 24) + 0xf * HV_PAGE_SIZE);
	hv_memslots_read_unlock(set);
	hv_memslots_destroy(set);
}

static void test_lookup_follows_move_and_delete(void)
{
	struct hv_memslots *set = set_new();
	const struct hv_memslots_snap *s;
	const struct hv_memslot *slot;

	CU_ASSERT_EQUAL(add(set, 1, 0x100, 16, 0), 0);
	CU_ASSERT_EQUAL(add(set, 2, 0x200, 1, 0), 0);
	CU_ASSERT_EQUAL(add(set, 3, 0x201, 4, 0), 0);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x200), 2);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 2, 0x50), 0);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x200), UINT32_MAX);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x50), 2);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x201), 3);
	s = hv_memslots_read_lock(set);
	CU_ASSERT_EQUAL(hv_memslots_count(s), 3);
	CU_ASSERT_EQUAL(hv_memslots_at(s, 0)->id, 2);
	slot = hv_memslots_by_id(s, 2);
	CU_ASSERT(slot && slot->base_gfn == 0x50 && slot->npages == 1 &&
		  slot->hva == HVA0 + (2ULL << 24));
	hv_memslots_read_unlock(set);

	CU_ASSERT_EQUAL(hv_memslots_delete(set, 3), 0);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x201), UINT32_MAX);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 3), -ENOENT);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 1), 0);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 2), 0);
	s = hv_memslots_read_lock(set);
	CU_ASSERT_EQUAL(hv_memslots_count(s), 0);
	CU_ASSERT_PTR_NULL(hv_memslots_by_gfn(s, 0x50));
	CU_ASSERT_PTR_NULL(hv_memslots_by_gfn(s, 0));
	CU_ASSERT_PTR_NULL(hv_memslots_by_id(s, 2));
	CU_ASSERT_PTR_NULL(hv_memslots_at(s, 0));
	hv_memslots_read_unlock(set);
	/* The range is free again. */
	CU_ASSERT_EQUAL(add(set, 9, 0x200, 8, 0), 0);
	CU_ASSERT_EQUAL(id_at_gfn(set, 0x207), 9);
	hv_memslots_destroy(set);
}

static void test_iteration_is_in_ascending_gfn_order(void)
{
	struct hv_memslots *set = set_new();
	const struct hv_memslots_snap *s;
	unsigned n = 0;

	for (uint32_t i = 0; i < 64; i++) {
		/* A permutation of 0..63, each slot 3 pages with a gap. */
		uint32_t k = (i * 37) % 64;

		CU_ASSERT_EQUAL(add(set, 100 + i, 4 * (gfn_t)k, 3, 0), 0);
	}
	s = hv_memslots_read_lock(set);
	CU_ASSERT_EQUAL(hv_memslots_count(s), 64);
	for (unsigned i = 0; i < hv_memslots_count(s); i++) {
		const struct hv_memslot *slot = hv_memslots_at(s, i);

		n += slot->base_gfn == 4 * (gfn_t)i;
	}
	CU_ASSERT_EQUAL(n, 64);
	CU_ASSERT_PTR_NULL(hv_memslots_at(s, 64));
	hv_memslots_read_unlock(set);
	hv_memslots_destroy(set);
}

static void test_crowded_bucket_is_searched_correctly(void)
{
	struct hv_memslots *set = set_new();
	const struct hv_memslots_snap *s;
	unsigned bad = 0;

	/* 200 one-page slots packed low and one far away: the first bucket
	 * covers all 200, so lookups bisect inside it. */
	CU_ASSERT_EQUAL(add(set, 1000, 1ULL << 38, 1, 0), 0);
	for (uint32_t i = 0; i < 200; i++)
		CU_ASSERT_EQUAL(add(set, i, 3 * (gfn_t)i, 2, 0), 0);
	s = hv_memslots_read_lock(set);
	for (gfn_t g = 0; g < 3 * 200 + 5; g++) {
		const struct hv_memslot *slot = hv_memslots_by_gfn(s, g);

		if (g % 3 == 2 || g >= 600)
			bad += slot != NULL;
		else
			bad += !slot || slot->id != g / 3;
	}
	bad += !hv_memslots_by_gfn(s, 1ULL << 38);
	bad += hv_memslots_by_gfn(s, (1ULL << 38) - 1) != NULL;
	hv_memslots_read_unlock(set);
	CU_ASSERT_EQUAL(bad, 0);
	hv_memslots_destroy(set);
}

/*
 * Differential test: random adds, deletes, moves and flag changes over a
 * mixed layout (small and large slots, dense areas and far outliers), each
 * followed by a full comparison with a plain array model.
 */
#define MODEL_IDS 256

struct model_slot {
	bool present;
	gfn_t base;
	uint64_t npages;
	uint32_t flags;
};

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static bool model_overlaps(const struct model_slot *m, uint32_t skip,
			   gfn_t base, uint64_t npages)
{
	for (uint32_t i = 0; i < MODEL_IDS; i++)
		if (i != skip && m[i].present &&
		    base < m[i].base + m[i].npages &&
		    m[i].base < base + npages)
			return true;
	return false;
}

static int model_find(const struct model_slot *m, gfn_t gfn)
{
	for (int i = 0; i < MODEL_IDS; i++)
		if (m[i].present && gfn - m[i].base < m[i].npages)
			return i;
	return -1;
}

static gfn_t random_base(uint64_t *rng)
{
	uint64_t r = rng_next(rng);

	switch (r % 8) {
	case 0:
		return (1ULL << 36) + (r >> 8) % (1ULL << 30); /* far */
	case 1:
		return (r >> 8) % (1ULL << 24);
	default:
		return (r >> 8) % 8192; /* dense */
	}
}

static int id_or_neg(const struct hv_memslot *slot)
{
	return slot ? (int)slot->id : -1;
}

static unsigned model_compare(struct hv_memslots *set,
			      const struct model_slot *m, uint64_t *rng)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	unsigned bad = 0, n = 0;
	gfn_t prev_end = 0;

	for (uint32_t i = 0; i < MODEL_IDS; i++) {
		const struct hv_memslot *slot = hv_memslots_by_id(s, i);

		if (!m[i].present) {
			bad += slot != NULL;
			continue;
		}
		n++;
		bad += !slot || slot->base_gfn != m[i].base ||
		       slot->npages != m[i].npages ||
		       slot->flags != m[i].flags;
		if (!slot)
			continue;
		bad += hv_memslots_by_gfn(s, m[i].base) != slot;
		bad += hv_memslots_by_gfn(s, m[i].base + m[i].npages - 1) !=
		       slot;
		bad += model_find(m, m[i].base - 1) !=
		       id_or_neg(hv_memslots_by_gfn(s, m[i].base - 1));
		bad += model_find(m, m[i].base + m[i].npages) !=
		       id_or_neg(hv_memslots_by_gfn(s, m[i].base +
							       m[i].npages));
	}
	bad += hv_memslots_count(s) != n;
	for (unsigned i = 0; i < hv_memslots_count(s); i++) {
		const struct hv_memslot *slot = hv_memslots_at(s, i);

		bad += i && slot->base_gfn < prev_end;
		prev_end = slot->base_gfn + slot->npages;
	}
	for (int k = 0; k < 32; k++) {
		gfn_t g = random_base(rng);
		const struct hv_memslot *slot = hv_memslots_by_gfn(s, g);

		bad += model_find(m, g) != id_or_neg(slot);
	}
	hv_memslots_read_unlock(set);
	return bad;
}

static void test_lookups_match_model_under_random_updates(void)
{
	static struct model_slot m[MODEL_IDS];
	struct hv_memslots *set = set_new();
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	unsigned bad = 0, bad_ret = 0, ops = 2000 * hv_test_scale();

	memset(m, 0, sizeof(m));
	for (unsigned op = 0; op < ops; op++) {
		uint32_t id = rng_next(&rng) % MODEL_IDS;
		uint64_t r = rng_next(&rng);
		int ret, want;

		if (!m[id].present || r % 4 == 0) {
			gfn_t base = random_base(&rng);
			uint64_t np = r % 16 == 1 ? 1 + (r >> 8) % 100000
						  : 1 + (r >> 8) % 16;

			want = m[id].present ||
					       model_overlaps(m, MODEL_IDS,
							      base, np) ?
				       -EEXIST :
				       0;
			ret = add(set, id, base, np, (r >> 40) % 4);
			if (!ret)
				m[id] = (struct model_slot){ true, base, np,
							     (r >> 40) % 4 };
		} else if (r % 4 == 1) {
			want = 0;
			ret = hv_memslots_delete(set, id);
			m[id].present = false;
		} else if (r % 4 == 2) {
			gfn_t base = random_base(&rng);

			want = model_overlaps(m, id, base, m[id].npages) ?
				       -EEXIST :
				       0;
			ret = hv_memslots_move(set, id, base);
			if (!ret)
				m[id].base = base;
		} else {
			uint32_t fl = (r >> 40) % 4;

			want = 0;
			ret = hv_memslots_set_flags(set, id, fl);
			m[id].flags = fl;
		}
		bad_ret += ret != want;
		bad += model_compare(set, m, &rng);
	}
	CU_ASSERT_EQUAL(bad_ret, 0);
	CU_ASSERT_EQUAL(bad, 0);
	hv_memslots_destroy(set);
}

/* ---- dirty bitmaps -------------------------------------------------- */

/* Bitmap of slot @id in the published snapshot (valid until next update
 * from this thread; tests are single-threaded here). */
static struct hv_dirty_bitmap *dirty_of(struct hv_memslots *set, uint32_t id)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	struct hv_dirty_bitmap *bm = hv_memslots_by_id(s, id)->dirty;

	hv_memslots_read_unlock(set);
	return bm;
}

static void test_bitmap_exists_exactly_while_logging(void)
{
	struct hv_memslots *set = set_new();
	struct hv_dirty_bitmap *bm;

	CU_ASSERT_EQUAL(add(set, 1, 0, 100, 0), 0);
	CU_ASSERT_PTR_NULL(dirty_of(set, 1));
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, HV_MEMSLOT_F_DIRTY_LOG),
			0);
	bm = dirty_of(set, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bm);
	CU_ASSERT_EQUAL(bm->npages, 100);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 0);
	hv_dirty_bitmap_set(bm, 3);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, 0), 0);
	CU_ASSERT_PTR_NULL(dirty_of(set, 1));
	/* Logging again starts a fresh, clear bitmap. */
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, HV_MEMSLOT_F_DIRTY_LOG),
			0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(dirty_of(set, 1)), 0);
	/* Added with logging on: a bitmap from the start. */
	CU_ASSERT_EQUAL(add(set, 2, 200, 10, HV_MEMSLOT_F_DIRTY_LOG), 0);
	CU_ASSERT_PTR_NOT_NULL(dirty_of(set, 2));
	hv_memslots_destroy(set);
}

static void test_initially_set_starts_bitmap_full(void)
{
	struct hv_memslots *set = set_new();

	hv_memslots_set_initially_set(set, true);
	CU_ASSERT_EQUAL(add(set, 1, 0, 100, HV_MEMSLOT_F_DIRTY_LOG), 0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(dirty_of(set, 1)), 100);
	CU_ASSERT_EQUAL(add(set, 2, 100, 65, 0), 0);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 2, HV_MEMSLOT_F_DIRTY_LOG),
			0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(dirty_of(set, 2)), 65);
	hv_memslots_set_initially_set(set, false);
	CU_ASSERT_EQUAL(add(set, 3, 300, 5, HV_MEMSLOT_F_DIRTY_LOG), 0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(dirty_of(set, 3)), 0);
	hv_memslots_destroy(set);
}

static void test_bitmap_survives_readonly_toggle_and_move(void)
{
	struct hv_memslots *set = set_new();
	struct hv_dirty_bitmap *bm;

	CU_ASSERT_EQUAL(add(set, 1, 0, 100, HV_MEMSLOT_F_DIRTY_LOG), 0);
	bm = dirty_of(set, 1);
	hv_dirty_bitmap_set(bm, 42);
	CU_ASSERT_EQUAL(hv_memslots_set_flags(set, 1, HV_MEMSLOT_F_ALL), 0);
	CU_ASSERT_PTR_EQUAL(dirty_of(set, 1), bm);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 1, 5000), 0);
	CU_ASSERT_PTR_EQUAL(dirty_of(set, 1), bm);
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 42));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 1);
	hv_memslots_destroy(set);
}

/* ---- concurrency ---------------------------------------------------- */

static CU_TestInfo tests[] = {
	{ "add_refuses_invalid_descriptions",
	  test_add_refuses_invalid_descriptions },
	{ "add_refuses_duplicate_id", test_add_refuses_duplicate_id },
	{ "add_refuses_overlap_in_every_geometry",
	  test_add_refuses_overlap_in_every_geometry },
	{ "add_refuses_slot_beyond_limit_with_enospc",
	  test_add_refuses_slot_beyond_limit_with_enospc },
	{ "updates_refuse_unknown_ids_and_bad_arguments",
	  test_updates_refuse_unknown_ids_and_bad_arguments },
	{ "lookup_by_gfn_and_id_at_boundaries",
	  test_lookup_by_gfn_and_id_at_boundaries },
	{ "lookup_follows_move_and_delete",
	  test_lookup_follows_move_and_delete },
	{ "iteration_is_in_ascending_gfn_order",
	  test_iteration_is_in_ascending_gfn_order },
	{ "crowded_bucket_is_searched_correctly",
	  test_crowded_bucket_is_searched_correctly },
	{ "lookups_match_model_under_random_updates",
	  test_lookups_match_model_under_random_updates },
	{ "bitmap_exists_exactly_while_logging",
	  test_bitmap_exists_exactly_while_logging },
	{ "initially_set_starts_bitmap_full",
	  test_initially_set_starts_bitmap_full },
	{ "bitmap_survives_readonly_toggle_and_move",
	  test_bitmap_survives_readonly_toggle_and_move },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/memslots", NULL, NULL, tests);
