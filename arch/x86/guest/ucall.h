/* SPDX-License-Identifier: MIT */
/*
 * The guest -> host call ("ucall") ABI of the x86 guest image, shared by the
 * guest (arch/x86/guest) and the VMM (hvcore/kvm). Freestanding: <stdint.h>
 * only.
 *
 * Ring-3 workload code fills a struct hv_ucall and executes `ud2` with its
 * address in %rdi. The guest's ring-0 #UD handler recognises the ud2,
 * writes the struct's guest-physical address (identity-mapped, < 4 GiB)
 * with `outl` to HV_UCALL_PORT, skips the ud2 and returns. Port I/O is done
 * in ring 0 because on the nested KVM of our build machines ring-3 port
 * I/O may raise #GP and `int $n` from ring 3 arrives as #UD
 * (docs/design-choices.md, "Host facts"); the ud2 path is known to work.
 * Ucalls are rare (progress, heartbeats every few ms, done/assert): each
 * costs a #UD and a VM exit.
 */
#ifndef ARCH_X86_GUEST_UCALL_H
#define ARCH_X86_GUEST_UCALL_H

#include <stdint.h>

#define HV_UCALL_PORT 0x1000u
#define HV_UCALL_MAX_ARGS 4
#define HV_UCALL_FILE_LEN 48

enum hv_ucall_cmd {
	HV_UCALL_INVALID = 0,
	HV_UCALL_SYNC,	    /* args[0..]: test-defined */
	HV_UCALL_HEARTBEAT, /* args[0] = writes done, args[1] = guest TSC */
	HV_UCALL_DONE,	    /* args[0] = hv_wl_run() result */
	HV_UCALL_ASSERT,    /* file:line, args[0..] = values */
	/* Sleep: args[0] = guest TSC deadline, args[1] = guest TSC now. The
	 * host sleeps until then (at most HV_UCALL_HALT_MAX_US; a pause,
	 * stop or kick ends it at once) and writes HV_UCALL_HALT_ACK into
	 * args[2]; a guest that finds args[2] still 0 was not heard (an
	 * older host) and spins instead. No event for generic code. */
	HV_UCALL_HALT,
	HV_UCALL_COUNT,
};

#define HV_UCALL_HALT_ACK 1u
#define HV_UCALL_HALT_MAX_US 2000u

struct hv_ucall {
	uint32_t cmd;  /* enum hv_ucall_cmd */
	uint32_t line; /* ASSERT: guest source line */
	uint64_t args[HV_UCALL_MAX_ARGS];
	char file[HV_UCALL_FILE_LEN]; /* ASSERT: NUL-terminated, truncated */
};

/*
 * Notes of the guest ELF beyond the PVH one: name "MIGRATED", type
 * HV_GUEST_NOTE_AP_ENTRY, 8-byte descriptor = guest-physical address of the
 * 64-bit AP entry. The VMM starts every vCPU but the first there, already
 * in long mode (CR3 = tables built by arch/x86 at HV_X86_AP_PT_GPA), with
 * %rdi = vCPU index, instead of sending INIT-SIPI.
 */
#define HV_GUEST_NOTE_NAME "MIGRATED"
#define HV_GUEST_NOTE_AP_ENTRY 1u

/* Guest-physical page where the VMM puts the PVH hvm_start_info. */
#define HV_X86_START_INFO_GPA 0x7000ULL
/* Guest-physical pages of the VMM-built identity tables of all RAM, which
 * the APs start on and the BSP switches to (arch/x86/pgtable.h): PML4,
 * PDPT(s), page directories; at least these 6 pages (4 GiB in 2 MiB
 * pages, U/W set), more for a VM above 3 GiB, up to the guest image. */
#define HV_X86_AP_PT_GPA 0x20000ULL
#define HV_X86_AP_PT_PAGES 6u

#endif
