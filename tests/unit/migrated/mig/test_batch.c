// SPDX-License-Identifier: MIT
/* The page batch codec (migrated/mig/batch.c, compress_*.c). */
#include "tests/harness/hv_test.h"
#include "hvcore/workload.h"
#include "migrated/mig/batch.h"
#include "migrated/mig/delta.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_PAGES 256u
#define SLOT0_GFN 0x100u
#define SLOT7_GFN 0x10000u
#define POISON 0xa5

/* Two slots on each side: ids 0 and 7, same layout. */
struct side {
	uint8_t *mem[2];
	struct mig_memmap *map;
};

static void side_init(struct side *s, bool fill)
{
	struct mig_memmap_slot slots[2];

	for (unsigned i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(posix_memalign((void **)&s->mem[i],
						     HV_PAGE_SIZE,
						     SLOT_PAGES * HV_PAGE_SIZE),
				      0);
		memset(s->mem[i], fill ? 0 : POISON, SLOT_PAGES * HV_PAGE_SIZE);
	}
	slots[0] = (struct mig_memmap_slot){ 0, SLOT0_GFN, SLOT_PAGES,
					     s->mem[0] };
	slots[1] = (struct mig_memmap_slot){ 7, SLOT7_GFN, SLOT_PAGES,
					     s->mem[1] };
	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(slots, 2, &s->map), 0);
}

static void side_fini(struct side *s)
{
	mig_memmap_destroy(s->map);
	free(s->mem[0]);
	free(s->mem[1]);
}

static uint8_t *page(struct side *s, unsigned slot, unsigned i)
{
	return s->mem[slot] + (size_t)i * HV_PAGE_SIZE;
}

/* Page i of slot 0 gets content by i % 4: zero, stamp, text, random. */
static void fill_mixed(struct side *s)
{
	for (unsigned sl = 0; sl < 2; sl++)
		for (unsigned i = 0; i < SLOT_PAGES; i++) {
			uint8_t *p = page(s, sl, i);

			memset(p, 0, HV_PAGE_SIZE);
			if (i % 4 == 0)
				continue;
			hv_wl_fill_page(p, (uint16_t)sl, i + 1,
					i % 4 == 1 ? HV_WL_CONTENT_STAMP
					: i % 4 == 2 ? HV_WL_CONTENT_TEXT
						     : HV_WL_CONTENT_RANDOM);
		}
}

static void fill_all(struct side *s, uint32_t content)
{
	for (unsigned sl = 0; sl < 2; sl++)
		for (unsigned i = 0; i < SLOT_PAGES; i++) {
			memset(page(s, sl, i), 0, HV_PAGE_SIZE);
			if (content)
				hv_wl_fill_page(page(s, sl, i), 1, i + 1,
						content);
		}
}

/* Parse an encoded frame back into its batch message and payload. */
static Mig__PageBatch *parse(const uint8_t *frame, size_t len,
			     const uint8_t **payload, size_t *plen)
{
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	size_t used;

	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(frame, len, &h, &m, &used), 0);
	CU_ASSERT_EQUAL_FATAL(h.type, MIG__MSG_TYPE__MSG_PAGE_BATCH);
	*payload = frame + used;
	*plen = len - used;
	CU_ASSERT_EQUAL(((Mig__PageBatch *)m)->payload_len, *plen);
	return (Mig__PageBatch *)m;
}

/*
 * Encode (slot, gfn, mask) from @src, decode into @dst, and check that
 * exactly the masked pages now match and no other page changed.
 */
