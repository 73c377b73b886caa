/* SPDX-License-Identifier: MIT */
/*
 * hv_dirty_bitmap: the dirty log of one memslot, one bit per 4 KiB page.
 *
 * Every operation is atomic per 64-bit word, so vCPU threads (or a ring /
 * PML flush) may set bits while a harvester fetches-and-clears words: a bit
 * set concurrently with a fetch-and-clear is either returned by it or left
 * set for the next one, never lost. Chunked operations work on ranges
 * aligned to 64 pages, KVM's KVM_CLEAR_DIRTY_LOG granularity.
 *
 * The bitmap has no lock of its own; its lifetime is its memslot's.
 */
#ifndef HVCORE_DIRTY_BITMAP_H
#define HVCORE_DIRTY_BITMAP_H

#include "hvcore/types.h"

#define HV_DIRTY_WORD_PAGES 64

struct hv_dirty_bitmap {
	/* immutable after create */
	uint64_t npages;
	uint64_t nwords;
	/* atomic per word */
	uint64_t *words;
};

/* Allocate a bitmap for @npages pages, all clear. -EINVAL for 0 pages,
 * -ENOMEM. *out untouched on failure. */
int hv_dirty_bitmap_create(uint64_t npages, struct hv_dirty_bitmap **out);
void hv_dirty_bitmap_destroy(struct hv_dirty_bitmap *bm);

/* Bit operations. @page must be < npages (HV_BUG_ON otherwise). */
void hv_dirty_bitmap_set(struct hv_dirty_bitmap *bm, uint64_t page);
bool hv_dirty_bitmap_test(const struct hv_dirty_bitmap *bm, uint64_t page);
/* Set @mask in word @word (a batch of up to 64 pages from a ring or PML). */
void hv_dirty_bitmap_set_mask(struct hv_dirty_bitmap *bm, uint64_t word,
			      uint64_t mask);

/* Atomically read and clear word @word; returns the bits it held. */
uint64_t hv_dirty_bitmap_fetch_clear_word(struct hv_dirty_bitmap *bm,
					  uint64_t word);

/*
 * Fetch-and-clear pages [first, first + count) into @dst (a plain bitmap of
 * DIV_ROUND_UP(count, 64) words, bit 0 = page @first). @first and @count
 * must be multiples of 64, except that the range may end at npages.
 * Returns the number of dirty pages moved, or -EINVAL for a bad range.
 */
int64_t hv_dirty_bitmap_fetch_clear(struct hv_dirty_bitmap *bm, uint64_t first,
				    uint64_t count, uint64_t *dst);

/* OR the plain bitmap @src (npages bits) into @bm. -EINVAL on size. */
int hv_dirty_bitmap_or(struct hv_dirty_bitmap *bm, const uint64_t *src,
		       uint64_t npages);

/* Number of set bits (a racy snapshot while writers run). */
uint64_t hv_dirty_bitmap_count(const struct hv_dirty_bitmap *bm);

/* Set every bit (KVM_DIRTY_LOG_INITIALLY_SET semantics) / clear every bit. */
void hv_dirty_bitmap_set_all(struct hv_dirty_bitmap *bm);
void hv_dirty_bitmap_clear_all(struct hv_dirty_bitmap *bm);

/*
 * Call @fn(page, arg) for each set bit in [first, first + count), in
 * ascending order, without clearing. Iteration stops early and returns
 * @fn's value when it is non-zero; otherwise returns 0.
 */
int hv_dirty_bitmap_for_each(const struct hv_dirty_bitmap *bm, uint64_t first,
			     uint64_t count,
			     int (*fn)(uint64_t page, void *arg), void *arg);

#endif
