/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_vm: the soft accelerator's per-VM state: the stage-2 MMU, the
 * borrowed memslot set, the dirty-logging mode, the soft vCPUs (for PML
 * sync) and the clear-dirty-log machinery (split page cache, clear lock).
 *
 * Dirty logging (docs/architecture.md):
 *  - HV_SOFT_LOG_WP: cleared pages are write-protected; a write faults,
 *    sets the page's bit in the memslot bitmap and restores write
 *    permission with one CAS (fast fault; no write lock).
 *  - HV_SOFT_LOG_PML: leaves stay writable; clear cleans the dirty bit;
 *    the first write sets it and appends the GPA to the vCPU's 512-entry
 *    PML; a full PML is flushed into the bitmaps by the vCPU ("PML full
 *    exit"), and hv_soft_vm_sync_pml() flushes every vCPU's log before a
 *    harvest.
 * Starting with initially_set (KVM_DIRTY_LOG_INITIALLY_SET) leaves the
 * table alone: every page is reported by the first harvest, and the first
 * clear protects (and splits) exactly what it is asked to. Without it,
 * start write-protects every leaf of logged slots under the write lock.
 * While logging, faults in logged slots map 4 KiB leaves only.
 *
 * Clear-dirty-log (hvcore/soft/clear.c): chunk by chunk, take the MMU lock
 * (read lock, or the write-lock baseline), split huge leaves that hold a
 * harvested page (eager split, CAS, retry on a lost race), protect/clean
 * the harvested pages, flush TLBs, drop the lock and yield.
 *
 * Threads: create/destroy/log_start/log_stop on the control thread; clear
 * and sync_pml on one harvester thread at a time (clear_lock); faults on
 * vCPU threads.
 */
#ifndef HVCORE_SOFT_SOFT_VM_H
#define HVCORE_SOFT_SOFT_VM_H

#include <pthread.h>
#include <stdatomic.h>

#include "hvcore/memslots.h"
#include "hvcore/soft/mmu.h"

enum hv_soft_log_mode {
	HV_SOFT_LOG_OFF = 0,
	HV_SOFT_LOG_WP,
	HV_SOFT_LOG_PML,
};

enum hv_soft_lock_mode {
	HV_SOFT_LOCK_READ = 0, /* eager split under the read lock (new) */
	HV_SOFT_LOCK_WRITE,    /* the write-lock baseline */
};

struct hv_soft_vcpu;
struct hv_soft_shadow;

struct hv_soft_vm_cfg {
	const struct hv_arch_pte_fmt *fmt; /* x86_ept_fmt or arm64_s2_fmt */
	bool huge;			   /* map 2 MiB / 1 GiB leaves */
};

/* Counters (relaxed atomics; racy snapshot). */
struct hv_soft_vm_stats {
	uint64_t faults;	/* TLB misses resolved by a walk/fault */
	uint64_t wp_faults;	/* write-protection faults fixed */
	uint64_t pml_logged;	/* GPAs appended to a PML */
	uint64_t pml_full;	/* PML-full exits */
	uint64_t pml_flushed;	/* PML entries flushed into bitmaps */
	uint64_t cleared;	/* pages protected/cleaned by clear */
	uint64_t clear_breaks;	/* times clear dropped the lock mid-chunk */
};

struct hv_soft_vm {
	/* immutable after create */
	struct hv_soft_mmu *mmu;
	struct hv_memslots *slots; /* borrowed; outlives the soft VM */
	struct hv_soft_vm_cfg cfg;

	/* written by the control thread, read by vCPUs */
	_Atomic int log_mode;	   /* enum hv_soft_log_mode */
	atomic_bool pml_per_entry; /* PML flush baseline: lookup per entry */

	/* the harvester: one clear / sync at a time */
	pthread_mutex_t clear_lock;
	struct hv_soft_pgcache split_cache; /* protected by clear_lock */

	/* shadow mode (hvcore/soft/shadow.h), borrowed; NULL: none. Set by
	 * the control thread before logging starts. */
	struct hv_soft_shadow *shadow;

	/* vCPU registry, protected by vcpus_lock */
	pthread_mutex_t vcpus_lock;
	struct hv_soft_vcpu *vcpus[HV_SOFT_MAX_TLBS];

	/* statistics */
	atomic_uint_fast64_t faults, wp_faults, pml_logged, pml_full,
		pml_flushed, cleared, clear_breaks;
};

/* 0, -ENOMEM. @slots is borrowed. *out untouched on failure. */
int hv_soft_vm_create(const struct hv_soft_vm_cfg *cfg,
		      struct hv_memslots *slots, struct hv_soft_vm **out);
/* No soft vCPU may remain. destroy(NULL) no-op. */
void hv_soft_vm_destroy(struct hv_soft_vm *vm);

/*
 * Attach a shadow MMU (borrowed; NULL detaches): from then on log start,
 * protect, clear and zap also act on the shadow entries, through its
 * rmap (write-protection mode only). Control thread, before logging.
 */
void hv_soft_vm_set_shadow(struct hv_soft_vm *vm, struct hv_soft_shadow *sh);

/*
 * Start logging in @mode for every slot with HV_MEMSLOT_F_DIRTY_LOG (set by
 * the caller on the memslot set first). @initially_set: the bitmaps start
 * full, so the table is left as it is. 0, -EINVAL.
 */
int hv_soft_vm_log_start(struct hv_soft_vm *vm, enum hv_soft_log_mode mode,
			 bool initially_set);
/* Stop logging (after a final sync + harvest by the caller). */
void hv_soft_vm_log_stop(struct hv_soft_vm *vm);

/*
 * Re-arm [gfn, gfn + npages) under the write lock and flush TLBs: every
 * leaf loses write permission and its dirty bit (HV_SOFT_LOG_WP, and
 * HV_SOFT_LOG_OFF for a slot turning read-only), or, in PML mode, 4 KiB
 * leaves only lose the dirty bit. Control thread; vCPUs may run.
 */
void hv_soft_vm_protect(struct hv_soft_vm *vm, gfn_t gfn, uint64_t npages,
			enum hv_soft_log_mode mode);
/*
 * Unmap [gfn, gfn + npages) and free its tables (write lock), flushing
 * TLBs: for a memslot deleted or moved, after the memslot set published
 * the change and its grace period ended, so no fault can map the old
 * range again. Control thread; vCPUs may run.
 */
void hv_soft_vm_zap(struct hv_soft_vm *vm, gfn_t gfn, uint64_t npages);

/* Flush every vCPU's PML into the memslot bitmaps. Returns entries. */
uint64_t hv_soft_vm_sync_pml(struct hv_soft_vm *vm);

struct hv_soft_clear_opts {
	uint64_t chunk_pages;	    /* multiple of 64; 0 = whole range */
	enum hv_soft_lock_mode lock;
	bool eager_split;	    /* false: leave huge leaves to faults */
};

/*
 * Re-arm logging for exactly the pages set in @mask (bit i = page
 * @first + i of slot @slot_id, @count pages), chunk by chunk (see above).
 * Returns 0 when every chunk was processed, -ENOENT (slot), -EINVAL
 * (range), -ENOMEM (split cache could not be filled; the pages done so far
 * stay protected, the rest unprotected: still correct, just not re-armed).
 * Harvester thread; vCPUs may run.
 */
int hv_soft_vm_clear(struct hv_soft_vm *vm, uint32_t slot_id, uint64_t first,
		     uint64_t count, const uint64_t *mask,
		     const struct hv_soft_clear_opts *o);

/*
 * Flush a PML buffer of @n GPAs into the memslot bitmaps: resolve the slot
 * set once per flush (a read-side section and a last-slot cache), or, with
 * @per_entry, take the read lock and look the slot up for every entry (the
 * baseline). GPAs outside any logged slot are dropped. Returns @n.
 */
unsigned hv_soft_pml_flush(struct hv_memslots *slots, const uint64_t *gpas,
			   unsigned n, bool per_entry);

void hv_soft_vm_get_stats(struct hv_soft_vm *vm, struct hv_soft_vm_stats *st);

/* vCPU registry (hvcore/soft/vcpu.c). 0 or -ENOSPC. */
int hv_soft_vm_add_vcpu(struct hv_soft_vm *vm, struct hv_soft_vcpu *v);
void hv_soft_vm_del_vcpu(struct hv_soft_vm *vm, struct hv_soft_vcpu *v);

#endif