static Mig__PageBatch *transfer(struct mig_batch_enc *enc,
				struct mig_batch_dec *dec, struct side *src,
				struct side *dst, unsigned sl, unsigned first,
				uint64_t mask, struct mig_batch_info *ei)
{
	uint32_t id = sl ? 7 : 0;
	gfn_t base = sl ? SLOT7_GFN : SLOT0_GFN;
	const uint8_t *frame, *payload;
	struct mig_batch_info di;
	Mig__PageBatch *b;
	size_t len, plen;
	uint8_t *before = malloc(2 * SLOT_PAGES * HV_PAGE_SIZE);

	CU_ASSERT_PTR_NOT_NULL_FATAL(before);
	memcpy(before, dst->mem[0], SLOT_PAGES * HV_PAGE_SIZE);
	memcpy(before + SLOT_PAGES * HV_PAGE_SIZE, dst->mem[1],
	       SLOT_PAGES * HV_PAGE_SIZE);
	CU_ASSERT_EQUAL_FATAL(mig_batch_encode(enc, src->map, id, base + first,
					       mask, &frame, &len, ei),
			      0);
	b = parse(frame, len, &payload, &plen);
	CU_ASSERT_EQUAL_FATAL(mig_batch_decode(dec, dst->map, b, payload,
					       plen, &di),
			      0);
	CU_ASSERT_EQUAL(di.pages, ei->pages);
	CU_ASSERT_EQUAL(di.zero, ei->zero);
	CU_ASSERT_EQUAL(di.raw, ei->raw);
	CU_ASSERT_EQUAL(di.compressed, ei->compressed);
	for (unsigned i = 0; i < SLOT_PAGES; i++) {
		bool in = i >= first && i - first < 64 &&
			  (mask >> (i - first) & 1);

		if (in) {
			CU_ASSERT(!memcmp(page(src, sl, i), page(dst, sl, i),
					  HV_PAGE_SIZE));
		} else {
			/* Every other page is left exactly as it was. */
			CU_ASSERT(!memcmp(before + ((size_t)sl * SLOT_PAGES +
						    i) * HV_PAGE_SIZE,
					  page(dst, sl, i), HV_PAGE_SIZE));
		}
	}
	free(before);
	return b;
}

static struct mig_batch_enc *enc_new(unsigned encoding)
{
	struct mig_batch_enc_cfg cfg = { .encoding = encoding, .level = 1 };
	struct mig_batch_enc *e = NULL;

	CU_ASSERT_EQUAL_FATAL(mig_batch_enc_create(&cfg, &e), 0);
	return e;
}

static void test_zero_pages_cost_one_bit(void)
{
	struct mig_batch_enc *enc = enc_new(0);
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	Mig__PageBatch *b;

	side_init(&src, true);
	side_init(&dst, false);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	b = transfer(enc, dec, &src, &dst, 0, 64, ~0ULL, &ei);
	CU_ASSERT_EQUAL(b->zero_mask, ~0ULL);
	CU_ASSERT_EQUAL(b->payload_len, 0);
	CU_ASSERT_EQUAL(ei.zero, 64);
	CU_ASSERT(ei.wire < 64);
	mig_frame_msg_free(&b->base);
	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	side_fini(&src);
	side_fini(&dst);
}

static void test_text_pages_go_zstd_random_pages_go_raw(void)
{
	struct mig_batch_enc *enc = enc_new(0);
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	Mig__PageBatch *b;

	side_init(&src, true);
	side_init(&dst, false);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);

	fill_all(&src, HV_WL_CONTENT_TEXT);
	b = transfer(enc, dec, &src, &dst, 1, 0, ~0ULL, &ei);
	CU_ASSERT_EQUAL(b->encoding, MIG__ENCODING__ENCODING_ZSTD);
	CU_ASSERT_EQUAL(ei.compressed, 64);
	/* About 3:1 for the workload's text. */
	CU_ASSERT(b->payload_len < 64 * HV_PAGE_SIZE / 2);
	mig_frame_msg_free(&b->base);

	fill_all(&src, HV_WL_CONTENT_RANDOM);
	b = transfer(enc, dec, &src, &dst, 1, 64, ~0ULL, &ei);
	CU_ASSERT_EQUAL(b->encoding, MIG__ENCODING__ENCODING_RAW);
	CU_ASSERT_EQUAL(b->payload_len, 64 * HV_PAGE_SIZE);
	CU_ASSERT_EQUAL(ei.raw, 64);
	mig_frame_msg_free(&b->base);

	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	side_fini(&src);
	side_fini(&dst);
}

static void test_mixed_sparse_batches_land_on_their_gfns(void)
{
	struct mig_batch_enc *enc = enc_new(0), *raw = enc_new(1);
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	Mig__PageBatch *b;

	side_init(&src, true);
	side_init(&dst, false);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	fill_mixed(&src);
	/* Holes: non-contiguous runs (zstd streaming + scratch path). */
	b = transfer(enc, dec, &src, &dst, 0, 0, 0x5a5a5a5a00ff00f6ULL, &ei);
	CU_ASSERT_EQUAL(b->first_gfn, SLOT0_GFN + 1); /* trimmed */
	CU_ASSERT(ei.zero > 0 && ei.compressed + ei.raw > 0);
	mig_frame_msg_free(&b->base);
	/* A single page at the very end of a slot. */
	b = transfer(enc, dec, &src, &dst, 1, SLOT_PAGES - 1, 1, &ei);
	CU_ASSERT_EQUAL(b->npages, 1);
	mig_frame_msg_free(&b->base);
	/* The raw method, forced. */
	b = transfer(raw, dec, &src, &dst, 0, 128, 0xf0f0f0f0f0f0f0f0ULL,
		     &ei);
	CU_ASSERT_EQUAL(b->encoding, MIG__ENCODING__ENCODING_RAW);
	CU_ASSERT_EQUAL(ei.compressed, 0);
	mig_frame_msg_free(&b->base);
	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(raw);
	mig_batch_enc_destroy(enc);
	side_fini(&src);
	side_fini(&dst);
}

