// SPDX-License-Identifier: MIT
/*
 * The KVM accelerator end to end: the guest image boots on N vCPUs, runs
 * the workload in ring 3 and reports through ucalls; pause/resume parks
 * and continues the vCPUs.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/kvm/kvm.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "tests/harness/hv_test.h"

#define MEM (64ULL << 20)

static void cfg_small(struct hv_vm_cfg *cfg, uint32_t nr, uint64_t writes)
{
	hv_vm_cfg_init(cfg, HV_ACCEL_KVM, MEM, nr);
	for (uint32_t i = 0; i < nr; i++) {
		cfg->wl[i].region_pages = 1024;
		cfg->wl[i].max_writes = writes;
	}
}

/* Wait (up to 10 s on a loaded machine) until every vCPU wrote. */
static void wait_progress(struct hv_vm *vm, uint32_t nr)
{
	for (int t = 0; t < 1000; t++) {
		uint32_t ok = 0;

		for (uint32_t i = 0; i < nr; i++)
			ok += hv_vm_wl_status(vm, i)->seq > 0;
		if (ok == nr)
			return;
		usleep(10000);
	}
}

static void check_workload_done(uint32_t nr)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	cfg_small(&cfg, nr, 3000);
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_CREATED);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	CU_ASSERT_EQUAL(hv_vm_wait(vm, 30000), 0);
	for (uint32_t i = 0; i < nr; i++) {
		const volatile struct hv_wl_status *st = hv_vm_wl_status(vm, i);
		struct hv_vcpu_stats s;
		const uint8_t *page;

		CU_ASSERT_EQUAL(st->seq, 3000);
		CU_ASSERT_EQUAL(st->passes, 2); /* 3000 writes of 1024 */
		CU_ASSERT_EQUAL(hv_vm_vcpu_stats(vm, i, &s), 0);
		CU_ASSERT_EQUAL(s.exits[HV_EXIT_DONE], 1);
		CU_ASSERT_FALSE(s.asserted);
		CU_ASSERT_EQUAL(s.error, 0);
		/* Last page of the region: written in pass 2 with seq 2048. */
		page = hv_vm_gpa_to_hva(vm, cfg.wl[i].region_gpa + 1023 * 4096,
					4096);
		CU_ASSERT_FATAL(page != NULL);
		{
			struct hv_wl_stamp stamp;

			memcpy(&stamp, page, sizeof(stamp));
			CU_ASSERT_EQUAL(stamp.magic, HV_WL_STAMP_MAGIC);
			CU_ASSERT_EQUAL(stamp.vcpu, i);
			CU_ASSERT_EQUAL(stamp.seq, 2048);
		}
	}
	hv_vm_destroy(vm);
}

static void test_guest_runs_workload_on_one_vcpu(void)
{
	HV_TEST_REQUIRE_KVM();
	check_workload_done(1);
}

static void test_guest_runs_workload_on_each_of_three_vcpus(void)
{
	HV_TEST_REQUIRE_KVM();
	check_workload_done(3);
}

