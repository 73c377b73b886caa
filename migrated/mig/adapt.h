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
 * The levels form a ladder of rungs; rung 0 is raw, rungs 1.. are zstd
 * levels from fast (negative, zstd's "fast" strategies) to strong. Rules,
 * in order, at the end of an epoch:
 *  1. In a raw stretch (rung 0): probe the compressed rung it came from for
 *     MIG_ADAPT_PROBE batches.
 *  2. If zstd was tried on at least one page and its ratio (bytes in /
 *     bytes out, a batch that did not compress counting as 1.0) is below
 *     MIG_ADAPT_RAW_RATIO: go raw for raw_run batches, and double raw_run
 *     (up to MIG_ADAPT_RAW_MAX) so that long incompressible stretches pay
 *     for few probes. A compressible epoch resets raw_run.
 *  3. send share = send_ns / (enc_ns + send_ns). Above MIG_ADAPT_LINK_PCT
 *     percent: one rung up (stronger); below MIG_ADAPT_CPU_PCT: one rung
 *     down (faster), never below rung 1 (raw is for incompressible data
 *     only: it would multiply the bytes on the wire). Between the two:
 *     stay. The gap between the thresholds keeps it from oscillating.
 *  4. No time measured (an empty epoch): stay.
 * No I/O, no clock, no state beyond what is passed in: tests feed it
 * recorded epochs.
 */
#ifndef MIG_ADAPT_H
#define MIG_ADAPT_H

#include <stdint.h>

#define MIG_ADAPT_RUNGS 6u	  /* raw + 5 zstd levels */
#define MIG_ADAPT_RUNG_START 3u	  /* zstd level 1, the old fixed choice */
#define MIG_ADAPT_EPOCH 16u	  /* batches between decisions */
#define MIG_ADAPT_PROBE 4u	  /* batches of a probe out of raw */
#define MIG_ADAPT_RAW_MIN 64u	  /* first raw stretch, batches */
#define MIG_ADAPT_RAW_MAX 256u	  /* longest raw stretch */
#define MIG_ADAPT_RAW_RATIO 1.06  /* below: not worth compressing */
#define MIG_ADAPT_LINK_PCT 60u	  /* send share above: link-bound */
#define MIG_ADAPT_CPU_PCT 30u	  /* send share below: compressor-bound */

/* What a channel measured over one epoch. */
struct mig_adapt_epoch {
	uint32_t batches;
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
};

/* The starting state: zstd level 1, one epoch. */
struct mig_adapt_state mig_adapt_init(void);

/* The next state after an epoch measured @ep in state @st. Pure. */
struct mig_adapt_state mig_adapt(const struct mig_adapt_state *st,
				 const struct mig_adapt_epoch *ep);

/* The zstd level of @rung (rung 0, raw: 0). */
int mig_adapt_level(unsigned rung);

#endif
