// SPDX-License-Identifier: MIT
/* Delta encoding of re-sent pages and the source's cache (delta.h). */
#include "migrated/mig/delta.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/types.h"

#define WORDS (HV_PAGE_SIZE / 8)
#define STRIPES 256u

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t rotl(uint64_t v, unsigned r)
{
	return (v << r) | (v >> (64 - r));
}

uint64_t mig_delta_hash(const void *page)
{
	const uint8_t *p = page;
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
			  0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull };

	/* Four independent lanes: about memory speed, not cryptographic. */
	for (unsigned i = 0; i < HV_PAGE_SIZE; i += 32)
		for (unsigned l = 0; l < 4; l++)
			h[l] = rotl(h[l] + rd64(p + i + l * 8) *
						   0xc2b2ae3d27d4eb4full,
				    31) *
			       0x9e3779b97f4a7c15ull;
	return rotl(h[0], 1) ^ rotl(h[1], 7) ^ rotl(h[2], 12) ^ rotl(h[3], 18);
}

static size_t put_uleb(uint8_t *p, uint32_t v)
{
	if (v < 0x80) {
		p[0] = (uint8_t)v;
		return 1;
	}
	p[0] = (uint8_t)(v | 0x80);
	p[1] = (uint8_t)(v >> 7);
	return 2;
}

/* A 1- or 2-byte ULEB128 value at @p (@left bytes); 0 when malformed. */
static size_t get_uleb(const uint8_t *p, size_t left, uint32_t *v)
{
	if (!left)
		return 0;
	if (!(p[0] & 0x80)) {
		*v = p[0];
		return 1;
	}
	if (left < 2 || (p[1] & 0x80))
		return 0;
	*v = (uint32_t)(p[0] & 0x7f) | (uint32_t)p[1] << 7;
	return 2;
}

ssize_t mig_delta_encode(const uint8_t *old, uint64_t old_hash,
			 const uint8_t *new, uint8_t *out, size_t cap)
{
	size_t o = MIG_DELTA_HDR;
	unsigned w = 0, last = 0; /* last: first word not yet covered */

	if (cap < MIG_DELTA_HDR)
		return -ENOSPC;
	for (unsigned i = 0; i < 8; i++)
		out[i] = (uint8_t)(old_hash >> (8 * i));
	while (w < WORDS) {
		unsigned start;
		uint32_t skip, len;

		while (w < WORDS && rd64(old + w * 8) == rd64(new + w * 8))
			w++;
		if (w == WORDS)
			break;
		start = w;
		while (w < WORDS && rd64(old + w * 8) != rd64(new + w * 8))
			w++;
		skip = (start - last) * 8;
		len = (w - start) * 8;
		if (o + 4 + len > cap)
			return -ENOSPC;
		o += put_uleb(out + o, skip);
		o += put_uleb(out + o, len);
		memcpy(out + o, new + start * 8, len);
		o += len;
		last = w;
	}
	return (ssize_t)o;
}

int mig_delta_check(const uint8_t *page, const uint8_t *rec, size_t len)
{
	size_t o = MIG_DELTA_HDR, pos = 0;

	if (len < MIG_DELTA_HDR || len > MIG_DELTA_REC_MAX)
		return -EBADMSG;
	while (o < len) {
		uint32_t skip, n;
		size_t a, b;

		a = get_uleb(rec + o, len - o, &skip);
		if (!a)
			return -EBADMSG;
		b = get_uleb(rec + o + a, len - o - a, &n);
		if (!b || !n || skip > HV_PAGE_SIZE - pos ||
		    n > HV_PAGE_SIZE - pos - skip || n > len - o - a - b)
			return -EBADMSG;
		pos += skip + n;
		o += a + b + n;
	}
	return rd64(rec) == htole64(mig_delta_hash(page)) ? 0 : -ESTALE;
}

void mig_delta_apply(uint8_t *page, const uint8_t *rec, size_t len)
{
	size_t o = MIG_DELTA_HDR, pos = 0;

	while (o < len) {
		uint32_t skip = 0, n = 0;

		o += get_uleb(rec + o, len - o, &skip);
		o += get_uleb(rec + o, len - o, &n);
		pos += skip;
		memcpy(page + pos, rec + o, n);
		pos += n;
		o += n;
	}
}

struct delta_entry {
	uint64_t key; /* page index + 1; 0: empty */
	uint64_t hash;
};

struct mig_delta_cache {
	/* immutable after create */
	uint64_t nr;	    /* entries */
	uint8_t *data;	    /* nr pages */
	/* entry i protected by lock[i % STRIPES] */
	struct delta_entry *e;
	pthread_mutex_t lock[STRIPES];
	_Atomic uint64_t used;
};

uint64_t mig_delta_cache_default(uint64_t total_pages)
{
	uint64_t b = (total_pages << HV_PAGE_SHIFT) / 64;

	return HV_MIN(HV_MAX(b, MIG_DELTA_CACHE_MIN), MIG_DELTA_CACHE_MAX);
}

int mig_delta_cache_create(uint64_t bytes, uint64_t total_pages,
			   struct mig_delta_cache **out)
{
	struct mig_delta_cache *c;
	uint64_t nr = bytes >> HV_PAGE_SHIFT;

	if (!total_pages)
		return -EINVAL;
	nr = HV_MAX(HV_MIN(nr, total_pages), 1);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nr = nr;
	c->e = calloc(nr, sizeof(*c->e));
	/* Untouched until used: the cache costs what it holds. */
	c->data = malloc(nr << HV_PAGE_SHIFT);
	if (!c->e || !c->data) {
		free(c->e);
		free(c->data);
		free(c);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_init(&c->lock[i], NULL);
	*out = c;
	return 0;
}

void mig_delta_cache_destroy(struct mig_delta_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&c->lock[i]);
	free(c->e);
	free(c->data);
	free(c);
}

uint64_t mig_delta_cache_pages(const struct mig_delta_cache *c)
{
	return atomic_load(&c->used);
}

/* Pages near each other land in different entries and stripes. */
static uint64_t slot_of(const struct mig_delta_cache *c, uint64_t idx)
{
	return idx % c->nr;
}

ssize_t mig_delta_cache_encode(struct mig_delta_cache *c, uint64_t idx,
			       const uint8_t *copy, bool insert,
			       uint8_t *out)
{
	uint64_t i = slot_of(c, idx);
	struct delta_entry *e = &c->e[i];
	uint8_t *page = c->data + (i << HV_PAGE_SHIFT);
	pthread_mutex_t *l = &c->lock[i % STRIPES];
	ssize_t n = 0;

	pthread_mutex_lock(l);
	if (e->key == idx + 1) {
		n = mig_delta_encode(page, e->hash, copy, out,
				     MIG_DELTA_REC_MAX);
		if (n < 0)
			n = 0;
		insert = true; /* keep the entry equal to what goes out */
	}
	if (insert) {
		if (!e->key)
			atomic_fetch_add(&c->used, 1);
		memcpy(page, copy, HV_PAGE_SIZE);
		e->key = idx + 1;
		e->hash = mig_delta_hash(page);
	}
	pthread_mutex_unlock(l);
	return n;
}

void mig_delta_cache_drop(struct mig_delta_cache *c, uint64_t idx)
{
	uint64_t i = slot_of(c, idx);
	pthread_mutex_t *l = &c->lock[i % STRIPES];

	pthread_mutex_lock(l);
	if (c->e[i].key == idx + 1) {
		c->e[i].key = 0;
		atomic_fetch_sub(&c->used, 1);
	}
	pthread_mutex_unlock(l);
}
