// SPDX-License-Identifier: MIT
/*
 * migd_host_drain: the drain thread (host_drain.h, host_drain_priv.h);
 * the calls that start and read it are in host_drain_calls.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/host/drain_place.h"
#include "migrated/host/host_drain.h"
#include "migrated/host/host_drain_priv.h"
#include "migrated/host/host_fleet.h"
#include "migrated/rpc/parse.h"
#include "migrated/fleet/fleet.h"
#include "migrated/rpc/client.h"

#define COMP "migd.drain"
#define SLOT_SET "drain/slots"
#define POLL_MS 200
#define CALL_MS 30000
#define CONNECT_MS 5000

const char *const migd_drain_row_names[] = {
	[ROW_PENDING] = "pending", [ROW_MIGRATING] = "migrating",
	[ROW_MIGRATED] = "migrated", [ROW_FAILED] = "failed",
	[ROW_SKIPPED] = "skipped", [ROW_CANCELLED] = "cancelled",
};

/* ---- rows ------------------------------------------------------------------ */

static void set_row(struct migd_drain *dr, struct migd_drain_row *r,
		    enum migd_drain_row_state st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_row(struct migd_drain *dr, struct migd_drain_row *r,
		    enum migd_drain_row_state st, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&dr->lock);
	r->state = st;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&dr->lock);
	if (st == ROW_MIGRATED)
		hv_info(COMP, "event=drain_vm_done vm=%s dst=%s migration=%"
			PRIu64, r->vm, r->target, r->mig_id);
	else if (st == ROW_FAILED || st == ROW_SKIPPED ||
		 st == ROW_CANCELLED)
		hv_warn(COMP, "event=drain_vm_%s vm=%s why=\"%s\"",
			migd_drain_row_names[st], r->vm, r->reason);
}

/* ---- the drain thread's RPC ---------------------------------------------- */

/* One call; 0 with *@resp OK, else -errno with the reason in @err. */
static int call(struct migd_client *c, Migd__Request *req,
		Migd__Response **resp, char *err, size_t err_size)
{
	int ret = migd_client_call(c, req, CALL_MS, resp);

	if (ret) {
		snprintf(err, err_size, "%s", strerror(-ret));
		return ret;
	}
	if (migd_resp_status(*resp) != MIGD__STATUS__STATUS_OK) {
		snprintf(err, err_size, "%s: %s",
			 migd_status_text(migd_resp_status(*resp)),
			 migd_resp_message(*resp));
		migd__response__free_unpacked(*resp, NULL);
		*resp = NULL;
		return -EPROTO;
	}
	return 0;
}

static int vm_list(struct migd_client *c, Migd__Response **resp, char *err,
		   size_t err_size)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmListRequest l = MIGD__VM_LIST_REQUEST__INIT;

	req.call_case = MIGD__REQUEST__CALL_VM_LIST;
	req.vm_list = &l;
	return call(c, &req, resp, err, err_size);
}

/* This host's VMs become the rows: what can move is pending, what
 * cannot is skipped with the reason. Largest first (they are the hardest
 * to place). */
static int cmp_rows(const void *a, const void *b)
{
	const struct migd_drain_row *x = a, *y = b;

	if (x->mem != y->mem)
		return x->mem < y->mem ? 1 : -1;
	return strcmp(x->vm, y->vm);
}

