/* SPDX-License-Identifier: MIT */
/*
 * mig_comp_ops: page compression methods as an ops table, one file per
 * method (compress_raw.c, compress_zstd.c), chosen per batch by the batch
 * codec (migrated/mig/batch.h) and named on the wire by Mig__Encoding.
 *
 * Pages are handed over as runs of contiguous bytes (struct mig_run):
 * 4 KiB pages in gfn order, so that both sides read and write guest
 * memory in place, or a batch's staged copies and delta records
 * (delta.h). A context (ctx_create) belongs to one channel thread; methods
 * are not thread-safe per context and keep no other state.
 */
#ifndef MIG_COMPRESS_H
#define MIG_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/migration.pb-c.h"

struct mig_run {
	uint8_t *ptr;	  /* first byte of the run */
	uint32_t len;	  /* contiguous bytes (whole pages, or delta records) */
};

struct mig_comp_ops {
	const char *name;
	Mig__Encoding encoding;
	/* 0 or -ENOMEM; level is the method's own (ignored by raw). */
	int (*ctx_create)(int level, void **out);
	void (*ctx_destroy)(void *ctx); /* NULL is ok */
	/* Change the level between frames: 0 or -EINVAL. NULL: no levels. */
	int (*set_level)(void *ctx, int level);
	/*
	 * Encode the runs into @dst (capacity @cap). Returns the encoded
	 * length, or -ENOSPC when it does not fit in @cap (the caller then
	 * sends raw: compression did not pay), or -EIO.
	 */
	ssize_t (*compress)(void *ctx, const struct mig_run *runs,
			    unsigned nr, uint8_t *dst, size_t cap);
	/*
	 * Decode @src/@len into the runs, whose total is exactly the decoded
	 * size the sender encoded. Checks the encoded sizes before writing:
	 * a length or a declared size that disagrees is -EMSGSIZE and no
	 * page is written. Data found corrupt while decoding is -EBADMSG;
	 * the runs may then hold partial data (never outside them), and the
	 * caller must fail the migration. @scratch (the runs' total size) is
	 * used when the runs are not one contiguous range.
	 */
	int (*decompress)(void *ctx, const uint8_t *src, size_t len,
			  const struct mig_run *runs, unsigned nr,
			  uint8_t *scratch);
};

extern const struct mig_comp_ops mig_comp_raw;
extern const struct mig_comp_ops mig_comp_zstd;

/* The method of @enc, or NULL for ENCODING_INVALID and unknown values. */
const struct mig_comp_ops *mig_comp_get(unsigned enc);

/* Total bytes of @nr runs. */
uint64_t mig_runs_bytes(const struct mig_run *runs, unsigned nr);

#endif
