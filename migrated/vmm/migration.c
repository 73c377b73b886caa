// SPDX-License-Identifier: MIT
/*
 * migd_mig: the daemon's side of a migration (migration.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/vmm/worker.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/mig/converge.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/session.h"

#define COMP "migd.mig"

_Static_assert((int)MIGD__MIG_PHASE__MIG_PHASE_CANCELLED ==
		       MIG_PHASE_CANCELLED &&
		       (int)MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED ==
			       MIG_PHASE_UNRESOLVED &&
		       (int)MIGD__MIG_PHASE__MIG_PHASE_SETUP == MIG_PHASE_SETUP,
	       "API phases mirror mig_phase");

_Static_assert(MIGD_NAME_MAX == MIG_VM_NAME_MAX,
	       "the stream carries registry names (mig_vm_name_valid)");

/* Terminal for the engine: its wait() returned (UNRESOLVED included). */
static bool phase_terminal(enum mig_phase p)
{
	return p == MIG_PHASE_COMPLETED || p == MIG_PHASE_FAILED ||
	       p == MIG_PHASE_CANCELLED || p == MIG_PHASE_UNRESOLVED;
}

static const char *dir_name(const struct migd_mig *m)
{
	return m->dir == MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING
		       ? "outgoing"
		       : "incoming";
}

static void publish(struct migd_mig *m, Migd__EventKind kind, bool final)
{
	Migd__Event ev = MIGD__EVENT__INIT;
	Migd__MigEvent body = MIGD__MIG_EVENT__INIT;
	Migd__MigInfo info;
	Migd__MigProgress prog;
	Migd__Downtime dt;
	char msg[MIGD_MIG_MSG_LEN];

	migd_mig_info_fill(m, &info, &prog, &dt, msg);
	body.migration = &info;
	ev.kind = kind;
	ev.body_case = MIGD__EVENT__BODY_MIGRATION;
	ev.migration = &body;
	migd_server_publish(&m->d->srv, &ev, m->vm, m->id, final);
}

static void async_closed(uv_handle_t *h)
{
	struct migd_mig *m = h->data;

	pthread_cond_destroy(&m->settled);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static void mig_free(struct migd_mig *m)
{
	/* The engine objects are gone once finished (settle()). */
	uv_close((uv_handle_t *)&m->async, async_closed);
}

/* Drop the oldest finished records beyond MIGD_MIG_HISTORY. */
static void trim_history(struct migd_vmm *d)
{
	unsigned kept = 0;

	for (struct migd_mig **pp = &d->migs; *pp;) {
		struct migd_mig *m = *pp;

		/* An unresolved one holds a VM: kept until resolved. */
		if (m->finished && !m->unresolved &&
		    ++kept > MIGD_MIG_HISTORY) {
			*pp = m->next;
			mig_free(m);
			continue;
		}
		pp = &m->next;
	}
}

#ifdef MIGD_HAVE_ENGINE

/* How long the engine waits for the loop to register an incoming VM that
 * runs, before it tells the source anyway. */
#define MIGD_RUNNING_WAIT_S 3

/* Engine thread. */
static void progress_cb(void *arg, const struct mig_progress *p)
{
	struct migd_mig *m = arg;

	pthread_mutex_lock(&m->lock);
	m->latest = *p;
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->async);
}

/*
 * Engine thread: the incoming VM runs. The loop registers it (and tells
 * the daemon) before the engine sends Resumed, so that whoever heard of
 * the success from the source finds the VM here. Bounded: a loop that
 * does not answer in time registers it later, when it does.
 */
static void running_cb(void *arg, struct hv_vm *vm)
{
	struct migd_mig *m = arg;
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += MIGD_RUNNING_WAIT_S;
	pthread_mutex_lock(&m->lock);
	m->vm_in = vm;
	m->vm_running = true;
	uv_async_send(&m->async);
	while (!m->vm_settled && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&m->settled, &m->lock, &until);
	pthread_mutex_unlock(&m->lock);
	if (ret == ETIMEDOUT)
		hv_warn(COMP, "event=incoming_settle_slow mig=%llu s=%d",
			(unsigned long long)m->id, MIGD_RUNNING_WAIT_S);
}

