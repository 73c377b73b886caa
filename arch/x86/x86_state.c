// SPDX-License-Identifier: MIT
/*
 * x86 vCPU and VM state save/restore on KVM as X86VcpuState / X86VmState
 * (proto/vmstate.proto). The order of the restore follows KVM's needs and
 * the kernel selftests' vcpu_load_state(): sregs (CR4/EFER/APIC base)
 * first, then MSRs, XSAVE, XCRs, LAPIC, events, MP state, debug registers,
 * the TSC offset and finally the general registers.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "arch/x86/x86_vcpu.h"
#include "hvcore/log.h"
#include "proto/vmstate.pb-c.h"

#define X86_STATE_VERSION 1u
/* X86VmState: 2 adds the PIT and the kvmclock's realtime pair; 1 is
 * still read. */
#define X86_VM_STATE_VERSION 2u
#define X86_VM_STATE_MAX (64u << 10)
#define X86_CLOCK_MAX_GAP_NS (3600ull * 1000000000ull)
#define NR_REGS 18
#define NR_SEGS 8
#define NR_CRS 5
#define MAX_MSRS 4160
#define MAX_XCRS 16
#define MAX_XSAVE (1u << 20)
#define X86_MSR_TSC_DEADLINE 0x6e0

static void seg_to_pb(const struct kvm_segment *s, Hvstate__X86Segment *p)
{
	p->addr = s->base;
	p->limit = s->limit;
	p->selector = s->selector;
	p->attrs = (uint32_t)s->type | (uint32_t)s->s << 4 |
		   (uint32_t)s->dpl << 5 | (uint32_t)s->present << 7 |
		   (uint32_t)s->avl << 8 | (uint32_t)s->l << 9 |
		   (uint32_t)s->db << 10 | (uint32_t)s->g << 11 |
		   (uint32_t)s->unusable << 12;
}

static void seg_from_pb(const Hvstate__X86Segment *p, struct kvm_segment *s)
{
	memset(s, 0, sizeof(*s));
	s->base = p->addr;
	s->limit = p->limit;
	s->selector = (uint16_t)p->selector;
	s->type = p->attrs & 0xf;
	s->s = (p->attrs >> 4) & 1;
	s->dpl = (p->attrs >> 5) & 3;
	s->present = (p->attrs >> 7) & 1;
	s->avl = (p->attrs >> 8) & 1;
	s->l = (p->attrs >> 9) & 1;
	s->db = (p->attrs >> 10) & 1;
	s->g = (p->attrs >> 11) & 1;
	s->unusable = (p->attrs >> 12) & 1;
}

static uint64_t *regs_array(struct kvm_regs *r)
{
	_Static_assert(sizeof(struct kvm_regs) == NR_REGS * 8, "kvm_regs");
	return (uint64_t *)r;
}

void x86_fpu_caps_probe(int sys_fd, struct x86_fpu_caps *out)
{
	int r;

	out->xsave = ioctl(sys_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE) > 0;
	out->xcrs = ioctl(sys_fd, KVM_CHECK_EXTENSION, KVM_CAP_XCRS) > 0;
	r = out->xsave ? ioctl(sys_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2) : 0;
	out->xsave2_size = r > 4096 ? r : 0;
}

/* The size of the FPU part of a saved vCPU: the XSAVE region, or none
 * (struct kvm_fpu travels in its own field). */
static size_t xsave_len(const struct x86_fpu_caps *fpu)
{
	if (!fpu->xsave)
		return 0;
	return fpu->xsave2_size > 4096 ? (size_t)fpu->xsave2_size : 4096;
}

