/* SPDX-License-Identifier: MIT */
/*
 * arm64 stage-2 translation descriptors (Arm ARM D8, VMSAv8-64, 4 KiB
 * granule, 48-bit output addresses) as an entry format for the soft MMU:
 *
 *   bits 1:0  0b11 table (levels 3..1) or page (level 0), 0b01 block
 *   bits 5:2  MemAttr (0b1111: Normal, inner/outer write-back)
 *   bits 7:6  S2AP: bit 6 read, bit 7 write
 *   bits 9:8  SH (0b11 inner shareable), bit 10 AF
 *   bits 47:12 output address, bit 51 DBM, bits 54:53 XN
 *
 * Dirty state follows FEAT_HAFDBS: a descriptor with DBM set and S2AP
 * read-only is "writable-clean"; the first write makes it S2AP read/write,
 * which is the dirty state. Without DBM, read-only means write-protected
 * (a write faults). So generically: W = S2AP.W or DBM, D = S2AP.W.
 */
#ifndef ARCH_ARM64_STAGE2_H
#define ARCH_ARM64_STAGE2_H

#include "hvcore/pte_fmt.h"

#define ARM64_S2_VALID (1ULL << 0)
#define ARM64_S2_TABLE (1ULL << 1) /* with VALID: table or page */
#define ARM64_S2_TYPE_MASK 3ULL
#define ARM64_S2_MEMATTR_WB (0xfULL << 2)
#define ARM64_S2AP_R (1ULL << 6)
#define ARM64_S2AP_W (1ULL << 7)
#define ARM64_S2_SH_INNER (3ULL << 8)
#define ARM64_S2_AF (1ULL << 10)
#define ARM64_S2_DBM (1ULL << 51)
#define ARM64_S2_XN (3ULL << 53)
#define ARM64_S2_ADDR_MASK 0x0000fffffffff000ULL

extern const struct hv_arch_pte_fmt arm64_s2_fmt;

#endif
