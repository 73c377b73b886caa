// SPDX-License-Identifier: MIT
/* The adaptive compression choice (adapt.h). */
#include "migrated/mig/adapt.h"

#include "hvcore/types.h"

/*
 * The ladder. zstd -5 compresses text about twice as fast as level 1 at a
 * lower ratio; level 6 is the last before zstd's lazy strategies get much
 * slower for little gain on 256 KiB batches.
 */
static const int levels[MIG_ADAPT_RUNGS] = { 0, -5, -1, 1, 3, 6 };

int mig_adapt_level(unsigned rung)
{
	return rung < MIG_ADAPT_RUNGS ? levels[rung] : 0;
}

struct mig_adapt_state mig_adapt_init(void)
{
	return (struct mig_adapt_state){
		.rung = MIG_ADAPT_RUNG_START,
		.back_rung = MIG_ADAPT_RUNG_START,
		.epoch = MIG_ADAPT_EPOCH,
		.raw_run = MIG_ADAPT_RAW_MIN,
	};
}

struct mig_adapt_state mig_adapt(const struct mig_adapt_state *st,
				 const struct mig_adapt_epoch *ep)
{
	struct mig_adapt_state n = *st;
	uint64_t busy = ep->enc_ns + ep->send_ns;

	n.epoch = MIG_ADAPT_EPOCH;
	/* 1: a raw stretch is over: look at the content again. */
	if (st->rung == 0) {
		n.rung = st->back_rung ? st->back_rung : MIG_ADAPT_RUNG_START;
		n.epoch = MIG_ADAPT_PROBE;
		return n;
	}
	/* 2: zstd saved too little: raw, for longer each time. */
	if (ep->tried_bytes) {
		double ratio = ep->tried_out ? (double)ep->tried_bytes /
						       (double)ep->tried_out
					     : 1.0;

		if (ratio < MIG_ADAPT_RAW_RATIO) {
			n.back_rung = st->rung;
			n.rung = 0;
			n.epoch = st->raw_run;
			n.raw_run = HV_MIN(st->raw_run * 2, MIG_ADAPT_RAW_MAX);
			return n;
		}
		n.raw_run = MIG_ADAPT_RAW_MIN;
	}
	/* 4: nothing measured. */
	if (!busy)
		return n;
	/* 3: where the time went. */
	if (ep->send_ns * 100 > busy * MIG_ADAPT_LINK_PCT) {
		if (st->rung + 1 < MIG_ADAPT_RUNGS)
			n.rung = st->rung + 1;
	} else if (ep->send_ns * 100 < busy * MIG_ADAPT_CPU_PCT) {
		if (st->rung > 1)
			n.rung = st->rung - 1;
	}
	return n;
}
