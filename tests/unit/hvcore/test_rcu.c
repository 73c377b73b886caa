// SPDX-License-Identifier: MIT
#include "hvcore/rcu.h"
#include "hvcore/types.h"
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static struct hv_rcu *rcu_new(unsigned slots)
{
	struct hv_rcu *rcu = NULL;

	CU_ASSERT_FATAL(hv_rcu_create_slots(slots, &rcu) == 0);
	return rcu;
}

/* A reader that holds a section for a while, reporting where it is. */
struct holder {
	struct hv_rcu *rcu;
	struct hv_rcu *other; /* used (and left) before the section, or NULL */
	struct hv_rcu *slot_taker; /* domain whose only slot is taken */
	unsigned hold_ms;
	bool nested;
	atomic_int entered;
	atomic_int leaving;
	atomic_int go; /* wait for this before entering */
};

static void *holder_thread(void *p)
{
	struct holder *h = p;

	while (!atomic_load(&h->go))
		sleep_ms(1);
	if (h->other) {
		hv_rcu_read_lock(h->other);
		hv_rcu_read_unlock(h->other);
	}
	hv_rcu_read_lock(h->rcu);
	if (h->nested) {
		hv_rcu_read_lock(h->rcu);
		hv_rcu_read_unlock(h->rcu);
	}
	atomic_store(&h->entered, 1);
	sleep_ms(h->hold_ms);
	atomic_store(&h->leaving, 1);
	hv_rcu_read_unlock(h->rcu);
	return NULL;
}

static void start_holder(struct holder *h, pthread_t *th)
{
	atomic_store(&h->go, 1);
	CU_ASSERT_FATAL(pthread_create(th, NULL, holder_thread, h) == 0);
	while (!atomic_load(&h->entered))
		sleep_ms(1);
}

