// SPDX-License-Identifier: MIT
/*
 * hv_rcu: epoch-based read-copy-update.
 *
 * State:
 *  - rcu->gp, the grace-period counter, starts at 1 and only grows;
 *  - one cache-line-sized reader slot per registered thread, holding 0 while
 *    the thread is outside a read-side section and otherwise the value of gp
 *    it read when it entered its outermost section;
 *  - two shared overflow counters, indexed by the parity of gp, for threads
 *    that found no free slot.
 *
 * Every access that the ordering argument below relies on is a C11 seq_cst
 * atomic (or a release store / acquire load where only happens-before is
 * needed), so that ThreadSanitizer sees all of it.
 *
 * Why a reader never uses freed memory (slot path). The writer publishes
 * the new pointer P' with a seq_cst store, then in hv_rcu_synchronize()
 * increments gp to G (seq_cst) and waits for each slot to read 0 or >= G.
 * A reader stores its slot (seq_cst), then loads the pointer (seq_cst):
 *
 *   writer                         reader
 *   store ptr = P'                 e = load gp
 *   G = ++gp                       store slot = e
 *   load slot  -> wait?            p = load ptr      ... uses p ...
 *                                  store slot = 0    (release)
 *
 * All seq_cst operations are in one total order S. If the writer's load
 * of the slot comes before the reader's "store slot = e" in S, then the
 * reader's pointer load comes after the writer's pointer store in S and
 * returns P' (or newer): the reader cannot hold the old P. Otherwise the
 * writer reads e (or a later value of that slot). If it reads e with e < G
 * it waits until the slot changes; the release store of 0 (or the next
 * seq_cst store) then orders every access of the reader before the
 * writer's free. If e >= G the reader loaded gp after the writer's
 * increment, so again its pointer load follows the pointer store in S.
 *
 * Overflow path. A counter cannot say which epoch its readers entered in,
 * so the counters are split by the parity of the gp value a reader loaded,
 * and hv_rcu_synchronize() advances gp twice, waiting after each step for
 * the counter of the parity it just left to drain:
 *
 *   writer                         reader
 *   store ptr = P'                 g = load gp;  x = g & 1
 *   ++gp; wait ovf[G0 & 1] == 0    ovf[x] += 1   (seq_cst)
 *   ++gp; wait ovf[(G0+1) & 1]     p = load ptr  ... uses p ...
 *                                  ovf[x] -= 1   (release)
 *
 * A reader that can still hold the old P incremented ovf[x] before the
 * pointer store in S (otherwise its pointer load, which follows its
 * increment, would return P'). Whatever x is, the writer waits on both
 * parities after the pointer store, so its load sees that increment and it
 * waits for the matching decrement. Waiting on both is what makes it
 * correct; flipping gp before each wait is what makes it finish: new
 * readers go to the other parity meanwhile, so a steady stream of them
 * cannot starve the writer. Decrements are release read-modify-writes, so
 * an acquire load that reads 0 synchronises with every reader before it
 * (release sequences).
 *
 * Registration. A thread finds its slot through a small thread-local array
 * of (domain, slot) entries. An entry holds a reference on the domain's
 * slot table, so that a thread may outlive a domain it used without a
 * dangling slot, and a new domain allocated at the same address is never
 * mistaken for the old one (their tables differ while the reference is
 * held). A pthread key destructor gives every entry back at thread exit.
 */
#include "hvcore/rcu.h"
#include "hvcore/bug.h"
#include "hvcore/types.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHELINE 64
/* Domains a thread can be registered with at once (idle ones recycled). */
#define RCU_TLS_ENTRIES 16

struct rcu_slot {
	_Atomic uint64_t epoch; /* 0: outside; else gp seen at entry */
	atomic_bool owned;
} __attribute__((aligned(CACHELINE)));

/* The reader slots of one domain; freed when the last reference goes. */
struct rcu_table {
	atomic_uint refs; /* the domain's + one per thread entry */
	atomic_bool dead; /* the domain is destroyed */
	atomic_uint hwm;  /* slots [0, hwm) have been claimed at least once */
	unsigned nr_slots; /* immutable */
	struct rcu_slot slots[];
};

struct hv_rcu {
	/* immutable after create */
	struct rcu_table *tab;
	/* writers: serialises hv_rcu_synchronize() */
	pthread_mutex_t sync_lock;
	/* read by every reader, written by synchronize */
	_Atomic uint64_t gp __attribute__((aligned(CACHELINE)));
	/* overflow readers, by parity of the gp value they read */
	_Atomic uint64_t ovf[2] __attribute__((aligned(CACHELINE)));
};

