/* SPDX-License-Identifier: MIT */
/*
 * mig_eta: the source's progress estimate, a percentage and a time left
 * (mig_progress.percent, eta_ns). Pure arithmetic on what the engine
 * measured, with a little state: no I/O, no clock of its own, no lock
 * (the caller serialises).
 *
 * Percent: the work is the bytes the first pass had to send (the guest
 * RAM that was ever written); percent = 100 * (1 - remaining / work),
 * never decreasing (a guest that re-dirties pages does not move it
 * back), at most 99 until the caller says the migration completed.
 *
 * Raw time left (mig_eta_raw_ns): precopy sends the remaining bytes R at
 * bandwidth B while the guest dirties at D, so the passes form a
 * geometric series of total length R / (B - D); the auto-throttle holds D
 * at B / 2 at most while it can still rise; then the switchover's
 * expected downtime. Unknown (0) without a bandwidth or when D >= B
 * (precopy does not converge at the throttle ceiling).
 *
 * Smoothing (mig_eta_update): the ETA shown counts down with the clock
 * and moves a quarter of the way (MIG_ETA_ALPHA) towards each new raw
 * figure; it may rise (run backwards), but between any two known values
 * t1 < t2 by at most (t2 - t1) / MIG_ETA_RISE_DIV: the predicted end
 * slips by at most half the time that passed, and only once the
 * percentage stood still for MIG_ETA_STALL_NS: an ETA that rose while the
 * bar advanced read as a contradiction (issue 25), so while the
 * percentage moves the ETA only falls. It may fall without
 * bound (news that it ends sooner is shown at once, smoothed). 0 means
 * unknown; the bound also holds across unknown stretches (it is taken
 * from the last known value).
 */
#ifndef MIG_ETA_H
#define MIG_ETA_H

#include <stdbool.h>
#include <stdint.h>

#define MIG_ETA_ALPHA 0.25
#define MIG_ETA_RISE_DIV 2u
/* The percentage counts as standing still after this long unchanged. */
#define MIG_ETA_STALL_NS 1000000000ull

struct mig_eta {
	uint64_t work_bytes;
	uint32_t percent;
	uint64_t eta_ns;  /* last known ETA (0: none yet) */
	uint64_t at_ns;	  /* when it was computed */
	uint32_t eta_pct; /* percent when it was computed */
	uint64_t moved_ns; /* when an update last saw the percent rise */
};

/* Start over with @work_bytes of work (0 is allowed: 99% at once). */
void mig_eta_init(struct mig_eta *e, uint64_t work_bytes);
/* The percentage with @remaining_bytes left (monotonic, <= 99). */
uint32_t mig_eta_percent(struct mig_eta *e, uint64_t remaining_bytes);
/* The raw estimate in ns (above); 0 = unknown. @can_throttle: the
 * throttle is below its ceiling. */
uint64_t mig_eta_raw_ns(uint64_t remaining_bytes, double bandwidth,
			double dirty_rate, bool can_throttle,
			uint64_t expected_downtime_ns);
/* The ETA to show at @now_ns given the raw estimate (0 = unknown: then
 * 0 is shown and the last known value kept for the bound). */
uint64_t mig_eta_update(struct mig_eta *e, uint64_t now_ns, uint64_t raw_ns);

#endif
