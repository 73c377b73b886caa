// SPDX-License-Identifier: MIT
#include "hvcore/soft/shadow_fork.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/pte_fmt.h"
#include "hvcore/workload.h"

#define TABLE_FLAGS (HV_GPTE_P | HV_GPTE_RW | HV_GPTE_US)
#define LEAF_FLAGS (HV_GPTE_P | HV_GPTE_RW | HV_GPTE_US)

/* One address space's tables (gfns; 0 = none). */
struct space {
	gfn_t pml4, pdpt, pd;
	gfn_t *pts;	/* nr_pts page tables */
	uint64_t seq;	/* stamps written by this space */
};

struct hv_soft_fork {
	struct hv_soft_shadow *sh;
	struct hv_soft_fork_cfg cfg;
	unsigned nr_pts;
	gfn_t first, end, next; /* bump allocator */
	gfn_t *free;		/* freed pages, a stack */
	uint64_t nr_free;
	gfn_t *data;		/* the parent's data pages */
	uint32_t *owner;	/* per gfn - first: space that copied it */
	struct space *as;	/* 0 parent, 1.. children */
	uint8_t *page;		/* a page-sized scratch buffer */
};

int hv_soft_fork_create(struct hv_soft_shadow *sh, gfn_t first, gfn_t end,
			const struct hv_soft_fork_cfg *cfg,
			struct hv_soft_fork **out)
{
	struct hv_soft_fork *f;
	unsigned nr_pts;

	if (!cfg->data_pages || cfg->data_pages > HV_SOFT_FORK_MAX_DATA_PAGES ||
	    end <= first || !first)
		return -EINVAL;
	nr_pts = HV_DIV_ROUND_UP(cfg->data_pages, 512);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->sh = sh;
	f->cfg = *cfg;
	f->nr_pts = nr_pts;
	f->first = f->next = first;
	f->end = end;
	f->free = calloc(end - first, sizeof(*f->free));
	f->data = calloc(cfg->data_pages, sizeof(*f->data));
	f->owner = calloc(end - first, sizeof(*f->owner));
	f->as = calloc(cfg->max_children + 1ULL, sizeof(*f->as));
	f->page = aligned_alloc(HV_PAGE_SIZE, HV_PAGE_SIZE);
	if (!f->free || !f->data || !f->owner || !f->as || !f->page) {
		hv_soft_fork_destroy(f);
		return -ENOMEM;
	}
	for (unsigned i = 0; i <= cfg->max_children; i++) {
		f->as[i].pts = calloc(nr_pts, sizeof(gfn_t));
		if (!f->as[i].pts) {
			hv_soft_fork_destroy(f);
			return -ENOMEM;
		}
	}
	*out = f;
	return 0;
}

void hv_soft_fork_destroy(struct hv_soft_fork *f)
{
	if (!f)
		return;
	for (unsigned i = 0; f->as && i <= f->cfg.max_children; i++)
		free(f->as[i].pts);
	free(f->as);
	free(f->page);
	free(f->owner);
	free(f->data);
	free(f->free);
	free(f);
}

/* A zeroed guest page, or 0 when guest memory is exhausted. */
static gfn_t page_alloc(struct hv_soft_fork *f)
{
	gfn_t g;

	if (f->nr_free)
		g = f->free[--f->nr_free];
	else if (f->next < f->end)
		g = f->next++;
	else
		return 0;
	memset(f->page, 0, HV_PAGE_SIZE);
	if (hv_soft_shadow_gpa_write(f->sh, hv_gfn_to_gpa(g), f->page,
				     HV_PAGE_SIZE)) {
		f->free[f->nr_free++] = g;
		return 0;
	}
	f->owner[g - f->first] = 0;
	return g;
}

static void page_free(struct hv_soft_fork *f, gfn_t g)
{
	f->free[f->nr_free++] = g;
}

static int put_entry(struct hv_soft_fork *f, gfn_t table, unsigned idx,
		     uint64_t e)
{
	return hv_soft_shadow_gpa_write(f->sh, hv_gfn_to_gpa(table) + idx * 8,
					&e, 8);
}

static int get_entry(struct hv_soft_fork *f, gfn_t table, unsigned idx,
		     uint64_t *e)
{
	return hv_soft_shadow_gpa_read(f->sh, hv_gfn_to_gpa(table) + idx * 8,
				       e, 8);
}

