// SPDX-License-Identifier: MIT
/*
 * mig_snap_save (snap_save.h). The ordering that makes a live snapshot
 * consistent, for one page:
 *
 *   harvest + fetch_clear (bit cleared, logging re-armed for the page)
 *   copy the page into the run buffer, hash the copy, pwrite the copy
 *   guest writes the page again      -> its bit is set again
 *   next pass (or the paused last)   -> copied, hashed, written again
 *
 * so the file holds, for every page, its content at the pause: a write
 * that races the copy is always caught by a later pass, and the last pass
 * runs with every vCPU parked. The hash is of the bytes written, never of
 * guest memory read a second time.
 */
#include "migrated/mig/snap_save.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/time.h"
#include "hvcore/types.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/snap_state.h"

#define COMP "mig.snap"
#define RUN_PAGES 64u	   /* contiguous pages written by one pwrite */
#define FETCH_PAGES 32768u /* pages per hv_vm_dirty_fetch_clear() */
#define SLOTS_MAX 64u

struct snap_slot {
	uint32_t id;
	uint64_t first; /* RAM page index of its first page */
	uint64_t npages;
};

struct snap {
	struct hv_vm *vm;
	const uint8_t *ram;
	uint64_t npages;
	int fd; /* the memory file */
	struct snap_slot slot[SLOTS_MAX];
	unsigned nslots;
	uint64_t *table;   /* page hashes, RAM order */
	uint64_t *written; /* pages with data in the file */
	uint64_t *dirty;   /* pages to write in the next pass */
	uint64_t *fetch;   /* FETCH_PAGES bits */
	uint8_t *run;	   /* RUN_PAGES pages */
	uint64_t run_first, run_n;
	uint64_t zero_hash;
	struct mig_snap_stats *st;
};

