// SPDX-License-Identifier: MIT
#include "hvcore/soft/pgcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/types.h"

int hv_soft_pgcache_topup(struct hv_soft_pgcache *c, unsigned min)
{
	if (min > HV_SOFT_PGCACHE_CAP)
		min = HV_SOFT_PGCACHE_CAP;
	while (c->nr < min) {
		void *p = aligned_alloc(HV_PAGE_SIZE, HV_PAGE_SIZE);

		if (!p)
			return -ENOMEM;
		memset(p, 0, HV_PAGE_SIZE);
		c->pages[c->nr++] = p;
	}
	return 0;
}

void *hv_soft_pgcache_alloc(struct hv_soft_pgcache *c)
{
	return c->nr ? c->pages[--c->nr] : NULL;
}

void hv_soft_pgcache_put(struct hv_soft_pgcache *c, void *page)
{
	if (c->nr == HV_SOFT_PGCACHE_CAP) {
		free(page);
		return;
	}
	memset(page, 0, HV_PAGE_SIZE);
	c->pages[c->nr++] = page;
}

void hv_soft_pgcache_drain(struct hv_soft_pgcache *c)
{
	while (c->nr)
		free(c->pages[--c->nr]);
}
