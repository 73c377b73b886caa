// SPDX-License-Identifier: MIT
#include "arch/x86/ept.h"

static uint64_t ept_mk_table(uint64_t table)
{
	/* Non-leaf entries grant everything; leaves restrict. */
	return (table & X86_EPT_ADDR_MASK) | X86_EPT_R | X86_EPT_W | X86_EPT_X;
}

static uint64_t ept_perm_bits(unsigned perm)
{
	uint64_t v = 0;

	if (perm & HV_PTE_R)
		v |= X86_EPT_R;
	if (perm & HV_PTE_W)
		v |= X86_EPT_W;
	if (perm & HV_PTE_D)
		v |= X86_EPT_D;
	return v;
}

static uint64_t ept_mk_leaf(uint64_t addr, unsigned level, unsigned perm)
{
	uint64_t v = (addr & X86_EPT_ADDR_MASK) | X86_EPT_X | X86_EPT_MT_WB |
		     X86_EPT_A | ept_perm_bits(perm);

	if (level > 0)
		v |= X86_EPT_PS;
	return v;
}

static bool ept_present(uint64_t pte)
{
	return (pte & (X86_EPT_R | X86_EPT_W | X86_EPT_X)) != 0;
}

static bool ept_is_leaf(uint64_t pte, unsigned level)
{
	if (!ept_present(pte))
		return false;
	return level == 0 || (pte & X86_EPT_PS);
}

static uint64_t ept_addr(uint64_t pte)
{
	return pte & X86_EPT_ADDR_MASK;
}

static unsigned ept_perm(uint64_t pte)
{
	unsigned p = 0;

	if (pte & X86_EPT_R)
		p |= HV_PTE_R;
	if (pte & X86_EPT_W)
		p |= HV_PTE_W;
	if (pte & X86_EPT_D)
		p |= HV_PTE_D;
	return p;
}

static uint64_t ept_set_perm(uint64_t pte, unsigned level, unsigned perm)
{
	(void)level;
	pte &= ~(X86_EPT_R | X86_EPT_W | X86_EPT_D);
	return pte | ept_perm_bits(perm);
}

const struct hv_arch_pte_fmt x86_ept_fmt = {
	.name = "x86-ept",
	.max_leaf_level = 2,
	.mk_table = ept_mk_table,
	.mk_leaf = ept_mk_leaf,
	.present = ept_present,
	.is_leaf = ept_is_leaf,
	.addr = ept_addr,
	.perm = ept_perm,
	.set_perm = ept_set_perm,
};
