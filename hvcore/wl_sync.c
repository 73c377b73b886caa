// SPDX-License-Identifier: MIT
/*
 * Guest-side spinlock, mutex and synchronous cross-vCPU call
 * (hvcore/wl_sync.h). Freestanding: no libc.
 */
#include "hvcore/wl_sync.h"

#define PAGE_MASK_4K (~(uint64_t)4095)
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

int hv_wl_sync_area_init(struct hv_wl_sync_area *a, uint32_t nr_cpus)
{
	uint8_t *b = (uint8_t *)a;

	if (!nr_cpus || nr_cpus > HV_WL_SYNC_MAX_CPUS)
		return -22;
	for (unsigned i = 0; i < sizeof(*a); i++)
		b[i] = 0;
	a->magic = HV_WL_SYNC_MAGIC;
	a->nr_cpus = nr_cpus;
	/* Every vCPU handles calls from the start (CPUs online at boot): a
	 * sender starting before a target's thread must not skip it. */
	a->online = nr_cpus == 64 ? ~0ULL : (1ULL << nr_cpus) - 1;
	return 0;
}

static unsigned set_act(struct hv_wl_sync_cpu *c, unsigned act)
{
	return c->env->set_act ? c->env->set_act(c->env->ctx, act) : 0;
}

/* The area through the MMU, without the interrupt window. */
static struct hv_wl_sync_area *area(struct hv_wl_sync_cpu *c)
{
	return (struct hv_wl_sync_area *)c->env->page_for_write(c->env->ctx,
								c->area_gpa);
}

/*
 * The interrupt window. The pending word is swapped to 0 as a whole, then
 * each sender's handler runs and its done bit is set: a sender that posts
 * again after the swap finds its bit in the next swap, since it posts
 * only after its previous call completed.
 */
void hv_wl_sync_poll(struct hv_wl_sync_cpu *c)
{
	struct hv_wl_sync_area *a;
	uint64_t pend;
	unsigned prev;

	if (c->in_irq)
		return;
	a = area(c);
	if (!LD(&a->mbox[c->id].pending))
		return;
	pend = __atomic_exchange_n(&a->mbox[c->id].pending, 0,
				   __ATOMIC_SEQ_CST);
	c->in_irq = 1;
	prev = set_act(c, HV_WL_ACT_HANDLER);
	while (pend) {
		uint32_t from = (uint32_t)__builtin_ctzll(pend);

		pend &= pend - 1;
		if (c->handler)
			c->handler(c, from);
		/* The handler may have touched other pages: reload. */
		a = area(c);
		__atomic_fetch_add(&a->mbox[c->id].handled, 1,
				   __ATOMIC_RELAXED);
		__atomic_fetch_or(&a->mbox[from].done, 1ULL << c->id,
				  __ATOMIC_SEQ_CST);
		c->st.handled++;
	}
	set_act(c, prev);
	c->in_irq = 0;
}

uint8_t *hv_wl_sync_access(struct hv_wl_sync_cpu *c, uint64_t gpa, int write)
{
	uint64_t page = gpa & PAGE_MASK_4K;
	const uint8_t *p;

	hv_wl_sync_poll(c);
	p = write ? c->env->page_for_write(c->env->ctx, page)
		  : c->env->page_for_read(c->env->ctx, page);
	return (uint8_t *)p + (gpa - page);
}

/*
 *   leaving vCPU                    sender
 *   online &= ~me                   pending[me] |= s
 *   handle pending                  wait: done has me, or me offline
 * Either the sender's post is seen by the final poll, or the sender's
 * wait sees the vCPU offline: no sender waits forever.
 */
void hv_wl_sync_offline(struct hv_wl_sync_cpu *c)
{
	__atomic_fetch_and(&area(c)->online, ~(1ULL << c->id),
			   __ATOMIC_SEQ_CST);
	hv_wl_sync_poll(c);
}

int hv_wl_sync_stopped(struct hv_wl_sync_cpu *c)
{
	return LD(&area(c)->stop) != 0;
}

/* One spin of a wait loop: the interrupt window, and a pause-loop exit
 * every ple_spins spins. */
static void spin_once(struct hv_wl_sync_cpu *c, uint32_t *spins)
{
	hv_wl_sync_poll(c);
	if (++*spins >= c->env->ple_spins) {
		*spins = 0;
		c->st.ple_exits++;
		if (c->env->ple_exit)
			c->env->ple_exit(c->env->ctx);
	}
}

