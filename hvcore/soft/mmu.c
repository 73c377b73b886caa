// SPDX-License-Identifier: MIT
#include "hvcore/soft/mmu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/bug.h"

#define ROOT_LEVEL (HV_PTE_LEVELS - 1)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct hv_soft_mmu {
	/* immutable after create */
	const struct hv_arch_pte_fmt *fmt;
	_Atomic uint64_t *root;

	/* the MMU lock; waiters counts threads blocked on it */
	pthread_rwlock_t rw;
	atomic_int waiters;

	/* TLB flush */
	_Atomic uint64_t tlb_gen;
	pthread_mutex_t acks_lock; /* protects acks[] */
	struct hv_soft_tlb_ack *acks[HV_SOFT_MAX_TLBS];

	/* statistics, relaxed atomics */
	atomic_uint_fast64_t tables, splits, split_races, flushes;
};

int hv_soft_mmu_create(const struct hv_arch_pte_fmt *fmt,
		       struct hv_soft_mmu **out)
{
	pthread_rwlockattr_t attr;
	struct hv_soft_mmu *mmu;
	int ret = -ENOMEM;

	mmu = calloc(1, sizeof(*mmu));
	if (!mmu)
		return -ENOMEM;
	mmu->fmt = fmt;
	mmu->root = aligned_alloc(HV_PAGE_SIZE, HV_PAGE_SIZE);
	if (!mmu->root)
		goto err_free;
	memset((void *)mmu->root, 0, HV_PAGE_SIZE);
	/*
	 * Writer preference: the write-lock clear must not starve behind a
	 * stream of vCPU faults (the kernel's rwlock is fair the same way).
	 */
	if (pthread_rwlockattr_init(&attr))
		goto err_root;
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	ret = -pthread_rwlock_init(&mmu->rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (ret)
		goto err_root;
	pthread_mutex_init(&mmu->acks_lock, NULL);
	atomic_init(&mmu->tlb_gen, 1);
	*out = mmu;
	return 0;

err_root:
	free((void *)mmu->root);
err_free:
	free(mmu);
	return ret;
}

static void free_table(struct hv_soft_mmu *mmu, _Atomic uint64_t *table,
		       unsigned level)
{
	for (unsigned i = 0; level > 0 && i < HV_PTE_ENTRIES; i++) {
		uint64_t pte = atomic_load_explicit(&table[i],
						    memory_order_relaxed);

		if (mmu->fmt->present(pte) && !mmu->fmt->is_leaf(pte, level))
			free_table(mmu,
				   (_Atomic uint64_t *)(uintptr_t)
					   mmu->fmt->addr(pte),
				   level - 1);
	}
	free((void *)table);
}

void hv_soft_mmu_destroy(struct hv_soft_mmu *mmu)
{
	if (!mmu)
		return;
	free_table(mmu, mmu->root, ROOT_LEVEL);
	pthread_rwlock_destroy(&mmu->rw);
	pthread_mutex_destroy(&mmu->acks_lock);
	free(mmu);
}

const struct hv_arch_pte_fmt *hv_soft_mmu_fmt(const struct hv_soft_mmu *mmu)
{
	return mmu->fmt;
}

void hv_soft_mmu_read_lock(struct hv_soft_mmu *mmu)
{
	if (!pthread_rwlock_tryrdlock(&mmu->rw))
		return;
	atomic_fetch_add(&mmu->waiters, 1);
	pthread_rwlock_rdlock(&mmu->rw);
	atomic_fetch_sub(&mmu->waiters, 1);
}

void hv_soft_mmu_read_unlock(struct hv_soft_mmu *mmu)
{
	pthread_rwlock_unlock(&mmu->rw);
}

void hv_soft_mmu_write_lock(struct hv_soft_mmu *mmu)
{
	if (!pthread_rwlock_trywrlock(&mmu->rw))
		return;
	atomic_fetch_add(&mmu->waiters, 1);
	pthread_rwlock_wrlock(&mmu->rw);
	atomic_fetch_sub(&mmu->waiters, 1);
}

void hv_soft_mmu_write_unlock(struct hv_soft_mmu *mmu)
{
	pthread_rwlock_unlock(&mmu->rw);
}

bool hv_soft_mmu_lock_contended(struct hv_soft_mmu *mmu)
{
	return atomic_load_explicit(&mmu->waiters, memory_order_relaxed) > 0;
}

static _Atomic uint64_t *table_of(struct hv_soft_mmu *mmu, uint64_t pte)
{
	return (_Atomic uint64_t *)(uintptr_t)mmu->fmt->addr(pte);
}

bool hv_soft_mmu_walk_to(struct hv_soft_mmu *mmu, gpa_t gpa,
			 unsigned stop_level, struct hv_soft_walk *w)
{
	_Atomic uint64_t *table = mmu->root;
	unsigned level = ROOT_LEVEL;

	for (;;) {
		_Atomic uint64_t *ptep = &table[hv_pte_index(gpa, level)];
		/* Acquire: pairs with the release CAS that installed a
		 * table, so its entries are visible. */
		uint64_t pte = atomic_load_explicit(ptep,
						    memory_order_acquire);

		w->ptep = ptep;
		w->pte = pte;
		w->level = level;
		w->leaf = mmu->fmt->is_leaf(pte, level);
		if (w->leaf || !mmu->fmt->present(pte) || level == stop_level)
			return w->leaf;
		table = table_of(mmu, pte);
		level--;
	}
}

static bool install(struct hv_soft_walk *w, uint64_t new)
{
	return atomic_compare_exchange_strong_explicit(
		w->ptep, &w->pte, new, memory_order_acq_rel,
		memory_order_acquire);
}

int hv_soft_mmu_map(struct hv_soft_mmu *mmu, gpa_t gpa, hva_t hva,
		    unsigned level, unsigned perm,
		    struct hv_soft_pgcache *cache)
{
	const struct hv_arch_pte_fmt *fmt = mmu->fmt;
	uint64_t size = 1ULL << hv_pte_level_shift(level);
	struct hv_soft_walk w;

