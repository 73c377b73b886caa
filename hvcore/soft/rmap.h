/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_rmap: the reverse map of the soft MMU's shadow mode (gfn -> the
 * shadow PTEs that map it), modelled on KVM's pte_list_desc around the
 * time PTE_LIST_EXT went from 3 to 15: without a count, and with a count
 * per descriptor placed after or before the array.
 *
 * A struct hv_soft_rmap_head is one word: 0 (no entry), a shadow-PTE
 * pointer (one entry, stored inline; bit 0 clear), or a descriptor pointer
 * with bit 0 set. A descriptor holds up to W entries and a pointer to the
 * next one:
 *
 *   no count (the seed's patch, 3 -> 15): { sptes[W]; more }
 *   count last:                           { more; sptes[W]; count }
 *   count first:                          { more; count; sptes[W] }
 *
 * Without a count a descriptor is 8 W + 8 bytes (W = 3: 32, W = 15: 128)
 * and "full" means its last slot is used; the entries are found by
 * scanning for the first empty slot. With a count both layouts are
 * 8 + 8 W + 8 bytes (W = 14: 128 bytes, two cache lines exactly; W = 15:
 * 136). The code is generated per (W, layout) at compile time from
 * rmap_tmpl.h, so each instance has its constants folded like the kernel's,
 * and one binary picks an instance at run time (hv_soft_rmap_create) to
 * compare them side by side. Widths built: HV_SOFT_RMAP_WIDTHS.
 *
 * Algorithms (the kernel's of that time, kept so the widths compare as
 * they did there): add walks the chain to the first descriptor that has
 * room (appending a new one at the tail); remove scans from the head for
 * the entry and fills its hole with the last entry of the same
 * descriptor, freeing a descriptor that became empty. A head that held
 * one entry inline and grows moves it into a descriptor; it does not go
 * back to inline when it shrinks (KVM neither).
 *
 * Descriptors come from a slab owned by the struct hv_soft_rmap: 64 KiB
 * chunks cut into objects of exactly the descriptor's size, packed, as a
 * kmem_cache does, so a 136-byte descriptor straddles cache lines the way
 * it does in the kernel.
 *
 * Threads: none of its own; the caller serialises every call on one rmap
 * (the shadow MMU holds its lock).
 */
#ifndef HVCORE_SOFT_RMAP_H
#define HVCORE_SOFT_RMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The widths generated, in increasing order. */
#define HV_SOFT_RMAP_WIDTHS { 1, 3, 14, 15, 31 }
#define HV_SOFT_RMAP_NR_WIDTHS 5

enum hv_soft_rmap_layout {
	HV_SOFT_RMAP_COUNT_LAST = 0,
	HV_SOFT_RMAP_COUNT_FIRST = 1,
	HV_SOFT_RMAP_NO_COUNT = 2,
};

struct hv_soft_rmap_head {
	uintptr_t val;
};

struct hv_soft_rmap;

/* Called for each entry; @spte is the shadow PTE's address. */
typedef void (*hv_soft_rmap_fn)(uint64_t *spte, void *arg);

struct hv_soft_rmap_stats {
	uint64_t descs;		/* descriptors in use */
	uint64_t peak_descs;	/* most in use at once since create */
	uint64_t chunk_bytes;	/* slab memory held (64 KiB chunks) */
};

/*
 * An rmap instance of width @width and layout @layout. 0, -EINVAL (no
 * such instance generated), -ENOMEM. *out untouched on failure.
 */
int hv_soft_rmap_create(unsigned width, enum hv_soft_rmap_layout layout,
			struct hv_soft_rmap **out);
/* Frees the slab: every head using it must be dropped. NULL no-op. */
void hv_soft_rmap_destroy(struct hv_soft_rmap *r);

unsigned hv_soft_rmap_width(const struct hv_soft_rmap *r);
enum hv_soft_rmap_layout hv_soft_rmap_layout(const struct hv_soft_rmap *r);
/* sizeof the descriptor. */
size_t hv_soft_rmap_desc_size(const struct hv_soft_rmap *r);

/*
 * Add @spte to @head. Returns, as KVM's pte_list_add did, the entries met
 * on the way to the slot used (the descriptors walked plus the one used):
 * the entries held before when no removal left a hole, fewer otherwise.
 * -ENOMEM: not added (the head still holds the same entries). The caller
 * never adds the same spte twice.
 */
int hv_soft_rmap_add(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		     uint64_t *spte);
/* Remove @spte. Returns false when @head does not hold it. */
bool hv_soft_rmap_remove(struct hv_soft_rmap *r,
			 struct hv_soft_rmap_head *head, uint64_t *spte);
/* Entries in @head. */
unsigned hv_soft_rmap_count(const struct hv_soft_rmap *r,
			    const struct hv_soft_rmap_head *head);
/* Call @fn on every entry; @fn must not change @head. */
void hv_soft_rmap_for_each(const struct hv_soft_rmap *r,
			   const struct hv_soft_rmap_head *head,
			   hv_soft_rmap_fn fn, void *arg);
/* Call @fn on every entry, then empty @head and free its descriptors
 * (KVM's pte_list_destroy, the zap path). */
void hv_soft_rmap_drain(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
			hv_soft_rmap_fn fn, void *arg);

void hv_soft_rmap_get_stats(const struct hv_soft_rmap *r,
			    struct hv_soft_rmap_stats *st);

#endif
