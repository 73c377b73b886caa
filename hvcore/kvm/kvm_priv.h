/* SPDX-License-Identifier: MIT */
/*
 * Private state of the KVM accelerator, shared by its files:
 * kvm_vm.c (VM, capabilities, memslots), kvm_vcpu.c (vCPUs, exits),
 * kvm_dirty.c (ring and bitmap logging), kvm_state.c (save/restore),
 * kvm_linux.c (the platform of Linux guests; its PCI devices in
 * kvm_pci.c).
 */
#ifndef HVCORE_KVM_KVM_PRIV_H
#define HVCORE_KVM_KVM_PRIV_H

#include <linux/kvm.h>
#include <pthread.h>

#include "arch/x86/x86_vcpu.h"
#include "hvcore/kvm/kvm.h"
#include "hvcore/kvm/kvm_caps.h"
#include "hvcore/kvm/kvm_test.h"
#include "hvcore/vm.h"

/* Signal that interrupts KVM_RUN (a no-op handler, no SA_RESTART). */
#define HV_KVM_KICK_SIGNAL SIGUSR1

/* Smallest dirty ring measured never to overflow on the nested PVM host
 * with the ring drainer running (kvm_dirty.c, tools/kvm-ring-repro). */
#define HV_KVM_RING_MIN_SAFE 4096u

/* What the accelerator knows about one memslot (by id). */
struct kvm_slot {
	bool used;
	uint32_t id;
	uint32_t flags;
	uint64_t npages;
	uint64_t *scratch; /* KVM_GET_DIRTY_LOG buffer (bitmap mode) */
};

struct hv_kvm_vm {
	/* immutable after vm_init */
	int sys_fd;
	int vm_fd;
	size_t run_size;
	uint32_t ring_entries; /* 0: no dirty ring */
	bool ring_acq_rel;
	bool manual_protect;
	struct x86_fpu_caps fpu; /* XSAVE or FPU, XCRs or none */
	void *cpuid;		 /* struct kvm_cpuid2 from GET_SUPPORTED */
	uint32_t entry32;
	uint64_t ap_entry64;
	struct hv_kvm_linux *lx; /* Linux guests only (kvm_linux.c) */

	/* control thread (memslot updates) and harvester, under vm->dirty_lock
	 * for the harvester's reads */
	struct kvm_slot *slots;
	uint32_t nr_slots; /* array size, indexed by slot id */
	enum hv_dirty_mode mode;

	/* probed once by vCPU 0, then immutable */
	struct x86_msr_list *msrs;

	/* Ring drainer (kvm_dirty.c): started by dirty_start in ring mode,
	 * stopped by dirty_stop or the first vcpu_fini (before any ring is
	 * unmapped). drain_running: control thread only. */
	pthread_t drain_thread;
	bool drain_running;
	bool drain_stop; /* atomic */
	/* kvm_test.h: set before or while the drainer runs (atomics) */
	hv_kvm_drain_hook_fn drain_hook;
	void *drain_hook_arg;
	uint32_t drain_min;

	/* Held by every ring reaper (harvester, drainer, a vCPU at ring-full)
	 * from its first take to its last bit (kvm_dirty.c); protects each
	 * vCPU's fetch index and taken[] buffer. */
	pthread_mutex_t reap_lock;

	/* atomics */
	bool ring_per_entry;
	bool ring_overflow; /* set by a collector, consumed by harvest */
	struct hv_kvm_ring_stats rstats;
};

struct hv_kvm_vcpu {
	int fd;
	struct kvm_run *run;
	/* dirty ring; fetch and taken[] (ring_entries entries taken, not yet
	 * applied) under the VM's reap_lock */
	struct kvm_dirty_gfn *ring;
	uint32_t fetch;
	struct kvm_dirty_gfn *taken;
	uint32_t nr_taken;
	/* vCPU thread only: consecutive KVM_EXIT_DIRTY_RING_FULL exits that
	 * found nothing to collect (see exit_ring_full) */
	uint32_t empty_full_run;
};

static inline struct hv_kvm_vm *kvm_of(struct hv_vm *vm)
{
	return vm->accel;
}

/* kvm_vm.c */
int hv_kvm_check_cap(struct hv_kvm_vm *k, long cap);

