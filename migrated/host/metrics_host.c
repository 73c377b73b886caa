// SPDX-License-Identifier: MIT
/*
 * migd_metrics: the VM and worker families, rendered from what the daemon
 * keeps of its workers (host.h: each worker's last VmInfo and
 * DirtyRateSample); the migrations are metrics_mig.c's.
 */
#include <stdio.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/metrics.h"
#include "migrated/host/metrics_priv.h"

#define put migd__mput
#define family migd__mfamily
#define esc migd__mesc
#define num migd__mnum

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

/* Snapshots and restores (docs/snapshots.md): counts by result, and the
 * sums of the successful snapshots' bytes, pauses and durations. */
static void snap_families(struct migd_host *d, struct migd_mbuf *b)
{
	char v[MIGD_NUM_MAX];

	family(b, "migd_snapshots_total", "counter",
	       "VM snapshots since start, by result.");
	put(b, "migd_snapshots_total{result=\"ok\"} %llu\n",
	    (unsigned long long)d->snaps_ok);
	put(b, "migd_snapshots_total{result=\"failed\"} %llu\n",
	    (unsigned long long)d->snaps_failed);
	family(b, "migd_snapshot_bytes_total", "counter",
	       "Bytes written by successful snapshots (memory and state).");
	put(b, "migd_snapshot_bytes_total %llu\n",
	    (unsigned long long)d->snap_bytes);
	family(b, "migd_snapshot_pause_seconds_total", "counter",
	       "Time VMs were paused by successful snapshots.");
	put(b, "migd_snapshot_pause_seconds_total %s\n",
	    num((double)d->snap_pause_ns / 1e9, v));
	family(b, "migd_snapshot_duration_seconds_total", "counter",
	       "Time successful snapshots took, fsync included.");
	put(b, "migd_snapshot_duration_seconds_total %s\n",
	    num((double)d->snap_duration_ns / 1e9, v));
	family(b, "migd_restores_total", "counter",
	       "VMs restored from snapshots since start, by result.");
	put(b, "migd_restores_total{result=\"ok\"} %llu\n",
	    (unsigned long long)d->restores_ok);
	put(b, "migd_restores_total{result=\"failed\"} %llu\n",
	    (unsigned long long)d->restores_failed);
}

static struct migd_worker *workers(struct migd_host *d)
{
	return d->sup ? d->sup->workers : NULL;
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
static void dirty_family(struct migd_host *d, struct migd_mbuf *b,
			 const char *name, const char *help, bool bytes)
{
	char n[160], src[32], v[MIGD_NUM_MAX];

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
			       "%s\n",
			    name, n, s->windows[i]->seconds, src,
			    num(bytes ? s->windows[i]->bytes_per_s
				      : s->windows[i]->pages_per_s,
				v));
	}
}

void migd__metrics_vms(struct migd_host *d, struct migd_mbuf *b)
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
	char n[160], val[MIGD_NUM_MAX];

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
	snap_families(d, b);

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
				    "estimated=\"%s\"} %s\n",
				    n, v->index, s->windows[k]->seconds,
				    s->vcpu_split_estimated ? "true" : "false",
				    num(v->pages_per_s[k], val));
		}
	}
}

void migd__metrics_workers(struct migd_host *d, struct migd_mbuf *b)
{
	const struct migd_supervisor *h = d->sup;
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
