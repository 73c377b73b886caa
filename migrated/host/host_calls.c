// SPDX-License-Identifier: MIT
/*
 * migd_host: the control RPC in the host role (host.h). Calls about one
 * VM go to its worker and are answered when it answers; the VM list, the
 * migration history, subscriptions and the names are the daemon's own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "migrated/common/calls.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_drain.h"
#include "migrated/host/host_fleet.h"
#include "migrated/host/host_priv.h"
#include "migrated/host/host_update.h"
#include "migrated/rpc/server.h"

#define COMP "migd.host"

typedef migd__host_post_fn post_fn;

struct fwd {
	struct migd_defer *df;
	post_fn post;
	uint64_t mig_id;
	char what[64];
};

static bool resp_ok(const Migd__Response *resp)
{
	return !resp->error || resp->error->status == MIGD__STATUS__STATUS_OK;
}

static void fwd_cb(struct migd_worker *w, Migd__Response *resp, void *arg)
{
	struct fwd *f = arg;

	if (!resp) {
		migd_defer_fail(f->df, MIGD__STATUS__STATUS_UNAVAILABLE,
				"the worker of %s went away before it answered%s%s",
				f->what, w->crashed ? ": " : "",
				w->crashed ? w->exit_reason : "");
	} else {
		if (f->post)
			f->post(w, resp, f);
		migd_defer_finish(f->df, resp);
	}
	free(f);
}

/* Send @req (a copy the caller may have edited) to @w; answer later. */
static void forward(struct migd_call *call, struct migd_worker *w,
		    Migd__Request *req, post_fn post, uint64_t mig_id)
{
	struct fwd *f = calloc(1, sizeof(*f));
	int ret;

	if (!f) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return;
	}
	f->post = post;
	f->mig_id = mig_id;
	snprintf(f->what, sizeof(f->what), "VM '%.40s'",
		 w->name[0] ? w->name : "(incoming)");
	f->df = migd_call_defer(call);
	if (!f->df) {
		free(f);
		return;
	}
	ret = migd_worker_call(w, req, fwd_cb, f);
	if (ret) {
		migd_defer_fail(f->df, MIGD__STATUS__STATUS_UNAVAILABLE,
				"cannot reach the worker of %s: %s", f->what,
				strerror(-ret));
		free(f);
	}
}

/*
 * Whether to ask @w about its VM: it has one, or it is receiving one under
 * a name it claimed. The latter registers the VM and tells us before the
 * source learns that the migration succeeded, but its event may still be
 * on its way: the worker's own answer comes after it on the same stream.
 */
static bool worker_askable(const struct migd_worker *w)
{
	if (w->crashed || w->retired || w->conn_lost)
		return false;
	return w->has_vm || w->name[0];
}

/* The running VM @name, or NULL with the call failed. */
static struct migd_worker *vm_worker(struct migd_call *call, const char *name)
{
	struct migd_worker *w;

	if (!name || !*name) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "VM name missing");
		return NULL;
	}
	w = migd_host_find(migd_host_of(call), name);
	if (!w || (!w->has_vm && !worker_askable(w))) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", name);
		return NULL;
	}
	if (w->crashed) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' crashed: %s (vm destroy removes it)",
			       name, w->exit_reason);
		return NULL;
	}
	return w;
}

static void forward_vm(struct migd_call *call, const char *name)
{
	migd__host_forward_vm(call, name, NULL);
}

void migd__host_forward_vm(struct migd_call *call, const char *name,
			   migd__host_post_fn post)
{
	struct migd_worker *w = vm_worker(call, name);
	Migd__Request req;

	if (!w)
		return;
	req = *call->req;
	forward(call, w, &req, post, 0);
}

static void h_vmref(struct migd_call *call)
{
	const Migd__Request *r = call->req;
	const Migd__VmRef *ref =
		r->call_case == MIGD__REQUEST__CALL_VM_INSPECT ? r->vm_inspect
		: r->call_case == MIGD__REQUEST__CALL_VM_PAUSE ? r->vm_pause
		: r->call_case == MIGD__REQUEST__CALL_VM_RESUME ? r->vm_resume
								: r->vm_check;

	forward_vm(call, ref ? ref->name : NULL);
}