/* Per thread: one entry per domain this thread has used recently. */
struct rcu_tls_ent {
	const struct hv_rcu *dom; /* compared only, never dereferenced */
	struct rcu_table *tab;	  /* referenced: valid while dom != NULL */
	struct rcu_slot *slot;	  /* NULL: this thread uses the overflow */
	unsigned nest;
	unsigned ovf_idx;
};

static __thread struct rcu_tls_ent rcu_tls[RCU_TLS_ENTRIES];
static __thread unsigned rcu_tls_victim;
static __thread bool rcu_tls_keyed;

/*
 * Thread-exit hook. The key is process-wide by nature (like the TLS array
 * above); it carries no state of any domain.
 */
static pthread_key_t rcu_tls_key;
static pthread_once_t rcu_tls_once = PTHREAD_ONCE_INIT;
static bool rcu_tls_key_ok;

static void table_put(struct rcu_table *tab)
{
	if (atomic_fetch_sub(&tab->refs, 1) == 1)
		free(tab);
}

static void tls_release(struct rcu_tls_ent *e)
{
	if (e->slot) {
		atomic_store_explicit(&e->slot->epoch, 0, memory_order_release);
		atomic_store_explicit(&e->slot->owned, false,
				      memory_order_release);
	}
	table_put(e->tab);
	memset(e, 0, sizeof(*e));
}

static void rcu_tls_destructor(void *arg)
{
	struct rcu_tls_ent *ents = arg;

	for (unsigned i = 0; i < RCU_TLS_ENTRIES; i++)
		if (ents[i].dom)
			tls_release(&ents[i]);
}

static void rcu_tls_key_init(void)
{
	rcu_tls_key_ok = !pthread_key_create(&rcu_tls_key, rcu_tls_destructor);
}

static inline struct rcu_tls_ent *tls_find(const struct hv_rcu *rcu)
{
	for (unsigned i = 0; i < RCU_TLS_ENTRIES; i++) {
		struct rcu_tls_ent *e = &rcu_tls[i];

		if (e->dom == rcu && e->tab == rcu->tab)
			return e;
	}
	return NULL;
}

/* Pick a free entry, else an idle one of a dead domain, else any idle. */
static struct rcu_tls_ent *tls_victim(void)
{
	struct rcu_tls_ent *idle = NULL;

	for (unsigned i = 0; i < RCU_TLS_ENTRIES; i++) {
		struct rcu_tls_ent *e = &rcu_tls[i];

		if (!e->dom)
			return e;
		if (e->nest)
			continue;
		if (atomic_load_explicit(&e->tab->dead, memory_order_relaxed)) {
			tls_release(e);
			return e;
		}
	}
	for (unsigned n = 0; n < RCU_TLS_ENTRIES && !idle; n++) {
		struct rcu_tls_ent *e =
			&rcu_tls[rcu_tls_victim++ % RCU_TLS_ENTRIES];

		if (!e->nest)
			idle = e;
	}
	/* Inside read-side sections of RCU_TLS_ENTRIES domains at once. */
	HV_BUG_ON(!idle);
	tls_release(idle);
	return idle;
}

static struct rcu_slot *table_claim(struct rcu_table *tab)
{
	for (unsigned i = 0; i < tab->nr_slots; i++) {
		struct rcu_slot *s = &tab->slots[i];
		bool expect = false;
		unsigned hwm;

		if (atomic_load_explicit(&s->owned, memory_order_relaxed))
			continue;
		if (!atomic_compare_exchange_strong(&s->owned, &expect, true))
			continue;
		/*
		 * Raise the scan limit before the slot is ever used: a
		 * synchronize that loads an hwm below i + 1 comes before our
		 * first slot store in S, so we cannot hold its old pointer.
		 */
		hwm = atomic_load(&tab->hwm);
		while (hwm < i + 1 &&
		       !atomic_compare_exchange_weak(&tab->hwm, &hwm, i + 1))
			;
		return s;
	}
	return NULL;
}

static struct rcu_tls_ent *tls_register(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *e = tls_victim();

	if (!rcu_tls_keyed) {
		pthread_once(&rcu_tls_once, rcu_tls_key_init);
		if (rcu_tls_key_ok)
			pthread_setspecific(rcu_tls_key, rcu_tls);
		rcu_tls_keyed = true;
	}
	atomic_fetch_add(&rcu->tab->refs, 1);
	e->dom = rcu;
	e->tab = rcu->tab;
	e->slot = table_claim(rcu->tab);
	e->nest = 0;
	return e;
}

