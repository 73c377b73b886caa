/* SPDX-License-Identifier: MIT */
/*
 * mig_pc_sched: the source's postcopy scheduler: which page goes next.
 *
 * After the switch the source holds a frozen copy and a set of pages the
 * destination still lacks (pending), indexed in memory-map order
 * (memmap.h: page 0 is the first page of the first slot). Two kinds of
 * consumers take pages out of it:
 *   - urgent: pages the destination asked for (PageRequest), in the
 *     order asked, sent on the priority channel;
 *   - push: the background stream on the data channels, in ascending
 *     order from a cursor. A request moves the cursor to just after the
 *     requested page, so the stream continues where the guest is
 *     working (a faulting guest usually reads on: locality), and wraps
 *     around at the end.
 * The rule this object exists for: every pending page is handed out
 * exactly once, whichever consumer asks first. A request for a page that
 * was already handed out (in flight, or sent before the switch) queues
 * nothing: the destination's page is on its way, or there.
 *
 * Thread safety: every call takes the object's mutex, so the request
 * reader and the sending threads may call it concurrently; create and
 * destroy from the owning thread.
 */
#ifndef MIG_POSTCOPY_SCHED_H
#define MIG_POSTCOPY_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* Requests queued and not yet taken; a request beyond is refused. */
#define MIG_PC_SCHED_QUEUE 4096u

struct mig_pc_sched;

struct mig_pc_sched_stats {
	uint64_t pending;	 /* pages still to hand out */
	uint64_t requested;	 /* handed out as urgent */
	uint64_t pushed;	 /* handed out by the background push */
	uint64_t late_requests;	 /* asked for after they were handed out */
};

/* A scheduler over @npages pages (>= 1), none pending. 0, -EINVAL or
 * -ENOMEM (*@out untouched). */
int mig_pc_sched_create(uint64_t npages, struct mig_pc_sched **out);
/* NULL is a no-op. */
void mig_pc_sched_destroy(struct mig_pc_sched *s);

/*
 * Make pending the pages of @bits (one bit per page, @npages bits) at
 * [@first, @first + @npages): a slot's unsent set at the switch. Call
 * before anything is taken out. 0 or -ERANGE.
 */
int mig_pc_sched_mark(struct mig_pc_sched *s, uint64_t first,
		      const uint64_t *bits, uint64_t npages);

/*
 * Forget every pending page and every queued request (the push cursor
 * stays): after a broken postcopy connection the destination says what
 * it still lacks, and mig_pc_sched_mark() then makes exactly that
 * pending, whatever was handed out before (pages in flight when the
 * connection broke are lost with it). The counters go on.
 */
void mig_pc_sched_reset(struct mig_pc_sched *s);

/*
 * The destination asked for page @idx. 1: queued as urgent (and the push
 * cursor moved after it); 0: already queued (nothing to do); -EALREADY:
 * handed out already (in flight, most likely behind pushed pages on a
 * data channel: the caller may send it again on the priority channel,
 * the destination installs whichever copy comes first and drops the
 * other); -ERANGE: @idx is not a page of the map; -ENOBUFS: the queue is
 * full (the page still comes by the push).
 */
int mig_pc_sched_request(struct mig_pc_sched *s, uint64_t idx);

/* Up to @max queued requests still pending, in the order asked; each is
 * no longer pending when returned. Returns how many were written. */
size_t mig_pc_sched_next_urgent(struct mig_pc_sched *s, uint64_t *out,
				size_t max);

/* Up to @max pending pages from the push cursor on, ascending (the list
 * stops at the end of the map; the next call wraps around), each no
 * longer pending when returned. 0 when nothing is pending. */
size_t mig_pc_sched_next_push(struct mig_pc_sched *s, uint64_t *out,
			      size_t max);

void mig_pc_sched_get_stats(struct mig_pc_sched *s,
			    struct mig_pc_sched_stats *st);

#endif
