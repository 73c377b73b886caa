// SPDX-License-Identifier: MIT
/*
 * hv_dirtyrate against guests whose write rate is known: the workload's
 * own counters (and its configured pace) are the reference.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "hvcore/dirtyrate.h"
#include "hvcore/vm.h"
#include "tests/harness/hv_test.h"

#define MEM (256ull << 20)
#define RATE 20000u /* page writes/s per vCPU */

static enum hv_accel_kind accel(void)
{
	return hv_test_have_kvm() ? HV_ACCEL_KVM : HV_ACCEL_SOFT;
}

/* Two vCPUs sweeping @region_pages each at RATE pages/s. */
static struct hv_vm *start_vm(uint64_t region_pages)
{
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;

	hv_vm_cfg_init(&cfg, accel(), MEM, 2);
	for (uint32_t i = 0; i < 2; i++) {
		cfg.wl[i].rate_pages = RATE;
		cfg.wl[i].region_gpa = HV_VM_WL_BASE + i * region_pages * 4096;
		cfg.wl[i].region_pages = region_pages;
	}
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	return vm;
}

static bool within(double got, double want, double pct)
{
	return fabs(got - want) <= want * pct / 100.0;
}

static void test_rate_matches_guest_writes_within_5pct(void)
{
	struct hv_dirtyrate_cfg dcfg = {.interval_ms = 100};
	struct hv_dirtyrate *dr;
	struct hv_dirtyrate_snap s;
	struct hv_vm *vm = start_vm(30000);

	CU_ASSERT_FATAL(hv_dirtyrate_create(vm, &dcfg, &dr) == 0);
	usleep(2300 * 1000);
	hv_dirtyrate_get(dr, &s);
	printf("\n  1s: %.0f pages/s, guest %.0f, ws %llu; samples %llu\n",
	       s.win[HV_DR_1S].pages_per_s, s.win[HV_DR_1S].guest_pages_per_s,
	       (unsigned long long)s.win[HV_DR_1S].working_set,
	       (unsigned long long)s.samples);
	CU_ASSERT(s.samples >= 10);
	CU_ASSERT(s.win[HV_DR_1S].covered_s >= 0.9);
	/* The guest's own counters are the reference: on a loaded host it
	 * may not reach its configured pace, but what it wrote is what the
	 * monitor must see. */
	CU_ASSERT(s.win[HV_DR_1S].guest_pages_per_s > RATE / 2);
	CU_ASSERT(within(s.win[HV_DR_1S].pages_per_s,
			 s.win[HV_DR_1S].guest_pages_per_s, 5));
	/* Bytes against what the guest wrote, not against the monitor's
	 * own page count. */
	CU_ASSERT(within(s.win[HV_DR_1S].bytes_per_s,
			 s.win[HV_DR_1S].guest_pages_per_s * 4096, 5));
	/* A sweep never revisits a page within a second here. */
	CU_ASSERT(within((double)s.win[HV_DR_1S].working_set,
			 s.win[HV_DR_1S].guest_pages_per_s, 10));
	/* Equal workloads: about half each (estimated from guest counters
	 * in KVM's bitmap mode, measured from PML on the soft one). */
	CU_ASSERT_EQUAL(s.vcpu_split_estimated, accel() == HV_ACCEL_KVM);
	CU_ASSERT(within(s.vcpu_pages_per_s[0][HV_DR_1S],
			 s.win[HV_DR_1S].pages_per_s / 2, 10));
	hv_dirtyrate_destroy(dr);
	hv_vm_destroy(vm);
}

