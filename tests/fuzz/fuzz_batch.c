// SPDX-License-Identifier: MIT
/*
 * Target: the page batch decoder (migrated/mig/batch.h) writing into guest
 * memory. The input is what a data channel receives for one batch: a
 * MSG_PAGE_BATCH frame (header and PageBatch) and then the payload (zero
 * mask, raw or zstd pages). Memory is the two guarded slots of
 * fuzz_common.h.
 *
 * Promises checked, beyond ASan and the guard pages: the decoder writes
 * only the pages of the batch's page mask (every other page keeps a
 * sentinel in its first and last word), a page of the zero mask reads back
 * as zero after success, a rejected header or a wrong size (-EMSGSIZE)
 * writes nothing, and mig_batch_decode() agrees with mig_batch_check(),
 * which accepts no page mask bit at or beyond npages.
 * Deltas (PageBatch.delta_mask, delta.h): a batch with deltas is decoded
 * and checked whole before its first write, so any error of one
 * (-EBADMSG, -ESTALE: the base hash is not the page's) writes nothing.
 * Every page the input wrote is reset to the canonical content (zeros and
 * the two sentinel words) afterwards, so that the delta seeds, whose base
 * hash is that of the canonical page, keep reaching the apply path while
 * their runs are mutated.
 */
#include <errno.h>
#include <string.h>

#include "migrated/mig/batch.h"
#include "tests/fuzz/fuzz_common.h"

#define SENTINEL 0x5a5aa5a5c3c33c3cull

static struct mig_memmap_slot slots[FUZZ_NR_SLOTS];
static struct mig_memmap *map;
static struct mig_batch_dec *dec;

static uint64_t *first_word(uint8_t *page)
{
	return (uint64_t *)page;
}

static uint64_t *last_word(uint8_t *page)
{
	return (uint64_t *)(page + HV_PAGE_SIZE - 8);
}

static void stamp_all(void)
{
	for (unsigned s = 0; s < FUZZ_NR_SLOTS; s++)
		for (uint64_t i = 0; i < slots[s].npages; i++) {
			uint8_t *p = slots[s].host + i * HV_PAGE_SIZE;

			*first_word(p) = SENTINEL;
			*last_word(p) = SENTINEL;
		}
}

/* Is page @i of slot @s one that batch @b may write? */
static bool in_batch(const Mig__PageBatch *b, unsigned s, uint64_t i)
{
	uint64_t gfn = slots[s].base_gfn + i;

	if (b->slot != slots[s].id || gfn < b->first_gfn ||
	    gfn - b->first_gfn >= b->npages || gfn - b->first_gfn >= 64)
		return false;
	return b->page_mask >> (gfn - b->first_gfn) & 1;
}

/*
 * Every page outside the batch still has its sentinel; the batch's pages
 * get theirs back for the next input. @ok: the decode succeeded, so zero
 * pages must read zero.
 */
static void check_and_restamp(const Mig__PageBatch *b, bool ok)
{
	for (unsigned s = 0; s < FUZZ_NR_SLOTS; s++)
		for (uint64_t i = 0; i < slots[s].npages; i++) {
			uint8_t *p = slots[s].host + i * HV_PAGE_SIZE;
			bool mine = b && in_batch(b, s, i);

			if (!mine) {
				FUZZ_CHECK(*first_word(p) == SENTINEL &&
					   *last_word(p) == SENTINEL);
				continue;
			}
			if (ok && b->zero_mask >> (slots[s].base_gfn + i -
						   b->first_gfn) &
					  1)
				FUZZ_CHECK(mig_page_is_zero(p));
			memset(p, 0, HV_PAGE_SIZE);
			*first_word(p) = SENTINEL;
			*last_word(p) = SENTINEL;
		}
}

/*
 * Nothing was written: every page is still canonical (each input starts
 * with all pages so), its middle bytes included.
 */
static void check_untouched(void)
{
	for (unsigned s = 0; s < FUZZ_NR_SLOTS; s++)
		for (uint64_t i = 0; i < slots[s].npages; i++) {
			uint8_t *p = slots[s].host + i * HV_PAGE_SIZE;

			FUZZ_CHECK(*first_word(p) == SENTINEL &&
				   *last_word(p) == SENTINEL);
			for (size_t w = 8; w < HV_PAGE_SIZE - 8; w += 8)
				FUZZ_CHECK(!*(uint64_t *)(p + w));
		}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	fuzz_slots_map(slots);
	FUZZ_CHECK(mig_memmap_create(slots, FUZZ_NR_SLOTS, &map) == 0);
	FUZZ_CHECK(mig_batch_dec_create(&dec) == 0);
	stamp_all();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_batch_info info;
	struct mig_frame_hdr h;
	ProtobufCMessage *msg = NULL;
	const Mig__PageBatch *b;
	size_t used;
	int chk, ret;

	if (mig_frame_decode(data, size, &h, &msg, &used))
		return 0;
	if (h.type != MIG__MSG_TYPE__MSG_PAGE_BATCH)
		goto out;
	b = (const Mig__PageBatch *)msg;
	chk = mig_batch_check(b, map);
	/* The window, by the wire's definition rather than the decoder's:
	 * no page at or beyond npages (seedgen.c's edge seeds). */
	FUZZ_CHECK(chk || (b->npages >= 1 && b->npages <= 64 &&
			   (b->npages == 64 || !(b->page_mask >> b->npages))));
	ret = mig_batch_decode(dec, map, b, data + used, size - used, &info);
	if (chk) {
		/* A refused header is refused the same way, untouched. */
		FUZZ_CHECK(ret == chk);
		check_untouched();
		goto out;
	}
	FUZZ_CHECK(ret == 0 || ret == -EMSGSIZE || ret == -EBADMSG ||
		   (ret == -ESTALE && b->delta_mask));
	if (ret == -EMSGSIZE || (ret && b->delta_mask)) {
		/* Sizes, and a batch with deltas, are checked whole before
		 * the first write. */
		check_untouched();
		goto out;
	}
	if (ret == 0) {
		FUZZ_CHECK(info.pages ==
			   (uint32_t)__builtin_popcountll(b->page_mask));
		FUZZ_CHECK(info.zero ==
			   (uint32_t)__builtin_popcountll(b->zero_mask));
		FUZZ_CHECK(info.payload == size - used);
		FUZZ_CHECK(info.delta ==
			   (uint32_t)__builtin_popcountll(b->delta_mask));
	}
	check_and_restamp(b, ret == 0);
out:
	mig_frame_msg_free(msg);
	return 0;
}
