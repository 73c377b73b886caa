// SPDX-License-Identifier: MIT
/* Raw "compression": the non-zero pages back to back. */
#include "migrated/mig/compress.h"

#include <errno.h>
#include <string.h>

#include "hvcore/types.h"

uint64_t mig_runs_bytes(const struct mig_run *runs, unsigned nr)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < nr; i++)
		n += runs[i].len;
	return n;
}

static int raw_ctx_create(int level, void **out)
{
	*out = NULL;
	return 0;
}

static void raw_ctx_destroy(void *ctx)
{
}

static ssize_t raw_compress(void *ctx, const struct mig_run *runs,
			    unsigned nr, uint8_t *dst, size_t cap)
{
	size_t off = 0;

	if (mig_runs_bytes(runs, nr) > cap)
		return -ENOSPC;
	for (unsigned i = 0; i < nr; i++) {
		size_t len = runs[i].len;

		memcpy(dst + off, runs[i].ptr, len);
		off += len;
	}
	return (ssize_t)off;
}

static int raw_decompress(void *ctx, const uint8_t *src, size_t len,
			  const struct mig_run *runs, unsigned nr,
			  uint8_t *scratch)
{
	size_t off = 0;

	if (len != mig_runs_bytes(runs, nr))
		return -EMSGSIZE;
	for (unsigned i = 0; i < nr; i++) {
		size_t n = runs[i].len;

		memcpy(runs[i].ptr, src + off, n);
		off += n;
	}
	return 0;
}

const struct mig_comp_ops mig_comp_raw = {
	.name = "raw",
	.encoding = MIG__ENCODING__ENCODING_RAW,
	.ctx_create = raw_ctx_create,
	.ctx_destroy = raw_ctx_destroy,
	.compress = raw_compress,
	.decompress = raw_decompress,
};

const struct mig_comp_ops *mig_comp_get(unsigned enc)
{
	switch (enc) {
	case MIG__ENCODING__ENCODING_RAW:
		return &mig_comp_raw;
	case MIG__ENCODING__ENCODING_ZSTD:
		return &mig_comp_zstd;
	default:
		return NULL;
	}
}
