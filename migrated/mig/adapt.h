/* SPDX-License-Identifier: MIT */
/*
 * mig_adapt(): the adaptive compression choice of one data channel, one
 * small pure function (docs/architecture.md), called by the channel's
 * thread every few batches with what it measured since the last call.
 *
 * A channel thread encodes a batch, then writes it (TLS encryption and,
 * when the socket is full, waiting for the link). Where its time goes
 * says what limits it:
 *   - mostly in the write: the link (or the receiver) is the limit, so
 *     bytes are dearer than CPU: compress harder;
 *   - mostly in the encoder: the compressor is the limit: a faster level
 *     sends a few more bytes but moves more pages per second;
 *   - the content does not compress (random pages): zstd costs CPU and
 *     saves nothing: send raw, and look again now and then, since memory
 *     changes from region to region.
 *
 * Which level is fastest is measured, not assumed: on repetitive text,
 * zstd 3 (a "double fast" strategy) both compresses better and runs
 * faster than level 1 or the negative levels (docs/benchmarks.md). So the
 * channel keeps, per rung, the time one page cost it (encoding plus
 * writing, the channel's whole time per page: what limits it is in
 * there whatever it is) and moves to the cheapest. Rung 0 is raw, rungs
 * 1.. are zstd levels from fast to strong. Rules, at the end of an epoch:
 *  1. In a raw stretch (rung 0): probe the compressed rung it came from
 *     for MIG_ADAPT_PROBE batches.
 *  2. If zstd was tried on at least one page and its ratio (bytes in /
 *     bytes out, a batch that did not compress counting as 1.0) is below
 *     MIG_ADAPT_RAW_RATIO: go raw for raw_run batches, and double raw_run
 *     (up to MIG_ADAPT_RAW_MAX) so that long incompressible stretches pay
 *     for few probes. A compressible epoch resets raw_run. Raw is for
 *     incompressible content only: it would multiply the bytes on the
 *     wire of anything else.
 *  3. The epoch's cost per page (enc_ns + send_ns) / pages updates the
 *     rung's estimate (the mean of the old estimate and the new one).
 *  4. After a probe epoch: stay on the probed rung if it cost at least
 *     MIG_ADAPT_MARGIN_PCT percent less than the rung the probe came
 *     from, else go back.
 *  5. Every MIG_ADAPT_EXPLORE epochs on one rung: probe a neighbour, the
 *     stronger one when the channel spent more than half its time
 *     writing (the link or the receiver is the limit: fewer bytes pay),
 *     the faster one otherwise, and the other way at the next probe
 *     (the ends of the ladder probe inward).
 *  6. Otherwise, and on an epoch with no time or no page: stay.
 * No I/O, no clock, no state beyond what is passed in: tests feed it
 * recorded epochs.
 */
#ifndef MIG_ADAPT_H
#define MIG_ADAPT_H

#include <stdbool.h>
#include <stdint.h>

#define MIG_ADAPT_RUNGS 5u	  /* raw + 4 zstd levels */
#define MIG_ADAPT_RUNG_START 2u	  /* zstd level 1, the old fixed choice */
#define MIG_ADAPT_EXPLORE 4u	  /* epochs on a rung between probes */
#define MIG_ADAPT_MARGIN_PCT 10u  /* a probed rung must be this much cheaper */
#define MIG_ADAPT_EPOCH 16u	  /* batches between decisions */
#define MIG_ADAPT_PROBE 4u	  /* batches of a probe out of raw */
#define MIG_ADAPT_RAW_MIN 64u	  /* first raw stretch, batches */
#define MIG_ADAPT_RAW_MAX 256u	  /* longest raw stretch */
#define MIG_ADAPT_RAW_RATIO 1.06  /* below: not worth compressing */

/* What a channel measured over one epoch. */
struct mig_adapt_epoch {
	uint32_t batches;
	uint32_t pages;	      /* pages in them, zero pages included */
	uint64_t enc_ns;      /* in mig_batch_encode() */
	uint64_t send_ns;     /* writing the frames (TLS, blocked on link) */
	uint64_t tried_bytes; /* non-zero page bytes handed to zstd */
	uint64_t tried_out;   /* what they became (not compressed: same) */
};

struct mig_adapt_state {
	unsigned rung;	    /* 0 raw, 1..MIG_ADAPT_RUNGS-1 zstd */
	unsigned back_rung; /* in a raw stretch: the rung to probe */
	uint32_t epoch;	    /* batches until the next decision */
	uint32_t raw_run;   /* length of the next raw stretch */
	unsigned probe_from; /* a probe epoch: the rung it left; else 0 */
	unsigned stay;	     /* epochs on this rung since the last probe */
	bool flip;	     /* next probe against the hint */
	/* ns one page cost on each rung, as last measured; 0 = unknown */
	uint32_t cost[MIG_ADAPT_RUNGS];
};

/* The starting state: zstd level 1, one epoch. */
struct mig_adapt_state mig_adapt_init(void);

/* The next state after an epoch measured @ep in state @st. Pure. */
struct mig_adapt_state mig_adapt(const struct mig_adapt_state *st,
				 const struct mig_adapt_epoch *ep);

/* The zstd level of @rung (rung 0, raw: 0). */
int mig_adapt_level(unsigned rung);

#endif
