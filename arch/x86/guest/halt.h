/* SPDX-License-Identifier: MIT */
/*
 * How the guest image waits: halt with a timer instead of spinning, so
 * that a vCPU that paces itself or idles costs the host a few percent of
 * a CPU (docs/workload.md).
 *
 * Ring 3 (the workload) calls hv_guest_halt_until(); it goes down to
 * ring 0 as an HV_UCALL_HALT through the ud2 path (ucall.h), where
 * hv_guest_halt_deliver() picks the way to sleep:
 *  - under our VMM the OUT that delivers every ucall is the sleep: the
 *    host's vCPU thread sleeps until the deadline and acknowledges it;
 *  - under plain QEMU (no params page) ring 0 programs the local APIC
 *    timer (TSC-deadline mode when CPUID offers it, else one-shot,
 *    calibrated against the TSC once) and runs `sti; hlt; cli`.
 * Ring 3 runs with interrupts disabled (IF = 0, see entry.S), so the only
 * interrupt this image ever takes is the timer inside that window.
 */
#ifndef ARCH_X86_GUEST_HALT_H
#define ARCH_X86_GUEST_HALT_H

#include <stdint.h>

#include "arch/x86/guest/ucall.h"

/* IDT vectors of the LAPIC timer and of the APIC's spurious interrupt. */
#define HV_HALT_TIMER_VECTOR 0xf0u
#define HV_HALT_SPURIOUS_VECTOR 0xffu

struct hv_int_frame;

/* Interrupt handlers, installed in the IDT by guest.c (ring 0). */
__attribute__((interrupt)) void hv_guest_halt_timer_isr(struct hv_int_frame *f);
__attribute__((interrupt)) void
hv_guest_halt_spurious_isr(struct hv_int_frame *f);

/*
 * Ring 3: sleep until the TSC reaches @tsc_deadline, or a little less
 * (the host bounds one sleep at HV_UCALL_HALT_MAX_US; a pause ends it).
 * Returns 1 when something halted, 0 when nobody listens (an older host):
 * the caller spins then, and later calls return 0 at once.
 */
int hv_guest_halt_until(uint64_t tsc_deadline);

/*
 * Ring 0, from the #UD handler after the ucall's OUT, interrupts off:
 * under plain QEMU (@vmm == 0) halt on the LAPIC timer until the deadline
 * and acknowledge; under our VMM the host has slept and acknowledged
 * already.
 */
void hv_guest_halt_deliver(struct hv_ucall *uc, int vmm);

#endif
