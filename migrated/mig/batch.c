// SPDX-License-Identifier: MIT
#include "migrated/mig/batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"
#include "migrated/mig/compress.h"
#include "migrated/mig/delta.h"

/*
 * Room in front of the payload for the frame header and the PageBatch
 * message (at most 45 bytes packed, 185 with 64 delta lengths), so a
 * batch is written as one buffer.
 */
#define BATCH_HEADROOM 256u
#define NR_ENCODINGS 3u
/* After a batch that did not compress, skip zstd for up to this many. */
#define SKIP_MAX 16u

struct mig_batch_enc {
	const struct mig_comp_ops *ops; /* preferred method */
	void *ctx;
	int level;	    /* of the compressor; 0: send raw, do not try */
	unsigned skip_left; /* batches still sent raw without trying */
	unsigned skip_next; /* backoff after the next failure */
	uint8_t *buf;	    /* BATCH_HEADROOM + MIG_BATCH_PAYLOAD_MAX */
	/* Delta encoding (delta.h): NULL when off. */
	struct mig_delta_cache *cache;
	bool insert;
	uint8_t *stage; /* MIG_BATCH_PAYLOAD_MAX: copies and delta records */
	uint8_t *rec;	/* MIG_DELTA_REC_MAX */
	const struct mig_memmap *idx_map; /* memo of the last slot's offset */
	uint32_t idx_slot;
	uint64_t idx_off;
};

struct mig_batch_dec {
	void *ctx[NR_ENCODINGS]; /* by Mig__Encoding */
	uint8_t *scratch;	 /* MIG_BATCH_PAYLOAD_MAX */
};

bool mig_page_is_zero(const void *p)
{
	const uint64_t *w = p;

	/* A cache line at a time: stamped pages exit on the first line. */
	for (unsigned i = 0; i < HV_PAGE_SIZE / 8; i += 8) {
		if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] |
		    w[i + 5] | w[i + 6] | w[i + 7])
			return false;
	}
	return true;
}

int mig_batch_enc_create(const struct mig_batch_enc_cfg *cfg,
			 struct mig_batch_enc **out)
{
	unsigned enc = cfg && cfg->encoding ? cfg->encoding
					    : MIG__ENCODING__ENCODING_ZSTD;
	const struct mig_comp_ops *ops = mig_comp_get(enc);
	struct mig_batch_enc *e;
	int ret;

	if (!ops)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ops = ops;
	e->skip_next = 1;
	e->buf = malloc(BATCH_HEADROOM + MIG_BATCH_PAYLOAD_MAX);
	if (!e->buf) {
		ret = -ENOMEM;
		goto fail;
	}
	e->level = cfg && cfg->level ? cfg->level : 1;
	ret = ops->ctx_create(e->level, &e->ctx);
	if (ret)
		goto fail;
	*out = e;
	return 0;
fail:
	free(e->buf);
	free(e);
	return ret;
}

void mig_batch_enc_destroy(struct mig_batch_enc *enc)
{
	if (!enc)
		return;
	enc->ops->ctx_destroy(enc->ctx);
	free(enc->stage);
	free(enc->rec);
	free(enc->buf);
	free(enc);
}

int mig_batch_enc_set_level(struct mig_batch_enc *e, int level)
{
	int ret;

	if (!e->ops->set_level)
		return -EINVAL;
	if (level == e->level)
		return 0;
	if (level) {
		ret = e->ops->set_level(e->ctx, level);
		if (ret)
			return ret;
	}
	e->level = level;
	return 0;
}

int mig_batch_enc_set_delta(struct mig_batch_enc *e,
			    struct mig_delta_cache *cache, bool insert)
{
	if (cache && !e->stage) {
		e->stage = malloc(MIG_BATCH_PAYLOAD_MAX);
		e->rec = malloc(MIG_DELTA_REC_MAX);
		if (!e->stage || !e->rec) {
			free(e->stage);
			free(e->rec);
			e->stage = e->rec = NULL;
			return -ENOMEM;
		}
	}
	e->cache = cache;
	e->insert = insert;
	return 0;
}

/* The index of @gfn of slot @slot in the whole map (the cache's key). */
static uint64_t page_index(struct mig_batch_enc *e,
			   const struct mig_memmap *map, uint32_t slot,
			   gfn_t gfn)
{
	const struct mig_memmap_slot *ms = mig_memmap_find(map, slot);

	if (e->idx_map != map || e->idx_slot != slot) {
		uint64_t off = 0;

		for (unsigned i = 0; i < mig_memmap_count(map); i++) {
			const struct mig_memmap_slot *m = mig_memmap_at(map, i);

			if (m->id == slot)
				break;
			off += m->npages;
		}
		e->idx_map = map;
		e->idx_slot = slot;
		e->idx_off = off;
	}
	return e->idx_off + (gfn - ms->base_gfn);
}

