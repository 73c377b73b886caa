// SPDX-License-Identifier: MIT
/*
 * hv_memslots under concurrency: readers during updates see only whole
 * snapshots, and an update waits for the readers of the version it
 * replaces. Runs under ThreadSanitizer too (label tsan).
 */
#include "hvcore/memslots.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/hvcore/memslots_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct flag_thread {
	struct hv_memslots *set;
	atomic_int done;
	int ret;
};

static void *set_flags_thread(void *p)
{
	struct flag_thread *t = p;

	t->ret = hv_memslots_set_flags(t->set, 1, HV_MEMSLOT_F_READONLY);
	atomic_store(&t->done, 1);
	return NULL;
}

static void test_update_waits_for_reader_and_keeps_its_version_intact(void)
{
	struct flag_thread t = { .set = set_new() };
	const struct hv_memslots_snap *s;
	const struct hv_memslot *old;
	struct timespec ts = { 0, 100 * 1000000L };
	pthread_t th;

	CU_ASSERT_EQUAL(add(t.set, 1, 0, 10, 0), 0);
	s = hv_memslots_read_lock(t.set);
	old = hv_memslots_by_id(s, 1);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, set_flags_thread, &t) == 0);
	nanosleep(&ts, NULL);
	/* The writer published and now waits for us: our view is intact. */
	CU_ASSERT_EQUAL(atomic_load(&t.done), 0);
	CU_ASSERT_EQUAL(old->flags, 0);
	CU_ASSERT_PTR_EQUAL(hv_memslots_by_id(s, 1), old);
	CU_ASSERT_EQUAL(hv_memslots_generation(s), 1);
	hv_memslots_read_unlock(t.set);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(t.ret, 0);
	s = hv_memslots_read_lock(t.set);
	CU_ASSERT_EQUAL(hv_memslots_by_id(s, 1)->flags, HV_MEMSLOT_F_READONLY);
	CU_ASSERT_EQUAL(hv_memslots_generation(s), 2);
	hv_memslots_read_unlock(t.set);
	hv_memslots_destroy(t.set);
}

/*
 * Readers during updates. The writer runs a fixed program: update number k
 * (k = 1, 2, ...) acts on lane (k - 1) % LANES, and each lane cycles through
 * add, dirty logging on, move, logging off + read-only, delete. So the
 * content of the set after g updates is a pure function of g, and every
 * snapshot a reader sees carries its generation: readers recompute what
 * that generation must hold and compare everything (a torn or half-made
 * set, a stale slot or a freed bitmap shows up as a mismatch, an ASan
 * report or a TSan race).
 */
#define LANES 16
#define LANE_SPAN 4096ULL
#define CONC_READERS 3

struct lane_expect {
	bool present;
	gfn_t base;
	uint32_t flags;
};

static uint32_t lane_id(unsigned j)
{
	return 3 * j + 1;
}

static uint64_t lane_npages(unsigned j)
{
	return 1 + (j % 5) * 7;
}

static hva_t lane_hva(unsigned j)
{
	return HVA0 + ((uint64_t)j << 32);
}

static gfn_t lane_add_base(unsigned j, uint64_t cycle)
{
	return j * LANE_SPAN + (cycle % 7) * 64;
}

static gfn_t lane_move_base(unsigned j, uint64_t cycle)
{
	return j * LANE_SPAN + 2048 + (cycle % 5) * 64;
}

static struct lane_expect lane_after(uint64_t gen, unsigned j)
{
	struct lane_expect e = { .present = false };
	uint64_t ops = gen > j ? (gen - 1 - j) / LANES + 1 : 0;
	uint64_t round, cycle;

	if (!ops)
		return e;
	round = ops - 1;
	cycle = round / 5;
	switch (round % 5) {
	case 0:
		e = (struct lane_expect){ true, lane_add_base(j, cycle), 0 };
		break;
	case 1:
		e = (struct lane_expect){ true, lane_add_base(j, cycle),
					  HV_MEMSLOT_F_DIRTY_LOG };
		break;
	case 2:
		e = (struct lane_expect){ true, lane_move_base(j, cycle),
					  HV_MEMSLOT_F_DIRTY_LOG };
		break;
	case 3:
		e = (struct lane_expect){ true, lane_move_base(j, cycle),
					  HV_MEMSLOT_F_READONLY };
		break;
	default:
		break;
	}
	return e;
}

static int lane_update(struct hv_memslots *set, uint64_t k)
{
	unsigned j = (k - 1) % LANES;
	uint64_t round = (k - 1) / LANES, cycle = round / 5;
	struct hv_memslot_desc d = {
		.id = lane_id(j),
		.base_gfn = lane_add_base(j, cycle),
		.npages = lane_npages(j),
		.hva = lane_hva(j),
	};

	switch (round % 5) {
	case 0:
		return hv_memslots_add(set, &d);
	case 1:
		return hv_memslots_set_flags(set, d.id,
					     HV_MEMSLOT_F_DIRTY_LOG);
	case 2:
		return hv_memslots_move(set, d.id, lane_move_base(j, cycle));
	case 3:
		return hv_memslots_set_flags(set, d.id, HV_MEMSLOT_F_READONLY);
	default:
		return hv_memslots_delete(set, d.id);
	}
}

