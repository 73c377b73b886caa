// SPDX-License-Identifier: MIT
/*
 * Snapshots in the worker (calls.h, docs/snapshots.md): vm_snapshot writes
 * the worker's VM into a directory (migrated/mig/snap_save.h), vm_restore
 * makes this worker's VM from one (snap_load.h). Loop thread.
 *
 * A Linux guest's snapshot holds its boot configuration and devices (the
 * layout and the VM state, as a migration carries them); its disks are
 * flushed by the pause before the last pass (hv_vm_pause()), and are not
 * copied. Restore makes the devices again, opens the boot files and
 * disks at their paths (refused while another process writes a disk:
 * snap_disks.h) and loads the devices' state; the kernel is not loaded
 * again (docs/snapshots.md).
 *
 * Both run on the loop thread and block it for their duration (a 64 MiB
 * VM: tens of milliseconds; a GiB: seconds): the worker has one VM, and
 * what it would otherwise answer meanwhile (inspect, check, its dirty
 * samples) waits. The dirty-rate monitor is stopped for a snapshot (one
 * harvester at a time, monitor.h) and started again after it.
 *
 * A restore that fails leaves nothing: the VM it made is destroyed, the
 * worker has no VM and exits, and the daemon frees the name
 * (host_calls.c), as for a failed vm create.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/mig/snap_load.h"
#include "migrated/mig/snap_save.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/vm_info.h"
#include "migrated/vmm/vmm.h"

#define COMP "migd.snap"

/* Test hook (the integration test's deliberate break): the last pass is
 * left out, so the snapshot misses what the guest wrote in the end. */
#define SKIP_LAST_PASS_ENV "MIGRATED_TEST_SNAP_SKIP_LAST_PASS"

/* A failed restore's console log (and its rotated one): nothing stays. */
static void console_log_remove(const char *path)
{
	char old[HV_BOOT_PATH_MAX + 2];

	if (!path[0])
		return;
	unlink(path);
	snprintf(old, sizeof(old), "%s.1", path);
	unlink(old);
}

static Migd__Status status_of(int err)
{
	switch (err) {
	case -ENOENT:
		return MIGD__STATUS__STATUS_NOT_FOUND;
	case -EINVAL:
	case -EBADMSG:
	case -EPROTO:
	case -EPROTONOSUPPORT:
		return MIGD__STATUS__STATUS_INVALID_ARGUMENT;
	default:
		return migd_status_from_errno(err);
	}
}

void migd_call_vm_snapshot(struct migd_call *call)
{
	const Migd__VmSnapshotRequest *r = call->req->vm_snapshot;
	struct migd_vmm *d = migd_vmm_of(call);
	struct mig_snap_opts opts = { 0 };
	struct mig_snap_stats st;
	Migd__VmSnapshotResult *res;
	Migd__VmState old;
	struct migd_vm *v;
	char why[512] = "";
	int ret;

	v = migd_call_find_vm(call, r->name);
	if (!v)
		return;
	if (!r->dir || r->dir[0] != '/') {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "snapshot directory '%s' is not an absolute "
			       "path",
			       r->dir ? r->dir : "");
		return;
	}
	if (r->pause && r->stop) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "pause and stop exclude each other");
		return;
	}
	if (v->mig_id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is being migrated (migration %llu): "
			       "snapshot it before or after",
			       v->name, (unsigned long long)v->mig_id);
		return;
	}
	old = migd_vm_api_state(v);
	if (old != MIGD__VM_STATE__VM_STATE_RUNNING &&
	    old != MIGD__VM_STATE__VM_STATE_PAUSED &&
	    old != MIGD__VM_STATE__VM_STATE_CREATED) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' is stopped: nothing to snapshot",
			       v->name);
		return;
	}
	opts.leave_paused = r->pause || r->stop;
	opts.skip_last_pass = getenv(SKIP_LAST_PASS_ENV) != NULL;
	migd_monitor_detach(v);
	ret = mig_snap_save(v->vm, v->name, r->dir, &opts, &st, why,
			    sizeof(why));
	if (ret) {
		hv_warn(COMP, "event=snapshot_failed vm=%s dir=%s err=%d",
			v->name, r->dir, ret);
		migd_monitor_attach(d, v);
		migd_call_fail(call, status_of(ret),
			       "snapshot of VM '%s' into %s failed: %s "
			       "(the previous snapshot there, if any, is "
			       "intact)",
			       v->name, r->dir, why);
		return;
	}
	hv_info(COMP,
		"event=snapshot_done vm=%s dir=%s live=%d passes=%u "
		"pages=%llu last_pass=%llu bytes=%llu file_bytes=%llu "
		"pause_ms=%.3f ms=%.1f",
		v->name, r->dir, st.live, st.passes,
		(unsigned long long)st.pages_written,
		(unsigned long long)st.last_pass_pages,
		(unsigned long long)st.bytes_written,
		(unsigned long long)st.file_bytes, (double)st.pause_ns / 1e6,
		(double)st.duration_ns / 1e6);
	res = migd_call_alloc(call, sizeof(*res));
	if (!res)
		return;
	migd__vm_snapshot_result__init(res);
	res->dir = migd_call_strdup(call, r->dir);
	res->live = st.live;
	res->passes = st.passes;
	res->pages_written = st.pages_written;
	res->last_pass_pages = st.last_pass_pages;
	res->bytes_written = st.bytes_written;
	res->file_bytes = st.file_bytes;
	res->state_bytes = st.state_bytes;
	res->pause_ns = st.pause_ns;
	res->duration_ns = st.duration_ns;
	if (r->stop) {
		Migd__VmState was = migd_vm_api_state(v);

		res->vm = migd_vm_info_new(call, v);
		if (!res->vm)
			return;
		res->vm->name = migd_call_strdup(call, v->name);
		res->vm->state = MIGD__VM_STATE__VM_STATE_STOPPED;
		migd_publish_vm_state(d, v, was, true);
		migd_registry_remove(&d->reg, v);
	} else {
		res->vm = migd_vm_info_new(call, v);
		if (!res->vm)
			return;
		if (migd_vm_api_state(v) != old)
			migd_publish_vm_state(d, v, old, false);
		migd_monitor_attach(d, v);
	}
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM_SNAPSHOT;
	call->resp->vm_snapshot = res;
}

