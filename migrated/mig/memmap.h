/* SPDX-License-Identifier: MIT */
/*
 * mig_memmap: where a migration's guest memory lives on this host, as a
 * set of slots (slot id -> first gfn, npages, host pointer).
 *
 * The sender reads pages through it; the receiver's batch decoder writes
 * through it after checking every received slot id and gfn range against
 * it (migrated/mig/batch.h). It is built once per migration from the VM's
 * memslots and is immutable afterwards: any thread may read it without a
 * lock. It does not own the memory it points to.
 */
#ifndef MIG_MEMMAP_H
#define MIG_MEMMAP_H

#include "hvcore/types.h"

struct mig_memmap_slot {
	uint32_t id;
	gfn_t base_gfn;
	uint64_t npages;
	uint8_t *host; /* npages * 4 KiB, page-aligned */
};

struct mig_memmap;

/*
 * Copy @n slots into a new map. Returns 0, -EINVAL (n == 0 or above
 * HV_MEMSLOT_ID_LIMIT, npages == 0, NULL or unaligned host pointer,
 * gfn range overflowing 52 bits), -EEXIST (duplicate id) or -ENOMEM.
 * *@out is untouched on failure.
 */
int mig_memmap_create(const struct mig_memmap_slot *slots, unsigned n,
		      struct mig_memmap **out);
void mig_memmap_destroy(struct mig_memmap *map);

unsigned mig_memmap_count(const struct mig_memmap *map);
/* The @i-th slot (0 <= i < count) in ascending id order. */
const struct mig_memmap_slot *mig_memmap_at(const struct mig_memmap *map,
					    unsigned i);
/* The slot with @id, or NULL. O(log n). */
const struct mig_memmap_slot *mig_memmap_find(const struct mig_memmap *map,
					      uint32_t id);
/*
 * Host address of pages [@gfn, @gfn + @npages) of slot @id, or NULL when
 * the slot does not exist or the range is not entirely inside it
 * (overflow-safe). @npages == 0 returns NULL.
 */
uint8_t *mig_memmap_range(const struct mig_memmap *map, uint32_t id,
			  gfn_t gfn, uint64_t npages);

/*
 * Index of page @gfn of slot @id when the slots' pages are numbered back
 * to back in mig_memmap_at() order (the page hash tables' order,
 * digest.h), or UINT64_MAX when the slot does not exist or does not hold
 * @gfn. O(number of slots).
 */
uint64_t mig_memmap_index(const struct mig_memmap *map, uint32_t id,
			  gfn_t gfn);

#endif
