// SPDX-License-Identifier: MIT
/*
 * hv_memslots. Slots point at fake, page-aligned host addresses: the set
 * never touches guest memory, so no memory is mapped for them.
 */
#include "hvcore/memslots.h"
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HVA0 0x100000000000ULL

static struct hv_memslots *set_new(void)
{
	struct hv_memslots *set = NULL;

	CU_ASSERT_FATAL(hv_memslots_create(&set) == 0);
	return set;
}

static int add(struct hv_memslots *set, uint32_t id, gfn_t base,
	       uint64_t npages, uint32_t flags)
{
	struct hv_memslot_desc d = {
		.id = id,
		.flags = flags,
		.base_gfn = base,
		.npages = npages,
		.hva = HVA0 + ((uint64_t)id << 24),
	};

	return hv_memslots_add(set, &d);
}

/* Generation and count of the published snapshot. */
static uint64_t gen_of(struct hv_memslots *set, unsigned *count)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	uint64_t g = hv_memslots_generation(s);

	if (count)
		*count = hv_memslots_count(s);
	hv_memslots_read_unlock(set);
	return g;
}

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

struct flag_thread {
	struct hv_memslots *set;
	atomic_int done;
	int ret;
};

static void *set_flags_thread(void *p)
{
	struct flag_thread *t = p;

	t->ret = hv_memslots_set_flags(t->set, 1, HV_MEMSLOT_F_READONLY);
	atomic_store(&t->done, 1);
	return NULL;
}

static void test_update_waits_for_reader_and_keeps_its_version_intact(void)
{
	struct flag_thread t = { .set = set_new() };
	const struct hv_memslots_snap *s;
	const struct hv_memslot *old;
	struct timespec ts = { 0, 100 * 1000000L };
	pthread_t th;

	CU_ASSERT_EQUAL(add(t.set, 1, 0, 10, 0), 0);
	s = hv_memslots_read_lock(t.set);
	old = hv_memslots_by_id(s, 1);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, set_flags_thread, &t) == 0);
	nanosleep(&ts, NULL);
	/* The writer published and now waits for us: our view is intact. */
	CU_ASSERT_EQUAL(atomic_load(&t.done), 0);
	CU_ASSERT_EQUAL(old->flags, 0);
	CU_ASSERT_PTR_EQUAL(hv_memslots_by_id(s, 1), old);
	CU_ASSERT_EQUAL(hv_memslots_generation(s), 1);
	hv_memslots_read_unlock(t.set);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(t.ret, 0);
	s = hv_memslots_read_lock(t.set);
	CU_ASSERT_EQUAL(hv_memslots_by_id(s, 1)->flags, HV_MEMSLOT_F_READONLY);
	CU_ASSERT_EQUAL(hv_memslots_generation(s), 2);
	hv_memslots_read_unlock(t.set);
	hv_memslots_destroy(t.set);
}

/*
 * Readers during updates. The writer runs a fixed program: update number k
 * (k = 1, 2, ...) acts on lane (k - 1) % LANES, and each lane cycles through
 * add, dirty logging on, move, logging off + read-only, delete. So the
 * content of the set after g updates is a pure function of g, and every
 * snapshot a reader sees carries its generation: readers recompute what
 * that generation must hold and compare everything (a torn or half-made
 * set, a stale slot or a freed bitmap shows up as a mismatch, an ASan
 * report or a TSan race).
 */
#define LANES 16
#define LANE_SPAN 4096ULL
#define CONC_READERS 3

struct lane_expect {
	bool present;
	gfn_t base;
	uint32_t flags;
};

static uint32_t lane_id(unsigned j)
{
	return 3 * j + 1;
}

static uint64_t lane_npages(unsigned j)
{
	return 1 + (j % 5) * 7;
}

static hva_t lane_hva(unsigned j)
{
	return HVA0 + ((uint64_t)j << 32);
}

static gfn_t lane_add_base(unsigned j, uint64_t cycle)
{
	return j * LANE_SPAN + (cycle % 7) * 64;
}

static gfn_t lane_move_base(unsigned j, uint64_t cycle)
{
	return j * LANE_SPAN + 2048 + (cycle % 5) * 64;
}

static struct lane_expect lane_after(uint64_t gen, unsigned j)
{
	struct lane_expect e = { .present = false };
	uint64_t ops = gen > j ? (gen - 1 - j) / LANES + 1 : 0;
	uint64_t round, cycle;

	if (!ops)
		return e;
	round = ops - 1;
	cycle = round / 5;
	switch (round % 5) {
	case 0:
		e = (struct lane_expect){ true, lane_add_base(j, cycle), 0 };
		break;
	case 1:
		e = (struct lane_expect){ true, lane_add_base(j, cycle),
					  HV_MEMSLOT_F_DIRTY_LOG };
		break;
	case 2:
		e = (struct lane_expect){ true, lane_move_base(j, cycle),
					  HV_MEMSLOT_F_DIRTY_LOG };
		break;
	case 3:
		e = (struct lane_expect){ true, lane_move_base(j, cycle),
					  HV_MEMSLOT_F_READONLY };
		break;
	default:
		break;
	}
	return e;
}

