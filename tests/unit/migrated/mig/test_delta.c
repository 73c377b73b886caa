// SPDX-License-Identifier: MIT
/* Delta encoding of re-sent pages and its cache (migrated/mig/delta.c). */
#include "tests/harness/hv_test.h"
#include "hvcore/types.h"
#include "hvcore/workload.h"
#include "migrated/mig/delta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint8_t old_pg[HV_PAGE_SIZE], new_pg[HV_PAGE_SIZE], out[HV_PAGE_SIZE],
	rec[MIG_DELTA_REC_MAX];

static void two_pages(void)
{
	hv_wl_fill_page(old_pg, 1, 7, HV_WL_CONTENT_TEXT);
	memcpy(new_pg, old_pg, HV_PAGE_SIZE);
}

static void test_delta_rebuilds_the_new_page(void)
{
	ssize_t n;

	two_pages();
	/* A changed stamp, a word in the middle, the last byte. */
	new_pg[8] ^= 1;
	memset(new_pg + 1000, 'x', 13);
	new_pg[HV_PAGE_SIZE - 1] ^= 0xff;
	n = mig_delta_encode(old_pg, mig_delta_hash(old_pg), new_pg, rec,
			     sizeof(rec));
	CU_ASSERT_FATAL(n > (ssize_t)MIG_DELTA_HDR && n < 80);
	memcpy(out, old_pg, HV_PAGE_SIZE);
	CU_ASSERT_EQUAL_FATAL(mig_delta_check(out, rec, (size_t)n), 0);
	mig_delta_apply(out, rec, (size_t)n);
	CU_ASSERT(!memcmp(out, new_pg, HV_PAGE_SIZE));
}

static void test_unchanged_page_is_a_header_only_delta(void)
{
	two_pages();
	CU_ASSERT_EQUAL(mig_delta_encode(old_pg, mig_delta_hash(old_pg),
					 new_pg, rec, sizeof(rec)),
			(ssize_t)MIG_DELTA_HDR);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec, MIG_DELTA_HDR), 0);
}

static void test_rewritten_page_does_not_fit(void)
{
	two_pages();
	hv_wl_fill_page(new_pg, 1, 8, HV_WL_CONTENT_RANDOM);
	CU_ASSERT_EQUAL(mig_delta_encode(old_pg, mig_delta_hash(old_pg),
					 new_pg, rec, sizeof(rec)),
			-ENOSPC);
}

static void test_delta_against_another_page_is_stale(void)
{
	ssize_t n;

	two_pages();
	new_pg[100] ^= 1;
	n = mig_delta_encode(old_pg, mig_delta_hash(old_pg), new_pg, rec,
			     sizeof(rec));
	CU_ASSERT_FATAL(n > 0);
	/* The destination holds something else than the source's base. */
	memcpy(out, old_pg, HV_PAGE_SIZE);
	out[4000] ^= 4;
	CU_ASSERT_EQUAL(mig_delta_check(out, rec, (size_t)n), -ESTALE);
}

/* A record with @body after a valid header for old_pg. */
static size_t craft(const uint8_t *body, size_t len)
{
	uint64_t h = mig_delta_hash(old_pg);

	for (unsigned i = 0; i < 8; i++)
		rec[i] = (uint8_t)(h >> (8 * i));
	memcpy(rec + MIG_DELTA_HDR, body, len);
	return MIG_DELTA_HDR + len;
}

static void test_runs_outside_the_page_are_refused(void)
{
	/* skip 4096 (0x80 0x20), then a 1-byte run: past the end. */
	static const uint8_t past_end[] = { 0x80, 0x20, 0x01, 0xaa };
	/* skip 4088, run of 16: crosses the end. */
	static const uint8_t crosses[] = { 0xf8, 0x1f, 0x10, 1, 2, 3, 4, 5,
					   6, 7, 8, 9, 10, 11, 12, 13,
					   14, 15, 16 };
	/* A run of 0 bytes, a 3-byte value, data cut short, skip alone. */
	static const uint8_t empty_run[] = { 0x00, 0x00 };
	static const uint8_t long_value[] = { 0x80, 0x80, 0x01, 0x01, 0xaa };
	static const uint8_t cut[] = { 0x00, 0x08, 1, 2, 3 };
	static const uint8_t lone_skip[] = { 0x05 };
	/* The last 8 bytes exactly: fine. */
	static const uint8_t last[] = { 0xf8, 0x1f, 0x08, 1, 2, 3, 4, 5, 6,
					7, 8 };

	two_pages();
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec,
					craft(past_end, sizeof(past_end))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec,
					craft(crosses, sizeof(crosses))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec,
					craft(empty_run, sizeof(empty_run))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec,
					craft(long_value, sizeof(long_value))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec, craft(cut, sizeof(cut))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec,
					craft(lone_skip, sizeof(lone_skip))),
			-EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec, 7), -EBADMSG);
	CU_ASSERT_EQUAL(mig_delta_check(old_pg, rec, craft(last, sizeof(last))),
			0);
	mig_delta_apply(old_pg, rec, craft(last, sizeof(last)));
	CU_ASSERT_EQUAL(old_pg[HV_PAGE_SIZE - 1], 8);
}

