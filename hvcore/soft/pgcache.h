/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_pgcache: a small stock of zeroed 4 KiB page-table pages.
 *
 * The MMU never allocates while it holds its lock (an allocation may sleep
 * or take the allocator's own locks while vCPUs wait). Callers top a cache
 * up before taking the MMU lock, and the table code takes pages from it
 * under the lock; when the stock runs out the operation returns -ENOMEM and
 * the caller drops the lock, tops up and retries (KVM's
 * kvm_mmu_memory_cache, and the split cache of eager page splitting).
 *
 * Not thread-safe: each cache has one owner at a time (a vCPU thread for
 * its fault cache; the clear path, serialised by the MMU's clear mutex, for
 * the split cache).
 */
#ifndef HVCORE_SOFT_PGCACHE_H
#define HVCORE_SOFT_PGCACHE_H

#define HV_SOFT_PGCACHE_CAP 64u

struct hv_soft_pgcache {
	unsigned nr;
	void *pages[HV_SOFT_PGCACHE_CAP];
};

/* Fill up to @min pages (capped at HV_SOFT_PGCACHE_CAP). 0 or -ENOMEM
 * (whatever was allocated stays in the cache). Never under the MMU lock. */
int hv_soft_pgcache_topup(struct hv_soft_pgcache *c, unsigned min);

/* A zeroed page, or NULL when empty. */
void *hv_soft_pgcache_alloc(struct hv_soft_pgcache *c);

/* Give back a page that was never made visible (a lost install race). It
 * is zeroed again; freed if the cache is full. */
void hv_soft_pgcache_put(struct hv_soft_pgcache *c, void *page);

/* Free every cached page. */
void hv_soft_pgcache_drain(struct hv_soft_pgcache *c);

#endif