static uint64_t tentry(gfn_t g)
{
	return hv_gfn_to_gpa(g) | TABLE_FLAGS;
}

/* The upper tables of a space and the links between them. */
static int build_upper(struct hv_soft_fork *f, struct space *s)
{
	int ret;

	s->pml4 = page_alloc(f);
	s->pdpt = page_alloc(f);
	s->pd = page_alloc(f);
	if (!s->pml4 || !s->pdpt || !s->pd)
		return -ENOSPC;
	ret = put_entry(f, s->pml4, hv_pte_index(HV_SOFT_FORK_DATA_GVA, 3),
			tentry(s->pdpt));
	if (!ret)
		ret = put_entry(f, s->pdpt,
				hv_pte_index(HV_SOFT_FORK_DATA_GVA, 2),
				tentry(s->pd));
	for (unsigned t = 0; !ret && t < f->nr_pts; t++) {
		s->pts[t] = page_alloc(f);
		if (!s->pts[t])
			return -ENOSPC;
		ret = put_entry(f, s->pd,
				hv_pte_index(HV_SOFT_FORK_DATA_GVA, 1) + t,
				tentry(s->pts[t]));
	}
	return ret;
}

static uint64_t data_gva(uint64_t i)
{
	return HV_SOFT_FORK_DATA_GVA + (i << HV_PAGE_SHIFT);
}

int hv_soft_fork_parent_init(struct hv_soft_fork *f)
{
	struct space *p = &f->as[0];
	int ret = build_upper(f, p);

	for (uint64_t i = 0; !ret && i < f->cfg.data_pages; i++) {
		f->data[i] = page_alloc(f);
		if (!f->data[i])
			return -ENOSPC;
		ret = put_entry(f, p->pts[i / 512], i % 512,
				hv_gfn_to_gpa(f->data[i]) | LEAF_FLAGS);
	}
	for (uint64_t i = 0; !ret && i < f->cfg.data_pages; i++) {
		struct hv_wl_stamp st = { .magic = HV_WL_STAMP_MAGIC,
					  .vcpu = 0, .seq = ++p->seq };

		ret = hv_soft_shadow_access(f->sh, hv_gfn_to_gpa(p->pml4),
					    data_gva(i), true, &st,
					    sizeof(st));
		if (ret > 0)
			ret = -EFAULT; /* the parent's own pages are RW */
	}
	return ret;
}

int hv_soft_fork_spawn(struct hv_soft_fork *f, unsigned *id)
{
	struct space *p = &f->as[0], *c = NULL;
	unsigned i;
	int ret;

	for (i = 1; i <= f->cfg.max_children; i++) {
		if (!f->as[i].pml4) {
			c = &f->as[i];
			break;
		}
	}
	if (!c)
		return -ENOSPC;
	ret = build_upper(f, c);
	if (ret)
		return ret;
	/* copy_page_range(): both sides lose write permission (COW). */
	for (unsigned t = 0; t < f->nr_pts; t++) {
		uint64_t *pt = (uint64_t *)f->page;

		ret = hv_soft_shadow_gpa_read(f->sh, hv_gfn_to_gpa(p->pts[t]),
					      pt, HV_PAGE_SIZE);
		if (ret)
			return ret;
		for (unsigned j = 0; j < 512; j++) {
			uint64_t e = pt[j];

			if (!(e & HV_GPTE_RW))
				continue;
			ret = put_entry(f, p->pts[t], j, e & ~HV_GPTE_RW);
			if (ret)
				return ret;
		}
		for (unsigned j = 0; j < 512; j++)
			pt[j] &= ~HV_GPTE_RW;
		ret = hv_soft_shadow_gpa_write(f->sh,
					       hv_gfn_to_gpa(c->pts[t]), pt,
					       HV_PAGE_SIZE);
		if (ret)
			return ret;
	}
	c->seq = 0;
	*id = i;
	return 0;
}

