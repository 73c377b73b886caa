// SPDX-License-Identifier: MIT
/*
 * migd_host_drain: the calls that start a drain and read its status, on
 * the loop thread (host_drain.h); the drain itself runs in its thread
 * (host_drain.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host_drain.h"
#include "migrated/host/host_drain_priv.h"
#include "migrated/host/host_fleet.h"
#include "migrated/fleet/fleet.h"

#define COMP "migd.drain"

/* The last drain; kept (not freed) while its thread may still run. */
static struct migd_drain *last_drain;

const char *migd_drain_state_name(bool running, bool cancel, bool error)
{
	if (running)
		return cancel ? "cancelling" : "running";
	if (cancel)
		return "cancelled";
	return error ? "failed" : "finished";
}

static Migd__HostDrainStatus *status_fill(struct migd_call *call,
					  struct migd_drain *dr)
{
	Migd__HostDrainStatus *s = migd_call_alloc(call, sizeof(*s));
	Migd__HostDrainVm **v;

	if (!s)
		return NULL;
	migd__host_drain_status__init(s);
	pthread_mutex_lock(&dr->lock);
	s->host = migd_call_strdup(call, dr->host);
	s->running = dr->running;
	s->draining = migd_host_fleet_draining(dr->d);
	s->max_per_host = dr->max_per_host;
	s->max_fleet = dr->max_fleet;
	s->error = migd_call_strdup(call, dr->error);
	s->peak_fleet = dr->peak_fleet;
	s->peak_per_host = dr->peak_per_host;
	s->started_unix_ms = dr->started_unix_ms;
	s->elapsed_ms = dr->running ? (hv_now_ns() - dr->t0_ns) / 1000000
				    : dr->elapsed_ms;
	s->state = (char *)migd_drain_state_name(
		dr->running, atomic_load(&dr->cancel), dr->error[0]);
	v = dr->nr_rows ? migd_call_alloc(call, dr->nr_rows * sizeof(*v))
			: NULL;
	for (unsigned i = 0; v && i < dr->nr_rows; i++) {
		const struct migd_drain_row *r = &dr->rows[i];

		v[i] = migd_call_alloc(call, sizeof(*v[i]));
		if (!v[i])
			break;
		migd__host_drain_vm__init(v[i]);
		v[i]->vm = migd_call_strdup(call, r->vm);
		v[i]->state = (char *)migd_drain_row_names[r->state];
		v[i]->target = migd_call_strdup(call, r->target);
		v[i]->reason = migd_call_strdup(call, r->reason);
		v[i]->migration_id = r->mig_id;
		v[i]->mem_bytes = r->mem;
		v[i]->nr_vcpus = r->vcpus;
		v[i]->percent = r->percent;
		v[i]->committing = r->committing;
		s->n_vms++;
		s->migrated += r->state == ROW_MIGRATED;
		s->failed += r->state == ROW_FAILED ||
			     r->state == ROW_SKIPPED;
		s->cancelled += r->state == ROW_CANCELLED;
	}
	s->vms = v;
	pthread_mutex_unlock(&dr->lock);
	return s;
}


static bool drain_running(struct migd_drain *dr)
{
	bool r;

	pthread_mutex_lock(&dr->lock);
	r = dr->running;
	pthread_mutex_unlock(&dr->lock);
	return r;
}

static void drain_free(struct migd_drain *dr)
{
	if (dr->joinable)
		pthread_join(dr->thread, NULL);
	pthread_mutex_destroy(&dr->lock);
	free(dr->rows);
	free(dr);
}

/* Answer @call (host_drain, host_drain_status or host_drain_cancel)
 * with @dr's status. */
static void answer(struct migd_call *call, struct migd_drain *dr)
{
	Migd__HostDrainStatus *s = status_fill(call, dr);

	if (!s)
		return;
	switch (call->req->call_case) {
	case MIGD__REQUEST__CALL_HOST_DRAIN_STATUS:
		call->resp->result_case =
			MIGD__RESPONSE__RESULT_HOST_DRAIN_STATUS;
		call->resp->host_drain_status = s;
		break;
	case MIGD__REQUEST__CALL_HOST_DRAIN_CANCEL:
		call->resp->result_case =
			MIGD__RESPONSE__RESULT_HOST_DRAIN_CANCEL;
		call->resp->host_drain_cancel = s;
		break;
	default:
		call->resp->result_case = MIGD__RESPONSE__RESULT_HOST_DRAIN;
		call->resp->host_drain = s;
		break;
	}
}

static bool limit_ok(struct migd_call *call, const char *what, uint32_t v)
{
	if (v <= MIGD_DRAIN_LIMIT_MAX)
		return true;
	migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
		       "%s %u out of range (0 = default, 1..%u)", what, v,
		       MIGD_DRAIN_LIMIT_MAX);
	return false;
}

