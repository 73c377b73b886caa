/* SPDX-License-Identifier: MIT */
/*
 * hv_guest_mem: guest RAM, one shared memfd mapping so that it can be
 * handed over to another process (its fd) or re-mapped.
 *
 * Backings (enum hv_mem_backing, hvcore/vm.h):
 *   ANON     memfd, 4 KiB pages;
 *   THP      memfd + madvise(MADV_HUGEPAGE): transparent huge pages where
 *            shmem THP is enabled ("advise"), else silently 4 KiB;
 *   HUGETLB  memfd(MFD_HUGETLB | MFD_HUGE_2MB): needs reserved pages in
 *            /proc/sys/vm/nr_hugepages; -ENOMEM when there are too few.
 * The mapping is 2 MiB aligned in every case, so the guest's 2 MiB pages
 * can line up with the host's.
 *
 * Not thread-safe by itself; immutable after create.
 */
#ifndef HVCORE_GUEST_MEM_H
#define HVCORE_GUEST_MEM_H

#include "hvcore/types.h"
#include "hvcore/vm.h"

struct hv_guest_mem {
	/* immutable after create */
	int fd;
	uint8_t *hva;
	uint64_t bytes;
	enum hv_mem_backing backing;
};

/* @bytes multiple of 2 MiB. -EINVAL, -ENOMEM, -errno of memfd/mmap.
 * *out untouched on failure. */
int hv_guest_mem_create(uint64_t bytes, enum hv_mem_backing backing,
			struct hv_guest_mem **out);
/* destroy(NULL) is a no-op. */
void hv_guest_mem_destroy(struct hv_guest_mem *mem);

/* Fault every page in (MADV_POPULATE_WRITE, falling back to touching). */
int hv_guest_mem_populate(struct hv_guest_mem *mem);

const char *hv_mem_backing_name(enum hv_mem_backing backing);

#endif
