// SPDX-License-Identifier: MIT
/*
 * KVM accelerator: VM creation, the required-capability table, memslots,
 * and the ops table. The guest image is loaded here (PVH, arch/x86/pvh.h)
 * together with the start_info page and the APs' page tables, except into
 * adopted RAM (hv_vm_cfg.adopt_mem).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arch/x86/guest/ucall.h"
#include "arch/x86/pgtable.h"
#include "arch/x86/pvh.h"
#include "hvcore/guest_mem.h"
#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/log.h"
#include "hvcore/memslots.h"
#include "hvcore/vm.h"

#ifndef KVM_CAP_VM_TSC_CONTROL
#define KVM_CAP_VM_TSC_CONTROL 214
#endif

/* Capabilities without which no VM is created; the error names the one
 * missing (kvmtool's habit). Mode-specific ones are checked at start.
 * XSAVE and XCRS are not here: a host CPU without XSAVE (QEMU's qemu64)
 * has neither, and the FPU state then travels as KVM_GET/SET_FPU
 * (x86_fpu_caps_probe()), as QEMU does. */
static const struct {
	long cap;
	const char *name;
} required_caps[] = {
	{KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY"},
	{KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP"},
	{KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR"},
	{KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID"},
	{KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT"},
	{KVM_CAP_GET_TSC_KHZ, "KVM_CAP_GET_TSC_KHZ"},
	{KVM_CAP_ADJUST_CLOCK, "KVM_CAP_ADJUST_CLOCK"},
	{KVM_CAP_VCPU_EVENTS, "KVM_CAP_VCPU_EVENTS"},
	{KVM_CAP_DEBUGREGS, "KVM_CAP_DEBUGREGS"},
	{KVM_CAP_MP_STATE, "KVM_CAP_MP_STATE"},
	{KVM_CAP_SYNC_MMU, "KVM_CAP_SYNC_MMU"},
};

static void kick_handler(int sig)
{
	(void)sig;
}

static pthread_once_t kick_once = PTHREAD_ONCE_INIT;
static int kick_err;

/* The process-wide kick handler: installed once, never removed (a no-op,
 * so leaving it is harmless). */
static void install_kick_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(HV_KVM_KICK_SIGNAL, &sa, NULL) < 0)
		kick_err = -errno;
}

int hv_kvm_check_cap(struct hv_kvm_vm *k, long cap)
{
	int r = ioctl(k->vm_fd >= 0 ? k->vm_fd : k->sys_fd, KVM_CHECK_EXTENSION,
		      cap);

	return r < 0 ? 0 : r;
}

bool hv_kvm_available(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = ioctl(fd, KVM_GET_API_VERSION, 0) == KVM_API_VERSION;
	close(fd);
	return ok;
}

static int enable_cap(int fd, uint32_t cap, uint64_t arg0)
{
	struct kvm_enable_cap c = {.cap = cap, .args = {arg0}};

	return ioctl(fd, KVM_ENABLE_CAP, &c) < 0 ? -errno : 0;
}

static int setup_ring(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	uint32_t bytes = vm->cfg.dirty_ring_entries *
			 (uint32_t)sizeof(struct kvm_dirty_gfn);
	int max;

	k->ring_acq_rel = hv_kvm_check_cap(k, KVM_CAP_DIRTY_LOG_RING_ACQ_REL);
	max = hv_kvm_check_cap(k, k->ring_acq_rel
					  ? KVM_CAP_DIRTY_LOG_RING_ACQ_REL
					  : KVM_CAP_DIRTY_LOG_RING);
	if (max <= 0) {
		hv_err("kvm",
		       "op=vm_init err=%d missing=KVM_CAP_DIRTY_LOG_RING",
		       -EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	if (bytes > (uint32_t)max || bytes < 4096) {
		hv_err("kvm", "op=vm_init ring_entries=%u max_bytes=%d err=%d",
		       vm->cfg.dirty_ring_entries, max, -EINVAL);
		return -EINVAL;
	}
	k->ring_entries = vm->cfg.dirty_ring_entries;
	/* The PVM host's emulator overshoots the soft limit by up to a
	 * batch of pushes (kvm_dirty.c): small rings overflow there even
	 * with the drainer, on a scheduling stall or at boot. */
	if (k->ring_entries < HV_KVM_RING_MIN_SAFE)
		hv_warn("kvm",
			"op=vm_init ring_entries=%u safe_min=%u "
			"reason=host_may_overflow_small_rings",
			k->ring_entries, HV_KVM_RING_MIN_SAFE);
	return enable_cap(k->vm_fd,
			  k->ring_acq_rel ? KVM_CAP_DIRTY_LOG_RING_ACQ_REL
					  : KVM_CAP_DIRTY_LOG_RING,
			  bytes);
}

/* PDPE1GB (CPUID 0x80000001 EDX bit 26) in the CPUID the vCPUs get: the
 * page tables may use 1 GiB leaves. */
static bool cpuid_has_gbpages(const void *cpuid)
{
	const struct kvm_cpuid2 *c = cpuid;

	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0x80000001)
			return c->entries[i].edx >> 26 & 1;
	return false;
}

static int load_guest(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	const char *path =
		vm->cfg.guest_elf ? vm->cfg.guest_elf : HV_GUEST_ELF_PATH;
	struct x86_pvh_image img;
	struct hv_ram_layout layout;
	uint64_t top;
	bool gbpages;
	int ret, pt_pages;

	ret = x86_pvh_load(path, vm->mem->hva, vm->mem->bytes, &img);
	if (ret)
		return ret;
	if (img.end > HV_VM_WL_BASE ||
	    img.lowest < HV_X86_AP_PT_GPA + HV_X86_AP_PT_PAGES * HV_PAGE_SIZE) {
		hv_err("kvm",
		       "op=load_guest path=%s err=%d "
		       "reason=image_overlaps_layout",
		       path, -ENOEXEC);
		return -ENOEXEC;
	}
	if (vm->cfg.nr_vcpus > 1 && !img.ap_entry64) {
		hv_err("kvm", "op=load_guest path=%s err=%d reason=no_ap_entry",
		       path, -ENOEXEC);
		return -ENOEXEC;
	}
	/*
	 * The guest's own boot tables (arch/x86/guest/entry.S) map the first
	 * 4 GiB; the tables built here, which the APs start on and the BSP
	 * switches to, map the first 4 GiB and every guest-physical address
	 * of RAM above (past the hole too). They live between
	 * HV_X86_AP_PT_GPA and the image.
	 */
	layout = hv_vm_ram_layout(vm);
	top = HV_DIV_ROUND_UP(hv_ram_top_gpa(&layout), 1ULL << 30) << 30;
	/* Never less than the guest's own 4 GiB: the LAPIC and IOAPIC pages
	 * sit below 4 GiB, above any small VM's RAM (mapping only RAM, a 64
	 * MiB guest died of a triple fault, KVM_EXIT_SHUTDOWN, now and then
	 * in the KVM rig). */
	top = HV_MAX(top, 4ULL << 30);
	gbpages = cpuid_has_gbpages(k->cpuid);
	pt_pages = x86_pgtable_size(top, gbpages);
	if (pt_pages < 0 ||
	    HV_X86_AP_PT_GPA + (uint64_t)pt_pages * HV_PAGE_SIZE > img.lowest) {
		hv_err("kvm",
		       "op=load_guest mem=%llu pt_pages=%d gbpages=%d err=%d "
		       "reason=page_tables_do_not_fit_below_the_image",
		       (unsigned long long)vm->cfg.mem_bytes, pt_pages,
		       gbpages, -EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	k->entry32 = img.entry32;
	k->ap_entry64 = img.ap_entry64;
	ret = x86_pvh_write_start_info(vm->mem->hva, vm->mem->bytes,
				       HV_X86_START_INFO_GPA);
	if (ret)
		return ret;
	ret = x86_pgtable_build_identity(vm->mem->hva, img.lowest,
					 HV_X86_AP_PT_GPA, top, gbpages);
	return ret < 0 ? ret : 0;
}

static int kvm_vm_init(struct hv_vm *vm)
{
	struct hv_kvm_vm *k;
	int ret, r;

	pthread_once(&kick_once, install_kick_handler);
	if (kick_err)
		return kick_err;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->vm_fd = -1;
	pthread_mutex_init(&k->reap_lock, NULL);
	k->sys_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->sys_fd < 0) {
		ret = errno == ENOENT ? -ENODEV : -errno;
		hv_err("kvm", "op=open path=/dev/kvm err=%d", ret);
		goto err_free;
	}
	if (ioctl(k->sys_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		ret = -ENODEV;
		goto err_sys;
	}
	for (size_t i = 0; i < HV_ARRAY_SIZE(required_caps); i++) {
		if (hv_kvm_check_cap(k, required_caps[i].cap) <= 0) {
			hv_err("kvm", "op=vm_init err=%d missing=%s",
			       -EOPNOTSUPP, required_caps[i].name);
			ret = -EOPNOTSUPP;
			goto err_sys;
		}
	}
	r = ioctl(k->sys_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (r <= 0) {
		ret = r < 0 ? -errno : -EINVAL;
		goto err_sys;
	}
	k->run_size = (size_t)r;
	k->vm_fd = ioctl(k->sys_fd, KVM_CREATE_VM, 0);
	if (k->vm_fd < 0) {
		ret = -errno;
		hv_err("kvm", "op=create_vm err=%d", ret);
		goto err_sys;
	}
	if (ioctl(k->vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000UL) < 0 ||
	    ioctl(k->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		ret = -errno;
		hv_err("kvm", "op=irqchip err=%d", ret);
		goto err_vm;
	}
	x86_fpu_caps_probe(k->vm_fd, &k->fpu);
	if (vm->cfg.dirty_ring_entries) {
		ret = setup_ring(vm, k);
		if (ret)
			goto err_vm;
	} else if (hv_kvm_check_cap(k, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2) &
		   (KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE |
		    KVM_DIRTY_LOG_INITIALLY_SET)) {
		/* Ask for both bits; only a ring-less VM may: with a ring
		 * there is no bitmap for initially-set to live in. */
		ret = enable_cap(k->vm_fd, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
				 KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE |
					 KVM_DIRTY_LOG_INITIALLY_SET);
		if (ret)
			goto err_vm;
		k->manual_protect = true;
	}
	ret = x86_cpuid_supported(k->sys_fd, &k->cpuid);
	if (ret)
		goto err_vm;
	if (hv_kvm_check_cap(k, KVM_CAP_VM_TSC_CONTROL) > 0) {
		r = ioctl(k->vm_fd, KVM_GET_TSC_KHZ, 0);
		if (r > 0)
			vm->tsc_khz = (uint64_t)r;
	}
	/* Adopted RAM (hv_vm_cfg.adopt_mem) holds a running guest: loading
	 * the image would overwrite it; the restored registers, not the
	 * entry points, continue it. */
	if (hv_vm_is_linux(vm))
		ret = hv_kvm_linux_init(vm, k);
	else
		ret = vm->mem->adopted ? 0 : load_guest(vm, k);
	if (ret)
		goto err_cpuid;
	vm->accel = k;
	return 0;

err_cpuid:
	free(k->cpuid);
err_vm:
	close(k->vm_fd);
err_sys:
	close(k->sys_fd);
err_free:
	pthread_mutex_destroy(&k->reap_lock);
	free(k);
	return ret;
}

static void kvm_vm_fini(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	if (!k)
		return;
	hv_kvm_ring_drain_stop(vm);
	hv_kvm_linux_fini(vm, k);
	for (uint32_t i = 0; i < k->nr_slots; i++)
		free(k->slots[i].scratch);
	free(k->slots);
	free(k->msrs);
	free(k->cpuid);
	close(k->vm_fd);
	close(k->sys_fd);
	pthread_mutex_destroy(&k->reap_lock);
	free(k);
	vm->accel = NULL;
}

static struct kvm_slot *slot_entry(struct hv_kvm_vm *k, uint32_t id)
{
	if (id >= k->nr_slots) {
		uint32_t n = HV_MAX(id + 1, k->nr_slots * 2);
		struct kvm_slot *s = realloc(k->slots, n * sizeof(*s));

		if (!s)
			return NULL;
		memset(s + k->nr_slots, 0, (n - k->nr_slots) * sizeof(*s));
		k->slots = s;
		k->nr_slots = n;
	}
	return &k->slots[id];
}

static int kvm_memslot_update(struct hv_vm *vm,
			      const struct hv_memslot_desc *old,
			      const struct hv_memslot_desc *nd)
{
	struct hv_kvm_vm *k = kvm_of(vm);
	const struct hv_memslot_desc *d = nd ? nd : old;
	struct kvm_userspace_memory_region r = {
		.slot = d->id,
		.flags = nd ? nd->flags : 0,
		.guest_phys_addr = hv_gfn_to_gpa(d->base_gfn),
		.memory_size = nd ? nd->npages << HV_PAGE_SHIFT : 0,
		.userspace_addr = d->hva,
	};
	struct kvm_slot *s;
	int ret;

	s = slot_entry(k, d->id);
	if (!s)
		return -ENOMEM;
	if (nd && (nd->flags & HV_MEMSLOT_F_DIRTY_LOG) && !s->scratch &&
	    k->manual_protect) {
		s->scratch = calloc(HV_DIV_ROUND_UP(nd->npages, 64),
				    sizeof(uint64_t));
		if (!s->scratch)
			return -ENOMEM;
	}
	if (ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0) {
		ret = -errno;
		hv_err("kvm",
		       "op=set_memory_region slot=%u gfn=0x%llx "
		       "pages=%llu flags=0x%x err=%d",
		       d->id, (unsigned long long)d->base_gfn,
		       (unsigned long long)d->npages, r.flags, ret);
		return ret;
	}
	s->used = nd != NULL;
	s->id = d->id;
	s->flags = r.flags;
	s->npages = nd ? nd->npages : 0;
	if (!nd || !(nd->flags & HV_MEMSLOT_F_DIRTY_LOG)) {
		free(s->scratch);
		s->scratch = NULL;
	}
	return 0;
}

void hv_kvm_set_ring_per_entry(struct hv_vm *vm, bool per_entry)
{
	__atomic_store_n(&kvm_of(vm)->ring_per_entry, per_entry,
			 __ATOMIC_RELAXED);
}

void hv_kvm_get_ring_stats(struct hv_vm *vm, struct hv_kvm_ring_stats *out)
{
	struct hv_kvm_ring_stats *s = &kvm_of(vm)->rstats;

	out->entries = __atomic_load_n(&s->entries, __ATOMIC_RELAXED);
	out->lookups = __atomic_load_n(&s->lookups, __ATOMIC_RELAXED);
	out->collect_ns = __atomic_load_n(&s->collect_ns, __ATOMIC_RELAXED);
	out->reset_ns = __atomic_load_n(&s->reset_ns, __ATOMIC_RELAXED);
	out->full_exits = __atomic_load_n(&s->full_exits, __ATOMIC_RELAXED);
	out->resyncs = __atomic_load_n(&s->resyncs, __ATOMIC_RELAXED);
	out->desyncs = __atomic_load_n(&s->desyncs, __ATOMIC_RELAXED);
}

const struct hv_accel_ops hv_kvm_ops = {
	.name = "kvm",
	.kind = HV_ACCEL_KVM,
	.boots_linux = true,
	.vm_init = kvm_vm_init,
	.vm_fini = kvm_vm_fini,
	.memslot_update = kvm_memslot_update,
	.vcpu_init = hv_kvm_vcpu_init,
	.vcpu_fini = hv_kvm_vcpu_fini,
	.vcpu_run = hv_kvm_vcpu_run,
	.vcpu_kick = hv_kvm_vcpu_kick,
	.dirty_log_start = hv_kvm_dirty_start,
	.dirty_log_stop = hv_kvm_dirty_stop,
	.dirty_harvest = hv_kvm_dirty_harvest,
	.dirty_clear = hv_kvm_dirty_clear,
	.vm_state_save = hv_kvm_vm_state_save,
	.vm_state_restore = hv_kvm_vm_state_restore,
	.vcpu_state_save = hv_kvm_vcpu_state_save,
	.vcpu_state_restore = hv_kvm_vcpu_state_restore,
	.devices_pause = hv_kvm_devices_pause,
	.devices_run = hv_kvm_devices_run,
	.dev_state_save = hv_kvm_dev_state_save,
	.dev_state_restore = hv_kvm_dev_state_restore,
};