static int list_own(struct migd_drain *dr, struct migd_client *self)
{
	Migd__Response *resp;
	struct migd_drain_row *rows;
	char err[512];
	size_t n;
	int ret;

	ret = vm_list(self, &resp, err, sizeof(err));
	if (ret) {
		pthread_mutex_lock(&dr->lock);
		snprintf(dr->error, sizeof(dr->error),
			 "cannot list this host's VMs: %.400s", err);
		pthread_mutex_unlock(&dr->lock);
		return ret;
	}
	n = resp->vm_list->n_vms;
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows) {
		migd__response__free_unpacked(resp, NULL);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const Migd__VmInfo *v = resp->vm_list->vms[i];
		struct migd_drain_row *r = &rows[i];

		snprintf(r->vm, sizeof(r->vm), "%s", v->name ? v->name : "");
		r->mem = v->mem_bytes;
		r->vcpus = v->nr_vcpus;
		r->dst = -1;
		switch (v->state) {
		case MIGD__VM_STATE__VM_STATE_CREATED:
		case MIGD__VM_STATE__VM_STATE_RUNNING:
		case MIGD__VM_STATE__VM_STATE_PAUSED:
			r->state = ROW_PENDING;
			break;
		case MIGD__VM_STATE__VM_STATE_MIGRATING:
		case MIGD__VM_STATE__VM_STATE_UNRESOLVED:
			r->state = ROW_SKIPPED;
			snprintf(r->reason, sizeof(r->reason),
				 "a migration already owns it");
			break;
		default:
			r->state = ROW_SKIPPED;
			snprintf(r->reason, sizeof(r->reason),
				 "its state (%d) cannot migrate", v->state);
			break;
		}
	}
	migd__response__free_unpacked(resp, NULL);
	qsort(rows, n, sizeof(*rows), cmp_rows);
	pthread_mutex_lock(&dr->lock);
	dr->rows = rows;
	dr->nr_rows = (unsigned)n;
	pthread_mutex_unlock(&dr->lock);
	for (unsigned i = 0; i < n; i++)
		if (rows[i].state == ROW_SKIPPED)
			hv_warn(COMP, "event=drain_vm_skipped vm=%s why=\"%s\"",
				rows[i].vm, rows[i].reason);
	return 0;
}

static const char *str_of(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) &&
		       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : "";
}

static int64_t int_of(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v)
						   : 0;
}

static void note(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 3 >= size)
		return;
	if (len)
		len += (size_t)snprintf(buf + len, size - len, "; ");
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* Connect to one candidate and learn what runs there. */
static int probe(struct migd_drain *dr, struct migd_drain_host *h,
		 struct migd_drain_dest *dst, json_object *rec, char *why, size_t n)
{
	char host[MIGD_HOST_MAX + 1];
	Migd__Response *resp;
	uint16_t port;
	int ret;

	if (migd_parse_hostport(str_of(rec, "rpc"), false, host,
				sizeof(host), &port) || !host[0]) {
		snprintf(why, n, "no control RPC address (--rpc-listen)");
		return -EINVAL;
	}
	if (migd_parse_hostport(str_of(rec, "migration"), true, dst->mig_host,
				sizeof(dst->mig_host), &port) ||
	    !dst->mig_host[0]) {
		snprintf(why, n, "no migration address");
		return -EINVAL;
	}
	migd_parse_hostport(str_of(rec, "rpc"), false, host, sizeof(host),
			    &port);
	ret = migd_client_connect_tls(host, port, &dr->tls, CONNECT_MS,
				      &dst->c);
	if (ret) {
		snprintf(why, n, "unreachable at %s: %s", str_of(rec, "rpc"),
			 strerror(-ret));
		return ret;
	}
	ret = vm_list(dst->c, &resp, why, n);
	if (ret)
		return ret;
	for (size_t i = 0; i < resp->vm_list->n_vms; i++) {
		const Migd__VmInfo *v = resp->vm_list->vms[i];

		if (v->state == MIGD__VM_STATE__VM_STATE_CRASHED)
			continue;
		h->mem_used += v->mem_bytes;
		h->vcpus_used += v->nr_vcpus;
	}
	migd__response__free_unpacked(resp, NULL);
	h->usable = true;
	return 0;
}

/* The other hosts of the fleet, from their records; 0 when at least one
 * can take VMs, else -EHOSTUNREACH with each host's reason in dr->error. */
