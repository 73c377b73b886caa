// SPDX-License-Identifier: MIT
/* hvcore/soft/mmu.c: table walker, map, split, permissions, TLB flush,
 * run against both entry formats. */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "arch/arm64/stage2.h"
#include "arch/x86/ept.h"
#include "hvcore/soft/mmu.h"

static const struct hv_arch_pte_fmt *const fmts[] = { &x86_ept_fmt,
						       &arm64_s2_fmt };

#define GIB (1ULL << 30)
#define MIB2 (2ULL << 20)

/* A fake 1 GiB-aligned host range: entries only store addresses, nothing
 * here dereferences them. */
#define FAKE_HVA 0x7f0000000000ULL

static void test_formats_round_trip_every_permission(void)
{
	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		const struct hv_arch_pte_fmt *fmt = fmts[f];

		for (unsigned l = 0; l <= fmt->max_leaf_level; l++) {
			uint64_t a = FAKE_HVA + (1ULL << hv_pte_level_shift(l));
			unsigned perms[] = { HV_PTE_R,
					     HV_PTE_R | HV_PTE_W,
					     HV_PTE_R | HV_PTE_W | HV_PTE_D };

			for (unsigned i = 0; i < 3; i++) {
				uint64_t pte = fmt->mk_leaf(a, l, perms[i]);

				CU_ASSERT(fmt->present(pte));
				CU_ASSERT(fmt->is_leaf(pte, l));
				CU_ASSERT_EQUAL(fmt->addr(pte), a);
				CU_ASSERT_EQUAL(fmt->perm(pte), perms[i]);
				for (unsigned j = 0; j < 3; j++)
					CU_ASSERT_EQUAL(
						fmt->perm(fmt->set_perm(
							pte, l, perms[j])),
						perms[j]);
			}
		}
		{
			uint64_t t = fmt->mk_table(FAKE_HVA + 0x5000);

			CU_ASSERT(fmt->present(t));
			for (unsigned l = 1; l < HV_PTE_LEVELS; l++)
				CU_ASSERT(!fmt->is_leaf(t, l));
			CU_ASSERT_EQUAL(fmt->addr(t), FAKE_HVA + 0x5000);
			CU_ASSERT(!fmt->present(0));
		}
	}
}

static void test_walk_finds_each_leaf_size_at_its_level(void)
{
	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		struct hv_soft_pgcache c = { 0 };
		struct hv_soft_mmu *mmu;
		struct hv_soft_walk w;
		uint64_t n[3];

		CU_ASSERT_FATAL(!hv_soft_mmu_create(fmts[f], &mmu));
		CU_ASSERT_FATAL(!hv_soft_pgcache_topup(&c, 16));
		hv_soft_mmu_read_lock(mmu);
		CU_ASSERT(!hv_soft_mmu_walk(mmu, 0x1000, &w));
		CU_ASSERT(!hv_soft_mmu_map(mmu, 0x1000, FAKE_HVA + 0x3000, 0,
					   HV_PTE_R, &c));
		CU_ASSERT(!hv_soft_mmu_map(mmu, 4 * MIB2, FAKE_HVA + MIB2, 1,
					   HV_PTE_R | HV_PTE_W, &c));
		CU_ASSERT(!hv_soft_mmu_map(mmu, 2 * GIB, FAKE_HVA + GIB, 2,
					   HV_PTE_R | HV_PTE_W | HV_PTE_D, &c));
		CU_ASSERT_EQUAL(hv_soft_mmu_map(mmu, 0x1000, FAKE_HVA, 0,
						HV_PTE_R, &c),
				-EEXIST);
		/* A 2 MiB leaf over an existing table is refused too. */
		CU_ASSERT_EQUAL(hv_soft_mmu_map(mmu, 0, FAKE_HVA, 1, HV_PTE_R,
						&c),
				-EEXIST);

		CU_ASSERT(hv_soft_mmu_walk(mmu, 0x1000, &w));
		CU_ASSERT_EQUAL(w.level, 0);
		CU_ASSERT_EQUAL(fmts[f]->addr(w.pte), FAKE_HVA + 0x3000);
		CU_ASSERT(hv_soft_mmu_walk(mmu, 4 * MIB2 + 0x12345, &w));
		CU_ASSERT_EQUAL(w.level, 1);
		CU_ASSERT_EQUAL(fmts[f]->perm(w.pte), HV_PTE_R | HV_PTE_W);
		CU_ASSERT(hv_soft_mmu_walk(mmu, 2 * GIB + 5 * MIB2, &w));
		CU_ASSERT_EQUAL(w.level, 2);
		CU_ASSERT(!hv_soft_mmu_walk(mmu, 0x2000, &w));
		CU_ASSERT(!hv_soft_mmu_walk(mmu, 512 * GIB, &w));
		hv_soft_mmu_count_leaves(mmu, 0, 4 * GIB, n);
		CU_ASSERT_EQUAL(n[0], 1);
		CU_ASSERT_EQUAL(n[1], 1);
		CU_ASSERT_EQUAL(n[2], 1);
		hv_soft_mmu_read_unlock(mmu);

		hv_soft_mmu_write_lock(mmu);
		hv_soft_mmu_zap_range(mmu, 0, GIB);
		hv_soft_mmu_count_leaves(mmu, 0, 4 * GIB, n);
		CU_ASSERT_EQUAL(n[0] + n[1], 0);
		CU_ASSERT_EQUAL(n[2], 1);
		hv_soft_mmu_write_unlock(mmu);
		hv_soft_pgcache_drain(&c);
		hv_soft_mmu_destroy(mmu);
	}
}