/* kvm_dirty.c */
int hv_kvm_dirty_start(struct hv_vm *vm, enum hv_dirty_mode mode);
void hv_kvm_dirty_stop(struct hv_vm *vm);
int64_t hv_kvm_dirty_harvest(struct hv_vm *vm);
int hv_kvm_dirty_clear(struct hv_vm *vm, uint32_t slot_id, uint64_t first,
		       uint64_t count, const uint64_t *mask);
/* Reap one vCPU's ring at KVM_EXIT_DIRTY_RING_FULL (its own thread): take,
 * reset, apply under reap_lock. An empty ring means our position is out of
 * step with the kernel's (resynchronised, and the log marked incomplete).
 * Returns the entries reaped or a negative errno (the reset failed). */
int64_t hv_kvm_ring_reap_full(struct hv_vm *vm, struct hv_vcpu *vcpu);
/* Stop the ring drainer if it runs (control thread; idempotent). */
void hv_kvm_ring_drain_stop(struct hv_vm *vm);

/* kvm_vcpu.c */
int hv_kvm_vcpu_init(struct hv_vcpu *vcpu);
void hv_kvm_vcpu_fini(struct hv_vcpu *vcpu);
int hv_kvm_vcpu_run(struct hv_vcpu *vcpu, struct hv_exit *exit);
void hv_kvm_vcpu_kick(struct hv_vcpu *vcpu);

/* kvm_linux.c: the platform of a VM with cfg.boot.kernel. init (from
 * vm_init, after the irqchip) creates the PIT, buses and devices and
 * loads the kernel; vcpu_init sets CPUID, MSRs, LAPIC and the BSP's
 * entry; exit handles one KVM exit: 0 re-enter, 1 report @exit,
 * 2 not handled (use the exit table), or a negative errno. */
int hv_kvm_linux_init(struct hv_vm *vm, struct hv_kvm_vm *k);
void hv_kvm_linux_fini(struct hv_vm *vm, struct hv_kvm_vm *k);
int hv_kvm_linux_vcpu_init(struct hv_vcpu *vcpu, int fd);
int hv_kvm_linux_exit(struct hv_vcpu *vcpu, struct kvm_run *run,
		      struct hv_exit *exit);

/* A Linux guest's devices (kvm_linux.c): false for the workload guest. */
struct hv_uart;
struct hv_i8042;
struct hv_kvm_pci;
struct hv_kvm_linux_devs {
	struct hv_uart *uart;
	struct hv_i8042 *i8042;
	struct hv_kvm_pci *pci;
};
bool hv_kvm_linux_devs(struct hv_vm *vm, struct hv_kvm_linux_devs *out);

/* kvm_devstate.c: the accelerator's device ops (hvcore/accel.h). */
void hv_kvm_devices_pause(struct hv_vm *vm);
void hv_kvm_devices_run(struct hv_vm *vm);
int hv_kvm_dev_state_save(struct hv_vm *vm, struct hv_blob *out);
int hv_kvm_dev_state_restore(struct hv_vm *vm, const struct hv_blob *in);
/* Decode and check a DevState into a snapshot of
 * hv_kvm_dev_state_snap_size() bytes, touching no device: 0 or -EINVAL
 * (unit tests, the fuzz target). */
int hv_kvm_dev_state_decode(const struct hv_blob *in, void *snap);
/* What hv_kvm_dev_state_save() encodes, from the devices @d (no VM
 * needed: the seed generator's devices over a fake VM): 0 with *@out
 * malloc'd, -ENOMEM, -E2BIG, or a device's save error. */
int hv_kvm_dev_state_encode(const struct hv_kvm_linux_devs *d,
			    struct hv_blob *out);
size_t hv_kvm_dev_state_snap_size(void);
/* Whether a decoded snapshot keeps every count within its array (the
 * fuzz target's check of what the decoder accepted). */
bool hv_kvm_dev_state_snap_ok(const void *snap);

/* kvm_state.c */
int hv_kvm_vm_state_save(struct hv_vm *vm, struct hv_blob *out);
int hv_kvm_vm_state_restore(struct hv_vm *vm, const struct hv_blob *in);
int hv_kvm_vcpu_state_save(struct hv_vcpu *vcpu, struct hv_blob *out);
int hv_kvm_vcpu_state_restore(struct hv_vcpu *vcpu, const struct hv_blob *in);

#endif
