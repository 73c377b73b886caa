// SPDX-License-Identifier: MIT
/*
 * The precopy engine end to end on loopback with TLS (migrated/mig/
 * source.c, dest.c): a real VM migrates to a fresh destination; the
 * memory the source had at switchover and the memory the destination
 * loaded are compared page by page, the guest's stamps checked, and the
 * guest must keep running on the destination.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void check_migration(enum hv_accel_kind accel, uint32_t nr,
			    uint64_t rate, const char *what)
{
	struct su_run r = { 0 };
	uint64_t wall_ns;
	struct hv_vm *vm;
	uint64_t stamped = 0;
	bool skip;

	vm = su_vm(accel, nr, rate, &skip);
	if (skip) {
		hv_test_skip(what, "accelerator not available");
		return;
	}
	wall_ns = mono_ns();
	su_migrate(vm, &r);
	wall_ns = mono_ns() - wall_ns;
	su_print(what, &r);
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT_EQUAL(r.dst_ret, 0);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_EQUAL(r.dst_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_STOPPED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.dst_vm);
	/* Nothing lost: every page as the source had it when paused. */
	CU_ASSERT_EQUAL(su_compare(&r), 0);
	if (r.dst_snap) {
		CU_ASSERT(su_stamps_ok(r.dst_snap, &vm->cfg, &stamped));
		if (rate != UINT64_MAX)
			CU_ASSERT(stamped > 0);
	}
	/* The guest goes on where it stopped, on the destination. */
	CU_ASSERT(su_vm_progresses(r.dst_vm, 2000));
	if (rate != UINT64_MAX && r.src_snap) {
		const struct hv_wl_status *st =
			(const struct hv_wl_status *)(r.src_snap +
						      HV_WL_STATUS_GPA);

		for (uint32_t i = 0; i < nr; i++)
			CU_ASSERT(hv_vm_wl_status(r.dst_vm, i)->seq >
				  st[i].seq);
	}
	/* The reported downtime against two clocks of its own: the test's
	 * (the whole migration took longer than its downtime) and the
	 * guest's heartbeats, whose largest gap spans at least the parts in
	 * which no vCPU can run on either side (from the final harvest to
	 * the destination's load) -- a part that is misreported, or a
	 * heartbeat gap that is not measured, fails here. */
	{
		const struct mig_downtime *d = &r.src_final.downtime;
		uint64_t stopped = d->final_harvest_ns + d->final_send_ns +
				   d->state_ns + d->digest_ns + d->load_ns;

		printf("    wall %.1f ms, downtime %.1f ms, stopped parts "
		       "%.1f ms, guest saw %.1f ms\n",
		       wall_ns / 1e6, d->total_ns / 1e6, stopped / 1e6,
		       r.src_final.guest_downtime_ns / 1e6);
		CU_ASSERT(d->total_ns > 0 && d->total_ns < wall_ns);
		CU_ASSERT(stopped > 0);
		CU_ASSERT(r.src_final.guest_downtime_ns >= stopped);
		CU_ASSERT(r.src_final.guest_downtime_ns < wall_ns);
		/* Every page went on the wire or was a hole of the source's
		 * memfd (never written: zeros on both sides). */
		CU_ASSERT(r.src_final.pages_sent + r.src_final.pages_hole >=
			  SU_MEM / HV_PAGE_SIZE);
		/* The post-commit check re-hashed all of the frozen source
		 * memory against the table the destination matched. */
		CU_ASSERT_EQUAL(r.src_final.verify_pages,
				SU_MEM / HV_PAGE_SIZE);
		CU_ASSERT_EQUAL(r.src_final.verify_mismatches, 0);
		CU_ASSERT(r.src_final.bytes_wire > 0);
		CU_ASSERT(r.phases_seen[MIG_PHASE_ITERATE]);
		CU_ASSERT(r.phases_seen[MIG_PHASE_SWITCHOVER]);
		CU_ASSERT(r.phases_seen[MIG_PHASE_COMPLETED]);
	}
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_kvm_idle_guest_arrives_page_identical_and_runs(void)
{
	HV_TEST_REQUIRE_KVM();
	check_migration(HV_ACCEL_KVM, 1, UINT64_MAX, "kvm idle");
}

static void test_kvm_dirtying_guest_loses_no_write(void)
{
	HV_TEST_REQUIRE_KVM();
	/* Two vCPUs at 5000 pages/s each: ~40 MB/s of dirtying. */
	check_migration(HV_ACCEL_KVM, 2, 5000, "kvm dirtying");
}

static void test_soft_dirtying_guest_loses_no_write(void)
{
	check_migration(HV_ACCEL_SOFT, 2, 5000, "soft dirtying");
}

static CU_TestInfo tests[] = {
	{ "soft_dirtying_guest_loses_no_write",
	  test_soft_dirtying_guest_loses_no_write },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/session", su_init, su_clean, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "kvm_idle_guest_arrives_page_identical_and_runs",
	  test_kvm_idle_guest_arrives_page_identical_and_runs },
	{ "kvm_dirtying_guest_loses_no_write",
	  test_kvm_dirtying_guest_loses_no_write },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("migrated/mig/session/kvm", su_init, su_clean, kvm_tests);
