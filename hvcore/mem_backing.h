/* SPDX-License-Identifier: MIT */
/*
 * The kinds of guest RAM backing and their names, in hvcore's base
 * library: option parsing and logs name a backing without linking guest
 * memory (hvcore/guest_mem.h has the backings themselves).
 */
#ifndef HVCORE_MEM_BACKING_H
#define HVCORE_MEM_BACKING_H

/*
 * Guest RAM backings (hvcore/guest_mem.h). The values are kept in
 * records (the handover's Backing); new ones go at the end. User-facing
 * names (hv_mem_backing_name): ANON is "memfd" (its identifier predates
 * the private backing), PRIVATE is "anon".
 */
enum hv_mem_backing {
	HV_BACKING_INVALID = 0,
	HV_BACKING_ANON,    /* "memfd": memfd, 4 KiB pages */
	HV_BACKING_THP,	    /* "memfd-thp": memfd + madvise(MADV_HUGEPAGE) */
	HV_BACKING_HUGETLB, /* "hugetlb": memfd MFD_HUGETLB, 2 MiB (reserved) */
	HV_BACKING_PRIVATE, /* "anon": private anonymous + MADV_HUGEPAGE, no fd */
	HV_BACKING_COUNT,
};

/* "memfd", "memfd-thp", "hugetlb", "anon"; "?" for a bad value. */
const char *hv_mem_backing_name(enum hv_mem_backing backing);

/* The backing named @name (names above; "thp" is taken for "memfd-thp"),
 * HV_BACKING_INVALID for anything else. */
enum hv_mem_backing hv_mem_backing_parse(const char *name);

#endif
