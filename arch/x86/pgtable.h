/* SPDX-License-Identifier: MIT */
/*
 * Identity page tables for the x86 guest, built by the VMM: the tables the
 * APs start on (they enter in long mode, arch/x86/guest/ucall.h) and the
 * BSP switches to once in long mode (arch/x86/guest/entry.S), mapping all
 * of the guest's RAM (its own boot tables map the first 4 GiB only). 4-level,
 * 2 MiB leaves, present | writable | user on every level, because the
 * guest's workloads run at CPL 3 over all of RAM (docs/architecture.md).
 */
#ifndef ARCH_X86_PGTABLE_H
#define ARCH_X86_PGTABLE_H

#include "hvcore/types.h"

#include <stdbool.h>

/*
 * The number of pages x86_pgtable_build_identity() writes for @map_bytes,
 * or -EINVAL (0, not a multiple of 2 MiB, above 256 TiB; with @gbpages
 * and above 4 GiB, not a multiple of 1 GiB).
 */
int x86_pgtable_size(uint64_t map_bytes, bool gbpages);

/*
 * Write a PML4, one PDPT per 512 GiB and the page directories at @at
 * (page-aligned, inside @ram) mapping [0, @map_bytes): 2 MiB leaves, and
 * from 4 GiB up 1 GiB leaves when @gbpages (the guest's CPUID has
 * PDPE1GB), so that a large VM's tables stay small (they live below the
 * guest image). Returns the number of pages used, or -EINVAL (also when
 * they do not fit in @ram_bytes).
 */
int x86_pgtable_build_identity(uint8_t *ram, uint64_t ram_bytes, gpa_t at,
			       uint64_t map_bytes, bool gbpages);

#endif
