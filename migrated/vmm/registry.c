// SPDX-License-Identifier: MIT
/*
 * migd_registry: the daemon's VMs by name (registry.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/dirtyrate.h"
#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/ram_layout.h"
#include "migrated/vmm/calls.h"
#include "migrated/vmm/registry.h"

#define COMP "migd.vm"

/* API enums are 1:1 with hvcore's, checked here once. */
_Static_assert((int)MIGD__WL_PATTERN__WL_PATTERN_SWEEP ==
		       HV_WL_PATTERN_SWEEP &&
		       (int)MIGD__WL_PATTERN__WL_PATTERN_IDLE ==
			       HV_WL_PATTERN_IDLE,
	       "pattern values");
_Static_assert((int)MIGD__WL_CONTENT__WL_CONTENT_STAMP ==
			       HV_WL_CONTENT_STAMP &&
		       (int)MIGD__WL_CONTENT__WL_CONTENT_RANDOM ==
			       HV_WL_CONTENT_RANDOM,
	       "content values");

#define FAIL(...)                                                            \
	do {                                                                 \
		snprintf(err, err_size, __VA_ARGS__);                        \
		return -EINVAL;                                              \
	} while (0)

int migd_vm_cfg_build(const Migd__VmCreateRequest *r,
		      enum hv_accel_kind accel, struct hv_vm_cfg *cfg,
		      struct migd_wl *wl, char *err, size_t err_size)
{
	const Migd__Workload *w = r->workload;
	struct migd_wl o = { 0 };
	struct hv_ram_layout ram;
	uint64_t per_pages;

	if (!migd_name_valid(r->name))
		FAIL("invalid VM name (1..%d of [A-Za-z0-9._-])",
		     MIGD_NAME_MAX);
	if (accel == HV_ACCEL_INVALID)
		FAIL("unknown accelerator '%s' (kvm or soft)", r->accel);
	if (r->mem_bytes < HV_VM_MIN_MEM || r->mem_bytes > HV_VM_MAX_MEM ||
	    r->mem_bytes % (2ULL << 20))
		FAIL("--mem %.1f MiB (mem_bytes %llu): must be a multiple "
		     "of 2 MiB, %llu MiB to %llu GiB",
		     (double)r->mem_bytes / (1 << 20),
		     (unsigned long long)r->mem_bytes,
		     (unsigned long long)(HV_VM_MIN_MEM >> 20),
		     (unsigned long long)(HV_VM_MAX_MEM >> 30));
	if (r->nr_vcpus < 1 || r->nr_vcpus > HV_VM_MAX_VCPUS)
		FAIL("--vcpus %u (nr_vcpus): must be 1..%u", r->nr_vcpus,
		     HV_VM_MAX_VCPUS);

