// SPDX-License-Identifier: MIT
#include "hvcore/soft/shadow.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"
#include "hvcore/dirty_bitmap.h"
#include "hvcore/pte_fmt.h"

/* Shadow PTE: a host address (table page or data page) and two bits. */
#define SPTE_P (1ULL << 0)
#define SPTE_W (1ULL << 1)
#define SPTE_ADDR (~0xfffULL)

#define ROOT_LEVEL (HV_PTE_LEVELS - 1)
#define HASH_BITS 12
#define HASH_SIZE (1u << HASH_BITS)

/*
 * A shadow page: its 512 entries in the first 4 KiB of an 8 KiB block and
 * this header right after them, so a shadow PTE's target finds its page
 * header with one addition (KVM keeps it in struct page).
 */
struct sp {
	gfn_t gfn;	/* the guest table it shadows */
	unsigned level; /* ROOT_LEVEL (PML4) .. 0 (page table) */
	bool root;	/* pinned by an address space */
	struct hv_soft_rmap_head parents; /* sptes pointing at this page */
	gfn_t *gfns;	/* level 0: the gfn each present entry maps */
	struct sp *hnext;
	struct sp *prev, *next; /* every shadow page */
};

struct hv_soft_shadow {
	/* immutable after create */
	struct hv_memslots *slots;
	struct hv_soft_shadow_cfg cfg;

	pthread_mutex_t lock;
	/* protected by lock */
	struct hv_soft_rmap *rmap;	  /* descriptors of every list */
	struct hv_soft_rmap_head *heads;  /* per gfn: leaf sptes */
	uint16_t *tracked;		  /* per gfn: shadow pages of it */
	struct sp *hash[HASH_SIZE];
	struct sp *all;
	const struct hv_memslots_snap *snap; /* inside a call */
	uint64_t sps, leaves, faults, emulated, zapped_sps, wp_sptes;
};

static inline uint64_t *sp_spt(struct sp *sp)
{
	return (uint64_t *)((uint8_t *)sp - HV_PAGE_SIZE);
}

static inline struct sp *spt_sp(uint64_t *spt)
{
	return (struct sp *)((uint8_t *)spt + HV_PAGE_SIZE);
}

static inline struct sp *child_of(uint64_t spte)
{
	return spt_sp((uint64_t *)(uintptr_t)(spte & SPTE_ADDR));
}

static unsigned hash_of(gfn_t gfn)
{
	return (unsigned)((gfn * 0x9e3779b97f4a7c15ULL) >> (64 - HASH_BITS));
}

int hv_soft_shadow_create(const struct hv_soft_shadow_cfg *cfg,
			  struct hv_memslots *slots,
			  struct hv_soft_shadow **out)
{
	struct hv_soft_shadow *sh;
	int ret;

	if (!slots || !cfg->max_gfn || cfg->max_gfn > (1ULL << 40))
		return -EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	ret = hv_soft_rmap_create(cfg->rmap_width, cfg->rmap_layout,
				  &sh->rmap);
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	sh->heads = calloc(cfg->max_gfn, sizeof(*sh->heads));
	if (!sh->heads)
		goto err_rmap;
	sh->tracked = calloc(cfg->max_gfn, sizeof(*sh->tracked));
	if (!sh->tracked)
		goto err_heads;
	sh->slots = slots;
	sh->cfg = *cfg;
	pthread_mutex_init(&sh->lock, NULL);
	*out = sh;
	return 0;

err_heads:
	free(sh->heads);
err_rmap:
	hv_soft_rmap_destroy(sh->rmap);
err_free:
	free(sh);
	return ret;
}

static void free_sp(struct sp *sp)
{
	free(sp->gfns);
	free(sp_spt(sp));
}

