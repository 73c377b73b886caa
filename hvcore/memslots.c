// SPDX-License-Identifier: MIT
/*
 * hv_memslots: two snapshots of the slot set, KVM scalable-memslots style.
 *
 * A snapshot holds
 *  - the slots sorted by base gfn in one compact array range[i] =
 *    { base, end, slot }: a gfn lookup touches one entry (one cache line)
 *    to check and return a slot;
 *  - an id hash: open addressing, linear probing, capacity a power of two
 *    and at least twice the number of slots, entries { id, slot };
 *  - a bucket index over the gfn span [min_gfn, min_gfn + span): bucket b
 *    covers gfns from min_gfn + (b << shift) and holds the index of the
 *    first slot whose end lies beyond that start. A lookup reads its bucket
 *    and the next one, which bound the candidate slots, then scans forward
 *    (a few slots) or bisects (a crowded bucket). shift is the smallest
 *    that keeps the table at most 4x the slot count, so for any layout
 *    that is not wildly uneven a bucket holds about one slot and the cost
 *    does not grow with the number of slots;
 *  - last_hit, the index of the last slot a gfn lookup found (relaxed
 *    atomic: a hint, shared by all readers of the snapshot).
 *
 * The set keeps two snapshots with the same content. An update
 *
 *   writer (set->lock held)                  readers
 *   apply the change to the inactive one     use the active one
 *   publish it (seq_cst store)               new readers use it
 *   hv_rcu_synchronize()                     old readers leave the old one
 *   apply the change to the other one        (nobody reads it any more)
 *   free replaced versions and bitmaps
 *
 * so both snapshots are equal again and the next update starts on the one
 * nobody reads. A flags change replaces one slot pointer in each snapshot
 * (O(log n) to find it); add, delete and move shift the compact arrays and
 * rebuild the bucket index (O(n), small constants); an add past the last
 * slot, the common way a set is built, extends the index in place.
 *
 * Slot objects are shared by both snapshots and immutable once published:
 * a change makes a new version, and the old one is freed after the grace
 * period, when neither snapshot points to it.
 */
#include "hvcore/memslots.h"
#include "hvcore/bug.h"
#include "hvcore/log.h"
#include "hvcore/rcu.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CACHELINE 64
#define SNAP_MIN_CAP 8u
/* Bucket table entries per slot, at most. */
#define BUCKETS_PER_SLOT 4u
/* Candidates scanned one by one before bisecting. */
#define SCAN_MAX 8u

struct gfn_range {
	gfn_t base;
	gfn_t end; /* base + npages */
	struct hv_memslot *slot;
};

struct id_ent {
	uint32_t id;
	struct hv_memslot *slot; /* NULL: empty */
};

/* The arrays of one snapshot, sized for cap slots. */
struct snap_arrays {
	struct gfn_range *range;    /* cap */
	struct id_ent *ids;	    /* 2 * cap */
	uint32_t *bucket;	    /* BUCKETS_PER_SLOT * cap + 1 */
	/* Per bucket: the slot covering the whole bucket, or NULL. A random
	 * lookup that lands in such a bucket (the common case: big slots,
	 * or one-page slots at shift 0) costs one memory access. */
	struct hv_memslot **exact;  /* BUCKETS_PER_SLOT * cap + 1 */
	unsigned cap;
};

struct hv_memslots_snap {
	/* immutable while published; changed only while inactive */
	uint64_t generation;
	unsigned count;
	unsigned cap; /* power of two */
	struct snap_arrays a;
	unsigned id_shift; /* 32 - log2(2 * cap) */
	gfn_t min_gfn;
	uint64_t span; /* end of the last slot - min_gfn; 0 when empty */
	unsigned shift;
	uint32_t nbuckets; /* a.bucket[nbuckets] = count - 1, a sentinel */

	/* written by readers: on its own cache line */
	atomic_uint last_hit __attribute__((aligned(CACHELINE)));
};

struct hv_memslots {
	/* immutable after create */
	struct hv_rcu *rcu;
	/* what readers use; written by writers under lock */
	struct hv_memslots_snap *_Atomic active;

	/* protected by lock */
	pthread_mutex_t lock;
	struct hv_memslots_snap *snap[2];
	uint64_t generation;
	bool initially_set;
};

enum update_kind {
	UPDATE_INVALID = 0,
	UPDATE_INSERT,
	UPDATE_REMOVE,
	UPDATE_REPLACE, /* same id and range, new version */
	UPDATE_MOVE,	/* same id, new range */
};

