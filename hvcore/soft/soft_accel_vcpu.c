// SPDX-License-Identifier: MIT
/*
 * hv_soft_ops, vCPU side: run the workload on the vCPU thread through the
 * soft MMU, turn kicks, heartbeats and PML-full events into exits, and
 * save/restore the vCPU (its workload status line).
 *
 * The workload cannot be suspended in the middle of hv_wl_run(), so every
 * exit that generic code must see at once (kick, heartbeat) makes it
 * return: our checkpoint hook answers "stop" through the private params
 * copy of hvcore/soft/soft_vcpu.c, the workload finishes its batch and
 * publishes its status line, and the next vcpu_run starts it again from
 * that line (seq, sweep position and random stream all derive from it).
 * So a paused vCPU is never inside guest code, and its state is exact.
 *
 * Kick race (the soft form of KVM's immediate_exit, see hvcore/vcpu.h):
 *
 *   control: req = PAUSE (release) ; kick: kicked = 1 (release)
 *   vCPU:    xchg(kicked, 0) (acq_rel) ; ... checkpoint: kicked || req
 *
 * If the exchange comes after the kick, it synchronises with it and the
 * checkpoint sees req; if before, the checkpoint sees kicked = 1.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "hvcore/soft/soft_accel.h"

#define VCPU_STATE_MAGIC 0x43565348u /* "HSVC" */
#define VCPU_STATE_VERSION 1u
#define VCPU_STATE_LEN 64u

