// SPDX-License-Identifier: MIT
/*
 * The incremental gfn index of hv_memslots (hvcore/memslots_snap.c): add,
 * delete and move patch the bucket table in place instead of rebuilding
 * it. After every step each test checks the published snapshot two ways:
 * hv_snap_index_check() compares every bucket entry and exact[] slot with
 * its definition, and every gfn of the test's space is looked up and
 * compared with a brute-force owner table. Both snapshots are covered:
 * each update publishes the other one.
 */
#include "tests/unit/hvcore/memslots_util.h"
#include "hvcore/memslots_snap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* gfns [0, SPACE) are compared one by one after every step. */
#define SPACE (1u << 15)
#define NO_SLOT 0xffffu
#define IDS 1024u

struct model {
	uint16_t owner[SPACE]; /* slot id per gfn, NO_SLOT in a gap */
	gfn_t base[IDS];
	uint64_t npages[IDS];
	bool present[IDS];
};

static struct model *model_new(void)
{
	struct model *m = calloc(1, sizeof(*m));

	CU_ASSERT_FATAL(m != NULL);
	for (unsigned g = 0; g < SPACE; g++)
		m->owner[g] = NO_SLOT;
	return m;
}

static bool model_free_range(const struct model *m, gfn_t base,
			     uint64_t npages, uint32_t skip)
{
	if (base + npages > SPACE)
		return false;
	for (gfn_t g = base; g < base + npages; g++)
		if (m->owner[g] != NO_SLOT && m->owner[g] != skip)
			return false;
	return true;
}

static void model_paint(struct model *m, uint32_t id, uint16_t who)
{
	for (gfn_t g = m->base[id]; g < m->base[id] + m->npages[id]; g++)
		m->owner[g] = who;
}

/* The set and the model agree on an add, delete or move, or fail. */
static void do_add(struct hv_memslots *set, struct model *m, uint32_t id,
		   gfn_t base, uint64_t npages)
{
	CU_ASSERT_FATAL(add(set, id, base, npages, 0) == 0);
	m->base[id] = base;
	m->npages[id] = npages;
	m->present[id] = true;
	model_paint(m, id, (uint16_t)id);
}

static void do_delete(struct hv_memslots *set, struct model *m, uint32_t id)
{
	CU_ASSERT_FATAL(hv_memslots_delete(set, id) == 0);
	model_paint(m, id, NO_SLOT);
	m->present[id] = false;
}

static void do_move(struct hv_memslots *set, struct model *m, uint32_t id,
		    gfn_t base)
{
	CU_ASSERT_FATAL(hv_memslots_move(set, id, base) == 0);
	model_paint(m, id, NO_SLOT);
	m->base[id] = base;
	model_paint(m, id, (uint16_t)id);
}

/* Mismatches between the published snapshot and the model. */
static unsigned check(struct hv_memslots *set, const struct model *m)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	unsigned bad = 0, n = 0;

	bad += hv_snap_index_check(s) != 0;
	for (gfn_t g = 0; g < SPACE; g++) {
		const struct hv_memslot *slot = hv_memslots_by_gfn(s, g);

		bad += (slot ? slot->id : NO_SLOT) != m->owner[g];
	}
	/* Beyond the space, and far beyond it. */
	bad += hv_memslots_by_gfn(s, SPACE) != NULL;
	bad += hv_memslots_by_gfn(s, 1ULL << 40) != NULL;
	for (uint32_t id = 0; id < IDS; id++) {
		const struct hv_memslot *slot = hv_memslots_by_id(s, id);

		n += m->present[id];
		bad += m->present[id] ? !slot || slot->base_gfn != m->base[id]
				      : slot != NULL;
	}
	bad += hv_memslots_count(s) != n;
	hv_memslots_read_unlock(set);
	return bad;
}

/* Slot i of the regular layout: 4 pages at gfn 1000 + 16 i. */
static void regular_layout(struct hv_memslots *set, struct model *m,
			   unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		do_add(set, m, i, 1000 + 16 * i, 4);
}

