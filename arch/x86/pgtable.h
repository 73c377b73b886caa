/* SPDX-License-Identifier: MIT */
/*
 * Identity page tables for the x86 guest, built by the VMM: the tables the
 * APs start on (they enter in long mode, arch/x86/guest/ucall.h). 4-level,
 * 2 MiB leaves, present | writable | user on every level, because the
 * guest's workloads run at CPL 3 over all of RAM (docs/architecture.md).
 */
#ifndef ARCH_X86_PGTABLE_H
#define ARCH_X86_PGTABLE_H

#include "hvcore/types.h"

/*
 * Write PML4, PDPT and ceil(@map_bytes / 1 GiB) page directories at @at
 * (page-aligned, inside @ram) mapping [0, @map_bytes) (a multiple of
 * 2 MiB, at most 512 GiB). Returns the number of pages used, or -EINVAL.
 */
int x86_pgtable_build_identity(uint8_t *ram, uint64_t ram_bytes, gpa_t at,
			       uint64_t map_bytes);

#endif
