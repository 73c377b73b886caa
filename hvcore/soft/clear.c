// SPDX-License-Identifier: MIT
/*
 * Chunked clear-dirty-log with eager huge-page splitting (the soft model of
 * KVM_CLEAR_DIRTY_LOG on the TDP MMU).
 *
 * Per chunk:
 *   top up the split cache            (no lock: may allocate)
 *   take the MMU lock (read, or write for the baseline)
 *   for each harvested page:
 *     walk; while its leaf is huge: split it (CAS; a lost race re-walks)
 *     write-protect (WP) or clean (PML) the 4 KiB leaf (CAS loop)
 *     every 64 pages (read lock only): if someone waits for the lock, or
 *     at once if the cache ran dry:
 *       flush TLBs if anything changed, drop the lock, top up, yield, retake
 *   flush TLBs if anything changed; drop the lock; yield
 *
 * Why the TLB flush precedes every unlock: a vCPU whose TLB still holds a
 * writable translation of a page protected here could otherwise keep
 * writing without a fault after clear returned, and the write would be in
 * no harvest. Writes that slip in before the flush are fine: they happened
 * before clear returned, while the page was still counted as harvested.
 */
#include <errno.h>
#include <sched.h>

#include "hvcore/soft/shadow.h"
#include "hvcore/soft/soft_vm.h"

#define SPLIT_CACHE_MIN 16u
#define BREAK_CHECK_PAGES 64u

struct clear_run {
	struct hv_soft_vm *vm;
	const struct hv_soft_clear_opts *o;
	enum hv_soft_log_mode mode;
	bool changed; /* entries changed since the last TLB flush */
	uint64_t cleared;
};

static void lock(struct clear_run *r)
{
	if (r->o->lock == HV_SOFT_LOCK_WRITE)
		hv_soft_mmu_write_lock(r->vm->mmu);
	else
		hv_soft_mmu_read_lock(r->vm->mmu);
}

static void unlock(struct clear_run *r)
{
	if (r->changed) {
		hv_soft_mmu_flush(r->vm->mmu);
		r->changed = false;
	}
	if (r->o->lock == HV_SOFT_LOCK_WRITE)
		hv_soft_mmu_write_unlock(r->vm->mmu);
	else
		hv_soft_mmu_read_unlock(r->vm->mmu);
}

/*
 * Re-arm one page. 0, or -ENOMEM when a split needs a page the cache lacks
 * (nothing half-done: the caller tops up and calls again). When the page
 * is not mapped, *@unmapped_end is the end of the unmapped block the walk
 * stopped in (a missing table unmaps up to 512 GiB): the caller skips the
 * pages up to there, which keeps the first clear of a large VM whose
 * guest touched little (every page initially dirty) from walking it page
 * by page. Else it is @gpa.
 */
static int protect_one(struct clear_run *r, gpa_t gpa, gpa_t *unmapped_end)
{
	struct hv_soft_mmu *mmu = r->vm->mmu;
	const struct hv_arch_pte_fmt *fmt = hv_soft_mmu_fmt(mmu);
	struct hv_soft_walk w;

	*unmapped_end = gpa;
	if (!hv_soft_mmu_walk(mmu, gpa, &w)) {
		/* Not mapped: its next access faults and logs. A table
		 * missing at w.level leaves its whole span unmapped. */
		if (!fmt->present(w.pte)) {
			uint64_t size = 1ULL << hv_pte_level_shift(w.level);

			*unmapped_end = HV_ALIGN_DOWN(gpa, size) + size;
		}
		return 0;
	}
	for (;;) {
		unsigned perm = fmt->perm(w.pte), np;

		if (w.level > 0 && r->o->eager_split) {
			int ret = hv_soft_mmu_split(mmu, &w,
						    &r->vm->split_cache);

			if (ret == -ENOMEM)
				return ret;
			/* Split done, or lost to a vCPU: look again. */
			if (!hv_soft_mmu_walk(mmu, gpa, &w))
				return 0;
			continue;
		}
		if (r->mode == HV_SOFT_LOG_PML && w.level == 0)
			np = perm & ~HV_PTE_D;
		else
			np = perm & ~(HV_PTE_W | HV_PTE_D);
		if (np == perm)
			return 0;
		if (hv_soft_mmu_set_perm(mmu, &w, np)) {
			r->changed = true;
			r->cleared++;
			return 0;
		}
		/* w.pte was refreshed by the failed CAS; it may now be a
		 * table (a vCPU split it): re-walk in that case. */
		if (!fmt->is_leaf(w.pte, w.level) &&
		    !hv_soft_mmu_walk(mmu, gpa, &w))
			return 0;
	}
}

