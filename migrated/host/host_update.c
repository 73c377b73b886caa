// SPDX-License-Identifier: MIT
/*
 * Local live update, the daemon's side (host_update.h):
 *   1. start a new worker from the migrated-vmm installed now, with a
 *      handover socket (STATE/vms/<wid>.xfer, fd 4) it accepts on;
 *   2. ask the old worker to hand its VM over there (WorkerHandover);
 *   3. once the new worker published the VM (VM_STATE), it is the VM's
 *      worker: the old one is retired (it exits) and the call answers.
 * If the old worker says the new one did not take the guest, it runs on
 * in the old worker and the new one exits by itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_priv.h"
#include "migrated/host/host_update.h"
#include "migrated/rpc/server.h"

#define COMP "migd.update"

struct migd_update {
	struct migd_defer *df;
	struct migd_host *d;
	uint64_t old_wid, new_wid;
	uint64_t start_ns;
	char name[MIGD_NAME_MAX + 1];
	Migd__VmUpdateResult res; /* the old worker's figures */
	bool asking; /* WorkerHandover outstanding: handed() owns @u */
	bool handed;
};

static void finish(struct migd_update *u, struct migd_worker *nw)
{
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__VmInfo info;

	migd__host_info_fill(nw, &info);
	u->res.vm = &info;
	u->res.new_pid = (uint64_t)nw->pid;
	u->res.total_ns = hv_now_ns() - u->start_ns;
	resp.result_case = MIGD__RESPONSE__RESULT_VM_UPDATE;
	resp.vm_update = &u->res;
	hv_info(COMP, "event=vm_updated vm=%s pid=%llu->%llu pause_us=%llu "
		      "total_ms=%.1f",
		u->name, (unsigned long long)u->res.old_pid,
		(unsigned long long)u->res.new_pid,
		(unsigned long long)(u->res.pause_ns / 1000),
		u->res.total_ns / 1e6);
	migd_defer_finish(u->df, &resp);
	nw->update = NULL;
	free(u);
}

/* host_events.c: the new worker published its VM. */
void migd__host_update_ready(struct migd_worker *nw)
{
	struct migd_update *u = nw->update;

	if (!u || !u->handed)
		return;
	/* (name, has_vm, updates: set by handed(), the old one retired) */
	migd__record_write(nw);
	finish(u, nw);
}

/* host.c: the new worker went away before it published the VM. */
void migd__host_update_lost(struct migd_worker *nw)
{
	struct migd_update *u = nw->update;

	if (!u)
		return;
	nw->update = NULL;
	u->new_wid = 0;
	if (u->asking)
		return; /* handed() answers when the old worker does */
	migd_defer_fail(u->df, MIGD__STATUS__STATUS_INTERNAL,
			"the new worker of VM '%s' exited during the update%s",
			u->name, u->handed ? " (after the handover: the guest "
					     "is lost)" : "");
	free(u);
}

static void handed(struct migd_worker *ow, Migd__Response *resp, void *arg)
{
	struct migd_update *u = arg;
	struct migd_worker *nw =
		u->new_wid ? migd_host_find_wid(u->d, u->new_wid) : NULL;

	u->asking = false;
	if (!resp || (resp->error &&
		      resp->error->status != MIGD__STATUS__STATUS_OK) ||
	    resp->result_case != MIGD__RESPONSE__RESULT_VM_UPDATE) {
		if (nw)
			nw->update = NULL; /* it exits by itself */
		if (!resp)
			migd_defer_fail(u->df, MIGD__STATUS__STATUS_UNAVAILABLE,
					"the worker of VM '%s' went away during "
					"the update",
					u->name);
		else
			migd_defer_finish(u->df, resp);
		free(u);
		return;
	}
	u->res.old_pid = resp->vm_update->old_pid;
	u->res.pause_ns = resp->vm_update->pause_ns;
	u->res.save_ns = resp->vm_update->save_ns;
	u->res.restore_ns = resp->vm_update->restore_ns;
	u->handed = true;
	/* The guest runs in the new worker now: the old one exits, and its
	 * exit must not read as a crash, whatever comes first. */
	ow->retired = true;
	if (nw) {
		snprintf(nw->name, sizeof(nw->name), "%s", u->name);
		nw->has_vm = true;
		nw->updates = ow->updates + 1;
	}
	if (!nw) { /* its exit was seen already */
		migd_defer_fail(u->df, MIGD__STATUS__STATUS_INTERNAL,
				"the new worker of VM '%s' exited after the "
				"handover",
				u->name);
		free(u);
		return;
	}
	/* The new worker publishes the VM once it entered it: maybe it
	 * did already (its event came before this answer). */
	if (nw->info && nw->info->name && !strcmp(nw->info->name, u->name))
		migd__host_update_ready(nw);
}

void migd_host_vm_update(struct migd_call *call)
{
	const Migd__VmRef *ref = call->req->vm_update;
	Migd__WorkerHandoverRequest ho = MIGD__WORKER_HANDOVER_REQUEST__INIT;
	Migd__Request req = MIGD__REQUEST__INIT;
	struct migd_worker *ow, *nw;
	struct migd_update *u;
	char err[512];
	int ret;

	ow = ref && ref->name ? migd_host_find(migd_host_of(call), ref->name)
			      : NULL;
	if (!ow || !ow->has_vm) {
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no VM named '%s'", ref && ref->name ? ref->name
								   : "");
		return;
	}
	if (ow->crashed || ow->conn_lost) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' crashed: %s", ow->name, ow->exit_reason);
		return;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return;
	}
	migd__vm_update_result__init(&u->res);
	u->d = migd_host_of(call);
	u->old_wid = ow->wid;
	u->start_ns = hv_now_ns();
	snprintf(u->name, sizeof(u->name), "%s", ow->name);
	ret = migd_worker_spawn(migd_host_of(call), true, &nw, err,
				sizeof(err));
	if (ret) {
		free(u);
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
			       "cannot start a new worker for VM '%s' (%s); it "
			       "keeps running in the old one",
			       ow->name, err);
		return;
	}
	u->new_wid = nw->wid;
	nw->update = u;
	u->df = migd_call_defer(call);
	if (!u->df) {
		nw->update = NULL;
		free(u);
		return;
	}
	ho.path = nw->xfer;
	req.call_case = MIGD__REQUEST__CALL_WORKER_HANDOVER;
	req.worker_handover = &ho;
	ret = migd_worker_call(ow, &req, handed, u);
	u->asking = !ret;
	if (ret) {
		nw->update = NULL;
		migd_defer_fail(u->df, MIGD__STATUS__STATUS_UNAVAILABLE,
				"cannot reach the worker of VM '%s'", u->name);
		free(u);
	}
}
