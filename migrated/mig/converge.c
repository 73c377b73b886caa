// SPDX-License-Identifier: MIT
#include "migrated/mig/converge.h"

#include <math.h>

const char *mig_conv_action_name(enum mig_conv_action a)
{
	switch (a) {
	case MIG_CONV_ITERATE:
		return "iterate";
	case MIG_CONV_SWITCHOVER:
		return "switchover";
	case MIG_CONV_THROTTLE:
		return "throttle";
	default:
		return "invalid";
	}
}

struct mig_conv_out mig_converge(const struct mig_conv_in *in)
{
	uint32_t limit_ms = in->downtime_ms ? in->downtime_ms
					    : MIG_CONV_DOWNTIME_MS_DEFAULT;
	uint32_t max_iter = in->max_iterations
				    ? in->max_iterations
				    : MIG_CONV_MAX_ITERATIONS_DEFAULT;
	struct mig_conv_out out = {
		.action = MIG_CONV_ITERATE,
		.throttle_pct = in->throttle_pct,
		.expected_downtime_ms = -1,
	};
	double bw = in->bandwidth > 0 ? in->bandwidth : 0;
	double cur = in->throttle_pct > MIG_CONV_THROTTLE_MAX
			     ? MIG_CONV_THROTTLE_MAX
			     : in->throttle_pct;
	double unthrottled, wanted;
	uint32_t pct;

	if (in->max_bandwidth > 0 && bw > in->max_bandwidth)
		bw = in->max_bandwidth;
	if (bw <= 0)
		return out;
	out.expected_downtime_ms = (double)in->remaining_bytes * 1000.0 / bw;
	if (out.expected_downtime_ms <= limit_ms) {
		out.action = MIG_CONV_SWITCHOVER;
		return out;
	}
	if (in->dirty_rate <= bw / 2 && in->iteration < max_iter)
		return out;

	unthrottled = in->dirty_rate / (1 - cur / 100);
	wanted = unthrottled > 0 ? 100 * (1 - (bw / 2) / unthrottled) : 0;
	wanted = ceil(wanted);
	if (wanted < cur + MIG_CONV_THROTTLE_STEP)
		wanted = cur + MIG_CONV_THROTTLE_STEP;
	pct = wanted > MIG_CONV_THROTTLE_MAX ? MIG_CONV_THROTTLE_MAX
					     : (uint32_t)wanted;
	out.action = MIG_CONV_THROTTLE;
	out.throttle_pct = pct;
	return out;
}
