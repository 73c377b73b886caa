// SPDX-License-Identifier: MIT
/*
 * What vm inspect says of a Linux guest's virtio devices (calls.h): the
 * devices asked for at create (Boot.disks, Boot.rng, Boot.net) and, for each one
 * the VM has, where the guest sees it and its counters
 * (hvcore/kvm/kvm.h). Loop thread; strings point into the VM, which
 * outlives the call.
 */
#include <stdio.h>
#include <string.h>

#include "hvcore/kvm/kvm.h"
#include "hvcore/vm.h"
#include "migrated/vmm/calls.h"

/* "xx:xx:xx:xx:xx:xx" into @out (18 bytes). */
static void mac_fmt(const uint8_t m[6], char *out)
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

void migd_devices_inspect(struct migd_call *call, struct hv_vm *vm,
			  Migd__Boot *boot, Migd__VmInspectResult *r)
{
	struct hv_boot_cfg *b = &vm->cfg.boot;
	struct hv_kvm_dev_info info[HV_KVM_MAX_DEVS];
	Migd__Disk *disks, **dp;
	Migd__Device *devs, **vp;
	unsigned n;

	if (b->nr_disks) {
		disks = migd_call_alloc(call, b->nr_disks * sizeof(*disks));
		dp = migd_call_alloc(call, b->nr_disks * sizeof(*dp));
		if (!disks || !dp)
			return;
		for (uint32_t i = 0; i < b->nr_disks; i++) {
			migd__disk__init(&disks[i]);
			disks[i].path = b->disk[i].path;
			disks[i].read_only = b->disk[i].read_only;
			dp[i] = &disks[i];
		}
		boot->n_disks = b->nr_disks;
		boot->disks = dp;
	}
	boot->rng = b->rng;
	if (b->net_tap[0]) {
		Migd__Net *net = migd_call_alloc(call, sizeof(*net));
		char *mac = migd_call_alloc(call, 18);

		if (!net || !mac)
			return;
		migd__net__init(net);
		net->tap = b->net_tap;
		mac_fmt(b->net_mac, mac);
		net->mac = mac;
		boot->net = net;
	}
	n = hv_kvm_linux_devices(vm, info, HV_KVM_MAX_DEVS);
	if (!n)
		return;
	devs = migd_call_alloc(call, n * sizeof(*devs));
	vp = migd_call_alloc(call, n * sizeof(*vp));
	if (!devs || !vp)
		return;
	for (unsigned i = 0; i < n; i++) {
		Migd__Device *d = &devs[i];

		migd__device__init(d);
		d->kind = (char *)info[i].kind;
		d->path = (char *)info[i].path;
		d->read_only = info[i].read_only;
		d->pci_slot = info[i].slot;
		d->bar0 = info[i].bar0;
		d->msix = info[i].msix;
		d->status = info[i].status;
		d->requests = info[i].requests;
		d->errors = info[i].errors;
		d->bytes_read = info[i].bytes_read;
		d->bytes_written = info[i].bytes_written;
		d->flushes = info[i].flushes;
		if (!strcmp(info[i].kind, "virtio-net")) {
			d->mac = migd_call_alloc(call, 18);
			if (d->mac)
				mac_fmt(info[i].mac, d->mac);
		}
		vp[i] = d;
	}
	r->n_devices = n;
	r->devices = vp;
}
