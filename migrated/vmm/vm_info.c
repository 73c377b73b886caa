// SPDX-License-Identifier: MIT
/*
 * What the worker says of one VM: its VmInfo and VM_STATE events
 * (vm_info.h). Loop thread.
 */
#include <string.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/kvm/kvm.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/vm_info.h"

void migd_vm_info_fill(Migd__VmInfo *info, struct migd_vm *v)
{
	const struct hv_vm_cfg *cfg = &v->vm->cfg;

	migd__vm_info__init(info);
	info->name = v->name;
	info->state = migd_vm_api_state(v);
	info->mem_bytes = cfg->mem_bytes;
	info->nr_vcpus = cfg->nr_vcpus;
	info->accel = (char *)hv_accel_kind_name(cfg->accel);
	info->created_unix_ms = v->created_unix_ms;
	info->origin = (char *)(v->migrated_in ? "migrated" : "created");
	info->dirty_ring = cfg->dirty_ring_entries;
	info->worker_pid = (uint64_t)getpid();
	info->worker_id = migd_self_worker_id;
	info->updates = v->updates;
	info->backing = (char *)hv_mem_backing_name(cfg->backing);
	info->kernel = (char *)cfg->boot.kernel;
	info->stop_reason = (char *)migd_vm_stop_reason(v);
	if (cfg->accel == HV_ACCEL_KVM && cfg->dirty_ring_entries) {
		struct hv_kvm_ring_stats rs;

		hv_kvm_get_ring_stats(v->vm, &rs);
		info->ring_desyncs = rs.desyncs;
		info->ring_resyncs = rs.resyncs;
	}
}

const char *migd_vm_stop_reason(struct migd_vm *v)
{
	enum hv_vm_exit why = hv_vm_exit_reason(v->vm);

	return why == HV_VM_EXIT_NONE ? "" : hv_vm_exit_name(why);
}

bool migd_vm_refuse_linux(struct migd_call *call, struct migd_vm *v,
			  const char *what)
{
	if (!hv_vm_is_linux(v->vm))
		return false;
	migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
		       "VM '%s' runs a Linux kernel; %s is not supported yet: "
		       "the VM keeps running here, untouched",
		       v->name, what);
	return true;
}

bool migd_vm_refuse_devices(struct migd_call *call, struct migd_vm *v)
{
	/* The device kinds whose state migrates (hvcore/kvm/kvm_devstate.c);
	 * the UART and the i8042 of every Linux guest do too. */
	static const char *const ok[] = {"virtio-blk", "virtio-rng",
					  "virtio-net"};
	struct hv_kvm_dev_info dev[HV_KVM_MAX_DEVS];
	unsigned n;

	if (!hv_vm_is_linux(v->vm))
		return false;
	n = hv_kvm_linux_devices(v->vm, dev, HV_KVM_MAX_DEVS);
	for (unsigned i = 0; i < n; i++) {
		bool known = false;

		for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
			known |= dev[i].kind && !strcmp(dev[i].kind, ok[k]);
		if (known)
			continue;
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "VM '%s' has a %s device (00:%02x.0) whose "
			       "state cannot migrate yet: the VM keeps "
			       "running here, untouched",
			       v->name, dev[i].kind ? dev[i].kind : "?",
			       dev[i].slot);
		return true;
	}
	return false;
}

Migd__VmInfo *migd_vm_info_new(struct migd_call *call, struct migd_vm *v)
{
	Migd__VmInfo *info = migd_call_alloc(call, sizeof(*info));

	if (info)
		migd_vm_info_fill(info, v);
	return info;
}

void migd_publish_vm_state(struct migd_vmm *d, struct migd_vm *v,
			   Migd__VmState old_state, bool destroyed)
{
	Migd__Event ev = MIGD__EVENT__INIT;
	Migd__VmStateEvent body = MIGD__VM_STATE_EVENT__INIT;
	Migd__VmInfo info;

	migd_vm_info_fill(&info, v);
	if (destroyed)
		info.state = MIGD__VM_STATE__VM_STATE_STOPPED;
	body.vm = &info;
	body.old_state = old_state;
	body.destroyed = destroyed;
	ev.kind = MIGD__EVENT_KIND__EVENT_KIND_VM_STATE;
	ev.body_case = MIGD__EVENT__BODY_VM_STATE;
	ev.vm_state = &body;
	migd_server_publish(&d->srv, &ev, v->name, 0, false);
}
