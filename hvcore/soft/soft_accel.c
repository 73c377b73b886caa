// SPDX-License-Identifier: MIT
/*
 * hv_soft_ops, VM side: the soft MMU per VM, memslot changes, dirty
 * logging (WP / PML), harvest, chunked clear with eager split, and the VM
 * state blob. The vCPU side is in hvcore/soft/soft_accel_vcpu.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arm64/stage2.h"
#include "arch/x86/ept.h"
#include "hvcore/log.h"
#include "hvcore/memslots.h"
#include "hvcore/soft/soft_accel.h"

#define VM_STATE_MAGIC 0x4d565348u /* "HSVM" */
#define VM_STATE_VERSION 1u
#define VM_STATE_LEN 16u
#define VM_STATE_F_HUGE (1u << 0)

/* The soft "TSC" is CLOCK_MONOTONIC in nanoseconds (soft_vcpu.c). */
#define SOFT_TSC_KHZ 1000000ULL

static const struct {
	const char *name;
	const struct hv_arch_pte_fmt *fmt;
} fmts[] = {
	[SOFT_FMT_X86_EPT] = { "x86", &x86_ept_fmt },
	[SOFT_FMT_ARM64_S2] = { "arm64", &arm64_s2_fmt },
};

static int env_fmt(enum soft_fmt_id *out)
{
	const char *v = getenv("HV_SOFT_PTE_FMT");

	if (!v || !*v) {
		*out = SOFT_FMT_X86_EPT;
		return 0;
	}
	for (unsigned i = SOFT_FMT_X86_EPT; i < HV_ARRAY_SIZE(fmts); i++) {
		if (!strcmp(v, fmts[i].name)) {
			*out = (enum soft_fmt_id)i;
			return 0;
		}
	}
	hv_err("soft", "op=vm_init env=HV_SOFT_PTE_FMT value=%s err=%d "
		       "reason=expected_x86_or_arm64", v, -EINVAL);
	return -EINVAL;
}

static int env_lock(enum hv_soft_lock_mode *out)
{
	const char *v = getenv("HV_SOFT_CLEAR_LOCK");

	if (!v || !*v || !strcmp(v, "read")) {
		*out = HV_SOFT_LOCK_READ;
		return 0;
	}
	if (!strcmp(v, "write")) {
		*out = HV_SOFT_LOCK_WRITE;
		return 0;
	}
	hv_err("soft", "op=vm_init env=HV_SOFT_CLEAR_LOCK value=%s err=%d "
		       "reason=expected_read_or_write", v, -EINVAL);
	return -EINVAL;
}

static int soft_vm_init(struct hv_vm *vm)
{
	struct hv_soft_vm_cfg cfg = { 0 };
	struct soft_vm *a;
	int ret;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	ret = env_fmt(&a->fmt_id);
	if (!ret)
		ret = env_lock(&a->clear_lock);
	if (ret)
		goto err;
	cfg.fmt = fmts[a->fmt_id].fmt;
	/* Huge stage-2 leaves where the host backing is huge, as KVM maps
	 * 2 MiB only where the host page is. */
	cfg.huge = vm->cfg.backing == HV_BACKING_THP ||
		   vm->cfg.backing == HV_BACKING_HUGETLB;
	ret = hv_soft_vm_create(&cfg, vm->slots, &a->svm);
	if (ret)
		goto err;
	vm->accel = a;
	vm->tsc_khz = SOFT_TSC_KHZ;
	hv_info("soft", "op=vm_init vm=%s fmt=%s huge=%d clear_lock=%s",
		hv_vm_name(vm), cfg.fmt->name, cfg.huge,
		a->clear_lock == HV_SOFT_LOCK_READ ? "read" : "write");
	return 0;

err:
	free(a);
	return ret;
}

static void soft_vm_fini(struct hv_vm *vm)
{
	struct soft_vm *a = soft_vm_of(vm);

	if (!a)
		return;
	hv_soft_vm_destroy(a->svm);
	free(a);
	vm->accel = NULL;
}

/* True when slot @id's dirty bitmap has every page set. */
static bool bitmap_full(struct hv_vm *vm, uint32_t id)
{
	const struct hv_memslots_snap *s = hv_memslots_read_lock(vm->slots);
	const struct hv_memslot *m = hv_memslots_by_id(s, id);
	bool full = m && m->dirty &&
		    hv_dirty_bitmap_count(m->dirty) == m->npages;

	hv_memslots_read_unlock(vm->slots);
	return full;
}

/*
 * Called after the memslot set published the change (and waited out its
 * grace period), so faults already resolve against the new set; what is
 * left is to drop or re-arm what the table still maps for the old one.
 */
static int soft_memslot_update(struct hv_vm *vm,
			       const struct hv_memslot_desc *old,
			       const struct hv_memslot_desc *nd)
{
	struct hv_soft_vm *svm = soft_vm_of(vm)->svm;
	uint32_t added;
	int mode;

	if (!old)
		return 0; /* nothing mapped there yet: faults fill it */
	if (!nd || nd->base_gfn != old->base_gfn ||
	    nd->npages != old->npages) {
		hv_soft_vm_zap(svm, old->base_gfn, old->npages);
		return 0;
	}
	added = nd->flags & ~old->flags;
	mode = atomic_load(&svm->log_mode);
	if (added & HV_MEMSLOT_F_READONLY) {
		/* Every writable leaf goes; the fault path refuses writes. */
		hv_soft_vm_protect(svm, nd->base_gfn, nd->npages,
				   HV_SOFT_LOG_OFF);
	} else if ((added & HV_MEMSLOT_F_DIRTY_LOG) &&
		   mode != HV_SOFT_LOG_OFF && !bitmap_full(vm, nd->id)) {
		/* Without initially-set bitmaps, pages written through a
		 * writable leaf before now would never be reported. */
		hv_soft_vm_protect(svm, nd->base_gfn, nd->npages,
				   (enum hv_soft_log_mode)mode);
	}
	/* Logging off: leaves stay as they are (split and protected);
	 * writes fault once and are made writable again. No collapse. */
	return 0;
}

