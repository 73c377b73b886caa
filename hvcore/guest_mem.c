// SPDX-License-Identifier: MIT
/*
 * Guest RAM: a memfd mapped shared, or private anonymous memory, 2 MiB
 * aligned (see guest_mem.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21 << 26)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_2M (2ULL << 20)


/*
 * Reserve @bytes + 2 MiB of address space and return a 2 MiB aligned
 * address inside it, so that the fixed mapping of the memfd lines up with
 * huge pages; the slack is unmapped again.
 */
static void *reserve_aligned(uint64_t bytes)
{
	uint64_t len = bytes + HUGE_2M;
	uint8_t *p = mmap(NULL, len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)HV_ALIGN_UP((uintptr_t)p, HUGE_2M);
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + bytes < p + len)
		munmap(a + bytes, (size_t)(p + len - (a + bytes)));
	return a;
}

/* Map @bytes of @fd shared at a 2 MiB aligned address into @mem. */
static int map_fd(struct hv_guest_mem *mem, int fd, uint64_t bytes,
		  enum hv_mem_backing backing)
{
	void *want, *p;
	int ret;

	want = reserve_aligned(bytes);
	if (!want)
		return -ENOMEM;
	p = mmap(want, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		munmap(want, bytes);
		hv_err("guest_mem", "op=mmap bytes=%llu backing=%s err=%d",
		       (unsigned long long)bytes, hv_mem_backing_name(backing),
		       ret);
		return ret;
	}
	if (backing == HV_BACKING_THP && madvise(p, bytes, MADV_HUGEPAGE) < 0)
		hv_warn("guest_mem", "op=madvise_hugepage err=%d", -errno);
	mem->fd = fd;
	mem->hva = p;
	mem->bytes = bytes;
	mem->backing = backing;
	return 0;
}

/*
 * Private anonymous memory at a 2 MiB aligned address, advised for
 * transparent huge pages: a first write then zeroes a 2 MiB page at once
 * (when the kernel has one free) instead of faulting 512 times.
 */
static int map_private(struct hv_guest_mem *mem, uint64_t bytes)
{
	void *want, *p;
	int ret;

	want = reserve_aligned(bytes);
	if (!want)
		return -ENOMEM;
	p = mmap(want, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
		 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		munmap(want, bytes);
		hv_err("guest_mem", "op=mmap bytes=%llu backing=anon err=%d",
		       (unsigned long long)bytes, ret);
		return ret;
	}
	if (madvise(p, bytes, MADV_HUGEPAGE) < 0)
		hv_warn("guest_mem", "op=madvise_hugepage err=%d", -errno);
	mem->fd = -1;
	mem->hva = p;
	mem->bytes = bytes;
	mem->backing = HV_BACKING_PRIVATE;
	return 0;
}

static bool args_ok(uint64_t bytes, enum hv_mem_backing backing)
{
	return bytes && bytes % HUGE_2M == 0 &&
	       backing != HV_BACKING_INVALID && backing < HV_BACKING_COUNT;
}

int hv_guest_mem_create(uint64_t bytes, enum hv_mem_backing backing,
			struct hv_guest_mem **out)
{
	struct hv_guest_mem *mem;
	unsigned mfd_flags = MFD_CLOEXEC;
	int fd, ret;

	if (!args_ok(bytes, backing))
		return -EINVAL;
	if (backing == HV_BACKING_HUGETLB)
		mfd_flags |= MFD_HUGETLB | MFD_HUGE_2MB;
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	if (backing == HV_BACKING_PRIVATE) {
		ret = map_private(mem, bytes);
		if (ret)
			goto err_free;
		*out = mem;
		return 0;
	}
	fd = memfd_create("hv-guest-ram", mfd_flags);
	if (fd < 0) {
		ret = -errno;
		hv_err("guest_mem", "op=memfd_create backing=%s err=%d",
		       hv_mem_backing_name(backing), ret);
		goto err_free;
	}
	if (ftruncate(fd, (off_t)bytes) < 0) {
		ret = -errno;
		hv_err("guest_mem", "op=ftruncate bytes=%llu err=%d",
		       (unsigned long long)bytes, ret);
		goto err_close;
	}
	ret = map_fd(mem, fd, bytes, backing);
	if (ret)
		goto err_close;
	*out = mem;
	return 0;

err_close:
	close(fd);
err_free:
	free(mem);
	return ret;
}

int hv_guest_mem_adopt(int fd, uint64_t bytes, enum hv_mem_backing backing,
		       struct hv_guest_mem **out)
{
	struct hv_guest_mem *mem;
	struct stat st;
	int own, ret;

