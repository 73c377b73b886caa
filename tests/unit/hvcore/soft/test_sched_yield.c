// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/sched_yield: which vCPU a directed yield picks. White box:
 * one token, the yielder A holds it; B was woken from a halt (ready, not
 * preempted) and C was preempted while runnable, both queued. The
 * baseline must pick C, the boosted policy B (first in round-robin order
 * from the last boosted), and the mark is cleared once the candidate
 * runs; a yield without a candidate returns at once.
 */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <time.h>

#include "hvcore/soft/sched_priv.h"

struct world {
	struct hv_soft_sched *s;
	struct hv_soft_sched_vcpu *a, *b, *c;
	bool yielded;
};

/* Queue @v as a waiting vCPU with the given marks (under the lock). */
static void queue(struct world *w, struct hv_soft_sched_vcpu *v, bool preempted,
		  bool ready)
{
	pthread_mutex_lock(&w->s->lock);
	v->state = SCHED_WAITING;
	v->preempted = preempted;
	v->ready = ready;
	sched_list_insert(&v->link, w->s->runq.prev, &w->s->runq);
	v->list = &w->s->runq;
	pthread_mutex_unlock(&w->s->lock);
}

static void setup(struct world *w, enum hv_soft_yield_policy pol)
{
	struct hv_soft_sched_cfg cfg = {
		.threads = 1, .slice_ns = 60000000000ULL, .policy = pol};

	CU_ASSERT_FATAL(!hv_soft_sched_create(&cfg, &w->s));
	CU_ASSERT_FATAL(!hv_soft_sched_vcpu_create(w->s, 0, &w->a));
	CU_ASSERT_FATAL(!hv_soft_sched_vcpu_create(w->s, 0, &w->b));
	CU_ASSERT_FATAL(!hv_soft_sched_vcpu_create(w->s, 0, &w->c));
	hv_soft_sched_start(w->a);
	CU_ASSERT_EQUAL(hv_soft_sched_token(w->a), 0);
	queue(w, w->b, false, true); /* woken by a kick */
	queue(w, w->c, true, true);  /* preempted */
}

/* The queued ones leave the queue first, so stopping the running one
 * hands its token to nobody. */
static void teardown(struct world *w)
{
	struct hv_soft_sched_vcpu *all[] = {w->a, w->b, w->c};

	pthread_mutex_lock(&w->s->lock);
	for (unsigned i = 0; i < 3; i++) {
		if (all[i]->state == SCHED_WAITING) {
			hv_soft_sched_unlink(all[i]);
			all[i]->state = SCHED_DONE;
		}
	}
	pthread_mutex_unlock(&w->s->lock);
	for (unsigned i = 0; i < 3; i++)
		if (hv_soft_sched_token(all[i]) >= 0)
			hv_soft_sched_stop(all[i]);
	for (unsigned i = 0; i < 3; i++)
		hv_soft_sched_vcpu_destroy(all[i]);
	hv_soft_sched_destroy(w->s);
}

static void *yielder(void *p)
{
	struct world *w = p;

	w->yielded = hv_soft_sched_yield(w->a);
	return NULL;
}

/* A yields on its own thread; returns the vCPU that got the token, then
 * lets A have it back (the candidate leaves) and joins. */
static struct hv_soft_sched_vcpu *yield_once(struct world *w)
{
	struct hv_soft_sched_vcpu *got = NULL;
	pthread_t t;

	CU_ASSERT_FATAL(!pthread_create(&t, NULL, yielder, w));
	for (unsigned n = 0; n < 5000 && !got; n++) {
		struct timespec ts = {0, 1000000};

		if (hv_soft_sched_token(w->b) == 0)
			got = w->b;
		else if (hv_soft_sched_token(w->c) == 0)
			got = w->c;
		else
			nanosleep(&ts, NULL);
	}
	CU_ASSERT_FATAL(got != NULL);
	pthread_mutex_lock(&w->s->lock);
	CU_ASSERT(!got->ready && !got->preempted);
	CU_ASSERT(w->a->preempted && w->a->ready);
	pthread_mutex_unlock(&w->s->lock);
	hv_soft_sched_stop(got); /* the token goes back to the lender */
	pthread_join(t, NULL);
	CU_ASSERT(w->yielded);
	CU_ASSERT_EQUAL(hv_soft_sched_token(w->a), 0);
	return got;
}

static void test_baseline_yields_to_preempted_not_to_woken(void)
{
	struct world w = {0};

	setup(&w, HV_SOFT_YIELD_BASELINE);
	CU_ASSERT_PTR_EQUAL(yield_once(&w), w.c);
	/* Only B (woken, never preempted) is left: no candidate. */
	CU_ASSERT(!hv_soft_sched_yield(w.a));
	teardown(&w);
}

static void test_boosted_yields_to_woken_vcpu(void)
{
	struct world w = {0};

	setup(&w, HV_SOFT_YIELD_BOOSTED);
	CU_ASSERT_PTR_EQUAL(yield_once(&w), w.b);
	teardown(&w);
}

/* Round robin from the last boosted: B was boosted last, so C is next,
 * then B again although B comes first in index order. */
static void test_boosted_scans_round_robin_from_last_boosted(void)
{
	struct world w = {0};

	setup(&w, HV_SOFT_YIELD_BOOSTED);
	pthread_mutex_lock(&w.s->lock);
	w.s->vms[0].last_boosted = w.b->idx;
	pthread_mutex_unlock(&w.s->lock);
	CU_ASSERT_PTR_EQUAL(yield_once(&w), w.c);
	CU_ASSERT_EQUAL(w.s->vms[0].last_boosted, w.c->idx);
	queue(&w, w.c, true, true); /* C runnable again, still after B */
	CU_ASSERT_PTR_EQUAL(yield_once(&w), w.b);
	teardown(&w);
}

static CU_TestInfo tests[] = {
	{"baseline_yields_to_preempted_not_to_woken",
	 test_baseline_yields_to_preempted_not_to_woken},
	{"boosted_yields_to_woken_vcpu", test_boosted_yields_to_woken_vcpu},
	{"boosted_scans_round_robin_from_last_boosted",
	 test_boosted_scans_round_robin_from_last_boosted},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/sched_yield", NULL, NULL, tests);
