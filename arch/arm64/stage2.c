// SPDX-License-Identifier: MIT
#include "arch/arm64/stage2.h"

static uint64_t s2_mk_table(uint64_t table)
{
	return (table & ARM64_S2_ADDR_MASK) | ARM64_S2_VALID | ARM64_S2_TABLE;
}

/*
 * Generic permissions to S2AP/DBM. "Dirty without write" cannot be
 * represented (dirty is the write permission itself), so it reads back as
 * write-protected and clean.
 */
static uint64_t s2_perm_bits(unsigned perm)
{
	uint64_t v = 0;

	if (perm & HV_PTE_R)
		v |= ARM64_S2AP_R;
	if (perm & HV_PTE_W) {
		v |= ARM64_S2_DBM;
		if (perm & HV_PTE_D)
			v |= ARM64_S2AP_W;
	}
	return v;
}

static uint64_t s2_mk_leaf(uint64_t addr, unsigned level, unsigned perm)
{
	uint64_t v = (addr & ARM64_S2_ADDR_MASK) | ARM64_S2_MEMATTR_WB |
		     ARM64_S2_SH_INNER | ARM64_S2_AF | s2_perm_bits(perm);

	/* Pages (level 0) use the table encoding; blocks use 0b01. */
	v |= level == 0 ? ARM64_S2_VALID | ARM64_S2_TABLE : ARM64_S2_VALID;
	return v;
}

static bool s2_present(uint64_t pte)
{
	return (pte & ARM64_S2_VALID) != 0;
}

static bool s2_is_leaf(uint64_t pte, unsigned level)
{
	uint64_t type = pte & ARM64_S2_TYPE_MASK;

	if (level == 0)
		return type == (ARM64_S2_VALID | ARM64_S2_TABLE);
	return type == ARM64_S2_VALID;
}

static uint64_t s2_addr(uint64_t pte)
{
	return pte & ARM64_S2_ADDR_MASK;
}

static unsigned s2_perm(uint64_t pte)
{
	unsigned p = 0;

	if (pte & ARM64_S2AP_R)
		p |= HV_PTE_R;
	if (pte & (ARM64_S2AP_W | ARM64_S2_DBM))
		p |= HV_PTE_W;
	if (pte & ARM64_S2AP_W)
		p |= HV_PTE_D;
	return p;
}

static uint64_t s2_set_perm(uint64_t pte, unsigned level, unsigned perm)
{
	(void)level;
	pte &= ~(ARM64_S2AP_R | ARM64_S2AP_W | ARM64_S2_DBM);
	return pte | s2_perm_bits(perm);
}

const struct hv_arch_pte_fmt arm64_s2_fmt = {
	.name = "arm64-s2",
	.max_leaf_level = 2,
	.mk_table = s2_mk_table,
	.mk_leaf = s2_mk_leaf,
	.present = s2_present,
	.is_leaf = s2_is_leaf,
	.addr = s2_addr,
	.perm = s2_perm,
	.set_perm = s2_set_perm,
};