	if (!args_ok(bytes, backing))
		return -EINVAL;
	if (backing == HV_BACKING_PRIVATE) {
		hv_err("guest_mem", "op=adopt err=%d reason=private_has_no_fd",
		       -EINVAL);
		return -EINVAL;
	}
	if (fd < 0) {
		hv_err("guest_mem", "op=adopt fd=%d err=%d reason=no_fd", fd,
		       -EINVAL);
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		hv_err("guest_mem", "op=adopt fd=%d err=%d reason=fstat", fd,
		       ret);
		return ret == -EBADF ? -EINVAL : ret;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != bytes) {
		hv_err("guest_mem",
		       "op=adopt fd=%d size=%lld want=%llu err=%d "
		       "reason=%s",
		       fd, (long long)st.st_size, (unsigned long long)bytes,
		       -EINVAL,
		       S_ISREG(st.st_mode) ? "size_mismatch" : "not_a_memfd");
		return -EINVAL;
	}
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (own < 0) {
		ret = -errno;
		hv_err("guest_mem", "op=adopt fd=%d err=%d reason=dup", fd,
		       ret);
		free(mem);
		return ret;
	}
	ret = map_fd(mem, own, bytes, backing);
	if (ret) {
		close(own);
		free(mem);
		return ret;
	}
	mem->adopted = true;
	*out = mem;
	return 0;
}

void hv_guest_mem_destroy(struct hv_guest_mem *mem)
{
	if (!mem)
		return;
	munmap(mem->hva, mem->bytes);
	if (mem->fd >= 0)
		close(mem->fd);
	free(mem);
}

int hv_guest_mem_populate(struct hv_guest_mem *mem)
{
	if (madvise(mem->hva, mem->bytes, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* Kernels before 5.14: touch one byte per page. */
	for (uint64_t off = 0; off < mem->bytes; off += HV_PAGE_SIZE)
		((volatile uint8_t *)mem->hva)[off] =
			((volatile uint8_t *)mem->hva)[off];
	return 0;
}

static void set_bits(uint64_t *bits, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		if (!(i % 64) && to - i >= 64) {
			bits[i / 64] = ~0ull;
			i += 63;
			continue;
		}
		bits[i / 64] |= 1ull << (i % 64);
	}
}

/* memfd: the file's data ranges (a page partly inside one counts). */
static int data_map_seek(int fd, uint64_t off, uint64_t npages, uint64_t *bits)
{
	uint64_t end = off + (npages << HV_PAGE_SHIFT), pos = off;

	while (pos < end) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;

		if (d < 0) {
			if (errno == ENXIO) /* no data after pos */
				return 0;
			if (errno == EINVAL) { /* no SEEK_DATA: all data */
				set_bits(bits, 0, npages);
				return 0;
			}
			return -errno;
		}
		if ((uint64_t)d >= end)
			return 0;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return -errno;
		set_bits(bits, ((uint64_t)d - off) >> HV_PAGE_SHIFT,
			 HV_DIV_ROUND_UP(HV_MIN((uint64_t)h, end) - off,
					 HV_PAGE_SIZE));
		pos = (uint64_t)h;
	}
	return 0;
}

/* Pages per mincore() call: a 64 KiB vector, 256 MiB of guest RAM. */
#define MINCORE_CHUNK 65536u

/* PRIVATE: resident pages (the zero page of a read-only touch included). */
static int data_map_mincore(uint8_t *host, uint64_t npages, uint64_t *bits)
{
	unsigned char *vec = malloc(HV_MIN(npages, (uint64_t)MINCORE_CHUNK));

	if (!vec)
		return -ENOMEM;
	for (uint64_t i = 0; i < npages; i += MINCORE_CHUNK) {
		uint64_t n = HV_MIN(npages - i, (uint64_t)MINCORE_CHUNK);

		if (mincore(host + (i << HV_PAGE_SHIFT), n << HV_PAGE_SHIFT,
			    vec) < 0) {
			int ret = -errno;

			free(vec);
			return ret;
		}
		for (uint64_t k = 0; k < n; k++)
			if (vec[k] & 1)
				bits[(i + k) / 64] |= 1ull << ((i + k) % 64);
	}
	free(vec);
	return 0;
}

int hv_guest_mem_data_map(const struct hv_guest_mem *mem, uint64_t offset,
			  uint64_t npages, uint64_t *bits)
{
	if (offset % HV_PAGE_SIZE || offset > mem->bytes ||
	    npages > (mem->bytes - offset) >> HV_PAGE_SHIFT)
		return -EINVAL;
	memset(bits, 0, HV_DIV_ROUND_UP(npages, 64) * sizeof(uint64_t));
	if (!npages)
		return 0;
	if (mem->fd < 0)
		return data_map_mincore(mem->hva + offset, npages, bits);
	return data_map_seek(mem->fd, offset, npages, bits);
}

int hv_guest_mem_discard(struct hv_guest_mem *mem)
{
	if (mem->fd < 0) {
		if (madvise(mem->hva, mem->bytes, MADV_DONTNEED) < 0)
			return -errno;
		return 0;
	}
	if (fallocate(mem->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      (off_t)mem->bytes) < 0)
		return -errno;
	return 0;
}
