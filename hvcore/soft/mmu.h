/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_mmu: the soft accelerator's stage-2 page table (GPA -> host page)
 * and the locking and TLB-flush protocol around it.
 *
 * Structure: 4 levels, 4 KiB / 2 MiB / 1 GiB leaves, entries in the format
 * of a struct hv_arch_pte_fmt (x86 EPT-style or arm64 stage-2).
 *
 * Locking (the TDP MMU model):
 *  - every entry is changed only by atomic compare-and-swap, so holders of
 *    the *read* lock may install leaves and tables, split huge leaves and
 *    change permissions concurrently; a lost CAS means "someone else changed
 *    this entry: re-walk";
 *  - the *write* lock excludes everyone: used to free table pages (zap) and
 *    by the write-lock baseline of clear-dirty-log;
 *  - nothing is allocated under either lock: table pages come from a
 *    struct hv_soft_pgcache topped up before the lock is taken;
 *  - the lock prefers writers, and hv_soft_mmu_lock_contended() tells a
 *    long holder that someone waits (rwlock_needbreak()).
 *  Table pages are freed only under the write lock, so a read-lock holder
 *  may dereference any table it reached.
 *
 * Software TLBs and remote flush: each vCPU caches translations in its own
 * TLB and registers a struct hv_soft_tlb_ack. A vCPU brackets every guest
 * access with hv_soft_tlb_enter()/hv_soft_tlb_exit(); hv_soft_mmu_flush()
 * bumps the generation and waits until every vCPU is either outside an
 * access or inside one that began at the new generation (and so has dropped
 * its TLB). After flush returns no vCPU can write through a translation
 * cached before it. vCPUs must not take the MMU lock between enter and
 * exit (a flusher holding the write lock would wait for them forever).
 *
 *   vCPU                               flusher (after changing entries)
 *   cur = ENTERING (seq_cst)           gen = gen + 1 (seq_cst) = G
 *   g = gen (seq_cst); cur = g         for each vCPU: wait while
 *   if g != tlb_gen: drop TLB              cur != 0 && (cur == ENTERING ||
 *   ... access through TLB ...                            cur < G)
 *   cur = 0 (release)
 */
#ifndef HVCORE_SOFT_MMU_H
#define HVCORE_SOFT_MMU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hvcore/soft/pgcache.h"
#include "hvcore/pte_fmt.h"
#include "hvcore/types.h"

#define HV_SOFT_MAX_TLBS 64u
#define HV_SOFT_TLB_ENTERING UINT64_MAX

struct hv_soft_mmu;

/* One vCPU's side of the flush handshake. */
struct hv_soft_tlb_ack {
	_Atomic uint64_t cur; /* 0 idle, ENTERING, or the generation in use */
};

/* A walk's result: the entry where it stopped. */
struct hv_soft_walk {
	_Atomic uint64_t *ptep; /* the entry */
	uint64_t pte;		/* its value when read */
	unsigned level;		/* its level */
	bool leaf;		/* pte is a present leaf */
};

struct hv_soft_mmu_stats {
	uint64_t tables;      /* table pages in the tree (root excluded) */
	uint64_t splits;      /* huge leaves split */
	uint64_t split_races; /* split CAS lost to a concurrent change */
	uint64_t flushes;     /* remote TLB flushes */
};

/* An empty table in format @fmt. 0, -ENOMEM. */
int hv_soft_mmu_create(const struct hv_arch_pte_fmt *fmt,
		       struct hv_soft_mmu **out);
/* Frees every table page. No vCPU may use @mmu. destroy(NULL) no-op. */
void hv_soft_mmu_destroy(struct hv_soft_mmu *mmu);

const struct hv_arch_pte_fmt *hv_soft_mmu_fmt(const struct hv_soft_mmu *mmu);

/* The MMU lock. Not recursive. */
void hv_soft_mmu_read_lock(struct hv_soft_mmu *mmu);
void hv_soft_mmu_read_unlock(struct hv_soft_mmu *mmu);
void hv_soft_mmu_write_lock(struct hv_soft_mmu *mmu);
void hv_soft_mmu_write_unlock(struct hv_soft_mmu *mmu);
/* True while another thread waits for the lock (any mode). */
bool hv_soft_mmu_lock_contended(struct hv_soft_mmu *mmu);

