// SPDX-License-Identifier: MIT
#include "migrated/mig/postcopy_map.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define VARINT_MAX 10u

static bool bit_get(const uint64_t *bits, uint64_t i)
{
	return (bits[i >> 6] >> (i & 63)) & 1;
}

/* First page in [@from, @end) whose bit is @want, or @end. */
static uint64_t next_bit(const uint64_t *bits, uint64_t from, uint64_t end,
			 bool want)
{
	while (from < end) {
		uint64_t w = bits[from >> 6];

		if (!want)
			w = ~w;
		w &= ~0ull << (from & 63);
		if (w) {
			uint64_t i = (from & ~63ull) + __builtin_ctzll(w);

			return i < end ? i : end;
		}
		from = (from | 63) + 1;
	}
	return end;
}

static size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Read one canonical varint from @p/@len at *@off; -EBADMSG when it is
 * truncated, longer than 64 bits or not in its shortest form. */
static int varint_get(const uint8_t *p, size_t len, size_t *off,
		      uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned n = 0; n < VARINT_MAX && *off + n < len; n++) {
		uint8_t b = p[*off + n];

		if (n == VARINT_MAX - 1 && b > 1)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << (7 * n);
		if (!(b & 0x80)) {
			if (n && !b)
				return -EBADMSG;
			*off += n + 1;
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* The runs of the range, written to @out while they fit in @cap bytes;
 * returns the bytes written, or @cap + 1 once they do not fit. */
static size_t runs_encode(const uint64_t *bits, uint64_t first,
			  uint64_t npages, uint8_t *out, size_t cap)
{
	uint64_t end = first + npages, pos = first;
	uint8_t tmp[2 * VARINT_MAX];
	size_t len = 0;

	while (pos < end) {
		uint64_t s = next_bit(bits, pos, end, true);
		uint64_t c;
		size_t n;

		if (s == end)
			break;
		c = next_bit(bits, s, end, false);
		n = varint_put(tmp, s - pos);
		n += varint_put(tmp + n, c - s);
		if (len + n > cap)
			return cap + 1;
		memcpy(out + len, tmp, n);
		len += n;
		pos = c;
	}
	return len;
}

int mig_pc_unsent_encode(const uint64_t *bits, uint64_t first,
			 uint64_t npages, uint8_t **data, size_t *len,
			 unsigned *encoding, uint64_t *set_pages)
{
	size_t cap = (npages + 7) / 8, n;
	uint64_t set = 0;
	uint8_t *buf;

	if (!bits || !npages || npages > MIG_PC_UNSENT_RANGE_MAX ||
	    first + npages < first)
		return -EINVAL;
	buf = calloc(1, cap);
	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < npages; i++)
		set += bit_get(bits, first + i);
	n = runs_encode(bits, first, npages, buf, cap);
	if (n <= cap) {
		*encoding = MIG__UNSENT_ENCODING__UNSENT_RUNS;
	} else {
		/* Runs would be longer than the bitmap: send the bitmap. */
		memset(buf, 0, cap);
		for (uint64_t i = 0; i < npages; i++)
			if (bit_get(bits, first + i))
				buf[i >> 3] |= (uint8_t)(1u << (i & 7));
		n = cap;
		*encoding = MIG__UNSENT_ENCODING__UNSENT_BITMAP;
	}
	if (!n) {
		free(buf);
		buf = NULL;
	}
	*data = buf;
	*len = n;
	*set_pages = set;
	return 0;
}

/*
 * Walk the range's set runs: with @bits NULL only check and count them,
 * else OR them into @bits (already checked). Returns 0 or -EBADMSG.
 */
static int runs_walk(const Mig__PostcopyUnsent *u, uint64_t *bits,
		     uint64_t *count, uint64_t *added)
{
	const uint8_t *p = u->data.data;
	uint64_t pos = 0, set = 0, add = 0;
	size_t off = 0;

	while (off < u->data.len) {
		uint64_t clear, run;

		if (varint_get(p, u->data.len, &off, &clear) ||
		    varint_get(p, u->data.len, &off, &run))
			return -EBADMSG;
		if (!run || clear > u->npages - pos ||
		    run > u->npages - pos - clear)
			return -EBADMSG;
		pos += clear;
		for (uint64_t i = 0; bits && i < run; i++) {
			uint64_t pg = u->first_page + pos + i;
			uint64_t m = 1ull << (pg & 63);

			add += !(bits[pg >> 6] & m);
			bits[pg >> 6] |= m;
		}
		pos += run;
		set += run;
	}
	*count = set;
	if (added)
		*added = add;
	return 0;
}

static int bitmap_walk(const Mig__PostcopyUnsent *u, uint64_t *bits,
		       uint64_t *count, uint64_t *added)
{
	const uint8_t *p = u->data.data;
	uint64_t set = 0, add = 0;
	unsigned tail = u->npages & 7;

	if (u->data.len != (u->npages + 7) / 8)
		return -EBADMSG;
	if (tail && (p[u->data.len - 1] >> tail))
		return -EBADMSG;
	for (size_t b = 0; b < u->data.len; b++) {
		if (!p[b])
			continue;
		set += __builtin_popcount(p[b]);
		for (unsigned j = 0; bits && j < 8; j++) {
			uint64_t pg, m;

			if (!(p[b] & (1u << j)))
				continue;
			pg = u->first_page + b * 8 + j;
			m = 1ull << (pg & 63);
			add += !(bits[pg >> 6] & m);
			bits[pg >> 6] |= m;
		}
	}
	*count = set;
	if (added)
		*added = add;
	return 0;
}

int mig_pc_unsent_apply(const Mig__PostcopyUnsent *u, uint64_t slot_npages,
			uint64_t *bits, uint64_t *added)
{
	int (*walk)(const Mig__PostcopyUnsent *, uint64_t *, uint64_t *,
		    uint64_t *);
	uint64_t count, add = 0;
	int ret;

	if (!u->npages || u->npages > MIG_PC_UNSENT_RANGE_MAX ||
	    u->first_page > slot_npages ||
	    u->npages > slot_npages - u->first_page)
		return -ERANGE;
	if (u->data.len > MIG_PC_UNSENT_DATA_MAX ||
	    (u->data.len && !u->data.data))
		return -EBADMSG;
	if (u->encoding == MIG__UNSENT_ENCODING__UNSENT_RUNS)
		walk = runs_walk;
	else if (u->encoding == MIG__UNSENT_ENCODING__UNSENT_BITMAP)
		walk = bitmap_walk;
	else
		return -EBADMSG;
	/* Check the whole range first: a bad frame writes nothing. */
	ret = walk(u, NULL, &count, NULL);
	if (ret)
		return ret;
	if (count != u->set_pages)
		return -EBADMSG;
	walk(u, bits, &count, &add);
	if (added)
		*added += add;
	return 0;
}

int mig_pc_request_check(const Mig__PageRequest *r)
{
	if (!r->n_gfns || r->n_gfns > MIG_PC_REQ_MAX)
		return -EBADMSG;
	return 0;
}
