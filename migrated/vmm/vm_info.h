/* SPDX-License-Identifier: MIT */
/*
 * What the worker says of one VM (struct migd_vm, registry.h): its VmInfo
 * for the calls that answer with one, and the VM_STATE event published to
 * subscribers when its state changes. Loop thread.
 */
#ifndef MIGD_VMM_VM_INFO_H
#define MIGD_VMM_VM_INFO_H

#include <stdbool.h>

#include "migrated/rpc/server.h"
#include "migrated/vmm/registry.h"
#include "proto/control.pb-c.h"

struct migd_vmm;

/* A VmInfo of @v in @call's arena (NULL: call failed). */
Migd__VmInfo *migd_vm_info_new(struct migd_call *call, struct migd_vm *v);
/* Fill @info (strings point into @v: use before @v changes). */
void migd_vm_info_fill(Migd__VmInfo *info, struct migd_vm *v);

/* Why @v's guest stopped on its own (VmInfo.stop_reason): "poweroff",
 * "reboot", "panic", "error", or "" while it runs or when its owner
 * stopped it. A static string. */
const char *migd_vm_stop_reason(struct migd_vm *v);

/*
 * A Linux guest's device state does not move yet (docs/guests.md): an
 * operation that would carry the VM elsewhere fails @call FAILED_PRECONDITION,
 * saying the VM keeps running here, and returns true. False for the workload
 * guest. @what: "migrating its device state", ...
 */
/* A Linux guest with a device whose state does not migrate: fail @call
 * (FAILED_PRECONDITION, naming it) and return true. */
bool migd_vm_refuse_devices(struct migd_call *call, struct migd_vm *v);
bool migd_vm_refuse_linux(struct migd_call *call, struct migd_vm *v,
			  const char *what);

/* Publish a VM_STATE event for @v (before it is freed when @destroyed). */
void migd_publish_vm_state(struct migd_vmm *d, struct migd_vm *v,
			   Migd__VmState old_state, bool destroyed);

#endif
