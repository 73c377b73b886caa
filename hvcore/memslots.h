/* SPDX-License-Identifier: MIT */
/*
 * hv_memslots: the memslots of one guest address space.
 *
 * A memslot maps a range of guest frames [base_gfn, base_gfn + npages) to
 * host memory at @hva. The set is read on every fault, every dirty-ring and
 * PML flush and every page the migration sends, and changed rarely (add,
 * delete, move, dirty-logging on/off), so it is read-copy-update:
 *
 *  - readers take hv_memslots_read_lock(), get an immutable snapshot, look
 *    slots up by id (hash, O(1)) or by gfn (sorted ranges narrowed by a
 *    bucket index, with a last-hit cache), and hv_memslots_read_unlock();
 *    they never block and never see a half-made set;
 *  - writers (serialised by the set's own mutex) publish a new snapshot
 *    atomically and reclaim the old one after a grace period (hvcore/rcu.h).
 *
 * Like KVM since its scalable-memslots work, the set keeps two snapshots,
 * active and inactive: an update is applied to the inactive one, which is
 * published, and after the grace period replayed on the other, so a flags
 * change costs O(1) plus the grace period rather than a copy of every slot.
 *
 * Limits and refusals (negative errno, nothing changed):
 *   -EINVAL   npages == 0, base_gfn + npages overflowing or beyond
 *             HV_MEMSLOT_MAX_GFN, hva not page-aligned, unknown flags,
 *             id >= HV_MEMSLOT_ID_LIMIT;
 *   -EEXIST   an id already present, or a range overlapping another slot;
 *   -ENOENT   no slot with that id;
 *   -ENOSPC   HV_MEMSLOT_MAX slots already present;
 *   -ENOMEM.
 */
#ifndef HVCORE_MEMSLOTS_H
#define HVCORE_MEMSLOTS_H

#include "hvcore/types.h"
#include "hvcore/dirty_bitmap.h"

/* KVM's limit on x86 is 32764 user memslots per address space. */
#define HV_MEMSLOT_MAX 32764u
/* Slot ids are (address space << 16 | slot) in KVM; ours fit in 16 bits. */
#define HV_MEMSLOT_ID_LIMIT 65536u
/* 52-bit guest-physical addresses. */
#define HV_MEMSLOT_MAX_GFN (1ULL << (52 - HV_PAGE_SHIFT))

/* Flags. KVM_MEM_LOG_DIRTY_PAGES and KVM_MEM_READONLY have the same bits. */
#define HV_MEMSLOT_F_DIRTY_LOG (1u << 0)
#define HV_MEMSLOT_F_READONLY (1u << 1)
#define HV_MEMSLOT_F_ALL (HV_MEMSLOT_F_DIRTY_LOG | HV_MEMSLOT_F_READONLY)

/*
 * One slot. Immutable once published: a change makes a new version, which
 * inherits @dirty while dirty logging stays on (the bitmap belongs to the
 * slot, not to the version).
 */
struct hv_memslot {
	uint32_t id;
	uint32_t flags;
	gfn_t base_gfn;
	uint64_t npages;
	hva_t hva;
	/* non-NULL iff flags has HV_MEMSLOT_F_DIRTY_LOG; atomic bit ops */
	struct hv_dirty_bitmap *dirty;
};

/* What a caller asks for; the set makes the hv_memslot. */
struct hv_memslot_desc {
	uint32_t id;
	uint32_t flags;
	gfn_t base_gfn;
	uint64_t npages;
	hva_t hva;
};

struct hv_memslots;
struct hv_memslots_snap;

/* An empty set. */
int hv_memslots_create(struct hv_memslots **out);
/* No reader may be inside a read-side section. destroy(NULL) is a no-op. */
void hv_memslots_destroy(struct hv_memslots *set);

/*
 * Updates. Any thread; serialised internally; may sleep (grace period).
 * When dirty logging is switched on, the slot's bitmap starts all set if
 * @initially_set was requested with hv_memslots_set_initially_set(), else
 * all clear.
 */
int hv_memslots_add(struct hv_memslots *set, const struct hv_memslot_desc *d);
int hv_memslots_delete(struct hv_memslots *set, uint32_t id);
int hv_memslots_move(struct hv_memslots *set, uint32_t id, gfn_t new_base);
int hv_memslots_set_flags(struct hv_memslots *set, uint32_t id,
			  uint32_t flags);
void hv_memslots_set_initially_set(struct hv_memslots *set, bool on);

/*
 * Readers. The snapshot and every slot reached through it stay valid until
 * the matching unlock; sections may nest; they must not call an update.
 */
const struct hv_memslots_snap *hv_memslots_read_lock(struct hv_memslots *set);
void hv_memslots_read_unlock(struct hv_memslots *set);

/*
 * Number of updates published before this snapshot: every successful add,
 * delete, move or flags change makes exactly one new generation, so two
 * snapshots with the same generation have the same content.
 */
uint64_t hv_memslots_generation(const struct hv_memslots_snap *s);

/*
 * Give back the calling thread's reader slot (hv_rcu_thread_exit()); optional,
 * thread exit does it too. Outside any read-side section.
 */
void hv_memslots_thread_exit(struct hv_memslots *set);

/* NULL when absent. */
const struct hv_memslot *hv_memslots_by_id(const struct hv_memslots_snap *s,
					   uint32_t id);
const struct hv_memslot *hv_memslots_by_gfn(const struct hv_memslots_snap *s,
					    gfn_t gfn);

/* Slots in ascending gfn order: index 0 .. count-1. */
unsigned hv_memslots_count(const struct hv_memslots_snap *s);
const struct hv_memslot *hv_memslots_at(const struct hv_memslots_snap *s,
					unsigned idx);

/* Host address of @gfn inside @slot (no checks beyond HV_BUG_ON). */
static inline void *hv_memslot_gfn_to_hva(const struct hv_memslot *slot,
					  gfn_t gfn)
{
	return (void *)(uintptr_t)(slot->hva +
				   ((gfn - slot->base_gfn) << HV_PAGE_SHIFT));
}

#endif
