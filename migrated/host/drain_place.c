// SPDX-License-Identifier: MIT
/*
 * migd_drain_place: the placement rule of a host drain (drain_place.h).
 */
#include <errno.h>
#include <string.h>

#include "migrated/host/drain_place.h"

static bool fits(const struct migd_drain_host *h, uint64_t mem)
{
	return h->usable && h->mem_used <= h->mem_bytes &&
	       mem <= h->mem_bytes - h->mem_used;
}

/* Is @a a better home than @b for a VM of @mem and @vcpus? */
static bool better(const struct migd_drain_host *a,
		   const struct migd_drain_host *b, uint64_t mem,
		   uint32_t vcpus)
{
	uint64_t fa = a->mem_bytes - a->mem_used - mem;
	uint64_t fb = b->mem_bytes - b->mem_used - mem;
	int64_t va = (int64_t)a->vcpus - a->vcpus_used - vcpus;
	int64_t vb = (int64_t)b->vcpus - b->vcpus_used - vcpus;

	if (fa != fb)
		return fa > fb;
	if (va != vb)
		return va > vb;
	return strcmp(a->id, b->id) < 0;
}

int migd_drain_place(const struct migd_drain_host *h, size_t n, uint64_t mem,
		     uint32_t vcpus, unsigned max_per_host)
{
	unsigned limit = max_per_host ? max_per_host : 1;
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (fits(&h[i], mem) &&
		    (best < 0 || better(&h[i], &h[best], mem, vcpus)))
			best = (int)i;
	if (best < 0)
		return -ENOSPC;
	return h[best].inflight < limit ? best : -EBUSY;
}
