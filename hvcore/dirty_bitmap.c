// SPDX-License-Identifier: MIT
/*
 * hv_dirty_bitmap: one bit per page, atomic per 64-bit word.
 *
 * Ordering: a writer dirties a page, then sets its bit with a release
 * read-modify-write; a harvester takes a word with an acquire exchange and
 * then reads the pages it names. So a page's content is at least as new as
 * the bit that made the harvester read it, and a bit set after the exchange
 * stays set for the next harvest (nothing is lost in between).
 *
 * Bits at or beyond npages in the last word are never set: set_all and
 * OR-merge mask them, so count() and for_each() need no tail checks.
 */
#include "hvcore/dirty_bitmap.h"
#include "hvcore/bug.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The largest bitmap: every page of a 52-bit guest-physical space. */
#define DIRTY_MAX_PAGES (1ULL << (52 - HV_PAGE_SHIFT))

static inline uint64_t load_word(const struct hv_dirty_bitmap *bm,
				 uint64_t w)
{
	return __atomic_load_n(&bm->words[w], __ATOMIC_RELAXED);
}

/* Valid bits of word @w: all 64 except in a partial last word. */
static inline uint64_t word_valid_mask(const struct hv_dirty_bitmap *bm,
				       uint64_t w)
{
	uint64_t tail = bm->npages % HV_DIRTY_WORD_PAGES;

	if (w == bm->nwords - 1 && tail)
		return (1ULL << tail) - 1;
	return ~0ULL;
}

int hv_dirty_bitmap_create(uint64_t npages, struct hv_dirty_bitmap **out)
{
	struct hv_dirty_bitmap *bm;
	uint64_t nwords;

	if (!npages || npages > DIRTY_MAX_PAGES)
		return -EINVAL;
	nwords = HV_DIV_ROUND_UP(npages, HV_DIRTY_WORD_PAGES);
	/* One allocation: the words follow the header. */
	bm = calloc(1, sizeof(*bm) + nwords * sizeof(uint64_t));
	if (!bm)
		return -ENOMEM;
	bm->npages = npages;
	bm->nwords = nwords;
	bm->words = (uint64_t *)(bm + 1);
	*out = bm;
	return 0;
}

void hv_dirty_bitmap_destroy(struct hv_dirty_bitmap *bm)
{
	free(bm);
}

void hv_dirty_bitmap_set(struct hv_dirty_bitmap *bm, uint64_t page)
{
	HV_BUG_ON(page >= bm->npages);
	__atomic_fetch_or(&bm->words[page / HV_DIRTY_WORD_PAGES],
			  1ULL << (page % HV_DIRTY_WORD_PAGES),
			  __ATOMIC_RELEASE);
}

bool hv_dirty_bitmap_test(const struct hv_dirty_bitmap *bm, uint64_t page)
{
	HV_BUG_ON(page >= bm->npages);
	return (load_word(bm, page / HV_DIRTY_WORD_PAGES) >>
		(page % HV_DIRTY_WORD_PAGES)) &
	       1;
}

void hv_dirty_bitmap_set_mask(struct hv_dirty_bitmap *bm, uint64_t word,
			      uint64_t mask)
{
	HV_BUG_ON(word >= bm->nwords);
	HV_BUG_ON(mask & ~word_valid_mask(bm, word));
	if (mask)
		__atomic_fetch_or(&bm->words[word], mask, __ATOMIC_RELEASE);
}

uint64_t hv_dirty_bitmap_fetch_clear_word(struct hv_dirty_bitmap *bm,
					  uint64_t word)
{
	HV_BUG_ON(word >= bm->nwords);
	/* Most words of a large slot are clean: skip the locked exchange. */
	if (!load_word(bm, word))
		return 0;
	return __atomic_exchange_n(&bm->words[word], 0, __ATOMIC_ACQ_REL);
}

/* [first, first + count) aligned to 64 pages, or ending at npages. */
static bool range_ok(const struct hv_dirty_bitmap *bm, uint64_t first,
		     uint64_t count)
{
	if (first > bm->npages || count > bm->npages - first)
		return false;
	if (first % HV_DIRTY_WORD_PAGES)
		return false;
	return !(count % HV_DIRTY_WORD_PAGES) || first + count == bm->npages;
}

int64_t hv_dirty_bitmap_fetch_clear(struct hv_dirty_bitmap *bm, uint64_t first,
				    uint64_t count, uint64_t *dst)
{
	uint64_t w0 = first / HV_DIRTY_WORD_PAGES;
	uint64_t n = HV_DIV_ROUND_UP(count, HV_DIRTY_WORD_PAGES);
	int64_t dirty = 0;

	if (!range_ok(bm, first, count))
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = hv_dirty_bitmap_fetch_clear_word(bm, w0 + i);

		dst[i] = v;
		dirty += __builtin_popcountll(v);
	}
	return dirty;
}

int hv_dirty_bitmap_or(struct hv_dirty_bitmap *bm, const uint64_t *src,
		       uint64_t npages)
{
	if (npages != bm->npages)
		return -EINVAL;
	for (uint64_t w = 0; w < bm->nwords; w++) {
		uint64_t v = src[w] & word_valid_mask(bm, w);

		/* Skip clean words and words that already hold every bit. */
		if (v && (load_word(bm, w) & v) != v)
			__atomic_fetch_or(&bm->words[w], v, __ATOMIC_RELEASE);
	}
	return 0;
}

uint64_t hv_dirty_bitmap_count(const struct hv_dirty_bitmap *bm)
{
	uint64_t n = 0;

	for (uint64_t w = 0; w < bm->nwords; w++)
		n += __builtin_popcountll(load_word(bm, w));
	return n;
}

void hv_dirty_bitmap_set_all(struct hv_dirty_bitmap *bm)
{
	for (uint64_t w = 0; w < bm->nwords; w++)
		__atomic_fetch_or(&bm->words[w], word_valid_mask(bm, w),
				  __ATOMIC_RELEASE);
}

void hv_dirty_bitmap_clear_all(struct hv_dirty_bitmap *bm)
{
	for (uint64_t w = 0; w < bm->nwords; w++)
		__atomic_store_n(&bm->words[w], 0, __ATOMIC_RELAXED);
}

int hv_dirty_bitmap_for_each(const struct hv_dirty_bitmap *bm, uint64_t first,
			     uint64_t count,
			     int (*fn)(uint64_t page, void *arg), void *arg)
{
	uint64_t end = first + count;

	HV_BUG_ON(first > bm->npages || count > bm->npages - first);
	if (!count)
		return 0;
	for (uint64_t w = first / HV_DIRTY_WORD_PAGES;
	     w <= (end - 1) / HV_DIRTY_WORD_PAGES; w++) {
		uint64_t v = load_word(bm, w);
		uint64_t base = w * HV_DIRTY_WORD_PAGES;

		/* Trim the partial words at both ends of the range. */
		if (base < first)
			v &= ~0ULL << (first - base);
		if (end - base < HV_DIRTY_WORD_PAGES)
			v &= (1ULL << (end - base)) - 1;
		while (v) {
			int bit = __builtin_ctzll(v);
			int ret = fn(base + bit, arg);

			if (ret)
				return ret;
			v &= v - 1;
		}
	}
	return 0;
}
