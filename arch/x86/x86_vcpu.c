// SPDX-License-Identifier: MIT
/*
 * x86 vCPU boot state and CPUID (see x86_vcpu.h).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch/x86/x86_vcpu.h"
#include "hvcore/log.h"

#define CPUID_MAX_ENTRIES 256

int x86_cpuid_supported(int sys_fd, void **out)
{
	struct kvm_cpuid2 *c;

	c = calloc(1, sizeof(*c) + CPUID_MAX_ENTRIES * sizeof(c->entries[0]));
	if (!c)
		return -ENOMEM;
	c->nent = CPUID_MAX_ENTRIES;
	if (ioctl(sys_fd, KVM_GET_SUPPORTED_CPUID, c) < 0) {
		int ret = -errno;

		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int x86_vcpu_set_cpuid(int vcpu_fd, const void *supported, uint32_t vcpu_id)
{
	const struct kvm_cpuid2 *s = supported;
	size_t sz = sizeof(*s) + s->nent * sizeof(s->entries[0]);
	struct kvm_cpuid2 *c = malloc(sz);
	int ret = 0;

	if (!c)
		return -ENOMEM;
	memcpy(c, s, sz);
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		/* Initial APIC id, and x2APIC id in the topology leaves. */
		if (e->function == 1)
			e->ebx = (e->ebx & 0x00ffffffu) | vcpu_id << 24;
		if (e->function == 0xb || e->function == 0x1f)
			e->edx = vcpu_id;
	}
	if (ioctl(vcpu_fd, KVM_SET_CPUID2, c) < 0)
		ret = -errno;
	free(c);
	return ret;
}

static void flat_seg(struct kvm_segment *s, uint16_t sel, uint8_t type,
		     bool code64)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffffu;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = code64;
	s->db = !code64;
}

static void busy_tss(struct kvm_segment *s, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	s->limit = 0x67;
	s->type = type; /* 11: busy 32/64-bit TSS */
	s->present = 1;
}

int x86_vcpu_boot_pvh(int vcpu_fd, uint32_t entry, uint32_t start_info)
{
	struct kvm_sregs sr;
	struct kvm_regs r;

	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sr) < 0)
		return -errno;
	/* PVH boot ABI: CR0.PE, flat 4 GiB code (0x8) and data (0x10)
	 * segments, a valid TR, paging off, EFER 0. */
	flat_seg(&sr.cs, 0x8, 0xb, false);
	flat_seg(&sr.ds, 0x10, 0x3, false);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	busy_tss(&sr.tr, 11);
	sr.cr0 = 0x11; /* PE | ET */
	sr.cr4 = 0;
	sr.efer = 0;
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sr) < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	r.rip = entry;
	r.rbx = start_info;
	r.rflags = 0x2;
	if (ioctl(vcpu_fd, KVM_SET_REGS, &r) < 0)
		return -errno;
	return 0;
}

int x86_vcpu_boot_long(int vcpu_fd, uint64_t entry, uint64_t cr3, uint64_t rdi)
{
	struct kvm_sregs sr;
	struct kvm_regs r;

	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sr) < 0)
		return -errno;
	/* The guest's GDT layout (arch/x86/guest/layout.h): kernel code64
	 * 0x08, kernel data 0x10. It loads its own GDT/IDT/TR right away. */
	flat_seg(&sr.cs, 0x8, 0xb, true);
	flat_seg(&sr.ds, 0x10, 0x3, false);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	busy_tss(&sr.tr, 11);
	sr.cr0 = 0x80010031; /* PG | WP | NE | ET | PE */
	sr.cr3 = cr3;
	sr.cr4 = 0x20;	 /* PAE */
	sr.efer = 0x500; /* LME | LMA */
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sr) < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	r.rip = entry;
	r.rdi = rdi;
	r.rflags = 0x2;
	if (ioctl(vcpu_fd, KVM_SET_REGS, &r) < 0)
		return -errno;
	return 0;
}

/*
 * MSRs a guest programs that KVM_GET_MSR_INDEX_LIST leaves out: the MTRRs
 * (default type, fixed ranges, the 8 variable pairs KVM emulates), as
 * QEMU saves them. A Linux guest keeps what its "firmware" (us) set,
 * but may rewrite them (PAT/MTRR code).
 */
static const uint32_t extra_msrs[] = {
	0x2ff, 0x250, 0x258, 0x259, 0x268, 0x269, 0x26a, 0x26b, 0x26c, 0x26d,
	0x26e, 0x26f, 0x200, 0x201, 0x202, 0x203, 0x204, 0x205, 0x206, 0x207,
	0x208, 0x209, 0x20a, 0x20b, 0x20c, 0x20d, 0x20e, 0x20f,
};

static bool msr_listed(const struct x86_msr_list *l, uint32_t idx)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->idx[i] == idx)
			return true;
	return false;
}

static void msr_try_add(int vcpu_fd, struct x86_msr_list *l, uint32_t idx)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} one = {.h.nmsrs = 1, .e.index = idx};

	if (!msr_listed(l, idx) && ioctl(vcpu_fd, KVM_GET_MSRS, &one) == 1)
		l->idx[l->n++] = idx;
}

int x86_msr_list_probe(int sys_fd, int vcpu_fd, struct x86_msr_list **out)
{
	struct kvm_msr_list probe = {.nmsrs = 0};
	struct kvm_msr_list *all;
	struct x86_msr_list *l;
	uint32_t n;
	int ret = 0;

	/* First call reports the count with -E2BIG. */
	if (ioctl(sys_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return -errno;
	n = probe.nmsrs;
	if (n > 4096)
		return -E2BIG;
	all = calloc(1, sizeof(*all) + n * sizeof(uint32_t));
	l = calloc(1, sizeof(*l) +
			      (n + HV_ARRAY_SIZE(extra_msrs)) * sizeof(uint32_t));
	if (!all || !l) {
		ret = -ENOMEM;
		goto err;
	}
	all->nmsrs = n;
	if (ioctl(sys_fd, KVM_GET_MSR_INDEX_LIST, all) < 0) {
		ret = -errno;
		goto err;
	}
	for (uint32_t i = 0; i < all->nmsrs; i++)
		msr_try_add(vcpu_fd, l, all->indices[i]);
	for (size_t i = 0; i < HV_ARRAY_SIZE(extra_msrs); i++)
		msr_try_add(vcpu_fd, l, extra_msrs[i]);
	free(all);
	*out = l;
	return 0;
err:
	free(all);
	free(l);
	return ret;
}
