// SPDX-License-Identifier: MIT
/*
 * migd_metrics: the VM, worker and migration families, rendered from what
 * the daemon keeps of its workers (host.h: each worker's last VmInfo and
 * DirtyRateSample, the migration records' last MigInfo), and the
 * migration counters those records feed (metrics.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/daemon/daemon.h"
#include "migrated/daemon/host.h"
#include "migrated/daemon/metrics.h"
#include "migrated/daemon/metrics_priv.h"

#define put migd__mput
#define family migd__mfamily
#define esc migd__mesc

#define NR_PHASES (MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED + 1)

static const char *const phase_label[NR_PHASES] = {
	"invalid", "setup",	"iterate", "switchover", "commit",
	"completed", "failed",	"cancelled", "unresolved",
};

/* A VM the daemon lists (vm_list): crashed ones included. */
static bool vm_listed(const struct migd_worker *w)
{
	return w->has_vm && !w->vm_gone && !w->retired && w->name[0];
}

/* Its last dirty-rate sample; none for a crashed VM (the guest is gone,
 * the last reading would be stale) or before the worker's first. */
static const Migd__DirtyRateSample *vm_sample(const struct migd_worker *w)
{
	return vm_listed(w) && !w->crashed ? w->dr : NULL;
}

static struct migd_worker *workers(struct migd *d)
{
	return d->host ? d->host->workers : NULL;
}

static const char *source_of(const Migd__DirtyRateSample *s)
{
	return s->source && *s->source ? s->source : "off";
}

/*
 * One dirty-rate family (pages or bytes per second) for every VM: the
 * monitor's windows, or, while an outgoing migration owns the dirty log,
 * its own measurement (no windows: window="migration").
 */
static void dirty_family(struct migd *d, struct migd_mbuf *b, const char *name,
			 const char *help, bool bytes)
{
	char n[160], src[32];

	family(b, name, "gauge", help);
	for (struct migd_worker *w = workers(d); w; w = w->next) {
		const Migd__DirtyRateSample *s = vm_sample(w);

		if (!s)
			continue;
		esc(w->name, n, sizeof(n));
		esc(source_of(s), src, sizeof(src));
		if (s->n_windows == 0) {
			put(b, "%s{vm=\"%s\",window=\"migration\","
			       "source=\"%s\"} %llu\n",
			    name, n, src,
			    (unsigned long long)(bytes ? s->bytes_per_s
						       : s->pages_per_s));
			continue;
		}
		for (size_t i = 0; i < s->n_windows; i++)
			put(b, "%s{vm=\"%s\",window=\"%us\",source=\"%s\"} "
			       "%.1f\n",
			    name, n, s->windows[i]->seconds, src,
			    bytes ? s->windows[i]->bytes_per_s
				  : s->windows[i]->pages_per_s);
	}
}

void migd__metrics_vms(struct migd *d, struct migd_mbuf *b)
{
	static const struct {
		Migd__VmState st;
		const char *name;
	} states[] = {
		{MIGD__VM_STATE__VM_STATE_CREATED, "created"},
		{MIGD__VM_STATE__VM_STATE_RUNNING, "running"},
		{MIGD__VM_STATE__VM_STATE_PAUSED, "paused"},
		{MIGD__VM_STATE__VM_STATE_MIGRATING, "migrating"},
		{MIGD__VM_STATE__VM_STATE_STOPPED, "stopped"},
		{MIGD__VM_STATE__VM_STATE_UNRESOLVED, "unresolved"},
		{MIGD__VM_STATE__VM_STATE_CRASHED, "crashed"},
	};
	char n[160];

	family(b, "migd_vms", "gauge", "VMs owned by this daemon, by state.");
	for (size_t i = 0; i < HV_ARRAY_SIZE(states); i++) {
		unsigned c = 0;

		for (struct migd_worker *w = workers(d); w; w = w->next) {
			Migd__VmState st;

			if (!vm_listed(w))
				continue;
			/* A re-adopted worker that has not answered yet has
			 * no state: it counts in none. */
			st = w->crashed ? MIGD__VM_STATE__VM_STATE_CRASHED
			     : w->info	? w->info->state
					: MIGD__VM_STATE__VM_STATE_INVALID;
			c += st == states[i].st;
		}
		put(b, "migd_vms{state=\"%s\"} %u\n", states[i].name, c);
	}
	family(b, "migd_vms_created_total", "counter",
	       "VMs created through the API since start.");
	put(b, "migd_vms_created_total %llu\n",
	    (unsigned long long)d->vms_created);

	dirty_family(d, b, "migd_vm_dirty_pages_per_second",
		     "Pages dirtied per second (distinct per sample), by "
		     "window.",
		     false);
	dirty_family(d, b, "migd_vm_dirty_bytes_per_second",
		     "Bytes dirtied per second, by window.", true);
	family(b, "migd_vm_working_set_pages", "gauge",
	       "Distinct pages dirtied in the window.");
	for (struct migd_worker *w = workers(d); w; w = w->next) {
		const Migd__DirtyRateSample *s = vm_sample(w);

		if (!s)
			continue;
		esc(w->name, n, sizeof(n));
		for (size_t i = 0; i < s->n_windows; i++) {
			const Migd__DirtyRateWindow *x = s->windows[i];

			put(b,
			    "migd_vm_working_set_pages{vm=\"%s\","
			    "window=\"%us\"} %llu\n",
			    n, x->seconds,
			    (unsigned long long)x->working_set_pages);
		}
	}
	family(b, "migd_vcpu_dirty_pages_per_second", "gauge",
	       "Per-vCPU dirty pages per second (split estimated from the "
	       "guest's write counters).");
	for (struct migd_worker *w = workers(d); w; w = w->next) {
		const Migd__DirtyRateSample *s = vm_sample(w);

		if (!s)
			continue;
		esc(w->name, n, sizeof(n));
		for (size_t i = 0; i < s->n_vcpus; i++) {
			const Migd__VcpuDirtyRate *v = s->vcpus[i];

			for (size_t k = 0;
			     k < v->n_pages_per_s && k < s->n_windows; k++)
				put(b,
				    "migd_vcpu_dirty_pages_per_second{vm="
				    "\"%s\",vcpu=\"%u\",window=\"%us\","
				    "estimated=\"%s\"} %.1f\n",
				    n, v->index, s->windows[k]->seconds,
				    s->vcpu_split_estimated ? "true" : "false",
				    v->pages_per_s[k]);
		}
	}
}