static int lane_update(struct hv_memslots *set, uint64_t k)
{
	unsigned j = (k - 1) % LANES;
	uint64_t round = (k - 1) / LANES, cycle = round / 5;
	struct hv_memslot_desc d = {
		.id = lane_id(j),
		.base_gfn = lane_add_base(j, cycle),
		.npages = lane_npages(j),
		.hva = lane_hva(j),
	};

	switch (round % 5) {
	case 0:
		return hv_memslots_add(set, &d);
	case 1:
		return hv_memslots_set_flags(set, d.id,
					     HV_MEMSLOT_F_DIRTY_LOG);
	case 2:
		return hv_memslots_move(set, d.id, lane_move_base(j, cycle));
	case 3:
		return hv_memslots_set_flags(set, d.id, HV_MEMSLOT_F_READONLY);
	default:
		return hv_memslots_delete(set, d.id);
	}
}

struct conc {
	struct hv_memslots *set;
	atomic_int stop;
	atomic_ullong bad;
	atomic_ullong snapshots;
	atomic_ullong generations; /* distinct generations seen, summed */
};

/* Compare one snapshot with what its generation must hold. */
static unsigned check_snapshot(const struct hv_memslots_snap *s)
{
	uint64_t g = hv_memslots_generation(s);
	unsigned bad = 0, present = 0, idx = 0;
	gfn_t prev = 0;

	for (unsigned j = 0; j < LANES; j++) {
		struct lane_expect e = lane_after(g, j);
		const struct hv_memslot *slot =
			hv_memslots_by_id(s, lane_id(j));
		uint64_t np = lane_npages(j);

		if (!e.present) {
			bad += slot != NULL;
			bad += hv_memslots_by_gfn(s, lane_add_base(j, 0)) !=
			       NULL;
			continue;
		}
		present++;
		if (!slot) {
			bad++;
			continue;
		}
		bad += slot->id != lane_id(j) || slot->base_gfn != e.base ||
		       slot->npages != np || slot->hva != lane_hva(j) ||
		       slot->flags != e.flags;
		bad += !(slot->flags & HV_MEMSLOT_F_DIRTY_LOG) != !slot->dirty;
		if (slot->dirty) {
			bad += slot->dirty->npages != np;
			/* Touch it: a freed bitmap is caught by ASan/TSan. */
			hv_dirty_bitmap_set(slot->dirty, np - 1);
		}
		bad += hv_memslots_by_gfn(s, e.base) != slot;
		bad += hv_memslots_by_gfn(s, e.base + np - 1) != slot;
		bad += hv_memslots_by_gfn(s, e.base + np) != NULL;
		bad += hv_memslots_by_gfn(s, e.base - 1) != NULL;
	}
	bad += hv_memslots_count(s) != present;
	for (idx = 0; idx < hv_memslots_count(s); idx++) {
		const struct hv_memslot *slot = hv_memslots_at(s, idx);

		bad += !slot || (idx && slot->base_gfn <= prev);
		if (slot)
			prev = slot->base_gfn;
	}
	return bad;
}

static void *conc_reader(void *p)
{
	struct conc *c = p;
	unsigned long long n = 0, bad = 0, gens = 0;
	uint64_t last_gen = UINT64_MAX;

	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		const struct hv_memslots_snap *s =
			hv_memslots_read_lock(c->set);
		uint64_t g = hv_memslots_generation(s);

		bad += check_snapshot(s);
		if (n % 16 == 0) {
			/* A nested section sees the same or a newer set. */
			const struct hv_memslots_snap *in =
				hv_memslots_read_lock(c->set);

			bad += hv_memslots_generation(in) < g;
			bad += check_snapshot(in);
			hv_memslots_read_unlock(c->set);
		}
		hv_memslots_read_unlock(c->set);
		/*
		 * Leave the CPU now and then: with more busy threads than
		 * cores, a reader preempted inside its section holds the
		 * writer's grace period for a whole time slice.
		 */
		if (n % 8 == 7) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		/* Generations never go backwards for one reader. */
		bad += last_gen != UINT64_MAX && g < last_gen;
		gens += g != last_gen;
		last_gen = g;
		n++;
	}
	hv_memslots_thread_exit(c->set);
	atomic_fetch_add(&c->bad, bad);
	atomic_fetch_add(&c->snapshots, n);
	atomic_fetch_add(&c->generations, gens);
	return NULL;
}

static void test_readers_see_only_whole_snapshots_during_updates(void)
{
	struct conc c = { .set = set_new() };
	pthread_t th[CONC_READERS];
	struct timespec t0, t1;
	unsigned bad_ret = 0;
	uint64_t k = 0;
	double el;

	for (unsigned i = 0; i < CONC_READERS; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, conc_reader, &c) ==
				0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bad_ret += lane_update(c.set, ++k) != 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (el < 1.0 * hv_test_scale());
	atomic_store(&c.stop, 1);
	for (unsigned i = 0; i < CONC_READERS; i++)
		pthread_join(th[i], NULL);

	printf("\n    %llu updates, %llu snapshots checked, %llu generation "
	       "changes seen ",
	       (unsigned long long)k, atomic_load(&c.snapshots),
	       atomic_load(&c.generations));
	CU_ASSERT_EQUAL(bad_ret, 0);
	CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
	CU_ASSERT_EQUAL(gen_of(c.set, NULL), k);
	/* The readers really ran alongside the writer. */
	CU_ASSERT(k > 5 * LANES);
	CU_ASSERT(atomic_load(&c.generations) > CONC_READERS * 2);
	hv_memslots_destroy(c.set);
}

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
	{ "update_waits_for_reader_and_keeps_its_version_intact",
	  test_update_waits_for_reader_and_keeps_its_version_intact },
	{ "readers_see_only_whole_snapshots_during_updates",
	  test_readers_see_only_whole_snapshots_during_updates },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/memslots", NULL, NULL, tests);
