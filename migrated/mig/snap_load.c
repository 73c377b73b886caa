// SPDX-License-Identifier: MIT
#include "migrated/mig/snap_load.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/ram_layout.h"
#include "hvcore/time.h"
#include "hvcore/types.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/snap_disks.h"
#include "migrated/mig/snap_state.h"

#define COMP "mig.snap"
#define READ_CHUNK (8u << 20)
#define SLOTS_MAX 64u

static int pread_all(int fd, uint8_t *p, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EBADMSG;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Every data extent of @fd into @ram at the same offset. A file system
 * without SEEK_DATA reports the whole file as data: still correct. */
static int load_extents(int fd, uint8_t *ram, uint64_t size, uint64_t *bytes)
{
	off_t pos = 0;

	while ((uint64_t)pos < size) {
		off_t d = lseek(fd, pos, SEEK_DATA), h;

		if (d < 0)
			return errno == ENXIO ? 0 : -errno;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return -errno;
		if ((uint64_t)h > size)
			h = (off_t)size;
		/* Extents are file-system blocks: whole pages for a file
		 * written page by page, but round out to be sure. */
		d &= ~(off_t)(HV_PAGE_SIZE - 1);
		for (off_t o = d; o < h; o += READ_CHUNK) {
			size_t n = (size_t)HV_MIN((uint64_t)READ_CHUNK,
						  (uint64_t)(h - o));
			int ret = pread_all(fd, ram + o, n, o);

			if (ret)
				return ret;
			*bytes += n;
		}
		pos = h;
	}
	return 0;
}

static int vm_memmap(struct hv_vm *vm, struct mig_memmap **out)
{
	struct mig_memmap_slot ms[SLOTS_MAX];
	unsigned n = hv_vm_slot_count(vm);
	uint64_t first = 0;

	if (!n || n > SLOTS_MAX)
		return -EINVAL;
	for (unsigned k = 0; k < n; k++) {
		gfn_t g;

		hv_vm_slot_info(vm, k, &ms[k].id, &g, &ms[k].npages);
		ms[k].base_gfn = g;
		ms[k].host = hv_vm_ram(vm) + first * HV_PAGE_SIZE;
		first += ms[k].npages;
	}
	return mig_memmap_create(ms, n, out);
}

#define FAIL(r, ...)                                                         \
	do {                                                                 \
		ret = (r);                                                   \
		snprintf(why, why_len, __VA_ARGS__);                         \
		goto out;                                                    \
	} while (0)

/* A writable disk of the snapshot that another process writes (a VM
 * running on it, another restore of this snapshot) is refused: two kernels
 * on one file system corrupt it (snap_disks.h). */
static int disks_free(const struct hv_boot_cfg *b, char *why, size_t why_len)
{
	for (uint32_t i = 0; i < b->nr_disks; i++) {
		pid_t pid = 0;
		int ret;

		if (b->disk[i].read_only)
			continue;
		ret = mig_snap_disk_writer(b->disk[i].path, &pid);
		if (ret < 0) {
			snprintf(why, why_len, "disk %s: %s", b->disk[i].path,
				 strerror(-ret));
			return ret;
		}
		if (ret) {
			snprintf(why, why_len,
				 "disk %s is open for writing by process %d "
				 "(a VM running on it?): a restored guest "
				 "writing it too would corrupt it",
				 b->disk[i].path, (int)pid);
			return -EBUSY;
		}
	}
	return 0;
}

/* Hash RAM and compare with the state file's table, page by page. */
static int verify(struct hv_vm *vm, const struct mig_snap_state *ss,
		  const char *mpath, char *why, size_t why_len)
{
	uint64_t np = ss->npages, words = HV_DIV_ROUND_UP(np, 64), bad = 0;
	uint64_t first_bad = UINT64_MAX;
	uint64_t *data = calloc(words, 8), *tab = calloc(np, 8);
	uint8_t dig[MIG_DIGEST_LEN];
	struct mig_memmap *map = NULL;
	int ret;

	if (!data || !tab)
		FAIL(-ENOMEM, "no memory to verify %llu pages",
		     (unsigned long long)np);
	ret = hv_guest_mem_data_map(vm->mem, 0, np, data);
	if (!ret)
		ret = mig_hash_range(hv_vm_ram(vm), np, NULL, data, tab,
				     MIG_SNAP_LOAD_THREADS);
	if (ret)
		FAIL(ret, "hashing the loaded memory: %s", strerror(-ret));
	for (uint64_t i = 0; i < np; i++)
		if (tab[i] != ss->table[i] && !bad++)
			first_bad = i;
	if (bad) {
		struct hv_ram_layout rl = hv_ram_layout_std(ss->mem_bytes);
		uint64_t gpa = hv_ram_off_to_gpa(&rl, first_bad * HV_PAGE_SIZE);

		FAIL(-EBADMSG,
		     "%s is corrupted: %llu page(s) do not match their digest "
		     "in the state file, the first at RAM offset 0x%llx "
		     "(gfn 0x%llx)",
		     mpath, (unsigned long long)bad,
		     (unsigned long long)(first_bad * HV_PAGE_SIZE),
		     (unsigned long long)(gpa >> HV_PAGE_SHIFT));
	}
	ret = vm_memmap(vm, &map);
	if (!ret)
		ret = mig_digest_table(map, ss->table, dig);
	if (ret)
		FAIL(ret, "the memory digest: %s", strerror(-ret));
	if (memcmp(dig, ss->digest, MIG_DIGEST_LEN))
		FAIL(-EBADMSG, "the state file's page table does not match its "
			       "memory digest");
out:
	mig_memmap_destroy(map);
	free(data);
	free(tab);
	return ret;
}

int mig_snap_load(const char *dir, const char *name,
		  const struct hv_vm_cfg *base, struct hv_vm **out,
		  struct mig_snap_load_stats *st, char *why, size_t why_len)
{
	struct mig_snap_state ss = { 0 };
	char spath[PATH_MAX], mpath[PATH_MAX];
	uint64_t t0 = hv_now_ns();
	struct hv_vm *vm = NULL;
	struct stat sb;
	int fd = -1, ret;

	memset(st, 0, sizeof(*st));
	if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX - 16) {
		snprintf(why, why_len,
			 "snapshot directory '%s' is not an absolute path",
			 dir ? dir : "");
		return -EINVAL;
	}
	snprintf(spath, sizeof(spath), "%.4000s/" MIG_SNAP_STATE_FILE, dir);
	snprintf(mpath, sizeof(mpath), "%.4000s/" MIG_SNAP_MEMORY_FILE, dir);
	ret = mig_snap_state_read(spath, base, &ss, why, why_len);
	if (ret)
		return ret;
	ret = disks_free(&ss.cfg.boot, why, why_len);
	if (ret)
		goto out;
	fd = open(mpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		FAIL(-errno, "cannot open %s: %s", mpath, strerror(errno));
	if (fstat(fd, &sb))
		FAIL(-errno, "cannot stat %s: %s", mpath, strerror(errno));
	if ((uint64_t)sb.st_size != ss.mem_bytes)
		FAIL(-EBADMSG, "%s is %s: %lld bytes, the state file says %llu",
		     mpath, (uint64_t)sb.st_size < ss.mem_bytes
				    ? "truncated"
				    : "longer than the VM's RAM",
		     (long long)sb.st_size, (unsigned long long)ss.mem_bytes);
	snprintf(ss.cfg.name, sizeof(ss.cfg.name), "%s", name);
	if (ss.cfg.boot.kernel[0] && base)
		snprintf(ss.cfg.boot.console_log,
			 sizeof(ss.cfg.boot.console_log), "%s",
			 base->boot.console_log);
	ret = hv_vm_create(&ss.cfg, &vm);
	if (ret)
		FAIL(ret, "creating VM '%s' (%s, %llu MiB, %u vCPUs): %s", name,
		     hv_accel_kind_name(ss.cfg.accel),
		     (unsigned long long)(ss.mem_bytes >> 20), ss.cfg.nr_vcpus,
		     strerror(-ret));
	ret = hv_guest_mem_discard(vm->mem);
	if (ret)
		FAIL(ret, "emptying the new VM's RAM: %s", strerror(-ret));
	ret = load_extents(fd, hv_vm_ram(vm), ss.mem_bytes, &st->bytes_read);
	if (ret)
		FAIL(ret, "reading %s: %s", mpath, strerror(-ret));
	ret = verify(vm, &ss, mpath, why, why_len);
	if (ret)
		goto out;
	ret = hv_vm_state_restore(vm, &ss.vmstate);
	if (ret)
		FAIL(ret, "%s: the VM state does not load into this VM: %s",
		     spath, strerror(-ret));
	st->pages = ss.npages;
	st->created_unix_ms = ss.created_unix_ms;
	snprintf(st->origin, sizeof(st->origin), "%s", ss.name);
	st->duration_ns = hv_now_ns() - t0;
	hv_info(COMP,
		"event=snapshot_loaded vm=%s dir=%s origin=%s pages=%llu "
		"read=%llu ms=%.1f",
		name, dir, ss.name, (unsigned long long)ss.npages,
		(unsigned long long)st->bytes_read,
		(double)st->duration_ns / 1e6);
	*out = vm;
	vm = NULL;
	ret = 0;
out:
	hv_vm_destroy(vm);
	if (fd >= 0)
		close(fd);
	mig_snap_state_fini(&ss);
	return ret;
}
