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
 * Adoption (local live update, migrated/vmm/handover.h): another process's
 * guest memfd, received over SCM_RIGHTS, is mapped as it stands by
 * hv_guest_mem_adopt(); nothing is written to it.
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
	bool adopted; /* mapped from a caller's fd (its contents kept) */
};

/* @bytes multiple of 2 MiB. -EINVAL, -ENOMEM, -errno of memfd/mmap.
 * *out untouched on failure. */
int hv_guest_mem_create(uint64_t bytes, enum hv_mem_backing backing,
			struct hv_guest_mem **out);
/*
 * Map an existing guest memfd instead of creating one. @fd is dup'd
 * (F_DUPFD_CLOEXEC; the caller keeps and closes its own); its size (fstat)
 * must equal @bytes, else -EINVAL with a log line naming both sizes. The
 * contents are neither zeroed nor populated. @backing says how it was
 * created (THP gets its madvise again; HUGETLB must be a hugetlb memfd or
 * the mmap fails). -EINVAL (bad fd, size, bytes), -ENOMEM, -errno of
 * dup/fstat/mmap. *out untouched on failure.
 */
int hv_guest_mem_adopt(int fd, uint64_t bytes, enum hv_mem_backing backing,
		       struct hv_guest_mem **out);

/* The memfd behind @mem, owned by @mem (closed by destroy): dup it to
 * hand it over. */
static inline int hv_guest_mem_fd(const struct hv_guest_mem *mem)
{
	return mem->fd;
}

/* destroy(NULL) is a no-op. */
void hv_guest_mem_destroy(struct hv_guest_mem *mem);

/* Fault every page in (MADV_POPULATE_WRITE, falling back to touching). */
int hv_guest_mem_populate(struct hv_guest_mem *mem);

const char *hv_mem_backing_name(enum hv_mem_backing backing);

#endif