/*
 * Walk to @gpa's entry, descending through present tables down to
 * @stop_level: stops at a non-present entry, a leaf, or @stop_level.
 * Returns w->leaf. Under the read or write lock.
 */
bool hv_soft_mmu_walk_to(struct hv_soft_mmu *mmu, gpa_t gpa,
			 unsigned stop_level, struct hv_soft_walk *w);

static inline bool hv_soft_mmu_walk(struct hv_soft_mmu *mmu, gpa_t gpa,
				    struct hv_soft_walk *w)
{
	return hv_soft_mmu_walk_to(mmu, gpa, 0, w);
}

/*
 * Install a leaf at @level for @gpa -> @hva (both aligned to the level's
 * size) with generic permissions @perm, creating missing tables from
 * @cache. Read or write lock held.
 * 0; -EEXIST when a leaf or table is already present at or above @level
 * (a concurrent fault won: re-walk); -ENOMEM when @cache ran dry (drop the
 * lock, top up, retry).
 */
int hv_soft_mmu_map(struct hv_soft_mmu *mmu, gpa_t gpa, hva_t hva,
		    unsigned level, unsigned perm,
		    struct hv_soft_pgcache *cache);

/*
 * Split the huge leaf @w found (w->leaf, w->level > 0) into a table of 512
 * leaves one level down, each mapping its 1/512th of the parent's range
 * with the parent's permissions, installed by CAS. Read or write lock held.
 * 0; -EAGAIN when the entry changed since the walk (re-walk and retry);
 * -ENOMEM when @cache is empty.
 */
int hv_soft_mmu_split(struct hv_soft_mmu *mmu, const struct hv_soft_walk *w,
		      struct hv_soft_pgcache *cache);

/*
 * CAS the leaf @w found to permissions @perm. Returns false when the entry
 * changed since the walk (w->pte is refreshed; re-check and retry).
 */
bool hv_soft_mmu_set_perm(struct hv_soft_mmu *mmu, struct hv_soft_walk *w,
			  unsigned perm);

/*
 * Remove every mapping of [gpa, gpa + size) and free the tables that lie
 * inside it, then flush TLBs. Write lock held.
 */
void hv_soft_mmu_zap_range(struct hv_soft_mmu *mmu, gpa_t gpa, uint64_t size);

/*
 * Count present leaves by level (out[0] 4 KiB, out[1] 2 MiB, out[2] 1 GiB)
 * in [gpa, gpa + size). Read or write lock held.
 */
void hv_soft_mmu_count_leaves(struct hv_soft_mmu *mmu, gpa_t gpa,
			      uint64_t size, uint64_t out[3]);

/* Remote TLB flush registry: at most HV_SOFT_MAX_TLBS. 0 or -ENOSPC. */
int hv_soft_mmu_tlb_register(struct hv_soft_mmu *mmu,
			     struct hv_soft_tlb_ack *ack);
void hv_soft_mmu_tlb_unregister(struct hv_soft_mmu *mmu,
				struct hv_soft_tlb_ack *ack);

/* Current TLB generation (starts at 1). */
uint64_t hv_soft_mmu_tlb_gen(struct hv_soft_mmu *mmu);

/*
 * Remote TLB flush (see the header comment). Any thread, with or without
 * the MMU lock; never from inside a vCPU's enter/exit bracket.
 */
void hv_soft_mmu_flush(struct hv_soft_mmu *mmu);

/* Begin a guest access: returns the generation the access runs at. */
uint64_t hv_soft_tlb_enter(struct hv_soft_mmu *mmu,
			   struct hv_soft_tlb_ack *ack);

static inline void hv_soft_tlb_exit(struct hv_soft_tlb_ack *ack)
{
	atomic_store_explicit(&ack->cur, 0, memory_order_release);
}

void hv_soft_mmu_get_stats(struct hv_soft_mmu *mmu,
			   struct hv_soft_mmu_stats *st);

#endif
