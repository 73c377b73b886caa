/* SPDX-License-Identifier: MIT */
/*
 * A records workload in the spirit of ebizzy -M, for the overcommitted
 * soft vCPUs (hvcore/soft/sched.h): each vCPU runs one guest thread that
 * does records (read a chunk of a random page of its region, search it,
 * write it to another page), takes a shared spinlock for a short
 * critical section every lock_every records (an allocator's lock), and
 * every free_every records "frees memory": it takes the VM's sleeping
 * mutex (mmap_sem), sends a synchronous call to every other vCPU (the
 * TLB shootdown) and releases it. Waiters for the mutex sleep (halt), so
 * the targets of the shootdown are often halted vCPUs that the IPI wakes:
 * the case the ready boost is about. Optionally, every call_every records,
 * a synchronous call to every other vCPU without the mutex, so that
 * several senders' calls cross.
 *
 * Freestanding like hvcore/wl_sync.h, on which it runs: all shared state
 * is in the sync area (guest memory); the records touch the vCPU's region
 * through the env's page accessors.
 *
 * Threads: one call per vCPU, on its own thread.
 */
#ifndef HVCORE_WL_EBIZZY_H
#define HVCORE_WL_EBIZZY_H

#include <stdint.h>

#include "hvcore/wl_sync.h"

/* Guest-physical page of the sync area (below the guest image, after the
 * parametric workload's params and status pages, hvcore/workload.h). */
#define HV_WL_EBIZZY_AREA_GPA 0x14000ULL

struct hv_wl_ebizzy_cfg {
	uint64_t region_gpa;   /* this vCPU's pages, page-aligned */
	uint64_t region_pages; /* >= 2 */
	uint32_t chunk_bytes;  /* copied and searched per page, <= 4096 */
	uint32_t chunk_pages;  /* pages per record (>= 1) */
	uint32_t lock_every;   /* records between spinlock sections; 0 off */
	uint32_t lock_hold;    /* accesses inside the spinlock section */
	uint32_t free_every;   /* records between frees (mutex + call); 0 off */
	uint32_t call_every;   /* records between bare calls to all; 0 off */
	uint32_t mutex_spins;  /* optimistic spins before a mutex sleeps */
	uint64_t max_records;  /* 0: until the host stops the vCPUs */
	uint64_t seed;
};

struct hv_wl_ebizzy_stats {
	uint64_t records;
	uint64_t found; /* search hits, so the search is not optimised out */
};

/*
 * Run vCPU @c (its env, area_gpa and id set; its handler is replaced)
 * until max_records (then idle, handling calls, until every vCPU has
 * finished) or until the host sets the area's stop flag. Returns 0, or
 * -22 (EINVAL) for bad parameters (nothing touched then).
 */
int hv_wl_ebizzy_run(struct hv_wl_sync_cpu *c,
		     const struct hv_wl_ebizzy_cfg *cfg,
		     struct hv_wl_ebizzy_stats *st);

#endif