struct conc {
	struct hv_memslots *set;
	atomic_int stop;
	atomic_ullong bad;
	atomic_ullong snapshots;
	atomic_ullong generations; /* distinct generations seen, summed */
};

/* Compare one snapshot with what its generation must hold. */
static unsigned check_snapshot(const struct hv_memslots_snap *s)
{
	uint64_t g = hv_memslots_generation(s);
	unsigned bad = 0, present = 0, idx = 0;
	gfn_t prev = 0;

	for (unsigned j = 0; j < LANES; j++) {
		struct lane_expect e = lane_after(g, j);
		const struct hv_memslot *slot =
			hv_memslots_by_id(s, lane_id(j));
		uint64_t np = lane_npages(j);

		if (!e.present) {
			bad += slot != NULL;
			bad += hv_memslots_by_gfn(s, lane_add_base(j, 0)) !=
			       NULL;
			continue;
		}
		present++;
		if (!slot) {
			bad++;
			continue;
		}
		bad += slot->id != lane_id(j) || slot->base_gfn != e.base ||
		       slot->npages != np || slot->hva != lane_hva(j) ||
		       slot->flags != e.flags;
		bad += !(slot->flags & HV_MEMSLOT_F_DIRTY_LOG) != !slot->dirty;
		if (slot->dirty) {
			bad += slot->dirty->npages != np;
			/* Touch it: a freed bitmap is caught by ASan/TSan. */
			hv_dirty_bitmap_set(slot->dirty, np - 1);
		}
		bad += hv_memslots_by_gfn(s, e.base) != slot;
		bad += hv_memslots_by_gfn(s, e.base + np - 1) != slot;
		bad += hv_memslots_by_gfn(s, e.base + np) != NULL;
		bad += hv_memslots_by_gfn(s, e.base - 1) != NULL;
	}
	bad += hv_memslots_count(s) != present;
	for (idx = 0; idx < hv_memslots_count(s); idx++) {
		const struct hv_memslot *slot = hv_memslots_at(s, idx);

		bad += !slot || (idx && slot->base_gfn <= prev);
		if (slot)
			prev = slot->base_gfn;
	}
	return bad;
}

static void *conc_reader(void *p)
{
	struct conc *c = p;
	unsigned long long n = 0, bad = 0, gens = 0;
	uint64_t last_gen = UINT64_MAX;

	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		const struct hv_memslots_snap *s =
			hv_memslots_read_lock(c->set);
		uint64_t g = hv_memslots_generation(s);

		bad += check_snapshot(s);
		if (n % 16 == 0) {
			/* A nested section sees the same or a newer set. */
			const struct hv_memslots_snap *in =
				hv_memslots_read_lock(c->set);

			bad += hv_memslots_generation(in) < g;
			bad += check_snapshot(in);
			hv_memslots_read_unlock(c->set);
		}
		hv_memslots_read_unlock(c->set);
		/*
		 * Leave the CPU now and then: with more busy threads than
		 * cores, a reader preempted inside its section holds the
		 * writer's grace period for a whole time slice.
		 */
		if (n % 8 == 7) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		/* Generations never go backwards for one reader. */
		bad += last_gen != UINT64_MAX && g < last_gen;
		gens += g != last_gen;
		last_gen = g;
		n++;
	}
	hv_memslots_thread_exit(c->set);
	atomic_fetch_add(&c->bad, bad);
	atomic_fetch_add(&c->snapshots, n);
	atomic_fetch_add(&c->generations, gens);
	return NULL;
}

static void test_readers_see_only_whole_snapshots_during_updates(void)
{
	struct conc c = { .set = set_new() };
	pthread_t th[CONC_READERS];
	struct timespec t0, t1;
	unsigned bad_ret = 0;
	uint64_t k = 0;
	double el;

	for (unsigned i = 0; i < CONC_READERS; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, conc_reader, &c) ==
				0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bad_ret += lane_update(c.set, ++k) != 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	} while (el < 1.0 * hv_test_scale());
	atomic_store(&c.stop, 1);
	for (unsigned i = 0; i < CONC_READERS; i++)
		pthread_join(th[i], NULL);

	printf("\n    %llu updates, %llu snapshots checked, %llu generation "
	       "changes seen ",
	       (unsigned long long)k, atomic_load(&c.snapshots),
	       atomic_load(&c.generations));
	CU_ASSERT_EQUAL(bad_ret, 0);
	CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
	CU_ASSERT_EQUAL(gen_of(c.set, NULL), k);
	/* The readers really ran alongside the writer. */
	CU_ASSERT(k > 5 * LANES);
	CU_ASSERT(atomic_load(&c.generations) > CONC_READERS * 2);
	hv_memslots_destroy(c.set);
}

static CU_TestInfo tests[] = {
	{ "update_waits_for_reader_and_keeps_its_version_intact",
	  test_update_waits_for_reader_and_keeps_its_version_intact },
	{ "readers_see_only_whole_snapshots_during_updates",
	  test_readers_see_only_whole_snapshots_during_updates },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/memslots_concurrent", NULL, NULL, tests);