/* Waiter thread: the one place that blocks on the engine. */
static void waiter_main(void *arg)
{
	struct migd_mig *m = arg;
	struct mig_progress final;
	struct hv_vm *vm = NULL;
	int ret;

	memset(&final, 0, sizeof(final));
	if (m->src) {
		ret = mig_source_wait(m->src, &final);
		if (ret == -EINPROGRESS && m->fleet_on)
			ret = migd_mig_fleet_settle(m, &final);
	} else
		ret = mig_dest_wait(m->dst, &vm, &final);
	pthread_mutex_lock(&m->lock);
	m->latest = final;
	m->result = ret;
	if (!ret && vm)
		m->vm_in = vm;
	m->done = true;
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->async);
}

/*
 * The outcome for the source's copy, once the engine (or a resolve) said
 * where the VM runs: COMPLETED (with or without a verification error)
 * releases ours, anything else gives it back to the API.
 */
static void settle_source_vm(struct migd_mig *m, struct migd_vm *v,
			     Migd__VmState old)
{
	struct migd_vmm *d = m->d;

	v->mig_id = 0;
	v->mig_unresolved = false;
	if (m->final.phase == MIG_PHASE_COMPLETED) {
		/* The VM runs on the destination: release our copy. */
		migd_publish_vm_state(d, v, old, true);
		migd_registry_remove(&d->reg, v);
		return;
	}
	/* Back on the source: the engine stopped logging, monitor again. */
	migd_monitor_attach(d, v);
	migd_publish_vm_state(d, v, old, false);
}

static void settle_outgoing(struct migd_mig *m)
{
	struct migd_vmm *d = m->d;
	struct migd_vm *v = migd_registry_find(&d->reg, m->vm);

	if (!v || v->mig_id != m->id)
		return; /* cannot happen: the VM is pinned by mig_id */
	if (m->final.phase == MIG_PHASE_UNRESOLVED) {
		/* Pinned and paused until resolved: neither ours to resume
		 * nor to destroy (the destination may run it). */
		m->unresolved = true;
		v->mig_unresolved = true;
		migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_MIGRATING,
				      false);
		return;
	}
	settle_source_vm(m, v, MIGD__VM_STATE__VM_STATE_MIGRATING);
}

/*
 * Engine thread, in setup (session.h): hold the name the source offers,
 * unless migrate-recv gave one (held since the call) or none is offered.
 */
static int name_check_cb(void *arg, const char *name, char *why,
			 size_t why_len)
{
	struct migd_mig *m = arg;
	int ret;

	ret = migd_mig_fleet_incoming(m, name, why, why_len);
	if (ret)
		return ret;
	if (m->prm.vm_name[0] || !*name)
		return 0;
	ret = migd_registry_hold(&m->d->reg, name);
	if (!ret) {
		/* Names are the daemon's, host-wide. */
		ret = migd_worker_claim_name(m->d, name, why, why_len);
		if (ret) {
			migd_registry_release(&m->d->reg, name);
			return ret;
		}
	}
	if (ret == -EEXIST)
		snprintf(why, why_len,
			 "a VM named '%s' already exists on the destination "
			 "(migrate-recv --name picks another name)",
			 name);
	else if (ret)
		snprintf(why, why_len, "cannot hold the VM name '%s': %s", name,
			 strerror(-ret));
	return ret;
}

/* Loop thread: once the engine accepted (and held) the offered name, the
 * migration goes by it. */