	o.pattern = w && w->pattern ? (uint32_t)w->pattern
				    : HV_WL_PATTERN_SWEEP;
	o.content = w && w->content ? (uint32_t)w->content
				    : HV_WL_CONTENT_STAMP;
	if (o.pattern >= HV_WL_PATTERN_COUNT)
		FAIL("unknown workload pattern %u", o.pattern);
	if (o.content >= HV_WL_CONTENT_COUNT)
		FAIL("unknown workload content %u", o.content);
	o.rate_pages = w ? w->rate_pages : 0;
	o.region_offset = w && w->region_offset ? w->region_offset
						: HV_VM_WL_BASE;
	o.write_pct = w && w->write_pct ? w->write_pct : 100;
	o.hot_pct = w ? w->hot_pct : 0;
	o.hot_share_pct = w ? w->hot_share_pct : 0;
	o.heartbeat_us = w && w->heartbeat_us ? w->heartbeat_us
					      : MIGD_HEARTBEAT_US_DEFAULT;
	o.seed = w && w->seed ? w->seed : 0x5eed0000u;
	o.prefill = w && w->prefill;
	if (o.write_pct > 100)
		FAIL("write_pct %u above 100", o.write_pct);
	if (o.pattern == HV_WL_PATTERN_HOTSET &&
	    (o.hot_pct < 1 || o.hot_pct > 100 || o.hot_share_pct > 100))
		FAIL("hotset needs hot_pct in [1, 100] and hot_share_pct "
		     "in [0, 100]");
	if (o.region_offset % HV_PAGE_SIZE || o.region_offset < HV_VM_WL_BASE ||
	    o.region_offset >= r->mem_bytes)
		FAIL("region offset %llu: page-aligned, in [%llu, mem)",
		     (unsigned long long)o.region_offset,
		     (unsigned long long)HV_VM_WL_BASE);
	o.region_bytes = w && w->region_bytes
				 ? w->region_bytes
				 : r->mem_bytes - o.region_offset;
	if (o.region_bytes % HV_PAGE_SIZE ||
	    o.region_bytes > r->mem_bytes - o.region_offset)
		FAIL("region of %llu bytes at %llu: page multiple, inside "
		     "guest RAM",
		     (unsigned long long)o.region_bytes,
		     (unsigned long long)o.region_offset);
	if (r->dirty_ring > 0 &&
	    (accel != HV_ACCEL_KVM || r->dirty_ring < MIGD_DIRTY_RING_MIN ||
	     r->dirty_ring > MIGD_DIRTY_RING_MAX ||
	     (r->dirty_ring & (r->dirty_ring - 1))))
		FAIL("dirty_ring %d: kvm only, a power of two in [%u, %u] "
		     "(0 = daemon default, -1 = bitmap)",
		     r->dirty_ring, MIGD_DIRTY_RING_MIN, MIGD_DIRTY_RING_MAX);
	if (r->dirty_ring < -1)
		FAIL("dirty_ring %d: -1, 0 or a ring size", r->dirty_ring);
	if (r->backing && *r->backing &&
	    hv_mem_backing_parse(r->backing) == HV_BACKING_INVALID)
		FAIL("backing '%.32s': anon, memfd, memfd-thp or hugetlb",
		     r->backing);
	per_pages = (o.region_bytes >> HV_PAGE_SHIFT) / r->nr_vcpus;
	if (!per_pages && (o.pattern != HV_WL_PATTERN_IDLE || o.prefill))
		FAIL("region too small for %u vCPUs", r->nr_vcpus);

	hv_vm_cfg_init(cfg, accel, r->mem_bytes, r->nr_vcpus);
	ram = hv_ram_layout_std(r->mem_bytes);
	for (uint32_t i = 0; i < r->nr_vcpus; i++) {
		struct hv_wl_vcpu_params *p = &cfg->wl[i];

		memset(p, 0, sizeof(*p));
		p->pattern = o.pattern;
		p->content = o.content;
		/* The region is given in RAM offsets; the workload follows
		 * them across the MMIO hole (hvcore/workload.h). */
		p->region_gpa = hv_ram_off_to_gpa(
			&ram, o.region_offset + i * per_pages * HV_PAGE_SIZE);
		p->region_pages = per_pages;
		p->rate_pages = o.rate_pages;
		p->write_pct = o.write_pct;
		p->hot_pct = o.hot_pct;
		p->hot_share_pct = o.hot_share_pct;
		p->heartbeat_us = o.heartbeat_us;
		p->seed = o.seed + i;
		p->prefill = o.prefill;
	}
	/* 0 (the daemon default) is resolved by the caller. */
	cfg->dirty_ring_entries = r->dirty_ring > 0 ? (uint32_t)r->dirty_ring
						    : 0;
	/* "" (the daemon default) is resolved by the caller. */
	if (r->backing && *r->backing)
		cfg->backing = hv_mem_backing_parse(r->backing);
	/* A Linux guest: the files as given (migd_boot_check() checks them;
	 * the caller names the console log). Too long a string is refused
	 * there, never cut here. */
	if (r->boot && r->boot->kernel && *r->boot->kernel) {
		if (strlen(r->boot->kernel) >= sizeof(cfg->boot.kernel) ||
		    (r->boot->initrd &&
		     strlen(r->boot->initrd) >= sizeof(cfg->boot.initrd)) ||
		    (r->boot->cmdline &&
		     strlen(r->boot->cmdline) >= sizeof(cfg->boot.cmdline)))
			FAIL("--kernel, --initrd or --cmdline too long");
		snprintf(cfg->boot.kernel, sizeof(cfg->boot.kernel), "%s",
			 r->boot->kernel);
		snprintf(cfg->boot.initrd, sizeof(cfg->boot.initrd), "%s",
			 r->boot->initrd ? r->boot->initrd : "");
		snprintf(cfg->boot.cmdline, sizeof(cfg->boot.cmdline), "%s",
			 r->boot->cmdline ? r->boot->cmdline : "");
		migd_devices_cfg(r->boot, r->name, &cfg->boot);
	}
	*wl = o;
	return 0;
}