/* Append @len bytes at @p to the runs, merging with the last if adjacent. */
static void runs_add(struct mig_run *runs, unsigned *nr, uint8_t *p,
		     uint32_t len)
{
	struct mig_run *last = *nr ? &runs[*nr - 1] : NULL;

	if (last && last->ptr + last->len == p) {
		last->len += len;
		return;
	}
	runs[(*nr)++] = (struct mig_run){ p, len };
}

/* Try the preferred method; -ENOSPC means "send raw". */
static ssize_t enc_try_compress(struct mig_batch_enc *e,
				const struct mig_run *runs, unsigned nr,
				size_t raw_len, uint8_t *dst)
{
	ssize_t n;

	if (e->ops == &mig_comp_raw || !e->level)
		return -ENOSPC;
	if (e->skip_left) {
		e->skip_left--;
		return -ENOSPC;
	}
	/* Compression pays only if it saves at least 1/16. */
	n = e->ops->compress(e->ctx, runs, nr, dst, raw_len - raw_len / 16);
	if (n == -ENOSPC) {
		/*
		 * Incompressible data usually comes in long stretches
		 * (random content): back off exponentially instead of
		 * paying zstd for every batch of it.
		 */
		e->skip_left = e->skip_next;
		e->skip_next = HV_MIN(e->skip_next * 2, SKIP_MAX);
	} else if (n > 0) {
		e->skip_next = 1;
	}
	return n;
}

int mig_batch_encode(struct mig_batch_enc *e, const struct mig_memmap *map,
		     uint32_t slot, gfn_t gfn, uint64_t mask,
		     const uint8_t **frame, size_t *len,
		     struct mig_batch_info *info)
{
	Mig__PageBatch b = MIG__PAGE_BATCH__INIT;
	struct mig_run runs[MIG_BATCH_MAX_PAGES];
	uint8_t *payload = e->buf + BATCH_HEADROOM, *base, *start;
	struct mig_frame_hdr h;
	unsigned nr = 0, shift, npages, nonzero = 0;
	uint64_t zero = 0;
	ssize_t n = 0;
	size_t mlen, content = 0, staged = 0;
	uint32_t tried = 0, dlen[MIG_BATCH_MAX_PAGES];
	uint64_t dmask = 0, idx0 = 0;
	unsigned ndelta = 0;

	if (!mask)
		return -EINVAL;
	shift = (unsigned)__builtin_ctzll(mask);
	gfn += shift;
	mask >>= shift;
	npages = 64 - (unsigned)__builtin_clzll(mask);
	base = mig_memmap_range(map, slot, gfn, npages);
	if (!base)
		return -ERANGE;

	if (e->cache)
		idx0 = page_index(e, map, slot, gfn);
	for (uint64_t m = mask; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint8_t *p = base + ((size_t)i << HV_PAGE_SHIFT);
		ssize_t dl;

		if (mig_page_is_zero(p)) {
			zero |= 1ULL << i;
			if (e->cache)
				mig_delta_cache_drop(e->cache, idx0 + i);
			continue;
		}
		nonzero++;
		if (!e->cache) {
			runs_add(runs, &nr, p, HV_PAGE_SIZE);
			content += HV_PAGE_SIZE;
			continue;
		}
		/*
		 * A stable copy first: what is cached must be exactly what
		 * goes out, and the guest may be writing this page now.
		 */
		memcpy(e->stage + staged, p, HV_PAGE_SIZE);
		dl = mig_delta_cache_encode(e->cache, idx0 + i,
					    e->stage + staged, e->insert,
					    e->rec);
		if (dl > 0) {
			memcpy(e->stage + staged, e->rec, (size_t)dl);
			dmask |= 1ULL << i;
			dlen[ndelta++] = (uint32_t)dl;
		} else {
			dl = HV_PAGE_SIZE;
		}
		runs_add(runs, &nr, e->stage + staged, (uint32_t)dl);
		staged += (size_t)dl;
		content += (size_t)dl;
	}

