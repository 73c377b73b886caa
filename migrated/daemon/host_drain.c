// SPDX-License-Identifier: MIT
/*
 * migd_host_drain: the drain of this host, run by a thread of the daemon
 * (host_drain.h).
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
#include "migrated/daemon/daemon.h"
#include "migrated/daemon/drain_place.h"
#include "migrated/daemon/host_drain.h"
#include "migrated/daemon/host_fleet.h"
#include "migrated/daemon/parse.h"
#include "migrated/fleet/fleet.h"
#include "tools/rpc/client.h"

#define COMP "migd.drain"
#define SLOT_SET "drain/slots"
#define POLL_MS 200
#define CALL_MS 30000
#define CONNECT_MS 5000
#define HOSTS_MAX 256u

enum row_state { ROW_PENDING, ROW_MIGRATING, ROW_MIGRATED, ROW_FAILED,
		 ROW_SKIPPED };

static const char *const row_names[] = {
	[ROW_PENDING] = "pending", [ROW_MIGRATING] = "migrating",
	[ROW_MIGRATED] = "migrated", [ROW_FAILED] = "failed",
	[ROW_SKIPPED] = "skipped",
};

struct row {
	char vm[MIGD_NAME_MAX + 1];
	enum row_state state;
	char target[MIGD_DRAIN_ID_MAX + 1];
	char reason[256];
	uint64_t mig_id;
	uint64_t mem;
	uint32_t vcpus;
	uint32_t percent;
	/* drain thread only */
	int dst;
	unsigned slot;
	bool has_slot;
	char holder[MIGD_DRAIN_ID_MAX + MIGD_NAME_MAX + 2];
};

/* A destination as the drain thread knows it. */
struct dest {
	struct migd_client *c;
	char mig_host[MIGD_HOST_MAX + 1];
};

struct migd_drain {
	struct migd *d;
	pthread_t thread;
	bool joinable;
	_Atomic bool stop;

	/* the loop thread's copies, set before the thread starts */
	char host[MIGD_DRAIN_ID_MAX + 1];
	unsigned max_per_host, max_fleet;
	char sock[108];
	struct migd_client_tls tls;
	char ca[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16];
	struct migd_fleet *f;
	uint64_t grace_ms;
	/* shutdown: the fleet object handed over to be stopped after the
	 * thread (migd_host_drain_stop) */
	struct migd_fleet *fleet_owned;
	bool fleet_revoke;
	uint64_t started_unix_ms, t0_ns;

	/* shared, under @lock */
	pthread_mutex_t lock;
	bool running;
	struct row *rows;
	unsigned nr_rows;
	char error[512];
	unsigned peak_fleet, peak_per_host;
	uint64_t elapsed_ms;

	/* drain thread only */
	struct migd_drain_host hosts[HOSTS_MAX];
	struct dest dests[HOSTS_MAX];
	unsigned nr_hosts;
	unsigned inflight;
};

/* The last drain; kept (not freed) while its thread may still run. */
static struct migd_drain *last_drain;

/* ---- status -------------------------------------------------------------- */

static void set_row(struct migd_drain *dr, struct row *r,
		    enum row_state st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_row(struct migd_drain *dr, struct row *r,
		    enum row_state st, const char *fmt, ...)
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
	else if (st == ROW_FAILED || st == ROW_SKIPPED)
		hv_warn(COMP, "event=drain_vm_%s vm=%s why=\"%s\"",
			row_names[st], r->vm, r->reason);
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
	s->elapsed_ms = dr->running ? (migd_now_ns() - dr->t0_ns) / 1000000
				    : dr->elapsed_ms;
	v = dr->nr_rows ? migd_call_alloc(call, dr->nr_rows * sizeof(*v))
			: NULL;
	for (unsigned i = 0; v && i < dr->nr_rows; i++) {
		const struct row *r = &dr->rows[i];

		v[i] = migd_call_alloc(call, sizeof(*v[i]));
		if (!v[i])
			break;
		migd__host_drain_vm__init(v[i]);
		v[i]->vm = migd_call_strdup(call, r->vm);
		v[i]->state = (char *)row_names[r->state];
		v[i]->target = migd_call_strdup(call, r->target);
		v[i]->reason = migd_call_strdup(call, r->reason);
		v[i]->migration_id = r->mig_id;
		v[i]->mem_bytes = r->mem;
		v[i]->nr_vcpus = r->vcpus;
		v[i]->percent = r->percent;
		s->n_vms++;
		s->migrated += r->state == ROW_MIGRATED;
		s->failed += r->state == ROW_FAILED ||
			     r->state == ROW_SKIPPED;
	}
	s->vms = v;
	pthread_mutex_unlock(&dr->lock);
	return s;
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
	const struct row *x = a, *y = b;

	if (x->mem != y->mem)
		return x->mem < y->mem ? 1 : -1;
	return strcmp(x->vm, y->vm);
}

