/* SPDX-License-Identifier: MIT */
/*
 * The KVM accelerator (docs/kvm-dirty-tracking.md): VMs on /dev/kvm that
 * boot the x86 guest image (arch/x86/guest) and log dirty pages with the
 * dirty ring or the manual-protect dirty bitmap.
 *
 * Users create VMs through hvcore/vm.h with cfg.accel = HV_ACCEL_KVM; this
 * header adds only what is KVM-specific (benchmark and test knobs).
 */
#ifndef HVCORE_KVM_KVM_H
#define HVCORE_KVM_KVM_H

#include "hvcore/accel.h"

struct hv_vm;

extern const struct hv_accel_ops hv_kvm_ops;

/* Dirty-ring harvest counters of one VM (racy snapshot). */
struct hv_kvm_ring_stats {
	uint64_t entries;    /* ring entries collected */
	uint64_t lookups;    /* memslot id lookups done for them */
	uint64_t collect_ns; /* time reading rings into the bitmaps */
	uint64_t reset_ns;   /* time in KVM_RESET_DIRTY_RINGS */
	uint64_t full_exits; /* KVM_EXIT_DIRTY_RING_FULL seen */
	uint64_t resyncs;    /* full re-protects after a ring overflow */
	uint64_t desyncs;    /* ring positions found out of step */
};

/*
 * Resolve the slot of every ring entry (the baseline) instead of once per
 * run of same-slot entries. For hvbench dirty-log; any thread.
 */
void hv_kvm_set_ring_per_entry(struct hv_vm *vm, bool per_entry);
void hv_kvm_get_ring_stats(struct hv_vm *vm, struct hv_kvm_ring_stats *out);

/* Name of a KVM exit reason ("KVM_EXIT_IO"), "KVM_EXIT_?" if unknown. */
const char *hv_kvm_exit_name(uint32_t reason);

/*
 * Linux guests (hvcore/kvm/kvm_linux.c, docs/guests.md): the VM's port
 * I/O and MMIO buses, where device models register (before the vCPUs
 * run), and the device environment they are created with. NULL for a
 * VM without cfg.boot.kernel. Valid until hv_vm_destroy().
 */
struct hv_iobus;
struct hv_dev_env;
struct hv_iobus *hv_kvm_pio_bus(struct hv_vm *vm);
struct hv_iobus *hv_kvm_mmio_bus(struct hv_vm *vm);
const struct hv_dev_env *hv_kvm_dev_env(struct hv_vm *vm);

/* Guest accesses no device claimed (reads got all ones). Racy snapshot;
 * zeros for a VM without a kernel. */
struct hv_kvm_linux_stats {
	uint64_t unclaimed_pio;
	uint64_t unclaimed_mmio;
	const char *entry; /* "bzimage" (64-bit boot protocol), "pvh" */
};
void hv_kvm_linux_get_stats(struct hv_vm *vm, struct hv_kvm_linux_stats *out);

/*
 * The virtio-pci devices of a Linux guest (hvcore/kvm/kvm_pci.h), for
 * vm inspect: what and where, and their counters (racy snapshot).
 */
#define HV_KVM_MAX_DEVS 8
struct hv_kvm_dev_info {
	const char *kind; /* "virtio-blk", "virtio-rng", "virtio-net" */
	const char *path; /* a disk's image, a NIC's tap; "" otherwise */
	uint8_t mac[6];	  /* virtio-net: its MAC address */
	bool read_only;
	uint8_t slot;	  /* 00:slot.0 */
	uint8_t status;	  /* virtio device status (0x0f: DRIVER_OK...) */
	uint32_t gsi;	  /* INTA#'s */
	bool msix;	  /* the guest enabled MSI-X */
	uint64_t bar0;	  /* BAR 0 while decoded; 0 otherwise */
	uint64_t requests, errors, bytes_read, bytes_written, flushes;
	int fd; /* a disk's image, a NIC's tap (the device's); -1 otherwise */
};
/* Fills up to @max entries; returns how many (0: no device or not a
 * Linux guest). Any thread; valid until hv_vm_destroy(). */
unsigned hv_kvm_linux_devices(struct hv_vm *vm, struct hv_kvm_dev_info *out,
			      unsigned max);

/* True when /dev/kvm opens and reports API version 12. */
bool hv_kvm_available(void);

#endif