static void test_small_region_is_hot_in_every_second(void)
{
	struct hv_dirtyrate_cfg dcfg = {.interval_ms = 100};
	struct hv_dirtyrate *dr;
	struct hv_dirtyrate_snap s;
	/* 2048 pages per vCPU swept ten times a second. */
	struct hv_vm *vm = start_vm(2048);
	uint64_t other = 0;

	CU_ASSERT_FATAL(hv_dirtyrate_create(vm, &dcfg, &dr) == 0);
	usleep(3300 * 1000);
	hv_dirtyrate_get(dr, &s);
	CU_ASSERT(s.hist_seconds >= 3);
	/* The guest's own status line and stack pages come on top. */
	CU_ASSERT(s.win[HV_DR_1S].working_set >= 4096 &&
		  s.win[HV_DR_1S].working_set <= 4096 + 32);
	CU_ASSERT(s.win[HV_DR_10S].working_set >= 4096 &&
		  s.win[HV_DR_10S].working_set <= 4096 + 32);
	for (unsigned k = 1; k <= HV_DR_HIST_N; k++)
		if (k != s.hist_seconds)
			other += s.hist[k];
	printf("\n  hist[%u] = %llu, elsewhere %llu\n", s.hist_seconds,
	       (unsigned long long)s.hist[s.hist_seconds],
	       (unsigned long long)other);
	/* Every page of the set was dirtied in every complete second
	 * (pages of the guest's own status line excepted). */
	CU_ASSERT(s.hist[s.hist_seconds] >= 4096);
	CU_ASSERT(other <= 32);
	hv_dirtyrate_destroy(dr);
	hv_vm_destroy(vm);
}

static void test_sampled_rate_scales_back(void)
{
	struct hv_dirtyrate_cfg dcfg = {.interval_ms = 100, .sample_shift = 2};
	struct hv_dirtyrate *dr;
	struct hv_dirtyrate_snap s;
	struct hv_vm *vm = start_vm(30000);

	CU_ASSERT_FATAL(hv_dirtyrate_create(vm, &dcfg, &dr) == 0);
	usleep(2300 * 1000);
	hv_dirtyrate_get(dr, &s);
	printf("\n  shift 2: %.0f pages/s, guest %.0f\n",
	       s.win[HV_DR_1S].pages_per_s, s.win[HV_DR_1S].guest_pages_per_s);
	CU_ASSERT(within(s.win[HV_DR_1S].pages_per_s,
			 s.win[HV_DR_1S].guest_pages_per_s, 15));
	hv_dirtyrate_destroy(dr);
	hv_vm_destroy(vm);
}

static void test_monitor_refuses_a_log_it_does_not_own(void)
{
	struct hv_dirtyrate_cfg dcfg = {0};
	/* Never dereferenced: a failed create must leave *out as it was. */
	struct hv_dirtyrate *const untouched = (struct hv_dirtyrate *)&dcfg;
	struct hv_dirtyrate *dr = untouched;
	struct hv_vm *vm = start_vm(2048);
	enum hv_dirty_mode m =
		accel() == HV_ACCEL_KVM ? HV_DIRTY_BITMAP : HV_DIRTY_WP;

	/* A migration owns the log: the monitor must not steal pages. */
	CU_ASSERT_FATAL(hv_vm_dirty_log_start(vm, m) == 0);
	CU_ASSERT_EQUAL(hv_dirtyrate_create(vm, &dcfg, &dr), -EBUSY);
	CU_ASSERT_PTR_EQUAL(dr, untouched);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_stop(vm), 0);
	/* And gives it back when destroyed. */
	CU_ASSERT_FATAL(hv_dirtyrate_create(vm, &dcfg, &dr) == 0);
	hv_dirtyrate_destroy(dr);
	CU_ASSERT_EQUAL(hv_vm_dirty_log_start(vm, m), 0);
	hv_vm_dirty_log_stop(vm);
	dcfg.sample_shift = HV_DR_SHIFT_MAX + 1;
	CU_ASSERT_EQUAL(hv_dirtyrate_create(vm, &dcfg, &dr), -EINVAL);
	hv_dirtyrate_destroy(NULL);
	hv_vm_destroy(vm);
}

/*
 * Per-vCPU rates measured from each vCPU's own log (soft PML; KVM dirty
 * ring): two vCPUs writing at different paces must each be seen at their
 * own pace, not at a share of the total.
 */