int hv_soft_accel_vcpu_init(struct hv_vcpu *vcpu)
{
	struct soft_vm *a = soft_vm_of(vcpu->vm);
	struct soft_vcpu *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = hv_soft_vcpu_create(a->svm, vcpu->id, &c->sv);
	if (ret) {
		free(c);
		return ret;
	}
	c->vcpu = vcpu;
	c->sv->logged = &vcpu->dirty_logged;
	pthread_mutex_init(&c->wake_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wake_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	vcpu->accel = c;
	return 0;
}

void hv_soft_accel_vcpu_fini(struct hv_vcpu *vcpu)
{
	struct soft_vcpu *c = vcpu->accel;

	if (!c)
		return;
	hv_soft_vcpu_destroy(c->sv);
	pthread_cond_destroy(&c->wake_cond);
	pthread_mutex_destroy(&c->wake_lock);
	free(c);
	vcpu->accel = NULL;
}

void hv_soft_accel_vcpu_kick(struct hv_vcpu *vcpu)
{
	struct soft_vcpu *c = vcpu->accel;

	/* Under wake_lock: a sleeper that checked kicked under it and found
	 * 0 is already waiting on the condition when the signal comes. */
	pthread_mutex_lock(&c->wake_lock);
	atomic_store_explicit(&c->kicked, 1, memory_order_release);
	pthread_cond_signal(&c->wake_cond);
	pthread_mutex_unlock(&c->wake_lock);
}

/* Workload hooks, on the vCPU thread outside any guest access. */
static bool wl_checkpoint(void *arg)
{
	struct soft_vcpu *c = arg;

	if (atomic_load_explicit(&c->kicked, memory_order_acquire) ||
	    hv_vcpu_kick_pending(c->vcpu)) {
		c->stop_asked = true;
		return true;
	}
	return false;
}

/*
 * Sleep until @deadline_ns (CLOCK_MONOTONIC) unless a kick or a pending
 * request (set before its kick, see hvcore/vcpu.h) ends the sleep first.
 * The workload then reads the clock, and our checkpoint makes it return.
 */
static void wl_wait(void *arg, uint64_t deadline_ns)
{
	struct soft_vcpu *c = arg;
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};

	pthread_mutex_lock(&c->wake_lock);
	while (!atomic_load_explicit(&c->kicked, memory_order_acquire) &&
	       !hv_vcpu_kick_pending(c->vcpu)) {
		if (pthread_cond_timedwait(&c->wake_cond, &c->wake_lock,
					   &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&c->wake_lock);
}

static bool wl_heartbeat(void *arg, const struct hv_wl_status *st)
{
	struct soft_vcpu *c = arg;

	c->hb_pending = true;
	c->hb_seq = st->seq;
	c->hb_clock = st->last_tsc;
	return true; /* report it now: vcpu.c timestamps it */
}

/* Report one event noted earlier; false when there is none. */
static bool take_event(struct soft_vcpu *c, struct hv_exit *exit)
{
	if (c->hb_pending) {
		c->hb_pending = false;
		exit->kind = HV_EXIT_HEARTBEAT;
		exit->args[0] = c->hb_seq;
		exit->args[1] = c->hb_clock;
		return true;
	}
	if (c->sv->pml_full_exits) {
		c->sv->pml_full_exits--;
		exit->kind = HV_EXIT_LOG_FULL;
		exit->detail = "soft_pml_full";
		return true;
	}
	return false;
}

int hv_soft_accel_vcpu_run(struct hv_vcpu *vcpu, struct hv_exit *exit)
{
	struct soft_vcpu *c = vcpu->accel;
	const struct hv_soft_wl_ctl ctl = {
		.checkpoint = wl_checkpoint,
		.heartbeat = wl_heartbeat,
		.wait = wl_wait,
		.pace_owed = &c->pace_owed,
		.arg = c,
	};
	int ret;

	atomic_exchange_explicit(&c->kicked, 0, memory_order_acq_rel);
	if (take_event(c, exit))
		return 0;
	if (hv_vcpu_kick_pending(vcpu)) {
		exit->kind = HV_EXIT_KICK;
		return 0;
	}
	c->stop_asked = false;
	ret = hv_soft_vcpu_run_workload(c->sv, &ctl);
	if (c->sv->error) {
		/* An access outside guest RAM (or a write to a read-only
		 * slot): like an unhandled fault, the vCPU cannot go on. */
		hv_err("soft", "vm=%s vcpu=%u op=run err=%d",
		       hv_vm_name(vcpu->vm), vcpu->id, c->sv->error);
		return c->sv->error;
	}
	if (ret == -ENOMEM)
		return ret;
	if (take_event(c, exit))
		return 0;
	if (!ret && c->stop_asked) {
		exit->kind = HV_EXIT_KICK;
		return 0;
	}
	/* Returned on its own: max_writes, the params stop flag, or bad
	 * params (-EINVAL), as the guest image reports with its DONE. */
	exit->kind = HV_EXIT_DONE;
	exit->args[0] = (uint64_t)(int64_t)ret;
	return 0;
}

static gpa_t status_gpa(const struct hv_vcpu *vcpu)
{
	return HV_WL_STATUS_GPA + vcpu->id * sizeof(struct hv_wl_status);
}

/*
 * vCPU state v1, 64 bytes little-endian:
 *   u32 magic, u32 version, u32 vcpu id, u32 reserved (0),
 *   u64 seq, reads, passes, heartbeats, last_tsc, max_gap_tsc
 * (the workload status line minus its transient fields).
 */
int hv_soft_accel_vcpu_save(struct hv_vcpu *vcpu, struct hv_blob *out)
{
	struct hv_wl_status st;
	uint8_t *p;
	int ret;

	ret = hv_vm_read_guest(vcpu->vm, status_gpa(vcpu), &st, sizeof(st));
	if (ret)
		return ret;
	p = calloc(1, VCPU_STATE_LEN);
	if (!p)
		return -ENOMEM;
	soft_put_le32(p, VCPU_STATE_MAGIC);
	soft_put_le32(p + 4, VCPU_STATE_VERSION);
	soft_put_le32(p + 8, vcpu->id);
	soft_put_le64(p + 16, st.seq);
	soft_put_le64(p + 24, st.reads);
	soft_put_le64(p + 32, st.passes);
	soft_put_le64(p + 40, st.heartbeats);
	soft_put_le64(p + 48, st.last_tsc);
	soft_put_le64(p + 56, st.max_gap_tsc);
	out->data = p;
	out->len = VCPU_STATE_LEN;
	return 0;
}

int hv_soft_accel_vcpu_restore(struct hv_vcpu *vcpu, const struct hv_blob *in)
{
	struct hv_wl_status st;
	const uint8_t *p = in->data;

	if (!p || in->len != VCPU_STATE_LEN ||
	    soft_get_le32(p) != VCPU_STATE_MAGIC ||
	    soft_get_le32(p + 4) != VCPU_STATE_VERSION ||
	    soft_get_le32(p + 8) != vcpu->id || soft_get_le32(p + 12) != 0)
		return -EINVAL;
	/*
	 * Over the status line as guest RAM holds it: after a migration
	 * that is the source's own line (its page travelled with the rest),
	 * so the fields the state does not carry (the throttle still owed)
	 * stay as the source left them, and the restore changes nothing the
	 * page-by-page comparison of both sides would see.
	 */
	if (hv_vm_read_guest(vcpu->vm, status_gpa(vcpu), &st, sizeof(st)))
		memset(&st, 0, sizeof(st));
	st.seq = soft_get_le64(p + 16);
	st.reads = soft_get_le64(p + 24);
	st.passes = soft_get_le64(p + 32);
	st.heartbeats = soft_get_le64(p + 40);
	st.last_tsc = soft_get_le64(p + 48);
	st.max_gap_tsc = soft_get_le64(p + 56);
	st.vcpu = vcpu->id;
	/* A logged VMM write: a migration in progress sends it too. */
	return hv_vm_write_guest(vcpu->vm, status_gpa(vcpu), &st, sizeof(st));
}
