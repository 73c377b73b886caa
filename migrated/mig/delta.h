/* SPDX-License-Identifier: MIT */
/*
 * mig_delta: the delta of a re-sent page against the copy the destination
 * already holds (the idea of QEMU's XBZRLE), and the source's bounded
 * cache of last-sent copies it is computed from (docs/architecture.md).
 *
 * Delta format (one page, what PageBatch.delta_len[i] bytes hold):
 *   offset 0, 8 bytes: base hash, little-endian: mig_delta_hash() of the
 *     page the delta applies to. The destination checks it against its
 *     own copy before anything is written: a delta against a page it
 *     does not hold is a protocol error, never silent corruption.
 *   then runs until the end of the record: skip (ULEB128, bytes left as
 *     they are), len (ULEB128, 1..4096), len bytes of new content. The
 *     tail after the last run is unchanged. Values take 1 or 2 bytes;
 *     every run must end inside the page.
 * Runs are found 8 bytes at a time (the XOR of old and new words is zero
 * or not), so a run covers whole words.
 *
 * Cache (source): a direct-mapped table of MIG_DELTA copies keyed by the
 * page's global index (its place in the memory map), holding each page
 * exactly as it was put on the wire, with its hash. A channel thread
 * copies a page it is about to send into a stable buffer first, so that
 * what it caches is what it sends even while the guest writes. Entries are
 * locked by stripe: channels encode concurrently, and two pages of a pass
 * may share an entry. Rules that keep the cache equal to the destination:
 * a page sent full replaces its entry (or, when it may not be cached,
 * drops a stale one); a zero page drops its entry; the destination applies
 * passes in order (IterEnd/IterAck), and within a pass a page travels
 * once, so the copy a delta refers to has always arrived before it.
 */
#ifndef MIG_DELTA_H
#define MIG_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MIG_DELTA_HDR 8u
/* Longest delta worth sending: beyond it the page goes full. */
#define MIG_DELTA_MAX 3072u
#define MIG_DELTA_REC_MAX (MIG_DELTA_HDR + MIG_DELTA_MAX)
/* Cache default: guest RAM / 64, within these bounds. */
#define MIG_DELTA_CACHE_MIN (1ull << 20)
#define MIG_DELTA_CACHE_MAX (64ull << 20)

/* The 64-bit hash a delta names its base with. Pure. */
uint64_t mig_delta_hash(const void *page);

/*
 * Encode the delta of 4 KiB @new against @old into @out (capacity @cap),
 * base hash @old_hash first. Returns the record length, or -ENOSPC when
 * it would exceed @cap (send the page full).
 */
ssize_t mig_delta_encode(const uint8_t *old, uint64_t old_hash,
			 const uint8_t *new, uint8_t *out, size_t cap);

/*
 * Check record @rec/@len against page @page without writing: the base
 * hash matches (-ESTALE otherwise), and every run is well formed and ends
 * inside the page (-EBADMSG otherwise). Pure.
 */
int mig_delta_check(const uint8_t *page, const uint8_t *rec, size_t len);

/* Apply a record mig_delta_check() accepted to @page. */
void mig_delta_apply(uint8_t *page, const uint8_t *rec, size_t len);

struct mig_delta_cache;

/*
 * A cache of @bytes (rounded down to pages, at least one) for a memory map
 * of @total_pages pages. Returns 0, -EINVAL or -ENOMEM.
 */
int mig_delta_cache_create(uint64_t bytes, uint64_t total_pages,
			   struct mig_delta_cache **out);
void mig_delta_cache_destroy(struct mig_delta_cache *c);

/* The default size for a map of @total_pages: RAM / 64 within bounds. */
uint64_t mig_delta_cache_default(uint64_t total_pages);

/* Cached pages now; any thread. */
uint64_t mig_delta_cache_pages(const struct mig_delta_cache *c);

/*
 * Encode page @idx whose stable copy is @copy: when its entry holds it,
 * write a delta into @out (cap MIG_DELTA_REC_MAX) and return its length;
 * otherwise return 0 (send @copy full). Either way @copy becomes the
 * entry's content when @insert (or when it was cached already); without
 * @insert a stale entry of @idx is dropped. Any channel thread.
 */
ssize_t mig_delta_cache_encode(struct mig_delta_cache *c, uint64_t idx,
			       const uint8_t *copy, bool insert,
			       uint8_t *out);

/* Page @idx was sent as zero, or without the cache: drop its entry. */
void mig_delta_cache_drop(struct mig_delta_cache *c, uint64_t idx);

#endif
