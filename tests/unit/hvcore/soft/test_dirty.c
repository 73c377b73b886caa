// SPDX-License-Identifier: MIT
/*
 * hvcore/soft dirty logging: the no-lost-dirty-page oracle under concurrent
 * chunked clear with eager splitting (both modes, both entry formats, 1 and
 * 2 vCPU threads, read and write lock), PML overflow, and the TLB flush
 * that must reach a vCPU before clear returns.
 */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/arm64/stage2.h"
#include "arch/x86/ept.h"
#include "hvcore/soft/rig.h"

static const struct hv_arch_pte_fmt *const fmts[] = { &x86_ept_fmt,
						       &arm64_s2_fmt };

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Stamps' seq of every page of the high slot. Racy by nature (vCPUs write
 * guest memory freely), hence not instrumented by TSan. */
__attribute__((no_sanitize("thread"))) static void
snapshot(struct hv_soft_rig *rig, uint64_t *seq)
{
	const uint8_t *base = hv_soft_rig_slot_hva(rig, HV_SOFT_RIG_SLOT_HIGH);
	uint64_t n = hv_soft_rig_slot_pages(rig, HV_SOFT_RIG_SLOT_HIGH);

	for (uint64_t i = 0; i < n; i++)
		seq[i] = ((const volatile struct hv_wl_stamp *)(base +
							       i * 4096))
				 ->seq;
}

