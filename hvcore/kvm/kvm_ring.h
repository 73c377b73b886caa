/* SPDX-License-Identifier: MIT */
/*
 * Collecting one KVM dirty ring into the memslot bitmaps. Pure over its
 * arguments (no ioctls), so that it is unit-tested and benchmarked on
 * synthetic rings too.
 *
 * Protocol (KVM api.rst, "KVM_CAP_DIRTY_LOG_RING"): entry i is owned by
 * userspace once its flags have KVM_DIRTY_GFN_F_DIRTY (load-acquire, the
 * kernel publishes with a release); userspace reads slot/offset, then
 * stores KVM_DIRTY_GFN_F_RESET (store-release) and, after a batch,
 * KVM_RESET_DIRTY_RINGS re-protects the pages of every reset entry.
 *
 * Collection is split in two so that a page's bit is published only after
 * the reset that re-protects it (kvm_dirty.c has the timeline): take
 * copies the entries out and hands them back, the caller resets, apply
 * sets the bits. The kernel may reuse an entry as soon as the reset
 * returns, hence the copy.
 */
#ifndef HVCORE_KVM_KVM_RING_H
#define HVCORE_KVM_KVM_RING_H

#include <linux/kvm.h>

#include "hvcore/memslots.h"

struct hv_kvm_ring_result {
	uint32_t entries; /* entries collected */
	uint32_t lookups; /* memslot lookups made */
	uint32_t bad;	  /* entries naming no slot / out of range */
};

/*
 * Take the entries of @ring (@size entries, power of two) from *@fetch on
 * into @out (room for @size), stopping at the first entry not yet dirty or
 * after @size entries, and hand each back (F_RESET); *@fetch advances.
 * Returns the number taken.
 */
uint32_t hv_kvm_ring_take(struct kvm_dirty_gfn *ring, uint32_t size,
			  uint32_t *fetch, struct kvm_dirty_gfn *out);

/*
 * Set the bits of @n taken entries in their slots' dirty bitmaps.
 * @per_entry: look the slot up for every entry (baseline) instead of once
 * per run of entries with the same slot. Adds @n to res->entries. Must be
 * called inside a memslots read section (@snap).
 */
void hv_kvm_ring_apply(const struct kvm_dirty_gfn *e, uint32_t n,
		       const struct hv_memslots_snap *snap, bool per_entry,
		       struct hv_kvm_ring_result *res);

/*
 * Find the kernel's next entry when ours (*@fetch) is empty although the
 * ring reported full. That only happens after the kernel pushed past the
 * end of the ring (seen on the nested PVM host: its emulator overshoots
 * the soft limit, see kvm_dirty.c and tools/kvm-ring-repro), which
 * overwrites entries not yet reset. Advances *@fetch to the first dirty entry
 * within one lap and returns how far it moved (0: in sync, or nothing
 * dirty). A move means entries may have been lost: the caller must treat
 * the log as incomplete.
 */
uint32_t hv_kvm_ring_resync_fetch(struct kvm_dirty_gfn *ring, uint32_t size,
				  uint32_t *fetch);

#endif