static void h_dirty_rate(struct migd_call *call)
{
	forward_vm(call, call->req->dirty_rate->vm);
}

static void h_converge(struct migd_call *call)
{
	forward_vm(call, call->req->converge_estimate->vm);
}

static void h_set_workload(struct migd_call *call)
{
	forward_vm(call, call->req->vm_set_workload->vm);
}

static void h_console(struct migd_call *call)
{
	forward_vm(call, call->req->vm_console->vm);
}

static void h_console_write(struct migd_call *call)
{
	forward_vm(call, call->req->vm_console_write->vm);
}

/* ---- create / destroy / list ------------------------------------------- */

static void created(struct migd_worker *w, Migd__Response *resp, struct fwd *f)
{
	if (resp_ok(resp) && resp->result_case == MIGD__RESPONSE__RESULT_VM) {
		w->d->vms_created++;
		migd__host_set_info(w, resp->vm);
		return;
	}
	/* The worker exits by itself; the name is free again now, here
	 * and in the fleet. */
	migd_host_fleet_release(w->d, w->name);
	w->name[0] = '\0';
}

static int new_worker(struct migd_call *call, const char *name,
		      struct migd_worker **out)
{
	char err[512];
	int ret;

	if (name && *name && migd_host_name_taken(migd_host_of(call), name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_ALREADY_EXISTS,
			       "a VM named '%s' exists", name);
		return -EEXIST;
	}
	if (migd_host_of(call)->sup->nr_workers >= MIGD_VMS_MAX) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "at most %d VMs", MIGD_VMS_MAX);
		return -ENOSPC;
	}
	ret = migd_worker_spawn(migd_host_of(call), false, out, err,
				sizeof(err));
	if (ret) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL, "%s", err);
		return ret;
	}
	if (name)
		snprintf((*out)->name, sizeof((*out)->name), "%s", name);
	return 0;
}

/* A draining host takes no new VM (host_drain.h). */
static bool refuse_draining(struct migd_call *call)
{
	if (!migd_host_fleet_draining(migd_host_of(call)))
		return false;
	migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
		       "host '%s' is draining: it takes no new VM",
		       migd_host_fleet_id(migd_host_of(call)));
	return true;
}

static void h_vm_create(struct migd_call *call)
{
	const Migd__VmCreateRequest *r = call->req->vm_create;
	char err[512];

	if (!r->name || !migd_name_valid(r->name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "invalid VM name '%s' ([A-Za-z0-9._-], 1..%d)",
			       r->name ? r->name : "", MIGD_NAME_MAX);
		return;
	}
	/* Bad boot files cost no worker (the worker checks them again). */
	if (migd_boot_check(
		    r, hv_accel_kind_parse(r->accel, migd_host_of(call)->accel),
		    err, sizeof(err))) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "%s", err);
		return;
	}
	migd__host_new_vm(call, r->name, false);
}

static void restored(struct migd_worker *w, Migd__Response *resp,
		     struct fwd *f)
{
	if (resp_ok(resp) && resp->result_case == MIGD__RESPONSE__RESULT_VM)
		w->d->restores_ok++;
	else
		w->d->restores_failed++;
	created(w, resp, f);
}

void migd__host_new_vm(struct migd_call *call, const char *name,
		       bool restore)
{
	struct migd_worker *w;
	Migd__Request req;
	char err[512];

	if (refuse_draining(call))
		return;
	/* The name must be free in the fleet too (a no-op standalone). */
	if (!migd_host_name_taken(migd_host_of(call), name)) {
		int ret = migd_host_fleet_claim(migd_host_of(call), name, err,
						sizeof(err));

		if (ret) {
			migd_call_fail(call, ret == -EEXIST ?
				       MIGD__STATUS__STATUS_ALREADY_EXISTS :
				       MIGD__STATUS__STATUS_UNAVAILABLE,
				       "%s", err);
			return;
		}
	}
	if (new_worker(call, name, &w)) {
		if (!migd_host_name_taken(migd_host_of(call), name))
			migd_host_fleet_release(migd_host_of(call), name);
		return;
	}
	req = *call->req;
	forward(call, w, &req, restore ? restored : created, 0);
}

