// SPDX-License-Identifier: MIT
/*
 * One snapshot of the memslot set (hvcore/memslots_snap.h). It holds
 *  - the slots sorted by base gfn in one compact array range[i] =
 *    { base, end, slot }: a gfn lookup touches one entry (one cache line)
 *    to check and return a slot;
 *  - an id hash: open addressing, linear probing, capacity a power of two
 *    and at least twice the number of slots, entries { id, slot };
 *  - a bucket index over the gfn span [min_gfn, min_gfn + span): bucket b
 *    covers gfns from min_gfn + (b << shift) and holds the index of the
 *    first slot whose end lies beyond that start, plus, when one slot
 *    covers the whole bucket, that slot itself (exact[b]): such a lookup
 *    costs one memory access. Otherwise a lookup reads its bucket and the
 *    next one, which bound the candidate slots, then scans forward (a few
 *    slots) or bisects (a crowded bucket). shift is the smallest that keeps
 *    the table at most 4x the slot count, so for any layout that is not
 *    wildly uneven a bucket holds about one slot and the cost does not
 *    grow with the number of slots;
 *  - last_hit, the index of the last slot a gfn lookup found (relaxed
 *    atomic: a hint, shared by all readers of the snapshot).
 * A snapshot is changed only while unpublished (hv_snap_apply).
 */
#include "hvcore/memslots_snap.h"
#include "hvcore/bug.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


/* ---- snapshot arrays ---------------------------------------------- */

/*
 * Lookup tables of large sets are backed by transparent huge pages: a
 * random lookup in a 32k-slot set touches two or three tables of several
 * hundred KiB, and with 4 KiB pages most of its cost is TLB misses. Small
 * tables come from malloc.
 */
#define HUGE_TABLE_MIN (256u << 10)
#define HUGE_PAGE (2u << 20)

static void *table_alloc(size_t size)
{
	size_t len = HV_ALIGN_UP(size, HUGE_PAGE);
	uint8_t *p, *al;

	if (size < HUGE_TABLE_MIN)
		return calloc(1, size);
	/* Over-map by one huge page to align, then trim both ends. */
	p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	al = (uint8_t *)HV_ALIGN_UP((uintptr_t)p, HUGE_PAGE);
	if (al > p)
		munmap(p, al - p);
	if (al + len < p + len + HUGE_PAGE)
		munmap(al + len, p + len + HUGE_PAGE - (al + len));
	madvise(al, len, MADV_HUGEPAGE);
	return al;
}

static void table_free(void *t, size_t size)
{
	if (!t)
		return;
	if (size < HUGE_TABLE_MIN)
		free(t);
	else
		munmap(t, HV_ALIGN_UP(size, HUGE_PAGE));
}

static size_t range_size(unsigned cap)
{
	return cap * sizeof(struct gfn_range);
}

static size_t ids_size(unsigned cap)
{
	return 2 * (size_t)cap * sizeof(struct id_ent);
}

static size_t bucket_size(unsigned cap)
{
	return (BUCKETS_PER_SLOT * (size_t)cap + 1) * sizeof(uint32_t);
}

static size_t exact_size(unsigned cap)
{
	return (BUCKETS_PER_SLOT * (size_t)cap + 1) *
	       sizeof(struct hv_memslot *);
}

void hv_snap_arrays_free(struct snap_arrays *a)
{
	table_free(a->range, range_size(a->cap));
	table_free(a->ids, ids_size(a->cap));
	table_free(a->bucket, bucket_size(a->cap));
	table_free(a->exact, exact_size(a->cap));
	memset(a, 0, sizeof(*a));
}

int hv_snap_arrays_alloc(unsigned cap, struct snap_arrays *a)
{
	a->cap = cap;
	a->range = table_alloc(range_size(cap));
	a->ids = table_alloc(ids_size(cap)); /* zeroed: all empty */
	a->bucket = table_alloc(bucket_size(cap));
	a->exact = table_alloc(exact_size(cap));
	if (!a->range || !a->ids || !a->bucket || !a->exact) {
		hv_snap_arrays_free(a);
		return -ENOMEM;
	}
	return 0;
}

