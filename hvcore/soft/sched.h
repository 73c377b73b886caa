/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_sched: overcommitted soft vCPUs. M vCPUs (of up to
 * HV_SOFT_SCHED_MAX_VMS VMs) share N run tokens, the "host CPUs": each
 * vCPU keeps its own thread but runs guest code only while it holds a
 * token. The scheduler hands tokens out by time slice and implements the
 * directed yield of a spinning vCPU (KVM's kvm_vcpu_on_spin), with two
 * candidate policies:
 *  - BASELINE: vCPUs of the same VM preempted while runnable (KVM's
 *    vcpu->preempted, before the ready boost);
 *  - BOOSTED:  also vCPUs marked ready when a kick woke them from a halt
 *    (an IPI delivered to a halted vCPU; KVM's vcpu->ready).
 * Both marks are cleared when the vCPU runs; candidates are scanned round
 * robin from the VM's last boosted vCPU. docs/architecture.md says why
 * tokens and not user-level contexts.
 *
 * States: WAITING (runnable, no token: in the run queue, or lent its
 * token by a directed yield), RUNNING (holds a token), BLOCKED (halted,
 * until a kick), DONE.
 *
 * Tokens and slices:
 *  - a token's slice is slice_ns; the holder checks it at every access
 *    point (hv_soft_sched_tick) and, once it expired and someone waits,
 *    goes to the tail of the run queue (preempted), as do the vCPUs that
 *    lent it this slice, and the queue's head gets the token with a fresh
 *    slice;
 *  - a directed yield lends the token to the candidate for the rest of
 *    the slice: the yielder waits on the token's lender stack and gets it
 *    back as soon as the candidate halts or yields in turn (KVM's
 *    yield_to: the candidate runs next, the yielder soon after);
 *  - a halt passes the token to the last lender, else to the queue's head
 *    (fresh slice); a kick puts a halted vCPU at the queue's tail, or on
 *    a free token at once.
 * So a vCPU at position p of the queue waits at most about
 * (p / N + 1) slices: lending never carries a token past its slice.
 *
 * Threads: tick, yield, halt, set_act, start and stop on the vCPU's own
 * thread; kick and the stats from any thread. One mutex guards the
 * scheduler; each vCPU waits on its own condition variable.
 */
#ifndef HVCORE_SOFT_SCHED_H
#define HVCORE_SOFT_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#define HV_SOFT_SCHED_MAX_THREADS 16u
#define HV_SOFT_SCHED_MAX_VMS 8u
#define HV_SOFT_SCHED_MAX_VCPUS 64u /* per VM */
/* Running time is charged to one of these activities (the guest's:
 * enum hv_wl_act), then come the halted and waiting buckets. */
#define HV_SOFT_SCHED_NR_ACT 4u
#define HV_SOFT_SCHED_T_HALTED HV_SOFT_SCHED_NR_ACT
#define HV_SOFT_SCHED_T_WAITING (HV_SOFT_SCHED_NR_ACT + 1)
#define HV_SOFT_SCHED_NR_BUCKETS (HV_SOFT_SCHED_NR_ACT + 2)

enum hv_soft_yield_policy {
	HV_SOFT_YIELD_INVALID = 0,
	HV_SOFT_YIELD_BASELINE, /* candidates: preempted while runnable */
	HV_SOFT_YIELD_BOOSTED,	/* also: woken (ready) */
};

struct hv_soft_sched_cfg {
	unsigned threads;  /* run tokens, 1..HV_SOFT_SCHED_MAX_THREADS */
	uint64_t slice_ns; /* > 0 */
	enum hv_soft_yield_policy policy;
	/* A lender spins (yielding the host CPU) this long for its token
	 * before it sleeps; 0: it sleeps at once (sched_yield.c says why). */
	uint64_t lend_spin_ns;
};

struct hv_soft_sched;
struct hv_soft_sched_vcpu;

/* Per vCPU (racy snapshot unless the vCPU is DONE). */
struct hv_soft_sched_vcpu_stats {
	uint64_t ns[HV_SOFT_SCHED_NR_BUCKETS];
	uint64_t preemptions; /* slice expired with someone waiting */
	uint64_t ple_exits;   /* directed-yield attempts */
	uint64_t yields;      /* of those, a candidate was found */
	uint64_t boosted;     /* times this vCPU was the candidate */
	uint64_t halts;	      /* halts that slept */
	uint64_t wakeups;     /* kicks that woke it */
	uint64_t max_wait_ns; /* longest WAITING stretch */
};

/* Whole scheduler. */
struct hv_soft_sched_stats {
	uint64_t grants;      /* tokens handed to a vCPU */
	uint64_t violations;  /* a token or vCPU found in use twice (oracle) */
	uint64_t max_running; /* most vCPUs holding tokens at once */
	uint64_t lends_back;  /* tokens given back to a lender */
	uint64_t lends_flushed; /* lenders sent to the queue by slice end */
};

/* 0, -EINVAL (cfg), -ENOMEM. *out untouched on failure. */
int hv_soft_sched_create(const struct hv_soft_sched_cfg *cfg,
			 struct hv_soft_sched **out);
/* Every vCPU must be destroyed first. destroy(NULL) no-op. */
void hv_soft_sched_destroy(struct hv_soft_sched *s);

/*
 * A vCPU of VM @vm (< HV_SOFT_SCHED_MAX_VMS); its index in the VM is the
 * order of creation. 0, -EINVAL, -ENOSPC (VM full), -ENOMEM. Control
 * thread, before any vCPU starts.
 */
int hv_soft_sched_vcpu_create(struct hv_soft_sched *s, unsigned vm,
			      struct hv_soft_sched_vcpu **out);
/* Not started, or DONE. destroy(NULL) no-op. */
void hv_soft_sched_vcpu_destroy(struct hv_soft_sched_vcpu *v);

/* The vCPU's thread begins: waits for a token. */
void hv_soft_sched_start(struct hv_soft_sched_vcpu *v);
/* The vCPU's thread ends: gives its token away (DONE). */
void hv_soft_sched_stop(struct hv_soft_sched_vcpu *v);

/*
 * An access point: preempt the vCPU (wait in the run queue) when its
 * slice expired and someone waits. One clock read when it does not.
 */
void hv_soft_sched_tick(struct hv_soft_sched_vcpu *v);

/*
 * The pause-loop exit: directed yield to a candidate of the same VM under
 * the policy. Returns true when it yielded (it runs again on return),
 * false when no vCPU was a candidate.
 */
bool hv_soft_sched_yield(struct hv_soft_sched_vcpu *v);

/* Halt until a kick; returns at once (consuming it) when a kick came
 * since the last halt. */
void hv_soft_sched_halt(struct hv_soft_sched_vcpu *v);

/* Deliver an interrupt: wake @v if halted (marked ready), else remember
 * it for its next halt. Any thread. */
void hv_soft_sched_kick(struct hv_soft_sched_vcpu *v);

/* Charge running time to activity @act (< HV_SOFT_SCHED_NR_ACT) from now
 * on; returns the previous one. vCPU thread, while running. */
unsigned hv_soft_sched_set_act(struct hv_soft_sched_vcpu *v, unsigned act);

/* The token @v holds (0..threads-1), or -1. For the tests' oracle. */
int hv_soft_sched_token(struct hv_soft_sched_vcpu *v);

void hv_soft_sched_vcpu_get_stats(struct hv_soft_sched_vcpu *v,
				  struct hv_soft_sched_vcpu_stats *st);
void hv_soft_sched_get_stats(struct hv_soft_sched *s,
			     struct hv_soft_sched_stats *st);

#endif