static void check_children(const struct hv_arch_pte_fmt *fmt,
			   struct hv_soft_mmu *mmu, gpa_t gpa, uint64_t hva,
			   unsigned child, unsigned perm)
{
	uint64_t step = 1ULL << hv_pte_level_shift(child);

	for (unsigned i = 0; i < HV_PTE_ENTRIES; i++) {
		struct hv_soft_walk w;

		CU_ASSERT_FATAL(hv_soft_mmu_walk_to(mmu, gpa + i * step, child,
						    &w));
		CU_ASSERT_EQUAL(w.level, child);
		CU_ASSERT_EQUAL(fmt->addr(w.pte), hva + i * step);
		CU_ASSERT_EQUAL(fmt->perm(w.pte), perm);
	}
}

static void test_split_children_map_parent_range_with_parent_perms(void)
{
	unsigned perms[] = { HV_PTE_R, HV_PTE_R | HV_PTE_W,
			     HV_PTE_R | HV_PTE_W | HV_PTE_D };

	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		for (unsigned p = 0; p < 3; p++) {
			struct hv_soft_pgcache c = { 0 };
			struct hv_soft_mmu *mmu;
			struct hv_soft_walk w;
			uint64_t n[3];

			CU_ASSERT_FATAL(!hv_soft_mmu_create(fmts[f], &mmu));
			CU_ASSERT_FATAL(!hv_soft_pgcache_topup(&c, 8));
			hv_soft_mmu_read_lock(mmu);
			CU_ASSERT(!hv_soft_mmu_map(mmu, GIB, FAKE_HVA, 2,
						   perms[p], &c));
			CU_ASSERT(hv_soft_mmu_walk(mmu, GIB + 3 * MIB2, &w));
			CU_ASSERT(!hv_soft_mmu_split(mmu, &w, &c));
			check_children(fmts[f], mmu, GIB, FAKE_HVA, 1,
				       perms[p]);
			/* And one of the 2 MiB children down to 4 KiB. */
			CU_ASSERT(hv_soft_mmu_walk(mmu, GIB + 3 * MIB2, &w));
			CU_ASSERT_EQUAL(w.level, 1);
			CU_ASSERT(!hv_soft_mmu_split(mmu, &w, &c));
			check_children(fmts[f], mmu, GIB + 3 * MIB2,
				       FAKE_HVA + 3 * MIB2, 0, perms[p]);
			hv_soft_mmu_count_leaves(mmu, GIB, GIB, n);
			CU_ASSERT_EQUAL(n[0], 512);
			CU_ASSERT_EQUAL(n[1], 511);
			CU_ASSERT_EQUAL(n[2], 0);
			hv_soft_mmu_read_unlock(mmu);
			hv_soft_pgcache_drain(&c);
			hv_soft_mmu_destroy(mmu);
		}
	}
}

