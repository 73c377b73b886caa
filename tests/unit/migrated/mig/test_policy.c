// SPDX-License-Identifier: MIT
/* The switch policy: postcopy auto and the time limit's policy
 * (migrated/mig/policy.c). Model figures in, decision out. */
#include <errno.h>

#include "tests/harness/hv_test.h"
#include "migrated/mig/policy.h"

#define MB 1000000.0

/* 100 MB left at 10 MB/s: 10 s of downtime, far over 300 ms. */
static struct mig_pc_auto_in base(void)
{
	return (struct mig_pc_auto_in){
		.remaining_bytes = 100 * 1000 * 1000ULL,
		.bandwidth = 10 * MB,
		.dirty_rate = 40 * MB,
		.downtime_ms = 300,
		.pc_offered = true,
	};
}

static void test_guest_outruns_the_link_switches(void)
{
	struct mig_pc_auto_in in = base();
	struct mig_pc_auto_out o = mig_pc_auto(&in);

	/* 40 MB/s down to 5 MB/s: 87.5% -> 88 > 50. */
	CU_ASSERT_TRUE(o.do_switch);
	CU_ASSERT_EQUAL(o.needed_pct, 88);
	CU_ASSERT_EQUAL(o.limit_pct, MIG_PC_THROTTLE_LIMIT_DEFAULT);
	CU_ASSERT_DOUBLE_EQUAL(o.expected_downtime_ms, 10000, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(o.unthrottled_rate, 40 * MB, 1e-6);
}

static void test_not_offered_never_switches(void)
{
	struct mig_pc_auto_in in = base();
	struct mig_pc_auto_out o;

	in.pc_offered = false;
	o = mig_pc_auto(&in);
	CU_ASSERT_FALSE(o.do_switch);
	CU_ASSERT_EQUAL(o.needed_pct, 88); /* the figures are still there */
}

static void test_no_bandwidth_keeps_precopy(void)
{
	struct mig_pc_auto_in in = base();
	struct mig_pc_auto_out o;

	in.bandwidth = 0;
	o = mig_pc_auto(&in);
	CU_ASSERT_FALSE(o.do_switch);
	CU_ASSERT(o.expected_downtime_ms < 0);
}

static void test_within_the_downtime_keeps_precopy(void)
{
	struct mig_pc_auto_in in = base();

	in.remaining_bytes = 3 * 1000 * 1000ULL; /* 300 ms at 10 MB/s */
	CU_ASSERT_FALSE(mig_pc_auto(&in).do_switch);
	in.remaining_bytes++;
	CU_ASSERT_TRUE(mig_pc_auto(&in).do_switch);
}

static void test_idle_guest_converges_unthrottled(void)
{
	struct mig_pc_auto_in in = base();
	struct mig_pc_auto_out o;

	in.dirty_rate = 0;
	o = mig_pc_auto(&in);
	CU_ASSERT_FALSE(o.do_switch);
	CU_ASSERT_EQUAL(o.needed_pct, 0);
	in.dirty_rate = 5 * MB; /* exactly half the link: halves each pass */
	o = mig_pc_auto(&in);
	CU_ASSERT_FALSE(o.do_switch);
	CU_ASSERT_EQUAL(o.needed_pct, 0);
}

static void test_limit_is_the_boundary(void)
{
	struct mig_pc_auto_in in = base();

	in.dirty_rate = 10 * MB; /* needs exactly 50% */
	CU_ASSERT_EQUAL(mig_pc_auto(&in).needed_pct, 50);
	CU_ASSERT_FALSE(mig_pc_auto(&in).do_switch);
	in.throttle_limit_pct = 49;
	CU_ASSERT_TRUE(mig_pc_auto(&in).do_switch);
	CU_ASSERT_EQUAL(mig_pc_auto(&in).limit_pct, 49);
	in.throttle_limit_pct = 95;
	in.dirty_rate = 40 * MB;
	CU_ASSERT_FALSE(mig_pc_auto(&in).do_switch);
}

static void test_throttle_in_force_counts_unthrottled(void)
{
	struct mig_pc_auto_in in = base();
	struct mig_pc_auto_out o;

	/* 8 MB/s measured under a 60% throttle: 20 MB/s unthrottled, so
	 * precopy needs 75%, not the 38% the throttled figure suggests. */
	in.dirty_rate = 8 * MB;
	in.throttle_pct = 60;
	o = mig_pc_auto(&in);
	CU_ASSERT_DOUBLE_EQUAL(o.unthrottled_rate, 20 * MB, 1e-3);
	CU_ASSERT_EQUAL(o.needed_pct, 75);
	CU_ASSERT_TRUE(o.do_switch);
}

static void test_timeout_actions(void)
{
	enum mig_timeout_policy p;

	CU_ASSERT_EQUAL(mig_timeout_action(MIG_TIMEOUT_ABORT, true),
			MIG_TOA_ABORT);
	CU_ASSERT_EQUAL(mig_timeout_action(MIG_TIMEOUT_SWITCHOVER, false),
			MIG_TOA_SWITCHOVER);
	CU_ASSERT_EQUAL(mig_timeout_action(MIG_TIMEOUT_POSTCOPY, true),
			MIG_TOA_POSTCOPY);
	CU_ASSERT_EQUAL(mig_timeout_action(MIG_TIMEOUT_POSTCOPY, false),
			MIG_TOA_ABORT_NO_POSTCOPY);
	CU_ASSERT_EQUAL(mig_timeout_action((enum mig_timeout_policy)7, true),
			MIG_TOA_ABORT);
	for (unsigned i = 0; i < MIG_TIMEOUT_POLICY_COUNT; i++) {
		CU_ASSERT_EQUAL(mig_timeout_policy_parse(
					mig_timeout_policy_name(
						(enum mig_timeout_policy)i),
					&p),
				0);
		CU_ASSERT_EQUAL(p, i);
	}
	CU_ASSERT_EQUAL(mig_timeout_policy_parse("suspend", &p), -EINVAL);
	CU_ASSERT_EQUAL(mig_timeout_policy_parse(NULL, &p), -EINVAL);
	CU_ASSERT_STRING_EQUAL(
		mig_timeout_policy_name((enum mig_timeout_policy)9),
		"invalid");
}

static CU_TestInfo tests[] = {
	{ "guest_outruns_the_link_switches",
	  test_guest_outruns_the_link_switches },
	{ "not_offered_never_switches", test_not_offered_never_switches },
	{ "no_bandwidth_keeps_precopy", test_no_bandwidth_keeps_precopy },
	{ "within_the_downtime_keeps_precopy",
	  test_within_the_downtime_keeps_precopy },
	{ "idle_guest_converges_unthrottled",
	  test_idle_guest_converges_unthrottled },
	{ "limit_is_the_boundary", test_limit_is_the_boundary },
	{ "throttle_in_force_counts_unthrottled",
	  test_throttle_in_force_counts_unthrottled },
	{ "timeout_actions", test_timeout_actions },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/policy", NULL, NULL, tests);
