// SPDX-License-Identifier: MIT
#include "hvcore/dirty_bitmap.h"
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct hv_dirty_bitmap *bm_new(uint64_t npages)
{
	struct hv_dirty_bitmap *bm = NULL;

	CU_ASSERT_FATAL(hv_dirty_bitmap_create(npages, &bm) == 0);
	CU_ASSERT_FATAL(bm != NULL);
	return bm;
}

static void test_create_refuses_zero_pages(void)
{
	struct hv_dirty_bitmap *bm = (void *)0x1;

	CU_ASSERT_EQUAL(hv_dirty_bitmap_create(0, &bm), -EINVAL);
	CU_ASSERT_PTR_EQUAL(bm, (void *)0x1);
	hv_dirty_bitmap_destroy(NULL);
}

static void test_set_test_and_count_agree(void)
{
	struct hv_dirty_bitmap *bm = bm_new(200);

	CU_ASSERT_EQUAL(bm->nwords, 4);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 0);
	hv_dirty_bitmap_set(bm, 0);
	hv_dirty_bitmap_set(bm, 63);
	hv_dirty_bitmap_set(bm, 64);
	hv_dirty_bitmap_set(bm, 199);
	hv_dirty_bitmap_set(bm, 199);
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 0));
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 63));
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 64));
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 199));
	CU_ASSERT_FALSE(hv_dirty_bitmap_test(bm, 1));
	CU_ASSERT_FALSE(hv_dirty_bitmap_test(bm, 198));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 4);
	hv_dirty_bitmap_set_mask(bm, 1, 0xf0);
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 64 + 4));
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 64 + 7));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 8);
	hv_dirty_bitmap_destroy(bm);
}

static void test_fetch_clear_word_returns_bits_once(void)
{
	struct hv_dirty_bitmap *bm = bm_new(128);

	hv_dirty_bitmap_set_mask(bm, 1, 0x8000000000000001ULL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear_word(bm, 0), 0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear_word(bm, 1),
			0x8000000000000001ULL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear_word(bm, 1), 0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 0);
	hv_dirty_bitmap_destroy(bm);
}

static void test_fetch_clear_refuses_unaligned_ranges(void)
{
	struct hv_dirty_bitmap *bm = bm_new(200);
	uint64_t dst[4];

	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 1, 64, dst), -EINVAL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 0, 65, dst), -EINVAL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 0, 63, dst), -EINVAL);
	/* Beyond npages, even when aligned. */
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 192, 64, dst),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 256, 0, dst), -EINVAL);
	/* A range may end at npages without being a multiple of 64. */
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 128, 72, dst), 0);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 0, 200, dst), 0);
	hv_dirty_bitmap_destroy(bm);
}

static void test_fetch_clear_range_moves_exactly_its_chunk(void)
{
	struct hv_dirty_bitmap *bm = bm_new(200);
	uint64_t dst[2] = { ~0ULL, ~0ULL };

	hv_dirty_bitmap_set(bm, 5);    /* chunk 0 */
	hv_dirty_bitmap_set(bm, 64);   /* chunk 1 */
	hv_dirty_bitmap_set(bm, 130);  /* chunk 2 */
	hv_dirty_bitmap_set(bm, 199);  /* chunk 3 (tail) */
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 64, 128, dst), 2);
	CU_ASSERT_EQUAL(dst[0], 1ULL);
	CU_ASSERT_EQUAL(dst[1], 1ULL << 2);
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 5));
	CU_ASSERT_FALSE(hv_dirty_bitmap_test(bm, 64));
	CU_ASSERT_FALSE(hv_dirty_bitmap_test(bm, 130));
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 199));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 192, 8, dst), 1);
	CU_ASSERT_EQUAL(dst[0], 1ULL << 7);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 1);
	hv_dirty_bitmap_destroy(bm);
}

