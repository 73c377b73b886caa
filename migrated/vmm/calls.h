/* SPDX-License-Identifier: MIT */
/*
 * The worker's control RPC handlers, one per Request.call case (the
 * dispatch table is in calls.c; the calls the host answers too are in
 * migrated/common/calls.h): VM calls in calls_vm.c, migration and subscription
 * calls in calls_mig.c, dirty-rate calls in calls_dirty.c. Each runs on the
 * loop thread, fills call->resp or fails the call (server.h).
 */
#ifndef MIGD_CALLS_H
#define MIGD_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "hvcore/accel.h"

#include "migrated/common/calls.h"
#include "migrated/vmm/registry.h"
#include "migrated/rpc/server.h"

struct migd_vmm;

/* Run call @call_case (struct migd_server_ops.dispatch): its handler, or
 * UNIMPLEMENTED for a call the worker does not serve. Its name for logs. */
const char *migd_vmm_dispatch(unsigned call_case, struct migd_call *call);

void migd_call_vm_create(struct migd_call *call);
void migd_call_vm_list(struct migd_call *call);
void migd_call_vm_inspect(struct migd_call *call);
void migd_call_vm_pause(struct migd_call *call);
void migd_call_vm_resume(struct migd_call *call);
void migd_call_vm_destroy(struct migd_call *call);

void migd_call_mig_incoming(struct migd_call *call);
void migd_call_mig_start(struct migd_call *call);
void migd_call_mig_status(struct migd_call *call);
void migd_call_mig_watch(struct migd_call *call);
void migd_call_mig_cancel(struct migd_call *call);
void migd_call_mig_postcopy(struct migd_call *call);
void migd_call_mig_switchover(struct migd_call *call);
void migd_call_mig_recover(struct migd_call *call);
void migd_call_mig_tune(struct migd_call *call);
void migd_call_mig_resolve(struct migd_call *call);
void migd_call_dirty_rate(struct migd_call *call);
void migd_call_converge_estimate(struct migd_call *call);
void migd_call_vm_set_workload(struct migd_call *call);

/* vm_devices.c (the worker): the devices of @vm into an inspect result
 * and its Boot, allocated in @call. */
struct hv_vm;
void migd_devices_inspect(struct migd_call *call, struct hv_vm *vm,
			  Migd__Boot *boot, Migd__VmInspectResult *r);

/* calls_console.c: a Linux guest's console, read and typed into. */
void migd_call_vm_console(struct migd_call *call);
/* calls_vm.c: the VM @name of the worker's registry, or NULL with @call
 * failed (INVALID_ARGUMENT without a name, NOT_FOUND). */
struct migd_vm *migd_call_find_vm(struct migd_call *call, const char *name);
void migd_call_vm_console_write(struct migd_call *call);
/* calls_vm.c: where a Linux guest's console output is kept,
 * STATE/vms/NAME.console (rotated to NAME.console.1). */
void migd_console_log_path(struct migd_vmm *d, const char *name, char *buf,
			   size_t size);
/* calls_check.c: the page-stamp oracle over one VM. */
void migd_call_vm_check(struct migd_call *call);
/* calls_snap.c: snapshot the worker's VM into a directory; make the
 * worker's VM from one (docs/snapshots.md). */
void migd_call_vm_snapshot(struct migd_call *call);
void migd_call_vm_restore(struct migd_call *call);

#endif
