// SPDX-License-Identifier: MIT
#include "migrated/mig/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/memslots.h"
#include "hvcore/types.h"

bool mig_vm_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strnlen(name, MIG_VM_NAME_MAX + 1);
	if (n == 0 || n > MIG_VM_NAME_MAX || name[0] == '-' ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		/* Spelled out rather than isalnum(): locale-independent. */
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* The boot configuration, pointing into @vm's cfg (which outlives the
 * layout). One allocation: the LinuxBoot, its disks and their array. */
static int boot_build(struct hv_vm *vm, Mig__VmLayout *l)
{
	const struct hv_boot_cfg *b = &vm->cfg.boot;
	struct {
		Mig__LinuxBoot boot;
		Mig__LinuxDisk disk[HV_BOOT_DISKS_MAX];
		Mig__LinuxDisk *pp[HV_BOOT_DISKS_MAX];
	} *x;

	if (!hv_vm_is_linux(vm))
		return 0;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	mig__linux_boot__init(&x->boot);
	x->boot.kernel = (char *)b->kernel;
	x->boot.initrd = (char *)b->initrd;
	x->boot.cmdline = (char *)b->cmdline;
	for (uint32_t i = 0; i < b->nr_disks && i < HV_BOOT_DISKS_MAX; i++) {
		mig__linux_disk__init(&x->disk[i]);
		x->disk[i].path = (char *)b->disk[i].path;
		x->disk[i].read_only = b->disk[i].read_only;
		x->pp[i] = &x->disk[i];
	}
	x->boot.n_disks = b->nr_disks;
	x->boot.disks = x->pp;
	x->boot.rng = b->rng;
	if (b->net_tap[0]) {
		x->boot.net_tap = (char *)b->net_tap;
		x->boot.net_mac.data = (uint8_t *)b->net_mac;
		x->boot.net_mac.len = 6;
	}
	l->boot = &x->boot;
	l->features |= MIG_FEATURE_LINUX;
	return 0;
}

