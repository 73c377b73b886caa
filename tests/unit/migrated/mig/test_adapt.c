// SPDX-License-Identifier: MIT
/*
 * The adaptive compression choice (migrated/mig/adapt.c), fed epochs of
 * 16 batches of 64 pages with costs as channels measured them in hvbench
 * stream (docs/benchmarks.md): text, random pages.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/adapt.h"

#define MS 1000000ull
#define EPOCH_BYTES (16ull * 64 * 4096)

/* Text at level 1 on loopback: 10.4 ms compressing, 1.1 ms writing. */
static const struct mig_adapt_epoch text_loopback = {
	16, 1024, 10400 * 1000ull, 1100 * 1000ull, EPOCH_BYTES,
	EPOCH_BYTES / 3,
};
/* Random pages: zstd tried every batch and never paid. */
static const struct mig_adapt_epoch random_pages = {
	16, 1024, 9 * MS, 2 * MS, EPOCH_BYTES, EPOCH_BYTES,
};

/*
 * A channel whose page costs @ns[rung] (as measured for text in
 * hvbench stream: zstd 3 the cheapest), @send_pct of it writing.
 */
static struct mig_adapt_epoch epoch_on(unsigned rung, const uint32_t *ns,
				       unsigned send_pct)
{
	uint64_t busy = (uint64_t)ns[rung] * 1024;

	return (struct mig_adapt_epoch){
		.batches = 16,
		.pages = 1024,
		.enc_ns = busy * (100 - send_pct) / 100,
		.send_ns = busy * send_pct / 100,
		.tried_bytes = EPOCH_BYTES,
		.tried_out = EPOCH_BYTES / 4,
	};
}

/* Text, measured: ns per page at raw, -5, 1, 3, 6 on one channel. */
static const uint32_t text_ns[MIG_ADAPT_RUNGS] = { 0, 21000, 20000, 12500,
						   56000 };

static void test_starts_at_zstd_level_1(void)
{
	struct mig_adapt_state st = mig_adapt_init();

	CU_ASSERT_EQUAL(mig_adapt_level(st.rung), 1);
	CU_ASSERT_EQUAL(st.epoch, MIG_ADAPT_EPOCH);
	CU_ASSERT_EQUAL(mig_adapt_level(0), 0);
}

static void test_settles_on_the_rung_that_costs_least_per_page(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	unsigned on[MIG_ADAPT_RUNGS] = { 0 };

	for (unsigned i = 0; i < 200; i++) {
		struct mig_adapt_epoch ep = epoch_on(st.rung, text_ns, 20);

		st = mig_adapt(&st, &ep);
		CU_ASSERT(st.rung >= 1 && st.rung < MIG_ADAPT_RUNGS);
		on[st.rung]++;
	}
	/* zstd 3 most of the time; the rest are probes next door. */
	CU_ASSERT_EQUAL(mig_adapt_level(3), 3);
	CU_ASSERT(on[3] > 150);
	CU_ASSERT_EQUAL(on[0], 0u);
}

static void test_probe_that_costs_more_goes_back(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	/* Level 1 cheapest: every probe away from it returns. */
	const uint32_t ns[MIG_ADAPT_RUNGS] = { 0, 30000, 10000, 20000, 60000 };
	unsigned probes = 0;

	for (unsigned i = 0; i < 100; i++) {
		struct mig_adapt_epoch ep = epoch_on(st.rung, ns, 20);
		unsigned from = st.rung;

		st = mig_adapt(&st, &ep);
		if (st.probe_from) {
			probes++;
			CU_ASSERT_EQUAL(st.probe_from, from);
		} else {
			CU_ASSERT_EQUAL(st.rung, MIG_ADAPT_RUNG_START);
		}
	}
	CU_ASSERT(probes >= 100 / (MIG_ADAPT_EXPLORE + 1) - 1);
}

static void test_probe_within_the_margin_goes_back(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	/* Level 3 5% cheaper than level 1: noise, not worth a switch. */
	const uint32_t ns[MIG_ADAPT_RUNGS] = { 0, 30000, 20000, 19000, 60000 };

	for (unsigned i = 0; i < 100; i++) {
		struct mig_adapt_epoch ep = epoch_on(st.rung, ns, 60);

		st = mig_adapt(&st, &ep);
		if (!st.probe_from)
			CU_ASSERT_EQUAL(st.rung, MIG_ADAPT_RUNG_START);
	}
}

static void test_link_bound_probes_stronger_compressor_bound_faster(void)
{
	struct mig_adapt_state st = mig_adapt_init();
	struct mig_adapt_epoch ep;

	for (unsigned i = 0; i < MIG_ADAPT_EXPLORE; i++) {
		ep = epoch_on(st.rung, text_ns, 80);
		st = mig_adapt(&st, &ep);
	}
	CU_ASSERT_EQUAL(st.probe_from, MIG_ADAPT_RUNG_START);
	CU_ASSERT_EQUAL(st.rung, MIG_ADAPT_RUNG_START + 1);

	st = mig_adapt_init();
	for (unsigned i = 0; i < MIG_ADAPT_EXPLORE; i++) {
		ep = epoch_on(st.rung, text_ns, 10);
		st = mig_adapt(&st, &ep);
	}
	CU_ASSERT_EQUAL(st.rung, MIG_ADAPT_RUNG_START - 1);
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
	struct mig_adapt_epoch ep = { .batches = 16, .pages = 1024 };

	n = mig_adapt(&st, &ep);
	CU_ASSERT_EQUAL(n.rung, st.rung);
	CU_ASSERT_EQUAL(n.raw_run, st.raw_run);
	CU_ASSERT_EQUAL(n.epoch, MIG_ADAPT_EPOCH);
}

static CU_TestInfo tests[] = {
	{ "starts_at_zstd_level_1", test_starts_at_zstd_level_1 },
	{ "settles_on_the_rung_that_costs_least_per_page",
	  test_settles_on_the_rung_that_costs_least_per_page },
	{ "probe_that_costs_more_goes_back",
	  test_probe_that_costs_more_goes_back },
	{ "probe_within_the_margin_goes_back",
	  test_probe_within_the_margin_goes_back },
	{ "link_bound_probes_stronger_compressor_bound_faster",
	  test_link_bound_probes_stronger_compressor_bound_faster },
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
