// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "arch/x86/pgtable.h"

#define PTE_P 0x1ULL
#define PTE_W 0x2ULL
#define PTE_U 0x4ULL
#define PTE_PS 0x80ULL
#define GIB (1ULL << 30)
#define TWO_MIB (2ULL << 20)

int x86_pgtable_build_identity(uint8_t *ram, uint64_t ram_bytes, gpa_t at,
			       uint64_t map_bytes)
{
	uint64_t npd = HV_DIV_ROUND_UP(map_bytes, GIB);
	uint64_t pages = 2 + npd;
	uint64_t *pml4, *pdpt;

	if (!map_bytes || map_bytes % TWO_MIB || npd > 512 ||
	    at % HV_PAGE_SIZE || at >= ram_bytes ||
	    pages * HV_PAGE_SIZE > ram_bytes - at)
		return -EINVAL;
	memset(ram + at, 0, pages * HV_PAGE_SIZE);
	pml4 = (uint64_t *)(ram + at);
	pdpt = (uint64_t *)(ram + at + HV_PAGE_SIZE);
	pml4[0] = (at + HV_PAGE_SIZE) | PTE_P | PTE_W | PTE_U;
	for (uint64_t g = 0; g < npd; g++) {
		gpa_t pd_gpa = at + (2 + g) * HV_PAGE_SIZE;
		uint64_t *pd = (uint64_t *)(ram + pd_gpa);

		pdpt[g] = pd_gpa | PTE_P | PTE_W | PTE_U;
		for (uint64_t i = 0; i < 512; i++) {
			uint64_t addr = g * GIB + i * TWO_MIB;

			if (addr >= map_bytes)
				break;
			pd[i] = addr | PTE_P | PTE_W | PTE_U | PTE_PS;
		}
	}
	return (int)pages;
}