static void adopt_name(struct migd_mig *m)
{
	const char *name;

	if (m->dir != MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING ||
	    m->name_held || !m->dst)
		return;
	name = mig_dest_vm_name(m->dst);
	if (!name)
		return;
	hv_info(COMP, "event=migration_name mig=%llu vm=%s was=%s",
		(unsigned long long)m->id, name, m->vm);
	snprintf(m->vm, sizeof(m->vm), "%s", name);
	m->name_held = true;
}

static void settle_incoming(struct migd_mig *m)
{
	struct migd_vmm *d = m->d;
	struct hv_vm *vm = m->vm_in;
	struct migd_wl wl = { 0 };
	struct migd_vm *v;
	int ret;

	/* A VM that runs here (handed over at resume) is kept whatever
	 * happened after: the source may have been told it runs here. */
	if (!vm || (!m->vm_running && m->result)) {
		if (m->name_held)
			migd_registry_release(&d->reg, m->vm);
		m->name_held = false;
		return;
	}
	m->vm_in = NULL;
	migd_wl_from_guest(vm, &wl, m->vm);
	if (m->name_held) {
		ret = migd_registry_add_held(&d->reg, m->vm, vm, &wl, true, &v);
		if (ret)
			migd_registry_release(&d->reg, m->vm);
		m->name_held = false;
	} else {
		ret = migd_registry_add(&d->reg, m->vm, vm, &wl, true, &v);
	}
	if (ret == -EEXIST) {
		/* Someone took the name meanwhile: keep the VM running under
		 * a unique one rather than lose it. */
		snprintf(m->vm, sizeof(m->vm), "incoming-%llu",
			 (unsigned long long)m->id);
		ret = migd_registry_add(&d->reg, m->vm, vm, &wl, true, &v);
	}
	if (ret) {
		hv_err(COMP, "event=incoming_vm_dropped mig=%llu err=%d",
		       (unsigned long long)m->id, ret);
		hv_vm_destroy(vm);
		return;
	}
	migd_monitor_attach(d, v);
	migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_INVALID, false);
}

/* The engine handed the incoming VM over as it resumed it, and waits:
 * register it, then let the engine tell the source. */
static void settle_running(struct migd_mig *m)
{
	settle_incoming(m);
	pthread_mutex_lock(&m->lock);
	m->vm_settled = true;
	pthread_cond_broadcast(&m->settled);
	pthread_mutex_unlock(&m->lock);
}

/* The waiter is done: reap it, settle the VM, announce the end. */
static void settle(struct migd_mig *m)
{
	char esc[HV_LOG_ESCAPE_LEN(sizeof(m->final.message))];

	adopt_name(m);
	pthread_mutex_lock(&m->lock);
	m->final = m->latest;
	pthread_mutex_unlock(&m->lock);
	if (m->waiter_started) {
		uv_thread_join(&m->waiter);
		m->waiter_started = false;
	}
	if (!phase_terminal(m->final.phase))
		m->final.phase = m->result == 0	       ? MIG_PHASE_COMPLETED
				 : m->result == -ECANCELED ? MIG_PHASE_CANCELLED
				 : m->result == -EINPROGRESS && m->src
					 ? MIG_PHASE_UNRESOLVED
					 : MIG_PHASE_FAILED;
	if (m->result && !m->final.error)
		m->final.error = m->result;
	if (m->result && !m->final.message[0])
		snprintf(m->final.message, sizeof(m->final.message), "%s",
			 strerror(-m->result));
	if (m->result == -ECANCELED && m->cancel_why) {
		char was[sizeof(m->final.message)];

		memcpy(was, m->final.message, sizeof(was));
		snprintf(m->final.message, sizeof(m->final.message), "%s: %.*s",
			 m->cancel_why, (int)(sizeof(was) - 64), was);
	}
	if (m->dir == MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING) {
		/*
		 * The migration's end first, then what it did to the VM:
		 * a subscriber sees FAILED (or COMPLETED) before the VM's
		 * state change (running again, or destroyed). m->final is
		 * settled already; the outgoing settle does not change it.
		 */
		m->finished = true;
		publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, true);
		settle_outgoing(m);
	} else {
		settle_incoming(m);
	}
	if (m->src && !m->unresolved) {
		mig_source_destroy(m->src);
		m->src = NULL;
	}
	if (m->dst)
		mig_dest_destroy(m->dst);
	m->dst = NULL;
	m->finished = true;
	hv_log_escape(m->final.message, esc, sizeof(esc));
	hv_info(COMP,
		"event=migration_finished mig=%llu uuid=%s dir=%s vm=%s "
		"phase=%s err=%d iterations=%u pages_sent=%llu "
		"bytes_wire=%llu downtime_us=%llu guest_downtime_us=%llu "
		"msg=\"%s\"",
		(unsigned long long)m->id,
		m->final.uuid[0] ? m->final.uuid : "-", dir_name(m), m->vm,
		mig_phase_name(m->final.phase), m->result,
		m->final.iteration, (unsigned long long)m->final.pages_sent,
		(unsigned long long)m->final.bytes_wire,
		(unsigned long long)(m->final.downtime.total_ns / 1000),
		(unsigned long long)(m->final.guest_downtime_ns / 1000), esc);
	if (m->dir != MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING)
		publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, true);
	trim_history(m->d);
	migd_worker_check_idle(m->d);
}

