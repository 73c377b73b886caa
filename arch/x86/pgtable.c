// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "arch/x86/pgtable.h"

#define PTE_P 0x1ULL
#define PTE_W 0x2ULL
#define PTE_U 0x4ULL
#define PTE_PS 0x80ULL
#define PUW (PTE_P | PTE_W | PTE_U)
#define GIB (1ULL << 30)
#define TWO_MIB (2ULL << 20)
#define PDPT_SPAN (512 * GIB)
/* The first 4 GiB are always mapped in 2 MiB pages, as the guest's own
 * boot tables map them (arch/x86/guest/entry.S). */
#define SMALL_END (4 * GIB)

int x86_pgtable_size(uint64_t map_bytes, bool gbpages)
{
	uint64_t npdpt = HV_DIV_ROUND_UP(map_bytes, PDPT_SPAN);
	uint64_t npd = HV_DIV_ROUND_UP(map_bytes, GIB);

	if (!map_bytes || map_bytes % TWO_MIB || npdpt > 512 ||
	    (gbpages && map_bytes > SMALL_END && map_bytes % GIB))
		return -EINVAL;
	if (gbpages && npd > SMALL_END / GIB)
		npd = SMALL_END / GIB;
	return (int)(1 + npdpt + npd);
}

int x86_pgtable_build_identity(uint8_t *ram, uint64_t ram_bytes, gpa_t at,
			       uint64_t map_bytes, bool gbpages)
{
	int pages = x86_pgtable_size(map_bytes, gbpages);
	uint64_t npdpt = HV_DIV_ROUND_UP(map_bytes, PDPT_SPAN);
	gpa_t pd_gpa = at + (1 + npdpt) * HV_PAGE_SIZE;
	uint64_t *pml4;

	if (pages < 0 || at % HV_PAGE_SIZE || at >= ram_bytes ||
	    (uint64_t)pages * HV_PAGE_SIZE > ram_bytes - at)
		return -EINVAL;
	memset(ram + at, 0, (size_t)pages * HV_PAGE_SIZE);
	pml4 = (uint64_t *)(ram + at);
	for (uint64_t t = 0; t < npdpt; t++)
		pml4[t] = (at + (1 + t) * HV_PAGE_SIZE) | PUW;
	for (uint64_t g = 0; g * GIB < map_bytes; g++) {
		uint64_t *pdpt =
			(uint64_t *)(ram + at + (1 + g / 512) * HV_PAGE_SIZE);
		uint64_t *pd;

		if (gbpages && g * GIB >= SMALL_END) {
			pdpt[g % 512] = g * GIB | PUW | PTE_PS;
			continue;
		}
		pd = (uint64_t *)(ram + pd_gpa);
		pdpt[g % 512] = pd_gpa | PUW;
		pd_gpa += HV_PAGE_SIZE;
		for (uint64_t i = 0; i < 512; i++) {
			uint64_t addr = g * GIB + i * TWO_MIB;

			if (addr >= map_bytes)
				break;
			pd[i] = addr | PUW | PTE_PS;
		}
	}
	return pages;
}
