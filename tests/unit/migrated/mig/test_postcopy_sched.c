// SPDX-License-Identifier: MIT
/* The source's postcopy scheduler (migrated/mig/postcopy_sched.c). */
#include "tests/harness/hv_test.h"
#include "migrated/mig/postcopy_sched.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct mig_pc_sched *sched_all(uint64_t n)
{
	uint64_t *bits = malloc((n + 63) / 64 * 8);
	struct mig_pc_sched *s;

	memset(bits, 0xff, (n + 63) / 64 * 8);
	CU_ASSERT_FATAL(mig_pc_sched_create(n, &s) == 0);
	CU_ASSERT_FATAL(mig_pc_sched_mark(s, 0, bits, n) == 0);
	free(bits);
	return s;
}

static void test_requests_go_first_in_order(void)
{
	struct mig_pc_sched *s = sched_all(1000);
	uint64_t out[8];

	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 700), 1);
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 5), 1);
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 700), 0); /* already queued */
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 8), 2);
	CU_ASSERT_EQUAL(out[0], 700);
	CU_ASSERT_EQUAL(out[1], 5);
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 8), 0);
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 1000), -ERANGE);
	mig_pc_sched_destroy(s);
}

static void test_push_continues_after_the_last_request(void)
{
	struct mig_pc_sched *s = sched_all(1000);
	uint64_t out[4];

	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 2), 2);
	CU_ASSERT_EQUAL(out[0], 0);
	CU_ASSERT_EQUAL(out[1], 1);
	/* The guest faults at 500: the stream moves there (locality). */
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 500), 1);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 3), 3);
	CU_ASSERT_EQUAL(out[0], 501);
	CU_ASSERT_EQUAL(out[2], 503);
	/* 500 is still the request's. */
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 4), 1);
	CU_ASSERT_EQUAL(out[0], 500);
	/* At the end of the map the push wraps around to what is left. */
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 999), 1);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 4), 4);
	CU_ASSERT_EQUAL(out[0], 2);
	mig_pc_sched_destroy(s);
}

static void test_request_for_a_pushed_page_sends_nothing(void)
{
	struct mig_pc_sched *s = sched_all(64);
	struct mig_pc_sched_stats st;
	uint64_t out[64];

	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 10), 1);
	/* The push takes 10 before the urgent path does: from the cursor
	 * (11) to the end of the map, then from the start. */
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 64), 53);
	CU_ASSERT_EQUAL(out[0], 11);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 64), 11);
	CU_ASSERT_EQUAL(out[10], 10);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 64), 0);
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 64), 0);
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 10), -EALREADY);
	mig_pc_sched_get_stats(s, &st);
	CU_ASSERT_EQUAL(st.pending, 0);
	CU_ASSERT_EQUAL(st.pushed, 64);
	CU_ASSERT_EQUAL(st.requested, 0);
	CU_ASSERT_EQUAL(st.late_requests, 1);
	mig_pc_sched_destroy(s);
}

static void test_only_marked_pages_are_sent(void)
{
	struct mig_pc_sched *s;
	uint64_t bits[2] = { 0x5, 0 }, out[16];

	CU_ASSERT_FATAL(mig_pc_sched_create(300, &s) == 0);
	/* A second slot at 200: its pages 0 and 2. */
	CU_ASSERT_EQUAL(mig_pc_sched_mark(s, 200, bits, 100), 0);
	CU_ASSERT_EQUAL(mig_pc_sched_mark(s, 250, bits, 100), -ERANGE);
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 201), -EALREADY);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 16), 2);
	CU_ASSERT_EQUAL(out[0], 200);
	CU_ASSERT_EQUAL(out[1], 202);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 16), 0);
	mig_pc_sched_destroy(s);
}

/*
 * The exactly-once rule under concurrency: a requester thread asks for
 * random pages while an urgent taker and two pushers drain the set; every
 * page comes out once and only once.
 */
#define CC_PAGES 200000u

struct cc {
	struct mig_pc_sched *s;
	_Atomic uint8_t *seen;
	atomic_bool stop;
	atomic_uint dup;
};

static void cc_take(struct cc *c, const uint64_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (atomic_fetch_add(&c->seen[out[i]], 1))
			atomic_fetch_add(&c->dup, 1);
}

static void *cc_push(void *arg)
{
	struct cc *c = arg;
	uint64_t out[64];
	size_t n;

	while ((n = mig_pc_sched_next_push(c->s, out, 64)))
		cc_take(c, out, n);
	return NULL;
}

