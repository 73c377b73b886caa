/* SPDX-License-Identifier: MIT */
/*
 * migd_metrics: Prometheus text exposition (format 0.0.4) over a minimal
 * HTTP/1.1 server on the daemon's loop: GET /metrics answers the daemon's
 * state, anything else 404 (other paths) or 405 (other methods); every
 * response closes the connection. A request head is at most 8 KiB and
 * must arrive within 5 s; at most 64 scrapers at once.
 *
 * Families (docs/api.md, "Metrics"): VM counts by state; per-VM dirty
 * rates, working sets and per-vCPU rates of the 1 s/10 s/60 s windows;
 * the worker processes (count, crashes, adoptions, spawns, which worker
 * runs which VM); per-migration phase, progress, bytes, downtime; totals
 * of RPC requests, refused TLS handshakes and failed migrations.
 *
 * In the daemon (host role) VMs and migrations are what it keeps of its
 * workers (host.h): each worker's last VmInfo and DirtyRateSample, the
 * migration records' last MigInfo; a scrape asks no worker.
 *
 * Threads: loop thread.
 */
#ifndef MIGD_METRICS_H
#define MIGD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/control.pb-c.h"

struct migd;
struct migd_metrics;

/* Listen on @host:@port (0: any; the bound port is in *@port_out).
 * 0, -EINVAL, or a libuv error. */
int migd_metrics_start(struct migd *d, const char *host, uint16_t port,
		       uint16_t *port_out, struct migd_metrics **out);
/* Close the listener and every scrape in flight. stop(NULL) no-op. */
void migd_metrics_stop(struct migd_metrics *m);

/* Render the exposition into a malloc'd, NUL-terminated buffer (*@out,
 * length *@len). 0 or -ENOMEM. For the server and tests. */
int migd_metrics_render(struct migd *d, char **out, size_t *len);

/*
 * Count an outgoing migration's outcome into the daemon's totals
 * (d->mig_errors, d->mig_unresolved, d->mig_verify_failures) as its
 * record goes from @prev (NULL: first seen) to @now: UNRESOLVED when it
 * enters it; once settled (finished, not UNRESOLVED), FAILED, or
 * COMPLETED with an error or a verification failure, as an error (the
 * latter also as a verification failure); CANCELLED is no error.
 * Incoming migrations count nothing. Reads only direction, finished and
 * progress phase, error and verify_failed. For the host: call it with
 * every MigInfo a worker reports (and a crash that fails a record),
 * before the record takes it; not with what re-adoption finds (an
 * earlier daemon counted that).
 */
void migd_metrics_mig_seen(struct migd *d, const Migd__MigInfo *prev,
			   const Migd__MigInfo *now);

#endif
