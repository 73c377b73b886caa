/* SPDX-License-Identifier: MIT */
/*
 * hv_guest_mem: guest RAM, one 2 MiB aligned mapping: a shared memfd
 * (which can be handed over to another process or re-mapped) or private
 * anonymous memory (no fd, cheapest first touch).
 *
 * Backings (enum hv_mem_backing, hvcore/vm.h; user names in quotes):
 *   ANON     "memfd": memfd, 4 KiB pages;
 *   THP      "memfd-thp": memfd + madvise(MADV_HUGEPAGE): transparent huge
 *            pages where shmem THP is enabled ("advise"), else silently
 *            4 KiB;
 *   HUGETLB  "hugetlb": memfd(MFD_HUGETLB | MFD_HUGE_2MB): needs reserved
 *            pages in /proc/sys/vm/nr_hugepages; -ENOMEM when too few;
 *   PRIVATE  "anon": MAP_PRIVATE | MAP_ANONYMOUS + MADV_HUGEPAGE, fd -1:
 *            2 MiB pages where anonymous THP is "madvise" or "always" and
 *            the kernel has free huge pages (QEMU's default guest RAM).
 *            Nothing that needs an fd works on it: no adoption, so no
 *            local live update (migrated/vmm/update.c refuses it).
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
 * the mmap fails; PRIVATE has no fd: -EINVAL). -EINVAL (bad fd, size,
 * bytes), -ENOMEM, -errno of dup/fstat/mmap. *out untouched on failure.
 */
int hv_guest_mem_adopt(int fd, uint64_t bytes, enum hv_mem_backing backing,
		       struct hv_guest_mem **out);

/* The memfd behind @mem, owned by @mem (closed by destroy): dup it to
 * hand it over. -1 for HV_BACKING_PRIVATE. */
static inline int hv_guest_mem_fd(const struct hv_guest_mem *mem)
{
	return mem->fd;
}

/* destroy(NULL) is a no-op. */
void hv_guest_mem_destroy(struct hv_guest_mem *mem);

/* Fault every page in (MADV_POPULATE_WRITE, falling back to touching). */
int hv_guest_mem_populate(struct hv_guest_mem *mem);

/*
 * Data map of pages [0, @npages) from byte @offset of @mem: bit i set when
 * page i has (or may have) data, clear when it certainly reads as zeros
 * without ever having been written, so that hashing and sending can skip
 * it without faulting it in. @bits holds ceil(npages / 64) words.
 *   memfd backings: SEEK_DATA / SEEK_HOLE (a file system without them
 *   sets every bit);
 *   PRIVATE: mincore(): a page never touched is not resident. A page only
 *   read maps the shared zero page and counts as resident, i.e. data: it
 *   is then read and sent as a zero page (one bit on the wire). A swapped
 *   out page is not resident either, so with swap this would call data a
 *   hole: PRIVATE guest RAM must not be swapped (mlock, or no swap), as
 *   for any VM whose migration relies on this map.
 * -EINVAL (range outside @mem, offset not page-aligned), -errno of
 * lseek/mincore.
 */
int hv_guest_mem_data_map(const struct hv_guest_mem *mem, uint64_t offset,
			  uint64_t npages, uint64_t *bits);

/*
 * Drop every page of @mem so that all of it reads as zeros again and costs
 * no memory (memfd: punch a hole; PRIVATE: MADV_DONTNEED). The data map
 * is all holes afterwards. Nothing may access the memory meanwhile.
 * 0 or -errno of fallocate/madvise.
 */
int hv_guest_mem_discard(struct hv_guest_mem *mem);



#endif