static void *cc_urgent(void *arg)
{
	struct cc *c = arg;
	uint64_t out[64];

	while (!atomic_load(&c->stop))
		cc_take(c, out, mig_pc_sched_next_urgent(c->s, out, 64));
	cc_take(c, out, mig_pc_sched_next_urgent(c->s, out, 64));
	return NULL;
}

static void *cc_request(void *arg)
{
	struct cc *c = arg;
	unsigned seed = 1;

	while (!atomic_load(&c->stop))
		mig_pc_sched_request(c->s, (uint64_t)rand_r(&seed) % CC_PAGES);
	return NULL;
}

static void test_every_page_handed_out_exactly_once(void)
{
	struct cc c = { .s = sched_all(CC_PAGES) };
	struct mig_pc_sched_stats st;
	pthread_t p[2], u, r;

	c.seen = calloc(CC_PAGES, 1);
	pthread_create(&u, NULL, cc_urgent, &c);
	pthread_create(&r, NULL, cc_request, &c);
	pthread_create(&p[0], NULL, cc_push, &c);
	pthread_create(&p[1], NULL, cc_push, &c);
	pthread_join(p[0], NULL);
	pthread_join(p[1], NULL);
	atomic_store(&c.stop, true);
	pthread_join(r, NULL);
	pthread_join(u, NULL);
	CU_ASSERT_EQUAL(atomic_load(&c.dup), 0);
	for (uint64_t i = 0; i < CC_PAGES; i++)
		if (c.seen[i] != 1) {
			CU_FAIL("a page was not handed out exactly once");
			break;
		}
	mig_pc_sched_get_stats(c.s, &st);
	CU_ASSERT_EQUAL(st.pending, 0);
	CU_ASSERT_EQUAL(st.requested + st.pushed, CC_PAGES);
	free((void *)c.seen);
	mig_pc_sched_destroy(c.s);
}

/* A recovery: whatever was handed out or queued before, the pending set
 * becomes exactly what the destination says it lacks. */
static void test_reset_then_mark_is_exactly_the_new_set(void)
{
	struct mig_pc_sched *s = sched_all(1000);
	struct mig_pc_sched_stats st;
	uint64_t bits[2] = { 0 }, out[64];
	size_t n, total = 0;

	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 10), 10); /* 0..9 */
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 500), 1);
	mig_pc_sched_reset(s);
	mig_pc_sched_get_stats(s, &st);
	CU_ASSERT_EQUAL(st.pending, 0);
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 64), 0);
	CU_ASSERT_EQUAL(mig_pc_sched_next_push(s, out, 64), 0);
	CU_ASSERT_EQUAL(st.requested + st.pushed, 10); /* counters go on */
	/* The destination lacks 3 (pushed before: lost in flight), 500
	 * (asked for, never answered) and 70, in the range at 450. */
	bits[0] = 1ull << 3;
	CU_ASSERT_EQUAL(mig_pc_sched_mark(s, 0, bits, 64), 0);
	bits[0] = 1ull << 50 | 1ull << 20;
	CU_ASSERT_EQUAL(mig_pc_sched_mark(s, 450, bits, 64), 0);
	/* Asked again after the recovery: queued (it is pending again). */
	CU_ASSERT_EQUAL(mig_pc_sched_request(s, 500), 1);
	CU_ASSERT_EQUAL(mig_pc_sched_next_urgent(s, out, 64), 1);
	CU_ASSERT_EQUAL(out[0], 500);
	while ((n = mig_pc_sched_next_push(s, out + total, 64 - total)))
		total += n;
	CU_ASSERT_EQUAL(total, 2);
	CU_ASSERT(total == 2 && ((out[0] == 3 && out[1] == 470) ||
				 (out[0] == 470 && out[1] == 3)));
	mig_pc_sched_get_stats(s, &st);
	CU_ASSERT_EQUAL(st.pending, 0);
	mig_pc_sched_destroy(s);
}

static CU_TestInfo tests[] = {
	{ "reset_then_mark_is_exactly_the_new_set",
	  test_reset_then_mark_is_exactly_the_new_set },
	{ "requests_go_first_in_order", test_requests_go_first_in_order },
	{ "push_continues_after_the_last_request",
	  test_push_continues_after_the_last_request },
	{ "request_for_a_pushed_page_sends_nothing",
	  test_request_for_a_pushed_page_sends_nothing },
	{ "only_marked_pages_are_sent", test_only_marked_pages_are_sent },
	{ "every_page_handed_out_exactly_once",
	  test_every_page_handed_out_exactly_once },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/postcopy_sched", NULL, NULL, tests);