static void test_insert_at_first_middle_last_keeps_index_exact(void)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0;

	regular_layout(set, m, 100);
	bad += check(set, m);
	/* Middle: into gaps, touching the left, the right, or neither. */
	do_add(set, m, 200, 1000 + 16 * 50 + 4, 3);
	bad += check(set, m);
	do_add(set, m, 201, 1000 + 16 * 60 + 13, 3);
	bad += check(set, m);
	do_add(set, m, 202, 1000 + 16 * 70 + 8, 1);
	bad += check(set, m);
	/* Last, then first below the table (geometry changes). */
	do_add(set, m, 203, 1000 + 16 * 100 + 100, 7);
	bad += check(set, m);
	do_add(set, m, 204, 10, 5);
	bad += check(set, m);
	/* First again, but inside the table: delete the first slot (the
	 * table keeps min_gfn) then add into the space it left. */
	do_delete(set, m, 204);
	bad += check(set, m);
	do_add(set, m, 205, 12, 2);
	bad += check(set, m);
	do_add(set, m, 206, 20, 8);
	bad += check(set, m);
	CU_ASSERT_EQUAL(bad, 0);
	free(m);
	hv_memslots_destroy(set);
}

static void test_delete_at_first_middle_last_keeps_index_exact(void)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0;

	regular_layout(set, m, 100);
	do_delete(set, m, 50);
	bad += check(set, m);
	do_delete(set, m, 51); /* next to the hole just made */
	bad += check(set, m);
	do_delete(set, m, 99); /* last */
	bad += check(set, m);
	do_delete(set, m, 98);
	bad += check(set, m);
	do_delete(set, m, 0); /* first */
	bad += check(set, m);
	do_delete(set, m, 1);
	bad += check(set, m);
	/* Down to nothing, from both ends alternately, then rebuilt. */
	for (unsigned lo = 2, hi = 97; lo <= hi; lo++, hi--) {
		if (m->present[lo])
			do_delete(set, m, lo);
		bad += check(set, m);
		if (hi != lo && m->present[hi])
			do_delete(set, m, hi);
		bad += check(set, m);
	}
	do_add(set, m, 7, 5000, 3);
	bad += check(set, m);
	CU_ASSERT_EQUAL(bad, 0);
	free(m);
	hv_memslots_destroy(set);
}

/*
 * A big slot makes the shift coarse; small ones around it share buckets.
 * Deleting the big slot must clear every exact[] entry it filled, and
 * re-adding slots inside the hole must set them back.
 */
static void test_delete_that_empties_many_buckets_clears_them(void)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0;

	for (unsigned i = 0; i < 40; i++)
		do_add(set, m, i, 100 + 7 * i, 1 + i % 5);
	do_add(set, m, 100, 2000, 20000);
	for (unsigned i = 0; i < 40; i++)
		do_add(set, m, 40 + i, 22100 + 11 * i, 1 + i % 9);
	bad += check(set, m);
	do_delete(set, m, 100);
	bad += check(set, m);
	do_add(set, m, 101, 2000, 5000);
	bad += check(set, m);
	do_add(set, m, 102, 12000, 9000);
	bad += check(set, m);
	do_add(set, m, 103, 7001, 4998); /* fills the hole but one gfn */
	bad += check(set, m);
	do_delete(set, m, 101);
	bad += check(set, m);
	CU_ASSERT_EQUAL(bad, 0);
	free(m);
	hv_memslots_destroy(set);
}

/*
 * Moves within a bucket, across buckets and bucket groups (more than 256
 * buckets), onto the first and the last position, and back.
 */
static void test_moves_across_buckets_keep_index_exact(void)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0;

	/* 400 slots of 1..3 pages every 32 gfns: over 1000 buckets. */
	for (unsigned i = 0; i < 400; i++)
		do_add(set, m, i, 64 + 32 * i, 1 + i % 3);
	bad += check(set, m);
	do_move(set, m, 10, 64 + 32 * 10 + 20); /* same bucket area */
	bad += check(set, m);
	do_move(set, m, 11, 64 + 32 * 300 + 8); /* far up */
	bad += check(set, m);
	do_move(set, m, 300, 64 + 32 * 11); /* into the hole left */
	bad += check(set, m);
	do_move(set, m, 0, 64 + 32 * 400 + 5); /* first -> last */
	bad += check(set, m);
	do_move(set, m, 399, 10); /* last -> below the first */
	bad += check(set, m);
	do_move(set, m, 399, 64 + 32 * 399); /* and back */
	bad += check(set, m);
	do_move(set, m, 0, 64); /* first again */
	bad += check(set, m);
	/* Every group boundary region gets a slot moved through it. */
	for (unsigned i = 20; i < 380; i += 37) {
		do_move(set, m, i, 64 + 32 * i + 16);
		bad += check(set, m);
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(m);
	hv_memslots_destroy(set);
}