static int list_hosts(struct migd_drain *dr)
{
	struct migd_etcd_kvs kvs = { 0 };
	char err[512], why[512] = "";
	int ret;

	ret = migd_fleet_list(dr->f, false, &kvs, err, sizeof(err));
	if (ret) {
		pthread_mutex_lock(&dr->lock);
		snprintf(dr->error, sizeof(dr->error),
			 "cannot read the fleet's hosts: %.400s", err);
		pthread_mutex_unlock(&dr->lock);
		return ret;
	}
	for (size_t i = 0; i < kvs.n && dr->nr_hosts < MIGD_DRAIN_HOSTS_MAX; i++) {
		struct migd_drain_host *h = &dr->hosts[dr->nr_hosts];
		struct migd_drain_dest *dst = &dr->dests[dr->nr_hosts];
		json_object *rec;
		char r[256] = "";

		if (!strcmp(kvs.kv[i].key, dr->host))
			continue;
		rec = json_tokener_parse(kvs.kv[i].value);
		if (!rec)
			continue;
		memset(h, 0, sizeof(*h));
		memset(dst, 0, sizeof(*dst));
		snprintf(h->id, sizeof(h->id), "%s", kvs.kv[i].key);
		h->mem_bytes = (uint64_t)int_of(rec, "mem_bytes");
		h->vcpus = (uint32_t)int_of(rec, "vcpus");
		if (int_of(rec, "draining"))
			snprintf(r, sizeof(r), "draining");
		else
			probe(dr, h, dst, rec, r, sizeof(r));
		json_object_put(rec);
		if (!h->usable)
			note(why, sizeof(why), "%s: %s", h->id, r);
		hv_info(COMP, "event=drain_candidate host=%s usable=%d mem=%"
			PRIu64 " used=%" PRIu64 " vcpus=%u used_vcpus=%u%s%s%s",
			h->id, h->usable, h->mem_bytes, h->mem_used, h->vcpus,
			h->vcpus_used, r[0] ? " why=\"" : "", r,
			r[0] ? "\"" : "");
		dr->nr_hosts++;
	}
	migd_etcd_kvs_free(&kvs);
	for (unsigned i = 0; i < dr->nr_hosts; i++)
		if (dr->hosts[i].usable)
			return 0;
	pthread_mutex_lock(&dr->lock);
	snprintf(dr->error, sizeof(dr->error),
		 "no other host of the fleet can take VMs%s%.400s",
		 why[0] ? ": " : " (this host is the only one registered)",
		 why);
	pthread_mutex_unlock(&dr->lock);
	return -EHOSTUNREACH;
}

/* ---- one VM --------------------------------------------------------------- */

static void slot_release(struct migd_drain *dr, struct migd_drain_row *r)
{
	char err[512];

	if (!r->has_slot)
		return;
	r->has_slot = false;
	if (migd_fleet_slot_release(dr->f, SLOT_SET, r->slot, r->holder,
				    err, sizeof(err)))
		hv_warn(COMP, "event=drain_slot_release_failed vm=%s slot=%u "
			"err=\"%s\" hint=\"the lease frees it\"", r->vm,
			r->slot, err);
}

static void peaks(struct migd_drain *dr, unsigned dst)
{
	pthread_mutex_lock(&dr->lock);
	if (dr->inflight > dr->peak_fleet)
		dr->peak_fleet = dr->inflight;
	if (dr->hosts[dst].inflight > dr->peak_per_host)
		dr->peak_per_host = dr->hosts[dst].inflight;
	pthread_mutex_unlock(&dr->lock);
}

