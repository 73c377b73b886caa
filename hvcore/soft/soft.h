/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_ops: the soft accelerator behind hvcore/accel.h. A VM created
 * with cfg.accel = HV_ACCEL_SOFT runs every vCPU's workload
 * (hvcore/workload.h) on the vCPU thread with each guest page access
 * translated by the software stage-2 MMU (hvcore/soft/mmu.h), and logs
 * writes by write protection (HV_DIRTY_WP) or dirty bits plus a 512-entry
 * per-vCPU page-modification log (HV_DIRTY_PML). RING and BITMAP are KVM's
 * and refused with -EOPNOTSUPP.
 *
 * Knobs that struct hv_vm_cfg has no field for, read once by vm_init from
 * the environment (an unknown value fails vm_init with -EINVAL):
 *   HV_SOFT_PTE_FMT=x86|arm64    stage-2 entry format: the x86 EPT-style
 *                                format (default) or the arm64 stage-2
 *                                descriptor format;
 *   HV_SOFT_CLEAR_LOCK=read|write  clear-dirty-log splits and protects
 *                                under the MMU read lock (default) or
 *                                the write lock (the baseline).
 * Huge leaves (2 MiB / 1 GiB) are mapped when cfg.backing is THP or
 * HUGETLB, 4 KiB leaves only with ANON backing.
 *
 * vcpu_run semantics (see hvcore/soft/soft_accel.c for the details):
 *  - KICK: vcpu_kick or a pending pause/stop makes the workload finish its
 *    current batch and return; its status line is published exactly, and
 *    the next vcpu_run resumes the workload from it (seq keeps growing).
 *  - HEARTBEAT: the workload returns after each heartbeat, args[0] = seq,
 *    args[1] = guest clock (ns); the next run resumes it. Each resume
 *    restarts the workload's pacing from the writes the last run still
 *    owed (hv_wl_env.pace_owed, kept in the vCPU), so a rate-limited
 *    vCPU keeps its rate across returns.
 *  - waits: a workload that paces, idles or is throttled sleeps on the
 *    vCPU thread (a condition variable that vcpu_kick signals), so it
 *    costs a few percent of a CPU and a pause never waits for its timer.
 *  - LOG_FULL: a full PML is flushed into the memslot bitmaps at once on
 *    the vCPU thread; the exit itself is reported by the next vcpu_run
 *    calls (one per full log), not by stopping the workload, because
 *    generic code only counts it and a return per 512 pages would reset
 *    the workload's heartbeat clock.
 *  - DONE: the workload returned on its own (max_writes, the params stop
 *    flag), args[0] = its result (0 or -EINVAL for bad params).
 *  - an access outside guest RAM makes vcpu_run fail with -EFAULT.
 *
 * State: the soft vCPU's whole architectural state is its workload status
 * line (guest RAM, HV_WL_STATUS_GPA); vcpu_state_save copies it into a
 * small versioned little-endian blob and restore writes it back (a logged
 * VMM write), so restore into a fresh VM and resume continues the stamps.
 * The VM blob records the entry format and huge-leaf policy only: the
 * stage-2 table is rebuilt by faults on the destination.
 */
#ifndef HVCORE_SOFT_SOFT_H
#define HVCORE_SOFT_SOFT_H

#include "hvcore/accel.h"
#include "hvcore/soft/mmu.h"
#include "hvcore/soft/soft_vm.h"

extern const struct hv_accel_ops hv_soft_ops;

/*
 * Counters of a soft VM (racy snapshot), for tests and benchmarks that
 * drive the VM through hvcore/vm.h. -EINVAL when @vm is not a soft VM.
 * Any thread while the VM exists.
 */
int hv_soft_get_stats(struct hv_vm *vm, struct hv_soft_vm_stats *vs,
		      struct hv_soft_mmu_stats *ms);

#endif
