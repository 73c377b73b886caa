// SPDX-License-Identifier: MIT
/*
 * hvcore/soft/sched: run tokens under synthetic vCPU threads that work,
 * tick, halt, kick and yield at random. Oracles kept by the test itself:
 * at every return from the scheduler the vCPU claims the token it says it
 * holds (a token claimed twice, or more vCPUs running than tokens, is a
 * violation), and every wait for a token stays within a few slices.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "hvcore/soft/sched.h"

#define SYN_VCPUS 8u
#define SYN_THREADS 2u

struct syn {
	struct hv_soft_sched *s;
	struct hv_soft_sched_vcpu *sv[SYN_VCPUS];
	_Atomic(struct hv_soft_sched_vcpu *) occupant[SYN_THREADS];
	atomic_int active;
	atomic_int violations;
	atomic_bool stop;
	unsigned halt_pct; /* share of iterations that end in a halt */
	atomic_uint_fast64_t progress[SYN_VCPUS];
	pthread_t th[SYN_VCPUS];
};

struct syn_arg {
	struct syn *y;
	unsigned i;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Back from the scheduler: claim the token. */
static void enter(struct syn *y, struct hv_soft_sched_vcpu *v)
{
	int t = hv_soft_sched_token(v);
	struct hv_soft_sched_vcpu *none = NULL;

	if (t < 0 || t >= (int)SYN_THREADS ||
	    !atomic_compare_exchange_strong(&y->occupant[t], &none, v))
		atomic_fetch_add(&y->violations, 1);
	if (atomic_fetch_add(&y->active, 1) + 1 > (int)SYN_THREADS)
		atomic_fetch_add(&y->violations, 1);
}

/* Into the scheduler: give the claim up. */
static void leave(struct syn *y, struct hv_soft_sched_vcpu *v)
{
	int t = hv_soft_sched_token(v);
	struct hv_soft_sched_vcpu *me = v;

	atomic_fetch_sub(&y->active, 1);
	if (t < 0 || t >= (int)SYN_THREADS ||
	    !atomic_compare_exchange_strong(&y->occupant[t], &me, NULL))
		atomic_fetch_add(&y->violations, 1);
}

static void *syn_vcpu(void *p)
{
	struct syn_arg *a = p;
	struct syn *y = a->y;
	unsigned i = a->i;
	struct hv_soft_sched_vcpu *v = y->sv[i];
	unsigned seed = 0x1234 + i;

	free(a);
	hv_soft_sched_start(v);
	enter(y, v);
	while (!atomic_load(&y->stop)) {
		unsigned r = rand_r(&seed) % 100;
		uint64_t until = now_ns() + 20000 + rand_r(&seed) % 50000;

		/* Work, passing access points. */
		while (now_ns() < until) {
			leave(y, v);
			hv_soft_sched_tick(v);
			enter(y, v);
		}
		atomic_fetch_add(&y->progress[i], 1);
		hv_soft_sched_kick(y->sv[rand_r(&seed) % SYN_VCPUS]);
		leave(y, v);
		if (r < y->halt_pct)
			hv_soft_sched_halt(v);
		else if (r < y->halt_pct + 25)
			hv_soft_sched_yield(v);
		enter(y, v);
	}
	leave(y, v);
	hv_soft_sched_stop(v);
	return NULL;
}

/*
 * Run the synthetic vCPUs for @ms under @pol; the control thread kicks
 * one vCPU every 200 us (a timer interrupt), so halts always end.
 */
static void syn_run(enum hv_soft_yield_policy pol, unsigned ms, struct syn *y,
		    struct hv_soft_sched_vcpu_stats *st)
{
	struct hv_soft_sched_cfg cfg = {
		.threads = SYN_THREADS, .slice_ns = 1000000, .policy = pol};
	uint64_t end;
	unsigned k = 0;