/* Open the destination's incoming migration and start ours to it. */
static int start_one(struct migd_drain *dr, struct migd_client *self,
		     struct migd_drain_row *r, unsigned di, char *err, size_t n)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigIncomingRequest in = MIGD__MIG_INCOMING_REQUEST__INIT;
	Migd__MigStartRequest st = MIGD__MIG_START_REQUEST__INIT;
	struct migd_drain_dest *dst = &dr->dests[di];
	char addr[MIGD_HOST_MAX + 16];
	Migd__Response *resp;
	int ret;

	in.vm_name = r->vm;
	in.listen = (char *)"";
	req.call_case = MIGD__REQUEST__CALL_MIG_INCOMING;
	req.mig_incoming = &in;
	ret = call(dst->c, &req, &resp, err, n);
	if (ret)
		return ret;
	snprintf(addr, sizeof(addr), strchr(dst->mig_host, ':') ? "[%s]:%u"
								 : "%s:%u",
		 dst->mig_host, resp->mig_incoming->port);
	migd__response__free_unpacked(resp, NULL);
	req = (Migd__Request)MIGD__REQUEST__INIT;
	st.vm = r->vm;
	st.dest = addr;
	req.call_case = MIGD__REQUEST__CALL_MIG_START;
	req.mig_start = &st;
	ret = call(self, &req, &resp, err, n);
	if (ret)
		return ret;
	pthread_mutex_lock(&dr->lock);
	r->mig_id = resp->mig_start->id;
	pthread_mutex_unlock(&dr->lock);
	migd__response__free_unpacked(resp, NULL);
	hv_info(COMP, "event=drain_vm_start vm=%s dst=%s dest=%s migration=%"
		PRIu64 " inflight=%u dst_inflight=%u", r->vm, r->target, addr,
		r->mig_id, dr->inflight, dr->hosts[di].inflight);
	return 0;
}

/* Start what the limits allow; nothing while this host is fenced (its
 * VMs are paused then, and would arrive paused). */
static void start_some(struct migd_drain *dr, struct migd_client *self)
{
	if (migd_fleet_lease_age_ms(dr->f) > dr->grace_ms)
		return;
	for (unsigned i = 0; i < dr->nr_rows && !atomic_load(&dr->stop) &&
			     !atomic_load(&dr->cancel);
	     i++) {
		struct migd_drain_row *r = &dr->rows[i];
		char err[512];
		int di, ret;

		if (r->state != ROW_PENDING)
			continue;
		if (dr->inflight >= dr->max_fleet)
			return;
		di = migd_drain_place(dr->hosts, dr->nr_hosts, r->mem,
				      r->vcpus, dr->max_per_host);
		if (di == -ENOSPC) {
			set_row(dr, r, ROW_SKIPPED, "no host has room for its "
				"%" PRIu64 " MiB", r->mem >> 20);
			continue;
		}
		if (di < 0)
			continue; /* every host that fits is busy: later */
		snprintf(r->holder, sizeof(r->holder), "%s/%s", dr->host,
			 r->vm);
		ret = migd_fleet_slot_take(dr->f, SLOT_SET, dr->max_fleet,
					   r->holder, &r->slot, err,
					   sizeof(err));
		if (ret == -EBUSY)
			return; /* the fleet is at its limit: later */
		if (ret) {
			hv_warn(COMP, "event=drain_slot_failed vm=%s "
				"err=\"%s\"", r->vm, err);
			return;
		}
		r->has_slot = true;
		r->dst = di;
		dr->inflight++;
		dr->hosts[di].inflight++;
		dr->hosts[di].mem_used += r->mem;
		dr->hosts[di].vcpus_used += r->vcpus;
		pthread_mutex_lock(&dr->lock);
		snprintf(r->target, sizeof(r->target), "%s",
			 dr->hosts[di].id);
		pthread_mutex_unlock(&dr->lock);
		peaks(dr, (unsigned)di);
		ret = start_one(dr, self, r, (unsigned)di, err, sizeof(err));
		if (!ret) {
			set_row(dr, r, ROW_MIGRATING, NULL);
			continue;
		}
		dr->inflight--;
		dr->hosts[di].inflight--;
		dr->hosts[di].mem_used -= r->mem;
		dr->hosts[di].vcpus_used -= r->vcpus;
		slot_release(dr, r);
		set_row(dr, r, ROW_FAILED, "could not start to %s: %s",
			r->target, err);
	}
}