/* One update, prepared (every allocation done) before anything changes. */
struct update {
	enum update_kind kind;
	struct hv_memslot *old; /* version leaving the set, or NULL */
	struct hv_memslot *new; /* version entering the set, or NULL */
	bool grow;		/* both snapshots move to grown[] arrays */
	unsigned grown_cap;
	struct snap_arrays grown[2];
};

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

static void arrays_free(struct snap_arrays *a)
{
	table_free(a->range, range_size(a->cap));
	table_free(a->ids, ids_size(a->cap));
	table_free(a->bucket, bucket_size(a->cap));
	table_free(a->exact, exact_size(a->cap));
	memset(a, 0, sizeof(*a));
}

static int arrays_alloc(unsigned cap, struct snap_arrays *a)
{
	a->cap = cap;
	a->range = table_alloc(range_size(cap));
	a->ids = table_alloc(ids_size(cap)); /* zeroed: all empty */
	a->bucket = table_alloc(bucket_size(cap));
	a->exact = table_alloc(exact_size(cap));
	if (!a->range || !a->ids || !a->bucket || !a->exact) {
		arrays_free(a);
		return -ENOMEM;
	}
	return 0;
}

static unsigned log2_u32(uint32_t v)
{
	return 31 - __builtin_clz(v);
}

static struct hv_memslots_snap *snap_create(void)
{
	struct hv_memslots_snap *s;

	s = aligned_alloc(CACHELINE, HV_ALIGN_UP(sizeof(*s), CACHELINE));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	if (arrays_alloc(SNAP_MIN_CAP, &s->a)) {
		free(s);
		return NULL;
	}
	s->cap = SNAP_MIN_CAP;
	s->id_shift = 32 - log2_u32(2 * SNAP_MIN_CAP);
	return s;
}

static void snap_destroy(struct hv_memslots_snap *s)
{
	if (!s)
		return;
	arrays_free(&s->a);
	free(s);
}

/* ---- id hash ------------------------------------------------------- */

/* Fibonacci hashing: consecutive ids land far apart. */
static inline uint32_t id_home(const struct hv_memslots_snap *s, uint32_t id)
{
	return (id * 0x9e3779b1u) >> s->id_shift;
}

static inline uint32_t id_mask(const struct hv_memslots_snap *s)
{
	return 2 * s->cap - 1;
}

/* Index of @id's entry, or of the empty entry where it would go. */
static inline uint32_t id_find(const struct hv_memslots_snap *s, uint32_t id)
{
	uint32_t mask = id_mask(s), i = id_home(s, id);

	while (s->a.ids[i].slot && s->a.ids[i].id != id)
		i = (i + 1) & mask;
	return i;
}

static void id_insert(struct hv_memslots_snap *s, struct hv_memslot *slot)
{
	uint32_t i = id_find(s, slot->id);

	HV_BUG_ON(s->a.ids[i].slot);
	s->a.ids[i].id = slot->id;
	s->a.ids[i].slot = slot;
}

