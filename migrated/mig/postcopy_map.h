/* SPDX-License-Identifier: MIT */
/*
 * mig_pc_unsent: the wire form of the postcopy switch's unsent-page set
 * (proto/migration.proto, PostcopyUnsent), and the checks of a
 * PageRequest.
 *
 * At the switch the source tells the destination which pages it has not
 * sent (never sent, or dirtied again after they were): per slot, one or
 * more ranges of at most MIG_PC_UNSENT_RANGE_MAX pages, each encoded as
 * whichever is smaller of
 *   UNSENT_RUNS    LEB128 varint pairs (clear run, set run), every set
 *                  run >= 1: a few bytes for the common shapes (all of a
 *                  slot, a hot region, nothing);
 *   UNSENT_BITMAP  one bit per page, LSB first, ceil(npages / 8) bytes.
 * So a range never takes more than its bitmap (1 MiB for 2^23 pages,
 * 32 GiB of guest RAM), and the frame's cap holds for any guest size.
 *
 * The decoder checks everything (encoding, range inside the slot, data
 * length, varint form, runs inside the range, bits past the range clear,
 * the count of set pages) before it writes a bit: a bad frame changes
 * nothing and ends the migration with a clear error. Ranges are ORed
 * into the slot's bitmap, so their order does not matter.
 *
 * Pure functions over buffers: no lock, any thread.
 */
#ifndef MIG_POSTCOPY_MAP_H
#define MIG_POSTCOPY_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/migration.pb-c.h"

/* Pages one PostcopyUnsent covers at most; its data is then at most a
 * bitmap of that many bits. */
#define MIG_PC_UNSENT_RANGE_MAX (1ull << 23)
#define MIG_PC_UNSENT_DATA_MAX ((uint32_t)(MIG_PC_UNSENT_RANGE_MAX / 8))
/* Guest frame numbers in one PageRequest. */
#define MIG_PC_REQ_MAX 64u

/*
 * Encode pages [@first, @first + @npages) of @bits (one bit per page of
 * a slot, page offsets inside the slot) for a PostcopyUnsent: *@data
 * (malloc'd, the caller frees it; NULL when *@len is 0), *@len,
 * *@encoding (enum Mig__UnsentEncoding) and *@set_pages. @npages is
 * 1..MIG_PC_UNSENT_RANGE_MAX. Returns 0, -EINVAL or -ENOMEM (outputs
 * untouched on failure).
 */
int mig_pc_unsent_encode(const uint64_t *bits, uint64_t first,
			 uint64_t npages, uint8_t **data, size_t *len,
			 unsigned *encoding, uint64_t *set_pages);

/*
 * Check @u against a slot of @slot_npages pages and OR its unsent pages
 * into @bits (that slot's bitmap, ceil(slot_npages / 64) words). Returns
 * 0 and adds the pages newly set to *@added (may be NULL), or, with
 * @bits untouched:
 *   -ERANGE    the range is empty, too long, or outside the slot;
 *   -EBADMSG   unknown encoding, data of the wrong length, a malformed
 *              or overlong varint, a set run of 0, runs past the range,
 *              bits set past the range, set_pages not what the data has.
 * The caller has matched u->slot to the slot.
 */
int mig_pc_unsent_apply(const Mig__PostcopyUnsent *u, uint64_t slot_npages,
			uint64_t *bits, uint64_t *added);

/* A PageRequest a source may serve: 1..MIG_PC_REQ_MAX gfns. 0 or
 * -EBADMSG. Whether each gfn is guest RAM is the memory map's check. */
int mig_pc_request_check(const Mig__PageRequest *r);

#endif
