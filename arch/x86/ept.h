/* SPDX-License-Identifier: MIT */
/*
 * x86 EPT-style stage-2 entry format for the soft MMU (Intel SDM vol. 3,
 * "EPT paging-structure entries"), with EPT accessed/dirty flags enabled:
 *
 *   bit 0 R, bit 1 W, bit 2 X          any of them set: present
 *   bits 5:3 memory type (6 = WB)      leaves only
 *   bit 7 page size                    2 MiB / 1 GiB leaves
 *   bit 8 accessed, bit 9 dirty        leaves (set by "hardware": the vCPU)
 *   bits 51:12 address
 *
 * Dirty logging by PML relies on the D bit: the first write to a leaf with
 * D clear sets it and appends the GPA to the page-modification log.
 */
#ifndef ARCH_X86_EPT_H
#define ARCH_X86_EPT_H

#include "hvcore/pte_fmt.h"

#define X86_EPT_R (1ULL << 0)
#define X86_EPT_W (1ULL << 1)
#define X86_EPT_X (1ULL << 2)
#define X86_EPT_MT_WB (6ULL << 3)
#define X86_EPT_PS (1ULL << 7)
#define X86_EPT_A (1ULL << 8)
#define X86_EPT_D (1ULL << 9)
#define X86_EPT_ADDR_MASK 0x000ffffffffff000ULL

extern const struct hv_arch_pte_fmt x86_ept_fmt;

#endif
