// SPDX-License-Identifier: MIT
#include "migrated/mig/digest.h"

#include <errno.h>
#include <pthread.h>
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

struct hash_job {
	const struct mig_memmap *map;
	uint64_t *table; /* one entry per page, all slots back to back */
	uint64_t first, count; /* pages of the table this job fills */
	uint64_t zero_hash;
	pthread_t thread;
};

/* Fill table[first, first + count): walk the slots to find the pages. */
static void *hash_run(void *arg)
{
	struct hash_job *j = arg;
	uint64_t idx = 0, end = j->first + j->count;

	for (unsigned s = 0; s < mig_memmap_count(j->map) && idx < end; s++) {
		const struct mig_memmap_slot *sl = mig_memmap_at(j->map, s);
		uint64_t lo = HV_MAX(idx, j->first);
		uint64_t hi = HV_MIN(idx + sl->npages, end);

		for (uint64_t i = lo; i < hi; i++) {
			const uint8_t *pg = sl->host +
					    ((i - idx) << HV_PAGE_SHIFT);

			j->table[i] = mig_page_is_zero(pg) ? j->zero_hash
							    : mig_page_hash(pg);
		}
		idx += sl->npages;
	}
	return NULL;
}

static void put_le(uint8_t *b, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* SHA-256 over the slot headers and the (little-endian) table. */
static int sha_table(const struct mig_memmap *map, uint64_t *table,
		     uint8_t out[MIG_DIGEST_LEN])
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
		uint8_t hdr[20];

		put_le(hdr, sl->id, 4);
		put_le(hdr + 4, sl->base_gfn, 8);
		put_le(hdr + 12, sl->npages, 8);
		for (uint64_t i = 0; i < sl->npages; i++)
			put_le((uint8_t *)&table[idx + i], table[idx + i], 8);
		ok = EVP_DigestUpdate(ctx, hdr, sizeof(hdr)) &&
		     EVP_DigestUpdate(ctx, &table[idx],
				      sl->npages * sizeof(uint64_t));
		idx += sl->npages;
	}
	ok = ok && EVP_DigestFinal_ex(ctx, out, &len) && len == MIG_DIGEST_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

int mig_digest_compute(const struct mig_memmap *map, unsigned nthreads,
		       uint8_t out[MIG_DIGEST_LEN], uint64_t *pages)
{
	struct hash_job jobs[MIG_DIGEST_MAX_THREADS];
	static const uint8_t zero_page[HV_PAGE_SIZE];
	uint64_t total = 0, per, zero_hash = mig_page_hash(zero_page);
	uint64_t *table;
	unsigned started = 0;
	int ret = 0;

	for (unsigned s = 0; s < mig_memmap_count(map); s++)
		total += mig_memmap_at(map, s)->npages;
	table = malloc(HV_MAX(total, 1) * sizeof(*table));
	if (!table)
		return -ENOMEM;
	nthreads = HV_MAX(1u, HV_MIN(nthreads, MIG_DIGEST_MAX_THREADS));
	per = HV_DIV_ROUND_UP(total, nthreads);
	for (unsigned t = 0; t < nthreads; t++) {
		jobs[t] = (struct hash_job){
			.map = map,
			.table = table,
			.first = HV_MIN(t * per, total),
			.count = HV_MIN(per, total - HV_MIN(t * per, total)),
			.zero_hash = zero_hash,
		};
	}
	/* Jobs 1.. in threads, job 0 here. */
	for (unsigned t = 1; t < nthreads; t++, started++) {
		ret = -pthread_create(&jobs[t].thread, NULL, hash_run, &jobs[t]);
		if (ret)
			break;
	}
	hash_run(&jobs[0]);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(jobs[t].thread, NULL);
	if (!ret && started + 1 < nthreads)
		ret = -EAGAIN;
	if (!ret)
		ret = sha_table(map, table, out);
	if (!ret && pages)
		*pages = total;
	free(table);
	return ret;
}