static void test_encoder_refuses_pages_outside_slots(void)
{
	struct mig_batch_enc *enc = enc_new(0);
	const uint8_t *f;
	struct side src;
	size_t len;

	side_init(&src, true);
	CU_ASSERT_EQUAL(mig_batch_encode(enc, src.map, 0, SLOT0_GFN, 0, &f,
					 &len, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(mig_batch_encode(enc, src.map, 3, SLOT0_GFN, 1, &f,
					 &len, NULL),
			-ERANGE);
	CU_ASSERT_EQUAL(mig_batch_encode(enc, src.map, 0,
					 SLOT0_GFN + SLOT_PAGES - 1, 3, &f,
					 &len, NULL),
			-ERANGE);
	mig_batch_enc_destroy(enc);
	side_fini(&src);
}

/* A valid text batch of slot 0, pages [64, 128), and its payload. */
struct sample {
	struct side src, dst;
	struct mig_batch_enc *enc;
	struct mig_batch_dec *dec;
	Mig__PageBatch *b;
	uint8_t *payload;
	size_t plen;
};

static void sample_init(struct sample *s, uint32_t content)
{
	const uint8_t *frame, *p;
	size_t len;

	side_init(&s->src, true);
	side_init(&s->dst, false);
	fill_all(&s->src, content);
	s->enc = enc_new(0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&s->dec), 0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_encode(s->enc, s->src.map, 0,
					       SLOT0_GFN + 64, ~0ULL, &frame,
					       &len, NULL),
			      0);
	s->b = parse(frame, len, &p, &s->plen);
	s->payload = malloc(s->plen + 1);
	memcpy(s->payload, p, s->plen);
}

static void sample_fini(struct sample *s)
{
	free(s->payload);
	mig_frame_msg_free(&s->b->base);
	mig_batch_dec_destroy(s->dec);
	mig_batch_enc_destroy(s->enc);
	side_fini(&s->src);
	side_fini(&s->dst);
}

static bool dst_untouched(struct sample *s)
{
	for (unsigned sl = 0; sl < 2; sl++)
		for (size_t i = 0; i < SLOT_PAGES * HV_PAGE_SIZE; i++)
			if (s->dst.mem[sl][i] != POISON)
				return false;
	return true;
}

/* Decode a copy of the sample with one field changed. */
static int decode_with(struct sample *s, Mig__PageBatch *b, size_t plen)
{
	return mig_batch_decode(s->dec, s->dst.map, b, s->payload, plen,
				NULL);
}

static void test_bad_headers_are_refused_before_any_write(void)
{
	struct sample s;
	Mig__PageBatch b;

	sample_init(&s, HV_WL_CONTENT_TEXT);
	CU_ASSERT_EQUAL_FATAL(s.b->encoding, MIG__ENCODING__ENCODING_ZSTD);

	b = *s.b, b.slot = 1;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -ENOENT);
	b = *s.b, b.first_gfn = SLOT0_GFN + SLOT_PAGES - 63;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -ERANGE);
	b = *s.b, b.first_gfn = SLOT0_GFN - 1;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -ERANGE);
	b = *s.b, b.first_gfn = UINT64_MAX - 10;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -ERANGE);
	b = *s.b, b.npages = 0;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.npages = 65;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.npages = 32; /* mask has bits beyond the window */
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.page_mask = 0;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.page_mask = 0xff, b.zero_mask = 0x100;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.encoding = MIG__ENCODING__ENCODING_INVALID;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.encoding = 3;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	b = *s.b, b.zero_mask = ~0ULL; /* zstd without non-zero pages */
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EPROTO);
	CU_ASSERT(dst_untouched(&s));
	sample_fini(&s);
}

