// SPDX-License-Identifier: MIT
#include "migrated/mig/digest.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "hvcore/types.h"
#include "migrated/mig/batch.h"

#define P1 0x9e3779b185ebca87ull
#define P2 0xc2b2ae3d27d4eb4full
#define P3 0x165667b19e3779f9ull
#define P4 0x85ebca77c2b2ae63ull

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t round64(uint64_t acc, uint64_t w)
{
	return rotl64(acc + w * P2, 31) * P1;
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v)); /* x86 and arm64 hosts: little-endian */
	return v;
}

uint64_t mig_page_hash(const void *page)
{
	const uint8_t *p = page;
	uint64_t a0 = P1 + P2, a1 = P2, a2 = 0, a3 = 0 - P1, h;

	/* Four independent lanes keep the multipliers busy. */
	for (size_t off = 0; off < HV_PAGE_SIZE; off += 32) {
		a0 = round64(a0, load64(p + off));
		a1 = round64(a1, load64(p + off + 8));
		a2 = round64(a2, load64(p + off + 16));
		a3 = round64(a3, load64(p + off + 24));
	}
	h = rotl64(a0, 1) + rotl64(a1, 7) + rotl64(a2, 12) + rotl64(a3, 18);
	h = (h ^ round64(0, a0)) * P1 + P4;
	h = (h ^ round64(0, a1)) * P1 + P4;
	h = (h ^ round64(0, a2)) * P1 + P4;
	h = (h ^ round64(0, a3)) * P1 + P4;
	h += HV_PAGE_SIZE;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

uint64_t mig_zero_page_hash(void)
{
	static const uint8_t zero_page[HV_PAGE_SIZE];
	static _Atomic uint64_t cached;
	uint64_t h = cached;

	if (!h) {
		h = mig_page_hash(zero_page);
		cached = h;
	}
	return h;
}

uint64_t mig_memmap_pages(const struct mig_memmap *map)
{
	uint64_t total = 0;

	for (unsigned s = 0; s < mig_memmap_count(map); s++)
		total += mig_memmap_at(map, s)->npages;
	return total;
}

static inline bool bit_test(const uint64_t *b, uint64_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

struct hash_job {
	const uint8_t *host;
	const uint64_t *select, *data;
	uint64_t *table;
	uint64_t first, end; /* pages of the range this job fills */
	uint64_t zero_hash;
	uint64_t rel; /* stored as hash ^ rel */
	pthread_t thread;
};

static void *hash_run(void *arg)
{
	struct hash_job *j = arg;

	for (uint64_t i = j->first; i < j->end; i++) {
		const uint8_t *pg = j->host + (i << HV_PAGE_SHIFT);

		if (j->select && !bit_test(j->select, i)) {
			/* Skip a whole empty word at once. */
			if (!j->select[i / 64])
				i |= 63;
			continue;
		}
		if (j->data && !bit_test(j->data, i))
			j->table[i] = j->zero_hash ^ j->rel;
		else
			j->table[i] = (mig_page_is_zero(pg) ? j->zero_hash
							     : mig_page_hash(pg)) ^
				      j->rel;
	}
	return NULL;
}

int mig_hash_range(const uint8_t *host, uint64_t npages,
		   const uint64_t *select, const uint64_t *data,
		   uint64_t *table, unsigned nthreads)
{
	return mig_hash_range_rel(host, npages, select, data, table, 0,
				  nthreads);
}

int mig_hash_range_rel(const uint8_t *host, uint64_t npages,
		       const uint64_t *select, const uint64_t *data,
		       uint64_t *table, uint64_t rel, unsigned nthreads)
{
	struct hash_job jobs[MIG_DIGEST_MAX_THREADS];
	unsigned started = 0;
	uint64_t per;
	int ret = 0;

	nthreads = HV_MAX(1u, HV_MIN(nthreads, MIG_DIGEST_MAX_THREADS));
	/* Below 1024 pages a thread costs more than it saves. */
	nthreads = (unsigned)HV_MIN((uint64_t)nthreads,
				    HV_MAX(npages / 1024, 1u));
	/* Word-aligned shares: the select skip never crosses a share. */
	per = HV_ALIGN_UP(HV_DIV_ROUND_UP(npages, nthreads), 64);
	for (unsigned t = 0; t < nthreads; t++)
		jobs[t] = (struct hash_job){
			.host = host,
			.select = select,
			.data = data,
			.table = table,
			.first = HV_MIN(t * per, npages),
			.end = HV_MIN((t + 1) * per, npages),
			.zero_hash = mig_zero_page_hash(),
			.rel = rel,
		};
	/* Jobs 1.. in threads, job 0 here. */
	for (unsigned t = 1; t < nthreads; t++, started++) {
		ret = -pthread_create(&jobs[t].thread, NULL, hash_run, &jobs[t]);
		if (ret)
			break;
	}
	hash_run(&jobs[0]);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(jobs[t].thread, NULL);
	/* Jobs that did not start: do them here rather than fail. */
	for (unsigned t = started + 1; t < nthreads; t++)
		hash_run(&jobs[t]);
	return 0;
}

static void put_le(uint8_t *b, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* One slot's header, as the digest defines it. */
static int update_hdr(EVP_MD_CTX *ctx, const struct mig_memmap_slot *sl)
{
	uint8_t hdr[20];

	put_le(hdr, sl->id, 4);
	put_le(hdr + 4, sl->base_gfn, 8);
	put_le(hdr + 12, sl->npages, 8);
	return EVP_DigestUpdate(ctx, hdr, sizeof(hdr));
}

/* @n table entries (each stored ^ @rel), little-endian on the wire
 * whatever the host is. */
static int update_entries(EVP_MD_CTX *ctx, const uint64_t *t, uint64_t n,
			  uint64_t rel)
{
	uint8_t buf[8 * 512];
	int ok = 1;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The table is already in wire order: hash it in place, or undo
	 * @rel a word at a time. */
	if (!rel)
		return EVP_DigestUpdate(ctx, t, n * sizeof(uint64_t));
	for (uint64_t i = 0; ok && i < n; i += 512) {
		uint64_t m = HV_MIN(n - i, 512u), w[512];

		for (uint64_t k = 0; k < m; k++)
			w[k] = t[i + k] ^ rel;
		ok = EVP_DigestUpdate(ctx, w, m * 8);
	}
	return ok;
#endif
	for (uint64_t i = 0; ok && i < n; i += 512) {
		uint64_t m = HV_MIN(n - i, 512u);

		for (uint64_t k = 0; k < m; k++)
			put_le(buf + 8 * k, t[i + k] ^ rel, 8);
		ok = EVP_DigestUpdate(ctx, buf, m * 8);
	}
	return ok;
}

int mig_digest_table(const struct mig_memmap *map, const uint64_t *table,
		     uint8_t out[MIG_DIGEST_LEN])
{
	return mig_digest_table_rel(map, table, 0, out);
}

int mig_digest_table_rel(const struct mig_memmap *map, const uint64_t *table,
			 uint64_t rel, uint8_t out[MIG_DIGEST_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint64_t idx = 0;
	unsigned len = 0;
	int ok;

	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (unsigned s = 0; ok && s < mig_memmap_count(map); s++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(map, s);

		ok = update_hdr(ctx, sl) &&
		     update_entries(ctx, table + idx, sl->npages, rel);
		idx += sl->npages;
	}
	ok = ok && EVP_DigestFinal_ex(ctx, out, &len) && len == MIG_DIGEST_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

int mig_digest_compute_data(const struct mig_memmap *map,
			    const uint64_t *const *data, unsigned nthreads,
			    uint8_t out[MIG_DIGEST_LEN], uint64_t *pages)
{
	/*
	 * The table is hashed a chunk at a time rather than built whole:
	 * 8 bytes a page of a 256 GiB VM is 512 MiB the destination would
	 * touch at every commit, mostly for holes that hash to the zero
	 * hash without being read.
	 */
	uint64_t *chunk = malloc(MIG_DIGEST_CHUNK_PAGES * sizeof(*chunk));
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint64_t total = 0;
	unsigned len = 0;
	int ret = 0, ok;

	if (!chunk || !ctx) {
		free(chunk);
		EVP_MD_CTX_free(ctx);
		return -ENOMEM;
	}
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (unsigned s = 0; ok && !ret && s < mig_memmap_count(map); s++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(map, s);

		ok = update_hdr(ctx, sl);
		for (uint64_t i = 0; ok && !ret && i < sl->npages;
		     i += MIG_DIGEST_CHUNK_PAGES) {
			uint64_t n = HV_MIN(sl->npages - i,
					    (uint64_t)MIG_DIGEST_CHUNK_PAGES);

			ret = mig_hash_range(sl->host + (i << HV_PAGE_SHIFT), n,
					     NULL,
					     data && data[s] ? data[s] + i / 64
							     : NULL,
					     chunk, nthreads);
			ok = !ret && update_entries(ctx, chunk, n, 0);
		}
		total += sl->npages;
	}
	ok = ok && !ret && EVP_DigestFinal_ex(ctx, out, &len) &&
	     len == MIG_DIGEST_LEN;
	EVP_MD_CTX_free(ctx);
	free(chunk);
	if (ret)
		return ret;
	if (!ok)
		return -EIO;
	if (pages)
		*pages = total;
	return 0;
}

int mig_digest_compute(const struct mig_memmap *map, unsigned nthreads,
		       uint8_t out[MIG_DIGEST_LEN], uint64_t *pages)
{
	return mig_digest_compute_data(map, NULL, nthreads, out, pages);
}
