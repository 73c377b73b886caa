// SPDX-License-Identifier: MIT
/*
 * vCPU threads and their state machine (see vcpu.h). No ioctls here: the
 * accelerator's vcpu_run/vcpu_kick do the work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/bug.h"
#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int hv_vcpu_create(struct hv_vm *vm, uint32_t id, struct hv_vcpu **out)
{
	struct hv_vcpu *vcpu = calloc(1, sizeof(*vcpu));
	int ret;

	if (!vcpu)
		return -ENOMEM;
	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->state = HV_VCPU_CREATED;
	pthread_mutex_init(&vcpu->lock, NULL);
	pthread_cond_init(&vcpu->cond, NULL);
	ret = vm->ops->vcpu_init(vcpu);
	if (ret) {
		pthread_cond_destroy(&vcpu->cond);
		pthread_mutex_destroy(&vcpu->lock);
		free(vcpu);
		return ret;
	}
	*out = vcpu;
	return 0;
}

void hv_vcpu_destroy(struct hv_vcpu *vcpu)
{
	if (!vcpu)
		return;
	HV_BUG_ON(vcpu->has_thread);
	vcpu->vm->ops->vcpu_fini(vcpu);
	pthread_cond_destroy(&vcpu->cond);
	pthread_mutex_destroy(&vcpu->lock);
	free(vcpu);
}

static int load_req(struct hv_vcpu *vcpu)
{
	return __atomic_load_n(&vcpu->req, __ATOMIC_ACQUIRE);
}

bool hv_vcpu_kick_pending(struct hv_vcpu *vcpu)
{
	return load_req(vcpu) != HV_VCPU_REQ_NONE;
}

static void set_state(struct hv_vcpu *vcpu, enum hv_vcpu_state s)
{
	vcpu->state = s;
	pthread_cond_broadcast(&vcpu->cond);
}

/*
 * Park while a pause is requested. Returns true when the thread must stop.
 * Called with vcpu->lock held.
 */
static bool park_locked(struct hv_vcpu *vcpu)
{
	for (;;) {
		int req = load_req(vcpu);

		if (req == HV_VCPU_REQ_STOP)
			return true;
		if (req == HV_VCPU_REQ_NONE) {
			if (vcpu->state != HV_VCPU_RUNNING)
				set_state(vcpu, HV_VCPU_RUNNING);
			return false;
		}
		if (vcpu->state != HV_VCPU_PAUSED)
			set_state(vcpu, HV_VCPU_PAUSED);
		pthread_cond_wait(&vcpu->cond, &vcpu->lock);
	}
}

bool hv_vcpu_checkpoint(struct hv_vcpu *vcpu)
{
	bool stop;

	if (!hv_vcpu_kick_pending(vcpu))
		return false;
	pthread_mutex_lock(&vcpu->lock);
	stop = park_locked(vcpu);
	pthread_mutex_unlock(&vcpu->lock);
	return stop;
}

/*
 * A heartbeat at @t carried @seq: close the write-rate window when it is
 * long enough, and judge whether the vCPU wrote flat out in it. Called
 * under vcpu->lock, before last_heartbeat_ns moves to @t.
 */
static void rate_window(struct hv_vcpu *vcpu, struct hv_vcpu_stats *st,
			uint64_t t, uint64_t seq)
{
	const volatile struct hv_wl_params *p;
	uint64_t dt, rate, pace;
	uint32_t throttle;

	if (!st->rate_win_ns || seq < st->rate_win_seq ||
	    t - st->last_heartbeat_ns > HV_VCPU_RATE_STALL_NS) {
		st->rate_win_ns = t;
		st->rate_win_seq = seq;
		return;
	}
	dt = t - st->rate_win_ns;
	if (dt < HV_VCPU_RATE_WINDOW_NS)
		return;
	rate = (uint64_t)((double)(seq - st->rate_win_seq) * 1e9 / (double)dt);
	st->write_rate = rate;
	st->rate_win_ns = t;
	st->rate_win_seq = seq;
	/* The pace and throttle as the guest sees them now. */
	p = hv_vm_gpa_to_hva(vcpu->vm, HV_WL_PARAMS_GPA, sizeof(*p));
	if (!p || vcpu->id >= HV_WL_MAX_VCPUS || !rate)
		return;
	pace = p->vcpu[vcpu->id].rate_pages;
	throttle = p->vcpu[vcpu->id].throttle_pct;
	if (throttle || (pace && rate * 10 >= pace * 9))
		return;
	st->write_ceiling = rate;
	if (pace && pace != st->rate_warned) {
		st->rate_warned = pace;
		hv_warn("vcpu",
			"vm=%s vcpu=%u op=rate_short asked=%llu reached=%llu "
			"(page writes/s: the vCPU cannot write faster here)",
			hv_vm_name(vcpu->vm), vcpu->id,
			(unsigned long long)pace, (unsigned long long)rate);
	}
}

