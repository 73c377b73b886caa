/* SPDX-License-Identifier: MIT */
/*
 * hv_rcu: a small epoch-based read-copy-update domain for read-mostly data
 * (the memslot set). Readers never block and never write shared cache lines
 * but their own slot; a writer publishes a new version, then waits in
 * hv_rcu_synchronize() until every reader that could still hold the old one
 * has left, and frees it.
 *
 * It is written with C11 seq_cst/acquire/release atomics rather than
 * liburcu so that ThreadSanitizer understands every ordering it relies on:
 * the memslot tests run under TSan, and liburcu's fences are invisible to
 * it (false reports on every reclaimed snapshot).
 *
 * Readers: hv_rcu_read_lock()/unlock() may nest; a thread registers itself
 * on first use (up to HV_RCU_MAX_READERS threads alive at once per domain;
 * past that, readers fall back to a shared overflow slot, still correct).
 * Threads that exit must call hv_rcu_thread_exit(domain) if they used it, or
 * their slot is held until the domain is destroyed.
 */
#ifndef HVCORE_RCU_H
#define HVCORE_RCU_H

#include <stdint.h>

/* Reader slots per domain; threads beyond this share the overflow slot. */
#define HV_RCU_MAX_READERS 128u

struct hv_rcu;

/* A domain with HV_RCU_MAX_READERS reader slots. -ENOMEM. */
int hv_rcu_create(struct hv_rcu **out);
/*
 * A domain with only @nr_slots (1 .. HV_RCU_MAX_READERS) reader slots, so
 * that tests can drive the overflow path with a few threads. -EINVAL, -ENOMEM.
 */
int hv_rcu_create_slots(unsigned nr_slots, struct hv_rcu **out);
/* All readers must have finished; destroy(NULL) is a no-op. */
void hv_rcu_destroy(struct hv_rcu *rcu);

void hv_rcu_read_lock(struct hv_rcu *rcu);
void hv_rcu_read_unlock(struct hv_rcu *rcu);

/* Wait until every read-side section begun before this call has ended.
 * Must not be called inside a read-side section. */
void hv_rcu_synchronize(struct hv_rcu *rcu);

/*
 * Give back the calling thread's reader slot in @rcu (outside any read-side
 * section). Optional: a thread's slots are also given back when it exits
 * (a pthread key destructor), and a thread that uses more domains than it
 * has room for recycles its idle ones.
 */
void hv_rcu_thread_exit(struct hv_rcu *rcu);

/* Number of reader slots currently owned by threads (tests, metrics). */
unsigned hv_rcu_nr_readers(const struct hv_rcu *rcu);

#endif
