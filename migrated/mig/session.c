// SPDX-License-Identifier: MIT
/* What the source and destination engines share (session_priv.h). */
#include "migrated/mig/session_priv.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "hvcore/workload.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/tls.h"

static const char *const phase_names[MIG_PHASE_COUNT] = {
	[MIG_PHASE_INVALID] = "invalid",
	[MIG_PHASE_SETUP] = "setup",
	[MIG_PHASE_ITERATE] = "iterate",
	[MIG_PHASE_SWITCHOVER] = "switchover",
	[MIG_PHASE_COMMIT] = "commit",
	[MIG_PHASE_COMPLETED] = "completed",
	[MIG_PHASE_FAILED] = "failed",
	[MIG_PHASE_CANCELLED] = "cancelled",
	[MIG_PHASE_UNRESOLVED] = "unresolved",
	[MIG_PHASE_POSTCOPY] = "postcopy",
	[MIG_PHASE_POSTCOPY_PAUSED] = "postcopy_paused",
};

const char *mig_phase_name(enum mig_phase phase)
{
	if ((unsigned)phase >= MIG_PHASE_COUNT)
		return "invalid";
	return phase_names[phase];
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t mig__now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t mig__mono_to_real(uint64_t mono_ns)
{
	uint64_t m = clock_ns(CLOCK_MONOTONIC), r = clock_ns(CLOCK_REALTIME);

	if (!mono_ns)
		return 0;
	return r - (m - mono_ns);
}

int mig__tls_make(const struct mig_opts *o, bool server,
		  struct mig_tls **out)
{
	struct mig_tls_cfg c;

	if (o->insecure && !o->tls) {
		*out = NULL;
		return 0;
	}
	if (!o->tls)
		return -EINVAL;
	c = *o->tls;
	c.server = server;
	return mig_tls_create(&c, out);
}

int mig__opts_check(const struct mig_opts *o, unsigned *nchan,
		    uint32_t *io_ms)
{
	if (!o)
		return -EINVAL;
	if (o->nr_channels > MIG_CHANNELS_MAX)
		return -EINVAL;
	if (!o->tls && !o->insecure)
		return -EINVAL;
	if (o->throttle_max_pct > 99 || o->zstd_level < -1 ||
	    o->zstd_level > 22)
		return -EINVAL;
	if (o->vm_name && *o->vm_name && !mig_vm_name_valid(o->vm_name))
		return -EINVAL;
	*nchan = o->nr_channels ? o->nr_channels : MIG_CHANNELS_DEFAULT;
	*io_ms = o->io_timeout_ms ? o->io_timeout_ms
				  : MIG_IO_TIMEOUT_MS_DEFAULT;
	return 0;
}

unsigned mig__abort_reason(int err)
{
	switch (err) {
	case -ECANCELED:
		return MIG__ABORT_REASON__ABORT_CANCELLED;
	case -ETIMEDOUT:
		return MIG__ABORT_REASON__ABORT_TIMEOUT;
	case -EPROTO:
	case -EBADMSG:
	case -EMSGSIZE:
	case -ERANGE:
	case -ENOENT:
		return MIG__ABORT_REASON__ABORT_PROTOCOL;
	case -EPIPE:
	case -ECONNRESET:
	case -EIO:
		return MIG__ABORT_REASON__ABORT_IO;
	default:
		return MIG__ABORT_REASON__ABORT_INTERNAL;
	}
}

void mig__send_abort(struct mig_conn *c, int err, const char *detail)
{
	if (!c || mig_conn_error(c))
		return;
	if (err == -ECANCELED) {
		Mig__Cancel m = MIG__CANCEL__INIT;

		m.detail = (char *)(detail ? detail : "");
		mig_conn_send(c, MIG__MSG_TYPE__MSG_CANCEL, &m.base, NULL, 0);
	} else {
		Mig__Abort m = MIG__ABORT__INIT;

		m.reason = (Mig__AbortReason)mig__abort_reason(err);
		m.detail = (char *)(detail ? detail : "");
		mig_conn_send(c, MIG__MSG_TYPE__MSG_ABORT, &m.base, NULL, 0);
	}
}

bool mig__wants_heartbeats(struct hv_vm *vm)
{
	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
		uint32_t us = 0;

		hv_vm_read_guest(vm,
				 HV_WL_PARAMS_GPA +
					 offsetof(struct hv_wl_params, vcpu) +
					 i * sizeof(struct hv_wl_vcpu_params) +
					 offsetof(struct hv_wl_vcpu_params,
						  heartbeat_us),
				 &us, sizeof(us));
		if (us)
			return true;
	}
	return false;
}