/* Account one exit; returns true when the vCPU stops on its own. */
static bool account_exit(struct hv_vcpu *vcpu, const struct hv_exit *ex)
{
	struct hv_vcpu_stats *st = &vcpu->stats;
	unsigned k = (unsigned)ex->kind < HV_EXIT_COUNT ? ex->kind : 0;
	bool stop = false;
	uint64_t t;

	pthread_mutex_lock(&vcpu->lock);
	st->exits[k]++;
	if (ex->detail)
		st->last_detail = ex->detail;
	switch (ex->kind) {
	case HV_EXIT_HEARTBEAT:
		t = now_ns();
		rate_window(vcpu, st, t, ex->args[0]);
		if (st->last_heartbeat_ns &&
		    t - st->last_heartbeat_ns > st->max_heartbeat_gap_ns)
			st->max_heartbeat_gap_ns = t - st->last_heartbeat_ns;
		st->last_heartbeat_ns = t;
		if (!st->heartbeats)
			st->first_heartbeat_ns = t;
		st->heartbeats++;
		break;
	case HV_EXIT_SYNC:
		st->last_sync_arg = ex->args[0];
		break;
	case HV_EXIT_DONE:
		stop = true;
		if ((int64_t)ex->args[0] < 0)
			st->error = (int)(int64_t)ex->args[0];
		break;
	case HV_EXIT_ASSERT:
		st->asserted = true;
		memcpy(st->assert_file, ex->file, sizeof(st->assert_file));
		st->assert_file[sizeof(st->assert_file) - 1] = 0;
		st->assert_line = ex->line;
		memcpy(st->assert_args, ex->args, sizeof(st->assert_args));
		hv_err("vcpu",
		       "vm=%s vcpu=%u guest_assert=%s:%u "
		       "args=0x%llx,0x%llx,0x%llx,0x%llx",
		       hv_vm_name(vcpu->vm), vcpu->id, st->assert_file,
		       st->assert_line, (unsigned long long)ex->args[0],
		       (unsigned long long)ex->args[1],
		       (unsigned long long)ex->args[2],
		       (unsigned long long)ex->args[3]);
		stop = true;
		break;
	case HV_EXIT_SHUTDOWN:
	case HV_EXIT_ERROR:
	case HV_EXIT_INVALID:
	case HV_EXIT_COUNT:
		st->error = -EIO;
		hv_err("vcpu", "vm=%s vcpu=%u exit=%s detail=%s",
		       hv_vm_name(vcpu->vm), vcpu->id,
		       hv_exit_kind_name(ex->kind),
		       ex->detail ? ex->detail : "-");
		stop = true;
		break;
	case HV_EXIT_KICK:
	case HV_EXIT_LOG_FULL:
		break;
	}
	pthread_mutex_unlock(&vcpu->lock);
	return stop;
}