void migd_call_vm_restore(struct migd_call *call)
{
	const Migd__VmRestoreRequest *r = call->req->vm_restore;
	struct migd_vmm *d = migd_vmm_of(call);
	struct mig_snap_load_stats st;
	struct hv_vm_cfg base;
	struct migd_wl wl;
	struct migd_vm *v;
	struct hv_vm *vm;
	char why[512] = "";
	int ret;

	if (!r->name || !*r->name || !r->dir || r->dir[0] != '/') {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "restore needs a VM name and an absolute "
			       "snapshot directory");
		return;
	}
	if (d->reg.count || d->migs) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this worker runs a VM already");
		return;
	}
	if (migd_registry_taken(&d->reg, r->name)) {
		migd_call_fail(call, MIGD__STATUS__STATUS_ALREADY_EXISTS,
			       "a VM named '%s' exists", r->name);
		return;
	}
	/* The snapshot's accelerator (HV_ACCEL_INVALID: as the layout
	 * says); this daemon's memory backing. */
	hv_vm_cfg_init(&base, d->accel, HV_VM_MIN_MEM, 1);
	base.accel = HV_ACCEL_INVALID;
	base.backing = d->cfg.backing ? d->cfg.backing : MIGD_BACKING_DEFAULT;
	/* A Linux guest's console log, if the snapshot holds one. */
	migd_console_log_path(d, r->name, base.boot.console_log,
			      sizeof(base.boot.console_log));
	ret = mig_snap_load(r->dir, r->name, &base, &vm, &st, why,
			    sizeof(why));
	if (ret) {
		console_log_remove(base.boot.console_log);
		hv_warn(COMP, "event=restore_failed vm=%s dir=%s err=%d",
			r->name, r->dir, ret);
		migd_call_fail(call, status_of(ret),
			       "restoring VM '%s' from %s refused: %s; nothing "
			       "was created",
			       r->name, r->dir, why);
		return;
	}
	memset(&wl, 0, sizeof(wl));
	if (!hv_vm_is_linux(vm))
		migd_wl_from_guest(vm, &wl, r->name);
	if (!r->paused) {
		ret = hv_vm_start(vm);
		if (ret) {
			hv_vm_destroy(vm);
			console_log_remove(base.boot.console_log);
			migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
				       "starting restored VM '%s' failed: %s; "
				       "nothing was created",
				       r->name, strerror(-ret));
			return;
		}
	}
	ret = migd_registry_add(&d->reg, r->name, vm, &wl, false, &v);
	if (ret) {
		hv_vm_destroy(vm);
		console_log_remove(base.boot.console_log);
		migd_call_fail(call, migd_status_from_errno(ret),
			       "registering VM '%s' failed: %s", r->name,
			       strerror(-ret));
		return;
	}
	hv_info(COMP,
		"event=vm_restored vm=%s dir=%s origin=%s accel=%s mem=%llu "
		"vcpus=%u read=%llu ms=%.1f started=%d",
		v->name, r->dir, st.origin,
		hv_accel_kind_name(vm->cfg.accel),
		(unsigned long long)vm->cfg.mem_bytes, vm->cfg.nr_vcpus,
		(unsigned long long)st.bytes_read,
		(double)st.duration_ns / 1e6, !r->paused);
	call->resp->result_case = MIGD__RESPONSE__RESULT_VM;
	call->resp->vm = migd_vm_info_new(call, v);
	migd_monitor_attach(d, v);
	migd_publish_vm_state(d, v, MIGD__VM_STATE__VM_STATE_INVALID, false);
}
