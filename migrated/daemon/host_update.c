// SPDX-License-Identifier: MIT
/*
 * Local live update (host_update.h).
 */
#include "migrated/daemon/host_update.h"
#include "migrated/daemon/server.h"

void migd_host_vm_update(struct migd_call *call)
{
	migd_call_fail(call, MIGD__STATUS__STATUS_UNAVAILABLE,
		       "local live update is not built yet");
}
