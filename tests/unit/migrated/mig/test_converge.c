// SPDX-License-Identifier: MIT
/* The convergence decision (migrated/mig/converge.c). */
#include "tests/harness/hv_test.h"
#include "migrated/mig/converge.h"

#define MB 1000000.0

static struct mig_conv_in base(void)
{
	return (struct mig_conv_in){
		.remaining_bytes = 100 * 1000 * 1000ULL,
		.bandwidth = 100 * MB,
		.dirty_rate = 10 * MB,
		.downtime_ms = 300,
		.iteration = 1,
	};
}

static void test_no_bandwidth_measured_iterates(void)
{
	struct mig_conv_in in = base();
	struct mig_conv_out o;

	in.bandwidth = 0;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.action, MIG_CONV_ITERATE);
	CU_ASSERT(o.expected_downtime_ms < 0);
}

static void test_switch_exactly_at_the_downtime_limit(void)
{
	struct mig_conv_in in = base();
	struct mig_conv_out o;

	in.remaining_bytes = 30 * 1000 * 1000ULL; /* 300 ms at 100 MB/s */
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.action, MIG_CONV_SWITCHOVER);
	CU_ASSERT_DOUBLE_EQUAL(o.expected_downtime_ms, 300, 1e-9);
	in.remaining_bytes++;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.action, MIG_CONV_ITERATE);
	CU_ASSERT(o.expected_downtime_ms > 300);
}

static void test_zero_downtime_limit_means_default(void)
{
	struct mig_conv_in in = base();

	in.downtime_ms = 0;
	in.remaining_bytes = 30 * 1000 * 1000ULL;
	CU_ASSERT_EQUAL(MIG_CONV_DOWNTIME_MS_DEFAULT, 300);
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_SWITCHOVER);
	in.remaining_bytes = 30 * 1000 * 1000ULL + 1;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_ITERATE);
}

static void test_max_bandwidth_caps_the_estimate(void)
{
	struct mig_conv_in in = base();
	struct mig_conv_out o;

	in.remaining_bytes = 20 * 1000 * 1000ULL; /* 200 ms at 100 MB/s */
	in.max_bandwidth = 50 * MB;		  /* 400 ms at 50 MB/s */
	o = mig_converge(&in);
	CU_ASSERT_NOT_EQUAL(o.action, MIG_CONV_SWITCHOVER);
	CU_ASSERT_DOUBLE_EQUAL(o.expected_downtime_ms, 400, 1e-9);
}

static void test_dirty_rate_at_half_the_link_still_iterates(void)
{
	struct mig_conv_in in = base();

	in.dirty_rate = 50 * MB;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_ITERATE);
	in.dirty_rate = 50 * MB + 1;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_THROTTLE);
}

static void test_throttle_brings_dirty_rate_to_half_the_link(void)
{
	struct mig_conv_in in = base();
	struct mig_conv_out o;

	/* Unthrottled 200 MB/s on a 100 MB/s link: 1 - 50/200 = 75%. */
	in.dirty_rate = 200 * MB;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.action, MIG_CONV_THROTTLE);
	CU_ASSERT_EQUAL(o.throttle_pct, 75);
	/* Already at 50%, measuring 100 MB/s: the same guest, 75% too. */
	in.throttle_pct = 50;
	in.dirty_rate = 100 * MB;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.throttle_pct, 75);
}

static void test_throttle_always_steps_up_and_caps(void)
{
	struct mig_conv_in in = base();
	struct mig_conv_out o;

	/* Barely above the half-link rate: the minimum step applies. */
	in.dirty_rate = 51 * MB;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.throttle_pct, MIG_CONV_THROTTLE_STEP);
	in.throttle_pct = 95;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.throttle_pct, MIG_CONV_THROTTLE_MAX);
	in.throttle_pct = 99;
	in.dirty_rate = 1000 * MB;
	o = mig_converge(&in);
	CU_ASSERT_EQUAL(o.action, MIG_CONV_THROTTLE);
	CU_ASSERT_EQUAL(o.throttle_pct, MIG_CONV_THROTTLE_MAX);
}

static void test_iterations_exhausted_throttle_even_a_slow_guest(void)
{
	struct mig_conv_in in = base();

	in.max_iterations = 5;
	in.iteration = 4;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_ITERATE);
	in.iteration = 5;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_THROTTLE);
	in.max_iterations = 0; /* the default */
	in.iteration = MIG_CONV_MAX_ITERATIONS_DEFAULT;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_THROTTLE);
}

static void test_nothing_remaining_switches_over(void)
{
	struct mig_conv_in in = base();

	in.remaining_bytes = 0;
	in.dirty_rate = 1e12;
	CU_ASSERT_EQUAL(mig_converge(&in).action, MIG_CONV_SWITCHOVER);
}

static CU_TestInfo tests[] = {
	{ "no_bandwidth_measured_iterates",
	  test_no_bandwidth_measured_iterates },
	{ "switch_exactly_at_the_downtime_limit",
	  test_switch_exactly_at_the_downtime_limit },
	{ "zero_downtime_limit_means_default",
	  test_zero_downtime_limit_means_default },
	{ "max_bandwidth_caps_the_estimate",
	  test_max_bandwidth_caps_the_estimate },
	{ "dirty_rate_at_half_the_link_still_iterates",
	  test_dirty_rate_at_half_the_link_still_iterates },
	{ "throttle_brings_dirty_rate_to_half_the_link",
	  test_throttle_brings_dirty_rate_to_half_the_link },
	{ "throttle_always_steps_up_and_caps",
	  test_throttle_always_steps_up_and_caps },
	{ "iterations_exhausted_throttle_even_a_slow_guest",
	  test_iterations_exhausted_throttle_even_a_slow_guest },
	{ "nothing_remaining_switches_over",
	  test_nothing_remaining_switches_over },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/converge", NULL, NULL, tests);
