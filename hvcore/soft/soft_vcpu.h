/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_vcpu: a software vCPU. Its thread runs the parametric workload
 * (hvcore/workload.h) with every guest page access translated by a
 * per-vCPU software TLB backed by the soft MMU (hvcore/soft/mmu.h).
 *
 * An access: enter the TLB bracket (hv_soft_tlb_enter), look the gfn up;
 * on a hit (and, for a write, a writable+dirty translation) return the host
 * pointer, leaving the bracket open until the next access or hook call;
 * on a miss leave the bracket and resolve it: memslot lookup, MMU read
 * lock, walk, then map / fix a write-protection fault (bitmap bit + CAS) /
 * set the dirty bit and append to the PML (CAS), fill the TLB, and retry.
 * A translation filled at generation g is dropped when the vCPU next
 * enters at a newer generation, so a remote flush reaches it before its
 * next access.
 *
 * Threads: everything but hv_soft_vcpu_flush_pml() and the stats is for
 * the vCPU's own thread. The PML buffer is shared with the harvester
 * (hv_soft_vm_sync_pml) under pml_lock.
 */
#ifndef HVCORE_SOFT_SOFT_VCPU_H
#define HVCORE_SOFT_SOFT_VCPU_H

#include <pthread.h>

#include "hvcore/soft/soft_vm.h"
#include "hvcore/workload.h"

#define HV_SOFT_PML_ENTRIES 512u
#define HV_SOFT_TLB_ENTRIES 512u

struct hv_soft_tlbe {
	uint64_t tag; /* gfn + 1; 0 = empty */
	uint8_t *hva;
	bool writable; /* writable and already dirty: no log needed */
};

struct hv_soft_vcpu {
	/* immutable after create */
	struct hv_soft_vm *vm;
	uint32_t id;

	/* vCPU thread only */
	struct hv_soft_tlb_ack ack;
	uint64_t tlb_gen;
	bool in_access;
	int error; /* first fault error (negative errno), 0 */
	/* PML-full exits taken (log flushed) and not yet reported to the
	 * accelerator's caller; hvcore/soft/soft_accel.c drains it. */
	uint64_t pml_full_exits;
	struct hv_soft_pgcache cache;
	struct hv_soft_tlbe tlb[HV_SOFT_TLB_ENTRIES];
	uint8_t *scratch; /* handed out for an access outside guest RAM */
	/* Where to count the pages this vCPU logs (WP faults and PML
	 * entries): the generic vCPU's dirty_logged, or NULL. Set before
	 * the vCPU runs. */
	_Atomic uint64_t *logged;

	/* protected by pml_lock */
	pthread_mutex_t pml_lock;
	unsigned pml_nr;
	uint64_t pml[HV_SOFT_PML_ENTRIES];
};

/* Create and register with @vm. 0, -ENOMEM, -ENOSPC. */
int hv_soft_vcpu_create(struct hv_soft_vm *vm, uint32_t id,
			struct hv_soft_vcpu **out);
/* Flushes its PML, unregisters, frees. destroy(NULL) no-op. */
void hv_soft_vcpu_destroy(struct hv_soft_vcpu *v);

/*
 * Host pointer to the 4 KiB guest page at @gpa (page-aligned) for a write
 * or a read, with logging done. Returns a scratch page and records -EFAULT
 * in v->error when @gpa is outside guest RAM (or read-only for a write).
 * The pointer is valid until the next call into this vCPU.
 */
uint8_t *hv_soft_vcpu_page_for_write(struct hv_soft_vcpu *v, gpa_t gpa);
const uint8_t *hv_soft_vcpu_page_for_read(struct hv_soft_vcpu *v, gpa_t gpa);
/* Close the access bracket (before blocking or returning to the host). */
void hv_soft_vcpu_access_end(struct hv_soft_vcpu *v);

/* Move the PML into the bitmaps. Any thread. Returns entries moved. */
unsigned hv_soft_vcpu_flush_pml(struct hv_soft_vcpu *v);

/*
 * How the host controls a running workload. Both hooks run on the vCPU
 * thread outside any guest access (no TLB bracket open, no lock held), so
 * they may block. Returning true makes the workload finish its current
 * batch (at most 64 page writes, none of them torn) and return, with its
 * status line published exactly: a later run resumes from it.
 */
struct hv_soft_wl_ctl {
	/* Called at every clock read of the workload (batch start and end,
	 * every pacing step): keep it cheap. */
	bool (*checkpoint)(void *arg);
	void *arg;
	/* Heartbeat hook (NULL: none); @st is the status just published. */
	bool (*heartbeat)(void *arg, const struct hv_wl_status *st);
	/* Sleep until CLOCK_MONOTONIC reaches @deadline_ns, or less: a kick
	 * (a pause or stop request) must end it at once. NULL: a plain
	 * clock_nanosleep (nobody kicks the vCPU). The workload bounds each
	 * sleep (HV_WL_MAX_SLEEP_US). */
	void (*wait)(void *arg, uint64_t deadline_ns);
	/* Kept by the host across runs (hv_wl_env.pace_owed); NULL: none. */
	uint64_t *pace_owed;
};

/*
 * Run this vCPU's workload (params at HV_WL_PARAMS_GPA, status line at
 * HV_WL_STATUS_GPA + 64 * id) until it stops: params stop flag,
 * max_writes, or ctl->checkpoint. The params page is read through the
 * host mapping (reads need no logging) into a private shadow refreshed
 * every batch; status lines are written through the MMU, so they are
 * dirty-logged like any guest write. Returns 0, -EINVAL (bad params),
 * -EFAULT (an access outside guest RAM).
 */
int hv_soft_vcpu_run_workload(struct hv_soft_vcpu *v,
			      const struct hv_soft_wl_ctl *ctl);

#endif
