/* SPDX-License-Identifier: MIT */
/*
 * Test-only knobs of the KVM accelerator. Nothing outside tests/ includes
 * this header; the functions exist in every build so that the tests run
 * against the same library the daemon links.
 */
#ifndef HVCORE_KVM_KVM_TEST_H
#define HVCORE_KVM_KVM_TEST_H

#include <stdint.h>

struct hv_vm;

/*
 * Called by the ring drainer after it collected @entries (> 0) ring
 * entries and before the KVM_RESET_DIRTY_RINGS that re-protects their
 * pages: a hook that sleeps widens exactly the window in which those
 * pages are writable without a ring entry.
 */
typedef void (*hv_kvm_drain_hook_fn)(void *arg, uint32_t entries);

/*
 * Install @fn (NULL: none) and make the drainer collect a ring once
 * @min_pending entries are pending (0: the default, an eighth of the
 * ring). Call before hv_vm_dirty_log_start or while the drainer runs;
 * the hook runs on the drainer thread.
 */
void hv_kvm_test_set_drain_hook(struct hv_vm *vm, hv_kvm_drain_hook_fn fn,
				void *arg, uint32_t min_pending);

/*
 * KVM_SET_MSRS of one MSR on vCPU @vcpu of a paused VM, as a guest OS
 * would have set it (the test guest leaves its MSRs at their reset
 * values, so a state round trip could not tell a lost one). 0 or -errno.
 */
int hv_kvm_test_set_msr(struct hv_vm *vm, uint32_t vcpu, uint32_t index,
			uint64_t value);

#endif
