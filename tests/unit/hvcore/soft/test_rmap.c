// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/rmap: every generated instance (each width; no count, count
 * last, count first) holds exactly the entries added and not removed, and gives its
 * descriptors back.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/soft/rmap.h"
#include "hvcore/types.h"

static const unsigned widths[] = HV_SOFT_RMAP_WIDTHS;

#define POOL 300

struct seen {
	uint64_t *base;
	unsigned hits[POOL];
	unsigned bad;
};

static void note(uint64_t *spte, void *arg)
{
	struct seen *s = arg;
	ptrdiff_t i = spte - s->base;

	if (i < 0 || i >= POOL)
		s->bad++;
	else
		s->hits[i]++;
}

/* @head holds each member of @in exactly once and nothing else. */
static bool holds_exactly(struct hv_soft_rmap *r,
			  const struct hv_soft_rmap_head *head, uint64_t *pool,
			  const bool *in)
{
	struct seen s = { .base = pool };
	unsigned n = 0;

	hv_soft_rmap_for_each(r, head, note, &s);
	if (s.bad)
		return false;
	for (unsigned i = 0; i < POOL; i++) {
		if (s.hits[i] != (in[i] ? 1u : 0u))
			return false;
		n += in[i];
	}
	return hv_soft_rmap_count(r, head) == n;
}

static void test_rmap_holds_exactly_added_minus_removed_every_width(void)
{
	static uint64_t pool[POOL];

	for (unsigned w = 0; w < HV_SOFT_RMAP_NR_WIDTHS; w++) {
		for (int cf = 0; cf < 3; cf++) {
			struct hv_soft_rmap_head head = { 0 };
			struct hv_soft_rmap_stats st;
			struct hv_soft_rmap *r;
			bool in[POOL] = { false };
			unsigned n = 0, fails = 0;

			CU_ASSERT_FATAL(!hv_soft_rmap_create(widths[w], cf,
							     &r));
			srand(w * 2 + cf + 1);
			for (unsigned op = 0; op < 20000; op++) {
				unsigned i = rand() % POOL;
				/* Grow to ~200 then shrink to 0, twice, so
				 * every descriptor boundary is crossed. */
				bool add = (op / 5000) % 2 == 0 ?
						   rand() % 4 != 0 :
						   rand() % 4 == 0;

				if (add && !in[i]) {
					int before = hv_soft_rmap_add(
						r, &head, &pool[i]);

					if (before < 0 || before > (int)n)
						fails++;
					in[i] = true;
					n++;
				} else if (!add) {
					if (hv_soft_rmap_remove(r, &head,
								&pool[i]) !=
					    in[i])
						fails++;
					n -= in[i];
					in[i] = false;
				}
				if (op % 97 == 0 &&
				    !holds_exactly(r, &head, pool, in))
					fails++;
			}
			CU_ASSERT_EQUAL(fails, 0);
			CU_ASSERT(holds_exactly(r, &head, pool, in));
			/* Drain visits every remaining entry once. */
			{
				struct seen s = { .base = pool };
				unsigned left = 0, ok = 1;

				hv_soft_rmap_drain(r, &head, note, &s);
				for (unsigned i = 0; i < POOL; i++) {
					left += in[i];
					ok &= s.hits[i] == (in[i] ? 1u : 0u);
				}
				CU_ASSERT(ok);
				CU_ASSERT_EQUAL(s.bad, 0);
				CU_ASSERT(left > 0 || n == 0);
			}
			CU_ASSERT_EQUAL(head.val, 0);
			hv_soft_rmap_get_stats(r, &st);
			CU_ASSERT_EQUAL(st.descs, 0);
			/* ~200 entries needed more than one descriptor. */
			CU_ASSERT(st.peak_descs >= 200 / widths[w]);
			hv_soft_rmap_destroy(r);
		}
	}
}

