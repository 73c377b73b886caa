// SPDX-License-Identifier: MIT
/*
 * migd_estimate: the precopy convergence model over synthetic dirty-rate
 * snapshots (no hypervisor).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "migrated/vmm/estimate.h"
#include "tests/harness/hv_test.h"

#define MIB (1024.0 * 1024.0)
#define PG 4096.0

/* A snapshot of a guest dirtying @rate bytes/s whose working set
 * saturates at @ws bytes. */
static void snap(struct hv_dirtyrate_snap *s, double rate, double ws)
{
	static const double t[3] = {1, 10, 60};

	memset(s, 0, sizeof(*s));
	s->interval_ms = 200;
	s->samples = 300;
	s->hist_seconds = 10;
	for (int w = 0; w < 3; w++) {
		s->win[w].seconds = (uint32_t)t[w];
		s->win[w].covered_s = t[w];
		s->win[w].bytes_per_s = rate;
		s->win[w].pages_per_s = rate / PG;
		s->win[w].working_set = (uint64_t)(fmin(rate * t[w], ws) / PG);
	}
}

static void test_dirty_curve_passes_its_knots_and_saturates(void)
{
	struct hv_dirtyrate_snap s;

	snap(&s, 100 * MIB, 300 * MIB);
	CU_ASSERT_DOUBLE_EQUAL(migd_est_dirty_bytes(&s, 0), 0, 1);
	CU_ASSERT_DOUBLE_EQUAL(migd_est_dirty_bytes(&s, 0.2), 20 * MIB, PG);
	CU_ASSERT_DOUBLE_EQUAL(migd_est_dirty_bytes(&s, 1), 100 * MIB, PG);
	CU_ASSERT_DOUBLE_EQUAL(migd_est_dirty_bytes(&s, 10), 300 * MIB, PG);
	CU_ASSERT_DOUBLE_EQUAL(migd_est_dirty_bytes(&s, 600), 300 * MIB, PG);
	/* Monotone between knots. */
	for (double t = 0; t < 70; t += 0.37)
		CU_ASSERT(migd_est_dirty_bytes(&s, t + 0.37) >=
			  migd_est_dirty_bytes(&s, t));
}

static void test_idle_guest_converges_after_one_pass(void)
{
	struct hv_dirtyrate_snap s;
	struct migd_est e;
	struct migd_est_in in = {.mem_bytes = 1ull << 30,
				 .bandwidth = 100 << 20};

	snap(&s, 0, 0);
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), 0);
	CU_ASSERT(e.converges && e.converges_unthrottled);
	CU_ASSERT_EQUAL(e.iterations, 1);
	CU_ASSERT_EQUAL(e.throttle_pct, 0);
	CU_ASSERT_DOUBLE_EQUAL(e.total_s, 10.24, 0.01); /* 1 GiB / 100 MiB/s */
}

static void test_small_hot_set_converges_without_throttle(void)
{
	struct hv_dirtyrate_snap s;
	struct migd_est e;
	struct migd_est_in in = {.mem_bytes = 1ull << 30,
				 .bandwidth = 1ull << 30,
				 .downtime_ms = 300};

	/* 2 GiB/s of writes into a 64 MiB hot set: faster than the link,
	 * but the set is sent in 62 ms. */
	snap(&s, 2048 * MIB, 64 * MIB);
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), 0);
	CU_ASSERT(e.converges_unthrottled);
	CU_ASSERT(e.expected_downtime_ms <= 300);
	CU_ASSERT_EQUAL(e.throttle_pct, 0);
}

static void test_guest_faster_than_link_needs_throttle(void)
{
	struct hv_dirtyrate_snap s;
	struct migd_est e;
	struct migd_est_in in = {.mem_bytes = 1ull << 30,
				 .bandwidth = 50 << 20,
				 .downtime_ms = 100};

	/* 200 MiB/s over all of RAM: never converges on its own. */
	snap(&s, 200 * MIB, 1024 * MIB);
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), 0);
	CU_ASSERT_FALSE(e.converges_unthrottled);
	CU_ASSERT(e.converges);
	CU_ASSERT(e.throttle_pct > 50);
	/* A ceiling too low to help: no convergence at all. */
	in.throttle_max_pct = 10;
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), 0);
	CU_ASSERT_FALSE(e.converges);
	CU_ASSERT(e.nr_steps <= MIGD_EST_STEPS_MAX);
}

static void test_estimate_refuses_missing_inputs(void)
{
	struct hv_dirtyrate_snap s;
	struct migd_est e;
	struct migd_est_in in = {.mem_bytes = 1ull << 30};

	snap(&s, 0, 0);
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), -EINVAL);
	in.bandwidth = 1;
	in.mem_bytes = 0;
	CU_ASSERT_EQUAL(migd_estimate(&s, &in, &e), -EINVAL);
}

static CU_TestInfo tests[] = {
	{"dirty_curve_passes_its_knots_and_saturates",
	 test_dirty_curve_passes_its_knots_and_saturates},
	{"idle_guest_converges_after_one_pass",
	 test_idle_guest_converges_after_one_pass},
	{"small_hot_set_converges_without_throttle",
	 test_small_hot_set_converges_without_throttle},
	{"guest_faster_than_link_needs_throttle",
	 test_guest_faster_than_link_needs_throttle},
	{"estimate_refuses_missing_inputs",
	 test_estimate_refuses_missing_inputs},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/vmm/estimate", NULL, NULL, tests);