static unsigned log2_u32(uint32_t v)
{
	return 31 - __builtin_clz(v);
}

struct hv_memslots_snap *hv_snap_create(void)
{
	struct hv_memslots_snap *s;

	s = aligned_alloc(CACHELINE, HV_ALIGN_UP(sizeof(*s), CACHELINE));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	if (hv_snap_arrays_alloc(SNAP_MIN_CAP, &s->a)) {
		free(s);
		return NULL;
	}
	s->cap = SNAP_MIN_CAP;
	s->id_shift = 32 - log2_u32(2 * SNAP_MIN_CAP);
	return s;
}

void hv_snap_destroy(struct hv_memslots_snap *s)
{
	if (!s)
		return;
	hv_snap_arrays_free(&s->a);
	free(s);
}

/* ---- id hash ------------------------------------------------------- */

static void id_insert(struct hv_memslots_snap *s, struct hv_memslot *slot)
{
	uint32_t i = hv_snap_id_find(s, slot->id);

	HV_BUG_ON(s->a.ids[i].slot);
	s->a.ids[i].id = slot->id;
	s->a.ids[i].slot = slot;
}

/* Backward-shift deletion: no tombstones, probe chains stay short. */
static void id_remove(struct hv_memslots_snap *s, uint32_t id)
{
	uint32_t mask = hv_snap_id_mask(s), i = hv_snap_id_find(s, id), j = i;

	HV_BUG_ON(!s->a.ids[i].slot);
	for (;;) {
		j = (j + 1) & mask;
		if (!s->a.ids[j].slot)
			break;
		/* Move ids[j] back to the hole if the hole is on its path. */
		if (((j - hv_snap_id_home(s, s->a.ids[j].id)) & mask) >=
		    ((j - i) & mask)) {
			s->a.ids[i] = s->a.ids[j];
			i = j;
		}
	}
	s->a.ids[i].slot = NULL;
	s->a.ids[i].id = 0;
}

static void id_replace(struct hv_memslots_snap *s, struct hv_memslot *slot)
{
	uint32_t i = hv_snap_id_find(s, slot->id);

	HV_BUG_ON(!s->a.ids[i].slot);
	s->a.ids[i].slot = slot;
}

/* ---- sorted ranges and bucket index ---------------------------------- */

