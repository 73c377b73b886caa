/* SPDX-License-Identifier: MIT */
/*
 * migd_metrics: Prometheus text exposition (format 0.0.4) over a minimal
 * HTTP/1.1 server on the daemon's loop: GET /metrics answers the daemon's
 * state, anything else 404 (other paths) or 405 (other methods); every
 * response closes the connection. A request head is at most 8 KiB and
 * must arrive within 5 s; at most 64 scrapers at once.
 *
 * Naming follows Prometheus' conventions: counters end in _total, units
 * are in the name (_bytes, _seconds), values are printed at full
 * precision, and HEAD /metrics answers the headers of a GET.
 *
 * Families (docs/api.md, "Metrics"): VM counts by state; per-VM dirty
 * rates, working sets and per-vCPU rates of the 1 s/10 s/60 s windows;
 * the worker processes (count, crashes, adoptions, spawns, which worker
 * runs which VM); the migrations in flight by VM and direction (phase,
 * progress, bytes, rates); lifetime totals of migrations by direction
 * and result and histograms of their total time, downtime and
 * guest-seen downtime; totals of RPC requests and refused TLS
 * handshakes. No series carries a migration id, so the series count is
 * bounded by the VMs, not by the migrations ever run.
 *
 * In the daemon (host role) VMs and migrations are what it keeps of its
 * workers (host.h): each worker's last VmInfo and DirtyRateSample, the
 * migration records' last MigInfo; a scrape asks no worker.
 *
 * Threads: loop thread.
 */
#ifndef MIGD_METRICS_H
#define MIGD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/control.pb-c.h"

struct migd_host;
struct migd_metrics;

/* Listen on @host:@port (0: any; the bound port is in *@port_out).
 * 0, -EINVAL, or a libuv error. */
int migd_metrics_start(struct migd_host *d, const char *host, uint16_t port,
		       uint16_t *port_out, struct migd_metrics **out);
/* Close the listener and every scrape in flight. stop(NULL) no-op. */
void migd_metrics_stop(struct migd_metrics *m);

/* Render the exposition into a malloc'd, NUL-terminated buffer (*@out,
 * length *@len). 0 or -ENOMEM. For the server and tests. */
int migd_metrics_render(struct migd_host *d, char **out, size_t *len);

/* How a settled migration ended (migd_migrations_total's result label). */
enum migd_mig_result {
	MIGD_MIG_RESULT_COMPLETED,     /* the VM runs on the destination */
	MIGD_MIG_RESULT_VERIFY_FAILED, /* ... but its pages differ */
	MIGD_MIG_RESULT_FAILED,	       /* an error; the VM stays */
	MIGD_MIG_RESULT_CANCELLED,     /* mig_cancel (or shutdown) */
	MIGD_MIG_RESULTS,
};

/* outgoing 0, incoming 1 */
#define MIGD_MIG_DIRS 2
/* Upper bounds of a histogram, +Inf not included. */
#define MIGD_HIST_BOUNDS_MAX 12

/* One histogram: per bucket (not cumulative; the last one is +Inf),
 * count and sum. */
struct migd_hist {
	uint64_t bucket[MIGD_HIST_BOUNDS_MAX + 1];
	uint64_t count;
	double sum;
};

/* Lifetime totals of settled migrations, by direction (struct migd_host). */
struct migd_mig_totals {
	uint64_t result[MIGD_MIG_DIRS][MIGD_MIG_RESULTS];
	struct migd_hist duration[MIGD_MIG_DIRS];	/* elapsed_ns */
	struct migd_hist downtime[MIGD_MIG_DIRS];	/* downtime.total_ns */
	struct migd_hist guest_downtime[MIGD_MIG_DIRS]; /* guest_downtime_ns */
};

/*
 * Count a migration's outcome into the daemon's totals as its record goes
 * from @prev (NULL: first seen) to @now. Once settled (finished, not
 * UNRESOLVED), both directions: d->mig_totals (result, and the
 * histograms of total time, of the downtime once a switchover ran, of the
 * guest-seen downtime once the guest reported one). Outgoing only, the
 * older totals: d->mig_unresolved when it enters UNRESOLVED; FAILED, or
 * COMPLETED with an error or a verification failure, as d->mig_errors
 * (the latter also as d->mig_verify_failures); CANCELLED is no error.
 * Reads only direction, finished and progress (phase, error,
 * verify_failed, elapsed and downtimes). For the host: call it with
 * every MigInfo a worker reports (and a crash that fails a record),
 * before the record takes it; not with what re-adoption finds (an
 * earlier daemon counted that).
 */
void migd_metrics_mig_seen(struct migd_host *d, const Migd__MigInfo *prev,
			   const Migd__MigInfo *now);

/* The result label of a settled @i. */
enum migd_mig_result migd_metrics_mig_result(const Migd__MigInfo *i);

#endif