static void async_cb(uv_async_t *a)
{
	struct migd_mig *m = a->data;
	enum mig_phase phase;
	bool done, running;

	if (m->finished)
		return;
	pthread_mutex_lock(&m->lock);
	phase = m->latest.phase;
	done = m->done;
	running = m->vm_running && !m->vm_settled;
	pthread_mutex_unlock(&m->lock);
	if (done) {
		settle(m);
		return;
	}
	adopt_name(m);
	if (running)
		settle_running(m);
	if (phase != m->published_phase && !phase_terminal(phase)) {
		m->published_phase = phase;
		char uuid[sizeof(m->latest.uuid)];

		pthread_mutex_lock(&m->lock);
		memcpy(uuid, m->latest.uuid, sizeof(uuid));
		pthread_mutex_unlock(&m->lock);
		hv_info(COMP,
			"event=migration_phase mig=%llu uuid=%s vm=%s phase=%s",
			(unsigned long long)m->id, uuid[0] ? uuid : "-", m->vm,
			mig_phase_name(phase));
		publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, false);
	}
	publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PROGRESS, false);
}

static int mig_new(struct migd_vmm *d, Migd__MigDirection dir,
		   const struct migd_mig_params *prm, struct migd_mig **out)
{
	struct migd_mig *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->d = d;
	m->dir = dir;
	m->prm = *prm;
	m->id = ++d->next_mig_id;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->settled, NULL);
	ret = uv_async_init(d->loop, &m->async, async_cb);
	if (ret) {
		pthread_cond_destroy(&m->settled);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return ret;
	}
	m->async.data = m;
	m->latest.phase = MIG_PHASE_SETUP;
	m->opts.nr_channels = prm->channels;
	m->opts.max_bandwidth = prm->bandwidth;
	m->opts.downtime_ms = prm->downtime_ms;
	m->opts.timeout_ms = prm->timeout_ms;
	m->opts.zstd_level = prm->zstd_level;
	m->opts.delta_cache = prm->delta_cache;
	m->opts.postcopy = prm->postcopy;
	m->opts.postcopy_after_ms = prm->postcopy_after_ms;
	m->opts.postcopy_auto = prm->postcopy_auto;
	m->opts.postcopy_throttle_max_pct = prm->postcopy_throttle_max_pct;
	m->opts.timeout_policy = prm->timeout_policy;
	m->opts.throttle_max_pct = prm->throttle_max_pct;
	m->opts.insecure = prm->insecure;
	m->opts.io_timeout_ms = d->cfg.mig_io_timeout_ms;
	*out = m;
	return 0;
}