	b.encoding = MIG__ENCODING__ENCODING_RAW;
	if (nonzero) {
		size_t raw_len = content;
		bool will_try = e->ops != &mig_comp_raw && e->level &&
				!e->skip_left;

		n = enc_try_compress(e, runs, nr, raw_len, payload);
		if (will_try)
			tried = (uint32_t)raw_len;
		if (n > 0) {
			b.encoding = e->ops->encoding;
		} else if (n == -ENOSPC) {
			n = mig_comp_raw.compress(NULL, runs, nr, payload,
						  MIG_BATCH_PAYLOAD_MAX);
		}
		if (n < 0)
			return (int)n;
	}
	b.slot = slot;
	b.first_gfn = gfn;
	b.npages = npages;
	b.page_mask = mask;
	b.zero_mask = zero;
	b.payload_len = (uint32_t)n;
	b.delta_mask = dmask;
	b.n_delta_len = ndelta;
	b.delta_len = dlen;

	/* Header and message go right in front of the payload. */
	mlen = mig__page_batch__get_packed_size(&b);
	HV_BUG_ON(MIG_FRAME_HDR_SIZE + mlen > BATCH_HEADROOM);
	start = payload - mlen - MIG_FRAME_HDR_SIZE;
	h = (struct mig_frame_hdr){
		.magic = MIG_FRAME_MAGIC,
		.version = MIG_FRAME_VERSION,
		.type = MIG__MSG_TYPE__MSG_PAGE_BATCH,
		.len = (uint32_t)mlen,
	};
	mig_frame_hdr_encode(&h, start);
	mig__page_batch__pack(&b, start + MIG_FRAME_HDR_SIZE);

	*frame = start;
	*len = (size_t)(payload - start) + (size_t)n;
	if (info) {
		*info = (struct mig_batch_info){
			.pages = (uint32_t)__builtin_popcountll(mask),
			.zero = (uint32_t)__builtin_popcountll(zero),
			.payload = (uint32_t)n,
			.wire = (uint32_t)*len,
			.tried = tried,
			.tried_out = tried,
			.delta = ndelta,
		};
		if (b.encoding == MIG__ENCODING__ENCODING_RAW) {
			info->raw = nonzero;
		} else {
			info->compressed = nonzero;
			info->tried_out = (uint32_t)n;
			info->level = e->level;
		}
	}
	return 0;
}

int mig_batch_dec_create(struct mig_batch_dec **out)
{
	struct mig_batch_dec *d = calloc(1, sizeof(*d));
	int ret = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->scratch = malloc(MIG_BATCH_PAYLOAD_MAX);
	if (!d->scratch)
		goto fail;
	for (unsigned i = 1; i < NR_ENCODINGS; i++) {
		ret = mig_comp_get(i)->ctx_create(0, &d->ctx[i]);
		if (ret)
			goto fail;
	}
	*out = d;
	return 0;
fail:
	mig_batch_dec_destroy(d);
	return ret;
}

void mig_batch_dec_destroy(struct mig_batch_dec *d)
{
	if (!d)
		return;
	for (unsigned i = 1; i < NR_ENCODINGS; i++)
		if (d->ctx[i])
			mig_comp_get(i)->ctx_destroy(d->ctx[i]);
	free(d->scratch);
	free(d);
}

/* Bytes the batch's non-zero pages take once decoded: full pages and
 * delta records. The delta fields must be checked first. */
static uint64_t content_len(const Mig__PageBatch *b, unsigned nonzero)
{
	uint64_t n = (uint64_t)(nonzero - b->n_delta_len) << HV_PAGE_SHIFT;

	for (size_t k = 0; k < b->n_delta_len; k++)
		n += b->delta_len[k];
	return n;
}

int mig_batch_check(const Mig__PageBatch *b, const struct mig_memmap *map)
{
	uint64_t window, clen;
	unsigned nonzero;

	if (b->npages < 1 || b->npages > MIG_BATCH_MAX_PAGES)
		return -EPROTO;
	window = b->npages == 64 ? ~0ULL : (1ULL << b->npages) - 1;
	if (!b->page_mask || (b->page_mask & ~window) ||
	    (b->zero_mask & ~b->page_mask))
		return -EPROTO;
	if (!mig_comp_get(b->encoding))
		return -EPROTO;
	nonzero = (unsigned)__builtin_popcountll(b->page_mask & ~b->zero_mask);
	if (b->encoding == MIG__ENCODING__ENCODING_ZSTD && !nonzero)
		return -EPROTO;
	/* Deltas: only for non-zero pages, one length each, in bounds. */
	if ((b->delta_mask & ~(b->page_mask & ~b->zero_mask)) ||
	    b->n_delta_len != (size_t)__builtin_popcountll(b->delta_mask))
		return -EPROTO;
	for (size_t k = 0; k < b->n_delta_len; k++)
		if (b->delta_len[k] < MIG_DELTA_HDR ||
		    b->delta_len[k] > MIG_DELTA_REC_MAX)
			return -EPROTO;
	if (!mig_memmap_find(map, b->slot))
		return -ENOENT;
	if (!mig_memmap_range(map, b->slot, b->first_gfn, b->npages))
		return -ERANGE;
	clen = content_len(b, nonzero);
	if (b->encoding == MIG__ENCODING__ENCODING_RAW) {
		if (b->payload_len != clen)
			return -EMSGSIZE;
	} else if (!b->payload_len || b->payload_len >= clen) {
		/* A sender sends raw when compression does not pay. */
		return -EMSGSIZE;
	}
	return 0;
}