static void test_wrong_lengths_are_refused_before_any_write(void)
{
	struct sample s;
	Mig__PageBatch b;

	sample_init(&s, HV_WL_CONTENT_TEXT);
	/* Truncated: fewer bytes than the header announced. */
	CU_ASSERT_EQUAL(decode_with(&s, s.b, s.plen - 1), -EMSGSIZE);
	/* Header and payload agree but the zstd frame is cut short. */
	b = *s.b, b.payload_len = (uint32_t)s.plen - 7;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen - 7), -EMSGSIZE);
	/* Oversized: compressed as large as raw is never sent. */
	b = *s.b, b.payload_len = 64 * HV_PAGE_SIZE;
	CU_ASSERT_EQUAL(decode_with(&s, &b, 64 * HV_PAGE_SIZE), -EMSGSIZE);
	b = *s.b, b.payload_len = UINT32_MAX;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EMSGSIZE);
	/* Raw must be exactly nonzero * 4 KiB. */
	b = *s.b, b.encoding = MIG__ENCODING__ENCODING_RAW;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EMSGSIZE);
	/* The frame declares 64 pages; the header claims 63 non-zero. */
	b = *s.b, b.zero_mask = 1;
	CU_ASSERT_EQUAL(decode_with(&s, &b, s.plen), -EMSGSIZE);
	CU_ASSERT(dst_untouched(&s));
	sample_fini(&s);
}

static void test_corrupt_compressed_data_fails_inside_the_batch(void)
{
	struct sample s;
	unsigned failures = 0;

	sample_init(&s, HV_WL_CONTENT_TEXT);
	for (unsigned trial = 0; trial < 16; trial++) {
		size_t at = 16 + (s.plen - 32) * trial / 16;
		int ret;

		s.payload[at] ^= 0x5a;
		s.payload[at + 1] ^= 0xff;
		ret = decode_with(&s, s.b, s.plen);
		s.payload[at] ^= 0x5a;
		s.payload[at + 1] ^= 0xff;
		/* zstd has no checksum here: some flips decode to other
		 * bytes, which TLS and the final digest catch. */
		if (ret) {
			CU_ASSERT(ret == -EBADMSG || ret == -EMSGSIZE);
			failures++;
		}
		/* Never a byte outside pages [64, 128) of slot 0. */
		for (unsigned sl = 0; sl < 2; sl++)
			for (unsigned i = 0; i < SLOT_PAGES; i++)
				if (sl || i < 64 || i >= 128)
					CU_ASSERT_EQUAL(
						page(&s.dst, sl, i)[4095],
						POISON);
	}
	CU_ASSERT(failures > 0);
	/* The intact batch still decodes after the failures. */
	CU_ASSERT_EQUAL(decode_with(&s, s.b, s.plen), 0);
	CU_ASSERT(!memcmp(page(&s.src, 0, 64), page(&s.dst, 0, 64),
			  64 * HV_PAGE_SIZE));
	sample_fini(&s);
}

static void test_zero_page_overwrites_old_content(void)
{
	struct mig_batch_enc *enc = enc_new(0);
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	Mig__PageBatch *b;

	side_init(&src, true);
	side_init(&dst, false);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	fill_all(&src, HV_WL_CONTENT_RANDOM);
	mig_frame_msg_free(&transfer(enc, dec, &src, &dst, 0, 0, 0xff,
				     &ei)->base);
	memset(page(&src, 0, 3), 0, HV_PAGE_SIZE);
	b = transfer(enc, dec, &src, &dst, 0, 0, 0xff, &ei);
	CU_ASSERT_EQUAL(b->zero_mask, 1u << 3);
	CU_ASSERT(mig_page_is_zero(page(&dst, 0, 3)));
	mig_frame_msg_free(&b->base);
	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	side_fini(&src);
	side_fini(&dst);
}

static void test_zero_detection_sees_every_word(void)
{
	uint8_t *p = aligned_alloc(4096, 4096);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 0, 4096);
	CU_ASSERT(mig_page_is_zero(p));
	for (unsigned i = 0; i < 4096; i += 61) {
		p[i] = 1;
		CU_ASSERT(!mig_page_is_zero(p));
		p[i] = 0;
	}
	p[4095] = 0x80;
	CU_ASSERT(!mig_page_is_zero(p));
	free(p);
}