/* First index whose base is above @gfn (count if none). */
static unsigned upper_bound(const struct hv_memslots_snap *s, gfn_t gfn)
{
	unsigned lo = 0, hi = s->count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (s->a.range[mid].base <= gfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static unsigned find_pos(const struct hv_memslots_snap *s,
			 const struct hv_memslot *slot)
{
	unsigned pos = upper_bound(s, slot->base_gfn) - 1;

	HV_BUG_ON(pos >= s->count || s->a.range[pos].slot != slot);
	return pos;
}

/* Does [base, end) meet a slot other than @skip? Only neighbours can. */
bool hv_snap_range_overlaps(const struct hv_memslots_snap *s, gfn_t base,
			   gfn_t end, const struct hv_memslot *skip)
{
	unsigned pos = upper_bound(s, base);
	unsigned j = pos;
	int i = (int)pos - 1;

	if (i >= 0 && s->a.range[i].slot == skip)
		i--;
	if (i >= 0 && s->a.range[i].end > base)
		return true;
	if (j < s->count && s->a.range[j].slot == skip)
		j++;
	return j < s->count && s->a.range[j].base < end;
}

static unsigned index_shift_for(uint64_t span, unsigned count)
{
	uint64_t limit = (uint64_t)BUCKETS_PER_SLOT * count;
	unsigned shift = 0;

	while (((span - 1) >> shift) + 1 > limit)
		shift++;
	return shift;
}

/* Does range @r cover all of bucket @b? */
static bool covers_bucket(const struct hv_memslots_snap *s,
			  const struct gfn_range *r, uint32_t b)
{
	gfn_t start = s->min_gfn + ((uint64_t)b << s->shift);

	return r->base <= start && r->end >= start + (1ULL << s->shift);
}

/* Fill buckets [from, nbuckets), knowing none of them points below @idx. */
static void index_fill(struct hv_memslots_snap *s, uint32_t from, unsigned idx)
{
	for (uint32_t b = from; b < s->nbuckets; b++) {
		gfn_t start = s->min_gfn + ((uint64_t)b << s->shift);

		while (s->a.range[idx].end <= start)
			idx++;
		s->a.bucket[b] = idx;
		s->a.exact[b] = covers_bucket(s, &s->a.range[idx], b)
					? s->a.range[idx].slot
					: NULL;
	}
	s->a.bucket[s->nbuckets] = s->count - 1;
	s->a.exact[s->nbuckets] = NULL;
}

/*
 * A new version of the slot at @pos (same range): repoint the buckets it
 * covers. O(buckets it spans), which the index keeps at most 4x the slot
 * count and is a handful for a typical layout.
 */
static void index_replace(struct hv_memslots_snap *s, unsigned pos)
{
	const struct gfn_range *r = &s->a.range[pos];
	uint32_t b = (uint32_t)((r->base - s->min_gfn) >> s->shift);
	uint32_t last = (uint32_t)((r->end - 1 - s->min_gfn) >> s->shift);

	for (; b <= last; b++)
		if (s->a.exact[b])
			s->a.exact[b] = r->slot;
}

static void index_rebuild(struct hv_memslots_snap *s)
{
	if (!s->count) {
		s->min_gfn = 0;
		s->span = 0;
		s->shift = 0;
		s->nbuckets = 0;
		return;
	}
	s->min_gfn = s->a.range[0].base;
	s->span = s->a.range[s->count - 1].end - s->min_gfn;
	s->shift = index_shift_for(s->span, s->count);
	s->nbuckets = ((s->span - 1) >> s->shift) + 1;
	index_fill(s, 0, 0);
}

/*
 * The slot just appended at count - 1 lies above every other one, so the
 * existing buckets keep their entries and only new ones are added, unless
 * the table would grow too large or the shift is now much coarser than
 * needed (rebuilt then, O(log n) times while a set is built).
 */
static void index_append(struct hv_memslots_snap *s)
{
	uint32_t old_nb = s->nbuckets;
	uint64_t span;
	unsigned shift;

	if (s->count == 1) {
		index_rebuild(s);
		return;
	}
	span = s->a.range[s->count - 1].end - s->min_gfn;
	shift = index_shift_for(span, s->count);
	/* Hysteresis: a layout on a power-of-two edge must not flap. */
	if (shift > s->shift || shift + 2 <= s->shift) {
		index_rebuild(s);
		return;
	}
	s->span = span;
	s->nbuckets = ((span - 1) >> s->shift) + 1;
	/* The old last bucket's entry stays; new buckets start from it. */
	index_fill(s, old_nb, s->a.bucket[old_nb - 1]);
}

/* Insert @slot in gfn order; returns its index. The index is left stale. */
static unsigned arrays_insert(struct hv_memslots_snap *s,
			      struct hv_memslot *slot)
{
	unsigned pos = upper_bound(s, slot->base_gfn);
	unsigned tail = s->count - pos;

	memmove(&s->a.range[pos + 1], &s->a.range[pos],
		tail * sizeof(s->a.range[0]));
	s->a.range[pos].base = slot->base_gfn;
	s->a.range[pos].end = slot->base_gfn + slot->npages;
	s->a.range[pos].slot = slot;
	s->count++;
	return pos;
}

/* The index is left stale. */
static void arrays_remove(struct hv_memslots_snap *s, unsigned pos)
{
	unsigned tail = s->count - pos - 1;

	memmove(&s->a.range[pos], &s->a.range[pos + 1],
		tail * sizeof(s->a.range[0]));
	s->count--;
}

/* Move the snapshot to larger arrays (it is inactive: nobody reads it). */
static void snap_grow(struct hv_memslots_snap *s, unsigned cap,
		      struct snap_arrays *na)
{
	struct snap_arrays old = s->a;

	memcpy(na->range, old.range, s->count * sizeof(old.range[0]));
	memcpy(na->bucket, old.bucket,
	       (s->count ? s->nbuckets + 1 : 0) * sizeof(old.bucket[0]));
	memcpy(na->exact, old.exact,
	       (s->count ? s->nbuckets + 1 : 0) * sizeof(old.exact[0]));
	s->a = *na;
	memset(na, 0, sizeof(*na));
	s->cap = cap;
	s->id_shift = 32 - log2_u32(2 * cap);
	for (unsigned i = 0; i < s->count; i++)
		id_insert(s, s->a.range[i].slot);
	hv_snap_arrays_free(&old);
}

void hv_snap_apply(struct hv_memslots_snap *s, struct update *up,
		       struct snap_arrays *grown, uint64_t generation)
{
	if (up->grow)
		snap_grow(s, up->grown_cap, grown);

	switch (up->kind) {
	case UPDATE_INSERT:
		if (arrays_insert(s, up->new) == s->count - 1)
			index_append(s);
		else
			index_rebuild(s);
		id_insert(s, up->new);
		break;
	case UPDATE_REMOVE:
		arrays_remove(s, find_pos(s, up->old));
		index_rebuild(s);
		id_remove(s, up->old->id);
		break;
	case UPDATE_REPLACE: {
		unsigned pos = find_pos(s, up->old);

		s->a.range[pos].slot = up->new;
		index_replace(s, pos);
		id_replace(s, up->new);
		break;
	}
	case UPDATE_MOVE:
		arrays_remove(s, find_pos(s, up->old));
		arrays_insert(s, up->new);
		index_rebuild(s);
		id_replace(s, up->new);
		break;
	default:
		HV_BUG_ON(1);
	}
	atomic_store_explicit(&s->last_hit, 0, memory_order_relaxed);
	s->generation = generation;
}


uint64_t hv_memslots_generation(const struct hv_memslots_snap *s)
{
	return s->generation;
}

const struct hv_memslot *hv_memslots_by_id(const struct hv_memslots_snap *s,
					   uint32_t id)
{
	uint32_t mask = hv_snap_id_mask(s), i = hv_snap_id_home(s, id);

	for (;; i = (i + 1) & mask) {
		const struct id_ent *e = &s->a.ids[i];

		if (!e->slot || e->id == id)
			return e->slot;
	}
}

const struct hv_memslot *hv_memslots_by_gfn(const struct hv_memslots_snap *s,
					    gfn_t gfn)
{
	const struct gfn_range *r = s->a.range;
	unsigned last, lo, hi;
	struct hv_memslot *hit;
	uint64_t off;

	/* Below min_gfn wraps around to a huge offset: one compare. */
	off = gfn - s->min_gfn;
	if (off >= s->span)
		return NULL;
	hit = s->a.exact[off >> s->shift];
	if (hit)
		return hit;

	last = atomic_load_explicit(&((struct hv_memslots_snap *)s)->last_hit,
				    memory_order_relaxed);
	if (last < s->count && gfn - r[last].base < r[last].end - r[last].base)
		return s->a.range[last].slot;

	lo = s->a.bucket[off >> s->shift];
	hi = s->a.bucket[(off >> s->shift) + 1];
	/*
	 * The slot holding gfn, if any, is the first in [lo, hi] ending
	 * beyond gfn, and r[hi].end > gfn holds, so the scan stops in range.
	 */
	if (hi - lo <= SCAN_MAX) {
		while (r[lo].end <= gfn)
			lo++;
	} else {
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;

			if (r[mid].end <= gfn)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (r[lo].base > gfn)
		return NULL;
	if (lo != last)
		atomic_store_explicit(
			&((struct hv_memslots_snap *)s)->last_hit, lo,
			memory_order_relaxed);
	return s->a.range[lo].slot;
}

unsigned hv_memslots_count(const struct hv_memslots_snap *s)
{
	return s->count;
}

const struct hv_memslot *hv_memslots_at(const struct hv_memslots_snap *s,
					unsigned idx)
{
	return idx < s->count ? s->a.range[idx].slot : NULL;
}