/* Look at each migration in flight; settle the finished ones. */
static void poll_some(struct migd_drain *dr, struct migd_client *self)
{
	for (unsigned i = 0; i < dr->nr_rows; i++) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__MigStatusRequest sr = MIGD__MIG_STATUS_REQUEST__INIT;
		Migd__MigRef ref = MIGD__MIG_REF__INIT;
		struct migd_drain_row *r = &dr->rows[i];
		const Migd__MigInfo *m;
		const Migd__MigProgress *p;
		Migd__Response *resp;
		char err[512];

		if (r->state != ROW_MIGRATING)
			continue;
		ref.id = r->mig_id;
		sr.ref = &ref;
		req.call_case = MIGD__REQUEST__CALL_MIG_STATUS;
		req.mig_status = &sr;
		if (call(self, &req, &resp, err, sizeof(err)))
			continue; /* asked again next time */
		if (resp->mig_status->n_migrations != 1) {
			migd__response__free_unpacked(resp, NULL);
			continue;
		}
		m = resp->mig_status->migrations[0];
		p = m->progress;
		if (p && p->ram_bytes) {
			uint64_t left = p->remaining_bytes < p->ram_bytes
						? p->remaining_bytes
						: p->ram_bytes;

			pthread_mutex_lock(&dr->lock);
			r->percent = (uint32_t)((p->ram_bytes - left) * 100 /
						p->ram_bytes);
			pthread_mutex_unlock(&dr->lock);
		}
		if (m->finished && p) {
			struct migd_drain_host *h = &dr->hosts[r->dst];

			dr->inflight--;
			h->inflight--;
			slot_release(dr, r);
			if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED) {
				pthread_mutex_lock(&dr->lock);
				r->percent = 100;
				pthread_mutex_unlock(&dr->lock);
				set_row(dr, r, ROW_MIGRATED, NULL);
			} else if (dr->cancel_done && !r->committing) {
				h->mem_used -= r->mem;
				h->vcpus_used -= r->vcpus;
				set_row(dr, r, ROW_CANCELLED,
					"migration %" PRIu64 " cancelled with "
					"the drain: it runs here", r->mig_id);
			} else {
				h->mem_used -= r->mem;
				h->vcpus_used -= r->vcpus;
				set_row(dr, r, ROW_FAILED,
					"migration %" PRIu64 " to %s: %s",
					r->mig_id, r->target,
					p->message && p->message[0]
						? p->message : "failed");
			}
		}
		migd__response__free_unpacked(resp, NULL);
	}
}

/* Cancelled: what has not started never will; each migration in flight
 * is cancelled (its VM stays here, running), unless it is past its
 * commit point: that one is left to finish (noted in its row). */
static void cancel_all(struct migd_drain *dr, struct migd_client *self)
{
	unsigned pending = 0, cancelled = 0, committing = 0;

	for (unsigned i = 0; i < dr->nr_rows; i++) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__MigRef ref = MIGD__MIG_REF__INIT;
		struct migd_drain_row *r = &dr->rows[i];
		Migd__Response *resp;
		char err[512];
		int ret;

		if (r->state == ROW_PENDING) {
			set_row(dr, r, ROW_CANCELLED, "the drain was cancelled "
				"before its turn: it runs here");
			pending++;
			continue;
		}
		if (r->state != ROW_MIGRATING)
			continue;
		ref.id = r->mig_id;
		req.call_case = MIGD__REQUEST__CALL_MIG_CANCEL;
		req.mig_cancel = &ref;
		ret = call(self, &req, &resp, err, sizeof(err));
		if (!ret) {
			migd__response__free_unpacked(resp, NULL);
			cancelled++;
			continue;
		}
		/* Past its commit point (or already over): it ends as it
		 * ends; poll_some settles it. */
		pthread_mutex_lock(&dr->lock);
		r->committing = true;
		snprintf(r->reason, sizeof(r->reason), "past its commit point "
			 "when the drain was cancelled: left to finish "
			 "(%.150s)", err);
		pthread_mutex_unlock(&dr->lock);
		committing++;
		hv_info(COMP, "event=drain_cancel_left vm=%s migration=%" PRIu64
			" why=\"%s\"", r->vm, r->mig_id, err);
	}
	dr->cancel_done = true;
	hv_warn(COMP, "event=drain_cancelled host=%s not_started=%u "
		"cancelling=%u left_to_finish=%u", dr->host, pending,
		cancelled, committing);
}

