// SPDX-License-Identifier: MIT
/* The adaptive compression choice (adapt.h). */
#include "migrated/mig/adapt.h"

#include "hvcore/types.h"

/*
 * The ladder: raw, zstd's fast strategy at -5, level 1 (fast), level 3
 * (double fast) and level 6 (lazy), the last before zstd gets much
 * slower for little gain on 256 KiB batches.
 */
static const int levels[MIG_ADAPT_RUNGS] = { 0, -5, 1, 3, 6 };

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
	unsigned r = st->rung;

	n.epoch = MIG_ADAPT_EPOCH;
	/* 1: a raw stretch is over: look at the content again. */
	if (r == 0) {
		n.rung = st->back_rung ? st->back_rung : MIG_ADAPT_RUNG_START;
		n.epoch = MIG_ADAPT_PROBE;
		n.probe_from = 0;
		n.stay = 0;
		return n;
	}
	/* 2: zstd saved too little: raw, for longer each time. */
	if (ep->tried_bytes) {
		double ratio = ep->tried_out ? (double)ep->tried_bytes /
						       (double)ep->tried_out
					     : 1.0;

		if (ratio < MIG_ADAPT_RAW_RATIO) {
			n.back_rung = r;
			n.rung = 0;
			n.epoch = st->raw_run;
			n.raw_run = HV_MIN(st->raw_run * 2, MIG_ADAPT_RAW_MAX);
			n.probe_from = 0;
			n.stay = 0;
			return n;
		}
		n.raw_run = MIG_ADAPT_RAW_MIN;
	}
	/* 6: nothing measured. */
	if (!busy || !ep->pages)
		return n;
	/* 3: what a page cost here. */
	{
		uint64_t c = HV_MAX(busy / ep->pages, 1);

		c = HV_MIN(c, (uint64_t)UINT32_MAX);
		n.cost[r] = st->cost[r] ? (uint32_t)((st->cost[r] + c) / 2)
					: (uint32_t)c;
	}
	/* 4: a probe ends: keep the cheaper rung. */
	if (st->probe_from) {
		unsigned from = st->probe_from;

		n.probe_from = 0;
		n.stay = 0;
		/* The probe must win by a margin: measured costs are noisy
		 * on a busy host, and every switch pays for itself only
		 * when it lasts. */
		if (st->cost[from] &&
		    (uint64_t)st->cost[from] * 100 <=
			    (uint64_t)n.cost[r] * (100 + MIG_ADAPT_MARGIN_PCT))
			n.rung = from;
		return n;
	}
	/* 5: now and then, look next door. */
	if (++n.stay >= MIG_ADAPT_EXPLORE) {
		/* The hint first, the other way next time: a cost that
		 * does not follow the level's order is found as well. */
		bool up = (ep->send_ns * 2 > busy) != st->flip;

		if (r == 1)
			up = true;
		else if (r + 1 == MIG_ADAPT_RUNGS)
			up = false;
		n.probe_from = r;
		n.rung = up ? r + 1 : r - 1;
		n.stay = 0;
		n.flip = !st->flip;
	}
	return n;
}