void migd_registry_init(struct migd_registry *reg)
{
	memset(reg, 0, sizeof(*reg));
	pthread_mutex_init(&reg->lock, NULL);
}

void migd_registry_fini(struct migd_registry *reg)
{
	while (reg->head)
		migd_registry_remove(reg, reg->head);
	while (reg->holds) {
		struct migd_name_hold *h = reg->holds;

		reg->holds = h->next;
		free(h);
	}
	pthread_mutex_destroy(&reg->lock);
}

static struct migd_name_hold **hold_find(struct migd_registry *reg,
					 const char *name)
{
	struct migd_name_hold **pp;

	for (pp = &reg->holds; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name))
			return pp;
	return NULL;
}

int migd_registry_hold(struct migd_registry *reg, const char *name)
{
	struct migd_name_hold *h;
	size_t n = name ? strlen(name) : 0;

	if (!n || n > MIGD_NAME_MAX)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	memcpy(h->name, name, n + 1);
	pthread_mutex_lock(&reg->lock);
	if (migd_registry_find(reg, name) || hold_find(reg, name)) {
		pthread_mutex_unlock(&reg->lock);
		free(h);
		return -EEXIST;
	}
	h->next = reg->holds;
	reg->holds = h;
	pthread_mutex_unlock(&reg->lock);
	return 0;
}

void migd_registry_release(struct migd_registry *reg, const char *name)
{
	struct migd_name_hold **pp, *h = NULL;

	pthread_mutex_lock(&reg->lock);
	pp = name ? hold_find(reg, name) : NULL;
	if (pp) {
		h = *pp;
		*pp = h->next;
	}
	pthread_mutex_unlock(&reg->lock);
	free(h);
}

bool migd_registry_taken(struct migd_registry *reg, const char *name)
{
	bool taken;

	if (!name)
		return false;
	pthread_mutex_lock(&reg->lock);
	taken = migd_registry_find(reg, name) || hold_find(reg, name);
	pthread_mutex_unlock(&reg->lock);
	return taken;
}

struct migd_vm *migd_registry_find(struct migd_registry *reg,
				   const char *name)
{
	if (!name)
		return NULL;
	for (struct migd_vm *v = reg->head; v; v = v->next)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}

static uint64_t now_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int add(struct migd_registry *reg, const char *name, bool held,
	       struct hv_vm *vm, const struct migd_wl *wl, bool migrated_in,
	       struct migd_vm **out)
{
	struct migd_name_hold **hp, *h = NULL;
	struct migd_vm *v, **tail;
	int ret = 0;

	if (strlen(name) > MIGD_NAME_MAX)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	strcpy(v->name, name);
	v->vm = vm;
	if (wl)
		v->wl = *wl;
	v->migrated_in = migrated_in;
	v->created_unix_ms = now_unix_ms();
	pthread_mutex_lock(&reg->lock);
	hp = hold_find(reg, name);
	if (migd_registry_find(reg, name) || (held ? !hp : hp != NULL))
		ret = -EEXIST;
	else if (reg->count >= MIGD_VMS_MAX)
		ret = -ENOSPC;
	if (!ret) {
		if (held) {
			h = *hp;
			*hp = h->next;
		}
		/* Keep creation order: list output is stable. */
		for (tail = &reg->head; *tail; tail = &(*tail)->next)
			;
		*tail = v;
		reg->count++;
	}
	pthread_mutex_unlock(&reg->lock);
	free(h);
	if (ret) {
		free(v);
		return ret;
	}
	if (out)
		*out = v;
	return 0;
}

