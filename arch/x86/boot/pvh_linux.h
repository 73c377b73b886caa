/* SPDX-License-Identifier: MIT */
/*
 * Linux on x86 through its PVH entry (an uncompressed ELF vmlinux built
 * with CONFIG_PVH, as Debian's is; Firecracker and Cloud Hypervisor boot
 * it the same way): no decompressor runs in the guest, and no zero page
 * is written by us, the kernel builds its own from the start info.
 *
 * What it writes, into guest RAM given as one host buffer in RAM-offset
 * order with its hv_ram_layout:
 *   - the PT_LOAD segments at their physical addresses (arch/x86/pvh.h:
 *     every one inside RAM below the hole, the Xen PHYS32_ENTRY note
 *     inside them);
 *   - the command line at X86_BOOT_CMDLINE_GPA (bzimage.h's low map);
 *   - the initrd as high as it fits below the hole and 4 GiB, above the
 *     kernel;
 *   - struct x86_hvm_start_info (version 1) at X86_BOOT_ZERO_PAGE_GPA,
 *     followed by the initrd as module 0 and the e820 map of the layout
 *     (x86_e820_build) as its memory map.
 * The vCPU state of the entry (32-bit protected mode, flat segments,
 * paging off, EBX = the start info) is the accelerator's
 * (hvcore/kvm/kvm_linux.c).
 */
#ifndef ARCH_X86_BOOT_PVH_LINUX_H
#define ARCH_X86_BOOT_PVH_LINUX_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/boot/bzimage.h"
#include "hvcore/ram_layout.h"

/* Whether @file starts as an ELF file does (then it is booted as PVH,
 * else as a bzImage). */
bool x86_is_elf(const void *file, uint64_t size);

struct x86_pvh_linux_entry {
	uint32_t entry32;    /* EIP at the entry (the PHYS32_ENTRY note) */
	uint64_t start_info; /* EBX at the entry */
	uint64_t kernel_end; /* end of the highest PT_LOAD segment */
	uint64_t initrd_gpa; /* 0 without an initrd */
};

/*
 * Load @in (its kernel an ELF vmlinux) into @ram and write the command
 * line and the start info. -ENOEXEC (not an x86-64 ELF, no PVH entry
 * note, a segment outside RAM below the hole), -E2BIG (command line of
 * X86_BOOT_CMDLINE_MAX or more), -ENOSPC (the initrd does not fit).
 * Each logged once.
 */
int x86_pvh_linux_load(uint8_t *ram, const struct hv_ram_layout *l,
		       const struct x86_linux_boot *in,
		       struct x86_pvh_linux_entry *out);

#endif