static bool test_bit(const uint64_t *bm, uint64_t i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

/* D = pages whose stamp differs between snapshots @a and @b. */
static uint64_t diff(const uint64_t *a, const uint64_t *b, uint64_t n,
		     uint64_t *d)
{
	uint64_t c = 0;

	memset(d, 0, HV_DIV_ROUND_UP(n, 64) * 8);
	for (uint64_t i = 0; i < n; i++) {
		if (a[i] != b[i]) {
			d[i / 64] |= 1ULL << (i % 64);
			c++;
		}
	}
	return c;
}

/* Pages of @d in neither harvest (@h2 may be NULL). */
static uint64_t lost(const uint64_t *d, const uint64_t *h1,
		     const uint64_t *h2, uint64_t n)
{
	uint64_t miss = 0;

	for (uint64_t i = 0; i < n; i++)
		if (test_bit(d, i) && !test_bit(h1, i) &&
		    !(h2 && test_bit(h2, i)))
			miss++;
	return miss;
}

struct oracle_case {
	const struct hv_arch_pte_fmt *fmt;
	enum hv_soft_log_mode mode;
	uint32_t nr_vcpus;
	enum hv_soft_lock_mode lock;
	uint64_t chunk_pages;
};

static void run_oracle(const struct oracle_case *c)
{
	struct hv_soft_rig_cfg cfg = {
		.fmt = c->fmt, .nr_vcpus = c->nr_vcpus, .region_pages = 2048,
		.huge = true, .pattern = HV_WL_PATTERN_RANDOM,
	};
	struct hv_soft_clear_opts o = { .chunk_pages = c->chunk_pages,
					.lock = c->lock,
					.eager_split = true };
	const unsigned iters = 6;
	struct hv_soft_mmu_stats ms;
	struct hv_soft_vm_stats vs;
	struct hv_soft_rig *rig;
	uint64_t n, words, *s_prev, *s_cur, *h_prev, *h_cur, *d_prev, *d_cur;
	uint64_t *low, changed = 0, missing = 0, harvested = 0;

	CU_ASSERT_FATAL(!hv_soft_rig_create(&cfg, &rig));
	n = hv_soft_rig_slot_pages(rig, HV_SOFT_RIG_SLOT_HIGH);
	words = HV_DIV_ROUND_UP(n, 64);
	s_prev = calloc(n, 8);
	s_cur = calloc(n, 8);
	h_prev = calloc(words, 8);
	h_cur = calloc(words, 8);
	d_prev = calloc(words, 8);
	d_cur = calloc(words, 8);
	low = calloc(HV_DIV_ROUND_UP(HV_SOFT_RIG_LOW_BYTES >> 12, 64), 8);
	CU_ASSERT_FATAL(s_prev && s_cur && h_prev && h_cur && d_prev &&
			d_cur && low);

	/* Run unlogged first so the table fills with huge leaves. */
	CU_ASSERT_FATAL(!hv_soft_rig_start(rig));
	sleep_ms(20);
	/* On a loaded machine 20 ms may not be enough to touch every huge
	 * region: wait for n writes (bounded) so the split count holds. */
	for (int t = 0; t < 10000 && hv_soft_rig_writes(rig) < n; t++)
		sleep_ms(1);
	CU_ASSERT_FATAL(!hv_soft_rig_log_start(rig, c->mode));
	snapshot(rig, s_prev);
	for (unsigned it = 1; it <= iters; it++) {
		int64_t got;

		sleep_ms(10);
		got = hv_soft_rig_harvest(rig, HV_SOFT_RIG_SLOT_HIGH, h_cur);
		CU_ASSERT(got >= 0);
		harvested += got;
		CU_ASSERT(!hv_soft_vm_clear(rig->vm, HV_SOFT_RIG_SLOT_HIGH, 0,
					    n, h_cur, &o));
		/* The low slot (status lines) is harvested and re-armed
		 * too, whole, so both slots stay in the game. */
		CU_ASSERT(hv_soft_rig_harvest(rig, HV_SOFT_RIG_SLOT_LOW,
					      low) >= 0);
		CU_ASSERT(!hv_soft_vm_clear(rig->vm, HV_SOFT_RIG_SLOT_LOW, 0,
					    HV_SOFT_RIG_LOW_BYTES >> 12, low,
					    &o));
		snapshot(rig, s_cur);
		/* D(it) = changes in (S(it-1), S(it)]; they must show up in
		 * H(it) or H(it+1): check D(it-1) against H(it-1), H(it). */
		changed += diff(s_prev, s_cur, n, d_cur);
		if (it > 1)
			missing += lost(d_prev, h_prev, h_cur, n);
		memcpy(s_prev, s_cur, n * 8);
		memcpy(h_prev, h_cur, words * 8);
		memcpy(d_prev, d_cur, words * 8);
	}
	CU_ASSERT(!hv_soft_rig_stop(rig));
	CU_ASSERT(hv_soft_rig_harvest(rig, HV_SOFT_RIG_SLOT_HIGH, h_cur) >= 0);
	snapshot(rig, s_cur);
	/* After the final stop + harvest: D(n) in H(n) or H(final), and
	 * everything written since S(n) in H(final) alone. */
	missing += lost(d_prev, h_prev, h_cur, n);
	changed += diff(s_prev, s_cur, n, d_cur);
	missing += lost(d_cur, h_cur, NULL, n);

	hv_soft_mmu_get_stats(rig->vm->mmu, &ms);
	hv_soft_vm_get_stats(rig->vm, &vs);
	if (missing)
		printf("\n    %s mode=%d vcpus=%u lock=%d: lost %llu of %llu\n",
		       c->fmt->name, c->mode, c->nr_vcpus, c->lock,
		       (unsigned long long)missing,
		       (unsigned long long)changed);
	CU_ASSERT_EQUAL(missing, 0);
	/* The oracle must have had something to check. */
	CU_ASSERT(changed > 100);
	CU_ASSERT(harvested >= n);
	/* The split path ran. Not every huge leaf: clear splits only the
	 * leaves whose pages were harvested dirty, and how many the vCPUs
	 * reach in six 10 ms rounds depends on the host's load. */
	CU_ASSERT(ms.splits > 0);
	if (c->mode == HV_SOFT_LOG_PML) {
		CU_ASSERT(vs.pml_logged > 0);
	} else {
		CU_ASSERT(vs.wp_faults > 0);
	}
	hv_soft_rig_destroy(rig);
	free(s_prev);
	free(s_cur);
	free(h_prev);
	free(h_cur);
	free(d_prev);
	free(d_cur);
	free(low);
}

static void test_no_dirty_page_lost_during_chunked_clear_and_split(void)
{
	static const enum hv_soft_log_mode modes[] = { HV_SOFT_LOG_WP,
						       HV_SOFT_LOG_PML };
	unsigned k = 0;

	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++)
		for (unsigned m = 0; m < 2; m++)
			for (uint32_t v = 1; v <= 2; v++, k++) {
				struct oracle_case c = {
					.fmt = fmts[f],
					.mode = modes[m],
					.nr_vcpus = v,
					/* alternate lock mode and chunk */
					.lock = k % 2 ? HV_SOFT_LOCK_WRITE
						      : HV_SOFT_LOCK_READ,
					.chunk_pages = k % 3 == 0 ? 0
						       : k % 3 == 1 ? 512
								    : 64,
				};

				run_oracle(&c);
			}
}

/* Write @n distinct pages of the high slot from the calling thread. */
static void write_pages(struct hv_soft_vcpu *v, uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint8_t *p = hv_soft_vcpu_page_for_write(
			v, HV_SOFT_RIG_LOW_BYTES + (first + i) * 4096);

		p[100] = 1;
	}
	hv_soft_vcpu_access_end(v);
}

