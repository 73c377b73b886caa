// SPDX-License-Identifier: MIT
/*
 * Dirty-ring collection (see kvm_ring.h). Take: one acquire load of flags
 * and a 16-byte copy per entry. Apply: a slot resolution only when the slot
 * id changes, bits gathered in a 64-page word mask and published with one
 * atomic OR per word.
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

uint32_t hv_kvm_ring_take(struct kvm_dirty_gfn *ring, uint32_t size,
			  uint32_t *fetch, struct kvm_dirty_gfn *out)
{
	uint32_t idx = *fetch;
	uint32_t n;

	for (n = 0; n < size; n++, idx++) {
		struct kvm_dirty_gfn *e = &ring[idx & (size - 1)];
		uint32_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);

		if (!(flags & KVM_DIRTY_GFN_F_DIRTY))
			break;
		out[n].slot = e->slot;
		out[n].offset = e->offset;
		/* Only a later KVM_RESET_DIRTY_RINGS re-protects the page;
		 * its bit is set after that (see kvm_ring.h). */
		__atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET,
				 __ATOMIC_RELEASE);
	}
	*fetch = idx;
	return n;
}

void hv_kvm_ring_apply(const struct kvm_dirty_gfn *e, uint32_t n,
		       const struct hv_memslots_snap *snap, bool per_entry,
		       struct hv_kvm_ring_result *res)
{
	const struct hv_memslot *slot = NULL;
	uint32_t cur_id = UINT32_MAX;
	struct word_acc acc = {0};

	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = e[i].slot;
		uint64_t off = e[i].offset;

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
	}
	acc_flush(&acc);
	res->entries += n;
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