static void test_create_refuses_bad_slot_counts(void)
{
	struct hv_rcu *rcu = (void *)0x1;

	CU_ASSERT_EQUAL(hv_rcu_create_slots(0, &rcu), -EINVAL);
	CU_ASSERT_EQUAL(hv_rcu_create_slots(HV_RCU_MAX_READERS + 1, &rcu),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(rcu, (void *)0x1);
	hv_rcu_destroy(NULL);
}

static void test_synchronize_waits_for_reader_in_section(void)
{
	struct holder h = { .rcu = rcu_new(4), .hold_ms = 100 };
	pthread_t th;

	start_holder(&h, &th);
	hv_rcu_synchronize(h.rcu);
	CU_ASSERT_EQUAL(atomic_load(&h.leaving), 1);
	pthread_join(th, NULL);
	hv_rcu_destroy(h.rcu);
}

static void test_nested_section_holds_grace_period_until_outer_unlock(void)
{
	struct holder h = { .rcu = rcu_new(4), .hold_ms = 100, .nested = true };
	pthread_t th;

	start_holder(&h, &th);
	hv_rcu_synchronize(h.rcu);
	CU_ASSERT_EQUAL(atomic_load(&h.leaving), 1);
	pthread_join(th, NULL);
	hv_rcu_destroy(h.rcu);
}

static void test_synchronize_ignores_readers_of_other_domains(void)
{
	struct hv_rcu *b = rcu_new(4);
	struct holder h = {
		.rcu = rcu_new(4), .other = b, .hold_ms = 300,
	};
	uint64_t t0;
	pthread_t th;

	start_holder(&h, &th);
	t0 = now_ms();
	hv_rcu_synchronize(b);
	/* The holder is registered with b too, but idle there. */
	CU_ASSERT_EQUAL(atomic_load(&h.leaving), 0);
	CU_ASSERT(now_ms() - t0 < 250);
	hv_rcu_synchronize(h.rcu);
	CU_ASSERT_EQUAL(atomic_load(&h.leaving), 1);
	pthread_join(th, NULL);
	hv_rcu_destroy(h.rcu);
	hv_rcu_destroy(b);
}

static void *take_slot_thread(void *p)
{
	struct holder *h = p;

	hv_rcu_read_lock(h->slot_taker);
	hv_rcu_read_unlock(h->slot_taker);
	atomic_store(&h->entered, 1);
	while (!atomic_load(&h->go))
		sleep_ms(1);
	return NULL;
}

static void test_overflow_reader_is_waited_for(void)
{
	struct hv_rcu *rcu = rcu_new(1);
	struct holder taker = { .slot_taker = rcu };
	struct holder h = { .rcu = rcu, .hold_ms = 100 };
	pthread_t t1, t2;

	CU_ASSERT_FATAL(pthread_create(&t1, NULL, take_slot_thread, &taker) ==
			0);
	while (!atomic_load(&taker.entered))
		sleep_ms(1);
	CU_ASSERT_EQUAL(hv_rcu_nr_readers(rcu), 1);
	/* The only slot is taken: this reader uses the overflow counters. */
	start_holder(&h, &t2);
	hv_rcu_synchronize(rcu);
	CU_ASSERT_EQUAL(atomic_load(&h.leaving), 1);
	pthread_join(t2, NULL);
	atomic_store(&taker.go, 1);
	pthread_join(t1, NULL);
	hv_rcu_destroy(rcu);
}

static void *use_once_thread(void *p)
{
	struct hv_rcu *rcu = p;

	hv_rcu_read_lock(rcu);
	hv_rcu_read_unlock(rcu);
	return NULL;
}

static void *use_and_exit_thread(void *p)
{
	struct hv_rcu *rcu = p;

	hv_rcu_read_lock(rcu);
	hv_rcu_read_unlock(rcu);
	hv_rcu_thread_exit(rcu);
	return (void *)(uintptr_t)hv_rcu_nr_readers(rcu);
}

static void test_thread_exit_gives_slot_back(void)
{
	struct hv_rcu *rcu = rcu_new(1);
	pthread_t th;
	void *ret;

	CU_ASSERT_FATAL(pthread_create(&th, NULL, use_and_exit_thread, rcu) ==
			0);
	pthread_join(th, &ret);
	CU_ASSERT_EQUAL((uintptr_t)ret, 0);
	/* Without hv_rcu_thread_exit(): the thread-exit hook does it. */
	CU_ASSERT_FATAL(pthread_create(&th, NULL, use_once_thread, rcu) == 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(hv_rcu_nr_readers(rcu), 0);
	hv_rcu_destroy(rcu);
}

struct reuse {
	struct hv_rcu *d1;
	struct hv_rcu *_Atomic d2;
	atomic_int registered;
	struct holder h;
};

static void *reuse_thread(void *p)
{
	struct reuse *r = p;

	hv_rcu_read_lock(r->d1);
	hv_rcu_read_unlock(r->d1);
	atomic_store(&r->registered, 1);
	while (!atomic_load(&r->d2))
		sleep_ms(1);
	r->h.rcu = atomic_load(&r->d2);
	atomic_store(&r->h.go, 1);
	holder_thread(&r->h);
	return NULL;
}

static void test_thread_outlives_domain_and_meets_its_successor(void)
{
	struct reuse r = { .d1 = rcu_new(2), .h.hold_ms = 100 };
	struct hv_rcu *d2;
	pthread_t th;

	CU_ASSERT_FATAL(pthread_create(&th, NULL, reuse_thread, &r) == 0);
	while (!atomic_load(&r.registered))
		sleep_ms(1);
	/* The thread still holds an entry for d1; d2 may reuse d1's address. */
	hv_rcu_destroy(r.d1);
	d2 = rcu_new(2);
	atomic_store(&r.d2, d2);
	while (!atomic_load(&r.h.entered))
		sleep_ms(1);
	hv_rcu_synchronize(d2);
	CU_ASSERT_EQUAL(atomic_load(&r.h.leaving), 1);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(hv_rcu_nr_readers(d2), 0);
	hv_rcu_destroy(d2);
}

static void test_thread_using_many_domains_recycles_idle_entries(void)
{
	struct hv_rcu *d[24];

	for (unsigned i = 0; i < HV_ARRAY_SIZE(d); i++) {
		d[i] = rcu_new(2);
		hv_rcu_read_lock(d[i]);
		hv_rcu_read_unlock(d[i]);
	}
	/* The oldest registrations were recycled, the newest are held. */
	CU_ASSERT_EQUAL(hv_rcu_nr_readers(d[0]), 0);
	CU_ASSERT_EQUAL(hv_rcu_nr_readers(d[HV_ARRAY_SIZE(d) - 1]), 1);
	/* Nested sections across domains still work. */
	hv_rcu_read_lock(d[0]);
	hv_rcu_read_lock(d[1]);
	hv_rcu_read_unlock(d[0]);
	hv_rcu_read_unlock(d[1]);
	for (unsigned i = 0; i < HV_ARRAY_SIZE(d); i++)
		hv_rcu_destroy(d[i]);
}

/*
 * Stress: readers dereference the current object and check it is alive
 * while a writer replaces it, waits for a grace period, poisons and frees
 * the old one. A reader that could still hold a retired object sees the
 * poison (any build), a use after free (ASan) or a race (TSan).
 */
#define OBJ_LIVE 0x11fe11fe11fe11feULL
#define OBJ_DEAD 0xdeaddeaddeaddeadULL

struct obj {
	uint64_t magic;
	uint64_t seq;
};

struct stress {
	struct hv_rcu *rcu;
	struct obj *_Atomic cur;
	atomic_int stop;
	atomic_ullong bad;
	atomic_ullong reads;
};

static void *stress_reader(void *p)
{
	struct stress *st = p;
	unsigned long long n = 0, bad = 0;

	while (!atomic_load_explicit(&st->stop, memory_order_relaxed)) {
		struct obj *o;
		uint64_t seq;

		hv_rcu_read_lock(st->rcu);
		o = atomic_load(&st->cur);
		seq = o->seq;
		for (int i = 0; i < 8; i++)
			bad += o->magic != OBJ_LIVE || o->seq != seq;
		hv_rcu_read_unlock(st->rcu);
		n++;
	}
	atomic_fetch_add(&st->reads, n);
	atomic_fetch_add(&st->bad, bad);
	return NULL;
}

static void run_stress(unsigned slots, unsigned readers, unsigned ms)
{
	struct stress st = { .rcu = rcu_new(slots) };
	pthread_t th[8];
	struct obj *o = malloc(sizeof(*o));
	uint64_t end, seq = 0;

	CU_ASSERT_FATAL(o != NULL && readers <= 8);
	*o = (struct obj){ OBJ_LIVE, seq };
	atomic_store(&st.cur, o);
	for (unsigned i = 0; i < readers; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, stress_reader,
					       &st) == 0);
	end = now_ms() + ms * hv_test_scale();
	while (now_ms() < end) {
		struct obj *old = atomic_load(&st.cur);

		o = malloc(sizeof(*o));
		CU_ASSERT_FATAL(o != NULL);
		*o = (struct obj){ OBJ_LIVE, ++seq };
		atomic_store(&st.cur, o);
		hv_rcu_synchronize(st.rcu);
		old->magic = OBJ_DEAD;
		old->seq = ~0ULL;
		free(old);
	}
	atomic_store(&st.stop, 1);
	for (unsigned i = 0; i < readers; i++)
		pthread_join(th[i], NULL);
	free(atomic_load(&st.cur));
	CU_ASSERT_EQUAL(atomic_load(&st.bad), 0);
	CU_ASSERT(atomic_load(&st.reads) > 0);
	CU_ASSERT(seq > 10);
	hv_rcu_destroy(st.rcu);
}

static void test_reader_never_sees_retired_object(void)
{
	run_stress(HV_RCU_MAX_READERS, 3, 300);
}

static void test_overflow_reader_never_sees_retired_object(void)
{
	/* One slot for three readers: two of them take the overflow path. */
	run_stress(1, 3, 300);
}

static CU_TestInfo tests[] = {
	{ "create_refuses_bad_slot_counts",
	  test_create_refuses_bad_slot_counts },
	{ "synchronize_waits_for_reader_in_section",
	  test_synchronize_waits_for_reader_in_section },
	{ "nested_section_holds_grace_period_until_outer_unlock",
	  test_nested_section_holds_grace_period_until_outer_unlock },
	{ "synchronize_ignores_readers_of_other_domains",
	  test_synchronize_ignores_readers_of_other_domains },
	{ "overflow_reader_is_waited_for",
	  test_overflow_reader_is_waited_for },
	{ "thread_exit_gives_slot_back", test_thread_exit_gives_slot_back },
	{ "thread_outlives_domain_and_meets_its_successor",
	  test_thread_outlives_domain_and_meets_its_successor },
	{ "thread_using_many_domains_recycles_idle_entries",
	  test_thread_using_many_domains_recycles_idle_entries },
	{ "reader_never_sees_retired_object",
	  test_reader_never_sees_retired_object },
	{ "overflow_reader_never_sees_retired_object",
	  test_overflow_reader_never_sees_retired_object },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/rcu", NULL, NULL, tests);
