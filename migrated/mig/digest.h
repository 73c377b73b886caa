/* SPDX-License-Identifier: MIT */
/*
 * mig_digest: the digest of a VM's memory that the source sends at
 * switchover and the destination recomputes over what it received
 * (Digest.algo DIGEST_PAGE64_SHA256).
 *
 * Definition: each 4 KiB page gets a 64-bit hash (mig_page_hash(), a
 * four-lane multiply-rotate hash written for this, in the style of xxh64,
 * about memory bandwidth when optimised; a page of zeros short-cuts to the
 * hash of a zero page); the digest is SHA-256 (OpenSSL EVP) over, for
 * each slot of the map in id order, its id, base gfn and page count
 * (little-endian u32, u64, u64) followed by its pages' hashes
 * (little-endian u64 each). The page hashes are not cryptographic: the
 * digest catches lost, stale, misplaced or corrupted pages (transport
 * bugs), not an adversary, which TLS keeps out.
 *
 * The page table is the digest's unit of work: the source keeps one for
 * the whole migration, updated after each pass for the pages the pass
 * sent (mig_hash_range with a selection), so that its switchover digest
 * is a SHA-256 of 8 bytes per page (0.2% of RAM; ~ms for 1 GiB) instead
 * of a read of all guest memory inside the downtime; after commit it
 * re-hashes its frozen memory and compares page by page (verification).
 *
 * Holes: a range of guest RAM never written reads as zeros.
 * hv_guest_mem_data_map() (hvcore/guest_mem.h) finds them on every
 * backing, so that hashing (and sending) skips them without faulting them
 * in, which costs several us per page on a nested host
 * (docs/architecture.md).
 */
#ifndef MIG_DIGEST_H
#define MIG_DIGEST_H

#include <stdint.h>

#include "migrated/mig/memmap.h"

#define MIG_DIGEST_LEN 32u
#define MIG_DIGEST_MAX_THREADS 16u

/* The 64-bit hash of the 4 KiB page at @page. Pure, thread-safe. */
uint64_t mig_page_hash(const void *page);

/* Pages hashed at a time by mig_digest_compute_data() and the source's
 * verification (a multiple of 64: data-map words stay aligned). */
#define MIG_DIGEST_CHUNK_PAGES (1u << 18)

/* The hash of a page of zeros (what a hole or a zero page hashes to). */
uint64_t mig_zero_page_hash(void);

/* Total pages of @map, all slots. */
uint64_t mig_memmap_pages(const struct mig_memmap *map);

/*
 * Hash pages [0, @npages) at @host into @table[i]. @select (one bit per
 * page; NULL = every page): only the pages whose bit is set. @data (NULL
 * = none): pages whose bit is clear are holes, given the zero hash
 * without being read. @nthreads as below. The pages must not change
 * meanwhile for the result to mean anything. 0 or -errno of
 * pthread_create.
 */
int mig_hash_range(const uint8_t *host, uint64_t npages,
		   const uint64_t *select, const uint64_t *data,
		   uint64_t *table, unsigned nthreads);

/*
 * The same, storing each entry as hash ^ @rel. With @rel the zero-page
 * hash, a page of zeros is entry 0, so a table that starts calloc'd (all
 * zero pages) costs memory only where pages were hashed.
 */
int mig_hash_range_rel(const uint8_t *host, uint64_t npages,
		       const uint64_t *select, const uint64_t *data,
		       uint64_t *table, uint64_t rel, unsigned nthreads);

/*
 * The digest (definition above) of a finished page table: @table holds
 * one entry per page of @map, slots back to back in id order. Does not
 * change @table. 0, -ENOMEM or -EIO (OpenSSL).
 */
int mig_digest_table(const struct mig_memmap *map, const uint64_t *table,
		     uint8_t out[MIG_DIGEST_LEN]);
/* The same over a table whose entries are stored ^ @rel. */
int mig_digest_table_rel(const struct mig_memmap *map, const uint64_t *table,
			 uint64_t rel, uint8_t out[MIG_DIGEST_LEN]);

/*
 * Digest of every page of @map into @out; *@pages (may be NULL) gets the
 * number of pages covered. @data (NULL = read every page): one data map
 * per slot of @map (in its order), holes are not read. @nthreads 0 or 1:
 * the calling thread only; more: that many threads (capped at
 * MIG_DIGEST_MAX_THREADS). The memory must not change meanwhile (VM
 * paused or not started). Returns 0, -ENOMEM, -EIO (OpenSSL) or -errno
 * of pthread_create.
 */
int mig_digest_compute(const struct mig_memmap *map, unsigned nthreads,
		       uint8_t out[MIG_DIGEST_LEN], uint64_t *pages);
int mig_digest_compute_data(const struct mig_memmap *map,
			    const uint64_t *const *data, unsigned nthreads,
			    uint8_t out[MIG_DIGEST_LEN], uint64_t *pages);

#endif
