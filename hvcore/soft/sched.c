// SPDX-License-Identifier: MIT
/*
 * The run-token scheduler of overcommitted soft vCPUs
 * (hvcore/soft/sched.h): tokens, slices, the run queue, halt and kick,
 * time accounting. The directed yield is in hvcore/soft/sched_yield.c.
 */
#include "hvcore/soft/sched_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "hvcore/bug.h"

uint64_t hv_soft_sched_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int hv_soft_sched_create(const struct hv_soft_sched_cfg *cfg,
			 struct hv_soft_sched **out)
{
	struct hv_soft_sched *s;

	if (!cfg->threads || cfg->threads > HV_SOFT_SCHED_MAX_THREADS ||
	    !cfg->slice_ns ||
	    (cfg->policy != HV_SOFT_YIELD_BASELINE &&
	     cfg->policy != HV_SOFT_YIELD_BOOSTED))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	pthread_mutex_init(&s->lock, NULL);
	sched_list_init(&s->runq);
	for (unsigned t = 0; t < HV_SOFT_SCHED_MAX_THREADS; t++)
		sched_list_init(&s->tok[t].lenders);
	*out = s;
	return 0;
}

void hv_soft_sched_destroy(struct hv_soft_sched *s)
{
	if (!s)
		return;
	for (unsigned m = 0; m < HV_SOFT_SCHED_MAX_VMS; m++)
		HV_BUG_ON(s->vms[m].nr);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int hv_soft_sched_vcpu_create(struct hv_soft_sched *s, unsigned vm,
			      struct hv_soft_sched_vcpu **out)
{
	struct hv_soft_sched_vcpu *v;
	struct sched_vm *g;

	if (vm >= HV_SOFT_SCHED_MAX_VMS)
		return -EINVAL;
	g = &s->vms[vm];
	if (g->nr == HV_SOFT_SCHED_MAX_VCPUS)
		return -ENOSPC;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->s = s;
	v->vm = vm;
	v->token = -1;
	pthread_cond_init(&v->cond, NULL);
	pthread_mutex_lock(&s->lock);
	v->idx = g->nr;
	g->vcpu[g->nr++] = v;
	pthread_mutex_unlock(&s->lock);
	*out = v;
	return 0;
}

void hv_soft_sched_vcpu_destroy(struct hv_soft_sched_vcpu *v)
{
	struct sched_vm *g;

	if (!v)
		return;
	g = &v->s->vms[v->vm];
	pthread_mutex_lock(&v->s->lock);
	HV_BUG_ON(v->state != SCHED_NEW && v->state != SCHED_DONE);
	/* Keep the others' indices: the last one takes the free place. */
	g->vcpu[v->idx] = g->vcpu[--g->nr];
	g->vcpu[v->idx]->idx = v->idx;
	g->last_boosted = 0;
	pthread_mutex_unlock(&v->s->lock);
	pthread_cond_destroy(&v->cond);
	free(v);
}

void hv_soft_sched_charge(struct hv_soft_sched_vcpu *v, uint64_t now)
{
	unsigned b;

	switch (v->state) {
	case SCHED_RUNNING:
		b = v->act;
		break;
	case SCHED_BLOCKED:
		b = HV_SOFT_SCHED_T_HALTED;
		break;
	case SCHED_WAITING:
		b = HV_SOFT_SCHED_T_WAITING;
		break;
	default:
		v->t_mark = now;
		return;
	}
	if (now > v->t_mark)
		v->st.ns[b] += now - v->t_mark;
	v->t_mark = now;
}

void hv_soft_sched_set_state(struct hv_soft_sched_vcpu *v, enum sched_state st,
			     uint64_t now)
{
	hv_soft_sched_charge(v, now);
	if (v->state == SCHED_WAITING && now > v->wait_start &&
	    now - v->wait_start > v->st.max_wait_ns)
		v->st.max_wait_ns = now - v->wait_start;
	if (st == SCHED_WAITING)
		v->wait_start = now;
	v->state = st;
}

void hv_soft_sched_unlink(struct hv_soft_sched_vcpu *v)
{
	if (!v->list)
		return;
	v->link.prev->next = v->link.next;
	v->link.next->prev = v->link.prev;
	v->list = NULL;
}

static void runq_append(struct hv_soft_sched *s, struct hv_soft_sched_vcpu *v)
{
	sched_list_insert(&v->link, s->runq.prev, &s->runq);
	v->list = &s->runq;
}

void hv_soft_sched_grant(struct hv_soft_sched *s, unsigned t,
			 struct hv_soft_sched_vcpu *v, uint64_t now, bool fresh)
{
	struct sched_token *tok = &s->tok[t];

	HV_BUG_ON(v->state != SCHED_WAITING || tok->holder);
	hv_soft_sched_unlink(v);
	hv_soft_sched_set_state(v, SCHED_RUNNING, now);
	/* KVM's sched_in: the vCPU runs, so it is no candidate any more. */
	v->preempted = false;
	v->ready = false;
	v->token = (int)t;
	tok->holder = v;
	if (fresh)
		tok->deadline = now + s->cfg.slice_ns;
	/* The oracle: counted apart from the fields the logic uses. */
	if (atomic_fetch_add(&tok->users, 1) != 0)
		s->st.violations++;
	if (atomic_exchange(&v->on_cpu, 1) != 0)
		s->st.violations++;
	if (++s->running > s->cfg.threads)
		s->st.violations++;
	if (s->running > s->st.max_running)
		s->st.max_running = s->running;
	s->st.grants++;
	pthread_cond_signal(&v->cond);
}

unsigned hv_soft_sched_release(struct hv_soft_sched *s,
			       struct hv_soft_sched_vcpu *v)
{
	unsigned t = (unsigned)v->token;

	HV_BUG_ON(v->token < 0 || s->tok[t].holder != v);
	atomic_fetch_sub(&s->tok[t].users, 1);
	atomic_store(&v->on_cpu, 0);
	s->running--;
	s->tok[t].holder = NULL;
	v->token = -1;
	return t;
}

/* Token @t is free: the newest lender gets it back for the rest of the
 * slice, else the run queue's head with a fresh one. */
static void pass(struct hv_soft_sched *s, unsigned t, uint64_t now)
{
	struct sched_token *tok = &s->tok[t];

	if (!sched_list_empty(&tok->lenders)) {
		s->st.lends_back++;
		hv_soft_sched_grant(s, t, sched_vcpu_of(tok->lenders.next), now,
				    false);
	} else if (!sched_list_empty(&s->runq))
		hv_soft_sched_grant(s, t, sched_vcpu_of(s->runq.next), now,
				    true);
}

void hv_soft_sched_put_token(struct hv_soft_sched *s,
			     struct hv_soft_sched_vcpu *v)
{
	pass(s, hv_soft_sched_release(s, v), hv_soft_sched_now());
}

void hv_soft_sched_wait_token(struct hv_soft_sched *s,
			      struct hv_soft_sched_vcpu *v)
{
	while (v->token < 0)
		pthread_cond_wait(&v->cond, &s->lock);
	v->deadline = s->tok[v->token].deadline;
}

/* A runnable vCPU without a token: a free token, else the queue. */
static void make_runnable(struct hv_soft_sched *s, struct hv_soft_sched_vcpu *v,
			  uint64_t now)
{
	for (unsigned t = 0; t < s->cfg.threads; t++) {
		if (!s->tok[t].holder) {
			hv_soft_sched_grant(s, t, v, now, true);
			return;
		}
	}
	runq_append(s, v);
}

void hv_soft_sched_start(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;
	uint64_t now;

	pthread_mutex_lock(&s->lock);
	now = hv_soft_sched_now();
	HV_BUG_ON(v->state != SCHED_NEW);
	v->t_mark = now;
	hv_soft_sched_set_state(v, SCHED_WAITING, now);
	make_runnable(s, v, now);
	hv_soft_sched_wait_token(s, v);
	pthread_mutex_unlock(&s->lock);
}

void hv_soft_sched_stop(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;

	pthread_mutex_lock(&s->lock);
	hv_soft_sched_set_state(v, SCHED_DONE, hv_soft_sched_now());
	hv_soft_sched_put_token(s, v);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Slice expiry with someone waiting: the holder and the vCPUs that lent
 * it this slice go to the queue's tail (oldest lender first), and the
 * head gets the token with a fresh slice. Lenders never keep a token past
 * its slice, which is what bounds every wait.
 */
void hv_soft_sched_tick(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;
	struct sched_token *tok;
	uint64_t now = hv_soft_sched_now();
	unsigned t;

	if (now < v->deadline)
		return;
	pthread_mutex_lock(&s->lock);
	/* Under the lock: every time the scheduler records is read under
	 * it, so no wait ends before it began. */
	now = hv_soft_sched_now();
	t = (unsigned)v->token;
	tok = &s->tok[t];
	if (sched_list_empty(&s->runq) && sched_list_empty(&tok->lenders)) {
		tok->deadline = now + s->cfg.slice_ns;
		v->deadline = tok->deadline;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	hv_soft_sched_set_state(v, SCHED_WAITING, now);
	v->preempted = true;
	v->ready = true;
	v->st.preemptions++;
	hv_soft_sched_release(s, v);
	while (!sched_list_empty(&tok->lenders)) {
		struct hv_soft_sched_vcpu *l = sched_vcpu_of(tok->lenders.prev);

		hv_soft_sched_unlink(l);
		runq_append(s, l);
		s->st.lends_flushed++;
	}
	runq_append(s, v);
	hv_soft_sched_grant(s, t, sched_vcpu_of(s->runq.next), now, true);
	hv_soft_sched_wait_token(s, v);
	pthread_mutex_unlock(&s->lock);
}

void hv_soft_sched_halt(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;

	pthread_mutex_lock(&s->lock);
	if (v->kick_pending) {
		v->kick_pending = false;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	hv_soft_sched_set_state(v, SCHED_BLOCKED, hv_soft_sched_now());
	v->st.halts++;
	hv_soft_sched_put_token(s, v);
	hv_soft_sched_wait_token(s, v);
	pthread_mutex_unlock(&s->lock);
}

/* KVM's kvm_vcpu_wake_up(): a halted vCPU becomes runnable and ready;
 * its preempted mark stays clear, so only the boosted policy sees it. */
void hv_soft_sched_kick(struct hv_soft_sched_vcpu *v)
{
	struct hv_soft_sched *s = v->s;
	uint64_t now;

	pthread_mutex_lock(&s->lock);
	if (v->state == SCHED_BLOCKED) {
		now = hv_soft_sched_now();
		hv_soft_sched_set_state(v, SCHED_WAITING, now);
		v->ready = true;
		v->st.wakeups++;
		make_runnable(s, v, now);
	} else if (v->state != SCHED_DONE) {
		v->kick_pending = true;
	}
	pthread_mutex_unlock(&s->lock);
}

unsigned hv_soft_sched_set_act(struct hv_soft_sched_vcpu *v, unsigned act)
{
	unsigned prev = v->act;

	HV_BUG_ON(act >= HV_SOFT_SCHED_NR_ACT);
	hv_soft_sched_charge(v, hv_soft_sched_now());
	v->act = act;
	return prev;
}

int hv_soft_sched_token(struct hv_soft_sched_vcpu *v)
{
	int t;

	pthread_mutex_lock(&v->s->lock);
	t = v->token;
	pthread_mutex_unlock(&v->s->lock);
	return t;
}

void hv_soft_sched_vcpu_get_stats(struct hv_soft_sched_vcpu *v,
				  struct hv_soft_sched_vcpu_stats *st)
{
	pthread_mutex_lock(&v->s->lock);
	*st = v->st;
	pthread_mutex_unlock(&v->s->lock);
}

void hv_soft_sched_get_stats(struct hv_soft_sched *s,
			     struct hv_soft_sched_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}