uint64_t mig__first_heartbeat(struct hv_vm *vm)
{
	uint64_t end = mig__now_ns() + MIG_FIRST_HEARTBEAT_WAIT_MS * 1000000ull;

	while (mig__now_ns() < end) {
		uint64_t first = 0;

		for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++) {
			struct hv_vcpu_stats st;

			if (hv_vm_vcpu_stats(vm, i, &st) || !st.heartbeats)
				continue;
			if (!first || st.last_heartbeat_ns < first)
				first = st.last_heartbeat_ns;
		}
		if (first)
			return first;
		usleep(200);
	}
	return 0;
}

void mig__prog_init(struct mig__prog *pr, mig_progress_cb cb, void *arg)
{
	memset(pr, 0, sizeof(*pr));
	pthread_mutex_init(&pr->lock, NULL);
	pthread_mutex_init(&pr->cblock, NULL);
	pr->cb = cb;
	pr->arg = arg;
	pr->p.phase = MIG_PHASE_SETUP;
}

void mig__prog_fini(struct mig__prog *pr)
{
	pthread_mutex_destroy(&pr->cblock);
	pthread_mutex_destroy(&pr->lock);
}

void mig__prog_get(struct mig__prog *pr, struct mig_progress *out)
{
	pthread_mutex_lock(&pr->lock);
	*out = pr->p;
	pthread_mutex_unlock(&pr->lock);
}

void mig__prog_emit(struct mig__prog *pr, bool force)
{
	struct mig_progress snap;
	uint64_t now;

	if (!pr->cb)
		return;
	pthread_mutex_lock(&pr->cblock);
	now = mig__now_ns();
	if (force || now - pr->last_cb_ns >= 100000000ull) {
		pr->last_cb_ns = now;
		mig__prog_get(pr, &snap);
		pr->cb(pr->arg, &snap);
	}
	pthread_mutex_unlock(&pr->cblock);
}

void mig__prog_phase(struct mig__prog *pr, enum mig_phase ph)
{
	pthread_mutex_lock(&pr->lock);
	pr->p.phase = ph;
	pthread_mutex_unlock(&pr->lock);
	mig__prog_emit(pr, true);
}

void mig__prog_fail(struct mig__prog *pr, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&pr->lock);
	if (!pr->p.error) {
		pr->p.error = err;
		pr->p.phase = err == -ECANCELED ? MIG_PHASE_CANCELLED
						: MIG_PHASE_FAILED;
		va_start(ap, fmt);
		vsnprintf(pr->p.message, sizeof(pr->p.message), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&pr->lock);
}

void mig__prog_note(struct mig__prog *pr, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	pthread_mutex_lock(&pr->lock);
	len = strlen(pr->p.message);
	if (len + 3 < sizeof(pr->p.message)) {
		if (len) {
			memcpy(pr->p.message + len, "; ", 3);
			len += 2;
		}
		va_start(ap, fmt);
		vsnprintf(pr->p.message + len, sizeof(pr->p.message) - len, fmt,
			  ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&pr->lock);
}

void mig__prog_set(struct mig__prog *pr, enum mig_phase ph, int err,
		   const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&pr->lock);
	pr->p.phase = ph;
	pr->p.error = err;
	va_start(ap, fmt);
	vsnprintf(pr->p.message, sizeof(pr->p.message), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&pr->lock);
}