static int list_own(struct migd_drain *dr, struct migd_client *self)
{
	Migd__Response *resp;
	struct row *rows;
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
		struct row *r = &rows[i];

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
		 struct dest *dst, json_object *rec, char *why, size_t n)
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
	for (size_t i = 0; i < kvs.n && dr->nr_hosts < HOSTS_MAX; i++) {
		struct migd_drain_host *h = &dr->hosts[dr->nr_hosts];
		struct dest *dst = &dr->dests[dr->nr_hosts];
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

static void slot_release(struct migd_drain *dr, struct row *r)
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
		     struct row *r, unsigned di, char *err, size_t n)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__MigIncomingRequest in = MIGD__MIG_INCOMING_REQUEST__INIT;
	Migd__MigStartRequest st = MIGD__MIG_START_REQUEST__INIT;
	struct dest *dst = &dr->dests[di];
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
	for (unsigned i = 0; i < dr->nr_rows && !atomic_load(&dr->stop);
	     i++) {
		struct row *r = &dr->rows[i];
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
		struct row *r = &dr->rows[i];
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

static void *drain_thread(void *arg)
{
	struct migd_drain *dr = arg;
	struct migd_client *self = NULL;
	unsigned moved = 0, failed = 0;
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
	if (busy(dr) && list_hosts(dr)) {
		for (unsigned i = 0; i < dr->nr_rows; i++)
			if (dr->rows[i].state == ROW_PENDING)
				set_row(dr, &dr->rows[i], ROW_FAILED,
					"no destination: %s", dr->error);
		goto out;
	}
	while (busy(dr) && !atomic_load(&dr->stop)) {
		start_some(dr, self);
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
	}
	for (unsigned i = 0; i < dr->nr_hosts; i++)
		migd_client_close(dr->dests[i].c);
	migd_client_close(self);
	pthread_mutex_lock(&dr->lock);
	dr->elapsed_ms = (migd_now_ns() - dr->t0_ns) / 1000000;
	dr->running = false;
	pthread_mutex_unlock(&dr->lock);
	hv_info(COMP, "event=drain_done host=%s vms=%u migrated=%u failed=%u "
		"peak_fleet=%u peak_per_host=%u ms=%" PRIu64 "%s%s%s",
		dr->host, dr->nr_rows, moved, failed, dr->peak_fleet,
		dr->peak_per_host, dr->elapsed_ms, dr->error[0] ? " err=\"" :
		"", dr->error, dr->error[0] ? "\"" : "");
	return NULL;
}

/* ---- calls (loop thread) ------------------------------------------------- */

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

static void answer(struct migd_call *call, struct migd_drain *dr,
		   bool status_call)
{
	Migd__HostDrainStatus *s = status_fill(call, dr);

	if (!s)
		return;
	if (status_call) {
		call->resp->result_case =
			MIGD__RESPONSE__RESULT_HOST_DRAIN_STATUS;
		call->resp->host_drain_status = s;
	} else {
		call->resp->result_case = MIGD__RESPONSE__RESULT_HOST_DRAIN;
		call->resp->host_drain = s;
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
	struct migd *d = call->d;
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
	if (!r->host || strcmp(r->host, id)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "this daemon is host '%s', not '%s': ask the "
			       "daemon of the host to drain", id,
			       r->host ? r->host : "");
		return;
	}
	if (!limit_ok(call, "max_per_host", r->max_per_host) ||
	    !limit_ok(call, "max_fleet", r->max_fleet))
		return;
	if (last_drain && drain_running(last_drain)) {
		answer(call, last_drain, false); /* the one running */
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
	dr->started_unix_ms = migd_now_unix_ns() / 1000000;
	dr->t0_ns = migd_now_ns();
	dr->running = true;
	pthread_mutex_init(&dr->lock, NULL);
	/* Refuse new VMs before the first one leaves. */
	if (migd_host_fleet_set_draining(d, true, err, sizeof(err)))
		hv_warn(COMP, "event=drain_mark_failed host=%s err=\"%s\"",
			id, err);
	ret = -pthread_create(&dr->thread, NULL, drain_thread, dr);
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
	answer(call, dr, false);
}

void migd_host_drain_status_call(struct migd_call *call)
{
	const Migd__HostDrainStatusRequest *r = call->req->host_drain_status;
	const char *id = migd_host_fleet_id(call->d);

	if (r->host && r->host[0] && (!id || strcmp(r->host, id))) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "this daemon is host '%s', not '%s'",
			       id ? id : "(standalone)", r->host);
		return;
	}
	if (!last_drain) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no drain ran on this host");
		return;
	}
	answer(call, last_drain, true);
}

bool migd_host_drain_stop(struct migd *d, struct migd_fleet *f,
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

void migd_host_drain_fini(struct migd *d)
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
