// SPDX-License-Identifier: MIT
/*
 * Failure semantics of the precopy engine between real peers, and
 * convergence under a bandwidth cap (migrated/mig/source.c, dest.c,
 * throttle.c): until the destination acknowledged, a failure leaves the
 * VM running on the source, logging off and unthrottled, and the
 * destination holds no VM.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrated/mig/throttle.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

/* A guest that outruns a 4 MB/s cap: random pages, flat out. */
static struct hv_vm *busy_vm(bool *skip)
{
	return su_vm_content(HV_ACCEL_KVM, 1, 0, HV_WL_CONTENT_RANDOM, skip);
}

static void check_source_intact(struct hv_vm *vm, const struct su_run *r)
{
	struct hv_wl_vcpu_params p;

	CU_ASSERT(r->src_ret < 0);
	CU_ASSERT(r->src_final.phase == MIG_PHASE_FAILED ||
		  r->src_final.phase == MIG_PHASE_CANCELLED);
	CU_ASSERT(r->src_final.message[0] != 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_RUNNING);
	CU_ASSERT(su_vm_progresses(vm, 2000));
	CU_ASSERT(su_logging_off(vm));
	/* No throttle left behind. */
	hv_vm_read_guest(vm, HV_WL_PARAMS_GPA +
			 offsetof(struct hv_wl_params, vcpu), &p, sizeof(p));
	CU_ASSERT_EQUAL(p.throttle_pct, 0);
	/* su_migrate() checked that the failed wait kept no VM. */
	CU_ASSERT(r->dst_ret < 0);
}

static void test_cancel_during_iteration_keeps_vm_on_source(void)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = busy_vm(&skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 4 << 20;
	r.cancel_src = true;
	r.act_after_ms = 400;
	su_migrate(vm, &r);
	su_print("cancel", &r);
	CU_ASSERT_EQUAL(r.src_ret, -ECANCELED);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_CANCELLED);
	check_source_intact(vm, &r);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_destination_gone_mid_iteration_keeps_vm_on_source(void)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	uint64_t t0;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = busy_vm(&skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 4 << 20;
	r.destroy_dst = true;
	r.act_after_ms = 400;
	t0 = (uint64_t)time(NULL);
	su_migrate(vm, &r);
	su_print("destination destroyed", &r);
	check_source_intact(vm, &r);
	/* Found out at once, not after a timeout. */
	CU_ASSERT((uint64_t)time(NULL) - t0 < 4);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_timeout_fails_cleanly_when_guest_cannot_converge(void)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	vm = busy_vm(&skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 4 << 20;
	r.src_opts.timeout_ms = 1500;
	r.src_opts.throttle_max_pct = 20; /* never enough */
	su_migrate(vm, &r);
	su_print("no convergence", &r);
	CU_ASSERT_EQUAL(r.src_ret, -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.src_final.message,
				      "could not converge"));
	check_source_intact(vm, &r);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_guest_outrunning_the_cap_converges_by_throttling(void)
{
	struct su_run r = { 0 };
	struct hv_vm *vm;
	bool skip;

	HV_TEST_REQUIRE_KVM();
	/* 20000 text pages/s (~80 MB/s, ~27 MB/s compressed) vs 8 MB/s. */
	vm = su_vm_content(HV_ACCEL_KVM, 1, 20000, HV_WL_CONTENT_TEXT, &skip);
	CU_ASSERT_FATAL(!skip);
	su_opts(&r.src_opts, false);
	r.src_opts.max_bandwidth = 8 << 20;
	/* 100 ms, not the default 300: in a release build the first pass
	 * (only the written pages; holes are skipped) is short enough that
	 * what the guest dirtied meanwhile fits 300 ms at 8 MB/s, and the
	 * engine rightly switched over without throttling -- the guest did
	 * not outrun the cap. At 100 ms (~880 compressed pages) it does. */
	r.src_opts.downtime_ms = 100;
	r.src_opts.timeout_ms = 25000;
	/* At its full rate before the migration starts: a guest still
	 * starting up dirties too little to need a throttle. */
	CU_ASSERT_FATAL(su_vm_progresses(vm, 5000));
	usleep(300000);
	su_migrate(vm, &r);
	su_print("throttled", &r);
	/* The throttle reaches the guest (test_throttle.c), so the guest
	 * falls below the cap well within the timeout: a timeout here is a
	 * failure, not an outcome the contract allows. */
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT(r.max_throttle > 0);
	CU_ASSERT_EQUAL(su_compare(&r), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.dst_vm);
	/* 10 s: a batch interrupted by the switchover may finish its
	 * throttle wait first, and that wait grows with the downtime
	 * (hvcore/workload.c computes it from the batch's TSC span). */
	CU_ASSERT(su_vm_progresses(r.dst_vm, 10000));
	/* The destination does not inherit the throttle. */
	{
		struct hv_wl_vcpu_params p;

		hv_vm_read_guest(r.dst_vm,
				 HV_WL_PARAMS_GPA +
					 offsetof(struct hv_wl_params, vcpu),
				 &p, sizeof(p));
		CU_ASSERT_EQUAL(p.throttle_pct, 0);
	}
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_throttle_spread_slows_the_heaviest_writers_most(void)
{
	const double rates[4] = { 1000, 500, 10, 0 };
	const double none[2] = { 0, 0 };
	uint32_t out[4];

	mig_throttle_spread(rates, 4, 60, out);
	CU_ASSERT_EQUAL(out[0], 60);
	CU_ASSERT_EQUAL(out[1], 30);
	CU_ASSERT_EQUAL(out[2], 0); /* below 5% of the heaviest */
	CU_ASSERT_EQUAL(out[3], 0);
	mig_throttle_spread(none, 2, 40, out);
	CU_ASSERT_EQUAL(out[0], 40);
	CU_ASSERT_EQUAL(out[1], 40);
}

static CU_TestInfo tests[] = {
	{ "throttle_spread_slows_the_heaviest_writers_most",
	  test_throttle_spread_slows_the_heaviest_writers_most },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session_fail", su_init, su_clean, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "cancel_during_iteration_keeps_vm_on_source",
	  test_cancel_during_iteration_keeps_vm_on_source },
	{ "destination_gone_mid_iteration_keeps_vm_on_source",
	  test_destination_gone_mid_iteration_keeps_vm_on_source },
	{ "timeout_fails_cleanly_when_guest_cannot_converge",
	  test_timeout_fails_cleanly_when_guest_cannot_converge },
	{ "guest_outrunning_the_cap_converges_by_throttling",
	  test_guest_outrunning_the_cap_converges_by_throttling },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("migrated/mig/session_fail/kvm", su_init, su_clean, kvm_tests);
