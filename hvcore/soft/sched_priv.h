/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by hvcore/soft/sched.c (tokens, run queue, halt and
 * kick, accounting) and hvcore/soft/sched_yield.c (the directed yield).
 * Everything here is protected by hv_soft_sched.lock unless marked.
 */
#ifndef HVCORE_SOFT_SCHED_PRIV_H
#define HVCORE_SOFT_SCHED_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "hvcore/soft/sched.h"

/* An intrusive list with a sentinel: the run queue (FIFO) and each
 * token's lender stack (pushed and popped at the head). */
struct sched_link {
	struct sched_link *prev, *next;
};

static inline void sched_list_init(struct sched_link *h)
{
	h->prev = h->next = h;
}

static inline bool sched_list_empty(const struct sched_link *h)
{
	return h->next == h;
}

static inline void sched_list_insert(struct sched_link *e,
				     struct sched_link *prev,
				     struct sched_link *next)
{
	e->prev = prev;
	e->next = next;
	prev->next = e;
	next->prev = e;
}

enum sched_state {
	SCHED_NEW = 0,
	SCHED_WAITING,
	SCHED_RUNNING,
	SCHED_BLOCKED,
	SCHED_DONE,
};

struct hv_soft_sched_vcpu {
	/* immutable after create */
	struct hv_soft_sched *s;
	unsigned vm, idx;
	pthread_cond_t cond;

	/* protected by s->lock */
	enum sched_state state;
	int token;		 /* held, or -1 */
	struct sched_link link;	 /* in the run queue or a lender stack */
	struct sched_link *list; /* which one (its head), or NULL */
	bool preempted;		 /* scheduled out while runnable */
	bool ready;		 /* preempted, or woken and not yet run */
	bool kick_pending;	 /* kicked while not halted */
	uint64_t wait_start;

	/* Accounting: the vCPU thread while RUNNING, s->lock otherwise (a
	 * transition by another thread happens under the lock the vCPU
	 * takes to run again). */
	unsigned act;
	uint64_t t_mark;
	struct hv_soft_sched_vcpu_stats st;

	/* vCPU thread only: its token's deadline when it got it */
	uint64_t deadline;

	/* the oracle: set while the vCPU holds a token */
	atomic_int on_cpu;
};

struct sched_token {
	struct hv_soft_sched_vcpu *holder; /* NULL: free */
	uint64_t deadline;
	struct sched_link lenders; /* yielders waiting for it, newest first */
	atomic_int users;	   /* the oracle: holders at this instant */
};

struct sched_vm {
	struct hv_soft_sched_vcpu *vcpu[HV_SOFT_SCHED_MAX_VCPUS];
	unsigned nr;
	unsigned last_boosted;
};

struct hv_soft_sched {
	/* immutable after create */
	struct hv_soft_sched_cfg cfg;

	pthread_mutex_t lock;
	struct sched_token tok[HV_SOFT_SCHED_MAX_THREADS];
	struct sched_link runq;
	struct sched_vm vms[HV_SOFT_SCHED_MAX_VMS];
	unsigned running;
	struct hv_soft_sched_stats st;
};

static inline struct hv_soft_sched_vcpu *sched_vcpu_of(struct sched_link *l)
{
	return (struct hv_soft_sched_vcpu *)((char *)l -
					     __builtin_offsetof(
						     struct hv_soft_sched_vcpu,
						     link));
}

uint64_t hv_soft_sched_now(void);
/* Charge the time since the last mark to @v's current bucket. */
void hv_soft_sched_charge(struct hv_soft_sched_vcpu *v, uint64_t now);
/* Charge, then move @v to state @st (tracks the longest wait). */
void hv_soft_sched_set_state(struct hv_soft_sched_vcpu *v, enum sched_state st,
			     uint64_t now);
/* @v stops holding its token (already in its new state); returns it. */
unsigned hv_soft_sched_release(struct hv_soft_sched *s,
			       struct hv_soft_sched_vcpu *v);
/* Take @v off whatever list holds it. */
void hv_soft_sched_unlink(struct hv_soft_sched_vcpu *v);
/* Hand token @t to WAITING @v (off its list), with a fresh slice or the
 * token's current deadline, and wake its thread. */
void hv_soft_sched_grant(struct hv_soft_sched *s, unsigned t,
			 struct hv_soft_sched_vcpu *v, uint64_t now,
			 bool fresh);
/* @v (RUNNING) gives its token up; it must already be in its new state. */
void hv_soft_sched_put_token(struct hv_soft_sched *s,
			     struct hv_soft_sched_vcpu *v);
/* Wait (s->lock held) until @v holds a token. */
void hv_soft_sched_wait_token(struct hv_soft_sched *s,
			      struct hv_soft_sched_vcpu *v);

#endif
