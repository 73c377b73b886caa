// SPDX-License-Identifier: MIT
#include "hvcore/soft/soft_vm.h"

#include <errno.h>
#include <stdlib.h>

#include "hvcore/log.h"
#include "hvcore/soft/shadow.h"
#include "hvcore/soft/soft_vcpu.h"

int hv_soft_vm_create(const struct hv_soft_vm_cfg *cfg,
		      struct hv_memslots *slots, struct hv_soft_vm **out)
{
	struct hv_soft_vm *vm;
	int ret;

	if (!cfg->fmt || !slots)
		return -EINVAL;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	ret = hv_soft_mmu_create(cfg->fmt, &vm->mmu);
	if (ret) {
		free(vm);
		return ret;
	}
	vm->slots = slots;
	vm->cfg = *cfg;
	pthread_mutex_init(&vm->clear_lock, NULL);
	pthread_mutex_init(&vm->vcpus_lock, NULL);
	*out = vm;
	return 0;
}

void hv_soft_vm_destroy(struct hv_soft_vm *vm)
{
	if (!vm)
		return;
	hv_soft_pgcache_drain(&vm->split_cache);
	hv_soft_mmu_destroy(vm->mmu);
	pthread_mutex_destroy(&vm->clear_lock);
	pthread_mutex_destroy(&vm->vcpus_lock);
	free(vm);
}

/*
 * Protect every leaf of [gpa, end): write-protect (WP mode, read-only, and
 * huge leaves in PML mode, whose single dirty bit cannot say which 4 KiB
 * page was written) or clean the dirty bit (4 KiB leaves in PML mode).
 * Write lock held.
 */
static void protect_range(struct hv_soft_vm *vm, gpa_t gpa, gpa_t end,
			  enum hv_soft_log_mode mode)
{
	const struct hv_arch_pte_fmt *fmt = hv_soft_mmu_fmt(vm->mmu);

	while (gpa < end) {
		struct hv_soft_walk w;
		uint64_t size;

		if (!hv_soft_mmu_walk(vm->mmu, gpa, &w)) {
			/* Skip the whole hole at the level the walk ended. */
			size = 1ULL << hv_pte_level_shift(w.level);
			gpa = HV_ALIGN_DOWN(gpa, size) + size;
			continue;
		}
		size = 1ULL << hv_pte_level_shift(w.level);
		for (;;) {
			unsigned perm = fmt->perm(w.pte), np;

			if (mode == HV_SOFT_LOG_PML && w.level == 0)
				np = perm & ~HV_PTE_D;
			else
				np = perm & ~(HV_PTE_W | HV_PTE_D);
			if (np == perm || hv_soft_mmu_set_perm(vm->mmu, &w, np))
				break;
		}
		gpa = HV_ALIGN_DOWN(gpa, size) + size;
	}
}

static void protect_slot(struct hv_soft_vm *vm, const struct hv_memslot *s,
			 enum hv_soft_log_mode mode)
{
	if (vm->shadow)
		hv_soft_shadow_write_protect(vm->shadow, s->base_gfn,
					     s->npages, NULL);
	protect_range(vm, hv_gfn_to_gpa(s->base_gfn),
		      hv_gfn_to_gpa(s->base_gfn + s->npages), mode);
}

void hv_soft_vm_protect(struct hv_soft_vm *vm, gfn_t gfn, uint64_t npages,
			enum hv_soft_log_mode mode)
{
	if (vm->shadow)
		hv_soft_shadow_write_protect(vm->shadow, gfn, npages, NULL);
	hv_soft_mmu_write_lock(vm->mmu);
	protect_range(vm, hv_gfn_to_gpa(gfn), hv_gfn_to_gpa(gfn + npages),
		      mode);
	hv_soft_mmu_flush(vm->mmu);
	hv_soft_mmu_write_unlock(vm->mmu);
}

void hv_soft_vm_set_shadow(struct hv_soft_vm *vm, struct hv_soft_shadow *sh)
{
	vm->shadow = sh;
}

void hv_soft_vm_zap(struct hv_soft_vm *vm, gfn_t gfn, uint64_t npages)
{
	if (vm->shadow)
		hv_soft_shadow_zap_gfns(vm->shadow, gfn, npages);
	hv_soft_mmu_write_lock(vm->mmu);
	hv_soft_mmu_zap_range(vm->mmu, hv_gfn_to_gpa(gfn),
			      npages << HV_PAGE_SHIFT);
	hv_soft_mmu_write_unlock(vm->mmu);
}

