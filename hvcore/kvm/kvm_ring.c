// SPDX-License-Identifier: MIT
/*
 * Dirty-ring collection (see kvm_ring.h). The hot loop: one acquire load of
 * flags, a slot resolution only when the slot id changes, bits gathered in
 * a 64-page word mask and published with one atomic OR per word.
 */
#include "hvcore/kvm/kvm_ring.h"
#include "hvcore/kvm/kvm_caps.h"

struct word_acc {
	struct hv_dirty_bitmap *bm;
	uint64_t word;
	uint64_t mask;
};

static inline void acc_flush(struct word_acc *a)
{
	if (a->mask)
		hv_dirty_bitmap_set_mask(a->bm, a->word, a->mask);
	a->mask = 0;
}

static inline void acc_add(struct word_acc *a, struct hv_dirty_bitmap *bm,
			   uint64_t page)
{
	uint64_t w = page / HV_DIRTY_WORD_PAGES;

	if (bm != a->bm || w != a->word) {
		acc_flush(a);
		a->bm = bm;
		a->word = w;
	}
	a->mask |= 1ULL << (page % HV_DIRTY_WORD_PAGES);
}

void hv_kvm_ring_collect(struct kvm_dirty_gfn *ring, uint32_t size,
			 uint32_t *fetch, const struct hv_memslots_snap *snap,
			 bool per_entry, struct hv_kvm_ring_result *res)
{
	const struct hv_memslot *slot = NULL;
	uint32_t cur_id = UINT32_MAX;
	struct word_acc acc = {0};
	uint32_t idx = *fetch;
	uint32_t n;

	for (n = 0; n < size; n++, idx++) {
		struct kvm_dirty_gfn *e = &ring[idx & (size - 1)];
		uint32_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
		uint32_t id;
		uint64_t off;

		if (!(flags & KVM_DIRTY_GFN_F_DIRTY))
			break;
		id = e->slot;
		off = e->offset;
		if (per_entry || id != cur_id) {
			slot = hv_memslots_by_id(snap, id & 0xffff);
			cur_id = id;
			res->lookups++;
		}
		if (slot && slot->dirty && (id >> 16) == 0 &&
		    off < slot->npages)
			acc_add(&acc, slot->dirty, off);
		else
			res->bad++;
		/* Handing the entry back before the word is flushed is
		 * safe: KVM re-protects the page only in a later
		 * KVM_RESET_DIRTY_RINGS, and even if another thread issues
		 * one meanwhile, a re-protected page is logged again on its
		 * next write while our bit still lands below. */
		__atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET,
				 __ATOMIC_RELEASE);
	}
	acc_flush(&acc);
	res->entries += n;
	*fetch = idx;
}

uint32_t hv_kvm_ring_resync_fetch(struct kvm_dirty_gfn *ring, uint32_t size,
				  uint32_t *fetch)
{
	for (uint32_t i = 0; i < size; i++) {
		struct kvm_dirty_gfn *e = &ring[(*fetch + i) & (size - 1)];

		if (__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) &
		    KVM_DIRTY_GFN_F_DIRTY) {
			*fetch += i;
			return i;
		}
	}
	return 0;
}
