/* SPDX-License-Identifier: MIT */
/*
 * The memslot snapshot: private to hvcore/memslots.c (the set, its writers
 * and grace periods) and hvcore/memslots_snap.c (one snapshot's arrays, id
 * hash, gfn index and the lookups readers make). See memslots_snap.c for
 * the layout and memslots.c for the two-snapshot update protocol.
 */
#ifndef HVCORE_MEMSLOTS_SNAP_H
#define HVCORE_MEMSLOTS_SNAP_H

#include <stdatomic.h>

#include "hvcore/memslots.h"

#define CACHELINE 64
#define SNAP_MIN_CAP 8u
/* Bucket table entries per slot, at most. */
#define BUCKETS_PER_SLOT 4u
/* Candidates scanned one by one before bisecting. */
#define SCAN_MAX 8u
/*
 * Bucket entries are stored as a base per group of BUCKET_GROUP buckets
 * plus a 16-bit offset per bucket (see "bucket index" in memslots_snap.c):
 * an insert or delete then rewrites at most one group's offsets and the
 * group bases, not every entry above it.
 */
#define BUCKET_GROUP_SHIFT 8u
#define BUCKET_GROUP (1u << BUCKET_GROUP_SHIFT)
_Static_assert(HV_MEMSLOT_MAX <= 65536, "bucket offsets are 16-bit");


struct gfn_range {
	gfn_t base;
	gfn_t end; /* base + npages */
	struct hv_memslot *slot;
};

struct id_ent {
	uint32_t id;
	struct hv_memslot *slot; /* NULL: empty */
};

/*
 * The arrays of one snapshot, sized for cap slots. The order matters: the
 * tables every lookup reads first come first (see hv_memslots_snap).
 */
struct snap_arrays {
	/* Per bucket: the slot covering the whole bucket, or NULL. A random
	 * lookup that lands in such a bucket (the common case: big slots,
	 * or one-page slots at shift 0) costs one memory access. */
	struct hv_memslot **exact;  /* BUCKETS_PER_SLOT * cap + 1 */
	struct id_ent *ids;	    /* 2 * cap */
	struct gfn_range *range;    /* cap */
	/* bucket b's entry is group[b >> BUCKET_GROUP_SHIFT] + off[b] */
	uint16_t *off;		    /* BUCKETS_PER_SLOT * cap + 1 */
	uint32_t *group;	    /* BUCKETS_PER_SLOT * cap / BUCKET_GROUP + 1 */
	unsigned cap;
};

struct hv_memslots_snap {
	/*
	 * Immutable while published; changed only while inactive. What an
	 * id lookup and a gfn lookup that hits exact[] read is in the first
	 * cache line: min_gfn .. a.range.
	 */
	gfn_t min_gfn; /* <= base of the first slot */
	uint64_t span; /* end of the last slot - min_gfn; 0 when empty */
	unsigned shift;
	unsigned id_shift; /* 32 - log2(2 * cap) */
	unsigned cap; /* power of two */
	unsigned count;
	struct snap_arrays a;
	/* <= BUCKETS_PER_SLOT * count; entry nbuckets = count - 1, a sentinel */
	uint32_t nbuckets;
	uint64_t generation;

	/* written by readers: on its own cache line */
	atomic_uint last_hit __attribute__((aligned(CACHELINE)));
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

/* Fibonacci hashing: consecutive ids land far apart. */
static inline uint32_t hv_snap_id_home(const struct hv_memslots_snap *s,
				       uint32_t id)
{
	return (id * 0x9e3779b1u) >> s->id_shift;
}

static inline uint32_t hv_snap_id_mask(const struct hv_memslots_snap *s)
{
	return 2 * s->cap - 1;
}

/* Index of @id's entry, or of the empty entry where it would go. */
static inline uint32_t hv_snap_id_find(const struct hv_memslots_snap *s,
				       uint32_t id)
{
	uint32_t mask = hv_snap_id_mask(s), i = hv_snap_id_home(s, id);

	while (s->a.ids[i].slot && s->a.ids[i].id != id)
		i = (i + 1) & mask;
	return i;
}

/* Arrays for @cap slots (cap a power of two); -ENOMEM. */
int hv_snap_arrays_alloc(unsigned cap, struct snap_arrays *a);
void hv_snap_arrays_free(struct snap_arrays *a);

/* An empty snapshot, or NULL. destroy(NULL) is a no-op. */
struct hv_memslots_snap *hv_snap_create(void);
void hv_snap_destroy(struct hv_memslots_snap *s);

/* Does [base, end) meet a slot other than @skip? */
bool hv_snap_range_overlaps(const struct hv_memslots_snap *s, gfn_t base,
			    gfn_t end, const struct hv_memslot *skip);

/*
 * Check every invariant of @s's sorted ranges and bucket index against its
 * definition (O(slots + buckets)): 0, or -EUCLEAN. For tests.
 */
int hv_snap_index_check(const struct hv_memslots_snap *s);

/* Apply @up (prepared: cannot fail) to the unpublished snapshot @s. */
void hv_snap_apply(struct hv_memslots_snap *s, struct update *up,
		   struct snap_arrays *grown, uint64_t generation);

#endif
