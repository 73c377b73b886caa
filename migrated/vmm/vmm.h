/* SPDX-License-Identifier: MIT */
/*
 * struct migd_vmm: one worker process, migrated-vmm, and its one VM
 * (docs/processes.md) -- its libuv loop, options, VM registry, control
 * server (served to its daemon only), migrations, dirty-rate events,
 * fleet keys, and what worker.h does when its daemon is gone or it has
 * nothing left to do. The host daemon's struct is struct migd_host
 * (migrated/host/daemon.h); what both share is in migrated/common.
 *
 * Start-up (vmm.c, migd_vmm_run()): state directory, TLS file names, VM
 * registry, the control server on the socket its daemon bound (fd 3), the
 * fleet's ownership keys, the dirty-rate events, SIGTERM. Shutdown: its
 * migrations first, then its VM (vmm.c); an idle worker ends through
 * worker.c instead.
 *
 * Threads: everything here runs on the loop thread. The other threads are
 * vCPU threads (hvcore) and, per migration, the engine's thread and a
 * waiter thread (migration.h), which reach the loop through uv_async_send
 * only.
 */
#ifndef MIGD_VMM_VMM_H
#define MIGD_VMM_VMM_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hvcore/accel.h"
#include "migrated/common/cfg.h"
#include "migrated/common/proc.h"
#include "migrated/rpc/server.h"
#include "migrated/vmm/registry.h"

struct migd_mig;
struct migd_fleet;
struct migd_handover_in;

struct migd_vmm {
	/* immutable after start-up */
	uv_loop_t *loop;
	struct migd_cfg cfg;	  /* from its daemon's options (main.c) */
	enum hv_accel_kind accel; /* its daemon resolved it */
	bool tls_ready;		  /* TLS files present */
	char tls_ca[MIGD_TLS_PATH];
	char tls_cert[MIGD_TLS_PATH];
	char tls_key[MIGD_TLS_PATH];
	uint64_t start_ns;

	/* loop thread */
	struct migd_registry reg;
	struct migd_server srv;
	uv_timer_t dirty_timer; /* publishes DIRTY_RATE events */
	bool dirty_timer_on;
	struct migd_mig *migs; /* newest first */
	uint64_t next_mig_id;
	uv_signal_t sig_term, sig_int, sig_hup;
	bool stopping;
	int exit_code;
	/* The ownership keys its migrations commit with (migration.c);
	 * NULL = standalone. */
	struct migd_fleet *fleet_keys;
	/* worker.h */
	bool orphaned;	   /* its daemon is gone (no connection) */
	bool was_orphaned; /* ... since the last WorkerInfo */
	bool had_work;	   /* it was given a VM or a migration */
	struct migd_handover_in *takeover; /* update.c */
	bool takeover_started;
};

/* The struct migd_vmm that serves @call: the owner of its server. */
static inline struct migd_vmm *migd_vmm_of(const struct migd_call *call)
{
	return call->owner;
}

/* This process's worker id: VmInfo.worker_id (vm_info.c). */
extern uint64_t migd_self_worker_id;

/* Ping and capabilities of the worker (migrated/common/calls.h, given
 * what this process is): calls.c's table. */
void migd_vmm_call_ping(struct migd_call *call);
void migd_vmm_call_capabilities(struct migd_call *call);

/*
 * Run the worker of @cfg (vmm.c) until SIGTERM or until it is idle.
 * Returns the process exit code: 0, or 1 when start-up failed (logged).
 */
int migd_vmm_run(const struct migd_cfg *cfg);

#endif