	HV_BUG_ON(level > fmt->max_leaf_level);
	HV_BUG_ON((gpa | hva) & (size - 1));
	for (;;) {
		void *page;

		if (hv_soft_mmu_walk_to(mmu, gpa, level, &w) ||
		    fmt->present(w.pte))
			return -EEXIST;
		if (w.level == level) {
			if (install(&w, fmt->mk_leaf(hva, level, perm)))
				return 0;
			continue; /* lost the race: look again */
		}
		page = hv_soft_pgcache_alloc(cache);
		if (!page)
			return -ENOMEM;
		if (install(&w, fmt->mk_table((uintptr_t)page)))
			atomic_fetch_add_explicit(&mmu->tables, 1,
						  memory_order_relaxed);
		else
			hv_soft_pgcache_put(cache, page);
	}
}

int hv_soft_mmu_split(struct hv_soft_mmu *mmu, const struct hv_soft_walk *w,
		      struct hv_soft_pgcache *cache)
{
	const struct hv_arch_pte_fmt *fmt = mmu->fmt;
	unsigned child = w->level - 1;
	uint64_t base = fmt->addr(w->pte);
	unsigned perm = fmt->perm(w->pte);
	struct hv_soft_walk cw = *w;
	_Atomic uint64_t *table;

	HV_BUG_ON(!w->leaf || w->level == 0);
	table = hv_soft_pgcache_alloc(cache);
	if (!table)
		return -ENOMEM;
	/* The new table is private until the CAS publishes it. */
	for (unsigned i = 0; i < HV_PTE_ENTRIES; i++)
		atomic_store_explicit(
			&table[i],
			fmt->mk_leaf(base + ((uint64_t)i
					     << hv_pte_level_shift(child)),
				     child, perm),
			memory_order_relaxed);
	/*
	 * A vCPU may have set the dirty bit or restored write permission on
	 * the huge leaf since the walk: then the CAS fails and the caller
	 * re-walks, so children never lose a permission change.
	 */
	if (!install(&cw, fmt->mk_table((uintptr_t)table))) {
		hv_soft_pgcache_put(cache, (void *)table);
		atomic_fetch_add_explicit(&mmu->split_races, 1,
					  memory_order_relaxed);
		return -EAGAIN;
	}
	atomic_fetch_add_explicit(&mmu->tables, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&mmu->splits, 1, memory_order_relaxed);
	return 0;
}

bool hv_soft_mmu_set_perm(struct hv_soft_mmu *mmu, struct hv_soft_walk *w,
			  unsigned perm)
{
	return install(w, mmu->fmt->set_perm(w->pte, w->level, perm));
}

static void zap(struct hv_soft_mmu *mmu, _Atomic uint64_t *table,
		unsigned level, gpa_t base, gpa_t start, gpa_t end)
{
	uint64_t size = 1ULL << hv_pte_level_shift(level);

	for (unsigned i = 0; i < HV_PTE_ENTRIES; i++) {
		gpa_t lo = base + i * size, hi = lo + size;
		uint64_t pte;

		if (hi <= start || lo >= end)
			continue;
		pte = atomic_load_explicit(&table[i], memory_order_relaxed);
		if (!mmu->fmt->present(pte))
			continue;
		if (mmu->fmt->is_leaf(pte, level)) {
			atomic_store_explicit(&table[i], 0,
					      memory_order_relaxed);
			continue;
		}
		if (lo >= start && hi <= end) {
			atomic_store_explicit(&table[i], 0,
					      memory_order_relaxed);
			free_table(mmu, table_of(mmu, pte), level - 1);
			continue;
		}
		zap(mmu, table_of(mmu, pte), level - 1, lo, start, end);
	}
}

void hv_soft_mmu_zap_range(struct hv_soft_mmu *mmu, gpa_t gpa, uint64_t size)
{
	zap(mmu, mmu->root, ROOT_LEVEL, 0, gpa, gpa + size);
	hv_soft_mmu_flush(mmu);
}

static void count(struct hv_soft_mmu *mmu, _Atomic uint64_t *table,
		  unsigned level, gpa_t base, gpa_t start, gpa_t end,
		  uint64_t out[3])
{
	uint64_t size = 1ULL << hv_pte_level_shift(level);

	for (unsigned i = 0; i < HV_PTE_ENTRIES; i++) {
		gpa_t lo = base + i * size, hi = lo + size;
		uint64_t pte;

		if (hi <= start || lo >= end)
			continue;
		pte = atomic_load_explicit(&table[i], memory_order_acquire);
		if (!mmu->fmt->present(pte))
			continue;
		if (mmu->fmt->is_leaf(pte, level)) {
			if (level < 3) /* no format has 512 GiB leaves */
				out[level]++;
		} else if (level > 0) {
			count(mmu, table_of(mmu, pte), level - 1, lo, start,
			      end, out);
		}
	}
}

void hv_soft_mmu_count_leaves(struct hv_soft_mmu *mmu, gpa_t gpa,
			      uint64_t size, uint64_t out[3])
{
	out[0] = out[1] = out[2] = 0;
	count(mmu, mmu->root, ROOT_LEVEL, 0, gpa, gpa + size, out);
}

int hv_soft_mmu_tlb_register(struct hv_soft_mmu *mmu,
			     struct hv_soft_tlb_ack *ack)
{
	int ret = -ENOSPC;