static void destroyed(struct migd_worker *w, Migd__Response *resp,
		      struct fwd *f)
{
	if (resp_ok(resp)) {
		w->vm_gone = true; /* it exits now */
		migd_host_fleet_release(w->d, w->name);
	}
}

static void h_vm_destroy(struct migd_call *call)
{
	const Migd__VmRef *ref = call->req->vm_destroy;
	struct migd_worker *w;
	Migd__VmInfo *info;
	Migd__Request req;

	w = ref && ref->name ? migd_host_find(migd_host_of(call), ref->name)
			     : NULL;
	if (w && w->crashed) {
		Migd__Event ev = MIGD__EVENT__INIT;
		Migd__VmStateEvent body = MIGD__VM_STATE_EVENT__INIT;

		info = migd_call_alloc(call, sizeof(*info));
		if (!info)
			return;
		migd__host_info_fill(w, info);
		info->name = migd_call_strdup(call, w->name);
		info->exit_reason = migd_call_strdup(call, w->exit_reason);
		body.vm = info;
		body.old_state = MIGD__VM_STATE__VM_STATE_CRASHED;
		body.destroyed = true;
		ev.kind = MIGD__EVENT_KIND__EVENT_KIND_VM_STATE;
		ev.body_case = MIGD__EVENT__BODY_VM_STATE;
		ev.vm_state = &body;
		migd_server_publish(&migd_host_of(call)->srv, &ev, w->name, 0,
				    false);
		hv_info(COMP, "event=vm_removed vm=%s why=crashed", w->name);
		/* info's other strings pointed into w->info */
		info->accel = migd_call_strdup(call, info->accel ? info->accel
								 : "");
		info->origin = migd_call_strdup(call, info->origin
							      ? info->origin
							      : "");
		migd_host_remove(w);
		call->resp->result_case = MIGD__RESPONSE__RESULT_VM;
		call->resp->vm = info;
		return;
	}
	w = vm_worker(call, ref ? ref->name : NULL);
	if (!w)
		return;
	req = *call->req;
	forward(call, w, &req, destroyed, 0);
}

/* A VM list waits for every worker's answer, at most LIST_WAIT_MS: a
 * worker that does not answer (stopped, hung) is listed as last seen. */
#define LIST_WAIT_MS 2000

struct gather {
	struct migd_host *d;
	struct migd_defer *df; /* NULL once answered */
	unsigned left;	       /* answers outstanding, + the timer */
	bool timer_ref;	       /* the timer holds one of @left */
	uv_timer_t timer;
};

static int by_worker_id(const void *a, const void *b)
{
	const Migd__VmInfo *x = *(Migd__VmInfo *const *)a;
	const Migd__VmInfo *y = *(Migd__VmInfo *const *)b;

	return x->worker_id < y->worker_id ? -1 : x->worker_id > y->worker_id;
}

static void list_answer(struct gather *g)
{
	struct migd_host *d = g->d;
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__VmListResult res = MIGD__VM_LIST_RESULT__INIT;
	Migd__VmInfo *infos, **ptrs;
	struct migd_defer *df = g->df;
	size_t n = 0;

	if (!df)
		return;
	g->df = NULL;
	infos = calloc(d->sup->nr_workers + 1, sizeof(*infos));
	ptrs = calloc(d->sup->nr_workers + 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		migd_defer_fail(df, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
				"out of memory");
		return;
	}
	for (struct migd_worker *w = d->sup->workers; w; w = w->next) {
		if (!w->has_vm || w->vm_gone || w->retired || !w->name[0])
			continue;
		migd__host_info_fill(w, &infos[n]);
		ptrs[n] = &infos[n];
		n++;
	}
	/* Creation order: worker ids grow with it. */
	qsort(ptrs, n, sizeof(*ptrs), by_worker_id);
	res.n_vms = n;
	res.vms = ptrs;
	resp.result_case = MIGD__RESPONSE__RESULT_VM_LIST;
	resp.vm_list = &res;
	migd_defer_finish(df, &resp);
	free(infos);
	free(ptrs);
}