static void test_rmap_removing_all_returns_every_descriptor(void)
{
	static uint64_t pool[POOL];

	for (unsigned k = 0; k < 3 * HV_SOFT_RMAP_NR_WIDTHS; k++) {
		unsigned w = k % HV_SOFT_RMAP_NR_WIDTHS;
		struct hv_soft_rmap_head head = { 0 };
		struct hv_soft_rmap_stats st;
		struct hv_soft_rmap *r;

		CU_ASSERT_FATAL(!hv_soft_rmap_create(
			widths[w], k / HV_SOFT_RMAP_NR_WIDTHS, &r));
		for (unsigned i = 0; i < POOL; i++)
			CU_ASSERT_EQUAL(hv_soft_rmap_add(r, &head, &pool[i]),
					(int)i);
		hv_soft_rmap_get_stats(r, &st);
		CU_ASSERT_EQUAL(st.descs, HV_DIV_ROUND_UP(POOL, widths[w]));
		/* Reverse order: the scan reaches the tail every time. */
		for (unsigned i = POOL; i-- > 0;)
			CU_ASSERT(hv_soft_rmap_remove(r, &head, &pool[i]));
		CU_ASSERT(!hv_soft_rmap_remove(r, &head, &pool[0]));
		CU_ASSERT_EQUAL(head.val, 0);
		hv_soft_rmap_get_stats(r, &st);
		CU_ASSERT_EQUAL(st.descs, 0);
		hv_soft_rmap_destroy(r);
	}
}

/* The benchmark's 14-vs-15 question rests on these sizes. */
static void test_rmap_width_14_fills_two_cache_lines_exactly(void)
{
	struct hv_soft_rmap *r;

	/* Without a count, 15 entries and the link make 128 bytes. */
	CU_ASSERT_FATAL(!hv_soft_rmap_create(15, HV_SOFT_RMAP_NO_COUNT, &r));
	CU_ASSERT_EQUAL(hv_soft_rmap_desc_size(r), 128);
	hv_soft_rmap_destroy(r);
	CU_ASSERT_FATAL(!hv_soft_rmap_create(3, HV_SOFT_RMAP_NO_COUNT, &r));
	CU_ASSERT_EQUAL(hv_soft_rmap_desc_size(r), 32);
	hv_soft_rmap_destroy(r);
	for (int cf = 0; cf < 2; cf++) {
		CU_ASSERT_FATAL(!hv_soft_rmap_create(14, cf, &r));
		CU_ASSERT_EQUAL(hv_soft_rmap_desc_size(r), 128);
		hv_soft_rmap_destroy(r);
		CU_ASSERT_FATAL(!hv_soft_rmap_create(15, cf, &r));
		CU_ASSERT_EQUAL(hv_soft_rmap_desc_size(r), 136);
		CU_ASSERT_EQUAL(hv_soft_rmap_width(r), 15);
		CU_ASSERT_EQUAL(hv_soft_rmap_layout(r), cf);
		hv_soft_rmap_destroy(r);
	}
}

static void test_rmap_unknown_width_refused(void)
{
	struct hv_soft_rmap *r = (void *)0x1;

	CU_ASSERT_EQUAL(hv_soft_rmap_create(4, HV_SOFT_RMAP_COUNT_LAST, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_soft_rmap_create(0, HV_SOFT_RMAP_COUNT_FIRST, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_soft_rmap_create(15, 3, &r), -EINVAL);
	CU_ASSERT_PTR_EQUAL(r, (void *)0x1);
}

static CU_TestInfo tests[] = {
	{ "rmap_holds_exactly_added_minus_removed_every_width",
	  test_rmap_holds_exactly_added_minus_removed_every_width },
	{ "rmap_removing_all_returns_every_descriptor",
	  test_rmap_removing_all_returns_every_descriptor },
	{ "rmap_width_14_fills_two_cache_lines_exactly",
	  test_rmap_width_14_fills_two_cache_lines_exactly },
	{ "rmap_unknown_width_refused", test_rmap_unknown_width_refused },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/rmap", NULL, NULL, tests);
