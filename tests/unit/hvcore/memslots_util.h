/* SPDX-License-Identifier: MIT */
/* Helpers shared by the memslot test files. */
#ifndef TESTS_UNIT_HVCORE_MEMSLOTS_UTIL_H
#define TESTS_UNIT_HVCORE_MEMSLOTS_UTIL_H

#include "hvcore/memslots.h"
#include "tests/harness/hv_test.h"

#define HVA0 0x100000000000ULL

static inline struct hv_memslots *set_new(void)
{
	struct hv_memslots *set = NULL;

	CU_ASSERT_FATAL(hv_memslots_create(&set) == 0);
	return set;
}

static inline int add(struct hv_memslots *set, uint32_t id, gfn_t base,
	       uint64_t npages, uint32_t flags)
{
	struct hv_memslot_desc d = {
		.id = id,
		.flags = flags,
		.base_gfn = base,
		.npages = npages,
		.hva = HVA0 + ((uint64_t)id << 24),
	};

	return hv_memslots_add(set, &d);
}

/* Generation and count of the published snapshot. */
static inline uint64_t gen_of(struct hv_memslots *set, unsigned *count)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(set);
	uint64_t g = hv_memslots_generation(s);

	if (count)
		*count = hv_memslots_count(s);
	hv_memslots_read_unlock(set);
	return g;
}

#endif