void migd__metrics_workers(struct migd *d, struct migd_mbuf *b)
{
	const struct migd_host *h = d->host;
	unsigned alive = 0;
	char n[160];

	for (struct migd_worker *w = workers(d); w; w = w->next)
		alive += !w->crashed; /* a crashed entry has no process */
	family(b, "migd_workers", "gauge",
	       "Worker processes (migrated-vmm) the daemon watches.");
	put(b, "migd_workers %u\n", alive);
	family(b, "migd_vm_crashes_total", "counter",
	       "VMs whose worker process died under them (also those found "
	       "dead at re-adoption).");
	put(b, "migd_vm_crashes_total %llu\n",
	    (unsigned long long)(h ? h->crashes : 0));
	family(b, "migd_workers_adopted_total", "counter",
	       "Workers of an earlier daemon re-adopted at start-up.");
	put(b, "migd_workers_adopted_total %llu\n",
	    (unsigned long long)(h ? h->adopted : 0));
	family(b, "migd_workers_spawned_total", "counter",
	       "Workers this daemon started.");
	put(b, "migd_workers_spawned_total %llu\n",
	    (unsigned long long)(h ? h->spawned : 0));
	family(b, "migd_vm_worker_info", "gauge",
	       "1 per VM: the pid and id of the worker that runs it.");
	for (struct migd_worker *w = workers(d); w; w = w->next) {
		if (!vm_listed(w))
			continue;
		esc(w->name, n, sizeof(n));
		put(b, "migd_vm_worker_info{vm=\"%s\",pid=\"%d\","
		       "worker=\"%llu\"} 1\n",
		    n, w->pid, (unsigned long long)w->wid);
	}
}

/* ---- migrations -------------------------------------------------------- */

static const struct {
	const char *name, *type, *help;
} mig_fams[] = {
	{"migd_migration_phase", "gauge",
	 "1 for the migration's current phase."},
	{"migd_migration_iteration", "gauge", "Precopy iteration."},
	{"migd_migration_progress_ratio", "gauge",
	 "1 - remaining / RAM (1 when completed)."},
	{"migd_migration_bytes_wire", "counter",
	 "Bytes on the wire, compressed and framed."},
	{"migd_migration_pages_sent", "counter", "Pages sent."},
	{"migd_migration_remaining_bytes", "gauge",
	 "Dirty bytes left to send."},
	{"migd_migration_bandwidth_bytes_per_second", "gauge",
	 "Bandwidth of the last iteration."},
	{"migd_migration_dirty_bytes_per_second", "gauge",
	 "Dirty rate the engine measured in the last iteration."},
	{"migd_migration_downtime_seconds", "gauge",
	 "Downtime measured by the source (sum of its parts)."},
	{"migd_migration_guest_downtime_seconds", "gauge",
	 "Largest heartbeat gap the guest saw."},
};

static const Migd__MigProgress *progress_of(const struct migd_hmig *m)
{
	static const Migd__MigProgress none = MIGD__MIG_PROGRESS__INIT;

	return m->info && m->info->progress ? m->info->progress : &none;
}

static unsigned phase_of(const Migd__MigProgress *p)
{
	return (unsigned)p->phase < NR_PHASES ? (unsigned)p->phase : 0;
}