static void *vcpu_thread(void *arg)
{
	struct hv_vcpu *vcpu = arg;
	const struct hv_accel_ops *ops = vcpu->vm->ops;

	for (;;) {
		struct hv_exit ex;
		int ret;

		if (hv_vcpu_kick_pending(vcpu)) {
			bool stop;

			pthread_mutex_lock(&vcpu->lock);
			stop = park_locked(vcpu);
			pthread_mutex_unlock(&vcpu->lock);
			if (stop)
				break;
		}
		memset(&ex, 0, sizeof(ex));
		ret = ops->vcpu_run(vcpu, &ex);
		if (ret) {
			pthread_mutex_lock(&vcpu->lock);
			vcpu->stats.error = ret;
			pthread_mutex_unlock(&vcpu->lock);
			hv_err("vcpu", "vm=%s vcpu=%u op=run err=%d",
			       hv_vm_name(vcpu->vm), vcpu->id, ret);
			break;
		}
		if (account_exit(vcpu, &ex))
			break;
	}
	pthread_mutex_lock(&vcpu->lock);
	set_state(vcpu, HV_VCPU_STOPPED);
	pthread_mutex_unlock(&vcpu->lock);
	return NULL;
}

int hv_vcpu_start(struct hv_vcpu *vcpu, bool paused)
{
	int ret;

	pthread_mutex_lock(&vcpu->lock);
	if (vcpu->has_thread || vcpu->state != HV_VCPU_CREATED) {
		pthread_mutex_unlock(&vcpu->lock);
		return -EBUSY;
	}
	__atomic_store_n(&vcpu->req,
			 paused ? HV_VCPU_REQ_PAUSE : HV_VCPU_REQ_NONE,
			 __ATOMIC_RELEASE);
	ret = -pthread_create(&vcpu->thread, NULL, vcpu_thread, vcpu);
	if (!ret)
		vcpu->has_thread = true;
	pthread_mutex_unlock(&vcpu->lock);
	return ret;
}

void hv_vcpu_request_pause(struct hv_vcpu *vcpu)
{
	pthread_mutex_lock(&vcpu->lock);
	if (load_req(vcpu) == HV_VCPU_REQ_NONE)
		__atomic_store_n(&vcpu->req, HV_VCPU_REQ_PAUSE,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&vcpu->lock);
	vcpu->vm->ops->vcpu_kick(vcpu);
}

void hv_vcpu_wait_parked(struct hv_vcpu *vcpu)
{
	pthread_mutex_lock(&vcpu->lock);
	while (vcpu->has_thread && vcpu->state != HV_VCPU_PAUSED &&
	       vcpu->state != HV_VCPU_STOPPED)
		pthread_cond_wait(&vcpu->cond, &vcpu->lock);
	pthread_mutex_unlock(&vcpu->lock);
}

void hv_vcpu_resume(struct hv_vcpu *vcpu)
{
	pthread_mutex_lock(&vcpu->lock);
	if (load_req(vcpu) == HV_VCPU_REQ_PAUSE)
		__atomic_store_n(&vcpu->req, HV_VCPU_REQ_NONE,
				 __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vcpu->cond);
	pthread_mutex_unlock(&vcpu->lock);
}

void hv_vcpu_stop(struct hv_vcpu *vcpu)
{
	bool join;

	pthread_mutex_lock(&vcpu->lock);
	__atomic_store_n(&vcpu->req, HV_VCPU_REQ_STOP, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vcpu->cond);
	join = vcpu->has_thread;
	if (!join)
		vcpu->state = HV_VCPU_STOPPED;
	pthread_mutex_unlock(&vcpu->lock);
	if (!join)
		return;
	vcpu->vm->ops->vcpu_kick(vcpu);
	pthread_join(vcpu->thread, NULL);
	pthread_mutex_lock(&vcpu->lock);
	vcpu->has_thread = false;
	pthread_mutex_unlock(&vcpu->lock);
}

enum hv_vcpu_state hv_vcpu_get_state(struct hv_vcpu *vcpu)
{
	enum hv_vcpu_state s;

	pthread_mutex_lock(&vcpu->lock);
	s = vcpu->state;
	pthread_mutex_unlock(&vcpu->lock);
	return s;
}

void hv_vcpu_get_stats(struct hv_vcpu *vcpu, struct hv_vcpu_stats *out)
{
	pthread_mutex_lock(&vcpu->lock);
	*out = vcpu->stats;
	pthread_mutex_unlock(&vcpu->lock);
}