void migd_host_drain_call(struct migd_call *call)
{
	const Migd__HostDrainRequest *r = call->req->host_drain;
	struct migd_host *d = migd_host_of(call);
	const char *id = migd_host_fleet_id(d);
	struct migd_drain *dr;
	char err[512];
	int ret;

	if (!id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this daemon is not in a fleet (--etcd): there "
			       "is no other host to drain to");
		return;
	}
	if (!r->host || !r->host[0]) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "name the host to drain (this daemon is host "
			       "'%s')", id);
		return;
	}
	if (migd_drain_forward(call, r->host, r->forwarded))
		return;
	if (!limit_ok(call, "max_per_host", r->max_per_host) ||
	    !limit_ok(call, "max_fleet", r->max_fleet))
		return;
	if (last_drain && drain_running(last_drain)) {
		answer(call, last_drain); /* the one running */
		return;
	}
	if (!d->tls_ready) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "no TLS files (--tls-dir or --dev-tls): the "
			       "drain talks to the other daemons over mutual "
			       "TLS");
		return;
	}
	dr = calloc(1, sizeof(*dr));
	if (!dr) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return;
	}
	dr->d = d;
	snprintf(dr->host, sizeof(dr->host), "%s", id);
	dr->max_per_host = r->max_per_host ? r->max_per_host
					   : MIGD_DRAIN_PER_HOST_DEFAULT;
	dr->max_fleet = r->max_fleet ? r->max_fleet : MIGD_DRAIN_FLEET_DEFAULT;
	snprintf(dr->sock, sizeof(dr->sock), "%s", d->srv.path);
	snprintf(dr->ca, sizeof(dr->ca), "%s", d->tls_ca);
	snprintf(dr->cert, sizeof(dr->cert), "%s", d->tls_cert);
	snprintf(dr->key, sizeof(dr->key), "%s", d->tls_key);
	dr->tls.ca_file = dr->ca;
	dr->tls.cert_file = dr->cert;
	dr->tls.key_file = dr->key;
	dr->f = migd_host_fleet_keys(d);
	dr->grace_ms = migd_host_fleet_grace_ms(d);
	dr->started_unix_ms = hv_now_unix_ns() / 1000000;
	dr->t0_ns = hv_now_ns();
	dr->running = true;
	pthread_mutex_init(&dr->lock, NULL);
	/* Refuse new VMs before the first one leaves. */
	if (migd_host_fleet_set_draining(d, true, err, sizeof(err)))
		hv_warn(COMP, "event=drain_mark_failed host=%s err=\"%s\"",
			id, err);
	ret = -pthread_create(&dr->thread, NULL, migd_drain_thread, dr);
	if (ret) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
			       "drain thread: %s", strerror(-ret));
		pthread_mutex_destroy(&dr->lock);
		free(dr);
		return;
	}
	dr->joinable = true;
	if (last_drain)
		drain_free(last_drain);
	last_drain = dr;
	hv_info(COMP, "event=drain_start host=%s max_per_host=%u "
		"max_fleet=%u", id, dr->max_per_host, dr->max_fleet);
	answer(call, dr);
}

void migd_host_drain_status_call(struct migd_call *call)
{
	const Migd__HostDrainStatusRequest *r = call->req->host_drain_status;

	if (migd_drain_forward(call, r->host, false))
		return;
	if (!last_drain) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no drain ran on this host");
		return;
	}
	answer(call, last_drain);
}

void migd_host_drain_cancel_call(struct migd_call *call)
{
	const Migd__HostDrainCancelRequest *r = call->req->host_drain_cancel;
	const char *id = migd_host_fleet_id(migd_host_of(call));

	if (migd_drain_forward(call, r->host, r->forwarded))
		return;
	if (!last_drain) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no drain ran on host '%s'",
			       id ? id : "(standalone)");
		return;
	}
	if (!drain_running(last_drain)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "the drain of host '%s' already ended: nothing "
			       "to cancel (host undrain lets the host take "
			       "VMs again)", last_drain->host);
		return;
	}
	if (!atomic_exchange(&last_drain->cancel, true))
		hv_warn(COMP, "event=drain_cancel host=%s", last_drain->host);
	answer(call, last_drain);
}

void migd_host_undrain_call(struct migd_call *call)
{
	const Migd__HostUndrainRequest *r = call->req->host_undrain;
	struct migd_host *d = migd_host_of(call);
	const char *id = migd_host_fleet_id(d);
	Migd__HostUndrainResult *res;
	char err[512];
	bool was;

	if (migd_drain_forward(call, r->host, r->forwarded))
		return;
	if (!id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this daemon is not in a fleet (--etcd): it is "
			       "never marked draining");
		return;
	}
	if (last_drain && drain_running(last_drain)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "a drain of host '%s' is running: cancel it "
			       "first (host drain-cancel %s), then undrain",
			       id, id);
		return;
	}
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__host_undrain_result__init(res);
	was = migd_host_fleet_draining(d);
	if (was && migd_host_fleet_set_draining(d, false, err, sizeof(err)))
		hv_warn(COMP, "event=undrain_put_failed host=%s err=\"%s\" "
			"hint=\"cleared here; the record follows at the next "
			"registration\"", id, err);
	hv_info(COMP, "event=undrain host=%s was_draining=%d", id, was);
	res->host = migd_call_strdup(call, id);
	res->was_draining = was;
	call->resp->result_case = MIGD__RESPONSE__RESULT_HOST_UNDRAIN;
	call->resp->host_undrain = res;
}

bool migd_host_drain_stop(struct migd_host *d, struct migd_fleet *f,
			  bool revoke)
{
	(void)d;
	if (!last_drain)
		return false;
	atomic_store(&last_drain->stop, true);
	if (drain_running(last_drain)) {
		/* Its calls to us wait on this loop: it ends once the loop
		 * closed our socket (migd_host_drain_fini). */
		last_drain->fleet_owned = f;
		last_drain->fleet_revoke = revoke;
		hv_warn(COMP, "event=drain_interrupted host=%s",
			last_drain->host);
		return true;
	}
	drain_free(last_drain);
	last_drain = NULL;
	return false;
}

void migd_host_drain_fini(struct migd_host *d)
{
	struct migd_drain *dr = last_drain;
	struct migd_fleet *f;
	bool revoke;

	(void)d;
	if (!dr)
		return;
	last_drain = NULL;
	f = dr->fleet_owned;
	revoke = dr->fleet_revoke;
	drain_free(dr); /* joins */
	migd_fleet_stop(f, revoke);
}
