/* SPDX-License-Identifier: MIT */
/*
 * struct migd_host: the host daemon, migrated (docs/processes.md) -- its
 * libuv loop, configuration, control server, metrics, its workers (host.h)
 * and fleet membership (host_fleet.h). No VM and no migration engine run
 * in this process: each VM has its worker, migrated-vmm, whose struct is
 * struct migd_vmm (migrated/vmm/vmm.h). main.c parses options into a
 * struct migd_cfg (migrated/common/cfg.h) and calls migd_run().
 *
 * Start-up order (undone in reverse by shutdown): state directory (0700),
 * default accelerator, TLS material, control socket (0600), the workers
 * (re-adopted), the TCP listener, metrics, the fleet, signal handlers.
 * Shutdown (SIGTERM/SIGINT, or a fatal loop error): leave the fleet, close
 * the workers' connections (they and their VMs keep running, unless
 * --stop-vms), stop the control server (socket removed), close every
 * handle, and return from the loop. SIGHUP: migd_reload() (reload.h). The
 * service manager hears READY=1 after start-up and STOPPING=1 at shutdown
 * (notify.h).
 *
 * Threads: everything here runs on the loop thread; a host drain has its
 * own thread (host_drain.h).
 */
#ifndef MIGD_DAEMON_H
#define MIGD_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hvcore/accel.h"
#include "migrated/common/cfg.h"
#include "migrated/common/proc.h"
#include "migrated/host/metrics.h"
#include "migrated/rpc/server.h"

struct migd_metrics;
struct migd_supervisor;
struct migd_hfleet;

struct migd_host {
	/* immutable after start-up, but for what migd_reload() changes on
	 * the loop thread: cfg's live options and tls_ready (reload.h) */
	uv_loop_t *loop;
	struct migd_cfg cfg;
	enum hv_accel_kind accel; /* resolved default */
	bool tls_ready;		  /* TLS files present */
	char tls_ca[MIGD_TLS_PATH];
	char tls_cert[MIGD_TLS_PATH];
	char tls_key[MIGD_TLS_PATH];
	uint64_t start_ns;

	/* loop thread */
	struct migd_server srv;
	struct migd_metrics *metrics;
	uint64_t vms_created;				 /* for metrics */
	/* for metrics: snapshots (host_snap.c) and restores, by result;
	 * the bytes, pauses and durations of those that succeeded */
	uint64_t snaps_ok, snaps_failed, restores_ok, restores_failed;
	uint64_t snap_bytes, snap_pause_ns, snap_duration_ns;
	uint64_t mig_errors;				 /* for metrics */
	uint64_t mig_unresolved, mig_verify_failures;	 /* for metrics */
	struct migd_mig_totals mig_totals;		 /* for metrics */
	uint64_t next_mig_id;
	uv_signal_t sig_term, sig_int;
	uv_signal_t sig_hup; /* migd_reload() */
	bool stopping;
	int exit_code;

	/* the workers, their VMs' names, the migration history (host.h) */
	struct migd_supervisor *sup;
	struct migd_hfleet *fleet; /* host_fleet.h; NULL = standalone */
};

/* The struct migd_host that serves @call: the owner of its server. */
static inline struct migd_host *migd_host_of(const struct migd_call *call)
{
	return call->owner;
}

/* Ping and capabilities of the host (migrated/common/calls.h, given what
 * this process is): host_calls.c's table. */
void migd_host_call_ping(struct migd_call *call);
void migd_host_call_capabilities(struct migd_call *call);

/*
 * Run a daemon with @cfg until a signal stops it. Returns the process exit
 * code: 0 after a clean shutdown, 1 when start-up failed (logged).
 */
int migd_run(const struct migd_cfg *cfg);

/* Begin a clean shutdown (idempotent); migd_run() returns afterwards. */
void migd_shutdown(struct migd_host *d);

#endif