static int set_tls(struct migd_mig *m, bool server, char *err,
		   size_t err_size)
{
	struct migd_vmm *d = m->d;

	if (m->prm.insecure)
		return 0;
	if (!d->tls_ready) {
		snprintf(err, err_size,
			 "no TLS material (ca.pem, host.pem, host.key) in "
			 "%s: start migrated with --dev-tls, or migrate with "
			 "insecure",
			 d->cfg.tls_dir);
		return -EPERM;
	}
	m->tls.ca_file = d->tls_ca;
	m->tls.cert_file = d->tls_cert;
	m->tls.key_file = d->tls_key;
	m->tls.server = server;
	m->tls.peer_name = server ? NULL : m->prm.host;
	m->opts.tls = &m->tls;
	return 0;
}

/* Start the waiter and link the record; the engine object exists. */
static int mig_launch(struct migd_mig *m)
{
	int ret = uv_thread_create(&m->waiter, waiter_main, m);

	if (ret)
		return ret;
	m->waiter_started = true;
	m->next = m->d->migs;
	m->d->migs = m;
	return 0;
}

int migd_mig_start_outgoing(struct migd_vmm *d, struct migd_vm *v,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size)
{
	struct mig_progress sp;
	struct migd_mig *m;
	char hp[MIGD_HOST_MAX + 16];
	int ret;

	/* A paused VM migrates too, and arrives paused. */
	if ((hv_vm_get_state(v->vm) != HV_VM_RUNNING &&
	     hv_vm_get_state(v->vm) != HV_VM_PAUSED) ||
	    v->mig_id) {
		snprintf(err, err_size,
			 v->mig_id ? "VM '%s' is being migrated"
				   : "VM '%s' is neither running nor paused",
			 v->name);
		return -EBUSY;
	}
	ret = mig_new(d, MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING, prm, &m);
	if (ret) {
		snprintf(err, err_size, "out of resources");
		return ret;
	}
	snprintf(m->vm, sizeof(m->vm), "%s", v->name);
	/* Offered to the destination, which keeps it unless told another. */
	m->opts.vm_name = m->vm;
	ret = migd_mig_fleet_outgoing(m, err, err_size);
	if (!ret)
		ret = set_tls(m, false, err, err_size);
	if (!ret) {
		/* The engine logs and clears the dirty bitmaps itself: the
		 * monitor must not harvest beside it (monitor.h). */
		migd_monitor_detach(v);
		ret = mig_source_start(v->vm, prm->host, prm->port, &m->opts,
				       progress_cb, m, &m->src);
		if (ret) {
			snprintf(err, err_size, "migration engine refused: %s",
				 strerror(-ret));
			migd_monitor_attach(d, v);
		}
	}
	if (!ret) {
		ret = mig_launch(m);
		if (ret) {
			/* No waiter: cancel and reap on the loop, rare. */
			mig_source_cancel(m->src);
			mig_source_wait(m->src, &m->final);
			mig_source_destroy(m->src);
			snprintf(err, err_size, "cannot start a thread");
			migd_monitor_attach(d, v);
		}
	}
	if (ret) {
		mig_free(m);
		return ret;
	}
	v->mig_id = m->id;
	mig_source_get_progress(m->src, &sp);
	memcpy(m->uuid, sp.uuid, sizeof(m->uuid));
	hv_info(COMP,
		"event=migration_started mig=%llu uuid=%s dir=outgoing vm=%s "
		"dest=%s channels=%u bandwidth=%llu downtime_ms=%u tls=%d",
		(unsigned long long)m->id, m->uuid, m->vm,
		migd_fmt_hostport(hp, sizeof(hp), prm->host, prm->port),
		/* what the engine uses, not the request's 0 = default */
		prm->channels ? prm->channels : MIG_CHANNELS_DEFAULT,
		(unsigned long long)prm->bandwidth,
		prm->downtime_ms ? prm->downtime_ms
				 : MIG_CONV_DOWNTIME_MS_DEFAULT,
		!prm->insecure);
	migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_RUNNING, false);
	publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, false);
	*out = m;
	return 0;
}

