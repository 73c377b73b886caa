// SPDX-License-Identifier: MIT
/*
 * migd_estimate: precopy convergence model (estimate.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "migrated/vmm/estimate.h"
#include "migrated/mig/converge.h"

#define PAGE 4096.0

double migd_est_dirty_bytes(const struct hv_dirtyrate_snap *s, double t)
{
	/* Knots (seconds, bytes); enforced non-decreasing. */
	double kt[5], kb[5];
	unsigned n = 0;
	double rate = s->win[HV_DR_10S].covered_s >= 1.0
			      ? s->win[HV_DR_10S].bytes_per_s
			      : s->win[HV_DR_1S].bytes_per_s;
	double iv = s->interval_ms ? s->interval_ms / 1000.0 : 0.2;
	static const double ws_t[HV_DR_NR_WINDOWS] = {1, 10, 60};

	if (t <= 0)
		return 0;
	kt[n] = 0;
	kb[n++] = 0;
	kt[n] = iv;
	kb[n++] = rate * iv;
	/* A hot set rewritten every sample counts once per sample in the
	 * rate but once per second in the working set: the interval's
	 * share can never exceed the 1 s working set. */
	if (s->win[HV_DR_1S].working_set && s->hist_seconds >= 1 &&
	    kb[1] > (double)s->win[HV_DR_1S].working_set * PAGE)
		kb[1] = (double)s->win[HV_DR_1S].working_set * PAGE;
	for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++) {
		double b = (double)s->win[w].working_set * PAGE;

		/* A window not yet observed (working set 0 while pages are
		 * being dirtied) says nothing: extrapolate the rate. */
		if (!s->win[w].working_set || s->hist_seconds < ws_t[w] / 10)
			b = rate * ws_t[w];
		if (b < kb[n - 1])
			b = kb[n - 1];
		kt[n] = ws_t[w];
		kb[n++] = b;
	}
	for (unsigned i = 1; i < n; i++)
		if (t <= kt[i])
			return kb[i - 1] + (kb[i] - kb[i - 1]) *
						   (t - kt[i - 1]) /
						   (kt[i] - kt[i - 1]);
	return kb[n - 1];
}

/* One simulated precopy with throttle ceiling @tmax (0: never). */
static void simulate(const struct hv_dirtyrate_snap *s,
		     const struct migd_est_in *in, uint32_t tmax,
		     struct migd_est *out)
{
	double bw = (double)in->bandwidth, mem = (double)in->mem_bytes;
	double t_prev = mem / bw, total = t_prev;
	uint32_t thr = 0;

	out->nr_steps = 0;
	out->steps[out->nr_steps++] = (struct migd_est_step){
		.send_bytes = in->mem_bytes,
		.seconds = t_prev,
	};
	out->converges = false;
	for (uint32_t i = 1; i < MIGD_EST_STEPS_MAX; i++) {
		double rem =
			migd_est_dirty_bytes(s, t_prev * (1 - thr / 100.0));
		struct mig_conv_in ci = {
			.remaining_bytes = (uint64_t)(rem > mem ? mem : rem),
			.bandwidth = bw,
			.dirty_rate = t_prev > 0 ? rem / t_prev : 0,
			.downtime_ms = in->downtime_ms,
			.iteration = i,
			.throttle_pct = thr,
		};
		struct mig_conv_out co = mig_converge(&ci);

		out->iterations = i;
		if (co.action == MIG_CONV_SWITCHOVER) {
			out->converges = true;
			out->expected_downtime_ms = co.expected_downtime_ms;
			out->total_s = total + co.expected_downtime_ms / 1000;
			out->throttle_pct = thr;
			return;
		}
		if (co.action == MIG_CONV_THROTTLE && tmax) {
			thr = co.throttle_pct > tmax ? tmax : co.throttle_pct;
		} else if (co.action == MIG_CONV_THROTTLE &&
			   i >= MIG_CONV_MAX_ITERATIONS_DEFAULT) {
			break; /* the engine would throttle; we may not */
		}
		t_prev = (double)ci.remaining_bytes / bw;
		total += t_prev;
		out->steps[out->nr_steps++] = (struct migd_est_step){
			.send_bytes = ci.remaining_bytes,
			.seconds = t_prev,
			.throttle_pct = thr,
		};
	}
	out->throttle_pct = thr;
	out->total_s = total;
	out->expected_downtime_ms =
		out->nr_steps
			? out->steps[out->nr_steps - 1].send_bytes / bw * 1000
			: 0;
}

int migd_estimate(const struct hv_dirtyrate_snap *s,
		  const struct migd_est_in *in, struct migd_est *out)
{
	struct migd_est un;
	uint32_t tmax = in->throttle_max_pct ? in->throttle_max_pct
					     : MIG_CONV_THROTTLE_MAX;

	if (!in->bandwidth || !in->mem_bytes)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memset(&un, 0, sizeof(un));
	simulate(s, in, 0, &un);
	simulate(s, in, tmax, out);
	out->converges_unthrottled = un.converges;
	if (un.converges) { /* no throttle needed: report that run */
		*out = un;
		out->converges_unthrottled = true;
	}
	out->dirty_bytes_per_s = s->win[HV_DR_10S].covered_s >= 1.0
					 ? s->win[HV_DR_10S].bytes_per_s
					 : s->win[HV_DR_1S].bytes_per_s;
	out->working_set_bytes = s->win[HV_DR_60S].working_set * 4096;
	snprintf(out->note, sizeof(out->note), "%s",
		 un.converges ? "converges without throttling"
		 : out->converges
			 ? "converges only with the auto-throttle"
			 : "does not converge even at the throttle ceiling");
	return 0;
}
