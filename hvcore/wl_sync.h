/* SPDX-License-Identifier: MIT */
/*
 * Guest-side synchronisation for the overcommit workloads: a spinlock
 * whose waiters take a "pause-loop exit" every few spins, a sleeping
 * mutex whose waiters halt, and a synchronous cross-vCPU call (the
 * sender posts to a set of vCPUs, sends each an IPI and spins until each
 * ran its handler), like the guest kernel's spin_lock, mutex and
 * smp_call_function_many.
 *
 * Everything shared lives in guest memory (struct hv_wl_sync_area, one
 * page) and is reached only through struct hv_wl_sync_env, as the
 * parametric workload reaches memory through struct hv_wl_env
 * (hvcore/workload.h): the code is freestanding (<stdint.h> and GCC
 * __atomic builtins only). Guest memory is plain shared memory: every
 * shared word is read and written with __atomic operations.
 *
 * Interrupts: a vCPU handles the calls posted to it at every access it
 * makes through hv_wl_sync_access() (its interrupt window), including the
 * accesses of its own spin loops, so two senders that target each other
 * never deadlock (interrupts stay enabled while spinning, as in
 * csd_lock_wait()), and after every halt.
 *
 * Threads: one struct hv_wl_sync_cpu per vCPU, used by that vCPU only.
 */
#ifndef HVCORE_WL_SYNC_H
#define HVCORE_WL_SYNC_H

#include <stdint.h>

#define HV_WL_SYNC_MAX_CPUS 32u
#define HV_WL_SYNC_MAGIC 0x434e5953u /* "SYNC" */

/* What a vCPU is doing, for the host's time accounting. */
enum hv_wl_act {
	HV_WL_ACT_WORK = 0,  /* the workload's own work */
	HV_WL_ACT_LOCK_SPIN, /* spinning for a spinlock or a mutex */
	HV_WL_ACT_CALL_SPIN, /* a sender spinning for its call's handlers */
	HV_WL_ACT_HANDLER,   /* running a call's handler */
	HV_WL_ACT_COUNT,
};

/* One vCPU's mailbox: a cache line. */
struct hv_wl_sync_mbox {
	uint64_t pending; /* bit s: vCPU s posted a call to this vCPU */
	uint64_t done;	  /* bit t: vCPU t ran this vCPU's current call */
	uint64_t handled; /* calls this vCPU handled */
	uint64_t pad[5];
};

/* The shared page, in guest memory, page-aligned. */
struct hv_wl_sync_area {
	/* line 0: written by the host before the vCPUs start (stop: any
	 * time) */
	uint32_t magic;
	uint32_t nr_cpus;
	uint32_t stop;	   /* non-zero: every vCPU leaves at once */
	uint32_t finished; /* vCPUs that finished their work */
	uint64_t online;   /* bit t: vCPU t handles calls */
	uint64_t pad0[5];
	/* line 1: a spinlock (0 free, 1 + owner held) and what it guards */
	uint32_t spin;
	uint32_t pad1;
	uint64_t spin_data[7];
	/* line 2: a sleeping mutex */
	uint32_t mutex; /* 0 free, 1 + owner held */
	uint32_t pad2;
	uint64_t mutex_waiters; /* bit t: vCPU t sleeps for the mutex */
	uint64_t pad3[6];
	uint64_t pad4[8];
	struct hv_wl_sync_mbox mbox[HV_WL_SYNC_MAX_CPUS];
};

_Static_assert(sizeof(struct hv_wl_sync_area) <= 4096, "one page");

/*
 * What the vCPU may do, supplied by whoever runs it. Every hook is called
 * on the vCPU's own thread.
 *  page_for_write/read: pointer to the 4 KiB guest page at @gpa
 *		(page-aligned), valid until the next hook call. An access
 *		point: the host may preempt the vCPU here;
 *  ple_exit:	the vCPU spun env->ple_spins times without
 *		progress (the pause-loop exit): the host may run another
 *		vCPU (directed yield) before returning;
 *  send_ipi:	deliver an interrupt to vCPU @cpu of this VM: wake it if
 *		it halted (the host's kick);
 *  halt:	sleep until an interrupt is sent to this vCPU; returns at
 *		once when one was sent since the last halt;
 *  set_act:	the vCPU now does @act (enum hv_wl_act); returns the
 *		previous one. NULL: no accounting.
 */