static void test_pml_overflow_flushes_every_512_and_sync_gets_the_rest(void)
{
	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		struct hv_soft_rig_cfg cfg = { .fmt = fmts[f], .nr_vcpus = 1,
					       .region_pages = 2048,
					       .huge = true };
		struct hv_soft_clear_opts o = { .chunk_pages = 256,
						.eager_split = true };
		struct hv_soft_vm_stats st;
		struct hv_soft_rig *rig;
		uint64_t bm[32];
		const struct hv_memslot *s;

		CU_ASSERT_FATAL(!hv_soft_rig_create(&cfg, &rig));
		write_pages(rig->vcpus[0], 0, 2048); /* huge, unlogged */
		CU_ASSERT_FATAL(!hv_soft_rig_log_start(rig, HV_SOFT_LOG_PML));
		CU_ASSERT_EQUAL(hv_soft_rig_harvest(rig, 1, bm), 2048);
		CU_ASSERT(!hv_soft_vm_clear(rig->vm, 1, 0, 2048, bm, &o));
		write_pages(rig->vcpus[0], 0, 1500);
		hv_soft_vm_get_stats(rig->vm, &st);
		CU_ASSERT_EQUAL(st.pml_logged, 1500);
		CU_ASSERT_EQUAL(st.pml_full, 2);
		CU_ASSERT_EQUAL(rig->vcpus[0]->pml_nr, 1500 - 1024);
		/* The full exits already put 1024 pages in the bitmap. */
		s = hv_memslots_by_id(hv_memslots_read_lock(rig->slots), 1);
		CU_ASSERT_EQUAL(hv_dirty_bitmap_count(s->dirty), 1024);
		hv_memslots_read_unlock(rig->slots);
		/* Already dirty: written again without logging. */
		write_pages(rig->vcpus[0], 0, 1500);
		hv_soft_vm_get_stats(rig->vm, &st);
		CU_ASSERT_EQUAL(st.pml_logged, 1500);
		memset(bm, 0, sizeof(bm));
		CU_ASSERT_EQUAL(hv_soft_rig_harvest(rig, 1, bm), 1500);
		for (unsigned i = 0; i < 2048; i++)
			CU_ASSERT_EQUAL(test_bit(bm, i), i < 1500);
		hv_soft_rig_destroy(rig);
	}
}

/* A vCPU holding a writable translation across a clear: clear may not
 * return before the vCPU left that access, and its next write faults. */
struct stale_arg {
	struct hv_soft_rig *rig;
	atomic_int phase;
	atomic_int done_writing;
	uint64_t wp_before, wp_after;
};

static void *stale_vcpu(void *p)
{
	struct stale_arg *a = p;
	struct hv_soft_vcpu *v = a->rig->vcpus[0];
	struct hv_soft_vm_stats st;
	uint8_t *page = hv_soft_vcpu_page_for_write(v, HV_SOFT_RIG_LOW_BYTES);

	atomic_store(&a->phase, 1);
	for (int i = 0; i < 2000; i++)
		sched_yield(); /* the clear runs meanwhile */
	page[200] = 7;
	atomic_store(&a->done_writing, 1);
	hv_soft_vcpu_access_end(v);
	while (atomic_load(&a->phase) != 2)
		sched_yield();
	hv_soft_vm_get_stats(a->rig->vm, &st);
	a->wp_before = st.wp_faults;
	page = hv_soft_vcpu_page_for_write(v, HV_SOFT_RIG_LOW_BYTES);
	page[200] = 8;
	hv_soft_vcpu_access_end(v);
	hv_soft_vm_get_stats(a->rig->vm, &st);
	a->wp_after = st.wp_faults;
	return NULL;
}

static void test_no_write_through_stale_translation_after_clear(void)
{
	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		struct hv_soft_rig_cfg cfg = { .fmt = fmts[f], .nr_vcpus = 1,
					       .region_pages = 512 };
		struct hv_soft_clear_opts o = { .eager_split = true };
		struct stale_arg a = { 0 };
		uint64_t bm[8];
		pthread_t t;

		CU_ASSERT_FATAL(!hv_soft_rig_create(&cfg, &a.rig));
		CU_ASSERT_FATAL(!hv_soft_rig_log_start(a.rig, HV_SOFT_LOG_WP));
		CU_ASSERT_FATAL(!pthread_create(&t, NULL, stale_vcpu, &a));
		while (atomic_load(&a.phase) != 1)
			sched_yield();
		CU_ASSERT(hv_soft_rig_harvest(a.rig, 1, bm) > 0);
		CU_ASSERT(test_bit(bm, 0));
		CU_ASSERT(!hv_soft_vm_clear(a.rig->vm, 1, 0, 512, bm, &o));
		CU_ASSERT_EQUAL(atomic_load(&a.done_writing), 1);
		atomic_store(&a.phase, 2);
		pthread_join(t, NULL);
		CU_ASSERT_EQUAL(a.wp_after, a.wp_before + 1);
		CU_ASSERT_EQUAL(hv_soft_rig_harvest(a.rig, 1, bm), 1);
		CU_ASSERT(test_bit(bm, 0));
		hv_soft_rig_destroy(a.rig);
	}
}

static CU_TestInfo tests[] = {
	{ "no_dirty_page_lost_during_chunked_clear_and_split",
	  test_no_dirty_page_lost_during_chunked_clear_and_split },
	{ "pml_overflow_flushes_every_512_and_sync_gets_the_rest",
	  test_pml_overflow_flushes_every_512_and_sync_gets_the_rest },
	{ "no_write_through_stale_translation_after_clear",
	  test_no_write_through_stale_translation_after_clear },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/dirty", NULL, NULL, tests);
