// SPDX-License-Identifier: MIT
/*
 * Migration and subscription calls of the control RPC (calls.h). Loop
 * thread; the engine's blocking parts live in migration.c's threads.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hvcore/log.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/vm_info.h"

#define COMP "migd.rpc"

static Migd__Status status_of_start(int ret)
{
	switch (ret) {
	case -ENOSYS:
		return MIGD__STATUS__STATUS_UNAVAILABLE;
	case -EPERM:
	case -EBUSY:
		return MIGD__STATUS__STATUS_FAILED_PRECONDITION;
	default:
		return migd_status_from_errno(ret);
	}
}

static Migd__MigInfo *mig_info_new(struct migd_call *call,
				   struct migd_mig *m)
{
	Migd__MigInfo *info = migd_call_alloc(call, sizeof(*info));
	Migd__MigProgress *prog = migd_call_alloc(call, sizeof(*prog));
	Migd__Downtime *dt = migd_call_alloc(call, sizeof(*dt));
	char *msg = migd_call_alloc(call, MIGD_MIG_MSG_LEN);

	if (!info || !prog || !dt || !msg)
		return NULL;
	migd_mig_info_fill(m, info, prog, dt, msg);
	return info;
}

void migd_call_mig_incoming(struct migd_call *call)
{
	const Migd__MigIncomingRequest *r = call->req->mig_incoming;
	struct migd_vmm *d = migd_vmm_of(call);
	struct migd_mig_params prm = { 0 };
	Migd__MigIncomingResult *res;
	struct migd_mig *m;
	char err[512];
	int ret;

	if (r->listen && *r->listen) {
		if (migd_parse_hostport(r->listen, true, prm.host,
					sizeof(prm.host), &prm.port)) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_INVALID_ARGUMENT,
				       "bad listen address '%s' (HOST:PORT)",
				       r->listen);
			return;
		}
	} else {
		snprintf(prm.host, sizeof(prm.host), "%s", d->cfg.mig_host);
		prm.port = d->cfg.mig_port;
		prm.port_max = d->cfg.mig_port_max;
	}
	if (r->vm_name && *r->vm_name) {
		if (!migd_name_valid(r->vm_name)) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_INVALID_ARGUMENT,
				       "invalid VM name '%s'", r->vm_name);
			return;
		}
		/* Held by migd_mig_start_incoming (ALREADY_EXISTS if
		 * taken), so that it is still free when the VM arrives. */
		snprintf(prm.vm_name, sizeof(prm.vm_name), "%s", r->vm_name);
	}
	prm.insecure = r->insecure;
	prm.timeout_ms = r->timeout_ms;
	/* 0: the default; all ones: none (control.proto). */
	prm.arm_timeout_ms = !r->arm_timeout_ms ? MIGD_ARM_TIMEOUT_MS_DEFAULT
			     : r->arm_timeout_ms == UINT32_MAX
				     ? 0
				     : r->arm_timeout_ms;
	if (r->accel && *r->accel) {
		prm.accel = hv_accel_kind_parse(r->accel, HV_ACCEL_INVALID);
		if (prm.accel == HV_ACCEL_INVALID) {
			migd_call_fail(call,
				       MIGD__STATUS__STATUS_INVALID_ARGUMENT,
				       "unknown accelerator '%s' (kvm or soft)",
				       r->accel);
			return;
		}
		if (!migd_accel_usable(prm.accel)) {
			migd_call_fail(call, MIGD__STATUS__STATUS_UNAVAILABLE,
				       "accelerator '%s' is not usable on this "
				       "host (/dev/kvm cannot be opened): "
				       "migrate-recv --accel names one this "
				       "host has (soft always works)",
				       r->accel);
			return;
		}
	}
	if (d->reg.count || d->migs) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this worker runs a VM already");
		return;
	}
	/* A worker takes the id its daemon gave the migration. */
	if (r->id)
		d->next_mig_id = r->id - 1;
	ret = migd_mig_start_incoming(d, &prm, &m, err, sizeof(err));
	if (ret) {
		migd_call_fail(call, status_of_start(ret), "%s", err);
		return;
	}
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__mig_incoming_result__init(res);
	res->id = m->id;
	res->port = m->port;
	res->listen = m->prm.host;
	call->resp->result_case = MIGD__RESPONSE__RESULT_MIG_INCOMING;
	call->resp->mig_incoming = res;
}