static uint64_t rng_step(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

struct random_cfg {
	gfn_t space;	  /* bases in [0, space) */
	unsigned target;  /* slot count to grow to */
	unsigned big_one_in; /* one slot in this many is big */
	uint64_t big_max;
	uint64_t small_max;
};

/*
 * Random adds, deletes and moves while the set grows to @c->target slots,
 * shrinks to a handful (the table must become coarser) and grows again;
 * full comparison after every step.
 */
static unsigned random_run(const struct random_cfg *c, uint64_t rng)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0, steps = 900 * hv_test_scale(), present = 0;

	for (unsigned step = 0; step < steps; step++) {
		/* Grow, shrink, grow: the target count per third. */
		unsigned third = 3 * step / steps;
		unsigned target = third == 1 ? 4 : c->target;
		uint64_t r = rng_step(&rng);
		uint32_t id = (uint32_t)(r % IDS);
		uint64_t np = r % c->big_one_in == 0
				      ? 1 + (r >> 20) % c->big_max
				      : 1 + (r >> 20) % c->small_max;
		gfn_t base = (r >> 32) % c->space;
		bool grow = present < target ? r % 8 < 6 : r % 8 < 2;

		if (!m->present[id] && grow) {
			if (!model_free_range(m, base, np, NO_SLOT))
				continue;
			do_add(set, m, id, base, np);
			present++;
		} else if (m->present[id] && !grow) {
			do_delete(set, m, id);
			present--;
		} else if (m->present[id]) {
			if (!model_free_range(m, base, m->npages[id], id) ||
			    base == m->base[id])
				continue;
			do_move(set, m, id, base);
		} else {
			continue;
		}
		bad += check(set, m);
	}
	free(m);
	hv_memslots_destroy(set);
	return bad;
}

/*
 * Sparse: several hundred slots over 32k gfns, several bucket groups,
 * small slots sharing buckets and big ones spanning thousands of pages.
 */
static void test_random_sparse_updates_keep_index_exact(void)
{
	const struct random_cfg c = { SPACE, 500, 23, 3000, 6 };

	CU_ASSERT_EQUAL(random_run(&c, 0x2545f4914f6cdd1dULL), 0);
}

/*
 * Dense: hundreds of slots packed into 2k gfns, so the table runs at
 * shift 0 or 1, slots touch their neighbours and span several buckets
 * that they cover exactly.
 */
static void test_random_dense_updates_keep_index_exact(void)
{
	const struct random_cfg c = { 2048, 450, 11, 40, 4 };

	CU_ASSERT_EQUAL(random_run(&c, 0x9e3779b97f4a7c15ULL), 0);
}

/* A refused update leaves the index untouched. */
static void test_refused_updates_leave_index_exact(void)
{
	struct hv_memslots *set = set_new();
	struct model *m = model_new();
	unsigned bad = 0;

	regular_layout(set, m, 64);
	CU_ASSERT_EQUAL(add(set, 500, 1000 + 16 * 5 + 2, 4, 0), -EEXIST);
	CU_ASSERT_EQUAL(hv_memslots_move(set, 6, 1000 + 16 * 7 + 3), -EEXIST);
	CU_ASSERT_EQUAL(hv_memslots_delete(set, 500), -ENOENT);
	bad += check(set, m);
	CU_ASSERT_EQUAL(bad, 0);
	free(m);
	hv_memslots_destroy(set);
}

static CU_TestInfo tests[] = {
	{ "insert_at_first_middle_last_keeps_index_exact",
	  test_insert_at_first_middle_last_keeps_index_exact },
	{ "delete_at_first_middle_last_keeps_index_exact",
	  test_delete_at_first_middle_last_keeps_index_exact },
	{ "delete_that_empties_many_buckets_clears_them",
	  test_delete_that_empties_many_buckets_clears_them },
	{ "moves_across_buckets_keep_index_exact",
	  test_moves_across_buckets_keep_index_exact },
	{ "random_sparse_updates_keep_index_exact",
	  test_random_sparse_updates_keep_index_exact },
	{ "random_dense_updates_keep_index_exact",
	  test_random_dense_updates_keep_index_exact },
	{ "refused_updates_leave_index_exact",
	  test_refused_updates_leave_index_exact },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/memslots_index", NULL, NULL, tests);
