/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of the dirty-rate monitor (hvcore/dirtyrate.h): one
 * monitor per VM while no outgoing migration owns the VM's dirty log,
 * DIRTY_RATE events every cfg.dirty_event_ms, and the DirtyRateSample
 * message the RPC, the events and the metrics share.
 *
 * While a migration runs the monitor is destroyed before the engine
 * starts logging (two harvesters would steal each other's pages), and
 * samples report source "migration" with the engine's own per-iteration
 * dirty rate; a monitor is created again when the VM comes back (failed
 * or cancelled migration) or arrives (incoming).
 *
 * The same timer watches each guest for stopping on its own (a Linux
 * guest's poweroff, reboot or panic: hv_vm_exit_reason()): such a VM is
 * stopped for good (its vCPUs joined, its monitor gone; a reboot is not
 * restarted, as Firecracker does not) and one VM_STATE event says so,
 * within a DIRTY_RATE period (1 s by default).
 *
 * Threads: loop thread.
 */
#ifndef MIGD_MONITOR_H
#define MIGD_MONITOR_H

#include <stdbool.h>

#include "hvcore/dirtyrate.h"
#include "proto/control.pb-c.h"

struct migd_vmm;
struct migd_vm;

/* A DirtyRateSample with storage for its sub-messages. */
struct migd_dr_msg {
	Migd__DirtyRateSample s;
	Migd__DirtyRateWindow win[HV_DR_NR_WINDOWS];
	Migd__DirtyRateWindow *winp[HV_DR_NR_WINDOWS];
	Migd__VcpuDirtyRate vc[HV_WL_MAX_VCPUS];
	Migd__VcpuDirtyRate *vcp[HV_WL_MAX_VCPUS];
	double vc_rates[HV_WL_MAX_VCPUS][HV_DR_NR_WINDOWS];
	uint64_t vcpu_pps[HV_WL_MAX_VCPUS];
	uint64_t hot[HV_DR_HIST_N];
	struct hv_dirtyrate_snap snap;
};

/* Start monitoring @v if enabled and it has none. 0 or negative errno
 * (logged; the VM works without a monitor). */
int migd_monitor_attach(struct migd_vmm *d, struct migd_vm *v);
void migd_monitor_detach(struct migd_vm *v);

/* Fill @m for @v (strings point into @v and static storage). */
void migd_dirty_fill(struct migd_vmm *d, struct migd_vm *v,
		     struct migd_dr_msg *m);

/* The exit watch above, for one VM: true when it stopped @v just now. */
bool migd_vm_watch_exit(struct migd_vmm *d, struct migd_vm *v);

/* Start / stop the DIRTY_RATE event timer. */
void migd_monitor_events_start(struct migd_vmm *d);
void migd_monitor_events_stop(struct migd_vmm *d);

#endif