static void test_set_all_sets_exactly_npages_bits(void)
{
	struct hv_dirty_bitmap *bm = bm_new(100);
	uint64_t dst[2];

	hv_dirty_bitmap_set_all(bm);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 100);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_fetch_clear(bm, 0, 100, dst), 100);
	CU_ASSERT_EQUAL(dst[1], (1ULL << 36) - 1);
	hv_dirty_bitmap_set_all(bm);
	hv_dirty_bitmap_clear_all(bm);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 0);
	hv_dirty_bitmap_destroy(bm);
}

static void test_or_merges_and_ignores_bits_past_npages(void)
{
	struct hv_dirty_bitmap *bm = bm_new(70);
	uint64_t src[2] = { 0x5, ~0ULL };

	hv_dirty_bitmap_set(bm, 1);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_or(bm, src, 71), -EINVAL);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 1);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_or(bm, src, 70), 0);
	/* pages 0, 1, 2 and 64..69 */
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), 3 + 6);
	CU_ASSERT_TRUE(hv_dirty_bitmap_test(bm, 69));
	hv_dirty_bitmap_destroy(bm);
}

struct collect {
	uint64_t pages[16];
	unsigned n;
	unsigned stop_after;
};

static int collect_cb(uint64_t page, void *arg)
{
	struct collect *c = arg;

	c->pages[c->n++] = page;
	return c->n == c->stop_after ? 42 : 0;
}

static void test_for_each_visits_range_in_order_and_stops(void)
{
	struct hv_dirty_bitmap *bm = bm_new(300);
	static const uint64_t set[] = { 3, 63, 64, 127, 128, 250, 299 };
	struct collect c = { .n = 0 };

	for (unsigned i = 0; i < HV_ARRAY_SIZE(set); i++)
		hv_dirty_bitmap_set(bm, set[i]);
	CU_ASSERT_EQUAL(hv_dirty_bitmap_for_each(bm, 0, 300, collect_cb, &c),
			0);
	CU_ASSERT_EQUAL_FATAL(c.n, HV_ARRAY_SIZE(set));
	for (unsigned i = 0; i < c.n; i++)
		CU_ASSERT_EQUAL(c.pages[i], set[i]);
	/* Unaligned bounds trim partial words on both sides. */
	memset(&c, 0, sizeof(c));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_for_each(bm, 4, 124, collect_cb, &c),
			0);
	CU_ASSERT_EQUAL_FATAL(c.n, 3);
	CU_ASSERT_EQUAL(c.pages[0], 63);
	CU_ASSERT_EQUAL(c.pages[1], 64);
	CU_ASSERT_EQUAL(c.pages[2], 127);
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	CU_ASSERT_EQUAL(hv_dirty_bitmap_for_each(bm, 0, 300, collect_cb, &c),
			42);
	CU_ASSERT_EQUAL(c.n, 2);
	/* for_each does not clear. */
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(bm), HV_ARRAY_SIZE(set));
	hv_dirty_bitmap_destroy(bm);
}

/*
 * Concurrency: setters dirty every page exactly once (in a scrambled order,
 * some through set_mask), while a harvester keeps fetching and clearing
 * chunks and words. Every page must be harvested exactly once: a lost bit
 * shows up as a missing page, a torn word as a page seen twice.
 */
#define CONC_PAGES (1u << 16)
#define CONC_SETTERS 2

struct conc {
	struct hv_dirty_bitmap *bm;
	atomic_uint setters_done;
	atomic_ullong bits_set;
};

struct setter_arg {
	struct conc *c;
	unsigned id;
};

static void *setter_thread(void *p)
{
	struct setter_arg *a = p;
	struct hv_dirty_bitmap *bm = a->c->bm;
	unsigned long long n = 0;

	/* Setter k owns words w with w % CONC_SETTERS == k. */
	for (unsigned step = 0; step < CONC_PAGES / CONC_SETTERS; step++) {
		/* An odd multiplier permutes the pages of this setter. */
		unsigned idx =
			(step * 2654435761u) % (CONC_PAGES / CONC_SETTERS);
		unsigned word = (idx / 64) * CONC_SETTERS + a->id;
		unsigned bit = idx % 64;

		/* Some pages go through set_mask, as a PML flush would. */
		if (step % 3 == 0)
			hv_dirty_bitmap_set_mask(bm, word, 1ULL << bit);
		else
			hv_dirty_bitmap_set(bm, (uint64_t)word * 64 + bit);
		n++;
	}
	atomic_fetch_add(&a->c->bits_set, n);
	atomic_fetch_add(&a->c->setters_done, 1);
	return NULL;
}

