// SPDX-License-Identifier: MIT
#include "hvcore/soft/rig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIB2 (2ULL << 20)

static struct hv_wl_params *params(struct hv_soft_rig *rig)
{
	return (struct hv_wl_params *)(rig->mem + HV_WL_PARAMS_GPA);
}

int hv_soft_rig_create(const struct hv_soft_rig_cfg *cfg,
		       struct hv_soft_rig **out)
{
	struct hv_soft_vm_cfg vcfg = { .fmt = cfg->fmt, .huge = cfg->huge };
	struct hv_memslot_desc d;
	struct hv_soft_rig *rig;
	struct hv_wl_params *p;
	uint8_t *raw;
	int ret = -ENOMEM;

	if (!cfg->nr_vcpus || cfg->nr_vcpus > HV_WL_MAX_VCPUS ||
	    !cfg->region_pages || cfg->region_pages % 512)
		return -EINVAL;
	rig = calloc(1, sizeof(*rig));
	if (!rig)
		return -ENOMEM;
	rig->cfg = *cfg;
	rig->high_pages = cfg->region_pages * cfg->nr_vcpus;
	rig->mem_bytes = HV_SOFT_RIG_LOW_BYTES + rig->high_pages * HV_PAGE_SIZE;
	/* Over-allocate by 2 MiB to align the guest RAM base. */
	raw = mmap(NULL, rig->mem_bytes + MIB2, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		goto err_rig;
	rig->mem = (uint8_t *)HV_ALIGN_UP((uintptr_t)raw, MIB2);
	if (rig->mem > raw)
		munmap(raw, rig->mem - raw);
	munmap(rig->mem + rig->mem_bytes, raw + MIB2 - rig->mem);
	madvise(rig->mem, rig->mem_bytes, MADV_HUGEPAGE);

	rig->vcpus = calloc(cfg->nr_vcpus, sizeof(*rig->vcpus));
	rig->threads = calloc(cfg->nr_vcpus, sizeof(*rig->threads));
	rig->results = calloc(cfg->nr_vcpus, sizeof(*rig->results));
	if (!rig->vcpus || !rig->threads || !rig->results)
		goto err_mem;
	ret = hv_memslots_create(&rig->slots);
	if (ret)
		goto err_mem;
	d = (struct hv_memslot_desc){ .id = HV_SOFT_RIG_SLOT_LOW,
				      .base_gfn = 0,
				      .npages = HV_SOFT_RIG_LOW_BYTES >> 12,
				      .hva = (uintptr_t)rig->mem };
	ret = hv_memslots_add(rig->slots, &d);
	if (ret)
		goto err_slots;
	d = (struct hv_memslot_desc){
		.id = HV_SOFT_RIG_SLOT_HIGH,
		.base_gfn = HV_SOFT_RIG_LOW_BYTES >> 12,
		.npages = rig->high_pages,
		.hva = (uintptr_t)rig->mem + HV_SOFT_RIG_LOW_BYTES
	};
	ret = hv_memslots_add(rig->slots, &d);
	if (ret)
		goto err_slots;
	ret = hv_soft_vm_create(&vcfg, rig->slots, &rig->vm);
	if (ret)
		goto err_slots;
	atomic_store(&rig->vm->pml_per_entry, cfg->pml_per_entry);
	for (uint32_t i = 0; i < cfg->nr_vcpus; i++) {
		ret = hv_soft_vcpu_create(rig->vm, i, &rig->vcpus[i]);
		if (ret)
			goto err_vcpus;
	}
	p = params(rig);
	p->magic = HV_WL_MAGIC;
	p->version = HV_WL_VERSION;
	p->nr_vcpus = cfg->nr_vcpus;
	p->tsc_khz = 1000000;
	for (uint32_t i = 0; i < cfg->nr_vcpus; i++) {
		struct hv_wl_vcpu_params *v = &p->vcpu[i];

		v->pattern = cfg->pattern ? cfg->pattern : HV_WL_PATTERN_RANDOM;
		v->content = HV_WL_CONTENT_STAMP;
		v->region_gpa = HV_SOFT_RIG_LOW_BYTES +
				i * cfg->region_pages * HV_PAGE_SIZE;
		v->region_pages = cfg->region_pages;
		v->write_pct = 100;
		v->hot_pct = 10;
		v->hot_share_pct = 90;
		v->seed = 0x1234 + i;
	}
	*out = rig;
	return 0;

err_vcpus:
	for (uint32_t i = 0; i < cfg->nr_vcpus; i++)
		hv_soft_vcpu_destroy(rig->vcpus[i]);
	hv_soft_vm_destroy(rig->vm);
err_slots:
	hv_memslots_destroy(rig->slots);
err_mem:
	free(rig->vcpus);
	free(rig->threads);
	free(rig->results);
	munmap(rig->mem, rig->mem_bytes);
err_rig:
	free(rig);
	return ret;
}

void hv_soft_rig_destroy(struct hv_soft_rig *rig)
{
	if (!rig)
		return;
	hv_soft_rig_stop(rig);
	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++)
		hv_soft_vcpu_destroy(rig->vcpus[i]);
	hv_soft_vm_destroy(rig->vm);
	hv_memslots_destroy(rig->slots);
	free(rig->vcpus);
	free(rig->threads);
	free(rig->results);
	munmap(rig->mem, rig->mem_bytes);
	free(rig);
}