static bool busy(const struct migd_drain *dr)
{
	for (unsigned i = 0; i < dr->nr_rows; i++)
		if (dr->rows[i].state == ROW_PENDING ||
		    dr->rows[i].state == ROW_MIGRATING)
			return true;
	return false;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

void *migd_drain_thread(void *arg)
{
	struct migd_drain *dr = arg;
	struct migd_client *self = NULL;
	unsigned moved = 0, failed = 0, cancelled = 0;
	int ret;

	ret = migd_client_connect(dr->sock, &self);
	if (ret) {
		pthread_mutex_lock(&dr->lock);
		snprintf(dr->error, sizeof(dr->error),
			 "cannot reach this daemon at %s: %s", dr->sock,
			 strerror(-ret));
		pthread_mutex_unlock(&dr->lock);
		goto out;
	}
	if (list_own(dr, self))
		goto out;
	if (busy(dr) && !atomic_load(&dr->cancel) && list_hosts(dr)) {
		for (unsigned i = 0; i < dr->nr_rows; i++)
			if (dr->rows[i].state == ROW_PENDING)
				set_row(dr, &dr->rows[i], ROW_FAILED,
					"no destination: %s", dr->error);
		goto out;
	}
	while (busy(dr) && !atomic_load(&dr->stop)) {
		if (!atomic_load(&dr->cancel))
			start_some(dr, self);
		else if (!dr->cancel_done)
			cancel_all(dr, self);
		poll_some(dr, self);
		sleep_ms(POLL_MS);
	}
	/* Stopped: what is in flight goes on in its worker. */
	for (unsigned i = 0; i < dr->nr_rows; i++) {
		slot_release(dr, &dr->rows[i]);
		if (dr->rows[i].state == ROW_PENDING ||
		    dr->rows[i].state == ROW_MIGRATING)
			set_row(dr, &dr->rows[i], ROW_FAILED,
				dr->rows[i].state == ROW_PENDING
					? "the daemon stopped before its turn"
					: "the daemon stopped: migration %"
					  PRIu64 " goes on, see its status",
				dr->rows[i].mig_id);
	}
out:
	for (unsigned i = 0; i < dr->nr_rows; i++) {
		moved += dr->rows[i].state == ROW_MIGRATED;
		failed += dr->rows[i].state == ROW_FAILED ||
			  dr->rows[i].state == ROW_SKIPPED;
		cancelled += dr->rows[i].state == ROW_CANCELLED;
	}
	for (unsigned i = 0; i < dr->nr_hosts; i++)
		migd_client_close(dr->dests[i].c);
	migd_client_close(self);
	pthread_mutex_lock(&dr->lock);
	dr->elapsed_ms = (hv_now_ns() - dr->t0_ns) / 1000000;
	dr->running = false;
	pthread_mutex_unlock(&dr->lock);
	hv_info(COMP, "event=drain_done host=%s vms=%u migrated=%u failed=%u "
		"cancelled=%u peak_fleet=%u peak_per_host=%u ms=%" PRIu64
		"%s%s%s", dr->host, dr->nr_rows, moved, failed, cancelled,
		dr->peak_fleet,
		dr->peak_per_host, dr->elapsed_ms, dr->error[0] ? " err=\"" :
		"", dr->error, dr->error[0] ? "\"" : "");
	return NULL;
}