static void per_vcpu_rates_are_measured(enum hv_accel_kind kind,
					uint32_t ring, const char *what)
{
	static const uint64_t rates[2] = { 4000, 12000 };
	struct hv_dirtyrate_cfg dcfg = {.interval_ms = 100};
	struct hv_dirtyrate *dr;
	struct hv_dirtyrate_snap s;
	struct hv_vm_cfg cfg;
	struct hv_vm *vm = NULL;
	uint64_t seq0[2];

	hv_vm_cfg_init(&cfg, kind, MEM, 2);
	cfg.dirty_ring_entries = ring;
	for (uint32_t i = 0; i < 2; i++) {
		cfg.wl[i].rate_pages = rates[i];
		cfg.wl[i].region_gpa = HV_VM_WL_BASE + i * 30000ull * 4096;
		cfg.wl[i].region_pages = 30000;
	}
	CU_ASSERT_FATAL(hv_vm_create(&cfg, &vm) == 0);
	CU_ASSERT_FATAL(hv_vm_start(vm) == 0);
	CU_ASSERT_FATAL(hv_dirtyrate_create(vm, &dcfg, &dr) == 0);
	usleep(1300 * 1000);
	for (uint32_t i = 0; i < 2; i++)
		seq0[i] = hv_vm_wl_status(vm, i)->seq;
	usleep(1000 * 1000);
	hv_dirtyrate_get(dr, &s);
	printf("\n    %s: vCPU0 %.0f pages/s (guest %llu), vCPU1 %.0f (guest "
	       "%llu)\n",
	       what, s.vcpu_pages_per_s[0][HV_DR_1S],
	       (unsigned long long)(hv_vm_wl_status(vm, 0)->seq - seq0[0]),
	       s.vcpu_pages_per_s[1][HV_DR_1S],
	       (unsigned long long)(hv_vm_wl_status(vm, 1)->seq - seq0[1]));
	CU_ASSERT_FALSE(s.vcpu_split_estimated);
	for (uint32_t i = 0; i < 2; i++) {
		double guest = (double)(hv_vm_wl_status(vm, i)->seq - seq0[i]);

		/* A sweep writes each page once in this window: pages
		 * logged = writes, within sampling jitter. */
		CU_ASSERT(within(s.vcpu_pages_per_s[i][HV_DR_1S], guest, 15));
	}
	hv_dirtyrate_destroy(dr);
	hv_vm_destroy(vm);
}

static void test_per_vcpu_rates_are_measured_from_pml(void)
{
	per_vcpu_rates_are_measured(HV_ACCEL_SOFT, 0, "soft PML");
}

static void test_per_vcpu_rates_are_measured_from_the_dirty_ring(void)
{
	HV_TEST_REQUIRE_KVM();
	per_vcpu_rates_are_measured(HV_ACCEL_KVM, 4096, "kvm ring");
}

static CU_TestInfo tests[] = {
	{ "per_vcpu_rates_are_measured_from_pml",
	  test_per_vcpu_rates_are_measured_from_pml },
	{"rate_matches_guest_writes_within_5pct",
	 test_rate_matches_guest_writes_within_5pct},
	{"small_region_is_hot_in_every_second",
	 test_small_region_is_hot_in_every_second},
	{"sampled_rate_scales_back", test_sampled_rate_scales_back},
	{"monitor_refuses_a_log_it_does_not_own",
	 test_monitor_refuses_a_log_it_does_not_own},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/dirtyrate", NULL, NULL, tests);

/* Needs /dev/kvm: the ctest test labelled "kvm" runs these. */
static CU_TestInfo kvm_tests[] = {
	{ "per_vcpu_rates_are_measured_from_the_dirty_ring",
	  test_per_vcpu_rates_are_measured_from_the_dirty_ring },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE_KVM("hvcore/dirtyrate/kvm", NULL, NULL, kvm_tests);
