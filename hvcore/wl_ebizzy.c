// SPDX-License-Identifier: MIT
/*
 * The ebizzy-like records workload (hvcore/wl_ebizzy.h). Freestanding.
 */
#include "hvcore/wl_ebizzy.h"

#define PAGE_4K 4096u

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The shootdown's handler: the target drops what it cached of the
 * freed range; here, one read of the sync area's guarded data. */
static void flush_handler(struct hv_wl_sync_cpu *c, uint32_t from)
{
	const uint64_t *d = (const uint64_t *)hv_wl_sync_access(
		c,
		c->area_gpa +
			__builtin_offsetof(struct hv_wl_sync_area, spin_data),
		0);

	(void)from;
	(void)__atomic_load_n(&d[1], __ATOMIC_RELAXED);
}

/* One record: for each page of the chunk, copy chunk_bytes of a random
 * page into a local buffer, search it for a key, and write it to another
 * random page (ebizzy's memcpy + search over its chunks). */
static void record(struct hv_wl_sync_cpu *c, const struct hv_wl_ebizzy_cfg *g,
		   uint64_t *rng, struct hv_wl_ebizzy_stats *st, uint64_t n)
{
	uint64_t buf[PAGE_4K / 8];
	uint32_t words = g->chunk_bytes / 8;

	for (uint32_t k = 0; k < g->chunk_pages; k++) {
		uint64_t src = xorshift(rng) % g->region_pages;
		uint64_t dst = xorshift(rng) % g->region_pages;
		uint64_t key = xorshift(rng);
		const uint64_t *s = (const uint64_t *)hv_wl_sync_access(
			c, g->region_gpa + src * PAGE_4K, 0);
		uint64_t *d;

		for (uint32_t i = 0; i < words; i++)
			buf[i] = s[i];
		for (uint32_t i = 0; i < words; i++)
			if (buf[i] == key)
				st->found++;
		buf[0] = n;
		buf[1] = c->id;
		d = (uint64_t *)hv_wl_sync_access(
			c, g->region_gpa + dst * PAGE_4K, 1);
		for (uint32_t i = 0; i < words; i++)
			d[i] = buf[i];
	}
}

/* The allocator's lock: a short section on shared data. */
static void alloc_section(struct hv_wl_sync_cpu *c,
			  const struct hv_wl_ebizzy_cfg *g)
{
	uint64_t lock =
		c->area_gpa + __builtin_offsetof(struct hv_wl_sync_area, spin);
	uint64_t data = c->area_gpa +
			__builtin_offsetof(struct hv_wl_sync_area, spin_data);

	hv_wl_spin_lock(c, lock);
	for (uint32_t i = 0; i < g->lock_hold; i++) {
		uint64_t *d = (uint64_t *)hv_wl_sync_access(c, data, 1);

		/* Plain data guarded by the lock, but other vCPUs' flush
		 * handlers read d[1] without it: atomics. */
		__atomic_store_n(&d[i % 7],
				 __atomic_load_n(&d[i % 7], __ATOMIC_RELAXED) +
					 1,
				 __ATOMIC_RELAXED);
	}
	hv_wl_spin_unlock(c, lock);
}

int hv_wl_ebizzy_run(struct hv_wl_sync_cpu *c, const struct hv_wl_ebizzy_cfg *g,
		     struct hv_wl_ebizzy_stats *st)
{
	uint64_t rng = g->seed | 1, all;
	const struct hv_wl_sync_area *a;
	uint32_t nr;

	if (g->region_pages < 2 || !g->chunk_pages || !g->chunk_bytes ||
	    g->chunk_bytes > PAGE_4K || g->chunk_bytes % 8 ||
	    (g->region_gpa & (PAGE_4K - 1)) || !c->env->ple_spins ||
	    c->id >= HV_WL_SYNC_MAX_CPUS)
		return -22;
	a = (const struct hv_wl_sync_area *)c->env->page_for_read(c->env->ctx,
								  c->area_gpa);
	nr = __atomic_load_n(&a->nr_cpus, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&a->magic, __ATOMIC_SEQ_CST) != HV_WL_SYNC_MAGIC ||
	    c->id >= nr)
		return -22;
	all = nr == 64 ? ~0ULL : (1ULL << nr) - 1;
	c->handler = flush_handler;
	for (uint64_t n = 1; !g->max_records || n <= g->max_records; n++) {
		if (hv_wl_sync_stopped(c))
			break;
		record(c, g, &rng, st, n);
		st->records++;
		if (g->lock_every && n % g->lock_every == 0)
			alloc_section(c, g);
		if (g->call_every && n % g->call_every == 0)
			hv_wl_call_many(c, all);
		if (g->free_every && n % g->free_every == 0) {
			if (hv_wl_mutex_lock(c, g->mutex_spins))
				break;
			hv_wl_call_many(c, all);
			hv_wl_mutex_unlock(c);
		}
	}
	if (g->max_records)
		hv_wl_sync_idle_until_all_finished(c);
	hv_wl_sync_offline(c);
	return 0;
}