int hv_soft_vm_log_start(struct hv_soft_vm *vm, enum hv_soft_log_mode mode,
			 bool initially_set)
{
	const struct hv_memslots_snap *snap;

	if (mode != HV_SOFT_LOG_WP && mode != HV_SOFT_LOG_PML)
		return -EINVAL;
	atomic_store(&vm->log_mode, mode);
	if (initially_set)
		return 0;
	snap = hv_memslots_read_lock(vm->slots);
	hv_soft_mmu_write_lock(vm->mmu);
	for (unsigned i = 0; i < hv_memslots_count(snap); i++) {
		const struct hv_memslot *s = hv_memslots_at(snap, i);

		if (s->dirty)
			protect_slot(vm, s, mode);
	}
	hv_soft_mmu_flush(vm->mmu);
	hv_soft_mmu_write_unlock(vm->mmu);
	hv_memslots_read_unlock(vm->slots);
	return 0;
}

void hv_soft_vm_log_stop(struct hv_soft_vm *vm)
{
	hv_soft_vm_sync_pml(vm);
	atomic_store(&vm->log_mode, HV_SOFT_LOG_OFF);
}

uint64_t hv_soft_vm_sync_pml(struct hv_soft_vm *vm)
{
	uint64_t n = 0;

	pthread_mutex_lock(&vm->vcpus_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++)
		if (vm->vcpus[i])
			n += hv_soft_vcpu_flush_pml(vm->vcpus[i]);
	pthread_mutex_unlock(&vm->vcpus_lock);
	return n;
}

static void mark(const struct hv_memslot *s, gfn_t gfn)
{
	if (s->dirty)
		hv_dirty_bitmap_set(s->dirty, gfn - s->base_gfn);
}

static bool in_slot(const struct hv_memslot *s, gfn_t gfn)
{
	return gfn >= s->base_gfn && gfn - s->base_gfn < s->npages;
}

unsigned hv_soft_pml_flush(struct hv_memslots *slots, const uint64_t *gpas,
			   unsigned n, bool per_entry)
{
	const struct hv_memslots_snap *snap;
	const struct hv_memslot *s = NULL;

	if (per_entry) {
		/* Baseline: one read-side section and lookup per entry. */
		for (unsigned i = 0; i < n; i++) {
			gfn_t gfn = hv_gpa_to_gfn(gpas[i]);

			snap = hv_memslots_read_lock(slots);
			s = hv_memslots_by_gfn(snap, gfn);
			if (s)
				mark(s, gfn);
			hv_memslots_read_unlock(slots);
		}
		return n;
	}
	/* Once per flush: one section; look up only when leaving the
	 * slot of the previous entry (PML entries cluster by slot). */
	snap = hv_memslots_read_lock(slots);
	for (unsigned i = 0; i < n; i++) {
		gfn_t gfn = hv_gpa_to_gfn(gpas[i]);

		if (!s || !in_slot(s, gfn))
			s = hv_memslots_by_gfn(snap, gfn);
		if (s)
			mark(s, gfn);
	}
	hv_memslots_read_unlock(slots);
	return n;
}

void hv_soft_vm_get_stats(struct hv_soft_vm *vm, struct hv_soft_vm_stats *st)
{
	st->faults = atomic_load_explicit(&vm->faults, memory_order_relaxed);
	st->wp_faults = atomic_load_explicit(&vm->wp_faults,
					     memory_order_relaxed);
	st->pml_logged = atomic_load_explicit(&vm->pml_logged,
					      memory_order_relaxed);
	st->pml_full = atomic_load_explicit(&vm->pml_full,
					    memory_order_relaxed);
	st->pml_flushed = atomic_load_explicit(&vm->pml_flushed,
					       memory_order_relaxed);
	st->cleared = atomic_load_explicit(&vm->cleared, memory_order_relaxed);
	st->clear_breaks = atomic_load_explicit(&vm->clear_breaks,
						memory_order_relaxed);
}

int hv_soft_vm_add_vcpu(struct hv_soft_vm *vm, struct hv_soft_vcpu *v)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&vm->vcpus_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++) {
		if (!vm->vcpus[i]) {
			vm->vcpus[i] = v;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&vm->vcpus_lock);
	return ret;
}

void hv_soft_vm_del_vcpu(struct hv_soft_vm *vm, struct hv_soft_vcpu *v)
{
	pthread_mutex_lock(&vm->vcpus_lock);
	for (unsigned i = 0; i < HV_SOFT_MAX_TLBS; i++)
		if (vm->vcpus[i] == v)
			vm->vcpus[i] = NULL;
	pthread_mutex_unlock(&vm->vcpus_lock);
}
