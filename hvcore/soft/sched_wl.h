/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_sched_wl: one run of the ebizzy-like workload
 * (hvcore/wl_ebizzy.h) on overcommitted soft vCPUs: @vms soft VMs (each a
 * hv_soft_rig: its own guest RAM, MMU and soft vCPUs) of @vcpus vCPUs,
 * all sharing one scheduler's run tokens (hvcore/soft/sched.h). Each
 * vCPU's thread runs the workload with every guest access going through
 * its soft vCPU's TLB and MMU, and an access point (a preemption check)
 * before each; the pause-loop exit is the scheduler's directed yield, an
 * IPI is a kick, a halt is the scheduler's halt.
 *
 * Used by `hvbench yield` and the tests. One control thread per run.
 */
#ifndef HVCORE_SOFT_SCHED_WL_H
#define HVCORE_SOFT_SCHED_WL_H

#include "hvcore/soft/sched.h"
#include "hvcore/wl_ebizzy.h"

struct hv_soft_sched_wl_cfg {
	unsigned vms;	/* 1..HV_SOFT_SCHED_MAX_VMS */
	unsigned vcpus; /* per VM, 1..HV_WL_SYNC_MAX_CPUS */
	struct hv_soft_sched_cfg sched;
	/* Every vCPU's workload; region_gpa and seed are set per vCPU (its
	 * region in the VM's high slot), region_pages a multiple of 512. */
	struct hv_wl_ebizzy_cfg wl;
	/*
	 * The last @hogs VMs are CPU hogs (the seed's "stress" VM): their
	 * vCPUs only do records, never lock, call or halt. Only with
	 * wl.max_records == 0 (they never finish on their own).
	 */
	unsigned hogs;
	uint32_t ple_spins; /* spins per pause-loop exit */
	/*
	 * Test oracle (NULL: none): called on the vCPU's thread with
	 * @running false just before it calls into the scheduler (where it
	 * may lose its token) and true just after (it holds one again).
	 */
	void (*on_sched)(void *arg, unsigned vm, unsigned vcpu,
			 struct hv_soft_sched_vcpu *sv, bool running);
	void *arg;
};

struct hv_soft_sched_wl_vcpu {
	struct hv_wl_ebizzy_stats wl;
	struct hv_wl_sync_stats sync;
	struct hv_soft_sched_vcpu_stats sched;
	int result; /* the workload's: 0 or a negative errno */
};

struct hv_soft_sched_wl_result {
	uint64_t wall_ns;
	struct hv_soft_sched_stats sched;
	/* vms * vcpus entries, VM-major; the caller's array */
	struct hv_soft_sched_wl_vcpu *vcpu;
};

/*
 * Run: with wl.max_records == 0 for @run_ns, then stop the vCPUs; else
 * until every vCPU did max_records (wall_ns then ends when the last
 * finished), or -ETIMEDOUT after @run_ns (a hang: the vCPUs are stopped,
 * and if they do not end within a second their memory is leaked, never
 * freed under them; the workload results reach @res only when every
 * thread ended). Returns 0, -EINVAL, -ENOMEM, -ETIMEDOUT, or the
 * first vCPU's error (-EFAULT).
 */
int hv_soft_sched_wl_run(const struct hv_soft_sched_wl_cfg *cfg,
			 uint64_t run_ns, struct hv_soft_sched_wl_result *res);

#endif
