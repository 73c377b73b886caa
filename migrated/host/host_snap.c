// SPDX-License-Identifier: MIT
/*
 * Snapshots in the host role (host_priv.h, docs/snapshots.md): a snapshot
 * goes to the VM's worker, whose engine writes the files; a restore goes
 * to a new worker that makes the VM from them, as vm_create's worker makes
 * one from its options (the name claimed first, freed again when the
 * worker fails). Nothing of the files is read here: the daemon links no
 * engine (docs/processes.md).
 */
#include "hvcore/log.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_fleet.h"
#include "migrated/host/host_priv.h"
#include "migrated/rpc/server.h"

/* The paths are the daemon's host's: a relative one would be the
 * worker's working directory, which no client knows. */
static bool refuse_relative(struct migd_call *call, const char *dir)
{
	if (dir && dir[0] == '/')
		return false;
	migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
		       "snapshot directory '%s' is not an absolute path (it "
		       "is on the daemon's host)",
		       dir ? dir : "");
	return true;
}

/* A snapshot with stop ended the VM: as after vm destroy. */
static void snapshotted(struct migd_worker *w, Migd__Response *resp,
			struct fwd *f)
{
	const Migd__VmSnapshotResult *r = resp->vm_snapshot;
	struct migd_host *d = w->d;

	if ((resp->error && resp->error->status != MIGD__STATUS__STATUS_OK) ||
	    resp->result_case != MIGD__RESPONSE__RESULT_VM_SNAPSHOT) {
		d->snaps_failed++;
		return;
	}
	d->snaps_ok++;
	d->snap_bytes += r->bytes_written;
	d->snap_pause_ns += r->pause_ns;
	d->snap_duration_ns += r->duration_ns;
	if (!r->vm || r->vm->state != MIGD__VM_STATE__VM_STATE_STOPPED)
		return;
	w->vm_gone = true; /* it exits now */
	migd_host_fleet_release(w->d, w->name);
}

void migd__host_vm_snapshot(struct migd_call *call)
{
	const Migd__VmSnapshotRequest *r = call->req->vm_snapshot;

	if (refuse_relative(call, r->dir))
		return;
	migd__host_forward_vm(call, r->name, snapshotted);
}

void migd__host_vm_restore(struct migd_call *call)
{
	const Migd__VmRestoreRequest *r = call->req->vm_restore;

	if (!r->name || !migd_name_valid(r->name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "invalid VM name '%s' ([A-Za-z0-9._-], 1..%d)",
			       r->name ? r->name : "", MIGD_NAME_MAX);
		return;
	}
	if (refuse_relative(call, r->dir))
		return;
	migd__host_new_vm(call, r->name, true);
}
