// SPDX-License-Identifier: MIT
/*
 * Postcopy through the engine (migrated/mig/source_postcopy.c,
 * dest_postcopy.c): a soft guest writing random pages flat out, switched
 * to postcopy after its first pass, arrives with every page: the
 * destination's digest of the pages it installed matches the source's
 * frozen copy, the page stamps check clean, and the guest runs on.
 */
#include "tests/harness/hv_test.h"
#include "tests/unit/migrated/mig/session_util.h"

#include "hvcore/vcpu.h"
#include "hvcore/wl_verify.h"
#include "hvcore/guest_mem.h"

static void run_postcopy(enum hv_mem_backing backing, const char *what)
{
	struct su_run r = { 0 };
	struct hv_wl_verify v;
	struct hv_vm *vm;
	bool skip;

	(void)backing;
	vm = su_vm_content(HV_ACCEL_SOFT, 2, 0, HV_WL_CONTENT_RANDOM, &skip);
	if (skip) {
		hv_test_skip(what, "soft accelerator not available");
		return;
	}
	su_opts(&r.src_opts, false);
	su_opts(&r.dst_opts, true);
	/* Under TSan a data channel was once seen idle for the default
	 * 10 s during the push (the other channel carried it); 30 s keeps
	 * the test about postcopy, not about TSan's pace. */
	r.src_opts.io_timeout_ms = 30000;
	r.dst_opts.io_timeout_ms = 30000;
	r.src_opts.postcopy = true;
	r.src_opts.postcopy_after_ms = 0; /* after the first pass */
	/* A 1 ms downtime limit: the first pass never ends in a precopy
	 * switchover (a fresh guest's first pass can be small enough to
	 * converge at once, and convergence is checked before the postcopy
	 * switch), so this test always exercises postcopy. */
	r.src_opts.downtime_ms = 1;
	su_migrate(vm, &r);
	su_print(what, &r);
	printf("    postcopy: unsent %llu, requested %llu, pushed %llu; "
	       "faults p50 %.1f us p99 %.1f us max %.1f us; last page "
	       "%.1f ms\n",
	       (unsigned long long)r.dst_final.pc_unsent_pages,
	       (unsigned long long)r.src_final.pc_pages_requested,
	       (unsigned long long)r.src_final.pc_pages_pushed,
	       r.dst_final.pc_fault_p50_ns / 1e3,
	       r.dst_final.pc_fault_p99_ns / 1e3,
	       r.dst_final.pc_fault_max_ns / 1e3,
	       r.dst_final.pc_last_page_ns / 1e6);
	CU_ASSERT_EQUAL(r.src_ret, 0);
	CU_ASSERT_EQUAL(r.dst_ret, 0);
	CU_ASSERT_EQUAL(r.src_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT_EQUAL(r.dst_final.phase, MIG_PHASE_COMPLETED);
	CU_ASSERT(r.phases_seen[MIG_PHASE_POSTCOPY]);
	CU_ASSERT(r.src_final.postcopy);
	CU_ASSERT(r.dst_final.postcopy);
	/* A guest writing flat out leaves pages unsent after one pass;
	 * each went once, by request or by push. */
	CU_ASSERT(r.dst_final.pc_unsent_pages > 0);
	CU_ASSERT_EQUAL(r.src_final.pc_pages_requested +
				r.src_final.pc_pages_pushed,
			r.dst_final.pc_unsent_pages);
	/* The post-migration verification re-read the frozen source. */
	CU_ASSERT_EQUAL(r.src_final.verify_pages, SU_MEM / HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(r.src_final.verify_mismatches, 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_STOPPED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.dst_vm);
	/* It runs there, and what it wrote checks page by page. */
	CU_ASSERT(su_vm_progresses(r.dst_vm, 2000));
	CU_ASSERT_EQUAL_FATAL(hv_vm_pause(r.dst_vm), 0);
	CU_ASSERT_EQUAL(hv_wl_verify(r.dst_vm->mem->hva,
				     r.dst_vm->mem->bytes, &v),
			0);
	printf("    stamps: %llu pages, %llu written, %llu bad, %u lost\n",
	       (unsigned long long)v.pages, (unsigned long long)v.written,
	       (unsigned long long)v.bad, v.lost_vcpus);
	CU_ASSERT(hv_wl_verify_clean(&v));
	CU_ASSERT(v.written > 0);
	su_run_free(&r);
	hv_vm_destroy(vm);
}

static void test_soft_postcopy_moves_every_page_and_runs(void)
{
	run_postcopy(HV_BACKING_PRIVATE, __func__);
}

static CU_TestInfo tests[] = {
	{ "soft_postcopy_moves_every_page_and_runs",
	  test_soft_postcopy_moves_every_page_and_runs },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/session_postcopy", su_init, su_clean, tests);