/* Change a few bytes of page @i of slot 0: a stamp-like edit. */
static void edit(struct side *s, unsigned i, uint8_t v)
{
	page(s, 0, i)[8] = v;
	memset(page(s, 0, i) + 2048, v, 24);
}

/*
 * Pass 1 sends a window full and caches it; pass 2 sends it again after
 * small edits, a rewrite and a page gone zero: the edited pages go as
 * deltas, the rest full or zero, and every page lands intact.
 */
static void resend_with_deltas(unsigned encoding)
{
	struct mig_batch_enc *enc = enc_new(encoding);
	struct mig_delta_cache *cache;
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	Mig__PageBatch *b;

	side_init(&src, true);
	side_init(&dst, false);
	fill_all(&src, HV_WL_CONTENT_TEXT);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(1 << 20, 2 * SLOT_PAGES,
						     &cache),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_enc_set_delta(enc, cache, true), 0);
	b = transfer(enc, dec, &src, &dst, 0, 0, ~0ULL, &ei);
	CU_ASSERT_EQUAL(b->delta_mask, 0);
	CU_ASSERT_EQUAL(mig_delta_cache_pages(cache), 64u);
	mig_frame_msg_free(&b->base);

	for (unsigned i = 0; i < 64; i++)
		edit(&src, i, (uint8_t)i);
	hv_wl_fill_page(page(&src, 0, 5), 1, 999, HV_WL_CONTENT_RANDOM);
	memset(page(&src, 0, 9), 0, HV_PAGE_SIZE);
	b = transfer(enc, dec, &src, &dst, 0, 0, ~0ULL, &ei);
	CU_ASSERT_EQUAL(ei.delta, 62u);
	CU_ASSERT_EQUAL(b->delta_mask, ~0ULL & ~(1ULL << 5) & ~(1ULL << 9));
	CU_ASSERT_EQUAL(b->zero_mask, 1ULL << 9);
	CU_ASSERT(ei.wire < 64 * 64 + 2 * HV_PAGE_SIZE);
	mig_frame_msg_free(&b->base);
	/* The zero page left the cache; the rewritten one is cached anew. */
	CU_ASSERT_EQUAL(mig_delta_cache_pages(cache), 63u);

	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	mig_delta_cache_destroy(cache);
	side_fini(&src);
	side_fini(&dst);
}

static void test_resent_pages_go_as_deltas_and_land_intact(void)
{
	resend_with_deltas(MIG__ENCODING__ENCODING_ZSTD);
	resend_with_deltas(MIG__ENCODING__ENCODING_RAW);
}

/*
 * The destination does not hold the copy a delta refers to (a lost or
 * changed page): the batch is refused as a whole and writes nothing.
 */
static void test_delta_against_a_page_the_destination_lacks_writes_nothing(void)
{
	struct mig_batch_enc *enc = enc_new(MIG__ENCODING__ENCODING_RAW);
	struct mig_delta_cache *cache;
	struct mig_batch_dec *dec;
	struct mig_batch_info ei;
	struct side src, dst;
	const uint8_t *frame, *payload;
	uint8_t *before = malloc(64 * HV_PAGE_SIZE);
	Mig__PageBatch *b;
	size_t len, plen;

	side_init(&src, true);
	side_init(&dst, false);
	fill_all(&src, HV_WL_CONTENT_STAMP);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(1 << 20, 2 * SLOT_PAGES,
						     &cache),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_enc_set_delta(enc, cache, true), 0);
	b = transfer(enc, dec, &src, &dst, 0, 0, ~0ULL, &ei);
	mig_frame_msg_free(&b->base);
	for (unsigned i = 0; i < 64; i++)
		edit(&src, i, 0x77);
	/* Page 40 on the destination is not what the source sent. */
	page(&dst, 0, 40)[3000] ^= 1;
	memcpy(before, dst.mem[0], 64 * HV_PAGE_SIZE);
	CU_ASSERT_EQUAL_FATAL(mig_batch_encode(enc, src.map, 0, SLOT0_GFN,
					       ~0ULL, &frame, &len, &ei),
			      0);
	CU_ASSERT_EQUAL(ei.delta, 64u);
	b = parse(frame, len, &payload, &plen);
	CU_ASSERT_EQUAL(mig_batch_decode(dec, dst.map, b, payload, plen, NULL),
			-ESTALE);
	CU_ASSERT(!memcmp(before, dst.mem[0], 64 * HV_PAGE_SIZE));
	/* A delta run past the page's end: refused, nothing written. */
	page(&dst, 0, 40)[3000] ^= 1;
	memcpy(before, dst.mem[0], 64 * HV_PAGE_SIZE);
	{
		uint8_t *bad = malloc(plen);

		memcpy(bad, payload, plen);
		/*
		 * Page 0's record: hash, skip 8, len 8, the new stamp word,
		 * skip 2032 (0xf0 0x0f), len 24, ... Make the second skip
		 * 4095: the run would end past the page.
		 */
		CU_ASSERT_EQUAL_FATAL(bad[MIG_DELTA_HDR], 8);
		CU_ASSERT_EQUAL_FATAL(bad[MIG_DELTA_HDR + 10], 0xf0);
		CU_ASSERT_EQUAL_FATAL(bad[MIG_DELTA_HDR + 11], 0x0f);
		bad[MIG_DELTA_HDR + 10] = 0xff;
		bad[MIG_DELTA_HDR + 11] = 0x1f;
		CU_ASSERT_EQUAL(mig_batch_decode(dec, dst.map, b, bad, plen,
						 NULL),
				-EBADMSG);
		CU_ASSERT(!memcmp(before, dst.mem[0], 64 * HV_PAGE_SIZE));
		/* The intact batch applies. */
		CU_ASSERT_EQUAL(mig_batch_decode(dec, dst.map, b, payload,
						 plen, NULL),
				0);
		CU_ASSERT(!memcmp(src.mem[0], dst.mem[0], 64 * HV_PAGE_SIZE));
		free(bad);
	}
	mig_frame_msg_free(&b->base);
	free(before);
	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	mig_delta_cache_destroy(cache);
	side_fini(&src);
	side_fini(&dst);
}

