/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the shadow-mode suites: guest memory in one memslot at gfn 0,
 * and the oracles that walk the guest tables and the shadow MMU apart.
 */
#ifndef TESTS_UNIT_HVCORE_SOFT_SHADOW_UTIL_H
#define TESTS_UNIT_HVCORE_SOFT_SHADOW_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>

#include "hvcore/memslots.h"
#include "hvcore/soft/shadow.h"

struct shadow_env {
	struct hv_memslots *slots;
	struct hv_soft_shadow *sh;
	uint8_t *mem;
	uint64_t npages;
};

static inline uint64_t *env_table(struct shadow_env *e, gfn_t gfn)
{
	return (uint64_t *)(e->mem + (gfn << 12));
}

static inline void shadow_env_fini(struct shadow_env *e);

/* Memory of @npages in slot 1 at gfn 0 (@flags: HV_MEMSLOT_F_*) and a
 * shadow MMU over it with rmap @width / @layout. */
static inline int shadow_env_init(struct shadow_env *e, uint64_t npages,
				  uint32_t flags, unsigned width,
				  enum hv_soft_rmap_layout layout)
{
	struct hv_soft_shadow_cfg cfg = { .rmap_width = width,
					  .rmap_layout = layout,
					  .max_gfn = npages };
	struct hv_memslot_desc d = {
		.id = 1, .flags = flags, .base_gfn = 0, .npages = npages};
	int ret;

	memset(e, 0, sizeof(*e));
	e->npages = npages;
	e->mem = aligned_alloc(4096, npages * 4096);
	if (!e->mem)
		return -1;
	memset(e->mem, 0, npages * 4096);
	d.hva = (uintptr_t)e->mem;
	ret = hv_memslots_create(&e->slots);
	if (!ret)
		ret = hv_memslots_add(e->slots, &d);
	if (!ret)
		ret = hv_soft_shadow_create(&cfg, e->slots, &e->sh);
	if (ret)
		shadow_env_fini(e);
	return ret;
}

static inline void shadow_env_fini(struct shadow_env *e)
{
	hv_soft_shadow_destroy(e->sh);
	hv_memslots_destroy(e->slots);
	free(e->mem);
	memset(e, 0, sizeof(*e));
}

/*
 * The guest's own walk of @gva under @cr3 in guest memory: the gfn it maps
 * and whether every level allows writes. False when not present.
 */
static inline bool guest_walk(struct shadow_env *e, gpa_t cr3, uint64_t gva,
			      gfn_t *gfn, bool *rw)
{
	gfn_t table = cr3 >> 12;

	*rw = true;
	for (int level = 3; level >= 0; level--) {
		uint64_t pte;

		if (table >= e->npages)
			return false;
		pte = env_table(e, table)[(gva >> (12 + 9 * level)) & 511];
		if (!(pte & HV_GPTE_P))
			return false;
		*rw = *rw && (pte & HV_GPTE_RW);
		table = (pte & HV_GPTE_ADDR) >> 12;
	}
	*gfn = table;
	return true;
}

struct pair {
	uint64_t gfn;
	uintptr_t spte;
};

struct pairs {
	struct pair *v;
	uint64_t n, cap;
	gfn_t cur;
	struct shadow_env *e;
	uint64_t bad_target;
};

static inline void push(struct pairs *p, gfn_t gfn, uint64_t *spte)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 1024;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
	}
	p->v[p->n++] = (struct pair){gfn, (uintptr_t)spte};
}

static inline void from_leaf(uint64_t *spte, gfn_t gfn, void *arg)
{
	struct pairs *p = arg;

	if ((*spte & ~0xfffULL) != (uintptr_t)(p->e->mem + (gfn << 12)))
		p->bad_target++;
	push(p, gfn, spte);
}

static inline void from_rmap(uint64_t *spte, void *arg)
{
	struct pairs *p = arg;

	push(p, p->cur, spte);
}

static inline int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->gfn != y->gfn)
		return x->gfn < y->gfn ? -1 : 1;
	return (x->spte > y->spte) - (x->spte < y->spte);
}

/*
 * The rmap-exactness oracle: the (gfn, spte) pairs found by walking every
 * shadow page equal, as sets, those found in the rmaps of every gfn, and
 * every leaf points at its gfn's host page. Returns mismatches; *@leaves
 * the number of leaves.
 */
static inline uint64_t rmap_mismatches(struct shadow_env *e, uint64_t *leaves)
{
	struct pairs a = {.e = e}, b = {.e = e};
	uint64_t bad;

	hv_soft_shadow_for_each_leaf(e->sh, from_leaf, &a);
	for (b.cur = 0; b.cur < e->npages; b.cur++)
		hv_soft_shadow_rmap_for_each(e->sh, b.cur, from_rmap, &b);
	if (a.n)
		qsort(a.v, a.n, sizeof(*a.v), cmp_pair);
	if (b.n)
		qsort(b.v, b.n, sizeof(*b.v), cmp_pair);
	bad = a.bad_target + (a.n > b.n ? a.n - b.n : b.n - a.n);
	for (uint64_t i = 0; i < a.n && i < b.n; i++)
		bad += cmp_pair(&a.v[i], &b.v[i]) != 0;
	*leaves = a.n;
	free(a.v);
	free(b.v);
	return bad;
}

#endif
