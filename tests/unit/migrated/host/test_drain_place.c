// SPDX-License-Identifier: MIT
/*
 * Where a host drain sends a VM (migrated/host/drain_place.c).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/host/drain_place.h"
#include "tests/harness/hv_test.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static struct migd_drain_host host(const char *id, uint64_t mem,
				   uint64_t used, uint32_t vcpus,
				   uint32_t vused)
{
	struct migd_drain_host h = { .usable = true, .mem_bytes = mem,
				     .mem_used = used, .vcpus = vcpus,
				     .vcpus_used = vused };

	strcpy(h.id, id);
	return h;
}

static void test_most_free_memory_wins(void)
{
	struct migd_drain_host h[] = {
		host("b", 8 * GIB, 3 * GIB, 8, 0),
		host("c", 8 * GIB, 1 * GIB, 8, 6),
		host("d", 4 * GIB, 0, 8, 0),
	};

	/* c has 7 GiB free, b 5, d 4: vCPUs only break ties */
	CU_ASSERT_EQUAL(migd_drain_place(h, 3, 64 * MIB, 1, 1), 1);
}

static void test_ties_go_to_free_vcpus_then_id(void)
{
	struct migd_drain_host h[] = {
		host("c", 8 * GIB, GIB, 8, 2),
		host("b", 8 * GIB, GIB, 8, 2),
		host("a", 8 * GIB, GIB, 8, 4),
	};

	/* a has fewer vCPUs free; b and c tie: the smaller id */
	CU_ASSERT_EQUAL(migd_drain_place(h, 3, 64 * MIB, 1, 1), 1);
	h[0].vcpus_used = 0;
	CU_ASSERT_EQUAL(migd_drain_place(h, 3, 64 * MIB, 1, 1), 0);
}

static void test_spread_follows_what_arrives(void)
{
	struct migd_drain_host h[] = {
		host("b", GIB, 128 * MIB, 4, 1),
		host("c", GIB, 0, 4, 0),
	};
	unsigned on[2] = { 0 };

	/* Four 64 MiB VMs, each counted where it went: c takes the first
	 * two (it had 128 MiB more free), then they alternate. */
	for (int i = 0; i < 4; i++) {
		int k = migd_drain_place(h, 2, 64 * MIB, 1, 1);

		CU_ASSERT_TRUE_FATAL(k >= 0);
		h[k].mem_used += 64 * MIB;
		h[k].vcpus_used += 1;
		on[k]++;
	}
	CU_ASSERT_EQUAL(on[0], 1);
	CU_ASSERT_EQUAL(on[1], 3);
}

static void test_per_host_limit_waits(void)
{
	struct migd_drain_host h[] = {
		host("b", GIB, 0, 4, 0),
		host("c", GIB, 512 * MIB, 4, 0),
	};

	h[0].inflight = 1;
	/* b is the best and busy: wait for it, do not take the worse c */
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 1), -EBUSY);
	/* 0 counts as 1 */
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 0), -EBUSY);
	/* with a limit of 2, b takes a second one at once */
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 2), 0);
	/* once b is worse than c, c (idle) gets it whatever b does */
	h[0].mem_used = 768 * MIB;
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 1), 1);
	h[1].inflight = 1;
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 1), -EBUSY);
}

static void test_no_room_or_no_usable_host(void)
{
	struct migd_drain_host h[] = {
		host("b", GIB, 1000 * MIB, 4, 0),
		host("c", 4 * GIB, 0, 4, 0),
	};

	h[1].usable = false; /* draining, unreachable */
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 1, 1), -ENOSPC);
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 24 * MIB, 1, 1), 0);
	CU_ASSERT_EQUAL(migd_drain_place(h, 0, 24 * MIB, 1, 1), -ENOSPC);
	/* over-committed already (used > registered): never picked */
	h[0].mem_used = 2 * GIB;
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 1, 1, 1), -ENOSPC);
	/* vCPUs do not refuse: overcommit is allowed */
	h[0].mem_used = 0;
	h[0].vcpus_used = 16;
	CU_ASSERT_EQUAL(migd_drain_place(h, 2, 64 * MIB, 8, 1), 0);
}

static CU_TestInfo tests[] = {
	{"most_free_memory_wins", test_most_free_memory_wins},
	{"ties_go_to_free_vcpus_then_id", test_ties_go_to_free_vcpus_then_id},
	{"spread_follows_what_arrives", test_spread_follows_what_arrives},
	{"per_host_limit_waits", test_per_host_limit_waits},
	{"no_room_or_no_usable_host", test_no_room_or_no_usable_host},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/drain_place", NULL, NULL, tests);