/* Copy-on-write of page @i for child @c: a private copy, mapped RW. */
static int cow(struct hv_soft_fork *f, unsigned id, uint64_t i)
{
	struct space *c = &f->as[id];
	gfn_t old, g;
	uint64_t e;
	int ret;

	ret = get_entry(f, c->pts[i / 512], i % 512, &e);
	if (ret)
		return ret;
	old = (e & HV_GPTE_ADDR) >> HV_PAGE_SHIFT;
	g = page_alloc(f);
	if (!g)
		return -ENOSPC;
	f->owner[g - f->first] = id;
	ret = hv_soft_shadow_gpa_read(f->sh, hv_gfn_to_gpa(old), f->page,
				      HV_PAGE_SIZE);
	if (!ret)
		ret = hv_soft_shadow_gpa_write(f->sh, hv_gfn_to_gpa(g), f->page,
					       HV_PAGE_SIZE);
	if (!ret)
		ret = put_entry(f, c->pts[i / 512], i % 512,
				hv_gfn_to_gpa(g) | LEAF_FLAGS);
	return ret;
}

int hv_soft_fork_touch(struct hv_soft_fork *f, unsigned id)
{
	struct space *c = &f->as[id];
	gpa_t cr3 = hv_gfn_to_gpa(c->pml4);
	int ret = 0;

	if (!id || id > f->cfg.max_children || !c->pml4)
		return -EINVAL;
	for (uint64_t i = 0; !ret && i < f->cfg.data_pages; i++) {
		struct hv_wl_stamp st;

		ret = hv_soft_shadow_access(f->sh, cr3, data_gva(i), false,
					    &st, sizeof(st));
		if (ret || !f->cfg.cow_every || i % f->cfg.cow_every)
			continue;
		st = (struct hv_wl_stamp){ .magic = HV_WL_STAMP_MAGIC,
					   .vcpu = (uint16_t)id,
					   .seq = ++c->seq };
		ret = hv_soft_shadow_access(f->sh, cr3, data_gva(i), true, &st,
					    sizeof(st));
		if (ret == HV_SHADOW_PF_PROT) {
			ret = cow(f, id, i);
			if (!ret)
				ret = hv_soft_shadow_access(f->sh, cr3,
							    data_gva(i), true,
							    &st, sizeof(st));
		}
	}
	return ret > 0 ? -EFAULT : ret;
}

int hv_soft_fork_exit(struct hv_soft_fork *f, unsigned id)
{
	struct space *c = &f->as[id];
	int ret = 0;

	if (!id || id > f->cfg.max_children || !c->pml4)
		return -EINVAL;
	/* zap_pte_range(): one emulated write per present entry. */
	for (unsigned t = 0; t < f->nr_pts; t++) {
		uint64_t *pt = (uint64_t *)f->page;

		ret = hv_soft_shadow_gpa_read(f->sh, hv_gfn_to_gpa(c->pts[t]),
					      pt, HV_PAGE_SIZE);
		for (unsigned j = 0; !ret && j < 512; j++) {
			gfn_t g = (pt[j] & HV_GPTE_ADDR) >> HV_PAGE_SHIFT;

			if (!(pt[j] & HV_GPTE_P))
				continue;
			ret = put_entry(f, c->pts[t], j, 0);
			if (g >= f->first && g < f->end &&
			    f->owner[g - f->first] == id) {
				f->owner[g - f->first] = 0;
				page_free(f, g);
			}
		}
		if (ret)
			return ret;
	}
	/* free_pgtables(): unlink and free the tables, top down. */
	ret = put_entry(f, c->pml4, hv_pte_index(HV_SOFT_FORK_DATA_GVA, 3), 0);
	if (!ret)
		ret = put_entry(f, c->pdpt,
				hv_pte_index(HV_SOFT_FORK_DATA_GVA, 2), 0);
	for (unsigned t = 0; !ret && t < f->nr_pts; t++) {
		ret = put_entry(f, c->pd,
				hv_pte_index(HV_SOFT_FORK_DATA_GVA, 1) + t, 0);
		page_free(f, c->pts[t]);
		c->pts[t] = 0;
	}
	if (ret)
		return ret;
	hv_soft_shadow_root_drop(f->sh, hv_gfn_to_gpa(c->pml4));
	page_free(f, c->pd);
	page_free(f, c->pdpt);
	page_free(f, c->pml4);
	c->pml4 = c->pdpt = c->pd = 0;
	return 0;
}

gpa_t hv_soft_fork_cr3(const struct hv_soft_fork *f, unsigned id)
{
	if (id > f->cfg.max_children)
		return 0;
	return hv_gfn_to_gpa(f->as[id].pml4);
}

uint64_t hv_soft_fork_data_pages(const struct hv_soft_fork *f)
{
	return f->cfg.data_pages;
}