/*
 * Golden vector of a batch with a delta (stream feature DELTA): two pages
 * at gfn 0x100, page 0 (all 0x11 before) changed in bytes 16..23 to 0x22
 * and sent as a delta, page 1 zero; raw encoding. A wire change adds one.
 */
static const uint8_t golden_delta_batch[] = {
	/* header: "MIGS", version 1, MSG_PAGE_BATCH, 39 bytes */
	0x4d, 0x49, 0x47, 0x53, 0x01, 0x00, 0x07, 0x00, 0x27, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,
	/* first_gfn 0x100, npages 2, page_mask 3, zero_mask 2 */
	0x10, 0x80, 0x02, 0x18, 0x02, 0x21, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x29, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	/* encoding RAW, payload_len 18, delta_mask 1, delta_len [18] */
	0x30, 0x01, 0x38, 0x12, 0x41, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x4a, 0x01, 0x12,
	/* payload: base hash of the 0x11 page, skip 16, 8 new bytes */
	0xcc, 0x6f, 0xb6, 0x00, 0x32, 0xfa, 0x70, 0xd3, 0x10, 0x08, 0x22, 0x22,
	0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
};

static void test_golden_delta_batch_is_stable(void)
{
	struct mig_batch_enc *enc = enc_new(MIG__ENCODING__ENCODING_RAW);
	struct mig_delta_cache *cache;
	struct mig_batch_dec *dec;
	struct side src, dst;
	const uint8_t *frame, *payload;
	Mig__PageBatch *b;
	size_t len, plen;

	side_init(&src, true);
	side_init(&dst, true);
	memset(page(&src, 0, 0), 0x11, HV_PAGE_SIZE);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&dec), 0);
	CU_ASSERT_EQUAL_FATAL(mig_delta_cache_create(1 << 20, 2 * SLOT_PAGES,
						     &cache),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_enc_set_delta(enc, cache, true), 0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_encode(enc, src.map, 0, SLOT0_GFN, 3,
					       &frame, &len, NULL),
			      0);
	memset(page(&src, 0, 0) + 16, 0x22, 8);
	CU_ASSERT_EQUAL_FATAL(mig_batch_encode(enc, src.map, 0, SLOT0_GFN, 3,
					       &frame, &len, NULL),
			      0);
	if (len != sizeof(golden_delta_batch) ||
	    memcmp(frame, golden_delta_batch, len)) {
		for (size_t i = 0; i < len; i++)
			fprintf(stderr, "0x%02x,%s", frame[i],
				i % 12 == 11 ? "\n" : " ");
		fprintf(stderr, "\n");
	}
	CU_ASSERT_EQUAL_FATAL(len, sizeof(golden_delta_batch));
	CU_ASSERT(!memcmp(frame, golden_delta_batch, len));
	/* The destination holds the old page 0 and applies the vector. */
	memset(page(&dst, 0, 0), 0x11, HV_PAGE_SIZE);
	memset(page(&dst, 0, 1), 0x99, HV_PAGE_SIZE);
	b = parse(golden_delta_batch, sizeof(golden_delta_batch), &payload,
		  &plen);
	CU_ASSERT_EQUAL(b->delta_mask, 1);
	CU_ASSERT_EQUAL(mig_batch_decode(dec, dst.map, b, payload, plen, NULL),
			0);
	CU_ASSERT(!memcmp(page(&src, 0, 0), page(&dst, 0, 0), HV_PAGE_SIZE));
	CU_ASSERT(mig_page_is_zero(page(&dst, 0, 1)));
	mig_frame_msg_free(&b->base);
	mig_batch_dec_destroy(dec);
	mig_batch_enc_destroy(enc);
	mig_delta_cache_destroy(cache);
	side_fini(&src);
	side_fini(&dst);
}