void migd_call_mig_start(struct migd_call *call)
{
	const Migd__MigStartRequest *r = call->req->mig_start;
	struct migd_vmm *d = migd_vmm_of(call);
	struct migd_mig_params prm = { 0 };
	Migd__MigStartResult *res;
	struct migd_mig *m;
	struct migd_vm *v;
	char err[512];
	int ret;

	if (!r->vm || !*r->vm) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM name missing");
		return;
	}
	v = migd_registry_find(&d->reg, r->vm);
	if (!v) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", r->vm);
		return;
	}
	if (!r->dest || migd_parse_hostport(r->dest, false, prm.host,
					    sizeof(prm.host), &prm.port) ||
	    !prm.host[0]) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "bad destination '%s' (HOST:PORT, port 1..65535)",
			       r->dest ? r->dest : "");
		return;
	}
	if (r->channels > MIG_CHANNELS_MAX) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "channels %u: at most %u", r->channels,
			       MIG_CHANNELS_MAX);
		return;
	}
	if (r->zstd_level < -1 || r->zstd_level > 22) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "zstd_level %d: -1 (off), 0 (adaptive) or 1..22",
			       r->zstd_level);
		return;
	}
	if (r->postcopy_throttle_max_pct > 99 || r->throttle_max_pct > 99 ||
	    (unsigned)r->timeout_policy >
		    MIGD__MIG_TIMEOUT_POLICY__MIG_TIMEOUT_POSTCOPY) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "postcopy_throttle_max_pct and throttle_max_pct "
			       "0..99, timeout_policy "
			       "abort, switchover or postcopy");
		return;
	}
	if (v->mig_id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is already being migrated", v->name);
		return;
	}
	if (migd_vm_refuse_devices(call, v))
		return;
	/* Postcopy of a Linux guest is built (its devices fault missing
	 * pages in through the registered mapping, the load's own faults
	 * are served before the Ack: docs/migration-protocol.md) but not
	 * yet seen passing in the KVM rig (test_linux_postcopy.sh): until
	 * then a Linux guest migrates precopy. */
	if ((r->postcopy || r->postcopy_auto ||
	     r->timeout_policy ==
		     MIGD__MIG_TIMEOUT_POLICY__MIG_TIMEOUT_POSTCOPY) &&
	    migd_vm_refuse_linux(call, v, "postcopy"))
		return;
	prm.channels = r->channels;
	prm.bandwidth = r->bandwidth;
	prm.downtime_ms = r->downtime_ms;
	prm.insecure = r->insecure;
	prm.timeout_ms = r->timeout_ms;
	prm.zstd_level = r->zstd_level;
	prm.delta_cache = r->delta_cache < 0 ? -1 : r->delta_cache;
	prm.postcopy = r->postcopy;
	prm.postcopy_after_ms = r->postcopy_after_ms;
	prm.postcopy_auto = r->postcopy_auto;
	prm.postcopy_throttle_max_pct = r->postcopy_throttle_max_pct;
	prm.timeout_policy = (unsigned)r->timeout_policy;
	prm.throttle_max_pct = r->throttle_max_pct;
	/* 0 = off; negative = on at the default size. */
	if (r->id)
		d->next_mig_id = r->id - 1; /* the daemon's id (a worker) */
	ret = migd_mig_start_outgoing(d, v, &prm, &m, err, sizeof(err));
	if (ret) {
		migd_call_fail(call, status_of_start(ret), "%s", err);
		return;
	}
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__mig_start_result__init(res);
	res->id = m->id;
	call->resp->result_case = MIGD__RESPONSE__RESULT_MIG_START;
	call->resp->mig_start = res;
}

/* Resolve a MigRef; fails the call when it names nothing. */
static struct migd_mig *ref_mig(struct migd_call *call, const Migd__MigRef *r)
{
	struct migd_mig *m;

	if (!migd_mig_ref_check(call, r))
		return NULL;
	m = migd_mig_find(migd_vmm_of(call), r->id, r->vm);
	if (!m)
		migd_mig_ref_missing(call, r);
	return m;
}

