// SPDX-License-Identifier: MIT
/*
 * The worker's dispatch of control calls (calls.h): one handler per
 * Request.call case, the table the server is given (worker.c's
 * migd_worker_server_ops).
 */
#include "hvcore/types.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/worker.h"

struct call_handler {
	const char *name;
	migd_call_fn fn;
};

/* Indexed by Migd__Request__CallCase. */
static const struct call_handler handlers[] = {
	[MIGD__REQUEST__CALL_PING] = {"ping", migd_vmm_call_ping},
	[MIGD__REQUEST__CALL_CAPABILITIES] = {"capabilities",
					      migd_vmm_call_capabilities},
	[MIGD__REQUEST__CALL_VM_CREATE] = {"vm_create", migd_call_vm_create},
	[MIGD__REQUEST__CALL_VM_LIST] = {"vm_list", migd_call_vm_list},
	[MIGD__REQUEST__CALL_VM_INSPECT] = {"vm_inspect", migd_call_vm_inspect},
	[MIGD__REQUEST__CALL_VM_PAUSE] = {"vm_pause", migd_call_vm_pause},
	[MIGD__REQUEST__CALL_VM_RESUME] = {"vm_resume", migd_call_vm_resume},
	[MIGD__REQUEST__CALL_VM_DESTROY] = {"vm_destroy", migd_call_vm_destroy},
	[MIGD__REQUEST__CALL_MIG_INCOMING] = {"mig_incoming",
					      migd_call_mig_incoming},
	[MIGD__REQUEST__CALL_MIG_START] = {"mig_start", migd_call_mig_start},
	[MIGD__REQUEST__CALL_MIG_STATUS] = {"mig_status", migd_call_mig_status},
	[MIGD__REQUEST__CALL_MIG_WATCH] = {"mig_watch", migd_call_mig_watch},
	[MIGD__REQUEST__CALL_MIG_CANCEL] = {"mig_cancel", migd_call_mig_cancel},
	[MIGD__REQUEST__CALL_MIG_POSTCOPY] = {"mig_postcopy",
					      migd_call_mig_postcopy},
	[MIGD__REQUEST__CALL_MIG_SWITCHOVER] = {"mig_switchover",
						migd_call_mig_switchover},
	[MIGD__REQUEST__CALL_MIG_TUNE] = {"mig_tune", migd_call_mig_tune},
	[MIGD__REQUEST__CALL_MIG_RECOVER] = {"mig_recover",
					     migd_call_mig_recover},
	[MIGD__REQUEST__CALL_MIG_RESOLVE] = {"mig_resolve",
					     migd_call_mig_resolve},
	[MIGD__REQUEST__CALL_SUBSCRIBE] = {"subscribe", migd_call_subscribe},
	[MIGD__REQUEST__CALL_UNSUBSCRIBE] = {"unsubscribe",
					     migd_call_unsubscribe},
	[MIGD__REQUEST__CALL_DIRTY_RATE] = {"dirty_rate", migd_call_dirty_rate},
	[MIGD__REQUEST__CALL_CONVERGE_ESTIMATE] = {"converge_estimate",
						   migd_call_converge_estimate},
	[MIGD__REQUEST__CALL_VM_SET_WORKLOAD] = {"vm_set_workload",
						 migd_call_vm_set_workload},
	[MIGD__REQUEST__CALL_VM_CHECK] = {"vm_check", migd_call_vm_check},
	[MIGD__REQUEST__CALL_VM_SNAPSHOT] = {"vm_snapshot",
					     migd_call_vm_snapshot},
	[MIGD__REQUEST__CALL_VM_RESTORE] = {"vm_restore", migd_call_vm_restore},
	[MIGD__REQUEST__CALL_VM_CONSOLE] = {"vm_console", migd_call_vm_console},
	[MIGD__REQUEST__CALL_VM_CONSOLE_WRITE] = {"vm_console_write",
						  migd_call_vm_console_write},
	[MIGD__REQUEST__CALL_WORKER_INFO] = {"worker_info",
					     migd_call_worker_info},
	[MIGD__REQUEST__CALL_WORKER_HANDOVER] = {"worker_handover",
						 migd_call_worker_handover},
};

const char *migd_vmm_dispatch(unsigned cs, struct migd_call *call)
{
	if (cs >= HV_ARRAY_SIZE(handlers) || !handlers[cs].fn) {
		migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
			       "unknown call (case %u)", cs);
		return "?";
	}
	handlers[cs].fn(call);
	return handlers[cs].name;
}
