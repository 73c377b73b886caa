// SPDX-License-Identifier: MIT
/*
 * zstd: the non-zero pages of a batch as one zstd frame that declares its
 * content size, so that the receiver can check the decoded size against
 * the batch header before it writes a byte.
 */
#include "migrated/mig/compress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "hvcore/types.h"

struct zstd_ctx {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
};

static int zstd_ctx_create(int level, void **out)
{
	struct zstd_ctx *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	z->cctx = ZSTD_createCCtx();
	z->dctx = ZSTD_createDCtx();
	if (!z->cctx || !z->dctx)
		goto fail;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx,
						ZSTD_c_compressionLevel,
						level ? level : 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx,
						ZSTD_c_contentSizeFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag,
						0)))
		goto fail;
	/* A batch is at most 256 KiB: a larger window only costs memory. */
	ZSTD_DCtx_setParameter(z->dctx, ZSTD_d_windowLogMax, 20);
	*out = z;
	return 0;
fail:
	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeDCtx(z->dctx);
	free(z);
	return -ENOMEM;
}

static void zstd_ctx_destroy(void *ctx)
{
	struct zstd_ctx *z = ctx;

	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeDCtx(z->dctx);
	free(z);
}

static int zstd_set_level(void *ctx, int level)
{
	struct zstd_ctx *z = ctx;

	if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel() ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx,
						ZSTD_c_compressionLevel,
						level)))
		return -EINVAL;
	return 0;
}

static ssize_t zstd_compress(void *ctx, const struct mig_run *runs,
			     unsigned nr, uint8_t *dst, size_t cap)
{
	struct zstd_ctx *z = ctx;
	uint64_t total = mig_runs_bytes(runs, nr);
	ZSTD_outBuffer out = { dst, cap, 0 };
	size_t r;

	if (nr == 1) {
		/* One contiguous run: one-shot, no copy into zstd's window. */
		r = ZSTD_compress2(z->cctx, dst, cap, runs[0].ptr, total);
		if (ZSTD_isError(r))
			return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall
				       ? -ENOSPC
				       : -EIO;
		return (ssize_t)r;
	}
	/* Several runs: one frame streamed run by run, size pledged. */
	ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_only);
	if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(z->cctx, total)))
		return -EIO;
	for (unsigned i = 0; i < nr; i++) {
		ZSTD_inBuffer in = { runs[i].ptr,
				     runs[i].len,
				     0 };
		ZSTD_EndDirective d = i + 1 == nr ? ZSTD_e_end
						  : ZSTD_e_continue;

		do {
			r = ZSTD_compressStream2(z->cctx, &out, &in, d);
			if (ZSTD_isError(r)) {
				ZSTD_CCtx_reset(z->cctx,
						ZSTD_reset_session_only);
				return -EIO;
			}
			if (out.pos == out.size && (r || in.pos < in.size)) {
				/* Output full before the end: no gain. */
				ZSTD_CCtx_reset(z->cctx,
						ZSTD_reset_session_only);
				return -ENOSPC;
			}
		} while (d == ZSTD_e_end ? r != 0 : in.pos < in.size);
	}
	return (ssize_t)out.pos;
}

static int zstd_decompress(void *ctx, const uint8_t *src, size_t len,
			   const struct mig_run *runs, unsigned nr,
			   uint8_t *scratch)
{
	struct zstd_ctx *z = ctx;
	uint64_t total = mig_runs_bytes(runs, nr);
	unsigned long long declared;
	uint8_t *dst;
	size_t r, off = 0;

	/* Every size is checked before anything is written. */
	declared = ZSTD_getFrameContentSize(src, len);
	if (declared == ZSTD_CONTENTSIZE_ERROR ||
	    declared == ZSTD_CONTENTSIZE_UNKNOWN || declared != total)
		return -EMSGSIZE;
	r = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(r) || r != len)
		return -EMSGSIZE;

	dst = nr == 1 ? runs[0].ptr : scratch;
	/* @total is the capacity: zstd cannot write past the runs. */
	r = ZSTD_decompressDCtx(z->dctx, dst, total, src, len);
	if (ZSTD_isError(r) || r != total) {
		ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
		return -EBADMSG;
	}
	if (nr == 1)
		return 0;
	for (unsigned i = 0; i < nr; i++) {
		size_t n = runs[i].len;

		memcpy(runs[i].ptr, scratch + off, n);
		off += n;
	}
	return 0;
}

const struct mig_comp_ops mig_comp_zstd = {
	.name = "zstd",
	.encoding = MIG__ENCODING__ENCODING_ZSTD,
	.ctx_create = zstd_ctx_create,
	.ctx_destroy = zstd_ctx_destroy,
	.set_level = zstd_set_level,
	.compress = zstd_compress,
	.decompress = zstd_decompress,
};