	CU_ASSERT_FATAL(!hv_soft_sched_create(&cfg, &y->s));
	for (unsigned i = 0; i < SYN_VCPUS; i++)
		CU_ASSERT_FATAL(
			!hv_soft_sched_vcpu_create(y->s, i % 2, &y->sv[i]));
	for (unsigned i = 0; i < SYN_VCPUS; i++) {
		struct syn_arg *a = malloc(sizeof(*a));

		CU_ASSERT_FATAL(a != NULL);
		a->y = y;
		a->i = i;
		CU_ASSERT_FATAL(!pthread_create(&y->th[i], NULL, syn_vcpu, a));
	}
	end = now_ns() + ms * 1000000ULL;
	while (now_ns() < end) {
		struct timespec ts = {0, 200000};

		nanosleep(&ts, NULL);
		hv_soft_sched_kick(y->sv[k++ % SYN_VCPUS]);
	}
	atomic_store(&y->stop, true);
	for (unsigned i = 0; i < SYN_VCPUS; i++) {
		/* Halted ones need a kick to see the stop. */
		for (;;) {
			struct timespec ts;

			for (unsigned j = 0; j < SYN_VCPUS; j++)
				hv_soft_sched_kick(y->sv[j]);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 5000000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (!pthread_timedjoin_np(y->th[i], NULL, &ts))
				break;
		}
	}
	for (unsigned i = 0; i < SYN_VCPUS; i++) {
		hv_soft_sched_vcpu_get_stats(y->sv[i], &st[i]);
		hv_soft_sched_vcpu_destroy(y->sv[i]);
	}
}

static void test_never_more_vcpus_running_than_tokens_nor_a_token_twice(void)
{
	static const enum hv_soft_yield_policy pols[] = {HV_SOFT_YIELD_BASELINE,
							 HV_SOFT_YIELD_BOOSTED};

	for (unsigned p = 0; p < 2; p++) {
		struct hv_soft_sched_vcpu_stats st[SYN_VCPUS];
		struct hv_soft_sched_stats ss;
		struct syn *y = calloc(1, sizeof(*y));
		uint64_t yields = 0, halts = 0;

		CU_ASSERT_FATAL(y != NULL);
		y->halt_pct = 15;
		syn_run(pols[p], 600, y, st);
		hv_soft_sched_get_stats(y->s, &ss);
		CU_ASSERT_EQUAL(atomic_load(&y->violations), 0);
		CU_ASSERT_EQUAL(ss.violations, 0);
		CU_ASSERT(ss.max_running <= SYN_THREADS);
		for (unsigned i = 0; i < SYN_VCPUS; i++) {
			yields += st[i].yields;
			halts += st[i].halts;
		}
		/* The oracle saw every path: yields, halts, preemptions. */
		CU_ASSERT(yields > 0);
		CU_ASSERT(halts > 0);
		hv_soft_sched_destroy(y->s);
		free(y);
	}
}

/*
 * Bounded wait: with 8 vCPUs on 2 tokens and 1 ms slices, a runnable vCPU
 * waits a few slices (lending never carries a token past its slice), plus
 * whatever the host's own scheduler adds on a loaded machine (a token
 * holder descheduled by the kernel does not tick). No halts here, so only
 * slice expiry and yields move tokens: a vCPU that the scheduler starves
 * waits for most of the second. 300 ms is far from both.
 */
static void test_no_vcpu_waits_more_than_a_few_slices_under_boost(void)
{
	struct hv_soft_sched_vcpu_stats st[SYN_VCPUS];
	struct syn *y = calloc(1, sizeof(*y));

	CU_ASSERT_FATAL(y != NULL);
	y->halt_pct = 0;
	syn_run(HV_SOFT_YIELD_BOOSTED, 1000, y, st);
	for (unsigned i = 0; i < SYN_VCPUS; i++) {
		if (st[i].max_wait_ns >= 300000000ULL)
			printf("\nvCPU %u waited %.1f ms\n", i,
			       st[i].max_wait_ns / 1e6);
		CU_ASSERT(st[i].max_wait_ns < 300000000ULL);
		CU_ASSERT(atomic_load(&y->progress[i]) > 0);
		CU_ASSERT(st[i].preemptions > 0);
	}
	hv_soft_sched_destroy(y->s);
	free(y);
}

/* Kicks are never lost: a halt after a kick returns at once, and a kick
 * of a halted vCPU wakes it. Two vCPUs ping-pong 2000 times. */
struct pingpong {
	struct hv_soft_sched_vcpu *a, *b;
	atomic_uint turn;
};

static void *pong(void *p)
{
	struct pingpong *pp = p;

	hv_soft_sched_start(pp->b);
	for (unsigned n = 0; n < 2000; n++) {
		while (atomic_load(&pp->turn) != 2 * n + 1)
			hv_soft_sched_halt(pp->b);
		atomic_store(&pp->turn, 2 * n + 2);
		hv_soft_sched_kick(pp->a);
	}
	hv_soft_sched_stop(pp->b);
	return NULL;
}

static void test_kick_of_a_halting_vcpu_is_never_lost(void)
{
	struct hv_soft_sched_cfg cfg = {.threads = 1,
					.slice_ns = 1000000,
					.policy = HV_SOFT_YIELD_BOOSTED};
	struct hv_soft_sched_vcpu_stats st;
	struct hv_soft_sched *s;
	struct pingpong pp = {0};
	struct timespec ts;
	pthread_t t;

	CU_ASSERT_FATAL(!hv_soft_sched_create(&cfg, &s));
	CU_ASSERT_FATAL(!hv_soft_sched_vcpu_create(s, 0, &pp.a));
	CU_ASSERT_FATAL(!hv_soft_sched_vcpu_create(s, 0, &pp.b));
	hv_soft_sched_start(pp.a);
	CU_ASSERT_FATAL(!pthread_create(&t, NULL, pong, &pp));
	for (unsigned n = 0; n < 2000; n++) {
		atomic_store(&pp.turn, 2 * n + 1);
		hv_soft_sched_kick(pp.b);
		while (atomic_load(&pp.turn) != 2 * n + 2)
			hv_soft_sched_halt(pp.a);
	}
	hv_soft_sched_stop(pp.a);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	CU_ASSERT_FATAL(!pthread_timedjoin_np(t, NULL, &ts));
	hv_soft_sched_vcpu_get_stats(pp.b, &st);
	CU_ASSERT(st.wakeups > 0);
	hv_soft_sched_vcpu_destroy(pp.a);
	hv_soft_sched_vcpu_destroy(pp.b);
	hv_soft_sched_destroy(s);
}

static void test_create_refuses_bad_config(void)
{
	struct hv_soft_sched_cfg cfg = {.threads = 0,
					.slice_ns = 1000,
					.policy = HV_SOFT_YIELD_BASELINE};
	struct hv_soft_sched *s = (struct hv_soft_sched *)&cfg;

	CU_ASSERT_EQUAL(hv_soft_sched_create(&cfg, &s), -EINVAL);
	cfg.threads = HV_SOFT_SCHED_MAX_THREADS + 1;
	CU_ASSERT_EQUAL(hv_soft_sched_create(&cfg, &s), -EINVAL);
	cfg.threads = 2;
	cfg.slice_ns = 0;
	CU_ASSERT_EQUAL(hv_soft_sched_create(&cfg, &s), -EINVAL);
	cfg.slice_ns = 1000;
	cfg.policy = HV_SOFT_YIELD_INVALID;
	CU_ASSERT_EQUAL(hv_soft_sched_create(&cfg, &s), -EINVAL);
	/* *out untouched on failure */
	CU_ASSERT_PTR_EQUAL(s, (struct hv_soft_sched *)&cfg);
}

static CU_TestInfo tests[] = {
	{"never_more_vcpus_running_than_tokens_nor_a_token_twice",
	 test_never_more_vcpus_running_than_tokens_nor_a_token_twice},
	{"no_vcpu_waits_more_than_a_few_slices_under_boost",
	 test_no_vcpu_waits_more_than_a_few_slices_under_boost},
	{"kick_of_a_halting_vcpu_is_never_lost",
	 test_kick_of_a_halting_vcpu_is_never_lost},
	{"create_refuses_bad_config", test_create_refuses_bad_config},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/sched", NULL, NULL, tests);