int mig_layout_build(struct hv_vm *vm, const char *name, Mig__VmLayout **out)
{
	unsigned n = hv_vm_slot_count(vm);
	Mig__VmLayout *l;
	Mig__Memslot *ms;
	Mig__Memslot **pp;

	if (!n || (name && *name && !mig_vm_name_valid(name)))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	ms = calloc(n, sizeof(*ms));
	pp = calloc(n, sizeof(*pp));
	if (!l || !ms || !pp) {
		free(l);
		free(ms);
		free(pp);
		return -ENOMEM;
	}
	mig__vm_layout__init(l);
	for (unsigned i = 0; i < n; i++) {
		uint32_t id = 0;
		gfn_t base = 0;
		uint64_t np = 0;

		mig__memslot__init(&ms[i]);
		hv_vm_slot_info(vm, i, &id, &base, &np);
		ms[i].id = id;
		ms[i].base_gfn = base;
		ms[i].npages = np;
		pp[i] = &ms[i];
	}
	l->n_slots = n;
	l->slots = pp;
	l->nr_vcpus = vm->cfg.nr_vcpus;
	l->accel = (char *)hv_accel_kind_name(vm->cfg.accel);
	l->features = 0;
	l->page_size = HV_PAGE_SIZE;
	/* Not freed by mig_layout_free(): the caller's string. */
	l->name = (char *)(name ? name : "");
	if (boot_build(vm, l)) {
		mig_layout_free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void mig_layout_free(Mig__VmLayout *l)
{
	if (!l)
		return;
	if (l->n_slots)
		free(l->slots[0]);
	free(l->slots);
	free(l->boot); /* boot_build()'s one allocation */
	free(l);
}

static enum hv_accel_kind accel_by_name(const char *name)
{
	for (unsigned k = HV_ACCEL_INVALID + 1; k < HV_ACCEL_COUNT; k++)
		if (name && !strcmp(name, hv_accel_kind_name(k)))
			return (enum hv_accel_kind)k;
	return HV_ACCEL_INVALID;
}

/* Whether @l's slots are exactly those of @mem cut by @slot_bytes. */
static bool slots_match(const Mig__VmLayout *l, uint64_t mem,
			uint64_t slot_bytes)
{
	if (hv_vm_slot_geometry(mem, slot_bytes, 0, NULL, NULL) != l->n_slots)
		return false;
	for (size_t i = 0; i < l->n_slots; i++) {
		const Mig__Memslot *s = l->slots[i];
		gfn_t gfn = 0;
		uint64_t np = 0;

		hv_vm_slot_geometry(mem, slot_bytes, (unsigned)i, &gfn, &np);
		if (s->id != i || s->base_gfn != gfn || s->npages != np ||
		    s->flags)
			return false;
	}
	return true;
}

#define REFUSE(r, ...)                                                      \
	do {                                                                 \
		snprintf(why, why_len, __VA_ARGS__);                         \
		return MIG__REFUSE_REASON__##r;                              \
	} while (0)

int mig_layout_to_cfg(const Mig__VmLayout *l, const struct hv_vm_cfg *base,
		      struct hv_vm_cfg *cfg, char *why, size_t why_len)
{
	const uint64_t two_m = 2ULL << 20;
	enum hv_accel_kind accel = accel_by_name(l->accel);
	uint64_t slot_bytes, mem = 0, cand[3] = { 0 };
	size_t k;
	struct hv_vm_cfg c;

	if (accel == HV_ACCEL_INVALID)
		REFUSE(REFUSE_ACCEL, "unknown accelerator \"%.32s\"",
		       l->accel ? l->accel : "");
	if (base && base->accel != HV_ACCEL_INVALID && base->accel != accel)
		REFUSE(REFUSE_ACCEL,
		       "VM runs on %s, whose state loads only into %s; this "
		       "side receives into %s (migrate-recv --accel %s, on a "
		       "host that has it)",
		       hv_accel_kind_name(accel), hv_accel_kind_name(accel),
		       hv_accel_kind_name(base->accel),
		       hv_accel_kind_name(accel));
	if (l->features & ~MIG_FEATURES_SUPPORTED)
		REFUSE(REFUSE_FEATURES, "features 0x%llx not supported",
		       (unsigned long long)(l->features &
					    ~MIG_FEATURES_SUPPORTED));
	/* Checked before anything else of the VM: the destination may use
	 * the name as a registry key, in logs and in file names. */
	if (l->name && *l->name && !mig_vm_name_valid(l->name))
		REFUSE(REFUSE_NAME,
		       "invalid VM name (at most %d of [A-Za-z0-9._-], not "
		       "starting with '-')",
		       MIG_VM_NAME_MAX);
	if (l->page_size != HV_PAGE_SIZE)
		REFUSE(REFUSE_LAYOUT, "page size %llu",
		       (unsigned long long)l->page_size);
	if (!l->nr_vcpus || l->nr_vcpus > HV_VM_MAX_VCPUS)
		REFUSE(REFUSE_LAYOUT, "%u vCPUs", l->nr_vcpus);
	if (!l->n_slots || l->n_slots > HV_MEMSLOT_MAX)
		REFUSE(REFUSE_LAYOUT, "%zu slots", l->n_slots);
	for (size_t i = 0; i < l->n_slots; i++) {
		const Mig__Memslot *s = l->slots[i];

		if (!s->npages || s->npages > (HV_VM_MAX_MEM >> HV_PAGE_SHIFT))
			REFUSE(REFUSE_LAYOUT, "slot %zu: npages %llu", i,
			       (unsigned long long)s->npages);
		mem += s->npages << HV_PAGE_SHIFT;
	}
	if (mem < HV_VM_MIN_MEM || mem > HV_VM_MAX_MEM || mem % two_m)
		REFUSE(REFUSE_LAYOUT, "%llu bytes of RAM",
		       (unsigned long long)mem);
	/*
	 * The only shapes hv_vm_create() builds: one slot per RAM range
	 * (slot_bytes 0), or every range cut by one slot size, which is the
	 * first slot's, or the second's when the first is all RAM below the
	 * hole. The offer must be exactly one of them, slot by slot: ids 0..
	 * in gfn order, none in or across the MMIO hole.
	 */
	cand[1] = l->slots[0]->npages << HV_PAGE_SHIFT;
	cand[2] = l->n_slots > 1 ? l->slots[1]->npages << HV_PAGE_SHIFT : 0;
	for (k = 0; k < HV_ARRAY_SIZE(cand); k++)
		if (cand[k] % two_m == 0 && slots_match(l, mem, cand[k]))
			break;
	if (k == HV_ARRAY_SIZE(cand))
		REFUSE(REFUSE_LAYOUT,
		       "%zu slots (first gfn 0x%llx, %llu pages) are not "
		       "RAM below 3 GiB and from 4 GiB in equal slots",
		       l->n_slots, (unsigned long long)l->slots[0]->base_gfn,
		       (unsigned long long)l->slots[0]->npages);
	slot_bytes = cand[k];

	if (!!(l->features & MIG_FEATURE_LINUX) != !!l->boot)
		REFUSE(REFUSE_LAYOUT, "Linux feature bit and boot differ");
	hv_vm_cfg_init(&c, accel, mem, l->nr_vcpus);
	c.slot_bytes = slot_bytes;
	if (l->boot) {
		const Mig__LinuxBoot *b = l->boot;

		if (!b->kernel || !*b->kernel ||
		    strlen(b->kernel) >= sizeof(c.boot.kernel) ||
		    (b->initrd && strlen(b->initrd) >= sizeof(c.boot.initrd)) ||
		    (b->cmdline &&
		     strlen(b->cmdline) >= sizeof(c.boot.cmdline)) ||
		    b->n_disks > HV_BOOT_DISKS_MAX)
			REFUSE(REFUSE_LAYOUT, "Linux boot configuration");
		snprintf(c.boot.kernel, sizeof(c.boot.kernel), "%s", b->kernel);
		snprintf(c.boot.initrd, sizeof(c.boot.initrd), "%s",
			 b->initrd ? b->initrd : "");
		snprintf(c.boot.cmdline, sizeof(c.boot.cmdline), "%s",
			 b->cmdline ? b->cmdline : "");
		for (size_t i = 0; i < b->n_disks; i++) {
			const char *p = b->disks[i]->path;

			if (!p || !*p || strlen(p) >= sizeof(c.boot.disk[i].path))
				REFUSE(REFUSE_LAYOUT, "disk %zu path", i);
			snprintf(c.boot.disk[i].path,
				 sizeof(c.boot.disk[i].path), "%s", p);
			c.boot.disk[i].read_only = b->disks[i]->read_only;
		}
		c.boot.nr_disks = (uint32_t)b->n_disks;
		c.boot.rng = b->rng;
		if (b->net_tap && *b->net_tap) {
			if (strlen(b->net_tap) >= sizeof(c.boot.net_tap) ||
			    b->net_mac.len != 6 || b->net_mac.data[0] & 1)
				REFUSE(REFUSE_LAYOUT, "virtio-net tap or MAC");
			snprintf(c.boot.net_tap, sizeof(c.boot.net_tap), "%s",
				 b->net_tap);
			memcpy(c.boot.net_mac, b->net_mac.data, 6);
		}
	}
	if (base) {
		c.backing = base->backing ? base->backing : c.backing;
		c.dirty_ring_entries = base->dirty_ring_entries;
		c.clear_chunk_pages = base->clear_chunk_pages;
		c.guest_elf = base->guest_elf;
	}
	*cfg = c;
	return 0;
}