/* Backward-shift deletion: no tombstones, probe chains stay short. */
static void id_remove(struct hv_memslots_snap *s, uint32_t id)
{
	uint32_t mask = id_mask(s), i = id_find(s, id), j = i;

	HV_BUG_ON(!s->a.ids[i].slot);
	for (;;) {
		j = (j + 1) & mask;
		if (!s->a.ids[j].slot)
			break;
		/* Move ids[j] back to the hole if the hole is on its path. */
		if (((j - id_home(s, s->a.ids[j].id)) & mask) >=
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
	uint32_t i = id_find(s, slot->id);

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
static bool range_overlaps(const struct hv_memslots_snap *s, gfn_t base,
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
	arrays_free(&old);
}

static void snap_apply(struct hv_memslots_snap *s, struct update *up,
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

/* ---- writers -------------------------------------------------------- */

static struct hv_memslots_snap *inactive(struct hv_memslots *set)
{
	struct hv_memslots_snap *act =
		atomic_load_explicit(&set->active, memory_order_relaxed);

	return set->snap[0] == act ? set->snap[1] : set->snap[0];
}

static void update_discard(struct update *up)
{
	for (int i = 0; i < 2; i++)
		arrays_free(&up->grown[i]);
	if (up->new) {
		if (up->new->dirty &&
		    (!up->old || up->old->dirty != up->new->dirty))
			hv_dirty_bitmap_destroy(up->new->dirty);
		free(up->new);
	}
}

/* Called with set->lock held; cannot fail. */
static void update_commit(struct hv_memslots *set, struct update *up)
{
	struct hv_memslots_snap *ina = inactive(set);
	struct hv_memslots_snap *act =
		atomic_load_explicit(&set->active, memory_order_relaxed);
	struct hv_memslot *old = up->old;

	set->generation++;
	snap_apply(ina, up, &up->grown[0], set->generation);
	/* seq_cst: see the ordering argument in hvcore/rcu.c. */
	atomic_store(&set->active, ina);
	hv_rcu_synchronize(set->rcu);
	snap_apply(act, up, &up->grown[1], set->generation);

	if (old) {
		if (old->dirty && (!up->new || up->new->dirty != old->dirty))
			hv_dirty_bitmap_destroy(old->dirty);
		free(old);
	}
}

/* Prepare @up->grown when an insert needs more room than @s has. */
static int update_reserve(struct hv_memslots_snap *s, struct update *up)
{
	if (s->count < s->cap)
		return 0;
	up->grow = true;
	up->grown_cap = 2 * s->cap;
	for (int i = 0; i < 2; i++)
		if (arrays_alloc(up->grown_cap, &up->grown[i]))
			return -ENOMEM;
	return 0;
}

static int slot_version(struct hv_memslots *set, const struct hv_memslot *old,
			const struct hv_memslot *proto,
			struct hv_memslot **out)
{
	struct hv_memslot *slot = malloc(sizeof(*slot));
	int ret;

	if (!slot)
		return -ENOMEM;
	*slot = *proto;
	slot->dirty = NULL;
	if (slot->flags & HV_MEMSLOT_F_DIRTY_LOG) {
		if (old && old->dirty) {
			/* The bitmap belongs to the slot, not the version. */
			slot->dirty = old->dirty;
		} else {
			ret = hv_dirty_bitmap_create(slot->npages,
						     &slot->dirty);
			if (ret) {
				free(slot);
				return ret;
			}
			if (set->initially_set)
				hv_dirty_bitmap_set_all(slot->dirty);
		}
	}
	*out = slot;
	return 0;
}

static int range_check(gfn_t base, uint64_t npages)
{
	if (!npages || npages > HV_MEMSLOT_MAX_GFN ||
	    base > HV_MEMSLOT_MAX_GFN - npages)
		return -EINVAL;
	return 0;
}

int hv_memslots_add(struct hv_memslots *set, const struct hv_memslot_desc *d)
{
	struct hv_memslot proto = {
		.id = d->id,
		.flags = d->flags,
		.base_gfn = d->base_gfn,
		.npages = d->npages,
		.hva = d->hva,
	};
	struct update up = { .kind = UPDATE_INSERT };
	struct hv_memslots_snap *s;
	int ret;

	if (d->id >= HV_MEMSLOT_ID_LIMIT || (d->flags & ~HV_MEMSLOT_F_ALL) ||
	    range_check(d->base_gfn, d->npages) ||
	    (d->hva & (HV_PAGE_SIZE - 1)) ||
	    d->hva > UINT64_MAX - (d->npages << HV_PAGE_SHIFT))
		return -EINVAL;

	pthread_mutex_lock(&set->lock);
	s = inactive(set);
	if (s->a.ids[id_find(s, d->id)].slot)
		ret = -EEXIST;
	else if (s->count >= HV_MEMSLOT_MAX)
		ret = -ENOSPC;
	else if (range_overlaps(s, d->base_gfn, d->base_gfn + d->npages,
				NULL))
		ret = -EEXIST;
	else if (!(ret = update_reserve(s, &up)) &&
		 !(ret = slot_version(set, NULL, &proto, &up.new)))
		update_commit(set, &up);
	if (ret)
		update_discard(&up);
	pthread_mutex_unlock(&set->lock);
	return ret;
}

/* The current version of slot @id (lock held), or NULL. */
static struct hv_memslot *slot_get(struct hv_memslots *set, uint32_t id)
{
	struct hv_memslots_snap *s = inactive(set);

	return s->a.ids[id_find(s, id)].slot;
}

int hv_memslots_delete(struct hv_memslots *set, uint32_t id)
{
	struct update up = { .kind = UPDATE_REMOVE };

	if (id >= HV_MEMSLOT_ID_LIMIT)
		return -EINVAL;
	pthread_mutex_lock(&set->lock);
	up.old = slot_get(set, id);
	if (up.old)
		update_commit(set, &up);
	pthread_mutex_unlock(&set->lock);
	return up.old ? 0 : -ENOENT;
}

int hv_memslots_move(struct hv_memslots *set, uint32_t id, gfn_t new_base)
{
	struct update up = { .kind = UPDATE_MOVE };
	struct hv_memslot proto;
	int ret = 0;

	if (id >= HV_MEMSLOT_ID_LIMIT)
		return -EINVAL;
	pthread_mutex_lock(&set->lock);
	up.old = slot_get(set, id);
	if (!up.old) {
		ret = -ENOENT;
		goto out;
	}
	if (new_base == up.old->base_gfn)
		goto out;
	ret = range_check(new_base, up.old->npages);
	if (ret)
		goto out;
	if (range_overlaps(inactive(set), new_base,
			   new_base + up.old->npages, up.old)) {
		ret = -EEXIST;
		goto out;
	}
	proto = *up.old;
	proto.base_gfn = new_base;
	ret = slot_version(set, up.old, &proto, &up.new);
	if (!ret)
		update_commit(set, &up);
out:
	pthread_mutex_unlock(&set->lock);
	return ret;
}

int hv_memslots_set_flags(struct hv_memslots *set, uint32_t id,
			  uint32_t flags)
{
	struct update up = { .kind = UPDATE_REPLACE };
	struct hv_memslot proto;
	int ret = 0;

	if (id >= HV_MEMSLOT_ID_LIMIT || (flags & ~HV_MEMSLOT_F_ALL))
		return -EINVAL;
	pthread_mutex_lock(&set->lock);
	up.old = slot_get(set, id);
	if (!up.old) {
		ret = -ENOENT;
	} else if (up.old->flags != flags) {
		proto = *up.old;
		proto.flags = flags;
		ret = slot_version(set, up.old, &proto, &up.new);
		if (!ret)
			update_commit(set, &up);
	}
	pthread_mutex_unlock(&set->lock);
	return ret;
}

void hv_memslots_set_initially_set(struct hv_memslots *set, bool on)
{
	pthread_mutex_lock(&set->lock);
	set->initially_set = on;
	pthread_mutex_unlock(&set->lock);
}

int hv_memslots_create(struct hv_memslots **out)
{
	struct hv_memslots *set = calloc(1, sizeof(*set));
	int ret = -ENOMEM;

	if (!set)
		return -ENOMEM;
	set->snap[0] = snap_create();
	set->snap[1] = snap_create();
	if (!set->snap[0] || !set->snap[1])
		goto err_snap;
	ret = hv_rcu_create(&set->rcu);
	if (ret)
		goto err_snap;
	if (pthread_mutex_init(&set->lock, NULL)) {
		ret = -ENOMEM;
		goto err_rcu;
	}
	atomic_init(&set->active, set->snap[0]);
	*out = set;
	return 0;

err_rcu:
	hv_rcu_destroy(set->rcu);
err_snap:
	snap_destroy(set->snap[1]);
	snap_destroy(set->snap[0]);
	free(set);
	return ret;
}

void hv_memslots_destroy(struct hv_memslots *set)
{
	struct hv_memslots_snap *s;

	if (!set)
		return;
	/* Both snapshots hold the same slot versions. */
	s = set->snap[0];
	for (unsigned i = 0; i < s->count; i++) {
		hv_dirty_bitmap_destroy(s->a.range[i].slot->dirty);
		free(s->a.range[i].slot);
	}
	snap_destroy(set->snap[0]);
	snap_destroy(set->snap[1]);
	hv_rcu_destroy(set->rcu);
	pthread_mutex_destroy(&set->lock);
	free(set);
}

/* ---- readers -------------------------------------------------------- */

const struct hv_memslots_snap *hv_memslots_read_lock(struct hv_memslots *set)
{
	hv_rcu_read_lock(set->rcu);
	/* seq_cst, after the reader slot store: see hvcore/rcu.c. */
	return atomic_load(&set->active);
}

void hv_memslots_read_unlock(struct hv_memslots *set)
{
	hv_rcu_read_unlock(set->rcu);
}

void hv_memslots_thread_exit(struct hv_memslots *set)
{
	hv_rcu_thread_exit(set->rcu);
}

uint64_t hv_memslots_generation(const struct hv_memslots_snap *s)
{
	return s->generation;
}

const struct hv_memslot *hv_memslots_by_id(const struct hv_memslots_snap *s,
					   uint32_t id)
{
	uint32_t mask = id_mask(s), i = id_home(s, id);

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