void hv_wl_spin_lock(struct hv_wl_sync_cpu *c, uint64_t gpa)
{
	uint32_t *l = (uint32_t *)hv_wl_sync_access(c, gpa, 1);
	uint32_t zero = 0, spins = 0;
	unsigned prev;

	if (__atomic_compare_exchange_n(l, &zero, 1 + c->id, 0,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	prev = set_act(c, HV_WL_ACT_LOCK_SPIN);
	for (;;) {
		spin_once(c, &spins);
		l = (uint32_t *)hv_wl_sync_access(c, gpa, 1);
		zero = 0;
		/* Test, then test-and-set: spinners read a shared line. */
		if (!__atomic_load_n(l, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(l, &zero, 1 + c->id, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
	}
	set_act(c, prev);
}

void hv_wl_spin_unlock(struct hv_wl_sync_cpu *c, uint64_t gpa)
{
	uint32_t *l = (uint32_t *)hv_wl_sync_access(c, gpa, 1);

	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static int mutex_try(struct hv_wl_sync_cpu *c, struct hv_wl_sync_area *a)
{
	uint32_t zero = 0;

	return !LD(&a->mutex) &&
	       __atomic_compare_exchange_n(&a->mutex, &zero, 1 + c->id, 0,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/*
 * No lost wake-up:
 *   waiter                          holder
 *   waiters |= me                   mutex = 0
 *   try: fails (held)               w = waiters; waiters &= ~pick
 *   halt                            IPI pick
 * All seq_cst: the holder's read of waiters follows the waiter's or
 * (its try saw the mutex held, which precedes the release), so the
 * holder sees the bit; an IPI sent before the halt makes it return.
 */
int hv_wl_mutex_lock(struct hv_wl_sync_cpu *c, uint32_t spins)
{
	uint64_t me = 1ULL << c->id;
	struct hv_wl_sync_area *a = area(c);
	uint32_t ple = 0;
	unsigned prev;
	int ret = 0;

	if (mutex_try(c, a))
		return 0;
	prev = set_act(c, HV_WL_ACT_LOCK_SPIN);
	/* Optimistic spinning, once: a waiter that slept tries once per
	 * wake-up and sleeps again, as an idle vCPU that an IPI woke goes
	 * back to idle once the handler ran. */
	for (uint32_t n = 0; n < spins; n++) {
		spin_once(c, &ple);
		a = area(c);
		if (mutex_try(c, a))
			goto out;
	}
	for (;;) {
		a = area(c);
		__atomic_fetch_or(&a->mutex_waiters, me, __ATOMIC_SEQ_CST);
		if (mutex_try(c, a))
			break;
		if (LD(&a->stop)) {
			ret = 1;
			break;
		}
		c->st.halts++;
		c->env->halt(c->env->ctx);
		hv_wl_sync_poll(c);
	}
	a = area(c);
	__atomic_fetch_and(&a->mutex_waiters, ~me, __ATOMIC_SEQ_CST);
out:
	set_act(c, prev);
	return ret;
}

void hv_wl_mutex_unlock(struct hv_wl_sync_cpu *c)
{
	struct hv_wl_sync_area *a = area(c);
	uint64_t w, bit;
	uint32_t nr = LD(&a->nr_cpus), t;

	ST(&a->mutex, 0);
	w = LD(&a->mutex_waiters);
	if (!w)
		return;
	/* Wake one sleeper, round robin from the next vCPU up, so none
	 * sleeps for ever while others are woken again and again. */
	for (uint32_t k = 1; k <= nr; k++) {
		t = (c->id + k) % nr;
		bit = 1ULL << t;
		if (!(w & bit))
			continue;
		if (__atomic_fetch_and(&a->mutex_waiters, ~bit,
				       __ATOMIC_SEQ_CST) &
		    bit) {
			c->env->send_ipi(c->env->ctx, t);
			return;
		}
	}
}

void hv_wl_call_many(struct hv_wl_sync_cpu *c, uint64_t targets)
{
	struct hv_wl_sync_area *a = area(c);
	uint64_t done, online, left;
	uint32_t spins = 0;
	unsigned prev;

	targets &= ~(1ULL << c->id);
	if (LD(&a->nr_cpus) < 64)
		targets &= (1ULL << LD(&a->nr_cpus)) - 1;
	if (!targets)
		return;
	c->st.calls++;
	ST(&a->mbox[c->id].done, 0);
	for (uint64_t m = targets; m; m &= m - 1) {
		uint32_t t = (uint32_t)__builtin_ctzll(m);

		__atomic_fetch_or(&a->mbox[t].pending, 1ULL << c->id,
				  __ATOMIC_SEQ_CST);
		c->env->send_ipi(c->env->ctx, t);
		c->st.call_targets++;
	}
	prev = set_act(c, HV_WL_ACT_CALL_SPIN);
	for (;;) {
		hv_wl_sync_poll(c);
		a = area(c);
		done = LD(&a->mbox[c->id].done);
		online = LD(&a->online);
		left = targets & ~done & online;
		if (!left)
			break;
		spin_once(c, &spins);
	}
	c->st.call_acks += (uint64_t)__builtin_popcountll(targets & done);
	c->st.call_skips += (uint64_t)__builtin_popcountll(targets & ~done);
	set_act(c, prev);
}

void hv_wl_sync_idle_until_all_finished(struct hv_wl_sync_cpu *c)
{
	struct hv_wl_sync_area *a = area(c);
	uint32_t nr = LD(&a->nr_cpus);

	if (__atomic_add_fetch(&a->finished, 1, __ATOMIC_SEQ_CST) == nr) {
		for (uint32_t t = 0; t < nr; t++)
			if (t != c->id)
				c->env->send_ipi(c->env->ctx, t);
		return;
	}
	for (;;) {
		hv_wl_sync_poll(c);
		a = area(c);
		if (LD(&a->finished) >= nr || LD(&a->stop))
			return;
		c->st.halts++;
		c->env->halt(c->env->ctx);
	}
}
