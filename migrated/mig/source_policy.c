// SPDX-License-Identifier: MIT
/*
 * The source's switch policy (session.h, policy.h): after each precopy
 * pass, whether to end precopy now and how -- the model's switchover, an
 * operator's forced switchover, postcopy by request, by time or by the
 * model (postcopy auto), and what the time limit running out does --
 * and the progress estimate (eta.h). The decisions themselves are the
 * pure functions of converge.h and policy.h; this file applies them and
 * records why.
 */
#include <errno.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/mig/policy.h"
#include "migrated/mig/source_priv.h"

bool mig__src_may_postcopy(const struct mig_source *s)
{
	return s->opts.postcopy || s->opts.postcopy_auto ||
	       s->opts.timeout_policy == MIG_TIMEOUT_POSTCOPY;
}

uint32_t mig__src_throttle_cap(struct mig_source *s)
{
	uint32_t cap = atomic_load(&s->throttle_max);
	uint32_t lim = s->opts.postcopy_throttle_max_pct
			       ? s->opts.postcopy_throttle_max_pct
			       : MIG_PC_THROTTLE_LIMIT_DEFAULT;

	if (s->opts.postcopy_auto && atomic_load(&s->pc_offered))
		return HV_MIN(cap, lim);
	return cap;
}

int mig__src_pass_cut(struct mig_source *s)
{
	if (s->paused)
		return s->deadline && mig__now_ns() > s->deadline &&
				       s->opts.timeout_policy ==
					       MIG_TIMEOUT_ABORT
			       ? -ETIMEDOUT
			       : 0;
	if (atomic_load(&s->so_request))
		return 1;
	if (s->deadline && mig__now_ns() > s->deadline)
		return s->opts.timeout_policy == MIG_TIMEOUT_ABORT ? -ETIMEDOUT
								   : 1;
	return 0;
}

static void record(struct mig_source *s, enum mig_switch_cause cause,
		   const struct mig_conv_in *in, double exp_ms,
		   uint32_t needed, uint32_t limit, double unthrottled)
{
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.why = (struct mig_switch_why){
		.cause = cause,
		.needed_throttle_pct = needed,
		.throttle_limit_pct = limit,
		.bandwidth = (uint64_t)in->bandwidth,
		.dirty_rate = (uint64_t)unthrottled,
		.remaining_bytes = in->remaining_bytes,
		.expected_downtime_ns =
			exp_ms >= 0 ? (uint64_t)(exp_ms * 1e6) : 0,
		.at_ns = mig__now_ns() - s->t0,
	};
	pthread_mutex_unlock(&s->prog.lock);
}

static const char *cause_name(enum mig_switch_cause c)
{
	switch (c) {
	case MIG_SWITCH_POSTCOPY_REQUEST:
		return "postcopy_request";
	case MIG_SWITCH_POSTCOPY_AFTER:
		return "postcopy_after";
	case MIG_SWITCH_POSTCOPY_AUTO:
		return "postcopy_auto";
	case MIG_SWITCH_POSTCOPY_TIMEOUT:
		return "timeout_postcopy";
	case MIG_SWITCH_FORCED:
		return "forced_switchover";
	case MIG_SWITCH_TIMEOUT:
		return "timeout_switchover";
	default:
		return "none";
	}
}

/* The auto-switch model (policy.h) on this pass's figures. */
static struct mig_pc_auto_out pc_auto(const struct mig_source *s,
				      const struct mig_conv_in *in,
				      bool offered)
{
	struct mig_pc_auto_in ai = {
		.remaining_bytes = in->remaining_bytes,
		.bandwidth = in->bandwidth,
		.dirty_rate = in->dirty_rate,
		.throttle_pct = in->throttle_pct,
		.downtime_ms = in->downtime_ms,
		.throttle_limit_pct = s->opts.postcopy_throttle_max_pct,
		.pc_offered = offered,
	};

	return mig_pc_auto(&ai);
}

