// SPDX-License-Identifier: MIT
/*
 * hvcore/wl_sync: the guest-side spinlock, mutex and synchronous call on
 * plain threads (guest memory is a flat buffer, a halt is a semaphore
 * wait and an IPI its post, so a kick before the halt is kept). Mutual
 * exclusion is checked with unguarded read-modify-writes in guest memory;
 * calls that cross (every thread sends to every other) must all complete;
 * a spinner takes a pause-loop exit every ple_spins spins.
 */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/wl_sync.h"

#define CPUS 4u
#define AREA 0x1000ULL
#define COUNTERS 0x3000ULL /* [0] spinlock-guarded, [1] mutex-guarded */
#define ITERS 3000u

struct guest {
	uint8_t *mem; /* 16 KiB, gpa = offset */
	sem_t irq[CPUS];
	atomic_uint ple[CPUS];
	atomic_bool release; /* for the PLE test */
};

struct cpu {
	struct guest *g;
	unsigned id;
	struct hv_wl_sync_env env;
	struct hv_wl_sync_cpu c;
};

static uint8_t *pw(void *ctx, uint64_t gpa)
{
	return ((struct cpu *)ctx)->g->mem + gpa;
}

static const uint8_t *pr(void *ctx, uint64_t gpa)
{
	return ((struct cpu *)ctx)->g->mem + gpa;
}

static void ple(void *ctx)
{
	struct cpu *c = ctx;

	atomic_fetch_add(&c->g->ple[c->id], 1);
	sched_yield();
}

static void ipi(void *ctx, uint32_t t)
{
	sem_post(&((struct cpu *)ctx)->g->irq[t]);
}

static void halt(void *ctx)
{
	struct cpu *c = ctx;

	sem_wait(&c->g->irq[c->id]);
}

static void cpu_init(struct cpu *c, struct guest *g, unsigned id)
{
	c->g = g;
	c->id = id;
	c->env = (struct hv_wl_sync_env){.ctx = c,
					 .page_for_write = pw,
					 .page_for_read = pr,
					 .ple_exit = ple,
					 .send_ipi = ipi,
					 .halt = halt,
					 .ple_spins = 16};
	c->c = (struct hv_wl_sync_cpu){
		.env = &c->env, .area_gpa = AREA, .id = id};
}

/* An unguarded increment with a window between the read and the write:
 * even on one core, another thread runs inside it unless the lock keeps
 * it out. */
static void bump(struct hv_wl_sync_cpu *c, unsigned i)
{
	volatile uint64_t *p =
		(volatile uint64_t *)hv_wl_sync_access(c, COUNTERS + 8 * i, 1);
	uint64_t v = *p;

	sched_yield(); /* let another thread in, if the lock would */
	*p = v + 1;
}

static void *worker(void *p)
{
	struct cpu *c = p;
	uint64_t spin = AREA + __builtin_offsetof(struct hv_wl_sync_area, spin);

	for (unsigned n = 1; n <= ITERS; n++) {
		hv_wl_spin_lock(&c->c, spin);
		bump(&c->c, 0);
		hv_wl_spin_unlock(&c->c, spin);
		if (n % 4 == 0) {
			CU_ASSERT_EQUAL(hv_wl_mutex_lock(&c->c, 8), 0);
			bump(&c->c, 1);
			hv_wl_mutex_unlock(&c->c);
		}
		if (n % 7 == 0)
			hv_wl_call_many(&c->c, ~0ULL);
	}
	hv_wl_sync_idle_until_all_finished(&c->c);
	hv_wl_sync_offline(&c->c);
	return NULL;
}

static struct guest *guest_new(void)
{
	struct guest *g = calloc(1, sizeof(*g));

	CU_ASSERT_FATAL(g != NULL);
	g->mem = aligned_alloc(4096, 16384);
	CU_ASSERT_FATAL(g->mem != NULL);
	memset(g->mem, 0, 16384);
	for (unsigned i = 0; i < CPUS; i++)
		sem_init(&g->irq[i], 0, 0);
	CU_ASSERT_FATAL(!hv_wl_sync_area_init(
		(struct hv_wl_sync_area *)(g->mem + AREA), CPUS));
	return g;
}