static void gather_closed(uv_handle_t *h)
{
	free(h->data);
}

static void gather_put(struct gather *g)
{
	if (--g->left)
		return;
	list_answer(g);
	uv_close((uv_handle_t *)&g->timer, gather_closed);
}

static void listed(struct migd_worker *w, Migd__Response *resp, void *arg)
{
	struct gather *g = arg;

	if (resp && resp_ok(resp) &&
	    resp->result_case == MIGD__RESPONSE__RESULT_VM_LIST &&
	    resp->vm_list->n_vms == 1 && !w->update)
		migd__host_set_info(w, resp->vm_list->vms[0]);
	if (g->timer_ref && g->left == 2) { /* the last answer */
		list_answer(g);
		uv_timer_stop(&g->timer);
		g->timer_ref = false;
		gather_put(g);
	}
	gather_put(g);
}

static void list_timeout(uv_timer_t *t)
{
	struct gather *g = t->data;

	hv_warn(COMP, "event=vm_list_slow_workers waiting=%u ms=%u",
		g->left - 1, LIST_WAIT_MS);
	g->timer_ref = false;
	list_answer(g);
	gather_put(g);
}

/* Refresh what each worker says of its VM, then answer from that. */
static void h_vm_list(struct migd_call *call)
{
	struct gather *g = calloc(1, sizeof(*g));
	Migd__VmListRequest lr = MIGD__VM_LIST_REQUEST__INIT;

	if (!g) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return;
	}
	g->d = migd_host_of(call);
	g->df = migd_call_defer(call);
	if (!g->df) {
		free(g);
		return;
	}
	uv_timer_init(migd_host_of(call)->loop, &g->timer);
	g->timer.data = g;
	g->left = 2; /* the timer's and ours, dropped below */
	g->timer_ref = true;
	for (struct migd_worker *w = migd_host_of(call)->sup->workers; w;
	     w = w->next) {
		Migd__Request req = MIGD__REQUEST__INIT;

		if (!worker_askable(w))
			continue;
		req.call_case = MIGD__REQUEST__CALL_VM_LIST;
		req.vm_list = &lr;
		if (!migd_worker_call(w, &req, listed, g))
			g->left++;
	}
	uv_timer_start(&g->timer, list_timeout, LIST_WAIT_MS, 0);
	gather_put(g); /* ours */
	if (g->left == 1) { /* nobody to wait for */
		uv_timer_stop(&g->timer);
		g->timer_ref = false;
		gather_put(g);
	}
}

/* ---- migrations -------------------------------------------------------- */

static void started(struct migd_worker *w, Migd__Response *resp,
		    struct fwd *f)
{
	if (!resp_ok(resp)) {
		if (resp->result_case == MIGD__RESPONSE__RESULT__NOT_SET &&
		    w->has_vm == false)
			w->name[0] = '\0'; /* an incoming worker: it exits */
		return;
	}
	if (!migd_hmig_find(w->d, f->mig_id, NULL))
		migd_hmig_add(w->d, f->mig_id, w->wid, NULL);
}

static void h_mig_incoming(struct migd_call *call)
{
	const Migd__MigIncomingRequest *r = call->req->mig_incoming;
	Migd__MigIncomingRequest mi = *r;
	struct migd_worker *w;
	Migd__Request req;

	if (r->vm_name && *r->vm_name && !migd_name_valid(r->vm_name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "invalid VM name '%s'", r->vm_name);
		return;
	}
	if (refuse_draining(call))
		return;
	if (new_worker(call, r->vm_name, &w))
		return;
	mi.id = migd_host_next_mig_id(migd_host_of(call));
	req = *call->req;
	req.mig_incoming = &mi;
	forward(call, w, &req, started, mi.id);
}

