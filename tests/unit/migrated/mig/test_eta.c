// SPDX-License-Identifier: MIT
/* The progress estimate: percent and the smoothed ETA
 * (migrated/mig/eta.c). */
#include <stdlib.h>

#include "tests/harness/hv_test.h"
#include "migrated/mig/eta.h"

#define S 1000000000ull
#define MB 1000000.0

static void test_percent_never_decreases(void)
{
	struct mig_eta e;

	mig_eta_init(&e, 1000);
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 1000), 0);
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 2000), 0);
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 400), 60);
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 900), 60); /* re-dirtied */
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 0), 99);   /* 100: completed */
	mig_eta_init(&e, 0);
	CU_ASSERT_EQUAL(mig_eta_percent(&e, 0), 99);
}

static void test_raw_estimate(void)
{
	/* 100 MB at 10 MB/s, guest 5 MB/s: the passes take 20 s. */
	CU_ASSERT_EQUAL(mig_eta_raw_ns(100000000, 10 * MB, 5 * MB, false, 0),
			20 * S);
	/* Plus the expected downtime. */
	CU_ASSERT_EQUAL(mig_eta_raw_ns(100000000, 10 * MB, 5 * MB, false,
				       S / 2),
			20 * S + S / 2);
	/* A throttle that can still rise holds the guest at half. */
	CU_ASSERT_EQUAL(mig_eta_raw_ns(100000000, 10 * MB, 30 * MB, true, 0),
			20 * S);
	/* At the ceiling, a guest at the link's speed never converges. */
	CU_ASSERT_EQUAL(mig_eta_raw_ns(100000000, 10 * MB, 10 * MB, false, 0),
			0);
	CU_ASSERT_EQUAL(mig_eta_raw_ns(100000000, 0, 0, true, 0), 0);
}

static void test_counts_down_with_a_steady_estimate(void)
{
	struct mig_eta e;

	mig_eta_init(&e, 1);
	CU_ASSERT_EQUAL(mig_eta_update(&e, 0, 10 * S), 10 * S);
	/* One second later the truth is 9 s: shown 9 s. */
	CU_ASSERT_EQUAL(mig_eta_update(&e, S, 9 * S), 9 * S);
	/* A lower figure is followed a quarter of the way. */
	CU_ASSERT_EQUAL(mig_eta_update(&e, 2 * S, 4 * S), 7 * S);
	CU_ASSERT_EQUAL(mig_eta_update(&e, 2 * S, 0), 0); /* unknown */
}

static void test_rise_is_bounded(void)
{
	struct mig_eta e;
	uint64_t v;

	mig_eta_init(&e, 1);
	mig_eta_update(&e, 0, 10 * S);
	/* The raw estimate jumps to 1000 s a second later: the ETA may
	 * rise by half a second at most. */
	v = mig_eta_update(&e, S, 1000 * S);
	CU_ASSERT_EQUAL(v, 10 * S + S / 2);
	/* Across an unknown stretch the bound holds from the last known
	 * value: 4 s later at most +2 s. */
	CU_ASSERT_EQUAL(mig_eta_update(&e, 3 * S, 0), 0);
	v = mig_eta_update(&e, 5 * S, 1000 * S);
	CU_ASSERT_EQUAL(v, 10 * S + S / 2 + 2 * S);
}

/* Issue 25: the bar advanced and the time left grew. With progress
 * between two values the ETA counts down or falls, whatever the raw
 * estimate says; only a stalled percentage lets it slip. */
static void test_no_rise_while_progress_rises(void)
{
	struct mig_eta e;
	uint64_t prev, v, now = 0;

	mig_eta_init(&e, 1000);
	mig_eta_percent(&e, 1000);
	prev = mig_eta_update(&e, now, 10 * S);
	for (uint64_t left = 900; left >= 100; left -= 100) {
		now += S / 4;
		mig_eta_percent(&e, left);
		/* a raw estimate that keeps growing */
		v = mig_eta_update(&e, now, (20 + 1000 - left) * S);
		CU_ASSERT(v <= prev);
		prev = v;
	}
	/* Updates more often than the percentage moves: still no rise
	 * within MIG_ETA_STALL_NS of the last move. */
	now += S / 4;
	v = mig_eta_update(&e, now, 1000 * S);
	CU_ASSERT(v <= prev);
	prev = v;
	/* Stalled: it may slip again, bounded. */
	now += S;
	v = mig_eta_update(&e, now, 1000 * S);
	CU_ASSERT(v > prev);
	CU_ASSERT(v <= prev + S / MIG_ETA_RISE_DIV);
}

static void test_random_walk_respects_the_bound(void)
{
	struct mig_eta e;
	uint64_t now = 0, prev = 0, prev_t = 0;

	srand(7);
	mig_eta_init(&e, 1);
	for (int i = 0; i < 20000; i++) {
		uint64_t raw = rand() % 5 ? (uint64_t)(rand() % 600) * S / 10
					  : 0;
		uint64_t v;

		now += (uint64_t)(rand() % 300) * 1000000ull;
		v = mig_eta_update(&e, now, raw);
		if (!raw) {
			CU_ASSERT_EQUAL(v, 0);
			continue;
		}
		CU_ASSERT(v >= 1);
		if (prev)
			CU_ASSERT(v <= prev + (now - prev_t) /
						      MIG_ETA_RISE_DIV);
		prev = v;
		prev_t = now;
	}
}

static CU_TestInfo tests[] = {
	{ "percent_never_decreases", test_percent_never_decreases },
	{ "raw_estimate", test_raw_estimate },
	{ "counts_down_with_a_steady_estimate",
	  test_counts_down_with_a_steady_estimate },
	{ "rise_is_bounded", test_rise_is_bounded },
	{ "no_rise_while_progress_rises", test_no_rise_while_progress_rises },
	{ "random_walk_respects_the_bound",
	  test_random_walk_respects_the_bound },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/eta", NULL, NULL, tests);
