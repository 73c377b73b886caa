// SPDX-License-Identifier: MIT
#include "migrated/mig/memmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/memslots.h"

struct mig_memmap {
	unsigned n;
	struct mig_memmap_slot slots[]; /* sorted by id */
};

static int cmp_slot(const void *a, const void *b)
{
	const struct mig_memmap_slot *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

int mig_memmap_create(const struct mig_memmap_slot *slots, unsigned n,
		      struct mig_memmap **out)
{
	struct mig_memmap *map;

	if (!n || n > HV_MEMSLOT_ID_LIMIT || !slots)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		const struct mig_memmap_slot *s = &slots[i];

		if (!s->npages || !s->host ||
		    ((uintptr_t)s->host & (HV_PAGE_SIZE - 1)))
			return -EINVAL;
		if (s->base_gfn >= HV_MEMSLOT_MAX_GFN ||
		    s->npages > HV_MEMSLOT_MAX_GFN - s->base_gfn)
			return -EINVAL;
	}
	map = malloc(sizeof(*map) + n * sizeof(map->slots[0]));
	if (!map)
		return -ENOMEM;
	map->n = n;
	memcpy(map->slots, slots, n * sizeof(map->slots[0]));
	qsort(map->slots, n, sizeof(map->slots[0]), cmp_slot);
	for (unsigned i = 1; i < n; i++) {
		if (map->slots[i].id == map->slots[i - 1].id) {
			free(map);
			return -EEXIST;
		}
	}
	*out = map;
	return 0;
}

void mig_memmap_destroy(struct mig_memmap *map)
{
	free(map);
}

unsigned mig_memmap_count(const struct mig_memmap *map)
{
	return map->n;
}

const struct mig_memmap_slot *mig_memmap_at(const struct mig_memmap *map,
					    unsigned i)
{
	return i < map->n ? &map->slots[i] : NULL;
}

const struct mig_memmap_slot *mig_memmap_find(const struct mig_memmap *map,
					      uint32_t id)
{
	unsigned lo = 0, hi = map->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (map->slots[mid].id == id)
			return &map->slots[mid];
		if (map->slots[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint8_t *mig_memmap_range(const struct mig_memmap *map, uint32_t id,
			  gfn_t gfn, uint64_t npages)
{
	const struct mig_memmap_slot *s = mig_memmap_find(map, id);
	uint64_t off;

	if (!s || !npages || gfn < s->base_gfn)
		return NULL;
	off = gfn - s->base_gfn;
	if (off >= s->npages || npages > s->npages - off)
		return NULL;
	return s->host + (off << HV_PAGE_SHIFT);
}

uint64_t mig_memmap_index(const struct mig_memmap *map, uint32_t id,
			  gfn_t gfn)
{
	uint64_t idx = 0;

	for (unsigned i = 0; i < mig_memmap_count(map); i++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(map, i);

		if (sl->id == id)
			return gfn >= sl->base_gfn &&
					       gfn - sl->base_gfn < sl->npages
				       ? idx + (gfn - sl->base_gfn)
				       : UINT64_MAX;
		idx += sl->npages;
	}
	return UINT64_MAX;
}