static void test_cache_deltas_against_exactly_what_was_sent(void)
{
	struct mig_delta_cache *c;
	ssize_t n;

	two_pages();
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(16 * HV_PAGE_SIZE, 1000,
						     &c),
			      0);
	/* Not cached yet: full, and now cached. */
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 42, old_pg, true, rec), 0);
	CU_ASSERT_EQUAL(mig_delta_cache_pages(c), 1u);
	new_pg[64] ^= 1;
	n = mig_delta_cache_encode(c, 42, new_pg, true, rec);
	CU_ASSERT_FATAL(n > (ssize_t)MIG_DELTA_HDR);
	memcpy(out, old_pg, HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(mig_delta_check(out, rec, (size_t)n), 0);
	/* The entry follows: the next delta is against new_pg. */
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 42, new_pg, false, rec),
			(ssize_t)MIG_DELTA_HDR);
	CU_ASSERT_EQUAL(mig_delta_check(new_pg, rec, MIG_DELTA_HDR), 0);
	/* Sent as zero: forgotten, next time full. */
	mig_delta_cache_drop(c, 42);
	CU_ASSERT_EQUAL(mig_delta_cache_pages(c), 0u);
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 42, new_pg, false, rec), 0);
	/* Without insert an unknown page stays out. */
	CU_ASSERT_EQUAL(mig_delta_cache_pages(c), 0u);
	mig_delta_cache_destroy(c);
}

static void test_pages_sharing_an_entry_evict_each_other(void)
{
	struct mig_delta_cache *c;

	two_pages();
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(HV_PAGE_SIZE, 1000, &c),
			      0);
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 1, old_pg, true, rec), 0);
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 2, new_pg, true, rec), 0);
	/* Page 1's copy is gone: it goes full, never a delta against 2. */
	CU_ASSERT_EQUAL(mig_delta_cache_encode(c, 1, old_pg, true, rec), 0);
	CU_ASSERT_EQUAL(mig_delta_cache_pages(c), 1u);
	mig_delta_cache_destroy(c);
}

static void test_default_size_is_ram_over_64_within_bounds(void)
{
	CU_ASSERT_EQUAL(mig_delta_cache_default(262144), 16ull << 20);
	CU_ASSERT_EQUAL(mig_delta_cache_default(256), MIG_DELTA_CACHE_MIN);
	CU_ASSERT_EQUAL(mig_delta_cache_default(262144ull * 64),
			MIG_DELTA_CACHE_MAX);
}

static CU_TestInfo tests[] = {
	{ "delta_rebuilds_the_new_page", test_delta_rebuilds_the_new_page },
	{ "unchanged_page_is_a_header_only_delta",
	  test_unchanged_page_is_a_header_only_delta },
	{ "rewritten_page_does_not_fit", test_rewritten_page_does_not_fit },
	{ "delta_against_another_page_is_stale",
	  test_delta_against_another_page_is_stale },
	{ "runs_outside_the_page_are_refused",
	  test_runs_outside_the_page_are_refused },
	{ "cache_deltas_against_exactly_what_was_sent",
	  test_cache_deltas_against_exactly_what_was_sent },
	{ "pages_sharing_an_entry_evict_each_other",
	  test_pages_sharing_an_entry_evict_each_other },
	{ "default_size_is_ram_over_64_within_bounds",
	  test_default_size_is_ram_over_64_within_bounds },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/delta", NULL, NULL, tests);
