// SPDX-License-Identifier: MIT
#include "migrated/mig/policy.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "migrated/mig/converge.h"

struct mig_pc_auto_out mig_pc_auto(const struct mig_pc_auto_in *in)
{
	uint32_t limit_ms = in->downtime_ms ? in->downtime_ms
					    : MIG_CONV_DOWNTIME_MS_DEFAULT;
	struct mig_pc_auto_out out = {
		.expected_downtime_ms = -1,
		.limit_pct = in->throttle_limit_pct
				     ? in->throttle_limit_pct
				     : MIG_PC_THROTTLE_LIMIT_DEFAULT,
	};
	double bw = in->bandwidth > 0 ? in->bandwidth : 0;
	double cur = in->throttle_pct > MIG_CONV_THROTTLE_MAX
			     ? MIG_CONV_THROTTLE_MAX
			     : in->throttle_pct;
	double needed;

	out.unthrottled_rate =
		in->dirty_rate > 0 ? in->dirty_rate / (1 - cur / 100) : 0;
	if (bw <= 0)
		return out;
	out.expected_downtime_ms = (double)in->remaining_bytes * 1000.0 / bw;
	needed = out.unthrottled_rate > bw / 2
			 ? ceil(100 * (1 - (bw / 2) / out.unthrottled_rate))
			 : 0;
	out.needed_pct = needed > 100 ? 100 : (uint32_t)needed;
	if (!in->pc_offered || out.expected_downtime_ms <= limit_ms)
		return out;
	out.do_switch = out.needed_pct > out.limit_pct;
	return out;
}

enum mig_timeout_action mig_timeout_action(enum mig_timeout_policy p,
					   bool pc_offered)
{
	switch (p) {
	case MIG_TIMEOUT_SWITCHOVER:
		return MIG_TOA_SWITCHOVER;
	case MIG_TIMEOUT_POSTCOPY:
		return pc_offered ? MIG_TOA_POSTCOPY
				  : MIG_TOA_ABORT_NO_POSTCOPY;
	default:
		return MIG_TOA_ABORT;
	}
}

static const char *const policy_names[MIG_TIMEOUT_POLICY_COUNT] = {
	[MIG_TIMEOUT_ABORT] = "abort",
	[MIG_TIMEOUT_SWITCHOVER] = "switchover",
	[MIG_TIMEOUT_POSTCOPY] = "postcopy",
};

const char *mig_timeout_policy_name(enum mig_timeout_policy p)
{
	if ((unsigned)p < MIG_TIMEOUT_POLICY_COUNT)
		return policy_names[p];
	return "invalid";
}

int mig_timeout_policy_parse(const char *s, enum mig_timeout_policy *out)
{
	for (unsigned i = 0; s && i < MIG_TIMEOUT_POLICY_COUNT; i++) {
		if (!strcmp(s, policy_names[i])) {
			*out = (enum mig_timeout_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}
