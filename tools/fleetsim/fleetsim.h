/* SPDX-License-Identifier: MIT */
/*
 * fleet-sim: a fleet of simulated hosts against a real etcd, to measure
 * what the ownership keys cost at scale (docs/benchmarks.md, "Fleet at
 * scale"). The hosts, their leases and the ownership keys are the
 * daemon's own code (migrated/fleet/fleet.c); this program only drives
 * them and watches the keys. tools/bench/fleet-sim.sh runs it against a
 * local 3-member etcd.
 *
 * Threads: the setup and client threads call the fleet objects (each
 * serialises its own etcd calls); the watcher threads read the shared
 * send times and add to the histograms, both atomics.
 */
#ifndef FLEETSIM_H
#define FLEETSIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A latency histogram: 1 us resolution below 64 us, then 32 buckets per
 * power of two (3 % precision), up to 2^40 us. Any thread may add. */
#define FS_HIST_N (64u + 35u * 32u)

struct fs_hist {
	_Atomic uint64_t b[FS_HIST_N];
	_Atomic uint64_t n;
};

void fs_hist_add(struct fs_hist *h, uint64_t ns);
/* The @p quantile (0..1) in ms; 0 when empty. */
double fs_hist_ms(struct fs_hist *h, double p);

uint64_t fs_now_ns(void);

/* What the watchers share with the clients. */
struct fs_shared {
	const char *prefix; /* the fleet's key prefix, e.g. "/migrated/" */
	unsigned nvms;
	/* When the commit that made (vm, generation) was sent, at
	 * [vm * 4 + (generation & 3)]: the watchers' latency origin. */
	_Atomic uint64_t *sent_ns;
	/* The rate step being measured; watchers add to its slots. */
	_Atomic unsigned step;
	struct fs_hist *watch_hist; /* [steps] */
	_Atomic uint64_t *watch_events; /* [steps] */
	_Atomic bool stop;
};

struct fs_watcher;

/*
 * Start a watcher of every key under @shared->prefix + "vms/" on the
 * member at @url (etcd's gateway: POST /v3/watch, a stream of JSON
 * objects). NULL on failure (message on stderr). It runs until
 * shared->stop; fs_watch_ready() says etcd confirmed the watch.
 */
struct fs_watcher *fs_watch_start(const char *url, struct fs_shared *shared);
bool fs_watch_ready(struct fs_watcher *w);
/* Join (after shared->stop) and free. */
void fs_watch_stop(struct fs_watcher *w);

/* The largest backend DB size (bytes) the members of @endpoints
 * (comma-separated URLs) report; -1 if none answered. */
int64_t fs_db_size(const char *endpoints);

#endif