	atomic_store(&ack->cur, 0);
	pthread_mutex_lock(&mmu->acks_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++) {
		if (!mmu->acks[i]) {
			mmu->acks[i] = ack;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&mmu->acks_lock);
	return ret;
}

void hv_soft_mmu_tlb_unregister(struct hv_soft_mmu *mmu,
				struct hv_soft_tlb_ack *ack)
{
	pthread_mutex_lock(&mmu->acks_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++)
		if (mmu->acks[i] == ack)
			mmu->acks[i] = NULL;
	pthread_mutex_unlock(&mmu->acks_lock);
}

uint64_t hv_soft_mmu_tlb_gen(struct hv_soft_mmu *mmu)
{
	return atomic_load(&mmu->tlb_gen);
}

uint64_t hv_soft_tlb_enter(struct hv_soft_mmu *mmu,
			   struct hv_soft_tlb_ack *ack)
{
	uint64_t g;

	/* seq_cst store then seq_cst load: the Dekker pair with flush(). */
	atomic_store(&ack->cur, HV_SOFT_TLB_ENTERING);
	g = atomic_load(&mmu->tlb_gen);
	atomic_store_explicit(&ack->cur, g, memory_order_release);
	return g;
}

void hv_soft_mmu_flush(struct hv_soft_mmu *mmu)
{
	uint64_t g = atomic_fetch_add(&mmu->tlb_gen, 1) + 1;

	atomic_fetch_add_explicit(&mmu->flushes, 1, memory_order_relaxed);
	pthread_mutex_lock(&mmu->acks_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++) {
		struct hv_soft_tlb_ack *ack = mmu->acks[i];
		unsigned spins = 0;

		if (!ack)
			continue;
		for (;;) {
			uint64_t cur = atomic_load(&ack->cur);

			if (!cur || (cur != HV_SOFT_TLB_ENTERING && cur >= g))
				break;
			/* Two cores for everyone: spin briefly, then yield
			 * so the vCPU can finish its access. */
			if (++spins < 64)
				cpu_relax();
			else
				sched_yield();
		}
	}
	pthread_mutex_unlock(&mmu->acks_lock);
}

void hv_soft_mmu_get_stats(struct hv_soft_mmu *mmu,
			   struct hv_soft_mmu_stats *st)
{
	st->tables = atomic_load_explicit(&mmu->tables, memory_order_relaxed);
	st->splits = atomic_load_explicit(&mmu->splits, memory_order_relaxed);
	st->split_races = atomic_load_explicit(&mmu->split_races,
					       memory_order_relaxed);
	st->flushes = atomic_load_explicit(&mmu->flushes,
					   memory_order_relaxed);
}