static int get_tsc_offset(int fd, uint64_t *off)
{
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uint64_t)(uintptr_t)off};

	if (ioctl(fd, KVM_HAS_DEVICE_ATTR, &a) < 0)
		return -errno;
	return ioctl(fd, KVM_GET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

static int set_tsc_offset(int fd, uint64_t off)
{
	struct kvm_device_attr a = {.group = KVM_VCPU_TSC_CTRL,
				    .attr = KVM_VCPU_TSC_OFFSET,
				    .addr = (uint64_t)(uintptr_t)&off};

	return ioctl(fd, KVM_SET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

int x86_vcpu_state_save(int fd, uint32_t vcpu_id,
			const struct x86_msr_list *msrs,
			const struct x86_fpu_caps *fpu, struct hv_blob *out)
{
	Hvstate__X86VcpuState m = HVSTATE__X86_VCPU_STATE__INIT;
	Hvstate__X86Segment segs[NR_SEGS], gdt, idt;
	Hvstate__X86Segment *segp[NR_SEGS];
	Hvstate__X86Xcr xcr[MAX_XCRS], *xcrp[MAX_XCRS];
	Hvstate__X86Msr *msr = NULL, **msrp = NULL;
	struct kvm_msrs *km = NULL;
	struct kvm_regs regs;
	struct kvm_sregs sr;
	struct kvm_xcrs xcrs = {0};
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events ev;
	struct kvm_mp_state mp;
	struct kvm_debugregs dr;
	struct kvm_fpu kfpu;
	uint64_t crs[NR_CRS];
	void *xs = NULL;
	size_t xs_len = xsave_len(fpu);
	int ret = 0;

	if (ioctl(fd, KVM_GET_REGS, &regs) < 0 ||
	    ioctl(fd, KVM_GET_SREGS, &sr) < 0 ||
	    ioctl(fd, KVM_GET_LAPIC, &lapic) < 0 ||
	    ioctl(fd, KVM_GET_VCPU_EVENTS, &ev) < 0 ||
	    ioctl(fd, KVM_GET_MP_STATE, &mp) < 0 ||
	    ioctl(fd, KVM_GET_DEBUGREGS, &dr) < 0 ||
	    (fpu->xcrs && ioctl(fd, KVM_GET_XCRS, &xcrs) < 0) ||
	    (!fpu->xsave && ioctl(fd, KVM_GET_FPU, &kfpu) < 0))
		return -errno;
	xs = calloc(1, xs_len ? xs_len : 1);
	km = calloc(1, sizeof(*km) + msrs->n * sizeof(km->entries[0]));
	msr = calloc(msrs->n ? msrs->n : 1, sizeof(*msr));
	msrp = calloc(msrs->n ? msrs->n : 1, sizeof(*msrp));
	if (!xs || !km || !msr || !msrp) {
		ret = -ENOMEM;
		goto out;
	}
	if (fpu->xsave &&
	    ioctl(fd, fpu->xsave2_size > 4096 ? KVM_GET_XSAVE2 : KVM_GET_XSAVE,
		  xs) < 0) {
		ret = -errno;
		goto out;
	}
	km->nmsrs = msrs->n;
	for (uint32_t i = 0; i < msrs->n; i++)
		km->entries[i].index = msrs->idx[i];
	if (ioctl(fd, KVM_GET_MSRS, km) != (int)msrs->n) {
		ret = -EIO;
		goto out;
	}

	m.version = X86_STATE_VERSION;
	m.vcpu_id = vcpu_id;
	m.n_regs = NR_REGS;
	m.regs = regs_array(&regs);
	{
		const struct kvm_segment *ks[NR_SEGS] = {
			&sr.cs, &sr.ds, &sr.es, &sr.fs,
			&sr.gs, &sr.ss, &sr.tr, &sr.ldt,
		};

		for (int i = 0; i < NR_SEGS; i++) {
			hvstate__x86_segment__init(&segs[i]);
			seg_to_pb(ks[i], &segs[i]);
			segp[i] = &segs[i];
		}
	}
	m.n_segs = NR_SEGS;
	m.segs = segp;
	hvstate__x86_segment__init(&gdt);
	hvstate__x86_segment__init(&idt);
	gdt.addr = sr.gdt.base;
	gdt.limit = sr.gdt.limit;
	idt.addr = sr.idt.base;
	idt.limit = sr.idt.limit;
	m.gdt = &gdt;
	m.idt = &idt;
	crs[0] = sr.cr0;
	crs[1] = sr.cr2;
	crs[2] = sr.cr3;
	crs[3] = sr.cr4;
	crs[4] = sr.cr8;
	m.n_cr = NR_CRS;
	m.cr = crs;
	m.efer = sr.efer;
	m.apic_base = sr.apic_base;
	m.xsave.data = xs;
	m.xsave.len = xs_len;
	if (!fpu->xsave) {
		m.fpu.data = (uint8_t *)&kfpu;
		m.fpu.len = sizeof(kfpu);
	}
	if (xcrs.nr_xcrs > MAX_XCRS)
		xcrs.nr_xcrs = MAX_XCRS;
	for (uint32_t i = 0; i < xcrs.nr_xcrs; i++) {
		hvstate__x86_xcr__init(&xcr[i]);
		xcr[i].xcr = xcrs.xcrs[i].xcr;
		xcr[i].value = xcrs.xcrs[i].value;
		xcrp[i] = &xcr[i];
	}
	m.n_xcrs = xcrs.nr_xcrs;
	m.xcrs = xcrp;
	for (uint32_t i = 0; i < msrs->n; i++) {
		hvstate__x86_msr__init(&msr[i]);
		msr[i].index = km->entries[i].index;
		msr[i].value = km->entries[i].data;
		msrp[i] = &msr[i];
	}
	m.n_msrs = msrs->n;
	m.msrs = msrp;
	m.lapic.data = (uint8_t *)lapic.regs;
	m.lapic.len = sizeof(lapic.regs);
	m.events.data = (uint8_t *)&ev;
	m.events.len = sizeof(ev);
	m.mp_state = mp.mp_state;
	m.debugregs.data = (uint8_t *)&dr;
	m.debugregs.len = sizeof(dr);
	m.has_tsc_offset = get_tsc_offset(fd, &m.tsc_offset) == 0;

	out->len = hvstate__x86_vcpu_state__get_packed_size(&m);
	out->data = malloc(out->len);
	if (!out->data) {
		ret = -ENOMEM;
		goto out;
	}
	hvstate__x86_vcpu_state__pack(&m, out->data);
out:
	free(xs);
	free(km);
	free(msr);
	free(msrp);
	return ret;
}

/* Check every length and count before anything is applied. */
static int check_vcpu_msg(const Hvstate__X86VcpuState *m, uint32_t vcpu_id,
			  size_t xs_len)
{
	if (m->version != X86_STATE_VERSION || m->vcpu_id != vcpu_id ||
	    m->n_regs != NR_REGS || m->n_segs != NR_SEGS || !m->gdt ||
	    !m->idt || m->n_cr != NR_CRS || m->xsave.len != xs_len ||
	    m->fpu.len != (xs_len ? 0 : sizeof(struct kvm_fpu)) ||
	    m->n_xcrs > MAX_XCRS || m->n_msrs > MAX_MSRS ||
	    m->lapic.len != sizeof(((struct kvm_lapic_state *)0)->regs) ||
	    m->events.len != sizeof(struct kvm_vcpu_events) ||
	    m->debugregs.len != sizeof(struct kvm_debugregs))
		return -EINVAL;
	for (size_t i = 0; i < m->n_segs; i++)
		if (!m->segs[i])
			return -EINVAL;
	return 0;
}

static int put_tsc_deadline(int fd, const Hvstate__X86VcpuState *m)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} one = {.h.nmsrs = 1, .e.index = X86_MSR_TSC_DEADLINE};

	for (size_t i = 0; i < m->n_msrs; i++) {
		if (m->msrs[i]->index != X86_MSR_TSC_DEADLINE)
			continue;
		one.e.data = m->msrs[i]->value;
		return ioctl(fd, KVM_SET_MSRS, &one) == 1 ? 0 : -EIO;
	}
	return 0;
}

int x86_vcpu_state_restore(int fd, uint32_t vcpu_id,
			   const struct x86_fpu_caps *fpu,
			   const struct hv_blob *in)
{
	size_t xs_len = xsave_len(fpu);
	Hvstate__X86VcpuState *m;
	struct kvm_msrs *km = NULL;
	struct kvm_regs regs;
	struct kvm_sregs sr;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events ev;
	struct kvm_mp_state mp;
	struct kvm_debugregs dr;
	struct kvm_fpu kfpu;
	const char *step = "decode";
	int ret = 0;

	m = hvstate__x86_vcpu_state__unpack(NULL, in->len, in->data);
	if (!m)
		return -EINVAL;
	ret = check_vcpu_msg(m, vcpu_id, xs_len);
	if (ret)
		goto out;
	km = calloc(1, sizeof(*km) + m->n_msrs * sizeof(km->entries[0]));
	if (!km) {
		ret = -ENOMEM;
		goto out;
	}
	if (ioctl(fd, KVM_GET_SREGS, &sr) < 0) {
		ret = -errno;
		goto out;
	}
	{
		struct kvm_segment *ks[NR_SEGS] = {
			&sr.cs, &sr.ds, &sr.es, &sr.fs,
			&sr.gs, &sr.ss, &sr.tr, &sr.ldt,
		};

		for (int i = 0; i < NR_SEGS; i++)
			seg_from_pb(m->segs[i], ks[i]);
	}
	sr.gdt.base = m->gdt->addr;
	sr.gdt.limit = (uint16_t)m->gdt->limit;
	sr.idt.base = m->idt->addr;
	sr.idt.limit = (uint16_t)m->idt->limit;
	sr.cr0 = m->cr[0];
	sr.cr2 = m->cr[1];
	sr.cr3 = m->cr[2];
	sr.cr4 = m->cr[3];
	sr.cr8 = m->cr[4];
	sr.efer = m->efer;
	sr.apic_base = m->apic_base;
	memset(sr.interrupt_bitmap, 0, sizeof(sr.interrupt_bitmap));
	step = "sregs";
	if (ioctl(fd, KVM_SET_SREGS, &sr) < 0)
		goto err_errno;
	km->nmsrs = (uint32_t)m->n_msrs;
	for (size_t i = 0; i < m->n_msrs; i++) {
		km->entries[i].index = m->msrs[i]->index;
		km->entries[i].data = m->msrs[i]->value;
	}
	step = "msrs";
	ret = ioctl(fd, KVM_SET_MSRS, km);
	if (ret != (int)m->n_msrs) {
		hv_err("x86_state",
		       "vcpu=%u op=set_msrs set=%d of=%zu "
		       "failed_index=0x%x",
		       vcpu_id, ret, m->n_msrs,
		       ret >= 0 && (size_t)ret < m->n_msrs ? m->msrs[ret]->index
							   : 0);
		ret = -EINVAL;
		goto out;
	}
	ret = 0;
	if (fpu->xsave) {
		step = "xsave";
		/* KVM_SET_XSAVE accepts the larger KVM_GET_XSAVE2 buffer
		 * too. */
		if (ioctl(fd, KVM_SET_XSAVE, m->xsave.data) < 0)
			goto err_errno;
	} else {
		step = "fpu";
		memcpy(&kfpu, m->fpu.data, sizeof(kfpu));
		if (ioctl(fd, KVM_SET_FPU, &kfpu) < 0)
			goto err_errno;
	}
	memset(&xcrs, 0, sizeof(xcrs));
	xcrs.nr_xcrs = (uint32_t)m->n_xcrs;
	for (size_t i = 0; i < m->n_xcrs; i++) {
		xcrs.xcrs[i].xcr = m->xcrs[i]->xcr;
		xcrs.xcrs[i].value = m->xcrs[i]->value;
	}
	/* A host without XSAVE has no XCRs to set (and refuses the ioctl);
	 * a state that carries some cannot be loaded there. */
	step = "xcrs";
	if (fpu->xcrs) {
		if (ioctl(fd, KVM_SET_XCRS, &xcrs) < 0)
			goto err_errno;
	} else if (m->n_xcrs) {
		ret = -EINVAL;
		goto out_log;
	}
	memcpy(lapic.regs, m->lapic.data, sizeof(lapic.regs));
	step = "lapic";
	if (ioctl(fd, KVM_SET_LAPIC, &lapic) < 0)
		goto err_errno;
	/* KVM drops a TSC deadline written while the LAPIC timer is not in
	 * deadline mode: write it again now that the LAPIC is (QEMU's
	 * kvm_put_tscdeadline_msr()). */
	step = "tsc_deadline";
	ret = put_tsc_deadline(fd, m);
	if (ret)
		goto out_log;
	memcpy(&ev, m->events.data, sizeof(ev));
	step = "events";
	if (ioctl(fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		goto err_errno;
	mp.mp_state = m->mp_state;
	step = "mp_state";
	if (ioctl(fd, KVM_SET_MP_STATE, &mp) < 0)
		goto err_errno;
	memcpy(&dr, m->debugregs.data, sizeof(dr));
	step = "debugregs";
	if (ioctl(fd, KVM_SET_DEBUGREGS, &dr) < 0)
		goto err_errno;
	if (m->has_tsc_offset) {
		step = "tsc_offset";
		ret = set_tsc_offset(fd, m->tsc_offset);
		if (ret)
			goto out_log;
	}
	memcpy(regs_array(&regs), m->regs, sizeof(regs));
	step = "regs";
	if (ioctl(fd, KVM_SET_REGS, &regs) < 0)
		goto err_errno;
	goto out;
err_errno:
	ret = -errno;
out_log:
	hv_err("x86_state", "vcpu=%u op=restore step=%s err=%d", vcpu_id, step,
	       ret);
out:
	free(km);
	hvstate__x86_vcpu_state__free_unpacked(m, NULL);
	return ret;
}

/* The PIT, when the VM has one (KVM_CREATE_PIT2): 1, 0 without, or
 * -errno. */
static int get_pit(int vm_fd, struct kvm_pit_state2 *pit)
{
	memset(pit, 0, sizeof(*pit));
	if (ioctl(vm_fd, KVM_GET_PIT2, pit) == 0)
		return 1;
	/* KVM answers ENXIO for a VM without a PIT. */
	return errno == ENXIO ? 0 : -errno;
}

int x86_vm_state_save(int vm_fd, int vcpu0_fd, struct hv_blob *out)
{
	Hvstate__X86VmState m = HVSTATE__X86_VM_STATE__INIT;
	struct kvm_clock_data clk = {0};
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
	int khz, has_pit;

	if (ioctl(vm_fd, KVM_GET_CLOCK, &clk) < 0)
		return -errno;
	khz = ioctl(vcpu0_fd, KVM_GET_TSC_KHZ);
	if (khz < 0)
		return -errno;
	for (int i = 0; i < 3; i++) {
		memset(&chip[i], 0, sizeof(chip[i]));
		chip[i].chip_id = (uint32_t)i;
		if (ioctl(vm_fd, KVM_GET_IRQCHIP, &chip[i]) < 0)
			return -errno;
	}
	has_pit = get_pit(vm_fd, &pit);
	if (has_pit < 0)
		return has_pit;
	m.version = X86_VM_STATE_VERSION;
	m.kvmclock = clk.clock;
	m.kvmclock_flags = clk.flags;
	if (clk.flags & KVM_CLOCK_REALTIME)
		m.kvmclock_realtime = clk.realtime;
	if (clk.flags & KVM_CLOCK_HOST_TSC)
		m.kvmclock_host_tsc = clk.host_tsc;
	m.tsc_khz = (uint32_t)khz;
	m.pic_master.data = (uint8_t *)&chip[0].chip;
	m.pic_master.len = sizeof(chip[0].chip);
	m.pic_slave.data = (uint8_t *)&chip[1].chip;
	m.pic_slave.len = sizeof(chip[1].chip);
	m.ioapic.data = (uint8_t *)&chip[2].chip;
	m.ioapic.len = sizeof(chip[2].chip);
	if (has_pit) {
		m.pit.data = (uint8_t *)&pit;
		m.pit.len = sizeof(pit);
	}
	out->len = hvstate__x86_vm_state__get_packed_size(&m);
	out->data = malloc(out->len);
	if (!out->data)
		return -ENOMEM;
	hvstate__x86_vm_state__pack(&m, out->data);
	return 0;
}

/*
 * The clock to set: the saved kvmclock, advanced by the wall time since
 * the save when both KVMs pair the clock with CLOCK_REALTIME (the
 * kernel's KVM_CLOCK_REALTIME: it adds now - realtime itself), so the
 * guest's clock does not stand still for the downtime. A pair from the
 * future or older than X86_CLOCK_MAX_GAP_NS (hosts' clocks apart, a
 * state kept on disk) is not used: the clock then resumes where it
 * stopped, as without the flag.
 */
static void clock_to_set(int vm_fd, const Hvstate__X86VmState *m,
			 struct kvm_clock_data *clk)
{
	struct timespec ts;
	int caps;
	uint64_t now;

	memset(clk, 0, sizeof(*clk));
	clk->clock = m->kvmclock;
	if (m->version < 2 || !(m->kvmclock_flags & KVM_CLOCK_REALTIME))
		return;
	caps = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_ADJUST_CLOCK);
	if (caps < 0 || !(caps & KVM_CLOCK_REALTIME))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (now < m->kvmclock_realtime ||
	    now - m->kvmclock_realtime > X86_CLOCK_MAX_GAP_NS) {
		hv_warn("x86_state",
			"op=restore_clock realtime_saved=%llu realtime=%llu "
			"note=not_advanced",
			(unsigned long long)m->kvmclock_realtime,
			(unsigned long long)now);
		return;
	}
	clk->flags = KVM_CLOCK_REALTIME;
	clk->realtime = m->kvmclock_realtime;
}

int x86_vm_state_restore(int vm_fd, int vcpu0_fd, const struct hv_blob *in)
{
	Hvstate__X86VmState *m;
	struct kvm_clock_data clk;
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	const ProtobufCBinaryData *chips[3];
	int ret = 0, khz;

	if (!in->len || in->len > X86_VM_STATE_MAX)
		return -EINVAL;
	m = hvstate__x86_vm_state__unpack(NULL, in->len, in->data);
	if (!m)
		return -EINVAL;
	chips[0] = &m->pic_master;
	chips[1] = &m->pic_slave;
	chips[2] = &m->ioapic;
	if ((m->version != X86_VM_STATE_VERSION &&
	     m->version != X86_VM_STATE_VERSION - 1) ||
	    !m->tsc_khz ||
	    (m->version < 2 && (m->pit.len || m->kvmclock_realtime ||
				m->kvmclock_host_tsc)) ||
	    (m->pit.len && m->pit.len != sizeof(pit))) {
		ret = -EINVAL;
		goto out;
	}
	for (int i = 0; i < 3; i++)
		if (chips[i]->len != sizeof(chip.chip)) {
			ret = -EINVAL;
			goto out;
		}
	khz = ioctl(vcpu0_fd, KVM_GET_TSC_KHZ);
	if (khz > 0 && (uint32_t)khz != m->tsc_khz)
		hv_warn("x86_state",
			"op=restore tsc_khz_saved=%u tsc_khz=%d "
			"note=guest_tsc_rate_differs",
			m->tsc_khz, khz);
	for (int i = 0; i < 3; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = (uint32_t)i;
		memcpy(&chip.chip, chips[i]->data, sizeof(chip.chip));
		if (ioctl(vm_fd, KVM_SET_IRQCHIP, &chip) < 0) {
			ret = -errno;
			goto out;
		}
	}
	/* A saved PIT needs one here (the same VM kind was created). */
	if (m->pit.len) {
		memcpy(&pit, m->pit.data, sizeof(pit));
		if (ioctl(vm_fd, KVM_SET_PIT2, &pit) < 0) {
			ret = -errno;
			hv_err("x86_state", "op=restore step=pit err=%d", ret);
			goto out;
		}
	}
	clock_to_set(vm_fd, m, &clk);
	if (ioctl(vm_fd, KVM_SET_CLOCK, &clk) < 0)
		ret = -errno;
out:
	hvstate__x86_vm_state__free_unpacked(m, NULL);
	return ret;
}