/* End precopy for @cause: postcopy or a switchover whatever it costs. */
static int end_precopy(struct mig_source *s, enum mig_switch_cause cause,
		       const struct mig_conv_in *in,
		       const struct mig_conv_out *out, uint32_t iter)
{
	struct mig_pc_auto_out ao = pc_auto(s, in, true);

	record(s, cause, in, out->expected_downtime_ms, ao.needed_pct,
	       ao.limit_pct, ao.unthrottled_rate);
	s->pc_go = cause == MIG_SWITCH_POSTCOPY_REQUEST ||
		   cause == MIG_SWITCH_POSTCOPY_AFTER ||
		   cause == MIG_SWITCH_POSTCOPY_AUTO ||
		   cause == MIG_SWITCH_POSTCOPY_TIMEOUT;
	/* Past the decision the time limit no longer applies: finishing
	 * now is what was asked for, and a postcopy cannot roll back. */
	s->deadline = 0;
	hv_info("mig",
		"op=end_precopy vm=%s cause=%s to=%s iter=%u "
		"needed_throttle=%u throttle_limit=%u throttle=%u "
		"bw=%.0f dirty_unthrottled=%.0f remaining=%llu "
		"expected_downtime_ms=%.1f downtime_limit_ms=%u",
		hv_vm_name(s->vm), cause_name(cause),
		s->pc_go ? "postcopy" : "switchover", iter, ao.needed_pct,
		ao.limit_pct, in->throttle_pct, in->bandwidth,
		ao.unthrottled_rate, (unsigned long long)in->remaining_bytes,
		out->expected_downtime_ms, in->downtime_ms);
	return 1;
}

int mig__src_policy_after_pass(struct mig_source *s, const struct mig_conv_in *in,
			  const struct mig_conv_out *out, uint32_t iter)
{
	bool offered = atomic_load(&s->pc_offered);

	if (out->action == MIG_CONV_SWITCHOVER)
		return 1;
	if (atomic_load(&s->so_request))
		return end_precopy(s, MIG_SWITCH_FORCED, in, out, iter);
	if (mig__src_pc_due(s))
		return end_precopy(s,
				   atomic_load(&s->pc_request)
					   ? MIG_SWITCH_POSTCOPY_REQUEST
					   : MIG_SWITCH_POSTCOPY_AFTER,
				   in, out, iter);
	if (s->opts.postcopy_auto) {
		struct mig_pc_auto_out ao = pc_auto(s, in, offered);

		if (ao.do_switch)
			return end_precopy(s, MIG_SWITCH_POSTCOPY_AUTO, in,
					   out, iter);
	}
	if (!s->deadline || mig__now_ns() <= s->deadline)
		return 0;
	switch (mig_timeout_action(s->opts.timeout_policy, offered)) {
	case MIG_TOA_SWITCHOVER:
		return end_precopy(s, MIG_SWITCH_TIMEOUT, in, out, iter);
	case MIG_TOA_POSTCOPY:
		return end_precopy(s, MIG_SWITCH_POSTCOPY_TIMEOUT, in, out,
				   iter);
	case MIG_TOA_ABORT_NO_POSTCOPY:
		FAIL(s, -ETIMEDOUT,
		     "time limit of %u ms reached (iteration %u, throttle "
		     "%u%%) and the destination does not offer postcopy "
		     "(timeout policy postcopy): aborted, the VM runs on the "
		     "source",
		     s->opts.timeout_ms, iter, in->throttle_pct);
	default:
		FAIL(s, -ETIMEDOUT,
		     "could not converge within %u ms (iteration %u, "
		     "throttle %u%%): the VM runs on the source; "
		     SRC_TIMEOUT_NEXT,
		     s->opts.timeout_ms, iter, in->throttle_pct);
	}
}

void mig__src_prog_estimate(struct mig_source *s, uint64_t now_ns)
{
	struct mig_progress *p = &s->prog.p;
	double bw = s->bw_pages;
	uint64_t raw;

	if (p->phase == MIG_PHASE_COMPLETED) {
		p->percent = 100;
		p->eta_ns = 0;
		return;
	}
	p->percent = mig_eta_percent(&s->eta, p->remaining_bytes);
	if (p->phase != MIG_PHASE_ITERATE && p->phase != MIG_PHASE_SETUP) {
		/* Switchover, commit, postcopy: precopy's model no longer
		 * applies; a finished one has nothing left. */
		p->eta_ns = 0;
		return;
	}
	/* The first pass has no measured bandwidth yet: its average. */
	if (bw <= 0 && p->elapsed_ns && p->pages_sent)
		bw = (double)(p->pages_sent << HV_PAGE_SHIFT) * 1e9 /
		     (double)p->elapsed_ns;
	raw = mig_eta_raw_ns(p->remaining_bytes, bw, (double)s->dirty_rate,
			     p->throttle_pct < mig__src_throttle_cap(s),
			     p->expected_downtime_ns);
	p->eta_ns = mig_eta_update(&s->eta, now_ns, raw);
}

int mig_source_switchover(struct mig_source *s)
{
	struct mig_progress p;

	mig__prog_get(&s->prog, &p);
	if (p.phase != MIG_PHASE_SETUP && p.phase != MIG_PHASE_ITERATE)
		return -EALREADY;
	atomic_store(&s->so_request, true);
	return 0;
}