static void h_mig_start(struct migd_call *call)
{
	const Migd__MigStartRequest *r = call->req->mig_start;
	Migd__MigStartRequest ms = *r;
	struct migd_worker *w = vm_worker(call, r->vm);
	Migd__Request req;

	/* A Linux guest's devices are checked by its worker. */
	if (!w)
		return;
	ms.id = migd_host_next_mig_id(migd_host_of(call));
	req = *call->req;
	req.mig_start = &ms;
	forward(call, w, &req, started, ms.id);
}

/* A record's info, or a minimal one while no event came yet. */
static Migd__MigInfo *hmig_info(struct migd_call *call, struct migd_hmig *m)
{
	Migd__MigInfo *info;

	if (m->info)
		return m->info;
	info = migd_call_alloc(call, sizeof(*info));
	if (info) {
		migd__mig_info__init(info);
		info->id = m->id;
	}
	return info;
}

static struct migd_hmig *ref_hmig(struct migd_call *call,
				  const Migd__MigRef *r)
{
	struct migd_hmig *m;

	if (!migd_mig_ref_check(call, r))
		return NULL;
	m = migd_hmig_find(migd_host_of(call), r->id, r->vm);
	if (!m)
		migd_mig_ref_missing(call, r);
	return m;
}

static void h_mig_status(struct migd_call *call)
{
	const Migd__MigStatusRequest *r = call->req->mig_status;
	Migd__MigStatusResult *res = migd_call_alloc(call, sizeof(*res));
	Migd__MigInfo **arr;
	size_t n = 0, i = 0;

	if (!res)
		return;
	migd__mig_status_result__init(res);
	if (r->ref && (r->ref->id || (r->ref->vm && *r->ref->vm))) {
		struct migd_hmig *m = ref_hmig(call, r->ref);

		if (!m)
			return;
		arr = migd_call_alloc(call, sizeof(*arr));
		if (!arr || !(arr[0] = hmig_info(call, m)))
			return;
		n = 1;
	} else {
		for (struct migd_hmig *m = migd_host_of(call)->sup->migs; m;
		     m = m->next)
			n++;
		arr = n ? migd_call_alloc(call, n * sizeof(*arr)) : NULL;
		if (n && !arr)
			return;
		for (struct migd_hmig *m = migd_host_of(call)->sup->migs; m;
		     m = m->next)
			if (!(arr[i++] = hmig_info(call, m)))
				return;
	}
	res->n_migrations = n;
	res->migrations = arr;
	call->resp->result_case = MIGD__RESPONSE__RESULT_MIG_STATUS;
	call->resp->mig_status = res;
}

static void h_mig_watch(struct migd_call *call)
{
	const Migd__MigWatchRequest *r = call->req->mig_watch;
	struct migd_hmig *m = ref_hmig(call, r->ref);
	Migd__SubscribeResult *res;
	struct migd_sub *s;
	uint32_t ms = r->interval_ms;

	if (!m)
		return;
	if (!m->finished) {
		s = migd_server_subscribe(call);
		if (!s)
			return;
		if (!ms)
			ms = MIGD_PROGRESS_INTERVAL_MS;
		if (ms < MIGD_PROGRESS_INTERVAL_MIN_MS)
			ms = MIGD_PROGRESS_INTERVAL_MIN_MS;
		s->mig_id = m->id;
		s->kinds = 1u << MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE |
			   1u << MIGD__EVENT_KIND__EVENT_KIND_MIG_PROGRESS;
		s->interval_ns = (uint64_t)ms * 1000000ull;
		s->end_with_mig = true;
	}
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__subscribe_result__init(res);
	res->subscription = call->req->id;
	res->migration = hmig_info(call, m);
	call->resp->result_case = MIGD__RESPONSE__RESULT_SUBSCRIBE;
	call->resp->subscribe = res;
}

/* Cancel, postcopy, tune, recover, resolve: to the worker that runs the
 * migration. */