/* The value of family @f (1 .. HV_ARRAY_SIZE(mig_fams) - 1). */
static double mig_value(size_t f, const Migd__MigProgress *p)
{
	double v;

	switch (f) {
	case 1:
		return p->iteration;
	case 2:
		if (p->phase == MIGD__MIG_PHASE__MIG_PHASE_COMPLETED)
			return 1;
		if (!p->ram_bytes)
			return 0;
		v = 1 - (double)p->remaining_bytes / (double)p->ram_bytes;
		return v < 0 ? 0 : v;
	case 3:
		return (double)p->bytes_wire;
	case 4:
		return (double)p->pages_sent;
	case 5:
		return (double)p->remaining_bytes;
	case 6:
		return (double)p->bandwidth;
	case 7:
		return (double)p->dirty_rate;
	case 8:
		return p->downtime ? p->downtime->total_ns / 1e9 : 0;
	case 9:
		return p->guest_downtime_ns / 1e9;
	}
	return 0;
}

static void mig_series(struct migd_mbuf *b, size_t f, const struct migd_hmig *m)
{
	const Migd__MigProgress *p = progress_of(m);
	bool out = m->info->direction ==
		   MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING;
	const char *dir = out ? "outgoing" : "incoming";
	char vm[160], peer[300];

	esc(m->info->vm, vm, sizeof(vm));
	esc(m->info->peer, peer, sizeof(peer));
	if (f == 0) {
		for (unsigned ph = 1; ph < NR_PHASES; ph++)
			put(b,
			    "migd_migration_phase{id=\"%llu\",vm=\"%s\","
			    "direction=\"%s\",phase=\"%s\"} %d\n",
			    (unsigned long long)m->id, vm, dir, phase_label[ph],
			    phase_of(p) == ph);
		return;
	}
	put(b, "%s{id=\"%llu\",vm=\"%s\",direction=\"%s\",peer=\"%s\"} %.6g\n",
	    mig_fams[f].name, (unsigned long long)m->id, vm, dir, peer,
	    mig_value(f, p));
}

void migd__metrics_migs(struct migd *d, struct migd_mbuf *b)
{
	struct migd_hmig *migs = d->host ? d->host->migs : NULL;

	for (size_t f = 0; f < HV_ARRAY_SIZE(mig_fams); f++) {
		family(b, mig_fams[f].name, mig_fams[f].type, mig_fams[f].help);
		for (struct migd_hmig *m = migs; m; m = m->next)
			if (m->info)
				mig_series(b, f, m);
	}
	family(b, "migd_migrations", "gauge",
	       "Migrations known (running and the last finished), by phase.");
	for (unsigned ph = 1; ph < NR_PHASES; ph++) {
		unsigned c = 0;

		for (struct migd_hmig *m = migs; m; m = m->next)
			c += m->info && phase_of(progress_of(m)) == ph;
		put(b, "migd_migrations{phase=\"%s\"} %u\n", phase_label[ph],
		    c);
	}
	family(b, "migd_migration_errors_total", "counter",
	       "Outgoing migrations that failed (not cancelled).");
	put(b, "migd_migration_errors_total %llu\n",
	    (unsigned long long)d->mig_errors);
	family(b, "migd_migration_unresolved_total", "counter",
	       "Outgoing migrations whose commit had no answer (source VM "
	       "kept paused until resolved).");
	put(b, "migd_migration_unresolved_total %llu\n",
	    (unsigned long long)d->mig_unresolved);
	family(b, "migd_migration_verify_failures_total", "counter",
	       "Outgoing migrations whose post-commit verification found "
	       "pages that differ (also in migd_migration_errors_total).");
	put(b, "migd_migration_verify_failures_total %llu\n",
	    (unsigned long long)d->mig_verify_failures);
}

/* ---- counters ---------------------------------------------------------- */

/* Ended for good: FAILED, CANCELLED or COMPLETED (UNRESOLVED waits for
 * mig_resolve and ends in one of those). */
static bool settled(const Migd__MigInfo *i)
{
	return i && i->finished && i->progress &&
	       i->progress->phase != MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED;
}

static bool unresolved(const Migd__MigInfo *i)
{
	return i && i->progress &&
	       i->progress->phase == MIGD__MIG_PHASE__MIG_PHASE_UNRESOLVED;
}

void migd_metrics_mig_seen(struct migd *d, const Migd__MigInfo *prev,
			   const Migd__MigInfo *now)
{
	const Migd__MigProgress *p;
	bool vf;

	if (!now || !now->progress ||
	    now->direction != MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING)
		return;
	p = now->progress;
	vf = p->verify_failed || p->error == -EBADE;
	if (unresolved(now) && !unresolved(prev))
		d->mig_unresolved++;
	if (!settled(now) || settled(prev))
		return;
	switch (p->phase) {
	case MIGD__MIG_PHASE__MIG_PHASE_COMPLETED:
		/* A verification failure completes with -EBADE. */
		d->mig_errors += p->error != 0 || vf;
		d->mig_verify_failures += vf;
		break;
	case MIGD__MIG_PHASE__MIG_PHASE_CANCELLED:
		break;
	default:
		d->mig_errors++;
		break;
	}
}
