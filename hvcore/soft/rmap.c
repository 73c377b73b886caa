// SPDX-License-Identifier: MIT
#include "hvcore/soft/rmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"

#define CHUNK_BYTES (64u << 10)

struct rmap_ops {
	unsigned width;
	enum hv_soft_rmap_layout layout;
	size_t desc_size;
	int (*add)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		   uint64_t *spte);
	bool (*remove)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		       uint64_t *spte);
	unsigned (*count)(const struct hv_soft_rmap_head *head);
	void (*for_each)(const struct hv_soft_rmap_head *head,
			 hv_soft_rmap_fn fn, void *arg);
	void (*drain)(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		      hv_soft_rmap_fn fn, void *arg);
};

/* A slab chunk's link, in its last bytes (objects start at its first). */
struct chunk {
	void *next; /* the next chunk's base */
};

struct free_obj {
	struct free_obj *next;
};

struct hv_soft_rmap {
	const struct rmap_ops *ops;
	void *chunks; /* base of the newest chunk */
	struct free_obj *free;
	uint64_t descs, peak_descs, chunk_bytes;
};

static struct chunk *chunk_link(void *base)
{
	return (struct chunk *)((uint8_t *)base + CHUNK_BYTES -
				sizeof(struct chunk));
}

/*
 * Carve a new chunk into free objects. Objects are packed back to back
 * from the chunk's first byte (page-aligned), as SLUB lays out a slab
 * page, so a 128-byte descriptor is 128-byte aligned and a 136-byte one
 * drifts across line boundaries as in the kernel. 0 or -ENOMEM.
 */
static int grow(struct hv_soft_rmap *r)
{
	size_t sz = r->ops->desc_size;
	uint8_t *base = aligned_alloc(4096, CHUNK_BYTES), *p, *end;

	if (!base)
		return -ENOMEM;
	chunk_link(base)->next = r->chunks;
	r->chunks = base;
	r->chunk_bytes += CHUNK_BYTES;
	end = (uint8_t *)chunk_link(base);
	/* Pushed in reverse so allocation runs in address order. */
	for (p = base + ((end - base) / sz - 1) * sz; p >= base; p -= sz) {
		struct free_obj *o = (struct free_obj *)p;

		o->next = r->free;
		r->free = o;
		if (p == base)
			break;
	}
	return 0;
}

static void *desc_alloc(struct hv_soft_rmap *r)
{
	struct free_obj *o;

	if (!r->free && grow(r))
		return NULL;
	o = r->free;
	r->free = o->next;
	memset(o, 0, r->ops->desc_size);
	if (++r->descs > r->peak_descs)
		r->peak_descs = r->descs;
	return o;
}

static void desc_free(struct hv_soft_rmap *r, void *p)
{
	struct free_obj *o = p;

	o->next = r->free;
	r->free = o;
	r->descs--;
}

/* The instances. Each include defines <name>_<sfx> functions and ops. */
#define RT_W 1
#define RT_LAYOUT 0
#define RT_SFX _w1
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 3
#define RT_LAYOUT 0
#define RT_SFX _w3
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 14
#define RT_LAYOUT 0
#define RT_SFX _w14
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 15
#define RT_LAYOUT 0
#define RT_SFX _w15
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 31
#define RT_LAYOUT 0
#define RT_SFX _w31
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 1
#define RT_LAYOUT 1
#define RT_SFX _w1cf
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 3
#define RT_LAYOUT 1
#define RT_SFX _w3cf
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 14
#define RT_LAYOUT 1
#define RT_SFX _w14cf
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 15
#define RT_LAYOUT 1
#define RT_SFX _w15cf
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 31
#define RT_LAYOUT 1
#define RT_SFX _w31cf
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 1
#define RT_LAYOUT 2
#define RT_SFX _w1nc
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 3
#define RT_LAYOUT 2
#define RT_SFX _w3nc
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 14
#define RT_LAYOUT 2
#define RT_SFX _w14nc
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 15
#define RT_LAYOUT 2
#define RT_SFX _w15nc
#include "hvcore/soft/rmap_tmpl.h"
#define RT_W 31
#define RT_LAYOUT 2
#define RT_SFX _w31nc
#include "hvcore/soft/rmap_tmpl.h"

static const struct rmap_ops *const instances[] = {
	&ops_w1, &ops_w3, &ops_w14, &ops_w15, &ops_w31,
	&ops_w1cf, &ops_w3cf, &ops_w14cf, &ops_w15cf, &ops_w31cf,
	&ops_w1nc, &ops_w3nc, &ops_w14nc, &ops_w15nc, &ops_w31nc,
};

int hv_soft_rmap_create(unsigned width, enum hv_soft_rmap_layout layout,
			struct hv_soft_rmap **out)
{
	const struct rmap_ops *ops = NULL;
	struct hv_soft_rmap *r;

	for (size_t i = 0; i < sizeof(instances) / sizeof(instances[0]); i++)
		if (instances[i]->width == width &&
		    instances[i]->layout == layout)
			ops = instances[i];
	if (!ops)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = ops;
	*out = r;
	return 0;
}

void hv_soft_rmap_destroy(struct hv_soft_rmap *r)
{
	void *c, *next;

	if (!r)
		return;
	for (c = r->chunks; c; c = next) {
		next = chunk_link(c)->next;
		free(c);
	}
	free(r);
}

unsigned hv_soft_rmap_width(const struct hv_soft_rmap *r)
{
	return r->ops->width;
}

enum hv_soft_rmap_layout hv_soft_rmap_layout(const struct hv_soft_rmap *r)
{
	return r->ops->layout;
}

size_t hv_soft_rmap_desc_size(const struct hv_soft_rmap *r)
{
	return r->ops->desc_size;
}

int hv_soft_rmap_add(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
		     uint64_t *spte)
{
	HV_BUG_ON((uintptr_t)spte & 1);
	return r->ops->add(r, head, spte);
}

bool hv_soft_rmap_remove(struct hv_soft_rmap *r,
			 struct hv_soft_rmap_head *head, uint64_t *spte)
{
	return r->ops->remove(r, head, spte);
}

unsigned hv_soft_rmap_count(const struct hv_soft_rmap *r,
			    const struct hv_soft_rmap_head *head)
{
	return r->ops->count(head);
}

void hv_soft_rmap_for_each(const struct hv_soft_rmap *r,
			   const struct hv_soft_rmap_head *head,
			   hv_soft_rmap_fn fn, void *arg)
{
	r->ops->for_each(head, fn, arg);
}

void hv_soft_rmap_drain(struct hv_soft_rmap *r, struct hv_soft_rmap_head *head,
			hv_soft_rmap_fn fn, void *arg)
{
	r->ops->drain(r, head, fn, arg);
}

void hv_soft_rmap_get_stats(const struct hv_soft_rmap *r,
			    struct hv_soft_rmap_stats *st)
{
	st->descs = r->descs;
	st->peak_descs = r->peak_descs;
	st->chunk_bytes = r->chunk_bytes;
}