static void test_pause_parks_every_vcpu_and_resume_continues(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	uint64_t seq[2];

	HV_TEST_REQUIRE_KVM();
	cfg_small(&cfg, 2, 0);
	for (int i = 0; i < 2; i++)
		cfg.wl[i].heartbeat_us = 2000;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	CU_ASSERT_EQUAL(hv_vm_resume(vm), -EBUSY);
	wait_progress(vm, 2);
	CU_ASSERT_EQUAL_FATAL(hv_vm_pause(vm), 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_PAUSED);
	for (uint32_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(hv_vcpu_get_state(vm->vcpus[i]),
				HV_VCPU_PAUSED);
		seq[i] = hv_vm_wl_status(vm, i)->seq;
		CU_ASSERT(seq[i] > 0);
	}
	usleep(20000);
	/* Parked vCPUs write nothing. */
	for (uint32_t i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(hv_vm_wl_status(vm, i)->seq, seq[i]);
	CU_ASSERT_EQUAL(hv_vm_resume(vm), 0);
	usleep(50000);
	for (uint32_t i = 0; i < 2; i++) {
		struct hv_vcpu_stats s;

		CU_ASSERT(hv_vm_wl_status(vm, i)->seq > seq[i]);
		hv_vm_vcpu_stats(vm, i, &s);
		CU_ASSERT(s.heartbeats > 0);
		CU_ASSERT_FALSE(s.asserted);
	}
	CU_ASSERT_EQUAL(hv_vm_stop(vm), 0);
	CU_ASSERT_EQUAL(hv_vm_get_state(vm), HV_VM_STOPPED);
	hv_vm_destroy(vm);
}

static void test_create_refuses_bad_cfg_and_leaves_out_untouched(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = (struct hv_vm *)0x1;

	cfg_small(&cfg, 1, 0);
	cfg.mem_bytes = (3ULL << 20); /* below the minimum */
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	cfg_small(&cfg, 1, 0);
	cfg.dirty_ring_entries = 1000; /* not a power of two */
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	cfg_small(&cfg, 1, 0);
	cfg.wl[0].region_gpa = 0; /* overlaps the image */
	CU_ASSERT_EQUAL(hv_vm_create(&cfg, &vm), -EINVAL);
	CU_ASSERT_PTR_EQUAL(vm, (struct hv_vm *)0x1);
	hv_vm_destroy(NULL);
}

static void test_bitmap_mode_refused_on_a_ring_vm(void)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	HV_TEST_REQUIRE_KVM();
	cfg_small(&cfg, 1, 0);
	cfg.dirty_ring_entries = 4096;
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_start(vm, HV_DIRTY_BITMAP),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_start(vm, HV_DIRTY_RING), 0);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_start(vm, HV_DIRTY_RING), -EBUSY);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(vm), 0);
	hv_vm_destroy(vm);
}

/* Every backing either runs the guest or fails cleanly at create (hugetlb
 * without reserved pages: -ENOMEM, *out untouched). */
static void test_each_backing_runs_the_guest_or_fails_cleanly(void)
{
	static const enum hv_mem_backing b[] = {HV_BACKING_THP,
						HV_BACKING_HUGETLB,
						HV_BACKING_PRIVATE};

	HV_TEST_REQUIRE_KVM();
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		struct hv_vm_cfg cfg;
		struct hv_vm *vm = (struct hv_vm *)0x1;
		int ret;

		cfg_small(&cfg, 1, 2000);
		cfg.backing = b[i];
		ret = hv_vm_create(&cfg, &vm);
		if (ret) {
			CU_ASSERT(b[i] == HV_BACKING_HUGETLB);
			CU_ASSERT(ret == -ENOMEM || ret == -EINVAL);
			CU_ASSERT_PTR_EQUAL(vm, (struct hv_vm *)0x1);
			continue;
		}
		CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
		CU_ASSERT_EQUAL(hv_vm_wait(vm, 30000), 0);
		CU_ASSERT_EQUAL(hv_vm_wl_status(vm, 0)->seq, 2000);
		hv_vm_destroy(vm);
	}
}

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{"each_backing_runs_the_guest_or_fails_cleanly",
	 test_each_backing_runs_the_guest_or_fails_cleanly},
	{"guest_runs_workload_on_one_vcpu",
	 test_guest_runs_workload_on_one_vcpu},
	{"guest_runs_workload_on_each_of_three_vcpus",
	 test_guest_runs_workload_on_each_of_three_vcpus},
	{"pause_parks_every_vcpu_and_resume_continues",
	 test_pause_parks_every_vcpu_and_resume_continues},
	{"create_refuses_bad_cfg_and_leaves_out_untouched",
	 test_create_refuses_bad_cfg_and_leaves_out_untouched},
	{"bitmap_mode_refused_on_a_ring_vm",
	 test_bitmap_mode_refused_on_a_ring_vm},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE_KVM("hvcore/kvm/vm", NULL, NULL, kvm_tests);
