// SPDX-License-Identifier: MIT
/* Fault points (migrated/mig/faultpoint.c): the spec grammar and what
 * each action makes mig_faultpoint() return. */
#include <errno.h>
#include <time.h>

#include "tests/harness/hv_test.h"
#include "migrated/mig/faultpoint.h"

static int cleanup(void)
{
	return mig_faultpoints_set(NULL);
}

static void test_unarmed_point_goes_on(void)
{
	CU_ASSERT_EQUAL(mig_faultpoints_set(NULL), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_COMMIT_SEND), 0);
	CU_ASSERT_EQUAL(mig_faultpoints_set("dst.ack.send=drop"), 0);
	/* Another point than the armed one is untouched. */
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_COMMIT_SEND), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_DST_ACK_SEND), MIG_FAULT_DROP);
}

static void test_nth_hit_fires_once(void)
{
	CU_ASSERT_EQUAL(mig_faultpoints_set("src.iter@3=fail"), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), -EIO);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), 0);
	/* Setting again resets the count. */
	CU_ASSERT_EQUAL(mig_faultpoints_set("src.iter@1=fail"), 0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), -EIO);
}

static void test_several_points_and_sleep(void)
{
	struct timespec a, b;
	long ms;

	CU_ASSERT_EQUAL(mig_faultpoints_set("dst.commit=fail,"
					    "src.acked=sleep:60"),
			0);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_DST_COMMIT), -EIO);
	clock_gettime(CLOCK_MONOTONIC, &a);
	CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ACKED), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	CU_ASSERT(ms >= 59);
}

static void test_bad_spec_arms_nothing(void)
{
	static const char *const bad[] = {
		"src.iter",	       /* no action */
		"src.iter=explode",    /* unknown action */
		"src.iter=sleep",      /* sleep needs MS */
		"src.iter=fail:3",     /* fail takes none */
		"src.iter@0=fail",     /* hits are 1-based */
		"src.iter@x=fail",
		"=fail",
		"src.iter=sleep:",
		"src.iter=fail,,",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(mig_faultpoints_set(bad[i]), -EINVAL);
		CU_ASSERT_EQUAL(mig_faultpoint(MIG_FP_SRC_ITER), 0);
	}
}

static CU_TestInfo tests[] = {
	{ "unarmed_point_goes_on", test_unarmed_point_goes_on },
	{ "nth_hit_fires_once", test_nth_hit_fires_once },
	{ "several_points_and_sleep", test_several_points_and_sleep },
	{ "bad_spec_arms_nothing", test_bad_spec_arms_nothing },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/faultpoint", NULL, cleanup, tests);