static void test_split_loses_to_concurrent_change_and_keeps_it(void)
{
	for (unsigned f = 0; f < HV_ARRAY_SIZE(fmts); f++) {
		struct hv_soft_pgcache c = { 0 };
		struct hv_soft_mmu *mmu;
		struct hv_soft_walk w, w2;
		struct hv_soft_mmu_stats st;
		unsigned before;

		CU_ASSERT_FATAL(!hv_soft_mmu_create(fmts[f], &mmu));
		CU_ASSERT_FATAL(!hv_soft_pgcache_topup(&c, 8));
		hv_soft_mmu_read_lock(mmu);
		CU_ASSERT(!hv_soft_mmu_map(mmu, 0, FAKE_HVA, 1,
					   HV_PTE_R | HV_PTE_W, &c));
		CU_ASSERT(hv_soft_mmu_walk(mmu, 0, &w));
		/* A "vCPU" sets the dirty bit after the splitter's walk. */
		w2 = w;
		CU_ASSERT(hv_soft_mmu_set_perm(
			mmu, &w2, HV_PTE_R | HV_PTE_W | HV_PTE_D));
		before = c.nr;
		CU_ASSERT_EQUAL(hv_soft_mmu_split(mmu, &w, &c), -EAGAIN);
		CU_ASSERT_EQUAL(c.nr, before); /* page went back */
		CU_ASSERT(hv_soft_mmu_walk(mmu, 0, &w));
		CU_ASSERT(!hv_soft_mmu_split(mmu, &w, &c));
		check_children(fmts[f], mmu, 0, FAKE_HVA, 0,
			       HV_PTE_R | HV_PTE_W | HV_PTE_D);
		hv_soft_mmu_get_stats(mmu, &st);
		CU_ASSERT_EQUAL(st.split_races, 1);
		CU_ASSERT_EQUAL(st.splits, 1);
		/* An empty cache is reported, not worked around. */
		hv_soft_pgcache_drain(&c);
		CU_ASSERT_EQUAL(hv_soft_mmu_map(mmu, 3 * GIB, FAKE_HVA, 0,
						HV_PTE_R, &c),
				-ENOMEM);
		hv_soft_mmu_read_unlock(mmu);
		hv_soft_mmu_destroy(mmu);
	}
}

/* TLB flush: a vCPU thread inside an access bracket holds the flusher
 * until it leaves; one that enters after the flush sees the new gen. */
struct flush_arg {
	struct hv_soft_mmu *mmu;
	struct hv_soft_tlb_ack ack;
	atomic_int phase;
	atomic_int left;
	uint64_t gen_in, gen_after;
};

static void *flush_vcpu(void *p)
{
	struct flush_arg *a = p;

	a->gen_in = hv_soft_tlb_enter(a->mmu, &a->ack);
	atomic_store(&a->phase, 1);
	/* Stay in the access until the flusher has certainly started. */
	while (atomic_load(&a->phase) != 2)
		sched_yield();
	for (int i = 0; i < 1000; i++)
		sched_yield();
	atomic_store(&a->left, 1);
	hv_soft_tlb_exit(&a->ack);
	a->gen_after = hv_soft_tlb_enter(a->mmu, &a->ack);
	hv_soft_tlb_exit(&a->ack);
	return NULL;
}

static void test_flush_waits_for_vcpu_inside_stale_access(void)
{
	struct flush_arg a = { 0 };
	pthread_t t;

	CU_ASSERT_FATAL(!hv_soft_mmu_create(&x86_ept_fmt, &a.mmu));
	CU_ASSERT_FATAL(!hv_soft_mmu_tlb_register(a.mmu, &a.ack));
	CU_ASSERT_FATAL(!pthread_create(&t, NULL, flush_vcpu, &a));
	while (atomic_load(&a.phase) != 1)
		sched_yield();
	atomic_store(&a.phase, 2);
	hv_soft_mmu_flush(a.mmu);
	/* flush returned: the vCPU must have left its stale access. */
	CU_ASSERT_EQUAL(atomic_load(&a.left), 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(a.gen_in, 1);
	CU_ASSERT_EQUAL(a.gen_after, 2);
	CU_ASSERT_EQUAL(hv_soft_mmu_tlb_gen(a.mmu), 2);
	/* Idle vCPUs do not hold a flush. */
	hv_soft_mmu_flush(a.mmu);
	hv_soft_mmu_tlb_unregister(a.mmu, &a.ack);
	hv_soft_mmu_destroy(a.mmu);
}

static CU_TestInfo tests[] = {
	{ "formats_round_trip_every_permission",
	  test_formats_round_trip_every_permission },
	{ "walk_finds_each_leaf_size_at_its_level",
	  test_walk_finds_each_leaf_size_at_its_level },
	{ "split_children_map_parent_range_with_parent_perms",
	  test_split_children_map_parent_range_with_parent_perms },
	{ "split_loses_to_concurrent_change_and_keeps_it",
	  test_split_loses_to_concurrent_change_and_keeps_it },
	{ "flush_waits_for_vcpu_inside_stale_access",
	  test_flush_waits_for_vcpu_inside_stale_access },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/soft/mmu", NULL, NULL, tests);
