/* SPDX-License-Identifier: MIT */
/*
 * migd_host: the daemon's side of the process model. Every VM runs in its
 * own worker process (migrated-vmm, migrated/vmm/); the daemon keeps what
 * is host-wide: the control RPC, the names of the VMs, the migration
 * history, events and metrics, and the supervision of its workers.
 *
 * A worker serves the control protocol (proto/control.proto) on its own
 * Unix socket STATE/vms/<wid>.sock, to its daemon only. The daemon binds
 * that socket itself and hands the listening fd to the worker at spawn
 * (fd 3), so it can connect at once, without polling for readiness. Calls
 * about one VM are forwarded to its worker and answered when the worker
 * answers (migd_call_defer, server.h); the daemon subscribes to every
 * event of every worker and publishes them again to its own subscribers,
 * keeping the last VmInfo and MigInfo it saw (vm list, migration status
 * and the history of migrations whose worker is gone).
 *
 * Workers outlive the daemon: they run in their own session (setsid) with
 * no parent-death signal. A record per worker, STATE/vms/<wid>.rec (text:
 * wid, pid, the process start time from /proc/<pid>/stat, socket, VM
 * name), lets a restarted daemon re-adopt them: a record whose pid is
 * alive with the same start time is a worker (a recycled pid is not), and
 * the daemon connects to its socket and asks it for its VM and
 * migrations (WorkerInfo). A worker whose daemon is gone keeps its guest
 * running, cancels a migration that has not reached its commit point
 * (the VM stays on the source; an incoming one is discarded, its outcome
 * left in STATE/vms/<wid>.outcome for the next daemon) and waits.
 *
 * A worker that dies while it runs a VM is reported: the VM's state
 * becomes CRASHED with the signal or exit status (known when the daemon
 * spawned it; an adopted worker is not our child: "exited while
 * adopted"), a VM_STATE event and a metric; it is not restarted. Only
 * vm_destroy removes the entry.
 *
 * Threads: loop thread only.
 */
#ifndef MIGD_HOST_H
#define MIGD_HOST_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "migrated/rpc/ctl_frame.h"
#include "migrated/rpc/parse.h"
#include "proto/control.pb-c.h"

struct migd_host;
struct migd_call;
struct migd_worker;
struct migd_update;

/* A response of a worker, or NULL when the worker went away first. */
typedef void (*migd_wcall_cb)(struct migd_worker *w, Migd__Response *resp,
			      void *arg);

struct migd_wreq {
	struct migd_wreq *next;
	uint64_t id;
	migd_wcall_cb cb;
	void *arg;
};

struct migd_worker {
	struct migd_worker *next;
	struct migd_host *d;
	uint64_t wid;
	int pid;
	uint64_t start_time; /* /proc/<pid>/stat field 22 */
	char sock[108];
	char rec[PATH_MAX];
	/* The VM's name: reserved from vm_create / mig_incoming --name / a
	 * worker_name claim on; "" while an incoming one has none yet. */
	char name[MIGD_NAME_MAX + 1];
	bool has_vm;	   /* it runs (or ran) a VM */
	bool vm_gone;	   /* the worker said the VM was destroyed/left */
	bool retired;	   /* handed its VM to another worker */
	bool crashed;
	bool fence_noted;  /* host_fleet.c: seen MIGRATING while fenced */
	char exit_reason[128];
	Migd__VmInfo *info; /* last VmInfo seen (unpacked copy) or NULL */
	Migd__DirtyRateSample *dr; /* last DIRTY_RATE event (copy) or NULL */
	uint32_t updates;
	/* a new worker in a local live update (host_update.c) */
	struct migd_update *update;
	char xfer[108]; /* its handover socket */

	/* process: a child when we spawned it */
	bool child;
	uv_process_t proc;
	bool proc_open, exited;
	int64_t exit_status;
	int term_signal;

	/* connection */
	uv_pipe_t pipe;
	uv_connect_t connect_req;
	bool pipe_open, connected, conn_lost;
	struct migd_framer framer;
	struct migd_wreq *reqs, **reqs_tail;
	uint64_t next_req;
	unsigned handles; /* open uv handles; freed at 0 once unlinked */
	bool unlinked;
};

/* A migration as the daemon keeps it. */
struct migd_hmig {
	struct migd_hmig *next;
	uint64_t id;
	uint64_t wid;
	Migd__MigInfo *info; /* last seen (unpacked copy) */
	bool finished;
};

struct migd_supervisor {
	struct migd_worker *workers;
	unsigned nr_workers;
	uint64_t next_wid;
	struct migd_hmig *migs; /* newest first */
	char vms_dir[PATH_MAX];
	char vmm_path[PATH_MAX];
	uint64_t crashes, adopted, spawned; /* metrics */
	unsigned adopt_pending;
	uint64_t adopt_start_ns, adopt_done_ns;
	/* --stop-vms at shutdown */
	unsigned stop_left;
	bool vms_stopped, stop_timer_on;
	uv_timer_t stop_timer;
};

/* Start-up: the worker binary, STATE/vms, and re-adoption of every worker
 * of an earlier daemon (connections complete asynchronously). 0 or a
 * negative errno (logged). */
int migd_host_init(struct migd_host *d);
/* --stop-vms: ask every worker to destroy its VM; migd_shutdown() runs
 * again once all answered (or after 10 s). False when there is nothing
 * to wait for. */
bool migd_host_stop_vms(struct migd_host *d);
/* Shutdown: close every worker connection; the workers keep running. */
void migd_host_fini(struct migd_host *d);

/* Spawn a worker; it is connected (requests queue until then). */
/* @takeover: it receives a VM from another worker at w->xfer. */
int migd_worker_spawn(struct migd_host *d, bool takeover,
		      struct migd_worker **out, char *err, size_t err_size);
/* Send @req (its id replaced) to @w; @cb runs on the answer. 0, or
 * -EPIPE when the worker is gone (@cb not called). */
int migd_worker_call(struct migd_worker *w, Migd__Request *req,
		     migd_wcall_cb cb, void *arg);

struct migd_worker *migd_host_find(struct migd_host *d, const char *name);
struct migd_worker *migd_host_find_wid(struct migd_host *d, uint64_t wid);
/* A name is taken by a VM, a crashed VM or a reservation. */
bool migd_host_name_taken(struct migd_host *d, const char *name);
/* Remove a finished entry (crashed, or never got a VM). */
void migd_host_remove(struct migd_worker *w);

/* Migration records. */
struct migd_hmig *migd_hmig_find(struct migd_host *d, uint64_t id,
				 const char *vm);
struct migd_hmig *migd_hmig_add(struct migd_host *d, uint64_t id, uint64_t wid,
				const Migd__MigInfo *info);
uint64_t migd_host_next_mig_id(struct migd_host *d);

/* The host role's call dispatch (server.h, migd_server.host). */
const char *migd_host_dispatch(unsigned call_case, struct migd_call *call);

/* Copy a message by packing and unpacking it; NULL on OOM. */
void *migd_msg_dup(const ProtobufCMessage *m,
		   const ProtobufCMessageDescriptor *desc);

#endif
