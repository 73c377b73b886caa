/* SPDX-License-Identifier: MIT */
/*
 * x86 vCPU set-up and state on KVM: CPUID, the boot register states of the
 * guest image (PVH 32-bit entry for the BSP, long-mode entry for APs), and
 * save/restore of the complete vCPU and VM state as proto/vmstate.proto
 * messages (X86VcpuState, X86VmState), one per component.
 *
 * Calls take KVM file descriptors; they are used from the thread that owns
 * the vCPU or, for state, the control thread while the vCPU is parked.
 * Every function returns 0 or a negative errno.
 */
#ifndef ARCH_X86_X86_VCPU_H
#define ARCH_X86_X86_VCPU_H

#include "hvcore/types.h"
#include "hvcore/types.h"

/* MSRs to save: KVM_GET_MSR_INDEX_LIST filtered by what KVM_GET_MSRS
 * accepts on a real vCPU. Immutable once probed; free() it. */
struct x86_msr_list {
	uint32_t n;
	uint32_t idx[];
};

/* KVM_GET_SUPPORTED_CPUID, malloc'd (struct kvm_cpuid2 *), free() it. */
int x86_cpuid_supported(int sys_fd, void **out);
/* KVM_SET_CPUID2 from @supported with this vCPU's APIC id filled in. */
int x86_vcpu_set_cpuid(int vcpu_fd, const void *supported, uint32_t vcpu_id);

/* PVH: 32-bit flat protected mode, paging off, %ebx = @start_info. */
int x86_vcpu_boot_pvh(int vcpu_fd, uint32_t entry, uint32_t start_info);
/* Long mode at @entry with CR3 = @cr3, %rdi = @rdi, interrupts off. */
int x86_vcpu_boot_long(int vcpu_fd, uint64_t entry, uint64_t cr3, uint64_t rdi);

int x86_msr_list_probe(int sys_fd, int vcpu_fd, struct x86_msr_list **out);

/*
 * How the host's KVM saves the FPU and extended registers, probed once per
 * VM. A host CPU without XSAVE (QEMU's qemu64 model, for one) has neither
 * KVM_CAP_XSAVE nor KVM_CAP_XCRS: the FPU/SSE state then travels as
 * struct kvm_fpu (KVM_GET/SET_FPU) and there are no XCRs, as in QEMU.
 */
struct x86_fpu_caps {
	bool xsave;	 /* KVM_CAP_XSAVE: KVM_GET/SET_XSAVE, else _FPU */
	bool xcrs;	 /* KVM_CAP_XCRS: KVM_GET/SET_XCRS, else none */
	int xsave2_size; /* KVM_CAP_XSAVE2 size when > 4096, else 0 */
};

void x86_fpu_caps_probe(int sys_fd, struct x86_fpu_caps *out);

/*
 * Save / restore one vCPU: regs, sregs, XSAVE (KVM_GET_XSAVE2 when
 * @fpu->xsave2_size > 4096, else KVM_GET_XSAVE; KVM_GET_FPU without
 * XSAVE), XCRs when the host has them, MSRs of @msrs, LAPIC, vCPU events,
 * MP state, debug registers, TSC offset when the vCPU has the
 * KVM_VCPU_TSC_CTRL attribute. Restore validates the whole message first
 * (-EINVAL; also for a state saved on a host with the other FPU format),
 * then applies in the order KVM needs (sregs before MSRs and LAPIC, regs
 * last).
 */
int x86_vcpu_state_save(int vcpu_fd, uint32_t vcpu_id,
			const struct x86_msr_list *msrs,
			const struct x86_fpu_caps *fpu, struct hv_blob *out);
int x86_vcpu_state_restore(int vcpu_fd, uint32_t vcpu_id,
			   const struct x86_fpu_caps *fpu,
			   const struct hv_blob *in);

/*
 * VM: KVM clock (with its CLOCK_REALTIME pair when KVM gives one: the
 * restore then advances the clock by the wall time since the save, at
 * most an hour), TSC frequency (from @vcpu0_fd), PIC, IOAPIC and the PIT
 * when the VM has one. Restore reads X86VmState versions 1 and 2.
 */
int x86_vm_state_save(int vm_fd, int vcpu0_fd, struct hv_blob *out);
int x86_vm_state_restore(int vm_fd, int vcpu0_fd, const struct hv_blob *in);

#endif
