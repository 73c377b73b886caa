/* SPDX-License-Identifier: MIT */
/*
 * hv_vcpu: one virtual CPU and the thread that runs it.
 *
 * Each vCPU thread loops: park while a pause is requested, call
 * ops->vcpu_run(), account the exit (hvcore/accel.h, enum hv_exit_kind).
 * Its state machine (vcpu->lock):
 *
 *   CREATED --thread start--> RUNNING <--resume/pause--> PAUSED
 *                                |                          |
 *                                +--stop, DONE, ASSERT, ----+--> STOPPED
 *                                   error
 *
 * A pause or stop request is a field write plus ops->vcpu_kick(), which
 * makes vcpu_run return HV_EXIT_KICK promptly (kvm: immediate_exit and a
 * signal). Timeline of the race this closes:
 *
 *   control: req = PAUSE (release) ; kick: immediate_exit = 1 ; signal
 *   vCPU:    immediate_exit = 0 ; read req (acquire) ; KVM_RUN
 *
 * If the vCPU clears immediate_exit after the kick set it, it reads req
 * afterwards and sees PAUSE; if before, KVM_RUN returns -EINTR at once.
 *
 * Users reach vCPUs through hvcore/vm.h; this header is for vm.c and the
 * accelerators.
 */
#ifndef HVCORE_VCPU_H
#define HVCORE_VCPU_H

#include <pthread.h>
#include <stdatomic.h>

#include "hvcore/accel.h"
#include "hvcore/types.h"

struct hv_vm;

enum hv_vcpu_state {
	HV_VCPU_INVALID = 0,
	HV_VCPU_CREATED,
	HV_VCPU_RUNNING,
	HV_VCPU_PAUSED,
	HV_VCPU_STOPPED,
};

enum hv_vcpu_req {
	HV_VCPU_REQ_NONE = 0,
	HV_VCPU_REQ_PAUSE,
	HV_VCPU_REQ_STOP,
};

struct hv_vcpu_stats {
	uint64_t exits[HV_EXIT_COUNT];
	uint64_t heartbeats;
	uint64_t last_heartbeat_ns; /* CLOCK_MONOTONIC at the host */
	uint64_t first_heartbeat_ns; /* the same, of its first heartbeat */
	uint64_t max_heartbeat_gap_ns;
	uint64_t last_sync_arg; /* args[0] of the last SYNC */
	int error;		/* negative errno that stopped it, or 0 */
	bool asserted;
	char assert_file[64];
	uint32_t assert_line;
	uint64_t assert_args[HV_EXIT_MAX_ARGS];
	const char *last_detail;
	/*
	 * The workload's page writes per second, from the seq its heartbeats
	 * carry, over the last window of at least HV_VCPU_RATE_WINDOW_NS
	 * without a stall (a pause restarts the window); 0 before the first.
	 */
	uint64_t write_rate;
	/*
	 * write_rate of the last window in which the vCPU wrote as fast as it
	 * could: unpaced (rate_pages 0) or short of its pace by more than
	 * 10 %, and not throttled. What this vCPU can do here and now (the
	 * accelerator, the content, dirty logging, the host's load); 0 =
	 * not seen yet.
	 */
	uint64_t write_ceiling;
	uint64_t rate_win_ns;	/* the window's start (heartbeat time) */
	uint64_t rate_win_seq;	/* seq at that start */
	uint64_t rate_warned;	/* the pace last logged as out of reach */
};

#define HV_VCPU_RATE_WINDOW_NS 1000000000ull
/* A gap between heartbeats longer than this (a pause, a migration's
 * switchover) restarts the rate window instead of closing it. */
#define HV_VCPU_RATE_STALL_NS 250000000ull

struct hv_vcpu {
	/* immutable after create */
	struct hv_vm *vm;
	uint32_t id;
	void *accel; /* accelerator-private, set by vcpu_init */

	/* written by the control thread, read by the vCPU thread (atomic) */
	int req; /* enum hv_vcpu_req */

	/*
	 * Pages this vCPU's own dirty log handed over (KVM dirty-ring
	 * entries, soft PML entries and write-protection faults), added by
	 * the accelerator; atomic, monotonic. Bitmap modes cannot say which
	 * vCPU wrote a page and leave it alone. The dirty-rate monitor turns
	 * it into per-vCPU rates (hvcore/dirtyrate.h).
	 */
	_Atomic uint64_t dirty_logged;

	/* protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum hv_vcpu_state state;
	bool has_thread;
	pthread_t thread;
	struct hv_vcpu_stats stats; /* written by the vCPU thread under lock */
};

/* vm.c: create (ops->vcpu_init) / destroy (thread must be joined). */
int hv_vcpu_create(struct hv_vm *vm, uint32_t id, struct hv_vcpu **out);
void hv_vcpu_destroy(struct hv_vcpu *vcpu);

/* vm.c: start the thread (CREATED -> RUNNING, or straight to PAUSED when
 * @paused). */
int hv_vcpu_start(struct hv_vcpu *vcpu, bool paused);
/* Ask to pause; hv_vcpu_wait_parked() waits until it is PAUSED/STOPPED. */
void hv_vcpu_request_pause(struct hv_vcpu *vcpu);
void hv_vcpu_wait_parked(struct hv_vcpu *vcpu);
void hv_vcpu_resume(struct hv_vcpu *vcpu);
/* Ask to stop and join the thread (no-op without a thread). */
void hv_vcpu_stop(struct hv_vcpu *vcpu);
enum hv_vcpu_state hv_vcpu_get_state(struct hv_vcpu *vcpu);
void hv_vcpu_get_stats(struct hv_vcpu *vcpu, struct hv_vcpu_stats *out);

/*
 * For accelerators whose guest code cannot return in the middle of a run
 * (soft vCPUs running hv_wl_run() on the vCPU thread): call from the vCPU
 * thread inside vcpu_run at safe points. It parks the thread while a pause
 * is requested (the vCPU reports PAUSED meanwhile) and returns true when
 * a stop was requested, in which case vcpu_run should return HV_EXIT_KICK.
 */
bool hv_vcpu_checkpoint(struct hv_vcpu *vcpu);

/* True when a pause or stop is pending (cheap; vCPU thread). */
bool hv_vcpu_kick_pending(struct hv_vcpu *vcpu);

#endif
