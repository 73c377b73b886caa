/* SPDX-License-Identifier: MIT */
/*
 * Local live update (vm_update): replace a VM's worker by a fresh one
 * started from the migrated-vmm binary installed now, without copying
 * guest memory (docs/processes.md, "Local live update").
 *
 * Threads: loop thread.
 */
#ifndef MIGD_HOST_UPDATE_H
#define MIGD_HOST_UPDATE_H

struct migd_call;

void migd_host_vm_update(struct migd_call *call);

#endif
