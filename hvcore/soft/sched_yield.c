// SPDX-License-Identifier: MIT
/*
 * The directed yield of a spinning soft vCPU (hvcore/soft/sched.h), after
 * KVM's kvm_vcpu_on_spin(): scan the VM's vCPUs round robin from the one
 * boosted last, take the first candidate the policy accepts, and lend it
 * this vCPU's token for the rest of the slice.
 */
#include "hvcore/soft/sched_priv.h"

#include <sched.h>

#include "hvcore/bug.h"

/*
 * A candidate waits for a token (KVM: runnable, not running) and carries
 * the policy's mark: preempted for the baseline, ready (preempted, or
 * woken by a kick and not yet run) for the boosted policy. One flag is
 * all that differs between the two.
 */
static bool candidate(const struct hv_soft_sched *s,
		      const struct hv_soft_sched_vcpu *c)
{
	if (c->state != SCHED_WAITING)
		return false;
	return s->cfg.policy == HV_SOFT_YIELD_BOOSTED ? c->ready : c->preempted;
}

/*
 *   yielder (holds token t)            candidate c (WAITING)
 *   lock
 *   pick c; last_boosted = c
 *   release t; push self on t's lenders
 *   grant t to c (same deadline) ----> wakes holding t
 *   wait for a token                   ... runs; halts or yields:
 *                               <----  t goes back to the newest lender
 * If t's slice ends first, the lenders join the run queue's tail with c.
 */
bool hv_soft_sched_yield(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;
	struct sched_vm *g = &s->vms[v->vm];
	struct hv_soft_sched_vcpu *c = NULL;
	uint64_t now;
	unsigned t;

	pthread_mutex_lock(&s->lock);
	HV_BUG_ON(v->state != SCHED_RUNNING);
	v->st.ple_exits++;
	for (unsigned k = 1; k <= g->nr; k++) {
		unsigned i = (g->last_boosted + k) % g->nr;

		if (g->vcpu[i] != v && candidate(s, g->vcpu[i])) {
			c = g->vcpu[i];
			g->last_boosted = i;
			break;
		}
	}
	if (!c) {
		pthread_mutex_unlock(&s->lock);
		return false;
	}
	now = hv_soft_sched_now();
	v->st.yields++;
	c->st.boosted++;
	t = (unsigned)v->token;
	/* KVM's sched_out of a runnable task: preempted and ready. */
	hv_soft_sched_set_state(v, SCHED_WAITING, now);
	v->preempted = true;
	v->ready = true;
	hv_soft_sched_release(s, v);
	hv_soft_sched_unlink(c);
	sched_list_insert(&v->link, &s->tok[t].lenders, s->tok[t].lenders.next);
	v->list = &s->tok[t].lenders;
	hv_soft_sched_grant(s, t, c, now, false);
	pthread_mutex_unlock(&s->lock);
	/*
	 * The lender is runnable, as a yielder stays on its CPU's run queue
	 * in the kernel: the candidate usually halts again within
	 * microseconds and the token comes straight back, so wait for it
	 * spinning (giving the host CPU away) a little before sleeping on
	 * the condition variable, whose wake-up costs an OS scheduling
	 * latency the kernel's context switch does not have.
	 */
	for (uint64_t end = now + s->cfg.lend_spin_ns;
	     !atomic_load(&v->on_cpu) && hv_soft_sched_now() < end;)
		sched_yield();
	pthread_mutex_lock(&s->lock);
	hv_soft_sched_wait_token(s, v);
	pthread_mutex_unlock(&s->lock);
	return true;
}