void hv_soft_shadow_destroy(struct hv_soft_shadow *sh)
{
	struct sp *sp, *next;

	if (!sh)
		return;
	for (sp = sh->all; sp; sp = next) {
		next = sp->next;
		free_sp(sp);
	}
	/* The descriptors go with the rmap's slab. */
	hv_soft_rmap_destroy(sh->rmap);
	free(sh->tracked);
	free(sh->heads);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

static void lock(struct hv_soft_shadow *sh)
{
	pthread_mutex_lock(&sh->lock);
	sh->snap = hv_memslots_read_lock(sh->slots);
}

static void unlock(struct hv_soft_shadow *sh)
{
	hv_memslots_read_unlock(sh->slots);
	sh->snap = NULL;
	pthread_mutex_unlock(&sh->lock);
}

/* Host page of @gfn, or NULL; *@slot set when non-NULL. */
static uint8_t *gfn_hva(struct hv_soft_shadow *sh, gfn_t gfn,
			const struct hv_memslot **slot)
{
	const struct hv_memslot *s;

	if (gfn >= sh->cfg.max_gfn)
		return NULL;
	s = hv_memslots_by_gfn(sh->snap, gfn);
	if (!s)
		return NULL;
	if (slot)
		*slot = s;
	return hv_memslot_gfn_to_hva(s, gfn);
}

static void mark_dirty(const struct hv_memslot *s, gfn_t gfn)
{
	if (s->dirty)
		hv_dirty_bitmap_set(s->dirty, gfn - s->base_gfn);
}

/* --- write protection through the rmap ------------------------------- */

static void wp_one(uint64_t *spte, void *arg)
{
	struct hv_soft_shadow *sh = arg;

	if (*spte & SPTE_W) {
		*spte &= ~SPTE_W;
		sh->wp_sptes++;
	}
}

static void rmap_write_protect(struct hv_soft_shadow *sh, gfn_t gfn)
{
	hv_soft_rmap_for_each(sh->rmap, &sh->heads[gfn], wp_one, sh);
}

/* --- shadow pages ------------------------------------------------------ */

static struct sp *find_sp(struct hv_soft_shadow *sh, gfn_t gfn,
			  unsigned level)
{
	for (struct sp *sp = sh->hash[hash_of(gfn)]; sp; sp = sp->hnext)
		if (sp->gfn == gfn && sp->level == level)
			return sp;
	return NULL;
}

/*
 * A new shadow page for the guest table at @gfn: from now on the gfn is
 * tracked, so every leaf mapping it loses write permission (a guest write
 * to its own page table must be seen).
 */
static struct sp *new_sp(struct hv_soft_shadow *sh, gfn_t gfn, unsigned level)
{
	void *blk = aligned_alloc(HV_PAGE_SIZE, 2 * HV_PAGE_SIZE);
	struct sp *sp;
	unsigned h;

	if (!blk)
		return NULL;
	memset(blk, 0, HV_PAGE_SIZE);
	sp = spt_sp(blk);
	memset(sp, 0, sizeof(*sp));
	if (level == 0) {
		sp->gfns = calloc(HV_PTE_ENTRIES, sizeof(*sp->gfns));
		if (!sp->gfns) {
			free(blk);
			return NULL;
		}
	}
	sp->gfn = gfn;
	sp->level = level;
	h = hash_of(gfn);
	sp->hnext = sh->hash[h];
	sh->hash[h] = sp;
	sp->next = sh->all;
	if (sh->all)
		sh->all->prev = sp;
	sh->all = sp;
	sh->sps++;
	if (sh->tracked[gfn]++ == 0)
		rmap_write_protect(sh, gfn);
	return sp;
}

static void zap_sp(struct hv_soft_shadow *sh, struct sp *sp);

/* Drop entry @i of @sp: a leaf leaves its gfn's rmap; a table entry
 * leaves its child's parent list, and an orphan child is zapped. */
static void drop_spte(struct hv_soft_shadow *sh, struct sp *sp, unsigned i)
{
	uint64_t *spt = sp_spt(sp), spte = spt[i];
	struct sp *child;

	if (!(spte & SPTE_P))
		return;
	spt[i] = 0;
	if (sp->level == 0) {
		bool found = hv_soft_rmap_remove(sh->rmap,
						 &sh->heads[sp->gfns[i]],
						 &spt[i]);

		HV_BUG_ON(!found);
		sh->leaves--;
		return;
	}
	child = child_of(spte);
	HV_BUG_ON(!hv_soft_rmap_remove(sh->rmap, &child->parents, &spt[i]));
	if (!child->parents.val && !child->root && child != sp)
		zap_sp(sh, child);
}

static void clear_parent(uint64_t *spte, void *arg)
{
	(void)arg;
	*spte = 0;
}

static void zap_sp(struct hv_soft_shadow *sh, struct sp *sp)
{
	struct sp **pp;

	for (unsigned i = 0; i < HV_PTE_ENTRIES; i++)
		drop_spte(sh, sp, i);
	hv_soft_rmap_drain(sh->rmap, &sp->parents, clear_parent, NULL);
	for (pp = &sh->hash[hash_of(sp->gfn)]; *pp != sp; pp = &(*pp)->hnext)
		;
	*pp = sp->hnext;
	if (sp->prev)
		sp->prev->next = sp->next;
	else
		sh->all = sp->next;
	if (sp->next)
		sp->next->prev = sp->prev;
	/* Leaves mapping the gfn regain write permission at their next
	 * write fault, once nothing shadows it. */
	sh->tracked[sp->gfn]--;
	sh->sps--;
	sh->zapped_sps++;
	free_sp(sp);
}

/* --- the access path --------------------------------------------------- */

static struct sp *get_root(struct hv_soft_shadow *sh, gfn_t gfn)
{
	struct sp *sp = find_sp(sh, gfn, ROOT_LEVEL);

	if (!sp)
		sp = new_sp(sh, gfn, ROOT_LEVEL);
	if (sp)
		sp->root = true;
	return sp;
}

/* Fast path: the leaf for @gva if the shadow table has one. */
static uint64_t *walk_shadow(struct sp *root, uint64_t gva)
{
	uint64_t *spt = sp_spt(root);

	for (unsigned level = ROOT_LEVEL; level > 0; level--) {
		uint64_t spte = spt[hv_pte_index(gva, level)];

		if (!(spte & SPTE_P))
			return NULL;
		spt = (uint64_t *)(uintptr_t)(spte & SPTE_ADDR);
	}
	return &spt[hv_pte_index(gva, 0)];
}

static int emulate_write(struct hv_soft_shadow *sh, gpa_t gpa,
			 const void *buf, size_t len);

/*
 * The slow path: walk the guest tables, build the missing shadow pages
 * down to the leaf, install or upgrade the leaf. Returns the leaf in
 * *@leafp, or a guest fault / negative errno. *@emulated: the access was
 * a write to a tracked gfn and has been done by emulation.
 */
static int fault(struct hv_soft_shadow *sh, struct sp *root, uint64_t gva,
		 bool write, const void *buf, size_t len, uint64_t **leafp,
		 bool *emulated)
{
	gfn_t table = root->gfn, gfn;
	bool guest_w = true, writable;
	const struct hv_memslot *slot;
	uint64_t gpte[HV_PTE_LEVELS];
	struct sp *sp = root;
	uint64_t *spt;
	uint8_t *hva;
	unsigned i;

	sh->faults++;
	/* The guest's walk, setting accessed (and dirty) bits as the CPU
	 * does; those writes are the CPU's, not emulated guest stores. */
	for (int level = ROOT_LEVEL; level >= 0; level--) {
		uint64_t *tp = (uint64_t *)gfn_hva(sh, table, &slot);
		uint64_t e, set;

		if (!tp)
			return -EFAULT;
		i = hv_pte_index(gva, level);
		e = tp[i];
		if (!(e & HV_GPTE_P))
			return HV_SHADOW_PF_NOT_PRESENT;
		if (e & HV_GPTE_PS && level > 0)
			return -EINVAL;
		guest_w = guest_w && (e & HV_GPTE_RW);
		if (write && !guest_w)
			return HV_SHADOW_PF_PROT;
		set = HV_GPTE_A | (level == 0 && write ? HV_GPTE_D : 0);
		if ((e & set) != set) {
			tp[i] = e | set;
			mark_dirty(slot, table);
		}
		gpte[level] = e;
		table = (e & HV_GPTE_ADDR) >> HV_PAGE_SHIFT;
	}
	gfn = table;
	hva = gfn_hva(sh, gfn, &slot);
	if (!hva)
		return -EFAULT;
	if (write && sh->tracked[gfn]) {
		/* A store into a guest page table through a user mapping. */
		*emulated = true;
		return emulate_write(sh, hv_gfn_to_gpa(gfn) + (gva & 0xfff),
				     buf, len);
	}

	for (unsigned level = ROOT_LEVEL; level > 0; level--) {
		gfn_t cgfn = (gpte[level] & HV_GPTE_ADDR) >> HV_PAGE_SHIFT;
		struct sp *child;
		uint64_t *sptep;

		i = hv_pte_index(gva, level);
		sptep = &sp_spt(sp)[i];
		if (*sptep & SPTE_P) {
			sp = child_of(*sptep);
			continue;
		}
		if (cgfn >= sh->cfg.max_gfn || !gfn_hva(sh, cgfn, NULL))
			return -EFAULT;
		child = find_sp(sh, cgfn, level - 1);
		if (!child)
			child = new_sp(sh, cgfn, level - 1);
		if (!child)
			return -ENOMEM;
		if (hv_soft_rmap_add(sh->rmap, &child->parents, sptep) < 0) {
			if (!child->parents.val && !child->root)
				zap_sp(sh, child);
			return -ENOMEM;
		}
		*sptep = (uint64_t)(uintptr_t)sp_spt(child) | SPTE_P | SPTE_W;
		sp = child;
	}
	/* new_sp() above may have just tracked @gfn itself. */
	if (write && sh->tracked[gfn]) {
		*emulated = true;
		return emulate_write(sh, hv_gfn_to_gpa(gfn) + (gva & 0xfff),
				     buf, len);
	}
	/*
	 * A read fault maps the page writable only when the guest entry is
	 * already dirty and the slot is not logged: the first write must
	 * fault, to set the guest's D bit or the memslot's dirty bit.
	 */
	writable = guest_w && !sh->tracked[gfn] &&
		   (write || (!slot->dirty && (gpte[0] & HV_GPTE_D)));
	i = hv_pte_index(gva, 0);
	spt = sp_spt(sp);
	if (spt[i] & SPTE_P) {
		HV_BUG_ON(sp->gfns[i] != gfn);
		if (writable)
			spt[i] |= SPTE_W;
	} else {
		if (hv_soft_rmap_add(sh->rmap, &sh->heads[gfn], &spt[i]) < 0)
			return -ENOMEM;
		sp->gfns[i] = gfn;
		spt[i] = (uint64_t)(uintptr_t)hva | SPTE_P |
			 (writable ? SPTE_W : 0);
		sh->leaves++;
	}
	if (write)
		mark_dirty(slot, gfn);
	*leafp = &spt[i];
	return HV_SHADOW_OK;
}

int hv_soft_shadow_access(struct hv_soft_shadow *sh, gpa_t cr3, uint64_t gva,
			  bool write, void *buf, size_t len)
{
	unsigned off = gva & (HV_PAGE_SIZE - 1);
	bool emulated = false;
	uint64_t *leaf;
	uint8_t *hva;
	struct sp *root;
	int ret;

	if (!len || off + len > HV_PAGE_SIZE || cr3 & 0xfff)
		return -EINVAL;
	lock(sh);
	if (hv_gpa_to_gfn(cr3) >= sh->cfg.max_gfn ||
	    !gfn_hva(sh, hv_gpa_to_gfn(cr3), NULL)) {
		ret = -EFAULT;
		goto out;
	}
	root = get_root(sh, hv_gpa_to_gfn(cr3));
	if (!root) {
		ret = -ENOMEM;
		goto out;
	}
	leaf = walk_shadow(root, gva);
	if (!leaf || !(*leaf & SPTE_P) || (write && !(*leaf & SPTE_W))) {
		ret = fault(sh, root, gva, write, buf, len, &leaf, &emulated);
		if (ret || emulated)
			goto out;
	}
	hva = (uint8_t *)(uintptr_t)(*leaf & SPTE_ADDR) + off;
	if (write)
		memcpy(hva, buf, len);
	else
		memcpy(buf, hva, len);
	ret = 0;
out:
	unlock(sh);
	return ret;
}

void hv_soft_shadow_root_drop(struct hv_soft_shadow *sh, gpa_t cr3)
{
	struct sp *sp;

	lock(sh);
	sp = find_sp(sh, hv_gpa_to_gfn(cr3), ROOT_LEVEL);
	if (sp) {
		sp->root = false;
		if (!sp->parents.val)
			zap_sp(sh, sp);
	}
	unlock(sh);
}

/*
 * Write into guest memory and drop the shadow entries derived from the
 * guest entries written, in every shadow page of that gfn. A dropped
 * table entry may zap a shadow page of the same gfn (another level), so
 * look the gfn up again after every drop.
 */
static int emulate_write(struct hv_soft_shadow *sh, gpa_t gpa,
			 const void *buf, size_t len)
{
	gfn_t gfn = hv_gpa_to_gfn(gpa);
	unsigned off = gpa & (HV_PAGE_SIZE - 1);
	unsigned first = off / 8, last = (off + len - 1) / 8;
	const struct hv_memslot *slot;
	uint8_t *hva = gfn_hva(sh, gfn, &slot);
	bool again = true;

	if (!hva)
		return -EFAULT;
	memcpy(hva + off, buf, len);
	mark_dirty(slot, gfn);
	if (!sh->tracked[gfn])
		return 0;
	sh->emulated++;
	while (again) {
		again = false;
		for (struct sp *sp = sh->hash[hash_of(gfn)]; sp && !again;
		     sp = sp->hnext) {
			if (sp->gfn != gfn)
				continue;
			for (unsigned i = first; i <= last; i++) {
				if (sp_spt(sp)[i] & SPTE_P) {
					drop_spte(sh, sp, i);
					again = true;
					break;
				}
			}
		}
	}
	return 0;
}

int hv_soft_shadow_gpa_write(struct hv_soft_shadow *sh, gpa_t gpa,
			     const void *buf, size_t len)
{
	int ret;

	if (!len || (gpa & (HV_PAGE_SIZE - 1)) + len > HV_PAGE_SIZE)
		return -EINVAL;
	lock(sh);
	ret = emulate_write(sh, gpa, buf, len);
	unlock(sh);
	return ret;
}

int hv_soft_shadow_gpa_read(struct hv_soft_shadow *sh, gpa_t gpa, void *buf,
			    size_t len)
{
	unsigned off = gpa & (HV_PAGE_SIZE - 1);
	uint8_t *hva;
	int ret = -EFAULT;

	if (!len || off + len > HV_PAGE_SIZE)
		return -EINVAL;
	lock(sh);
	hva = gfn_hva(sh, hv_gpa_to_gfn(gpa), NULL);
	if (hva) {
		memcpy(buf, hva + off, len);
		ret = 0;
	}
	unlock(sh);
	return ret;
}

uint64_t hv_soft_shadow_write_protect(struct hv_soft_shadow *sh, gfn_t gfn,
				      uint64_t n, const uint64_t *mask)
{
	uint64_t before;

	lock(sh);
	before = sh->wp_sptes;
	for (uint64_t i = 0; i < n; i++) {
		if (mask && !(mask[i / 64] >> (i % 64) & 1)) {
			if (!(mask[i / 64] >> (i % 64)))
				i = HV_ALIGN_DOWN(i, 64) + 63;
			continue;
		}
		if (gfn + i >= sh->cfg.max_gfn)
			break;
		rmap_write_protect(sh, gfn + i);
	}
	before = sh->wp_sptes - before;
	unlock(sh);
	return before;
}

static void zap_leaf(uint64_t *spte, void *arg)
{
	struct hv_soft_shadow *sh = arg;

	*spte = 0;
	sh->leaves--;
}

void hv_soft_shadow_zap_gfns(struct hv_soft_shadow *sh, gfn_t gfn,
			     uint64_t n)
{
	bool again = true;

	lock(sh);
	for (uint64_t i = 0; i < n && gfn + i < sh->cfg.max_gfn; i++)
		hv_soft_rmap_drain(sh->rmap, &sh->heads[gfn + i], zap_leaf,
				   sh);
	/* Shadow pages of guest tables in the range; zapping one may zap
	 * others (orphans), so restart the scan after each. */
	while (again) {
		again = false;
		for (struct sp *sp = sh->all; sp; sp = sp->next) {
			if (sp->gfn >= gfn && sp->gfn - gfn < n) {
				zap_sp(sh, sp);
				again = true;
				break;
			}
		}
	}
	unlock(sh);
}

void hv_soft_shadow_translate(struct hv_soft_shadow *sh, gpa_t cr3,
			      uint64_t gva, struct hv_soft_shadow_xlate *x)
{
	struct sp *root;
	uint64_t *leaf;

	memset(x, 0, sizeof(*x));
	lock(sh);
	root = find_sp(sh, hv_gpa_to_gfn(cr3), ROOT_LEVEL);
	leaf = root ? walk_shadow(root, gva) : NULL;
	if (leaf && (*leaf & SPTE_P)) {
		x->present = true;
		x->writable = *leaf & SPTE_W;
		x->hva = (void *)(uintptr_t)(*leaf & SPTE_ADDR);
		x->spte = leaf;
	}
	unlock(sh);
}

void hv_soft_shadow_for_each_leaf(struct hv_soft_shadow *sh,
				  void (*fn)(uint64_t *spte, gfn_t gfn,
					     void *arg),
				  void *arg)
{
	lock(sh);
	for (struct sp *sp = sh->all; sp; sp = sp->next) {
		if (sp->level)
			continue;
		for (unsigned i = 0; i < HV_PTE_ENTRIES; i++)
			if (sp_spt(sp)[i] & SPTE_P)
				fn(&sp_spt(sp)[i], sp->gfns[i], arg);
	}
	unlock(sh);
}

void hv_soft_shadow_rmap_for_each(struct hv_soft_shadow *sh, gfn_t gfn,
				  hv_soft_rmap_fn fn, void *arg)
{
	lock(sh);
	if (gfn < sh->cfg.max_gfn)
		hv_soft_rmap_for_each(sh->rmap, &sh->heads[gfn], fn, arg);
	unlock(sh);
}

unsigned hv_soft_shadow_rmap_count(struct hv_soft_shadow *sh, gfn_t gfn)
{
	unsigned n = 0;

	lock(sh);
	if (gfn < sh->cfg.max_gfn)
		n = hv_soft_rmap_count(sh->rmap, &sh->heads[gfn]);
	unlock(sh);
	return n;
}

bool hv_soft_shadow_gfn_tracked(struct hv_soft_shadow *sh, gfn_t gfn)
{
	bool t;

	lock(sh);
	t = gfn < sh->cfg.max_gfn && sh->tracked[gfn];
	unlock(sh);
	return t;
}

void hv_soft_shadow_rmap_hist(struct hv_soft_shadow *sh,
			      uint64_t out[HV_SOFT_SHADOW_HIST_BUCKETS])
{
	memset(out, 0, HV_SOFT_SHADOW_HIST_BUCKETS * sizeof(out[0]));
	lock(sh);
	for (unsigned s = 0; s < hv_memslots_count(sh->snap); s++) {
		const struct hv_memslot *slot = hv_memslots_at(sh->snap, s);

		for (uint64_t i = 0; i < slot->npages; i++) {
			gfn_t gfn = slot->base_gfn + i;
			unsigned c, b;

			if (gfn >= sh->cfg.max_gfn)
				break;
			c = hv_soft_rmap_count(sh->rmap, &sh->heads[gfn]);
			/* 0 -> 0, 1 -> 1, 2-3 -> 2, 4-7 -> 3, ... */
			b = c ? 32 - __builtin_clz(c) : 0;
			out[HV_MIN(b, HV_SOFT_SHADOW_HIST_BUCKETS - 1u)]++;
		}
	}
	unlock(sh);
}

void hv_soft_shadow_get_stats(struct hv_soft_shadow *sh,
			      struct hv_soft_shadow_stats *st)
{
	struct hv_soft_rmap_stats rs;

	lock(sh);
	hv_soft_rmap_get_stats(sh->rmap, &rs);
	st->sps = sh->sps;
	st->leaves = sh->leaves;
	st->faults = sh->faults;
	st->emulated = sh->emulated;
	st->zapped_sps = sh->zapped_sps;
	st->wp_sptes = sh->wp_sptes;
	st->rmap_descs = rs.descs;
	st->rmap_peak_descs = rs.peak_descs;
	st->rmap_desc_size = hv_soft_rmap_desc_size(sh->rmap);
	unlock(sh);
}
