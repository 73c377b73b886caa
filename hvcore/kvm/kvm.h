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

/* True when /dev/kvm opens and reports API version 12. */
bool hv_kvm_available(void);

#endif