struct thread_arg {
	struct hv_soft_rig *rig;
	uint32_t idx;
};

static void *vcpu_thread(void *p)
{
	struct thread_arg *a = p;
	struct hv_soft_rig *rig = a->rig;
	uint32_t i = a->idx;

	free(a);
	rig->results[i] = hv_soft_vcpu_run_workload(rig->vcpus[i], NULL);
	return NULL;
}

int hv_soft_rig_start(struct hv_soft_rig *rig)
{
	if (rig->running)
		return -EBUSY;
	/* All flags first: each vCPU copies the whole params page. */
	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++)
		__atomic_store_n(&params(rig)->vcpu[i].stop, 0,
				 __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++) {
		struct thread_arg *a = malloc(sizeof(*a));

		if (!a)
			return -ENOMEM; /* caller stops what started */
		*a = (struct thread_arg){ rig, i };
		if (pthread_create(&rig->threads[i], NULL, vcpu_thread, a)) {
			free(a);
			return -EAGAIN;
		}
	}
	rig->running = true;
	return 0;
}

struct hv_wl_params *hv_soft_rig_params(struct hv_soft_rig *rig)
{
	return params(rig);
}

int hv_soft_rig_stop(struct hv_soft_rig *rig)
{
	if (!rig->running)
		return 0;
	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++)
		__atomic_store_n(&params(rig)->vcpu[i].stop, 1,
				 __ATOMIC_RELEASE);
	return hv_soft_rig_wait(rig);
}

int hv_soft_rig_wait(struct hv_soft_rig *rig)
{
	int ret = 0;

	if (!rig->running)
		return 0;
	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++) {
		pthread_join(rig->threads[i], NULL);
		if (!ret)
			ret = rig->results[i];
	}
	rig->running = false;
	return ret;
}

int hv_soft_rig_log_start(struct hv_soft_rig *rig, enum hv_soft_log_mode m)
{
	int ret;

	hv_memslots_set_initially_set(rig->slots, true);
	ret = hv_memslots_set_flags(rig->slots, HV_SOFT_RIG_SLOT_LOW,
				    HV_MEMSLOT_F_DIRTY_LOG);
	if (!ret)
		ret = hv_memslots_set_flags(rig->slots, HV_SOFT_RIG_SLOT_HIGH,
					    HV_MEMSLOT_F_DIRTY_LOG);
	if (!ret)
		ret = hv_soft_vm_log_start(rig->vm, m, true);
	return ret;
}

int64_t hv_soft_rig_harvest(struct hv_soft_rig *rig, uint32_t slot,
			    uint64_t *dst)
{
	const struct hv_memslots_snap *snap;
	const struct hv_memslot *s;
	int64_t ret = -ENOENT;

	hv_soft_vm_sync_pml(rig->vm);
	snap = hv_memslots_read_lock(rig->slots);
	s = hv_memslots_by_id(snap, slot);
	if (s && s->dirty)
		ret = hv_dirty_bitmap_fetch_clear(s->dirty, 0, s->npages, dst);
	hv_memslots_read_unlock(rig->slots);
	return ret;
}

uint64_t hv_soft_rig_slot_pages(struct hv_soft_rig *rig, uint32_t slot)
{
	return slot == HV_SOFT_RIG_SLOT_LOW ? HV_SOFT_RIG_LOW_BYTES >> 12
					    : rig->high_pages;
}

uint8_t *hv_soft_rig_slot_hva(struct hv_soft_rig *rig, uint32_t slot)
{
	return slot == HV_SOFT_RIG_SLOT_LOW ? rig->mem
					    : rig->mem + HV_SOFT_RIG_LOW_BYTES;
}

/* Guest memory is written by vCPUs without host synchronisation, like a
 * real guest's: these reads are racy by nature, not a bug TSan should
 * flag. */
__attribute__((no_sanitize("thread"))) uint64_t
hv_soft_rig_writes(struct hv_soft_rig *rig)
{
	const volatile struct hv_wl_status *st =
		(const volatile struct hv_wl_status *)(rig->mem +
						       HV_WL_STATUS_GPA);
	uint64_t n = 0;

	for (uint32_t i = 0; i < rig->cfg.nr_vcpus; i++)
		n += st[i].seq;
	return n;
}
