// SPDX-License-Identifier: MIT
/*
 * The adaptive compression choice (migrated/mig/adapt.c), fed epochs of
 * 16 batches of 64 pages as channels measured them in hvbench stream
 * (docs/benchmarks.md): text at zstd 1 on loopback TLS, text on a
 * 1 Gbit/s link, random pages.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/adapt.h"

#define MS 1000000ull
#define EPOCH_BYTES (16ull * 64 * 4096)

/* Text at level 1 on loopback: 10.4 ms compressing, 1.1 ms writing. */
static const struct mig_adapt_epoch text_loopback = {
	16, 10400 * 1000ull, 1100 * 1000ull, EPOCH_BYTES, EPOCH_BYTES / 3,
};
/* Text on a shaped 1 Gbit/s link: the writes wait for the link. */
static const struct mig_adapt_epoch text_1g = {
	16, 10400 * 1000ull, 23 * MS, EPOCH_BYTES, EPOCH_BYTES / 3,
};
/* Random pages: zstd tried every batch and never paid. */
static const struct mig_adapt_epoch random_pages = {
	16, 9 * MS, 2 * MS, EPOCH_BYTES, EPOCH_BYTES,
};

static void test_starts_at_zstd_level_1(void)
{
	struct mig_adapt_state st = mig_adapt_init();

	CU_ASSERT_EQUAL(mig_adapt_level(st.rung), 1);
	CU_ASSERT_EQUAL(st.epoch, MIG_ADAPT_EPOCH);
	CU_ASSERT_EQUAL(mig_adapt_level(0), 0);
}

static void test_compressor_bound_steps_down_but_never_to_raw(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	int prev = mig_adapt_level(st.rung);

	for (unsigned i = 0; i < 2 * MIG_ADAPT_RUNGS; i++) {
		st = mig_adapt(&st, &text_loopback);
		CU_ASSERT(st.rung >= 1);
		CU_ASSERT(mig_adapt_level(st.rung) <= prev);
		prev = mig_adapt_level(st.rung);
	}
	/* Compressible text stays compressed, at the fastest level. */
	CU_ASSERT_EQUAL(st.rung, 1u);
	CU_ASSERT(mig_adapt_level(st.rung) < 0);
}

static void test_link_bound_steps_up_to_the_strongest_and_stops(void)
{
	struct mig_adapt_state st = mig_adapt_init();

	st = mig_adapt(&st, &text_1g);
	CU_ASSERT(mig_adapt_level(st.rung) > 1);
	for (unsigned i = 0; i < 2 * MIG_ADAPT_RUNGS; i++)
		st = mig_adapt(&st, &text_1g);
	CU_ASSERT_EQUAL(st.rung, MIG_ADAPT_RUNGS - 1);
}

static void test_balanced_channel_keeps_its_level(void)
{
	struct mig_adapt_state st = mig_adapt_init(), n;
	/* 45% of the time writing: between the two thresholds. */
	struct mig_adapt_epoch ep = text_loopback;

	ep.enc_ns = 55 * MS;
	ep.send_ns = 45 * MS;
	n = mig_adapt(&st, &ep);
	CU_ASSERT_EQUAL(n.rung, st.rung);
	/* Just past either threshold moves it. */
	ep.enc_ns = 39 * MS;
	ep.send_ns = 61 * MS;
	CU_ASSERT_EQUAL(mig_adapt(&st, &ep).rung, st.rung + 1);
	ep.enc_ns = 71 * MS;
	ep.send_ns = 29 * MS;
	CU_ASSERT_EQUAL(mig_adapt(&st, &ep).rung, st.rung - 1);
}

static void test_incompressible_goes_raw_with_growing_stretches(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	unsigned start = st.rung;
	uint32_t stretch = 0;

	for (unsigned round = 0; round < 8; round++) {
		st = mig_adapt(&st, &random_pages);
		CU_ASSERT_EQUAL(st.rung, 0u);
		CU_ASSERT(st.epoch > stretch || st.epoch == MIG_ADAPT_RAW_MAX);
		CU_ASSERT(st.epoch <= MIG_ADAPT_RAW_MAX);
		stretch = st.epoch;
		/* The raw stretch ends with a short probe where it was. */
		st = mig_adapt(&st, &(struct mig_adapt_epoch){ 0 });
		CU_ASSERT_EQUAL(st.rung, start);
		CU_ASSERT_EQUAL(st.epoch, MIG_ADAPT_PROBE);
	}
	CU_ASSERT_EQUAL(stretch, MIG_ADAPT_RAW_MAX);
}

static void test_compressible_probe_resets_the_raw_stretch(void)
{
	struct mig_adapt_state st = mig_adapt_init();

	for (unsigned i = 0; i < 3; i++) {
		st = mig_adapt(&st, &random_pages);
		st = mig_adapt(&st, &(struct mig_adapt_epoch){ 0 });
	}
	/* Text again: compress, and the next random stretch starts short. */
	st = mig_adapt(&st, &text_loopback);
	CU_ASSERT(st.rung >= 1);
	st = mig_adapt(&st, &random_pages);
	CU_ASSERT_EQUAL(st.rung, 0u);
	CU_ASSERT_EQUAL(st.epoch, MIG_ADAPT_RAW_MIN);
}

static void test_barely_compressible_counts_as_incompressible(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	struct mig_adapt_epoch ep = text_loopback;

	/* 5% saved: under the 1.06 ratio. */
	ep.tried_out = EPOCH_BYTES - EPOCH_BYTES / 20;
	CU_ASSERT_EQUAL(mig_adapt(&st, &ep).rung, 0u);
	/* 10% saved: worth it. */
	ep.tried_out = EPOCH_BYTES - EPOCH_BYTES / 10;
	CU_ASSERT(mig_adapt(&st, &ep).rung != 0u);
}

static void test_epoch_of_zero_pages_changes_nothing(void)
{
	struct mig_adapt_state st = mig_adapt_init(), n;
	struct mig_adapt_epoch ep = { .batches = 16 };

	n = mig_adapt(&st, &ep);
	CU_ASSERT_EQUAL(n.rung, st.rung);
	CU_ASSERT_EQUAL(n.raw_run, st.raw_run);
	CU_ASSERT_EQUAL(n.epoch, MIG_ADAPT_EPOCH);
}

static CU_TestInfo tests[] = {
	{ "starts_at_zstd_level_1", test_starts_at_zstd_level_1 },
	{ "compressor_bound_steps_down_but_never_to_raw",
	  test_compressor_bound_steps_down_but_never_to_raw },
	{ "link_bound_steps_up_to_the_strongest_and_stops",
	  test_link_bound_steps_up_to_the_strongest_and_stops },
	{ "balanced_channel_keeps_its_level",
	  test_balanced_channel_keeps_its_level },
	{ "incompressible_goes_raw_with_growing_stretches",
	  test_incompressible_goes_raw_with_growing_stretches },
	{ "compressible_probe_resets_the_raw_stretch",
	  test_compressible_probe_resets_the_raw_stretch },
	{ "barely_compressible_counts_as_incompressible",
	  test_barely_compressible_counts_as_incompressible },
	{ "epoch_of_zero_pages_changes_nothing",
	  test_epoch_of_zero_pages_changes_nothing },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/adapt", NULL, NULL, tests);