int hv_soft_vm_clear(struct hv_soft_vm *vm, uint32_t slot_id, uint64_t first,
		     uint64_t count, const uint64_t *mask,
		     const struct hv_soft_clear_opts *o)
{
	struct clear_run r = { .vm = vm, .o = o };
	const struct hv_memslots_snap *snap;
	const struct hv_memslot *s;
	uint64_t chunk, breaks = 0;
	int ret = 0;

	if (first % 64 || (o->chunk_pages % 64))
		return -EINVAL;
	r.mode = atomic_load(&vm->log_mode);
	snap = hv_memslots_read_lock(vm->slots);
	s = hv_memslots_by_id(snap, slot_id);
	if (!s) {
		ret = -ENOENT;
		goto out_slots;
	}
	if (first > s->npages || count > s->npages - first) {
		ret = -EINVAL;
		goto out_slots;
	}
	if (r.mode == HV_SOFT_LOG_OFF || !s->dirty)
		goto out_slots;
	chunk = o->chunk_pages ? o->chunk_pages : count;
	if (vm->shadow) {
		/* Shadow mode: every mapping of a harvested gfn is found
		 * through its rmap and write-protected, under the shadow
		 * lock (kvm_mmu_write_protect_pt_masked). */
		uint64_t n = hv_soft_shadow_write_protect(
			vm->shadow, s->base_gfn + first, count, mask);

		atomic_fetch_add_explicit(&vm->cleared, n,
					  memory_order_relaxed);
	}

	pthread_mutex_lock(&vm->clear_lock);
	for (uint64_t c = 0; c < count && !ret; c += chunk) {
		uint64_t end = HV_MIN(c + chunk, count), since = 0;
		gpa_t skip;

		if (hv_soft_pgcache_topup(&vm->split_cache, SPLIT_CACHE_MIN)) {
			ret = -ENOMEM;
			break;
		}
		lock(&r);
		for (uint64_t i = c; i < end;) {
			uint64_t word = mask[i / 64] >> (i % 64);
			int err;

			if (!word) {
				i = HV_ALIGN_DOWN(i, 64) + 64;
				continue;
			}
			i += __builtin_ctzll(word);
			if (i >= end)
				break;
			err = protect_one(&r,
					  hv_gfn_to_gpa(s->base_gfn + first + i),
					  &skip);
			if (!err && skip > hv_gfn_to_gpa(s->base_gfn + first +
							 i + 1)) {
				/* Nothing mapped up to there. */
				i = hv_gpa_to_gfn(skip) - s->base_gfn - first;
				continue;
			}
			/* The write-lock baseline holds the lock for the
			 * whole chunk, as KVM_CLEAR_DIRTY_LOG holds
			 * mmu_lock; only a dry cache makes it let go. */
			if (!err && (o->lock == HV_SOFT_LOCK_WRITE ||
				     ++since % BREAK_CHECK_PAGES ||
				     !hv_soft_mmu_lock_contended(vm->mmu))) {
				i++;
				continue;
			}
			/* Cache dry or someone waits: let them in. */
			unlock(&r);
			breaks++;
			if (hv_soft_pgcache_topup(&vm->split_cache,
						  SPLIT_CACHE_MIN)) {
				ret = -ENOMEM;
				lock(&r);
				break;
			}
			sched_yield();
			lock(&r);
			if (!err)
				i++;
		}
		unlock(&r);
		sched_yield();
	}
	pthread_mutex_unlock(&vm->clear_lock);
	atomic_fetch_add_explicit(&vm->cleared, r.cleared,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&vm->clear_breaks, breaks,
				  memory_order_relaxed);
out_slots:
	hv_memslots_read_unlock(vm->slots);
	return ret;
}