static bool bit_test(const uint64_t *b, uint64_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

static bool page_is_zero(const uint8_t *p)
{
	const uint64_t *w = (const uint64_t *)p;

	for (size_t i = 0; i < HV_PAGE_SIZE / 8; i++)
		if (w[i])
			return false;
	return true;
}

static int pwrite_all(int fd, const uint8_t *p, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int run_flush(struct snap *s)
{
	int ret;

	if (!s->run_n)
		return 0;
	ret = pwrite_all(s->fd, s->run, s->run_n * HV_PAGE_SIZE,
			 (off_t)(s->run_first * HV_PAGE_SIZE));
	s->st->bytes_written += s->run_n * HV_PAGE_SIZE;
	s->run_n = 0;
	return ret;
}

/* A page now zero that an earlier pass wrote: give the file a hole. */
static int punch(struct snap *s, uint64_t i)
{
	static const uint8_t zero[HV_PAGE_SIZE];
	off_t off = (off_t)(i * HV_PAGE_SIZE);

	if (!fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
		       HV_PAGE_SIZE))
		return 0;
	return pwrite_all(s->fd, zero, HV_PAGE_SIZE, off);
}

/*
 * The one read of guest memory while the guest runs: a vCPU may write the
 * page during the copy. That race is the design (the dirty log has the
 * page's bit set again, and a later pass, at the latest the paused one,
 * copies it again), as for the migration's sender; tests/tsan.supp names
 * this function for it (the guest's side of such a report has no stack).
 */
static __attribute__((noinline)) void snap_copy_guest_page(uint8_t *dst,
							  const uint8_t *src)
{
	memcpy(dst, src, HV_PAGE_SIZE);
}

static int write_page(struct snap *s, uint64_t i)
{
	uint8_t *dst;
	int ret;

	if (s->run_n && (i != s->run_first + s->run_n || s->run_n == RUN_PAGES)) {
		ret = run_flush(s);
		if (ret)
			return ret;
	}
	if (!s->run_n)
		s->run_first = i;
	dst = s->run + s->run_n * HV_PAGE_SIZE;
	snap_copy_guest_page(dst, s->ram + i * HV_PAGE_SIZE);
	if (page_is_zero(dst)) {
		ret = run_flush(s);
		s->table[i] = s->zero_hash;
		if (!ret && bit_test(s->written, i)) {
			ret = punch(s, i);
			s->written[i / 64] &= ~(1ull << (i % 64));
		}
		return ret;
	}
	s->table[i] = mig_page_hash(dst);
	s->written[i / 64] |= 1ull << (i % 64);
	s->run_n++;
	s->st->pages_written++;
	return 0;
}

/* Write every page whose bit is set in @sel, and clear @sel. */
static int write_pass(struct snap *s, uint64_t *sel, uint64_t *count)
{
	uint64_t n = 0;
	int ret = 0;

	for (uint64_t w = 0; w < HV_DIV_ROUND_UP(s->npages, 64) && !ret; w++) {
		uint64_t bits = sel[w];

		sel[w] = 0;
		while (bits && !ret) {
			uint64_t i = w * 64 + (uint64_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (i >= s->npages)
				break;
			ret = write_page(s, i);
			n++;
		}
	}
	if (!ret)
		ret = run_flush(s);
	s->st->passes++;
	if (count)
		*count = n;
	return ret;
}

/* Move the dirty log into s->dirty (OR). Returns the pages now set. */
static int64_t harvest(struct snap *s)
{
	int64_t got = hv_vm_dirty_harvest(s->vm);
	uint64_t total = 0;

	if (got < 0)
		return got;
	for (unsigned k = 0; k < s->nslots; k++) {
		const struct snap_slot *sl = &s->slot[k];

		for (uint64_t f = 0; f < sl->npages; f += FETCH_PAGES) {
			uint64_t cnt = HV_MIN((uint64_t)FETCH_PAGES,
					      sl->npages - f);
			uint64_t *dst = s->dirty + (sl->first + f) / 64;
			int64_t n = hv_vm_dirty_fetch_clear(s->vm, sl->id, f,
							    cnt, s->fetch);

			if (n < 0)
				return n;
			if (!n)
				continue;
			for (uint64_t w = 0; w < HV_DIV_ROUND_UP(cnt, 64); w++)
				dst[w] |= s->fetch[w];
		}
	}
	for (uint64_t w = 0; w < HV_DIV_ROUND_UP(s->npages, 64); w++)
		total += (uint64_t)__builtin_popcountll(s->dirty[w]);
	return (int64_t)total;
}

/* The engine's choice (source_setup.c): KVM's ring or bitmap, the soft
 * accelerator's PML or, where it has none, write protection. */
static int log_start(struct hv_vm *vm)
{
	int ret;

	if (vm->cfg.accel == HV_ACCEL_KVM)
		return hv_vm_dirty_log_start(vm, vm->cfg.dirty_ring_entries
							 ? HV_DIRTY_RING
							 : HV_DIRTY_BITMAP);
	ret = hv_vm_dirty_log_start(vm, HV_DIRTY_PML);
	if (ret == -EOPNOTSUPP)
		ret = hv_vm_dirty_log_start(vm, HV_DIRTY_WP);
	return ret;
}

static int snap_init(struct snap *s, struct hv_vm *vm)
{
	uint64_t words;

	s->vm = vm;
	s->ram = hv_vm_ram(vm);
	s->npages = vm->cfg.mem_bytes / HV_PAGE_SIZE;
	s->nslots = hv_vm_slot_count(vm);
	s->zero_hash = mig_zero_page_hash();
	if (!s->ram || !s->nslots || s->nslots > SLOTS_MAX)
		return -EINVAL;
	for (unsigned k = 0, first = 0; k < s->nslots; k++) {
		gfn_t g;

		hv_vm_slot_info(vm, k, &s->slot[k].id, &g, &s->slot[k].npages);
		s->slot[k].first = first;
		first += (unsigned)s->slot[k].npages;
	}
	words = HV_DIV_ROUND_UP(s->npages, 64);
	s->table = calloc(s->npages, 8);
	s->written = calloc(words, 8);
	s->dirty = calloc(words, 8);
	s->fetch = calloc(FETCH_PAGES / 64, 8);
	s->run = aligned_alloc(HV_PAGE_SIZE, RUN_PAGES * HV_PAGE_SIZE);
	if (!s->table || !s->written || !s->dirty || !s->fetch || !s->run)
		return -ENOMEM;
	/* A page no pass writes is a hole: it reads, and hashes, as zeros. */
	for (uint64_t i = 0; i < s->npages; i++)
		s->table[i] = s->zero_hash;
	return 0;
}

static void snap_fini(struct snap *s)
{
	free(s->table);
	free(s->written);
	free(s->dirty);
	free(s->fetch);
	free(s->run);
	if (s->fd >= 0)
		close(s->fd);
}

/* The memory digest of the table (digest.h) over the VM's slots. */
static int table_digest(struct snap *s, uint8_t out[MIG_DIGEST_LEN])
{
	struct mig_memmap_slot ms[SLOTS_MAX];
	struct mig_memmap *map;
	int ret;

	for (unsigned k = 0; k < s->nslots; k++) {
		gfn_t g;
		uint64_t np;

		hv_vm_slot_info(s->vm, k, &ms[k].id, &g, &np);
		ms[k].base_gfn = g;
		ms[k].npages = np;
		ms[k].host = (uint8_t *)s->ram + s->slot[k].first * HV_PAGE_SIZE;
	}
	ret = mig_memmap_create(ms, s->nslots, &map);
	if (ret)
		return ret;
	ret = mig_digest_table(map, s->table, out);
	mig_memmap_destroy(map);
	return ret;
}

/* The state file: layout, VM state, the table and its digest. */
static int write_state(struct snap *s, const char *name, const char *path,
		       char *why, size_t why_len)
{
	uint8_t digest[MIG_DIGEST_LEN], *packed = NULL;
	struct hv_blob vst = { 0 };
	Mig__VmLayout *l = NULL;
	size_t plen = 0;
	struct stat sb;
	int ret;

	ret = hv_vm_state_save(s->vm, &vst);
	if (ret) {
		snprintf(why, why_len, "saving the VM state: %s",
			 strerror(-ret));
		return ret;
	}
	ret = mig_layout_build(s->vm, name, &l);
	if (!ret) {
		plen = mig__vm_layout__get_packed_size(l);
		packed = malloc(plen ? plen : 1);
		if (packed)
			mig__vm_layout__pack(l, packed);
		else
			ret = -ENOMEM;
	}
	if (!ret)
		ret = table_digest(s, digest);
	if (ret)
		snprintf(why, why_len, "describing the VM: %s", strerror(-ret));
	if (!ret) {
		ret = mig_snap_state_write(path, s->vm->cfg.mem_bytes, packed,
					   plen, &vst, s->table, digest,
					   hv_now_unix_ns() / 1000000);
		if (ret)
			snprintf(why, why_len, "writing %s: %s", path,
				 strerror(-ret));
	}
	if (!ret && !stat(path, &sb)) {
		s->st->state_bytes = (uint64_t)sb.st_size;
		s->st->bytes_written += (uint64_t)sb.st_size;
	}
	mig_layout_free(l);
	free(packed);
	free(vst.data);
	return ret;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

static void remove_dir(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%.4000s/" MIG_SNAP_MEMORY_FILE, dir);
	unlink(p);
	snprintf(p, sizeof(p), "%.4000s/" MIG_SNAP_STATE_FILE, dir);
	unlink(p);
	if (rmdir(dir) && errno != ENOENT)
		hv_warn(COMP, "event=snapshot_old_kept dir=%s err=%d", dir,
			-errno);
}

/* @tmp replaces @dir; the old @dir, if any, is removed. */
static int publish(const char *tmp, const char *dir, const char *parent)
{
	int ret;

	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE)) {
		ret = fsync_path(parent, O_RDONLY | O_DIRECTORY);
		remove_dir(tmp); /* the old snapshot, now under tmp's name */
		return ret;
	}
	if (errno != ENOENT && errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (rename(tmp, dir))
		return -errno;
	return fsync_path(parent, O_RDONLY | O_DIRECTORY);
}

static int file_blocks(const char *dir, const char *name, uint64_t *bytes)
{
	char p[PATH_MAX];
	struct stat sb;

	snprintf(p, sizeof(p), "%.4000s/%.32s", dir, name);
	if (stat(p, &sb))
		return -errno;
	*bytes += (uint64_t)sb.st_blocks * 512;
	return 0;
}

#define FAIL(r, ...)                                                         \
	do {                                                                 \
		ret = (r);                                                   \
		snprintf(why, why_len, __VA_ARGS__);                         \
		goto out;                                                    \
	} while (0)

int mig_snap_save(struct hv_vm *vm, const char *name, const char *dir,
		  const struct mig_snap_opts *opts, struct mig_snap_stats *st,
		  char *why, size_t why_len)
{
	unsigned max_passes = opts->max_passes ? opts->max_passes : 8;
	uint64_t small = opts->small_pages ? opts->small_pages : 256;
	char tmp[PATH_MAX], path[PATH_MAX], dcopy[PATH_MAX], bcopy[PATH_MAX];
	char parent[PATH_MAX];
	enum hv_vm_state vs = hv_vm_get_state(vm);
	struct snap s = { .fd = -1 };
	bool logging = false, paused = false;
	uint64_t t0 = hv_now_ns(), tp = 0, n = 0;
	int64_t got;
	int ret;

	memset(st, 0, sizeof(*st));
	s.st = st;
	if (vs != HV_VM_RUNNING && vs != HV_VM_PAUSED && vs != HV_VM_CREATED) {
		snprintf(why, why_len, "the VM is stopped: nothing to snapshot");
		return -EBUSY;
	}
	if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX - 64) {
		snprintf(why, why_len,
			 "snapshot directory '%s' is not an absolute path",
			 dir ? dir : "");
		return -EINVAL;
	}
	snprintf(dcopy, sizeof(dcopy), "%s", dir);
	snprintf(bcopy, sizeof(bcopy), "%s", dir);
	snprintf(parent, sizeof(parent), "%s", dirname(dcopy));
	snprintf(tmp, sizeof(tmp), "%.2000s/.%.1900s.partial-%d", parent,
		 basename(bcopy), (int)getpid());
	st->live = vs == HV_VM_RUNNING;

	ret = snap_init(&s, vm);
	if (ret)
		FAIL(ret, "VM memory: %s", strerror(-ret));
	remove_dir(tmp); /* a leftover of a snapshot killed in this pid */
	if (mkdir(tmp, 0700))
		FAIL(-errno, "cannot create %s: %s (does %s exist?)", tmp,
		     strerror(errno), parent);
	snprintf(path, sizeof(path), "%.4000s/" MIG_SNAP_MEMORY_FILE, tmp);
	s.fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s.fd < 0 || ftruncate(s.fd, (off_t)vm->cfg.mem_bytes))
		FAIL(-errno, "cannot create %s: %s", path, strerror(errno));

	if (st->live) {
		ret = log_start(vm);
		if (ret)
			FAIL(ret, "dirty logging: %s", strerror(-ret));
		logging = true;
		/* The first harvest reports every page: drop it, the first
		 * pass writes every page with data anyway. */
		got = harvest(&s);
		if (got < 0)
			FAIL((int)got, "dirty log: %s", strerror((int)-got));
		memset(s.dirty, 0, HV_DIV_ROUND_UP(s.npages, 64) * 8);
	}
	/* Pass 1: every page that may hold data; holes stay holes. */
	ret = hv_guest_mem_data_map(vm->mem, 0, s.npages, s.dirty);
	if (!ret)
		ret = write_pass(&s, s.dirty, &n);
	if (ret)
		FAIL(ret, "writing %s: %s", path, strerror(-ret));
	hv_dbg(COMP, "event=snapshot_pass vm=%s pass=1 pages=%llu", name,
	       (unsigned long long)n);
	for (unsigned p = 0; st->live && p < max_passes; p++) {
		ret = mig_faultpoint(MIG_FP_SNAP_PASS);
		if (ret < 0)
			FAIL(ret, "fault point " MIG_FP_SNAP_PASS);
		got = harvest(&s);
		if (got < 0)
			FAIL((int)got, "dirty log: %s", strerror((int)-got));
		if ((uint64_t)got <= small)
			break; /* these go in the last pass */
		ret = write_pass(&s, s.dirty, &n);
		if (ret)
			FAIL(ret, "writing %s: %s", path, strerror(-ret));
	}
	if (st->live) {
		tp = hv_now_ns();
		ret = hv_vm_pause(vm);
		if (ret)
			FAIL(ret, "pausing the VM: %s", strerror(-ret));
		paused = true;
		got = harvest(&s);
		if (got < 0)
			FAIL((int)got, "dirty log: %s", strerror((int)-got));
		if (opts->skip_last_pass) {
			hv_warn(COMP, "event=snapshot_last_pass_skipped vm=%s "
				      "pages=%lld (test hook)",
				name, (long long)got);
			memset(s.dirty, 0, HV_DIV_ROUND_UP(s.npages, 64) * 8);
		}
		ret = write_pass(&s, s.dirty, &st->last_pass_pages);
		if (ret)
			FAIL(ret, "writing %s: %s", path, strerror(-ret));
		hv_vm_dirty_log_stop(vm);
		logging = false;
	}
	snprintf(path, sizeof(path), "%.4000s/" MIG_SNAP_STATE_FILE, tmp);
	ret = write_state(&s, name, path, why, why_len);
	if (ret)
		goto out;
	/* Everything of the moment of the pause is in the files' pages:
	 * the guest may run on while they reach the disk. */
	if (paused && !opts->leave_paused) {
		ret = hv_vm_resume(vm);
		paused = false;
		if (ret)
			FAIL(ret, "resuming the VM: %s", strerror(-ret));
	}
	if (tp)
		st->pause_ns = hv_now_ns() - tp;
	if (fsync(s.fd))
		FAIL(-errno, "fsync of the memory file: %s", strerror(errno));
	ret = fsync_path(path, O_RDONLY);
	if (!ret)
		ret = fsync_path(tmp, O_RDONLY | O_DIRECTORY);
	if (ret)
		FAIL(ret, "fsync of %s: %s", tmp, strerror(-ret));
	ret = mig_faultpoint(MIG_FP_SNAP_WRITTEN);
	if (ret < 0)
		FAIL(ret, "fault point " MIG_FP_SNAP_WRITTEN);
	ret = publish(tmp, dir, parent);
	if (ret)
		FAIL(ret, "cannot rename %s to %s: %s", tmp, dir,
		     strerror(-ret));
	file_blocks(dir, MIG_SNAP_MEMORY_FILE, &st->file_bytes);
	file_blocks(dir, MIG_SNAP_STATE_FILE, &st->file_bytes);
	st->duration_ns = hv_now_ns() - t0;
	ret = 0;
out:
	if (logging)
		hv_vm_dirty_log_stop(vm);
	if (paused && ret && hv_vm_resume(vm))
		hv_err(COMP, "event=snapshot_resume_failed vm=%s", name);
	if (paused && !ret && tp && !st->pause_ns)
		st->pause_ns = hv_now_ns() - tp;
	snap_fini(&s);
	if (ret)
		remove_dir(tmp);
	return ret;
}
