/* SPDX-License-Identifier: MIT */
/*
 * mig_converge(): the precopy convergence decision, one small pure
 * function (docs/architecture.md), called by the source after each
 * iteration with what it measured.
 *
 * Rules, in order (bw = min(measured bandwidth, max bandwidth if set)):
 *  1. No bandwidth measured yet (bw == 0): ITERATE.
 *  2. expected downtime = remaining / bw. If it is within the downtime
 *     limit: SWITCHOVER.
 *  3. If the guest dirties less than half of what the link sends
 *     (dirty_rate <= bw / 2) and fewer than max_iterations iterations ran:
 *     ITERATE -- each iteration then at least halves what remains, so the
 *     remainder shrinks geometrically without slowing the guest.
 *  4. Otherwise THROTTLE: the guest outruns the link (or iterations ran
 *     out). The new throttle is the share of vCPU time to take away so that
 *     the guest's unthrottled dirty rate falls to bw / 2:
 *         unthrottled = dirty_rate / (1 - current / 100)
 *         wanted      = 100 * (1 - (bw / 2) / unthrottled)
 *     raised by at least MIG_CONV_THROTTLE_STEP over the current value (so
 *     repeated iterations always make progress even when the measurement
 *     is noisy), capped at MIG_CONV_THROTTLE_MAX. At the cap the caller
 *     keeps iterating until its own time limit and reports that it could
 *     not converge.
 * All arithmetic is in doubles on non-negative inputs; no I/O, no state.
 */
#ifndef MIG_CONVERGE_H
#define MIG_CONVERGE_H

#include <stdint.h>

#define MIG_CONV_DOWNTIME_MS_DEFAULT 300u
#define MIG_CONV_MAX_ITERATIONS_DEFAULT 30u
#define MIG_CONV_THROTTLE_STEP 10u
#define MIG_CONV_THROTTLE_MAX 99u

enum mig_conv_action {
	MIG_CONV_INVALID = 0,
	MIG_CONV_ITERATE,
	MIG_CONV_SWITCHOVER,
	MIG_CONV_THROTTLE,
};

struct mig_conv_in {
	uint64_t remaining_bytes; /* dirty bytes left to send */
	double bandwidth;	  /* measured bytes/s of the last iteration */
	double dirty_rate;	  /* measured bytes/s the guest dirtied */
	uint32_t downtime_ms;	  /* limit; 0 = the default */
	double max_bandwidth;	  /* bytes/s cap set by the operator; 0 = none */
	uint32_t iteration;	  /* iterations completed so far */
	uint32_t max_iterations;  /* 0 = the default */
	uint32_t throttle_pct;	  /* throttle in force now, 0..99 */
};

struct mig_conv_out {
	enum mig_conv_action action;
	uint32_t throttle_pct;	/* THROTTLE: new value; else unchanged */
	double expected_downtime_ms; /* remaining / bw; -1 if bw unknown */
};

struct mig_conv_out mig_converge(const struct mig_conv_in *in);

const char *mig_conv_action_name(enum mig_conv_action a);

#endif