static unsigned long long harvest(struct conc *c, uint8_t *seen,
				  bool *dup, bool by_word)
{
	uint64_t chunk[4];
	unsigned long long n = 0;

	for (uint64_t first = 0; first < CONC_PAGES; first += 256) {
		if (by_word) {
			for (unsigned i = 0; i < 4; i++)
				chunk[i] = hv_dirty_bitmap_fetch_clear_word(
					c->bm, first / 64 + i);
		} else {
			int64_t r = hv_dirty_bitmap_fetch_clear(c->bm, first,
								256, chunk);
			CU_ASSERT(r >= 0);
		}
		for (unsigned i = 0; i < 4; i++) {
			uint64_t v = chunk[i];

			while (v) {
				uint64_t page = first + i * 64 +
						__builtin_ctzll(v);

				if (seen[page])
					*dup = true;
				seen[page] = 1;
				n++;
				v &= v - 1;
			}
		}
	}
	return n;
}

static void test_no_bit_lost_between_setters_and_fetch_clear(void)
{
	struct conc c = { .bm = bm_new(CONC_PAGES) };
	struct setter_arg args[CONC_SETTERS];
	pthread_t th[CONC_SETTERS];
	uint8_t *seen = calloc(CONC_PAGES, 1);
	unsigned long long got = 0;
	bool dup = false, by_word = false;

	CU_ASSERT_FATAL(seen != NULL);
	for (unsigned i = 0; i < CONC_SETTERS; i++) {
		args[i] = (struct setter_arg){ &c, i };
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, setter_thread,
					       &args[i]) == 0);
	}
	while (atomic_load(&c.setters_done) < CONC_SETTERS) {
		got += harvest(&c, seen, &dup, by_word);
		by_word = !by_word;
	}
	for (unsigned i = 0; i < CONC_SETTERS; i++)
		pthread_join(th[i], NULL);
	got += harvest(&c, seen, &dup, false);

	CU_ASSERT_FALSE(dup);
	CU_ASSERT_EQUAL(atomic_load(&c.bits_set), CONC_PAGES);
	CU_ASSERT_EQUAL(got, atomic_load(&c.bits_set));
	CU_ASSERT_EQUAL(hv_dirty_bitmap_count(c.bm), 0);
	free(seen);
	hv_dirty_bitmap_destroy(c.bm);
}

static CU_TestInfo tests[] = {
	{ "create_refuses_zero_pages", test_create_refuses_zero_pages },
	{ "set_test_and_count_agree", test_set_test_and_count_agree },
	{ "fetch_clear_word_returns_bits_once",
	  test_fetch_clear_word_returns_bits_once },
	{ "fetch_clear_refuses_unaligned_ranges",
	  test_fetch_clear_refuses_unaligned_ranges },
	{ "fetch_clear_range_moves_exactly_its_chunk",
	  test_fetch_clear_range_moves_exactly_its_chunk },
	{ "set_all_sets_exactly_npages_bits",
	  test_set_all_sets_exactly_npages_bits },
	{ "or_merges_and_ignores_bits_past_npages",
	  test_or_merges_and_ignores_bits_past_npages },
	{ "for_each_visits_range_in_order_and_stops",
	  test_for_each_visits_range_in_order_and_stops },
	{ "no_bit_lost_between_setters_and_fetch_clear",
	  test_no_bit_lost_between_setters_and_fetch_clear },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/dirty_bitmap", NULL, NULL, tests);