static void guest_free(struct guest *g)
{
	for (unsigned i = 0; i < CPUS; i++)
		sem_destroy(&g->irq[i]);
	free(g->mem);
	free(g);
}

static void test_locks_exclude_and_crossing_calls_complete(void)
{
	struct guest *g = guest_new();
	struct cpu c[CPUS];
	pthread_t t[CPUS];
	const uint64_t *cnt;
	uint64_t acks = 0, targets = 0, handled = 0;

	for (unsigned i = 0; i < CPUS; i++) {
		cpu_init(&c[i], g, i);
		CU_ASSERT_FATAL(!pthread_create(&t[i], NULL, worker, &c[i]));
	}
	for (unsigned i = 0; i < CPUS; i++)
		pthread_join(t[i], NULL);
	cnt = (const uint64_t *)(g->mem + COUNTERS);
	CU_ASSERT_EQUAL(cnt[0], (uint64_t)CPUS * ITERS);
	CU_ASSERT_EQUAL(cnt[1], (uint64_t)CPUS * (ITERS / 4));
	for (unsigned i = 0; i < CPUS; i++) {
		CU_ASSERT_EQUAL(c[i].c.st.calls, ITERS / 7);
		CU_ASSERT_EQUAL(c[i].c.st.call_skips, 0);
		acks += c[i].c.st.call_acks;
		targets += c[i].c.st.call_targets;
		handled += c[i].c.st.handled;
	}
	CU_ASSERT_EQUAL(targets, (uint64_t)CPUS * (ITERS / 7) * (CPUS - 1));
	CU_ASSERT_EQUAL(acks, targets);
	CU_ASSERT_EQUAL(handled, targets);
	guest_free(g);
}

static void *spinner(void *p)
{
	struct cpu *c = p;

	hv_wl_spin_lock(
		&c->c, AREA + __builtin_offsetof(struct hv_wl_sync_area, spin));
	return NULL;
}

/* A spinner exits every ple_spins (16) spins: after 3 exits the holder
 * lets go, and the spinner's own count matches what the host saw. */
static void test_spinner_takes_a_pause_loop_exit_every_ple_spins(void)
{
	struct guest *g = guest_new();
	uint64_t spin = AREA + __builtin_offsetof(struct hv_wl_sync_area, spin);
	struct cpu c[2];
	pthread_t t;

	cpu_init(&c[0], g, 0);
	cpu_init(&c[1], g, 1);
	hv_wl_spin_lock(&c[0].c, spin);
	CU_ASSERT_FATAL(!pthread_create(&t, NULL, spinner, &c[1]));
	while (atomic_load(&g->ple[1]) < 3)
		sched_yield();
	CU_ASSERT_EQUAL(atomic_load(&g->ple[0]), 0);
	hv_wl_spin_unlock(&c[0].c, spin);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(c[1].c.st.ple_exits, atomic_load(&g->ple[1]));
	CU_ASSERT(*(uint32_t *)(g->mem + spin) == 2); /* held by cpu 1 */
	guest_free(g);
}

static void test_area_init_refuses_bad_cpu_count(void)
{
	struct hv_wl_sync_area *a = calloc(1, sizeof(*a));

	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(hv_wl_sync_area_init(a, 0), -22);
	CU_ASSERT_EQUAL(hv_wl_sync_area_init(a, HV_WL_SYNC_MAX_CPUS + 1), -22);
	CU_ASSERT_EQUAL(hv_wl_sync_area_init(a, 3), 0);
	CU_ASSERT_EQUAL(a->online, 7);
	free(a);
}

static CU_TestInfo tests[] = {
	{"locks_exclude_and_crossing_calls_complete",
	 test_locks_exclude_and_crossing_calls_complete},
	{"spinner_takes_a_pause_loop_exit_every_ple_spins",
	 test_spinner_takes_a_pause_loop_exit_every_ple_spins},
	{"area_init_refuses_bad_cpu_count",
	 test_area_init_refuses_bad_cpu_count},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/wl_sync", NULL, NULL, tests);
