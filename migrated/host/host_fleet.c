// SPDX-License-Identifier: MIT
/*
 * migd_host_fleet: registration, fleet-wide names and fencing in the
 * host role (host_fleet.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hvcore/log.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_drain.h"
#include "migrated/host/host_fleet.h"
#include "migrated/fleet/fleet.h"

#define COMP "migd.fleet"
#define TICK_MS 100

struct migd_hfleet {
	struct migd_host *d;
	struct migd_fleet *f;
	uv_timer_t timer;
	uint64_t grace_ms;
	/* Fenced: the VMs this fence paused, by name (resumed or dropped
	 * by the reconciliation, one by one as etcd answers). */
	bool fenced;
	char (*paused)[MIGD_NAME_MAX + 1];
	unsigned nr_paused;
	bool reconciled_once; /* logged since the last fence */
	/* Marked draining in the registration (host_drain.c). */
	bool draining;
};

static char *host_record(struct migd_host *d, const char *id, bool draining)
{
	json_object *o = json_object_new_object();
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	char mig[MIGD_HOST_MAX + 8];
	char *s = NULL;

	if (!o)
		return NULL;
	snprintf(mig, sizeof(mig), "%s:%u", d->cfg.mig_host, d->cfg.mig_port);
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "rpc", json_object_new_string(
					d->srv.tcp_listening ? d->srv.tcp_addr :
							       ""));
	json_object_object_add(o, "migration", json_object_new_string(mig));
	json_object_object_add(o, "mem_bytes", json_object_new_int64(
					(int64_t)pages * psz));
	json_object_object_add(o, "vcpus", json_object_new_int64(
					sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_object_add(o, "accel", json_object_new_string(
					hv_accel_kind_name(d->accel)));
	json_object_object_add(o, "version",
			       json_object_new_string(MIGD_VERSION));
	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	if (draining)
		json_object_object_add(o, "draining",
				       json_object_new_boolean(1));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* ---- fencing ------------------------------------------------------------- */

static bool vm_running(struct migd_worker *w)
{
	return w->has_vm && !w->vm_gone && !w->crashed && !w->retired &&
	       w->name[0] && w->info &&
	       w->info->state == MIGD__VM_STATE__VM_STATE_RUNNING;
}

static void call_done(struct migd_worker *w, Migd__Response *resp, void *arg)
{
	const char *what = arg;

	if (!resp)
		hv_warn(COMP, "event=fleet_%s_failed vm=%s err=\"worker "
			"gone\"", what, w->name);
	else if (resp->error &&
		 resp->error->status != MIGD__STATUS__STATUS_OK)
		hv_warn(COMP, "event=fleet_%s_failed vm=%s err=\"%s\"", what,
			w->name, resp->error->message ? resp->error->message
						      : "?");
}

static int vm_call(struct migd_worker *w, unsigned call_case)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmRef ref = MIGD__VM_REF__INIT;
	const char *what = "resume";

	ref.name = w->name;
	req.call_case = call_case;
	switch (call_case) {
	case MIGD__REQUEST__CALL_VM_PAUSE:
		req.vm_pause = &ref;
		what = "fence";
		break;
	case MIGD__REQUEST__CALL_VM_RESUME:
		req.vm_resume = &ref;
		break;
	default:
		req.vm_destroy = &ref;
		what = "drop";
		break;
	}
	return migd_worker_call(w, &req, call_done, (void *)what);
}

static bool in_paused(struct migd_hfleet *hf, const char *name)
{
	for (unsigned i = 0; i < hf->nr_paused; i++)
		if (!strcmp(hf->paused[i], name))
			return true;
	return false;
}

static bool vm_migrating(struct migd_worker *w)
{
	return w->has_vm && !w->vm_gone && !w->crashed && !w->retired &&
	       w->name[0] && w->info &&
	       (w->info->state == MIGD__VM_STATE__VM_STATE_MIGRATING ||
		w->info->state == MIGD__VM_STATE__VM_STATE_UNRESOLVED);
}

/*
 * Pause every running VM the fence has not paused yet. A VM that is
 * MIGRATING out is left to its migration (docs/fleet.md,
 * "Fencing"): the worker refuses to pause it, and its outcome is safe
 * either way -- the destination's commit needs etcd's yes, a source
 * whose commit got no answer stays UNRESOLVED (paused) until etcd says
 * who owns the VM. If it fails back and runs here again while we are
 * still fenced, the next sweep (every tick) pauses it then.
 */
static void fence_sweep(struct migd_hfleet *hf)
{
	struct migd_worker *w;

	for (w = hf->d->sup->workers; w; w = w->next) {
		if (vm_migrating(w) && !w->fence_noted) {
			w->fence_noted = true;
			hv_warn(COMP, "event=fleet_fence_skip vm=%s "
				"why=migrating", w->name);
		}
		if (!vm_running(w) || !hf->paused ||
		    hf->nr_paused == MIGD_VMS_MAX ||
		    in_paused(hf, w->name))
			continue;
		if (vm_call(w, MIGD__REQUEST__CALL_VM_PAUSE))
			continue;
		snprintf(hf->paused[hf->nr_paused++], MIGD_NAME_MAX + 1, "%s",
			 w->name);
		if (w->fence_noted)
			hv_warn(COMP, "event=fleet_fenced_late vm=%s "
				"why=\"back from a migration\"", w->name);
	}
}

/*
 * Timeline of a partition (ttl 10 s, grace 6 s by default):
 *   t0      last keepalive sent that etcd acknowledged
 *   t0+6 s  here: every running VM paused (at most TICK_MS late)
 *   t0+10 s earliest the lease can expire in etcd; only then may another
 *           host's migration commit take a VM of ours over
 * so a VM taken over is never running here too, provided our clock and
 * etcd's do not drift apart by the margin (4 s).
 */
static void fence(struct migd_hfleet *hf, uint64_t age)
{
	struct migd_worker *w;

	hf->fenced = true;
	hf->reconciled_once = false;
	free(hf->paused);
	hf->paused = calloc(MIGD_VMS_MAX, sizeof(*hf->paused));
	hf->nr_paused = 0;
	for (w = hf->d->sup->workers; w; w = w->next)
		w->fence_noted = false;
	fence_sweep(hf);
	hv_warn(COMP, "event=fleet_fenced host=%s why=%s paused=%u",
		migd_fleet_host_id(hf->f),
		age == UINT64_MAX ? "lease_lost" : "keepalive_late",
		hf->nr_paused);
}

/*
 * Contact is back: settle each VM the fence paused. One etcd read per
 * VM; a VM whose read fails stays in the list for the next tick. A VM
 * that a migration holds now (it was paused here, then migrate-send or a
 * drain took it; or its commit is UNRESOLVED) is neither resumed nor
 * dropped: its migration settles it by the same key (the destination's
 * commit, the source's settle), and dropping it here could destroy the
 * copy a destination still needs. It stays in the list, without keeping
 * the host fenced, until its migration ended.
 */
static void reconcile(struct migd_hfleet *hf)
{
	unsigned kept = 0, resumed = 0, dropped = 0, held = 0;

	for (unsigned i = 0; i < hf->nr_paused; i++) {
		const char *name = hf->paused[i];
		struct migd_worker *w = migd_host_find(hf->d, name);
		struct migd_fleet_owner o;
		char err[512];
		bool found;

		if (!w || w->vm_gone || w->retired)
			continue; /* destroyed or migrated away meanwhile */
		if (vm_migrating(w)) {
			memmove(hf->paused[kept++], name, MIGD_NAME_MAX + 1);
			held++;
			continue;
		}
		if (migd_fleet_vm_get(hf->f, name, &found, &o, err,
				      sizeof(err))) {
			hv_warn(COMP, "event=fleet_reconcile_later vm=%s "
				"err=\"%s\"", name, err);
			memmove(hf->paused[kept++], name, MIGD_NAME_MAX + 1);
			continue;
		}
		if (found && !strcmp(o.owner, migd_fleet_host_id(hf->f))) {
			vm_call(w, MIGD__REQUEST__CALL_VM_RESUME);
			resumed++;
		} else if (found) {
			hv_warn(COMP, "event=fleet_vm_moved vm=%s owner=%s "
				"generation=%" PRIu64 " action=drop", name,
				o.owner, o.generation);
			vm_call(w, MIGD__REQUEST__CALL_VM_DESTROY);
			dropped++;
		} else {
			hv_warn(COMP, "event=fleet_vm_unowned vm=%s "
				"action=keep_paused", name);
		}
	}
	hf->nr_paused = kept;
	hf->fenced = kept > held;
	if (resumed || dropped || kept > held || !hf->reconciled_once)
		hv_info(COMP, "event=fleet_reconciled host=%s resumed=%u "
			"dropped=%u pending=%u held_by_migration=%u",
			migd_fleet_host_id(hf->f), resumed, dropped,
			kept - held, held);
	hf->reconciled_once = !hf->fenced;
}

static void tick(uv_timer_t *t)
{
	struct migd_hfleet *hf = t->data;
	uint64_t age = migd_fleet_lease_age_ms(hf->f);

	if (!hf->fenced && age > hf->grace_ms)
		fence(hf, age);
	else if (age <= hf->grace_ms && (hf->fenced || hf->nr_paused))
		reconcile(hf); /* also VMs whose migration held them */
	else if (hf->fenced)
		fence_sweep(hf);
}

/* ---- start / stop -------------------------------------------------------- */

int migd_host_fleet_start(struct migd_host *d)
{
	struct migd_fleet_cfg fc = { 0 };
	struct migd_hfleet *hf;
	char id[64], lease_file[PATH_MAX + 16], err[1024];
	unsigned ttl = d->cfg.etcd_ttl_s ? d->cfg.etcd_ttl_s
					 : MIGD_FLEET_TTL_DEFAULT;
	int ret;

	if (!d->cfg.etcd_endpoints[0])
		return 0;
	snprintf(id, sizeof(id), "%s", d->cfg.host_id);
	if (!id[0] && gethostname(id, sizeof(id)))
		snprintf(id, sizeof(id), "host");
	hf = calloc(1, sizeof(*hf));
	if (!hf)
		return -ENOMEM;
	hf->d = d;
	hf->grace_ms = d->cfg.fence_grace_ms ? d->cfg.fence_grace_ms
					     : ttl * 600u;
	snprintf(lease_file, sizeof(lease_file), "%s/fleet.lease",
		 d->cfg.state_dir);
	fc.etcd.endpoints = d->cfg.etcd_endpoints;
	fc.etcd.cacert = d->cfg.etcd_cacert;
	fc.etcd.cert = d->cfg.etcd_cert;
	fc.etcd.key = d->cfg.etcd_key;
	/* A member that hangs (stopped, partitioned) costs a whole timeout
	 * before the next one is tried: keep that well inside the grace so
	 * a keepalive still gets through another member in time. */
	fc.etcd.timeout_ms = (uint32_t)(hf->grace_ms / 4);
	if (fc.etcd.timeout_ms < 250)
		fc.etcd.timeout_ms = 250;
	if (fc.etcd.timeout_ms > MIGD_ETCD_TIMEOUT_MS_DEFAULT)
		fc.etcd.timeout_ms = MIGD_ETCD_TIMEOUT_MS_DEFAULT;
	fc.prefix = d->cfg.etcd_prefix[0] ? d->cfg.etcd_prefix : NULL;
	fc.host_id = id;
	fc.ttl_s = ttl;
	fc.lease_file = lease_file;
	fc.record = host_record(d, id, false);
	if (!fc.record) {
		free(hf);
		return -ENOMEM;
	}
	ret = migd_fleet_start(&fc, &hf->f, err, sizeof(err));
	free((char *)fc.record);
	if (ret) {
		free(hf);
		if (d->cfg.etcd_optional && ret != -EEXIST &&
		    ret != -EINVAL) {
			hv_warn(COMP, "event=fleet_standalone etcd=%s "
				"why=\"%s\"", d->cfg.etcd_endpoints, err);
			return 0;
		}
		hv_err(COMP, "event=start_failed etcd=%s err=\"cannot join "
		       "the fleet: %s\"%s", d->cfg.etcd_endpoints, err,
		       ret == -EEXIST || ret == -EINVAL ? "" :
		       " hint=\"--etcd-optional runs standalone\"");
		return ret;
	}
	uv_timer_init(d->loop, &hf->timer);
	hf->timer.data = hf;
	uv_timer_start(&hf->timer, tick, TICK_MS, TICK_MS);
	d->fleet = hf;
	hv_info(COMP, "event=fleet_joined host=%s etcd=%s ttl=%u "
		"fence_grace_ms=%" PRIu64, id, d->cfg.etcd_endpoints, ttl,
		hf->grace_ms);
	return 0;
}

static void timer_closed(uv_handle_t *h)
{
	struct migd_hfleet *hf = h->data;

	free(hf->paused);
	free(hf);
}

void migd_host_fleet_stop(struct migd_host *d)
{
	struct migd_hfleet *hf = d->fleet;
	bool vms_left = false;

	if (!hf)
		return;
	for (struct migd_worker *w = d->sup ? d->sup->workers : NULL; w;
	     w = w->next)
		if (w->has_vm && !w->vm_gone && !w->crashed)
			vms_left = true;
	if (migd_host_drain_stop(d, hf->f, !vms_left))
		hv_info(COMP, "event=fleet_stop_after_drain host=%s",
			migd_fleet_host_id(hf->f));
	else
		migd_fleet_stop(hf->f, !vms_left);
	d->fleet = NULL;
	uv_timer_stop(&hf->timer);
	uv_close((uv_handle_t *)&hf->timer, timer_closed);
}

const char *migd_host_fleet_id(struct migd_host *d)
{
	return d->fleet ? migd_fleet_host_id(d->fleet->f) : NULL;
}

int migd_host_fleet_claim(struct migd_host *d, const char *name, char *err,
			  size_t err_size)
{
	struct migd_fleet_owner o;

	if (!d->fleet)
		return 0;
	if (d->fleet->fenced) {
		snprintf(err, err_size, "this host is fenced (no contact "
			 "with etcd): no VM may be created");
		return -EAGAIN;
	}
	return migd_fleet_vm_claim(d->fleet->f, name, &o, err, err_size);
}

void migd_host_fleet_release(struct migd_host *d, const char *name)
{
	char err[512];
	int ret;

	if (!d->fleet || !name || !*name)
		return;
	ret = migd_fleet_vm_release(d->fleet->f, name, err, sizeof(err));
	if (ret)
		hv_warn(COMP, "event=fleet_release_failed vm=%s err=\"%s\"",
			name, err);
}

struct migd_fleet *migd_host_fleet_keys(struct migd_host *d)
{
	return d->fleet ? d->fleet->f : NULL;
}

uint64_t migd_host_fleet_grace_ms(struct migd_host *d)
{
	return d->fleet ? d->fleet->grace_ms : 0;
}

bool migd_host_fleet_draining(struct migd_host *d)
{
	return d->fleet && d->fleet->draining;
}

int migd_host_fleet_set_draining(struct migd_host *d, bool on, char *err,
				 size_t err_size)
{
	struct migd_hfleet *hf = d->fleet;
	char *rec;
	int ret;

	if (!hf)
		return 0;
	rec = host_record(d, migd_fleet_host_id(hf->f), on);
	if (!rec)
		return -ENOMEM;
	hf->draining = on;
	ret = migd_fleet_set_record(hf->f, rec, err, err_size);
	free(rec);
	hv_info(COMP, "event=fleet_draining host=%s on=%d%s",
		migd_fleet_host_id(hf->f), on, ret ? " put=later" : "");
	return ret;
}