int hv_rcu_create_slots(unsigned nr_slots, struct hv_rcu **out)
{
	struct rcu_table *tab;
	struct hv_rcu *rcu;
	size_t sz;

	if (!nr_slots || nr_slots > HV_RCU_MAX_READERS)
		return -EINVAL;
	sz = sizeof(*tab) + nr_slots * sizeof(tab->slots[0]);
	tab = aligned_alloc(CACHELINE, HV_ALIGN_UP(sz, CACHELINE));
	if (!tab)
		return -ENOMEM;
	memset(tab, 0, sz);
	rcu = aligned_alloc(CACHELINE, HV_ALIGN_UP(sizeof(*rcu), CACHELINE));
	if (!rcu) {
		free(tab);
		return -ENOMEM;
	}
	memset(rcu, 0, sizeof(*rcu));
	if (pthread_mutex_init(&rcu->sync_lock, NULL)) {
		free(rcu);
		free(tab);
		return -ENOMEM;
	}
	tab->nr_slots = nr_slots;
	atomic_init(&tab->refs, 1);
	rcu->tab = tab;
	atomic_init(&rcu->gp, 1);
	*out = rcu;
	return 0;
}

int hv_rcu_create(struct hv_rcu **out)
{
	return hv_rcu_create_slots(HV_RCU_MAX_READERS, out);
}

void hv_rcu_destroy(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *e;

	if (!rcu)
		return;
	e = tls_find(rcu);
	if (e) {
		HV_BUG_ON(e->nest);
		tls_release(e);
	}
	/* Other threads' entries keep the table until they recycle them. */
	atomic_store(&rcu->tab->dead, true);
	table_put(rcu->tab);
	pthread_mutex_destroy(&rcu->sync_lock);
	free(rcu);
}

void hv_rcu_read_lock(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *e = tls_find(rcu);
	uint64_t g;

	if (!e)
		e = tls_register(rcu);
	if (e->nest++)
		return;
	g = atomic_load(&rcu->gp);
	if (e->slot) {
		atomic_store(&e->slot->epoch, g);
	} else {
		e->ovf_idx = g & 1;
		atomic_fetch_add(&rcu->ovf[e->ovf_idx], 1);
	}
}

void hv_rcu_read_unlock(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *e = tls_find(rcu);

	HV_BUG_ON(!e || !e->nest);
	if (--e->nest)
		return;
	if (e->slot)
		atomic_store_explicit(&e->slot->epoch, 0, memory_order_release);
	else
		atomic_fetch_sub_explicit(&rcu->ovf[e->ovf_idx], 1,
					  memory_order_release);
}

/* Spin briefly (readers are short), then yield, then sleep. */
static void backoff(unsigned *spins)
{
	unsigned n = (*spins)++;

	if (n < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ volatile("yield" ::: "memory");
#endif
	} else if (n < 256) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
}

static void wait_counter_zero(_Atomic uint64_t *ctr)
{
	unsigned spins = 0;

	while (atomic_load(ctr))
		backoff(&spins);
}

void hv_rcu_synchronize(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *self = tls_find(rcu);
	struct rcu_table *tab = rcu->tab;
	uint64_t g;
	unsigned hwm;

	/* Waiting for ourselves would never end. */
	HV_BUG_ON(self && self->nest);

	pthread_mutex_lock(&rcu->sync_lock);
	g = atomic_fetch_add(&rcu->gp, 1);
	wait_counter_zero(&rcu->ovf[g & 1]);
	g = atomic_fetch_add(&rcu->gp, 1);
	wait_counter_zero(&rcu->ovf[g & 1]);
	g++; /* the current gp: readers that saw it need no wait */

	hwm = atomic_load(&tab->hwm);
	for (unsigned i = 0; i < hwm; i++) {
		struct rcu_slot *s = &tab->slots[i];
		unsigned spins = 0;
		uint64_t e;

		while ((e = atomic_load(&s->epoch)) && e < g)
			backoff(&spins);
	}
	pthread_mutex_unlock(&rcu->sync_lock);
}

void hv_rcu_thread_exit(struct hv_rcu *rcu)
{
	struct rcu_tls_ent *e = tls_find(rcu);

	if (!e)
		return;
	HV_BUG_ON(e->nest);
	tls_release(e);
}

unsigned hv_rcu_nr_readers(const struct hv_rcu *rcu)
{
	unsigned n = 0;

	for (unsigned i = 0; i < rcu->tab->nr_slots; i++)
		n += atomic_load(&rcu->tab->slots[i].owned);
	return n;
}
