/* SPDX-License-Identifier: MIT */
/*
 * The guest's workload mode under plain QEMU (arch/x86/guest/qemu_mode.c):
 * what guest.c calls, in ring 0.
 *
 * Under our VMM the params page holds the workload before the guest
 * starts. Under QEMU (`-M microvm -kernel guest.elf`) nobody writes it, so
 * the guest reads its workload from the PVH command line instead
 * (`-append "hvwl pattern=sweep content=text rate=12800 ..."`, the keys
 * are listed in qemu_mode.c), writes the params page itself, and then
 * runs exactly what it runs under our VMM. Without `hvwl` on the command
 * line it keeps the built-in self-test.
 *
 * Under QEMU the ucalls have no VMM to go to: heartbeats become lines on
 * the debug console port 0x402 (`-device isa-debugcon,iobase=0x402`),
 * "hb VCPU N SEQ\n" (N counts heartbeats, SEQ the vCPU's page writes),
 * which a host reader timestamps on arrival as our VMM
 * timestamps its heartbeats; "prefill done\n" follows once the prefill
 * (if asked for) is complete; DONE and ASSERT are printed on COM1 and the
 * debug port and end QEMU through isa-debug-exit (status 0 / 1).
 *
 * Only the boot CPU runs under QEMU: the other CPUs would need a
 * real-mode INIT/SIPI trampoline, which the image does not have (our VMM
 * starts them in long mode instead, ucall.h).
 */
#ifndef ARCH_X86_GUEST_QEMU_MODE_H
#define ARCH_X86_GUEST_QEMU_MODE_H

#include <stdint.h>

#include "arch/x86/guest/ucall.h"

#define HV_QEMU_DEBUGCON_PORT 0x402

/*
 * CPU 0, ring 0, when the params page holds no workload. Reads the PVH
 * command line at @start_info: returns 1 when it holds a workload ("hvwl
 * ..."), which is now in the params page; 0 when it holds none (run the
 * self-test). A bad workload command line is reported on COM1 and ends
 * QEMU with status 1.
 */
int hv_guest_qemu_boot(uint64_t start_info);

/*
 * Ring 0, from the #UD handler: returns 1 when the ucall was handled here
 * (workload mode under QEMU), 0 when it is for the VMM or the self-test.
 */
int hv_guest_qemu_ucall(const struct hv_ucall *uc);

#endif