static void h_migref(struct migd_call *call)
{
	const Migd__Request *r = call->req;
	const Migd__MigRef *ref =
		r->call_case == MIGD__REQUEST__CALL_MIG_CANCEL ? r->mig_cancel
		: r->call_case == MIGD__REQUEST__CALL_MIG_POSTCOPY
			? r->mig_postcopy
		: r->call_case == MIGD__REQUEST__CALL_MIG_SWITCHOVER
			? r->mig_switchover
		: r->call_case == MIGD__REQUEST__CALL_MIG_TUNE
			? r->mig_tune->ref
		: r->call_case == MIGD__REQUEST__CALL_MIG_RECOVER
			? r->mig_recover->ref
			: r->mig_resolve->ref;
	struct migd_hmig *m = ref_hmig(call, ref);
	struct migd_worker *w;
	Migd__MigRef byid = MIGD__MIG_REF__INIT;
	Migd__MigTuneRequest tune;
	Migd__MigRecoverRequest rec;
	Migd__MigResolveRequest res;
	Migd__Request req;

	if (!m)
		return;
	w = migd_host_find_wid(migd_host_of(call), m->wid);
	if (!w || w->conn_lost || w->crashed) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "migration %llu already finished (its worker "
			       "is gone)",
			       (unsigned long long)m->id);
		return;
	}
	byid.id = m->id;
	req = *r;
	if (r->call_case == MIGD__REQUEST__CALL_MIG_CANCEL) {
		req.mig_cancel = &byid;
	} else if (r->call_case == MIGD__REQUEST__CALL_MIG_POSTCOPY) {
		req.mig_postcopy = &byid;
	} else if (r->call_case == MIGD__REQUEST__CALL_MIG_SWITCHOVER) {
		req.mig_switchover = &byid;
	} else if (r->call_case == MIGD__REQUEST__CALL_MIG_TUNE) {
		tune = *r->mig_tune;
		tune.ref = &byid;
		req.mig_tune = &tune;
	} else if (r->call_case == MIGD__REQUEST__CALL_MIG_RECOVER) {
		rec = *r->mig_recover;
		rec.ref = &byid;
		req.mig_recover = &rec;
	} else {
		res = *r->mig_resolve;
		res.ref = &byid;
		req.mig_resolve = &res;
	}
	forward(call, w, &req, NULL, m->id);
}

/* ---- worker -> daemon -------------------------------------------------- */

static void h_worker_name(struct migd_call *call)
{
	const Migd__WorkerNameRequest *r = call->req->worker_name;
	struct migd_worker *w =
		migd_host_find_wid(migd_host_of(call), r->worker_id);
	struct migd_worker *o;

	if (!w) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no worker %llu", (unsigned long long)r->worker_id);
		return;
	}
	if (!r->name || !migd_name_valid(r->name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "invalid VM name");
		return;
	}
	o = migd_host_find(migd_host_of(call), r->name);
	if (o && o != w) {
		migd_call_fail(call, MIGD__STATUS__STATUS_ALREADY_EXISTS,
			       "a VM named '%s' already exists on the "
			       "destination (migrate-recv --name picks another "
			       "name)",
			       r->name);
		return;
	}
	snprintf(w->name, sizeof(w->name), "%s", r->name);
	migd__record_write(w);
}

static void h_worker_only(struct migd_call *call)
{
	migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
		       "a worker call, not the daemon's");
}

struct host_handler {
	const char *name;
	migd_call_fn fn;
};

