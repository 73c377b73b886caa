/* SPDX-License-Identifier: MIT */
/*
 * mig_batch: the page batch codec (docs/architecture.md).
 *
 * A batch is up to MIG_BATCH_MAX_PAGES pages of one slot, starting at
 * first_gfn: a page mask, a zero mask (zero pages cost one bit and no
 * payload) and the non-zero pages encoded by one mig_comp_ops method (zstd,
 * or raw when zstd does not save at least 1/16). The cap of 64 pages makes
 * each mask one 64-bit word, matches one word of a dirty bitmap (the
 * sender's natural unit), and bounds a batch to 256 KiB: large enough for
 * zstd to reach its ratio and for TLS records to be full, small enough
 * that N channels in flight hold only a few MiB.
 *
 * With the stream feature MIG_FEATURE_DELTA, non-zero pages may also go
 * as deltas against the copy the destination holds (delta_mask and one
 * length per delta; delta.h has the record format and the rules).
 *
 * Encoder (sender): one per data channel thread; it owns a zstd context
 * and an output buffer holding one whole frame (header, PageBatch,
 * payload), so a batch goes out in one write with no extra copy.
 *
 * Decoder (receiver): one per data channel thread; it checks the header
 * against the memory map -- slot id, gfn range, npages, masks, encoding,
 * payload length (raw: exactly nonzero * 4 KiB; zstd: below that, and the
 * frame's declared size exactly nonzero * 4 KiB) -- BEFORE writing
 * anything, then decodes straight into guest memory. A bad batch is an
 * error, never a write outside the batch's pages.
 */
#ifndef MIG_BATCH_H
#define MIG_BATCH_H

#include <stdbool.h>

#include "hvcore/types.h"
#include "migrated/mig/frame.h"
#include "migrated/mig/memmap.h"

#define MIG_BATCH_MAX_PAGES 64u
#define MIG_BATCH_PAYLOAD_MAX (MIG_BATCH_MAX_PAGES * HV_PAGE_SIZE)

/* What one batch carried, for the pipeline's counters. */
struct mig_batch_info {
	uint32_t pages;	     /* pages in the batch */
	uint32_t zero;	     /* of which zero pages */
	uint32_t compressed; /* non-zero pages sent zstd-encoded */
	uint32_t raw;	     /* non-zero pages sent raw */
	uint32_t delta;	     /* of the compressed + raw: sent as a delta */
	uint32_t payload;    /* payload bytes */
	uint32_t wire;	     /* frame bytes: header, message, payload */
	/* Encoder only: non-zero bytes handed to the compressor (0: not
	 * tried), what they became (the same when it did not pay), and the
	 * level of a compressed batch. For the adaptive choice (adapt.h). */
	uint32_t tried;
	uint32_t tried_out;
	int level;
};

struct mig_batch_enc_cfg {
	unsigned encoding; /* Mig__Encoding to try: ZSTD (default) or RAW */
	int level;	   /* zstd level; 0 = 1 */
};

struct mig_batch_enc;

/* Returns 0, -EINVAL (unknown encoding) or -ENOMEM. */
int mig_batch_enc_create(const struct mig_batch_enc_cfg *cfg,
			 struct mig_batch_enc **out);
void mig_batch_enc_destroy(struct mig_batch_enc *enc);

/*
 * Compress the next batches at zstd level @level, or send them raw without
 * trying when @level is 0 (the adaptive choice, adapt.h). Only for an
 * encoder created with ENCODING_ZSTD. Returns 0, or -EINVAL (a raw
 * encoder, or a level zstd refuses). Owner thread.
 */
int mig_batch_enc_set_level(struct mig_batch_enc *enc, int level);

struct mig_delta_cache;

/*
 * Delta encoding for the next batches (delta.h): non-zero pages are
 * copied first and sent as a delta against @cache's copy when it holds
 * one (only to a destination that offered MIG_FEATURE_DELTA); @insert:
 * pages sent full become cached. @cache NULL: off. The cache is shared by
 * the channels and must outlive its use. 0 or -ENOMEM. Owner thread.
 */
int mig_batch_enc_set_delta(struct mig_batch_enc *enc,
			    struct mig_delta_cache *cache, bool insert);

/*
 * Encode the pages of @mask (bit i = gfn @gfn + i) of slot @slot, read
 * from @map, into one frame. *@frame and *@len point into the encoder's buffer
 * and stay valid until its next call. Returns 0, -EINVAL (mask 0) or
 * -ERANGE (pages outside the slot, or an unknown slot).
 */
int mig_batch_encode(struct mig_batch_enc *enc, const struct mig_memmap *map,
		     uint32_t slot, gfn_t gfn, uint64_t mask,
		     const uint8_t **frame, size_t *len,
		     struct mig_batch_info *info);

struct mig_batch_dec;

int mig_batch_dec_create(struct mig_batch_dec **out);
void mig_batch_dec_destroy(struct mig_batch_dec *dec);

/*
 * Check a received batch header against @map; pure. Returns 0 or:
 *   -EPROTO    npages outside 1..64, empty page mask, bits beyond npages,
 *              zero mask not a subset, unknown encoding, zstd with no
 *              non-zero page, delta mask not a subset of the non-zero
 *              pages, delta lengths not one per delta page or outside
 *              8..MIG_DELTA_REC_MAX;
 *   -ENOENT    unknown slot;
 *   -ERANGE    [first_gfn, first_gfn + npages) not inside the slot;
 *   -EMSGSIZE  payload_len impossible for the encoding.
 */
int mig_batch_check(const Mig__PageBatch *b, const struct mig_memmap *map);

/*
 * Check @b (as above), then write its pages into @map's memory: zero pages
 * are cleared (left alone when already zero, so fresh destination memory
 * is not faulted in), the others decoded from @payload/@len. Returns 0,
 * the errors above, -EMSGSIZE (len != payload_len, declared size wrong:
 * nothing written) or -EBADMSG (corrupt data: the batch's own pages may be
 * partly written; the migration must fail). A batch with deltas is decoded
 * and every delta checked before anything is written: a malformed delta
 * is -EBADMSG, one whose base is not the page the destination holds is
 * -ESTALE, and either writes nothing.
 */
int mig_batch_decode(struct mig_batch_dec *dec, const struct mig_memmap *map,
		     const Mig__PageBatch *b, const uint8_t *payload,
		     size_t len, struct mig_batch_info *info);

/* True when the 4 KiB page at @p is all zero (word-wise, early exit). */
bool mig_page_is_zero(const void *p);

#endif
