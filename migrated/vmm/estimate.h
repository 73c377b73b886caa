/* SPDX-License-Identifier: MIT */
/*
 * migd_estimate: will precopy converge for this VM, and how long will it
 * take? A pure function over a dirty-rate snapshot (hvcore/dirtyrate.h).
 *
 * The model. D(t) = bytes the guest dirties (distinct pages) during an
 * interval of length t. The monitor measures it at a few points: the
 * rate over one sample interval, and the working sets of 1 s, 10 s and
 * 60 s; D is the piecewise-linear curve through (0, 0) and those points,
 * flat after 60 s (the working set saturates: a hot set is sent once per
 * iteration however long the iteration). With a throttle T the guest
 * runs (1 - T) of the time: D_T(t) = D((1 - T) t).
 * Precopy is then simulated iteration by iteration at bandwidth B:
 *   iteration 0 sends all RAM:        t0 = M / B
 *   iteration i sends D_T(t(i-1)):    ti = D_T(t(i-1)) / B
 * and after each one the engine's own rule, mig_converge()
 * (migrated/mig/converge.h), decides: switch over (remaining / B within
 * the downtime limit), iterate, or raise the throttle (up to the
 * ceiling). The answer: converges or not, iterations, the total time
 * (precopy + downtime) and the throttle it needed, plus the same run
 * without any throttle.
 * Not modelled: zero pages and compression (the wire carries less than
 * D), bandwidth that varies, workloads that change their rate.
 */
#ifndef MIGD_ESTIMATE_H
#define MIGD_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/dirtyrate.h"

#define MIGD_EST_STEPS_MAX 64

struct migd_est_in {
	uint64_t mem_bytes;
	uint64_t bandwidth;	   /* bytes/s, > 0 */
	uint32_t downtime_ms;	   /* 0 = default */
	uint32_t throttle_max_pct; /* 0 = 99 */
};

struct migd_est_step {
	uint64_t send_bytes;
	double seconds;
	uint32_t throttle_pct;
};

struct migd_est {
	bool converges;
	bool converges_unthrottled;
	uint32_t iterations;
	double total_s;
	double expected_downtime_ms;
	uint32_t throttle_pct;
	double dirty_bytes_per_s;
	uint64_t working_set_bytes;
	char note[160];
	unsigned nr_steps;
	struct migd_est_step steps[MIGD_EST_STEPS_MAX];
};

/* D(t) in bytes from @s (exposed for tests). */
double migd_est_dirty_bytes(const struct hv_dirtyrate_snap *s, double t);

/* 0, or -EINVAL (no bandwidth, no memory). Pure. */
int migd_estimate(const struct hv_dirtyrate_snap *s,
		  const struct migd_est_in *in, struct migd_est *out);

#endif