static const struct host_handler host_handlers[] = {
	[MIGD__REQUEST__CALL_PING] = {"ping", migd_host_call_ping},
	[MIGD__REQUEST__CALL_CAPABILITIES] = {"capabilities",
					      migd_host_call_capabilities},
	[MIGD__REQUEST__CALL_VM_CREATE] = {"vm_create", h_vm_create},
	[MIGD__REQUEST__CALL_VM_LIST] = {"vm_list", h_vm_list},
	[MIGD__REQUEST__CALL_VM_INSPECT] = {"vm_inspect", h_vmref},
	[MIGD__REQUEST__CALL_VM_PAUSE] = {"vm_pause", h_vmref},
	[MIGD__REQUEST__CALL_VM_RESUME] = {"vm_resume", h_vmref},
	[MIGD__REQUEST__CALL_VM_DESTROY] = {"vm_destroy", h_vm_destroy},
	[MIGD__REQUEST__CALL_MIG_INCOMING] = {"mig_incoming", h_mig_incoming},
	[MIGD__REQUEST__CALL_MIG_START] = {"mig_start", h_mig_start},
	[MIGD__REQUEST__CALL_MIG_STATUS] = {"mig_status", h_mig_status},
	[MIGD__REQUEST__CALL_MIG_WATCH] = {"mig_watch", h_mig_watch},
	[MIGD__REQUEST__CALL_MIG_CANCEL] = {"mig_cancel", h_migref},
	[MIGD__REQUEST__CALL_MIG_POSTCOPY] = {"mig_postcopy", h_migref},
	[MIGD__REQUEST__CALL_MIG_SWITCHOVER] = {"mig_switchover", h_migref},
	[MIGD__REQUEST__CALL_MIG_TUNE] = {"mig_tune", h_migref},
	[MIGD__REQUEST__CALL_MIG_RECOVER] = {"mig_recover", h_migref},
	[MIGD__REQUEST__CALL_MIG_RESOLVE] = {"mig_resolve", h_migref},
	[MIGD__REQUEST__CALL_SUBSCRIBE] = {"subscribe", migd_call_subscribe},
	[MIGD__REQUEST__CALL_UNSUBSCRIBE] = {"unsubscribe",
					     migd_call_unsubscribe},
	[MIGD__REQUEST__CALL_DIRTY_RATE] = {"dirty_rate", h_dirty_rate},
	[MIGD__REQUEST__CALL_CONVERGE_ESTIMATE] = {"converge_estimate",
						   h_converge},
	[MIGD__REQUEST__CALL_VM_SET_WORKLOAD] = {"vm_set_workload",
						 h_set_workload},
	[MIGD__REQUEST__CALL_VM_CHECK] = {"vm_check", h_vmref},
	[MIGD__REQUEST__CALL_VM_SNAPSHOT] = {"vm_snapshot",
					     migd__host_vm_snapshot},
	[MIGD__REQUEST__CALL_VM_RESTORE] = {"vm_restore",
					    migd__host_vm_restore},
	[MIGD__REQUEST__CALL_VM_UPDATE] = {"vm_update", migd_host_vm_update},
	[MIGD__REQUEST__CALL_VM_CONSOLE] = {"vm_console", h_console},
	[MIGD__REQUEST__CALL_VM_CONSOLE_WRITE] = {"vm_console_write",
						  h_console_write},
	[MIGD__REQUEST__CALL_HOST_DRAIN] = {"host_drain", migd_host_drain_call},
	[MIGD__REQUEST__CALL_HOST_DRAIN_STATUS] = {"host_drain_status",
						   migd_host_drain_status_call},
	[MIGD__REQUEST__CALL_HOST_DRAIN_CANCEL] = {"host_drain_cancel",
						   migd_host_drain_cancel_call},
	[MIGD__REQUEST__CALL_HOST_UNDRAIN] = {"host_undrain",
					      migd_host_undrain_call},
	[MIGD__REQUEST__CALL_WORKER_INFO] = {"worker_info", h_worker_only},
	[MIGD__REQUEST__CALL_WORKER_NAME] = {"worker_name", h_worker_name},
	[MIGD__REQUEST__CALL_WORKER_HANDOVER] = {"worker_handover",
						 h_worker_only},
};

const char *migd_host_dispatch(unsigned cs, struct migd_call *call)
{
	if (cs >= sizeof(host_handlers) / sizeof(host_handlers[0]) ||
	    !host_handlers[cs].fn) {
		migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
			       "unknown call (case %u)", cs);
		return "?";
	}
	host_handlers[cs].fn(call);
	return host_handlers[cs].name;
}