struct hv_wl_sync_env {
	void *ctx;
	uint8_t *(*page_for_write)(void *ctx, uint64_t gpa);
	const uint8_t *(*page_for_read)(void *ctx, uint64_t gpa);
	void (*ple_exit)(void *ctx);
	void (*send_ipi)(void *ctx, uint32_t cpu);
	void (*halt)(void *ctx);
	unsigned (*set_act)(void *ctx, unsigned act);
	uint32_t ple_spins; /* spins between two pause-loop exits (> 0) */
};

/* Guest counters of one vCPU. */
struct hv_wl_sync_stats {
	uint64_t calls;	       /* synchronous calls sent */
	uint64_t call_targets; /* vCPUs posted to, over all calls */
	uint64_t call_acks;    /* of those, handlers that ran */
	uint64_t call_skips;   /* of those, vCPUs that went offline first */
	uint64_t handled;      /* calls this vCPU handled */
	uint64_t ple_exits;    /* pause-loop exits taken */
	uint64_t halts;	       /* halts (mutex sleeps and idle) */
};

/* One vCPU's guest-side context. */
struct hv_wl_sync_cpu {
	const struct hv_wl_sync_env *env;
	uint64_t area_gpa; /* struct hv_wl_sync_area */
	uint32_t id;
	uint32_t in_irq;
	/* The call's handler, run on the target (NULL: nothing but the
	 * acknowledgement); @from is the sender. */
	void (*handler)(struct hv_wl_sync_cpu *c, uint32_t from);
	void *arg; /* for the handler and the workload */
	struct hv_wl_sync_stats st;
};

/*
 * Host side: initialise @a (guest memory, before any vCPU runs) for
 * @nr_cpus vCPUs. Returns 0, or -22 (EINVAL) when nr_cpus is 0 or over
 * HV_WL_SYNC_MAX_CPUS.
 */
int hv_wl_sync_area_init(struct hv_wl_sync_area *a, uint32_t nr_cpus);

/*
 * Pointer to the byte at @gpa for a write (@write) or a read, with this
 * vCPU's pending calls handled first (the interrupt window). Valid until
 * the next call into this vCPU's env.
 */
uint8_t *hv_wl_sync_access(struct hv_wl_sync_cpu *c, uint64_t gpa, int write);

/* Handle the calls posted to this vCPU (no-op inside a handler). */
void hv_wl_sync_poll(struct hv_wl_sync_cpu *c);

/* Leave the set of vCPUs that handle calls (all of them from
 * hv_wl_sync_area_init on). Leaving handles what is pending, so no
 * sender waits for a vCPU that left. */
void hv_wl_sync_offline(struct hv_wl_sync_cpu *c);

/* Non-zero once the host asked every vCPU to leave. */
int hv_wl_sync_stopped(struct hv_wl_sync_cpu *c);

/* The spinlock at @gpa (a uint32_t in guest memory, 0 = free). */
void hv_wl_spin_lock(struct hv_wl_sync_cpu *c, uint64_t gpa);
void hv_wl_spin_unlock(struct hv_wl_sync_cpu *c, uint64_t gpa);

/*
 * The area's mutex: spin up to @spins tries (optimistic spinning), then
 * sleep (halt) until the holder's unlock wakes this vCPU with an IPI.
 * Returns 0 when held, 1 when the host asked the vCPUs to stop (not held).
 */
int hv_wl_mutex_lock(struct hv_wl_sync_cpu *c, uint32_t spins);
void hv_wl_mutex_unlock(struct hv_wl_sync_cpu *c);

/*
 * Synchronous call: post to every vCPU in @targets (this vCPU's bit is
 * ignored), send each an IPI, and spin (handling this vCPU's own calls,
 * with a pause-loop exit every env->ple_spins spins) until each ran the
 * handler or went offline.
 */
void hv_wl_call_many(struct hv_wl_sync_cpu *c, uint64_t targets);

/*
 * Idle until every vCPU finished its work (area->finished == nr_cpus),
 * handling calls meanwhile; counts this vCPU as finished first, and the
 * last one wakes the rest. Returns early when the host stops the vCPUs.
 */
void hv_wl_sync_idle_until_all_finished(struct hv_wl_sync_cpu *c);

#endif
