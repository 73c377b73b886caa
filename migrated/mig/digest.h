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
 * Cost: one read of guest memory, split over @nthreads threads, plus 8
 * bytes of table per page (0.2% of RAM), freed before returning. Both
 * sides run it inside the downtime; the destination starts as soon as its
 * last page landed, while the source computes its own, so the two scans
 * overlap.
 */
#ifndef MIG_DIGEST_H
#define MIG_DIGEST_H

#include <stdint.h>

#include "migrated/mig/memmap.h"

#define MIG_DIGEST_LEN 32u
#define MIG_DIGEST_MAX_THREADS 16u

/* The 64-bit hash of the 4 KiB page at @page. Pure, thread-safe. */
uint64_t mig_page_hash(const void *page);

/*
 * Digest of every page of @map into @out; *@pages (may be NULL) gets the
 * number of pages covered. @nthreads 0 or 1: the calling thread only;
 * more: that many threads (capped at MIG_DIGEST_MAX_THREADS). The memory
 * must not change meanwhile (VM paused or not started). Returns 0,
 * -ENOMEM, -EIO (OpenSSL) or -errno of pthread_create.
 */
int mig_digest_compute(const struct mig_memmap *map, unsigned nthreads,
		       uint8_t out[MIG_DIGEST_LEN], uint64_t *pages);

#endif
