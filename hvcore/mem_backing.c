// SPDX-License-Identifier: MIT
/*
 * Names of the guest RAM backings (mem_backing.h).
 */
#include <string.h>

#include "hvcore/mem_backing.h"

static const char *const backing_names[HV_BACKING_COUNT] = {
	[HV_BACKING_INVALID] = "invalid",
	[HV_BACKING_ANON] = "memfd",
	[HV_BACKING_THP] = "memfd-thp",
	[HV_BACKING_HUGETLB] = "hugetlb",
	[HV_BACKING_PRIVATE] = "anon",
};

enum hv_mem_backing hv_mem_backing_parse(const char *name)
{
	if (!name)
		return HV_BACKING_INVALID;
	if (!strcmp(name, "thp"))
		return HV_BACKING_THP;
	for (unsigned i = HV_BACKING_INVALID + 1; i < HV_BACKING_COUNT; i++)
		if (!strcmp(name, backing_names[i]))
			return (enum hv_mem_backing)i;
	return HV_BACKING_INVALID;
}

const char *hv_mem_backing_name(enum hv_mem_backing backing)
{
	if ((unsigned)backing >= HV_BACKING_COUNT)
		return "?";
	return backing_names[backing];
}
