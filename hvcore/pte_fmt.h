/* SPDX-License-Identifier: MIT */
/*
 * struct hv_arch_pte_fmt: the stage-2 entry format the soft MMU is built on.
 *
 * The soft MMU (hvcore/soft/mmu.h) is written once against this table of
 * callbacks and constants, like the KVM selftests' page-table walker is
 * written against per-architecture PTE masks. arch/x86/ept.c provides an
 * EPT-style format (R/W/X, memory type, page-size bit, A/D bits) and
 * arch/arm64/stage2.c an arm64 stage-2 descriptor format (valid/table bits,
 * MemAttr, S2AP, AF, DBM), and the whole MMU test suite runs on both.
 *
 * Geometry (both formats): 4 KiB granule, 4 levels of 512 entries, level 0
 * maps 4 KiB pages, level 1 2 MiB blocks, level 2 1 GiB blocks, level 3 is
 * the root (each root entry covers 512 GiB). Leaves are allowed at levels
 * 0..max_leaf_level.
 *
 * Addresses stored in entries are host-virtual addresses of 4 KiB-aligned
 * host pages (leaves) or of table pages; user-space host addresses fit the
 * output-address field of both formats (48 bits).
 *
 * Permissions are exchanged in a generic form, HV_PTE_* below. A format
 * that cannot represent a combination normalises it (arm64 folds "dirty"
 * into the stage-2 write permission with DBM, so a write-protected
 * descriptor always reads back clean). Generic code therefore never relies
 * on "dirty but not writable".
 *
 * All callbacks are pure functions of their arguments: no state, callable
 * from any thread, under any lock.
 */
#ifndef HVCORE_PTE_FMT_H
#define HVCORE_PTE_FMT_H

#include <stdbool.h>
#include <stdint.h>

#define HV_PTE_LEVELS 4
#define HV_PTE_ENTRIES 512
#define HV_PTE_LEVEL_BITS 9

/* Generic permissions. */
#define HV_PTE_R (1u << 0) /* readable (every present leaf is) */
#define HV_PTE_W (1u << 1) /* a write proceeds without a fault */
#define HV_PTE_D (1u << 2) /* written since last cleaned */

struct hv_arch_pte_fmt {
	const char *name;
	/* Highest level at which a leaf (block) is allowed: 2 = 1 GiB. */
	unsigned max_leaf_level;

	/* Entry pointing at the next-level table page at @table. */
	uint64_t (*mk_table)(uint64_t table);
	/* Leaf at @level mapping @addr (aligned to the level size). */
	uint64_t (*mk_leaf)(uint64_t addr, unsigned level, unsigned perm);
	/* Valid entry of any kind. */
	bool (*present)(uint64_t pte);
	/* Present entry that maps memory (page or block) at @level. */
	bool (*is_leaf)(uint64_t pte, unsigned level);
	/* Output address: the table page, or the base of the mapped range. */
	uint64_t (*addr)(uint64_t pte);
	/* Generic permissions of a leaf. */
	unsigned (*perm)(uint64_t pte);
	/* The same leaf with permissions @perm (address and kind kept). */
	uint64_t (*set_perm)(uint64_t pte, unsigned level, unsigned perm);
};

/* Shift of the range one entry covers at @level: 12, 21, 30, 39. */
static inline unsigned hv_pte_level_shift(unsigned level)
{
	return 12 + HV_PTE_LEVEL_BITS * level;
}

/* Index into the table at @level for guest-physical address @gpa. */
static inline unsigned hv_pte_index(uint64_t gpa, unsigned level)
{
	return (gpa >> hv_pte_level_shift(level)) & (HV_PTE_ENTRIES - 1);
}

#endif