int migd_mig_start_incoming(struct migd_vmm *d,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size)
{
	struct hv_vm_cfg base;
	struct migd_mig *m;
	char hp[MIGD_HOST_MAX + 16];
	int ret;

	ret = mig_new(d, MIGD__MIG_DIRECTION__MIG_DIRECTION_INCOMING, prm, &m);
	if (ret) {
		snprintf(err, err_size, "out of resources");
		return ret;
	}
	if (prm->vm_name[0]) {
		snprintf(m->vm, sizeof(m->vm), "%s", prm->vm_name);
		ret = migd_registry_hold(&d->reg, m->vm);
		if (ret) {
			snprintf(err, err_size,
				 ret == -EEXIST ? "a VM named '%s' exists"
						: "cannot hold the name '%s'",
				 m->vm);
			mig_free(m);
			return ret;
		}
		m->name_held = true;
	} else {
		/* Until the source offers its name in setup. */
		snprintf(m->vm, sizeof(m->vm), "incoming-%llu",
			 (unsigned long long)m->id);
	}
	m->opts.dst_name_check = name_check_cb;
	m->opts.dst_name_arg = m;
	m->opts.dst_running = running_cb;
	m->opts.dst_running_arg = m;
	m->opts.dst_commit = migd_mig_fleet_commit;
	m->opts.dst_commit_arg = m;
	/* Named by migrate-recv: that one. Else a daemon told to pick
	 * (auto) takes the source's, which the layout names; one told
	 * which accelerator to use receives into it. */
	hv_vm_cfg_init(&base,
		       prm->accel != HV_ACCEL_INVALID ? prm->accel
		       : d->cfg.accel_auto    ? HV_ACCEL_INVALID
					      : d->accel,
		       HV_VM_MIN_MEM, 1);
	base.backing = d->cfg.backing; /* ours, whatever the source's was */
	ret = set_tls(m, true, err, err_size);
	if (!ret) {
		/* A range (firewall rules open exactly it): the first port
		 * free now; concurrent incoming migrations take the next. */
		unsigned last = prm->port_max > prm->port ? prm->port_max
							   : prm->port;

		for (unsigned p = prm->port; p <= last; p++) {
			ret = mig_dest_start(prm->host[0] ? prm->host
							  : "0.0.0.0",
					     (uint16_t)p, &m->opts, &base,
					     progress_cb, m, &m->dst);
			if (ret != -EADDRINUSE)
				break;
		}
		if (ret && last > prm->port)
			snprintf(err, err_size,
				 "cannot listen on %s:%u-%u: %s",
				 prm->host[0] ? prm->host : "*", prm->port,
				 last, ret == -EADDRINUSE
					       ? "every port of the range is "
						 "in use"
					       : strerror(-ret));
		else if (ret)
			snprintf(err, err_size, "cannot listen on %s:%u: %s",
				 prm->host[0] ? prm->host : "*", prm->port,
				 strerror(-ret));
	}
	if (!ret) {
		m->port = mig_dest_port(m->dst);
		m->armed_ns = hv_now_ns();
		ret = mig_launch(m);
		if (ret) {
			struct hv_vm *vm = NULL;

			mig_dest_cancel(m->dst);
			mig_dest_wait(m->dst, &vm, &m->final);
			adopt_name(m); /* the engine may have held one */
			mig_dest_destroy(m->dst);
			m->dst = NULL;
			hv_vm_destroy(vm);
			snprintf(err, err_size, "cannot start a thread");
		}
	}
	if (ret) {
		if (m->name_held)
			migd_registry_release(&d->reg, m->vm);
		mig_free(m);
		return ret;
	}
	hv_info(COMP,
		"event=migration_listening mig=%llu dir=incoming vm=%s "
		"listen=%s tls=%d",
		(unsigned long long)m->id, m->vm,
		migd_fmt_hostport(hp, sizeof(hp), prm->host, m->port),
		!prm->insecure);
	publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, false);
	*out = m;
	return 0;
}

