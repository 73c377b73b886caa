// SPDX-License-Identifier: MIT
/*
 * KVM accelerator state components: thin glue from the ops table to the
 * x86 helpers (arch/x86/x86_state.c), which own the formats.
 */
#include <errno.h>
#include <sys/ioctl.h>

#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/kvm/kvm_test.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

static int vcpu0_fd(struct hv_vm *vm)
{
	return ((struct hv_kvm_vcpu *)vm->vcpus[0]->accel)->fd;
}

int hv_kvm_vm_state_save(struct hv_vm *vm, struct hv_blob *out)
{
	return x86_vm_state_save(kvm_of(vm)->vm_fd, vcpu0_fd(vm), out);
}

int hv_kvm_vm_state_restore(struct hv_vm *vm, const struct hv_blob *in)
{
	return x86_vm_state_restore(kvm_of(vm)->vm_fd, vcpu0_fd(vm), in);
}

int hv_kvm_vcpu_state_save(struct hv_vcpu *vcpu, struct hv_blob *out)
{
	struct hv_kvm_vm *k = kvm_of(vcpu->vm);
	struct hv_kvm_vcpu *c = vcpu->accel;

	return x86_vcpu_state_save(c->fd, vcpu->id, k->msrs, &k->fpu, out);
}

int hv_kvm_test_set_msr(struct hv_vm *vm, uint32_t vcpu, uint32_t index,
			uint64_t value)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = {.h.nmsrs = 1, .e = {.index = index, .data = value}};
	struct hv_kvm_vcpu *c;
	int r;

	if (vcpu >= vm->cfg.nr_vcpus || !vm->vcpus[vcpu] ||
	    !vm->vcpus[vcpu]->accel)
		return -EINVAL;
	c = vm->vcpus[vcpu]->accel;
	r = ioctl(c->fd, KVM_SET_MSRS, &m);
	if (r < 0)
		return -errno;
	return r == 1 ? 0 : -EINVAL;
}

int hv_kvm_vcpu_state_restore(struct hv_vcpu *vcpu, const struct hv_blob *in)
{
	struct hv_kvm_vm *k = kvm_of(vcpu->vm);
	struct hv_kvm_vcpu *c = vcpu->accel;

	return x86_vcpu_state_restore(c->fd, vcpu->id, &k->fpu, in);
}
