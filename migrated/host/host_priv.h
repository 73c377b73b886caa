/* SPDX-License-Identifier: MIT */
/*
 * What host.c (workers), host_adopt.c (start-up, re-adoption, shutdown),
 * host_events.c (events and migration records) and host_calls.c (calls)
 * share. Not a contract for other files: migd__ prefix. Loop thread.
 */
#ifndef MIGD_HOST_PRIV_H
#define MIGD_HOST_PRIV_H

#include "migrated/host/host.h"

struct migd_worker *migd__worker_new(struct migd_host *d, uint64_t wid);
int migd__worker_connect(struct migd_worker *w);
/* Forget @w (daemon shutdown): its record stays, it keeps running. */
void migd__worker_detach(struct migd_worker *w);
int migd__record_write(struct migd_worker *w);
int migd__proc_start_time(int pid, uint64_t *out);

/* An event from @w: update what the daemon keeps, publish it again. */
void migd__host_event(struct migd_worker *w, const Migd__Event *ev);
/* @w's VM crashed: publish VM_STATE (CRASHED). */
void migd__host_vm_crashed(struct migd_worker *w);
/* Take @info as @w's VM (name, state), publishing nothing. */
void migd__host_set_info(struct migd_worker *w, const Migd__VmInfo *info);
/* A VmInfo for an entry whose worker cannot answer (crashed). */
void migd__host_info_fill(struct migd_worker *w, Migd__VmInfo *out);

/* host_calls.c: send the call to the worker of VM @name (failing @call
 * when there is none) and answer when it answers; @post (may be NULL)
 * sees the worker's response first (never a NULL one). */
struct fwd;
typedef void (*migd__host_post_fn)(struct migd_worker *w,
				   Migd__Response *resp, struct fwd *f);
void migd__host_forward_vm(struct migd_call *call, const char *name,
			   migd__host_post_fn post);
/* host_calls.c: a new worker for a new VM @name (a valid name: checked by
 * the caller) gets the call, as vm_create: refused on a draining host or
 * when the name is taken here or in the fleet; a failure in the worker
 * frees the name again (the worker exits). @restore: counted as a
 * restore (metrics). */
void migd__host_new_vm(struct migd_call *call, const char *name,
		       bool restore);
/* host_snap.c: vm_snapshot and vm_restore (docs/snapshots.md). */
void migd__host_vm_snapshot(struct migd_call *call);
void migd__host_vm_restore(struct migd_call *call);

/* host_update.c: the new worker of an update published its VM / left. */
void migd__host_update_ready(struct migd_worker *nw);
void migd__host_update_lost(struct migd_worker *nw);

#endif