int migd_mig_resolve(struct migd_mig *m, enum mig_resolve how)
{
	struct migd_vm *v;
	struct mig_progress p;
	int ret;

	if (!m->unresolved)
		return -EALREADY;
	v = migd_registry_find(&m->d->reg, m->vm);
	ret = mig_source_resolve(m->src, how, &p);
	hv_log(ret && ret != -EBADE ? HV_LOG_ERR : HV_LOG_INFO, COMP,
	       "event=migration_resolved mig=%llu vm=%s how=%s err=%d "
	       "phase=%s msg=\"%s\"",
	       (unsigned long long)m->id, m->vm,
	       how == MIG_RESOLVE_RESUME_SOURCE ? "resume_source"
						: "confirm_destination",
	       ret, mig_phase_name(p.phase), p.message);
	if (ret && ret != -EBADE)
		return ret; /* still unresolved: nothing changed */
	m->final = p;
	m->result = ret ? ret : p.error;
	m->unresolved = false;
	mig_source_destroy(m->src);
	m->src = NULL;
	/* The migration's end, then the VM's (as settle() orders them). */
	publish(m, MIGD__EVENT_KIND__EVENT_KIND_MIG_PHASE, true);
	if (v && v->mig_id == m->id)
		settle_source_vm(m, v, MIGD__VM_STATE__VM_STATE_UNRESOLVED);
	trim_history(m->d);
	return ret;
}

void migd_mig_shutdown_all(struct migd_vmm *d)
{
	for (struct migd_mig *m = d->migs; m; m = m->next) {
		if (m->unresolved) {
			/* The registry destroys the paused VM with the
			 * daemon: say loudly that its fate was open. */
			hv_err(COMP,
			       "event=shutdown_unresolved mig=%llu vm=%s "
			       "what=\"paused source copy destroyed, commit "
			       "never resolved\"",
			       (unsigned long long)m->id, m->vm);
			mig_source_destroy(m->src);
			m->src = NULL;
			m->unresolved = false;
		}
		if (m->finished)
			continue;
		migd_mig_cancel(m);
		/* Blocking the loop here is fine: it is shutting down and
		 * the engine answers a cancel promptly. */
		if (m->waiter_started) {
			uv_thread_join(&m->waiter);
			m->waiter_started = false;
		}
		settle(m);
	}
	while (d->migs) {
		struct migd_mig *m = d->migs;

		d->migs = m->next;
		mig_free(m);
	}
}

#else /* !MIGD_HAVE_ENGINE */

int migd_mig_start_outgoing(struct migd_vmm *d, struct migd_vm *v,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size)
{
	snprintf(err, err_size, "migration engine not built");
	return -ENOSYS;
}

int migd_mig_start_incoming(struct migd_vmm *d,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size)
{
	snprintf(err, err_size, "migration engine not built");
	return -ENOSYS;
}

int migd_mig_resolve(struct migd_mig *m, enum mig_resolve how)
{
	(void)how;
	return -EALREADY;
}

void migd_mig_shutdown_all(struct migd_vmm *d)
{
	while (d->migs) {
		struct migd_mig *m = d->migs;

		d->migs = m->next;
		mig_free(m);
	}
	(void)publish;
	(void)phase_terminal;
	(void)dir_name;
	(void)trim_history;
}

#endif

struct migd_mig *migd_mig_find(struct migd_vmm *d, uint64_t id, const char *vm)
{
	for (struct migd_mig *m = d->migs; m; m = m->next) {
		if (id && m->id == id)
			return m;
		if (!id && vm && *vm && !strcmp(m->vm, vm))
			return m;
	}
	return NULL;
}
