// SPDX-License-Identifier: MIT
/*
 * hv_vm state: the accelerator's VM component and every vCPU's composed
 * into one versioned VmState message (proto/vmstate.proto); see
 * hv_vm_state_save() / hv_vm_state_restore() in vm.h. No ioctls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "proto/vmstate.pb-c.h"

#define VMSTATE_MAGIC 0x54534d48u /* "HMST" */
#define VMSTATE_VERSION 2u /* 2: devices */
/* Decode limit: 64 vCPUs with XSAVE areas of a few KiB and MSR lists. */
#define VMSTATE_MAX_BYTES (8u << 20)

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Over the VM's blob, each vCPU's, the devices' (none: a version 1
 * state's digest, unchanged). */
static uint64_t state_digest(const ProtobufCBinaryData *vm,
			     const ProtobufCBinaryData *vcpus, size_t n,
			     const ProtobufCBinaryData *dev)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ULL, vm->data, vm->len);

	for (size_t i = 0; i < n; i++)
		h = fnv1a(h, vcpus[i].data, vcpus[i].len);
	return fnv1a(h, dev->data, dev->len);
}

static bool state_allowed(struct hv_vm *vm)
{
	enum hv_vm_state s = hv_vm_get_state(vm);

	return s == HV_VM_CREATED || s == HV_VM_PAUSED;
}

int hv_vm_state_save(struct hv_vm *vm, struct hv_blob *out)
{
	Hvstate__VmState msg = HVSTATE__VM_STATE__INIT;
	uint32_t n = vm->cfg.nr_vcpus;
	struct hv_blob vb = {0}, db = {0};
	struct hv_blob *cb;
	ProtobufCBinaryData *bins;
	size_t len;
	int ret = 0;

	if (!state_allowed(vm))
		return -EBUSY;
	cb = calloc(n, sizeof(*cb));
	bins = calloc(n, sizeof(*bins));
	if (!cb || !bins) {
		ret = -ENOMEM;
		goto out;
	}
	ret = vm->ops->vm_state_save(vm, &vb);
	for (uint32_t i = 0; i < n && !ret; i++)
		ret = vm->ops->vcpu_state_save(vm->vcpus[i], &cb[i]);
	if (!ret && vm->ops->dev_state_save)
		ret = vm->ops->dev_state_save(vm, &db);
	if (ret)
		goto out;
	msg.magic = VMSTATE_MAGIC;
	msg.version = VMSTATE_VERSION;
	msg.accel = vm->cfg.accel == HV_ACCEL_KVM ? HVSTATE__ACCEL__ACCEL_KVM
						  : HVSTATE__ACCEL__ACCEL_SOFT;
	msg.nr_vcpus = n;
	msg.mem_bytes = vm->cfg.mem_bytes;
	msg.vm.data = vb.data;
	msg.vm.len = vb.len;
	for (uint32_t i = 0; i < n; i++) {
		bins[i].data = cb[i].data;
		bins[i].len = cb[i].len;
	}
	msg.n_vcpus = n;
	msg.vcpus = bins;
	msg.devices.data = db.data;
	msg.devices.len = db.len;
	msg.digest = state_digest(&msg.vm, bins, n, &msg.devices);
	len = hvstate__vm_state__get_packed_size(&msg);
	out->data = malloc(len ? len : 1);
	if (!out->data) {
		ret = -ENOMEM;
		goto out;
	}
	out->len = hvstate__vm_state__pack(&msg, out->data);
out:
	free(vb.data);
	free(db.data);
	for (uint32_t i = 0; cb && i < n; i++)
		free(cb[i].data);
	free(cb);
	free(bins);
	if (ret)
		hv_err("vm", "vm=%s op=state_save err=%d", hv_vm_name(vm), ret);
	return ret;
}

int hv_vm_state_restore(struct hv_vm *vm, const struct hv_blob *in)
{
	Hvstate__VmState *msg;
	int ret = 0;

	if (!state_allowed(vm))
		return -EBUSY;
	if (!in->len || in->len > VMSTATE_MAX_BYTES)
		return -EINVAL;
	msg = hvstate__vm_state__unpack(NULL, in->len, in->data);
	if (!msg)
		return -EINVAL;
	if (msg->magic != VMSTATE_MAGIC ||
	    (msg->version != VMSTATE_VERSION &&
	     msg->version != VMSTATE_VERSION - 1) ||
	    msg->version == 0 || msg->nr_vcpus != vm->cfg.nr_vcpus ||
	    msg->n_vcpus != vm->cfg.nr_vcpus ||
	    msg->mem_bytes != vm->cfg.mem_bytes ||
	    msg->accel != (vm->cfg.accel == HV_ACCEL_KVM
				   ? HVSTATE__ACCEL__ACCEL_KVM
				   : HVSTATE__ACCEL__ACCEL_SOFT) ||
	    (msg->version < 2 && msg->devices.len) ||
	    (msg->devices.len && !vm->ops->dev_state_restore) ||
	    msg->digest != state_digest(&msg->vm, msg->vcpus, msg->n_vcpus,
					&msg->devices)) {
		ret = -EINVAL;
		goto out;
	}
	{
		struct hv_blob b = {msg->vm.data, msg->vm.len};

		ret = vm->ops->vm_state_restore(vm, &b);
	}
	for (uint32_t i = 0; i < msg->n_vcpus && !ret; i++) {
		struct hv_blob b = {msg->vcpus[i].data, msg->vcpus[i].len};

		ret = vm->ops->vcpu_state_restore(vm->vcpus[i], &b);
	}
	/* After the interrupt controllers: a device raises its lines. A VM
	 * with devices needs their state (a version 1 state has none). */
	if (!ret && vm->ops->dev_state_restore) {
		struct hv_blob b = {msg->devices.data, msg->devices.len};

		ret = vm->ops->dev_state_restore(vm, &b);
	}
out:
	hvstate__vm_state__free_unpacked(msg, NULL);
	if (ret)
		hv_err("vm", "vm=%s op=state_restore err=%d", hv_vm_name(vm),
		       ret);
	return ret;
}
