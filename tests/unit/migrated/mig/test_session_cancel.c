// SPDX-License-Identifier: MIT
/*
 * A cancel on one side reaches the other as "cancelled by the peer", not
 * as a broken pipe or a protocol error (source.c, dest.c, handshake.c
 * mig_peer_reason(), conn.c mig_conn_interrupt()). Real engines on
 * loopback, a bandwidth cap so that the cancel lands mid-iteration.
 */
#include <errno.h>
#include <string.h>

#include "hvcore/workload.h"
#include "migrated/mig/handshake.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

static void cancel_run(bool at_source)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = su_vm_content(HV_ACCEL_KVM, 1, 0, HV_WL_CONTENT_RANDOM, &skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 4 << 20;
	r.cancel_src = at_source;
	r.destroy_dst = !at_source;
	r.act_after_ms = 400;
	su_migrate(vm, &r);
	su_print(at_source ? "source cancels" : "destination cancels", &r);
	CU_ASSERT_EQUAL(r.src_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.dst_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_CANCELLED);
	CU_ASSERT_EQUAL(r.dst_final.phase, MIG_PHASE_CANCELLED);
	/* The side that did not cancel names the peer as the cause. */
	CU_ASSERT_PTR_NOT_NULL(strstr(at_source ? r.dst_final.message
						: r.src_final.message,
				      MIG_PEER_CANCELLED));
	CU_ASSERT_PTR_NULL(r.dst_vm);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_source_cancel_reads_as_cancelled_by_the_peer(void)
{
	cancel_run(true);
}

static void test_destination_cancel_reads_as_cancelled_by_the_peer(void)
{
	cancel_run(false);
}

static CU_TestInfo tests[] = {
	{ "source_cancel_reads_as_cancelled_by_the_peer",
	  test_source_cancel_reads_as_cancelled_by_the_peer },
	{ "destination_cancel_reads_as_cancelled_by_the_peer",
	  test_destination_cancel_reads_as_cancelled_by_the_peer },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session_cancel", su_init, su_clean, tests);