static int soft_dirty_log_start(struct hv_vm *vm, enum hv_dirty_mode mode)
{
	struct hv_soft_vm *svm = soft_vm_of(vm)->svm;

	switch (mode) {
	case HV_DIRTY_WP:
		return hv_soft_vm_log_start(svm, HV_SOFT_LOG_WP, true);
	case HV_DIRTY_PML:
		return hv_soft_vm_log_start(svm, HV_SOFT_LOG_PML, true);
	default:
		return -EOPNOTSUPP;
	}
}

static void soft_dirty_log_stop(struct hv_vm *vm)
{
	hv_soft_vm_log_stop(soft_vm_of(vm)->svm);
}

/*
 * WP mode needs no harvest: the fault sets the bitmap bit itself. PML
 * buffers are flushed, each resolving the memslot set once per flush.
 */
static int64_t soft_dirty_harvest(struct hv_vm *vm)
{
	return (int64_t)hv_soft_vm_sync_pml(soft_vm_of(vm)->svm);
}

static int soft_dirty_clear(struct hv_vm *vm, uint32_t slot_id,
			    uint64_t first, uint64_t count,
			    const uint64_t *mask)
{
	struct soft_vm *a = soft_vm_of(vm);
	struct hv_soft_clear_opts o = {
		/* vm.c already calls once per chunk of this size. */
		.chunk_pages = vm->cfg.clear_chunk_pages,
		.lock = a->clear_lock,
		.eager_split = true,
	};

	return hv_soft_vm_clear(a->svm, slot_id, first, count, mask, &o);
}

/*
 * VM state v1, 16 bytes little-endian:
 *   u32 magic, u32 version, u32 entry format (enum soft_fmt_id),
 *   u32 flags (VM_STATE_F_HUGE).
 */
static int soft_vm_state_save(struct hv_vm *vm, struct hv_blob *out)
{
	struct soft_vm *a = soft_vm_of(vm);
	uint8_t *p = malloc(VM_STATE_LEN);

	if (!p)
		return -ENOMEM;
	soft_put_le32(p, VM_STATE_MAGIC);
	soft_put_le32(p + 4, VM_STATE_VERSION);
	soft_put_le32(p + 8, a->fmt_id);
	soft_put_le32(p + 12, a->svm->cfg.huge ? VM_STATE_F_HUGE : 0);
	out->data = p;
	out->len = VM_STATE_LEN;
	return 0;
}

static int soft_vm_state_restore(struct hv_vm *vm, const struct hv_blob *in)
{
	struct soft_vm *a = soft_vm_of(vm);
	uint32_t fmt, flags;

	if (!in->data || in->len != VM_STATE_LEN ||
	    soft_get_le32(in->data) != VM_STATE_MAGIC ||
	    soft_get_le32(in->data + 4) != VM_STATE_VERSION)
		return -EINVAL;
	fmt = soft_get_le32(in->data + 8);
	flags = soft_get_le32(in->data + 12);
	if (fmt == SOFT_FMT_INVALID || fmt >= HV_ARRAY_SIZE(fmts) ||
	    flags & ~VM_STATE_F_HUGE)
		return -EINVAL;
	/* Nothing to apply: the table is rebuilt by faults, in whatever
	 * format this VM uses. A different one is worth a line in the log. */
	if (fmt != a->fmt_id)
		hv_info("soft",
			"op=vm_state_restore vm=%s saved_fmt=%s "
			"fmt=%s",
			hv_vm_name(vm), fmts[fmt].name, fmts[a->fmt_id].name);
	return 0;
}

int hv_soft_get_stats(struct hv_vm *vm, struct hv_soft_vm_stats *vs,
		      struct hv_soft_mmu_stats *ms)
{
	struct soft_vm *a;

	if (!vm || vm->ops != &hv_soft_ops || !vm->accel)
		return -EINVAL;
	a = soft_vm_of(vm);
	if (vs)
		hv_soft_vm_get_stats(a->svm, vs);
	if (ms)
		hv_soft_mmu_get_stats(a->svm->mmu, ms);
	return 0;
}

const struct hv_accel_ops hv_soft_ops = {
	.name = "soft",
	.kind = HV_ACCEL_SOFT,
	.vm_init = soft_vm_init,
	.vm_fini = soft_vm_fini,
	.memslot_update = soft_memslot_update,
	.vcpu_init = hv_soft_accel_vcpu_init,
	.vcpu_fini = hv_soft_accel_vcpu_fini,
	.vcpu_run = hv_soft_accel_vcpu_run,
	.vcpu_kick = hv_soft_accel_vcpu_kick,
	.dirty_log_start = soft_dirty_log_start,
	.dirty_log_stop = soft_dirty_log_stop,
	.dirty_harvest = soft_dirty_harvest,
	.dirty_clear = soft_dirty_clear,
	.vm_state_save = soft_vm_state_save,
	.vm_state_restore = soft_vm_state_restore,
	.vcpu_state_save = hv_soft_accel_vcpu_save,
	.vcpu_state_restore = hv_soft_accel_vcpu_restore,
};