void migd_call_mig_status(struct migd_call *call)
{
	const Migd__MigStatusRequest *r = call->req->mig_status;
	Migd__MigStatusResult *res = migd_call_alloc(call, sizeof(*res));
	Migd__MigInfo **arr;
	size_t n = 0, i = 0;

	if (!res)
		return;
	migd__mig_status_result__init(res);
	if (r->ref && (r->ref->id || (r->ref->vm && *r->ref->vm))) {
		struct migd_mig *m = ref_mig(call, r->ref);

		if (!m)
			return;
		arr = migd_call_alloc(call, sizeof(*arr));
		if (!arr || !(arr[0] = mig_info_new(call, m)))
			return;
		res->n_migrations = 1;
		res->migrations = arr;
	} else {
		for (struct migd_mig *m = migd_vmm_of(call)->migs; m;
		     m = m->next)
			n++;
		arr = n ? migd_call_alloc(call, n * sizeof(*arr)) : NULL;
		if (n && !arr)
			return;
		for (struct migd_mig *m = migd_vmm_of(call)->migs; m;
		     m = m->next)
			if (!(arr[i++] = mig_info_new(call, m)))
				return;
		res->n_migrations = n;
		res->migrations = arr;
	}
	call->resp->result_case = MIGD__RESPONSE__RESULT_MIG_STATUS;
	call->resp->mig_status = res;
}

static void reply_subscribed(struct migd_call *call, struct migd_mig *m)
{
	Migd__SubscribeResult *res = migd_call_alloc(call, sizeof(*res));

	if (!res)
		return;
	migd__subscribe_result__init(res);
	res->subscription = call->req->id;
	if (m)
		res->migration = mig_info_new(call, m);
	call->resp->result_case = MIGD__RESPONSE__RESULT_SUBSCRIBE;
	call->resp->subscribe = res;
}

void migd_call_mig_watch(struct migd_call *call)
{
	const Migd__MigWatchRequest *r = call->req->mig_watch;
	struct migd_mig *m = ref_mig(call, r->ref);
	struct migd_sub *s;

	if (!m)
		return;
	/* A finished migration gets its final state in the reply and no
	 * subscription: there is nothing left to watch. */
	if (!m->finished) {
		s = migd_server_subscribe(call);
		if (!s)
			return;
		s->mig_id = m->id;
		s->kinds = 1u << MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE |
			   1u << MIGD__EVENT_KIND__EVENT_KIND_MIG_PROGRESS;
		s->interval_ns = migd_sub_interval_ns(r->interval_ms);
		s->end_with_mig = true;
	}
	reply_subscribed(call, m);
}

void migd_call_mig_cancel(struct migd_call *call)
{
	struct migd_mig *m = ref_mig(call, call->req->mig_cancel);
	int ret;

	if (!m)
		return;
	ret = migd_mig_cancel(m);
	if (ret == -EALREADY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu already finished or past its "
			       "commit point",
			       (unsigned long long)m->id);
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "cancel failed: %s", strerror(-ret));
}

void migd_call_mig_postcopy(struct migd_call *call)
{
	struct migd_mig *m = ref_mig(call, call->req->mig_postcopy);
	int ret;

	if (!m)
		return;
	if (m->dir == MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING) {
		struct migd_vm *v =
			migd_registry_find(&migd_vmm_of(call)->reg, m->vm);

		if (v && migd_vm_refuse_linux(call, v, "postcopy"))
			return;
	}
	ret = migd_mig_postcopy(m);
	if (ret == -EALREADY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu already finished or past its "
			       "switchover",
			       (unsigned long long)m->id);
	else if (ret == -EINVAL)
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "migration %llu is incoming: postcopy is the "
			       "source's call",
			       (unsigned long long)m->id);
	else if (ret == -EOPNOTSUPP)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "the destination of migration %llu does not "
			       "offer postcopy (older, or hugetlb memory)",
			       (unsigned long long)m->id);
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "postcopy failed: %s", strerror(-ret));
}