int migd_registry_add(struct migd_registry *reg, const char *name,
		      struct hv_vm *vm, const struct migd_wl *wl,
		      bool migrated_in, struct migd_vm **out)
{
	return add(reg, name, false, vm, wl, migrated_in, out);
}

int migd_registry_add_held(struct migd_registry *reg, const char *name,
			   struct hv_vm *vm, const struct migd_wl *wl,
			   bool migrated_in, struct migd_vm **out)
{
	return add(reg, name, true, vm, wl, migrated_in, out);
}

void migd_registry_remove(struct migd_registry *reg, struct migd_vm *v)
{
	pthread_mutex_lock(&reg->lock);
	for (struct migd_vm **pp = &reg->head; *pp; pp = &(*pp)->next) {
		if (*pp == v) {
			*pp = v->next;
			reg->count--;
			break;
		}
	}
	pthread_mutex_unlock(&reg->lock);
	/* The monitor harvests from its own thread: gone before the VM. */
	hv_dirtyrate_destroy(v->mon);
	v->mon = NULL;
	if (v->vm) {
		hv_vm_stop(v->vm);
		hv_vm_destroy(v->vm);
	}
	hv_info(COMP, "event=vm_destroyed vm=%s", v->name);
	free(v);
}

Migd__VmState migd_vm_api_state(struct migd_vm *v)
{
	if (v->mig_id)
		return v->mig_unresolved ? MIGD__VM_STATE__VM_STATE_UNRESOLVED
					 : MIGD__VM_STATE__VM_STATE_MIGRATING;
	switch (hv_vm_get_state(v->vm)) {
	case HV_VM_CREATED:
		return MIGD__VM_STATE__VM_STATE_CREATED;
	case HV_VM_RUNNING:
		return MIGD__VM_STATE__VM_STATE_RUNNING;
	case HV_VM_PAUSED:
		return MIGD__VM_STATE__VM_STATE_PAUSED;
	case HV_VM_STOPPED:
		return MIGD__VM_STATE__VM_STATE_STOPPED;
	default:
		return MIGD__VM_STATE__VM_STATE_INVALID;
	}
}

void migd_wl_from_guest(struct hv_vm *vm, struct migd_wl *wl,
			const char *name)
{
	const struct hv_wl_vcpu_params *p;
	const struct hv_ram_layout rl = { vm->cfg.mem_bytes, HV_RAM_HOLE_START,
					  HV_RAM_HOLE_END };

	for (uint32_t i = 0; i < vm->cfg.nr_vcpus; i++)
		if (hv_vm_read_guest(vm,
				     HV_WL_PARAMS_GPA +
					     offsetof(struct hv_wl_params,
						      vcpu) +
					     i * sizeof(vm->cfg.wl[i]),
				     &vm->cfg.wl[i], sizeof(vm->cfg.wl[i])))
			hv_warn(COMP, "event=workload_unread vm=%s vcpu=%u",
				name, i);
	p = &vm->cfg.wl[0];
	memset(wl, 0, sizeof(*wl));
	wl->pattern = p->pattern;
	wl->content = p->content;
	wl->rate_pages = p->rate_pages;
	wl->region_offset = hv_ram_gpa_to_off(&rl, p->region_gpa);
	wl->region_bytes = p->region_pages * HV_PAGE_SIZE * vm->cfg.nr_vcpus;
	wl->write_pct = p->write_pct;
	wl->hot_pct = p->hot_pct;
	wl->hot_share_pct = p->hot_share_pct;
	wl->heartbeat_us = p->heartbeat_us;
	wl->seed = p->seed;
}