/*
 * The boundary of a batch's window: bit npages of the page mask is the
 * first page after the window, and at the end of a slot the first page
 * after the slot. The memory here is the slot plus one guard page in the
 * same allocation, so that a decoder that accepted the bit would write
 * into memory this test can see (not into a neighbour ASan might miss).
 */
struct edge {
	uint8_t *mem; /* EDGE_PAGES + 1: the slot, then the guard page */
	uint8_t *payload;
	struct mig_memmap *map;
	struct mig_batch_dec *dec;
};

#define EDGE_PAGES 128u
#define EDGE_GFN 0x400u
#define EDGE_DATA 0x3c

static void edge_init(struct edge *e)
{
	struct mig_memmap_slot slot;

	CU_ASSERT_EQUAL_FATAL(posix_memalign((void **)&e->mem, HV_PAGE_SIZE,
					     (EDGE_PAGES + 1) * HV_PAGE_SIZE),
			      0);
	memset(e->mem, POISON, (EDGE_PAGES + 1) * HV_PAGE_SIZE);
	e->payload = malloc(MIG_BATCH_PAYLOAD_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->payload);
	memset(e->payload, EDGE_DATA, MIG_BATCH_PAYLOAD_MAX);
	slot = (struct mig_memmap_slot){ 0, EDGE_GFN, EDGE_PAGES, e->mem };
	CU_ASSERT_EQUAL_FATAL(mig_memmap_create(&slot, 1, &e->map), 0);
	CU_ASSERT_EQUAL_FATAL(mig_batch_dec_create(&e->dec), 0);
}

static void edge_fini(struct edge *e)
{
	mig_batch_dec_destroy(e->dec);
	mig_memmap_destroy(e->map);
	free(e->payload);
	free(e->mem);
}

/* Decode a raw batch of slot 0: window [@first, @first + @npages). */
static int edge_decode(struct edge *e, unsigned first, unsigned npages,
		       uint64_t mask, uint64_t zero)
{
	Mig__PageBatch b = MIG__PAGE_BATCH__INIT;
	unsigned nonzero = (unsigned)__builtin_popcountll(mask & ~zero);

	b.slot = 0;
	b.first_gfn = EDGE_GFN + first;
	b.npages = npages;
	b.page_mask = mask;
	b.zero_mask = zero;
	b.encoding = MIG__ENCODING__ENCODING_RAW;
	b.payload_len = nonzero * HV_PAGE_SIZE;
	return mig_batch_decode(e->dec, e->map, &b, e->payload, b.payload_len,
				NULL);
}

/* Page @i (EDGE_PAGES: the guard) still holds only POISON. */
static bool edge_page_untouched(struct edge *e, unsigned i)
{
	const uint8_t *p = e->mem + (size_t)i * HV_PAGE_SIZE;

	for (size_t k = 0; k < HV_PAGE_SIZE; k++)
		if (p[k] != POISON)
			return false;
	return true;
}

/* Every page but @except (UINT_MAX: none), the guard included. */
static bool edge_untouched_but(struct edge *e, unsigned except)
{
	for (unsigned i = 0; i <= EDGE_PAGES; i++)
		if (i != except && !edge_page_untouched(e, i))
			return false;
	return true;
}