void migd_call_mig_switchover(struct migd_call *call)
{
	struct migd_mig *m = ref_mig(call, call->req->mig_switchover);
	int ret;

	if (!m)
		return;
	ret = migd_mig_switchover(m);
	if (ret == -EALREADY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu already finished or past its "
			       "precopy",
			       (unsigned long long)m->id);
	else if (ret == -EINVAL)
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "migration %llu is incoming: the switchover is "
			       "the source's call",
			       (unsigned long long)m->id);
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "switchover failed: %s", strerror(-ret));
}

void migd_call_mig_tune(struct migd_call *call)
{
	const Migd__MigTuneRequest *r = call->req->mig_tune;
	struct migd_mig *m = ref_mig(call, r->ref);
	struct mig_tune t = { 0 };
	int ret;

	if (!m)
		return;
	if (r->channels) {
		/* Removed from the API (control.proto): refused, not
		 * ignored, for clients that still send it. */
		migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
			       "the number of data channels is fixed when the "
			       "migration starts (migrate-send --channels N); "
			       "tune cannot change it");
		return;
	}
	if (r->throttle_max_pct > 99) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "--throttle (throttle_max_pct) at most 99%%");
		return;
	}
	t.max_bandwidth = r->bandwidth;
	t.downtime_ms = r->downtime_ms;
	t.throttle_max_pct = r->throttle_max_pct;
	ret = migd_mig_tune(m, &t);
	if (ret == -EALREADY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu already finished",
			       (unsigned long long)m->id);
	else if (ret == -EOPNOTSUPP)
		migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
			       "the engine cannot change that while running");
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "tune failed: %s", strerror(-ret));
	else
		hv_info(COMP,
			"event=migration_tuned mig=%llu bandwidth=%llu "
			"downtime_ms=%u throttle_max=%u",
			(unsigned long long)m->id,
			(unsigned long long)t.max_bandwidth, t.downtime_ms,
			t.throttle_max_pct);
}

void migd_call_mig_resolve(struct migd_call *call)
{
	const Migd__MigResolveRequest *r = call->req->mig_resolve;
	struct migd_mig *m;
	enum mig_resolve how;
	int ret;

	switch (r->action) {
	case MIGD__MIG_RESOLVE_ACTION__MIG_RESOLVE_RESUME_SOURCE:
		how = MIG_RESOLVE_RESUME_SOURCE;
		break;
	case MIGD__MIG_RESOLVE_ACTION__MIG_RESOLVE_CONFIRM_DESTINATION:
		how = MIG_RESOLVE_CONFIRM_DESTINATION;
		break;
	default:
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "action: resume_source or confirm_destination");
		return;
	}
	m = ref_mig(call, r->ref);
	if (!m)
		return;
	ret = migd_mig_resolve(m, how);
	if (ret == -EALREADY) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu is not unresolved (%s)",
			       (unsigned long long)m->id,
			       m->finished ? mig_phase_name(m->final.phase)
					   : "running");
		return;
	}
	if (ret && ret != -EBADE) {
		migd_call_fail(call, migd_status_from_errno(ret),
			       "resolve failed, still unresolved: %s",
			       strerror(-ret));
		return;
	}
	/* -EBADE: settled (the VM runs on the destination); the reply's
	 * progress carries the verification error. */
	call->resp->result_case = MIGD__RESPONSE__RESULT_MIG_RESOLVE;
	call->resp->mig_resolve = mig_info_new(call, m);
}

void migd_call_mig_recover(struct migd_call *call)
{
	const Migd__MigRecoverRequest *r = call->req->mig_recover;
	struct migd_mig *m = ref_mig(call, r->ref);
	char host[64];
	uint16_t port = 0;
	int ret;

	if (!m)
		return;
	host[0] = '\0';
	if (r->address && *r->address &&
	    migd_parse_hostport(r->address, false, host, sizeof(host),
				&port)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "address \"%.80s\": want HOST:PORT (numeric)",
			       r->address);
		return;
	}
	ret = migd_mig_recover(m, host[0] ? host : NULL, port);
	if (ret == -EALREADY)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu is not paused in postcopy (or "
			       "a recovery is in progress)",
			       (unsigned long long)m->id);
	else if (ret == -EINVAL)
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "migration %llu is incoming: its destination "
			       "waits for the source's recover",
			       (unsigned long long)m->id);
	else if (ret)
		migd_call_fail(call, migd_status_from_errno(ret),
			       "recover failed: %s", strerror(-ret));
}