/*
 * A batch with deltas: the whole content decoded into scratch first, every
 * delta checked against the page it applies to, and only then anything
 * written, so a bad delta leaves guest memory as it was.
 */
static int decode_deltas(struct mig_batch_dec *d, const Mig__PageBatch *b,
			 uint8_t *base, const uint8_t *payload, size_t len,
			 unsigned nonzero)
{
	uint64_t clen = content_len(b, nonzero);
	const uint8_t *c = payload;
	size_t off = 0, k = 0;
	int ret;

	if (b->encoding != MIG__ENCODING__ENCODING_RAW) {
		struct mig_run run = { d->scratch, (uint32_t)clen };

		ret = mig_comp_get(b->encoding)
			      ->decompress(d->ctx[b->encoding], payload, len,
					   &run, 1, NULL);
		if (ret)
			return ret;
		c = d->scratch;
	}
	for (uint64_t m = b->page_mask & ~b->zero_mask; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);

		if (b->delta_mask >> i & 1) {
			ret = mig_delta_check(base + ((size_t)i << HV_PAGE_SHIFT),
					      c + off, b->delta_len[k]);
			if (ret)
				return ret;
			off += b->delta_len[k++];
		} else {
			off += HV_PAGE_SIZE;
		}
	}
	off = k = 0;
	for (uint64_t m = b->page_mask & ~b->zero_mask; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint8_t *p = base + ((size_t)i << HV_PAGE_SHIFT);

		if (b->delta_mask >> i & 1) {
			mig_delta_apply(p, c + off, b->delta_len[k]);
			off += b->delta_len[k++];
		} else {
			memcpy(p, c + off, HV_PAGE_SIZE);
			off += HV_PAGE_SIZE;
		}
	}
	return 0;
}

int mig_batch_decode(struct mig_batch_dec *d, const struct mig_memmap *map,
		     const Mig__PageBatch *b, const uint8_t *payload,
		     size_t len, struct mig_batch_info *info)
{
	struct mig_run runs[MIG_BATCH_MAX_PAGES];
	const struct mig_comp_ops *ops;
	unsigned nr = 0, nonzero = 0;
	uint8_t *base;
	int ret;

	ret = mig_batch_check(b, map);
	if (ret)
		return ret;
	if (len != b->payload_len)
		return -EMSGSIZE;
	base = mig_memmap_range(map, b->slot, b->first_gfn, b->npages);
	for (uint64_t m = b->page_mask & ~b->zero_mask; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);

		runs_add(runs, &nr, base + ((size_t)i << HV_PAGE_SHIFT),
			 HV_PAGE_SIZE);
		nonzero++;
	}
	ops = mig_comp_get(b->encoding);
	if (b->delta_mask) {
		ret = decode_deltas(d, b, base, payload, len, nonzero);
		if (ret)
			return ret;
	} else if (nonzero) {
		ret = ops->decompress(d->ctx[b->encoding], payload, len, runs,
				      nr, d->scratch);
		if (ret)
			return ret;
	}
	for (uint64_t m = b->zero_mask; m; m &= m - 1) {
		uint8_t *p = base + ((size_t)__builtin_ctzll(m) << HV_PAGE_SHIFT);

		/* Reading first keeps untouched memory unfaulted. */
		if (!mig_page_is_zero(p))
			memset(p, 0, HV_PAGE_SIZE);
	}
	if (info) {
		*info = (struct mig_batch_info){
			.pages = (uint32_t)__builtin_popcountll(b->page_mask),
			.zero = (uint32_t)__builtin_popcountll(b->zero_mask),
			.payload = (uint32_t)len,
			.delta = (uint32_t)b->n_delta_len,
		};
		if (b->encoding == MIG__ENCODING__ENCODING_RAW)
			info->raw = nonzero;
		else
			info->compressed = nonzero;
	}
	return 0;
}