static void test_mask_bit_npages_is_refused_at_slot_end_and_writes_nothing(void)
{
	static const unsigned sizes[] = { 1, 4, 32, 63 };
	struct edge e;

	edge_init(&e);
	for (unsigned k = 0; k < HV_ARRAY_SIZE(sizes); k++) {
		unsigned n = sizes[k], first = EDGE_PAGES - n;
		uint64_t bit = 1ULL << n, window = bit - 1;

		/* The window ends with the slot: bit n is the guard page. */
		CU_ASSERT_EQUAL(edge_decode(&e, first, n, bit, 0), -EPROTO);
		CU_ASSERT_EQUAL(edge_decode(&e, first, n, bit, bit), -EPROTO);
		CU_ASSERT_EQUAL(edge_decode(&e, first, n, window | bit, 0),
				-EPROTO);
		CU_ASSERT_EQUAL(edge_decode(&e, first, n, window | bit,
					    window | bit),
				-EPROTO);
		/* Inside the slot, where the page after the window exists
		 * and only the window check stands in the way. */
		CU_ASSERT_EQUAL(edge_decode(&e, 8, n, bit, 0), -EPROTO);
		if (!edge_untouched_but(&e, UINT_MAX)) {
			fprintf(stderr, "  npages=%u: memory written by a "
					"refused batch\n",
				n);
			CU_FAIL("a refused batch wrote guest memory");
		}
	}
	CU_ASSERT(edge_page_untouched(&e, EDGE_PAGES));
	edge_fini(&e);
}

static void test_mask_last_bit_of_window_lands_on_last_page_of_slot(void)
{
	static const unsigned sizes[] = { 1, 4, 32, 63, 64 };
	uint8_t want[HV_PAGE_SIZE];
	struct edge e;

	memset(want, EDGE_DATA, sizeof(want));
	for (unsigned k = 0; k < HV_ARRAY_SIZE(sizes); k++) {
		unsigned n = sizes[k], last = EDGE_PAGES - 1;
		uint64_t bit = 1ULL << (n - 1);

		edge_init(&e);
		CU_ASSERT_EQUAL(edge_decode(&e, EDGE_PAGES - n, n, bit, 0), 0);
		CU_ASSERT(!memcmp(e.mem + (size_t)last * HV_PAGE_SIZE, want,
				  HV_PAGE_SIZE));
		CU_ASSERT(edge_untouched_but(&e, last));
		/* The same bit as a zero page: cleared, nothing else. */
		CU_ASSERT_EQUAL(edge_decode(&e, EDGE_PAGES - n, n, bit, bit),
				0);
		CU_ASSERT(mig_page_is_zero(e.mem + (size_t)last * HV_PAGE_SIZE));
		CU_ASSERT(edge_untouched_but(&e, last));
		edge_fini(&e);
	}
}

static CU_TestInfo tests[] = {
	{ "golden_delta_batch_is_stable",
	  test_golden_delta_batch_is_stable },
	{ "resent_pages_go_as_deltas_and_land_intact",
	  test_resent_pages_go_as_deltas_and_land_intact },
	{ "delta_against_a_page_the_destination_lacks_writes_nothing",
	  test_delta_against_a_page_the_destination_lacks_writes_nothing },
	{ "zero_pages_cost_one_bit", test_zero_pages_cost_one_bit },
	{ "text_pages_go_zstd_random_pages_go_raw",
	  test_text_pages_go_zstd_random_pages_go_raw },
	{ "mixed_sparse_batches_land_on_their_gfns",
	  test_mixed_sparse_batches_land_on_their_gfns },
	{ "encoder_refuses_pages_outside_slots",
	  test_encoder_refuses_pages_outside_slots },
	{ "mask_bit_npages_is_refused_at_slot_end_and_writes_nothing",
	  test_mask_bit_npages_is_refused_at_slot_end_and_writes_nothing },
	{ "mask_last_bit_of_window_lands_on_last_page_of_slot",
	  test_mask_last_bit_of_window_lands_on_last_page_of_slot },
	{ "bad_headers_are_refused_before_any_write",
	  test_bad_headers_are_refused_before_any_write },
	{ "wrong_lengths_are_refused_before_any_write",
	  test_wrong_lengths_are_refused_before_any_write },
	{ "corrupt_compressed_data_fails_inside_the_batch",
	  test_corrupt_compressed_data_fails_inside_the_batch },
	{ "zero_page_overwrites_old_content",
	  test_zero_page_overwrites_old_content },
	{ "zero_detection_sees_every_word",
	  test_zero_detection_sees_every_word },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/batch", NULL, NULL, tests);
