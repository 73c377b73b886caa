// SPDX-License-Identifier: MIT
/*
 * migd_frame: length framing of the control RPC (see ctl_frame.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"
#include "migrated/rpc/ctl_frame.h"

void migd_frame_put_len(uint8_t hdr[MIGD_FRAME_HDR], uint32_t len)
{
	hdr[0] = (uint8_t)len;
	hdr[1] = (uint8_t)(len >> 8);
	hdr[2] = (uint8_t)(len >> 16);
	hdr[3] = (uint8_t)(len >> 24);
}

int migd_frame_get_len(const uint8_t hdr[MIGD_FRAME_HDR], uint32_t max,
		       uint32_t *len)
{
	uint32_t v = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 |
		     (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;

	if (v == 0 || v > max)
		return -EMSGSIZE;
	*len = v;
	return 0;
}

int migd_frame_pack(const ProtobufCMessage *msg, uint32_t max, uint8_t **out,
		    size_t *out_len)
{
	size_t sz = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (sz == 0 || sz > max || sz > MIGD_FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(MIGD_FRAME_HDR + sz);
	if (!buf)
		return -ENOMEM;
	migd_frame_put_len(buf, (uint32_t)sz);
	if (protobuf_c_message_pack(msg, buf + MIGD_FRAME_HDR) != sz) {
		free(buf);
		return -EMSGSIZE;
	}
	*out = buf;
	*out_len = MIGD_FRAME_HDR + sz;
	return 0;
}

void migd_framer_init(struct migd_framer *f, uint32_t max)
{
	HV_BUG_ON(max == 0 || max > MIGD_FRAME_MAX);
	memset(f, 0, sizeof(*f));
	f->max = max;
}

void migd_framer_fini(struct migd_framer *f)
{
	free(f->buf);
	f->buf = NULL;
	f->off = f->len = f->cap = 0;
}

int migd_framer_feed(struct migd_framer *f, const void *data, size_t n)
{
	if (f->error)
		return f->error;
	if (!n)
		return 0;
	/* Drop consumed bytes first so the buffer stays about one frame. */
	if (f->off) {
		memmove(f->buf, f->buf + f->off, f->len - f->off);
		f->len -= f->off;
		f->off = 0;
	}
	if (f->len + n > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;
		uint8_t *nb;

		while (cap < f->len + n)
			cap *= 2;
		nb = realloc(f->buf, cap);
		if (!nb) {
			f->error = -ENOMEM;
			return f->error;
		}
		f->buf = nb;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, data, n);
	f->len += n;
	return 0;
}

int migd_framer_next(struct migd_framer *f, const uint8_t **msg,
		     uint32_t *len)
{
	size_t avail = f->len - f->off;
	uint32_t l;
	int ret;

	if (f->error)
		return f->error;
	if (avail < MIGD_FRAME_HDR)
		return 0;
	/* Check the length as soon as the header is in: an oversized frame
	 * is refused before its body is buffered. */
	ret = migd_frame_get_len(f->buf + f->off, f->max, &l);
	if (ret) {
		f->error = ret;
		return ret;
	}
	if (avail - MIGD_FRAME_HDR < l)
		return 0;
	*msg = f->buf + f->off + MIGD_FRAME_HDR;
	*len = l;
	f->off += MIGD_FRAME_HDR + l;
	return 1;
}

size_t migd_framer_pending(const struct migd_framer *f)
{
	return f->len - f->off;
}
