// SPDX-License-Identifier: MIT
#include "migrated/mig/eta.h"

void mig_eta_init(struct mig_eta *e, uint64_t work_bytes)
{
	*e = (struct mig_eta){ .work_bytes = work_bytes };
}

uint32_t mig_eta_percent(struct mig_eta *e, uint64_t remaining_bytes)
{
	uint32_t pct = 99;

	if (e->work_bytes && remaining_bytes < e->work_bytes)
		pct = (uint32_t)((e->work_bytes - remaining_bytes) * 100 /
				 e->work_bytes);
	else if (e->work_bytes)
		pct = 0;
	if (pct > 99)
		pct = 99;
	if (pct > e->percent)
		e->percent = pct;
	return e->percent;
}

uint64_t mig_eta_raw_ns(uint64_t remaining_bytes, double bandwidth,
			double dirty_rate, bool can_throttle,
			uint64_t expected_downtime_ns)
{
	double d = dirty_rate > 0 ? dirty_rate : 0, t;

	if (bandwidth <= 0)
		return 0;
	if (can_throttle && d > bandwidth / 2)
		d = bandwidth / 2;
	if (d >= bandwidth)
		return 0;
	t = (double)remaining_bytes / (bandwidth - d) * 1e9 +
	    (double)expected_downtime_ns;
	if (t > 1e18)
		return 0;
	return t < 1 ? 1 : (uint64_t)t;
}

uint64_t mig_eta_update(struct mig_eta *e, uint64_t now_ns, uint64_t raw_ns)
{
	uint64_t dt, left, cap;
	double s;

	if (!raw_ns)
		return 0;
	if (!e->eta_ns) {
		e->eta_ns = raw_ns;
		e->at_ns = now_ns;
		e->eta_pct = e->percent;
		return raw_ns;
	}
	dt = now_ns > e->at_ns ? now_ns - e->at_ns : 0;
	left = e->eta_ns > dt ? e->eta_ns - dt : 0;
	s = (double)left + ((double)raw_ns - (double)left) * MIG_ETA_ALPHA;
	/* While the percentage moves, the time left may not grow. */
	if (e->percent > e->eta_pct)
		e->moved_ns = now_ns;
	cap = now_ns - e->moved_ns < MIG_ETA_STALL_NS
		      ? left
		      : e->eta_ns + dt / MIG_ETA_RISE_DIV;
	if (s > (double)cap)
		s = (double)cap;
	if (s < 1)
		s = 1;
	e->eta_ns = (uint64_t)s;
	e->at_ns = now_ns;
	e->eta_pct = e->percent;
	return e->eta_ns;
}
