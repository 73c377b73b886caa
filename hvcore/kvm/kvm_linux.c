// SPDX-License-Identifier: MIT
/*
 * KVM accelerator: Linux guests (docs/guests.md). The platform of a VM
 * with cfg.boot.kernel: in-kernel irqchip (created for every VM in
 * kvm_vm.c) and PIT, the kernel loaded through the boot protocol's
 * 64-bit entry (arch/x86/boot/bzimage.h), an MP table, one port-I/O and
 * one MMIO bus with the COM1 UART, the i8042 and PCI bus 0 with its
 * virtio devices (kvm_pci.c) on them, the device environment
 * (hvcore/devices/dev.h) of the VM, the vCPUs' CPUID, MSRs, LAPIC and
 * entry state, and the exits a Linux guest makes.
 *
 * No ACPI: the MP table describes vCPUs and IOAPIC, PCI is found through
 * configuration mechanism 1 (ports 0xcf8/0xcfc), reset is the i8042's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/x86/boot/bzimage.h"
#include "arch/x86/boot/mptable.h"
#include "arch/x86/boot/pvh_linux.h"
#include "arch/x86/pgtable.h"
#include "hvcore/devices/i8042.h"
#include "hvcore/devices/iobus.h"
#include "hvcore/devices/uart16550.h"
#include "hvcore/kvm/kvm_pci.h"
#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/log.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"

/* What every Linux guest gets before the user's cmdline (Firecracker's
 * defaults with the console on COM1): reset through the i8042, reboot
 * one second after a panic, no probing of the missing mouse port. */
#define DEFAULT_CMDLINE                                           \
	"console=ttyS0 reboot=k panic=1 i8042.noaux i8042.nomux " \
	"i8042.nopnp i8042.dumbkbd"

#define BOOT_STACK 0x8ff0ULL
#define MAX_ROUTES 1024
#define FIRST_MSI_GSI X86_IOAPIC_PINS

struct msi_route {
	bool used;
	int fd;
	uint32_t gsi;
	uint64_t addr;
	uint32_t data;
};

struct hv_kvm_linux {
	/* immutable after init */
	struct hv_vm *vm;
	struct hv_iobus *pio;
	struct hv_iobus *mmio;
	struct hv_dev_env env;
	struct hv_uart *uart;
	struct hv_i8042 *i8042;
	struct hv_kvm_pci *pci; /* kvm_pci.c: PCI bus 0, virtio devices */
	/* The entry: the boot protocol's 64-bit one (a bzImage), or with
	 * pvh the 32-bit PVH entry (an ELF vmlinux) and its start info. */
	bool pvh;
	uint64_t entry64;
	uint64_t zero_page;
	uint32_t entry32;
	uint64_t start_info;

	/* atomics */
	uint64_t unclaimed_pio;
	uint64_t unclaimed_mmio;

	/* protected by route_lock: the irqfd MSI routes */
	pthread_mutex_t route_lock;
	struct msi_route routes[MAX_ROUTES];
};

bool hv_kvm_linux_devs(struct hv_vm *vm, struct hv_kvm_linux_devs *out)
{
	struct hv_kvm_linux *lx = kvm_of(vm)->lx;

	if (!lx)
		return false;
	out->uart = lx->uart;
	out->i8042 = lx->i8042;
	out->pci = lx->pci;
	return true;
}

/* ---- the device environment ------------------------------------------ */

static void *env_gpa_map(void *opaque, gpa_t gpa, uint64_t len)
{
	return hv_vm_gpa_to_hva(opaque, gpa, len);
}

static void env_mark_dirty(void *opaque, gpa_t gpa, uint64_t len)
{
	hv_vm_mark_dirty(opaque, gpa, len);
}

static int env_irq_line(void *opaque, uint32_t gsi, bool level)
{
	struct kvm_irq_level l = {.irq = gsi, .level = level};

	return ioctl(kvm_of(opaque)->vm_fd, KVM_IRQ_LINE, &l) < 0 ? -errno : 0;
}

static int env_msi(void *opaque, uint64_t addr, uint32_t data)
{
	struct kvm_msi m = {
		.address_lo = (uint32_t)addr,
		.address_hi = (uint32_t)(addr >> 32),
		.data = data,
	};

	return ioctl(kvm_of(opaque)->vm_fd, KVM_SIGNAL_MSI, &m) < 0 ? -errno
								    : 0;
}

static int env_ioeventfd(void *opaque, uint64_t addr, uint32_t len, bool pio,
			 int fd, bool assign)
{
	struct kvm_ioeventfd e = {
		.addr = addr,
		.len = len,
		.fd = fd,
		.flags = (pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
			 (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
	};

	return ioctl(kvm_of(opaque)->vm_fd, KVM_IOEVENTFD, &e) < 0 ? -errno : 0;
}

/*
 * KVM_SET_GSI_ROUTING replaces the whole table: KVM's default routes
 * (GSI i -> PIC pin i for i < 16 and IOAPIC pin i for i < 24) plus one
 * MSI route per irqfd. Under route_lock.
 */
static int set_routing(struct hv_kvm_linux *lx)
{
	struct kvm_irq_routing *r;
	uint32_t n = 0;
	int ret = 0;

	r = calloc(1, sizeof(*r) + (16 + X86_IOAPIC_PINS + MAX_ROUTES) *
					   sizeof(r->entries[0]));
	if (!r)
		return -ENOMEM;
	for (uint32_t i = 0; i < X86_IOAPIC_PINS; i++) {
		if (i < 16) {
			r->entries[n].gsi = i;
			r->entries[n].type = KVM_IRQ_ROUTING_IRQCHIP;
			r->entries[n].u.irqchip.irqchip =
				i < 8 ? KVM_IRQCHIP_PIC_MASTER
				      : KVM_IRQCHIP_PIC_SLAVE;
			r->entries[n++].u.irqchip.pin = i % 8;
		}
		r->entries[n].gsi = i;
		r->entries[n].type = KVM_IRQ_ROUTING_IRQCHIP;
		r->entries[n].u.irqchip.irqchip = KVM_IRQCHIP_IOAPIC;
		r->entries[n++].u.irqchip.pin = i;
	}
	for (uint32_t i = 0; i < MAX_ROUTES; i++) {
		if (!lx->routes[i].used)
			continue;
		r->entries[n].gsi = lx->routes[i].gsi;
		r->entries[n].type = KVM_IRQ_ROUTING_MSI;
		r->entries[n].u.msi.address_lo = (uint32_t)lx->routes[i].addr;
		r->entries[n].u.msi.address_hi =
			(uint32_t)(lx->routes[i].addr >> 32);
		r->entries[n++].u.msi.data = lx->routes[i].data;
	}
	r->nr = n;
	if (ioctl(kvm_of(lx->vm)->vm_fd, KVM_SET_GSI_ROUTING, r) < 0)
		ret = -errno;
	free(r);
	return ret;
}

static int env_irqfd_msi(void *opaque, uint64_t addr, uint32_t data, int fd)
{
	struct hv_kvm_linux *lx = kvm_of(opaque)->lx;
	struct kvm_irqfd irqfd = {.fd = (uint32_t)fd};
	int i, ret;

	pthread_mutex_lock(&lx->route_lock);
	for (i = 0; i < MAX_ROUTES && lx->routes[i].used; i++)
		;
	if (i == MAX_ROUTES) {
		ret = -ENOSPC;
		goto out;
	}
	lx->routes[i] =
		(struct msi_route){true, fd, FIRST_MSI_GSI + i, addr, data};
	ret = set_routing(lx);
	if (ret) {
		lx->routes[i].used = false;
		goto out;
	}
	irqfd.gsi = lx->routes[i].gsi;
	if (ioctl(kvm_of(opaque)->vm_fd, KVM_IRQFD, &irqfd) < 0) {
		ret = -errno;
		lx->routes[i].used = false;
		set_routing(lx);
		goto out;
	}
	ret = i;
out:
	pthread_mutex_unlock(&lx->route_lock);
	return ret;
}

static void env_irqfd_del(void *opaque, int handle)
{
	struct hv_kvm_linux *lx = kvm_of(opaque)->lx;
	struct kvm_irqfd irqfd = {.flags = KVM_IRQFD_FLAG_DEASSIGN};

	if (handle < 0 || handle >= MAX_ROUTES)
		return;
	pthread_mutex_lock(&lx->route_lock);
	if (lx->routes[handle].used) {
		irqfd.fd = (uint32_t)lx->routes[handle].fd;
		irqfd.gsi = lx->routes[handle].gsi;
		ioctl(kvm_of(opaque)->vm_fd, KVM_IRQFD, &irqfd);
		lx->routes[handle].used = false;
		set_routing(lx);
	}
	pthread_mutex_unlock(&lx->route_lock);
}

/* ---- accessors (kvm.h) ------------------------------------------------ */

struct hv_iobus *hv_kvm_pio_bus(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	return k && k->lx ? k->lx->pio : NULL;
}

struct hv_iobus *hv_kvm_mmio_bus(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	return k && k->lx ? k->lx->mmio : NULL;
}

const struct hv_dev_env *hv_kvm_dev_env(struct hv_vm *vm)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	return k && k->lx ? &k->lx->env : NULL;
}

void hv_kvm_linux_get_stats(struct hv_vm *vm, struct hv_kvm_linux_stats *out)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	memset(out, 0, sizeof(*out));
	out->entry = "";
	if (!k || !k->lx)
		return;
	out->entry = k->lx->pvh ? "pvh" : "bzimage";
	out->unclaimed_pio =
		__atomic_load_n(&k->lx->unclaimed_pio, __ATOMIC_RELAXED);
	out->unclaimed_mmio =
		__atomic_load_n(&k->lx->unclaimed_mmio, __ATOMIC_RELAXED);
}

unsigned hv_kvm_linux_devices(struct hv_vm *vm, struct hv_kvm_dev_info *out,
			      unsigned max)
{
	struct hv_kvm_vm *k = kvm_of(vm);

	return k && k->lx ? hv_kvm_pci_devices(k->lx->pci, out, max) : 0;
}

/* ---- loading ---------------------------------------------------------- */

/* Read a whole file (kernel, initrd) into a private mapping. */
static int map_file(const char *what, const char *path, void **buf,
		    uint64_t *len)
{
	struct stat st;
	void *p;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		hv_err("kvm", "op=boot_load %s=%s err=%d", what, path, ret);
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_size) {
		ret = -ENOEXEC;
		hv_err("kvm", "op=boot_load %s=%s err=%d reason=not_a_file",
		       what, path, ret);
		close(fd);
		return ret;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ret = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	*buf = p;
	*len = (uint64_t)st.st_size;
	return 0;
}

/* The GDT of the entry: 0x10 flat code (64-bit for the boot protocol's
 * entry, __BOOT_CS; 32-bit for PVH's), 0x18 flat data (__BOOT_DS). */
static void write_gdt(uint8_t *ram, bool pvh)
{
	const uint64_t gdt[4] = {
		0, 0, pvh ? 0x00cf9b000000ffffULL : 0x00af9b000000ffffULL,
		0x00cf93000000ffffULL};

	memcpy(ram + X86_BOOT_GDT_GPA, gdt, sizeof(gdt));
}

static int load_linux(struct hv_vm *vm, struct hv_kvm_linux *lx)
{
	const struct hv_boot_cfg *b = &vm->cfg.boot;
	struct hv_ram_layout l = hv_vm_ram_layout(vm);
	struct x86_linux_boot in = {0};
	struct x86_linux_entry e;
	struct x86_mp_pci_irq irqs[HV_KVM_MAX_DEVS];
	uint8_t *ram = hv_vm_ram(vm);
	char *cmdline;
	int ret, pt;

	ret = map_file("kernel", b->kernel, (void **)&in.kernel,
		       &in.kernel_bytes);
	if (ret)
		return ret;
	if (b->initrd[0]) {
		ret = map_file("initrd", b->initrd, (void **)&in.initrd,
			       &in.initrd_bytes);
		if (ret)
			goto out_kernel;
	}
	cmdline = malloc(sizeof(DEFAULT_CMDLINE) + 1 + strlen(b->cmdline));
	if (!cmdline) {
		ret = -ENOMEM;
		goto out_initrd;
	}
	sprintf(cmdline, "%s%s%s", DEFAULT_CMDLINE, b->cmdline[0] ? " " : "",
		b->cmdline);
	in.cmdline = cmdline;
	lx->pvh = x86_is_elf(in.kernel, in.kernel_bytes);
	if (lx->pvh) {
		struct x86_pvh_linux_entry pe;

		ret = x86_pvh_linux_load(ram, &l, &in, &pe);
		lx->entry32 = pe.entry32;
		lx->start_info = pe.start_info;
	} else {
		ret = x86_bzimage_load(ram, &l, &in, &e);
		lx->entry64 = e.entry64;
		lx->zero_page = e.zero_page;
	}
	if (ret) {
		hv_err("kvm", "vm=%s op=boot_load kernel=%s entry=%s err=%d",
		       hv_vm_name(vm), b->kernel, lx->pvh ? "pvh" : "bzimage",
		       ret);
		goto out_cmdline;
	}
	ret = x86_mptable_write_pci(
		ram + X86_BOOT_BIOS_GPA, X86_BOOT_HIGH_GPA - X86_BOOT_BIOS_GPA,
		(uint32_t)X86_BOOT_BIOS_GPA, vm->cfg.nr_vcpus, irqs,
		hv_kvm_pci_mp_irqs(lx->pci, irqs, HV_KVM_MAX_DEVS));
	if (ret)
		goto out_cmdline;
	write_gdt(ram, lx->pvh);
	if (lx->pvh) /* paging off at the PVH entry */
		goto out_cmdline;
	/* The entry's identity map: the first 4 GiB in 2 MiB pages (the
	 * kernel builds its own tables at once). */
	pt = x86_pgtable_size(4ULL << 30, false);
	if (pt < 0 || X86_BOOT_PT_GPA + (uint64_t)pt * 4096 > X86_BOOT_PT_END) {
		ret = -EINVAL;
		goto out_cmdline;
	}
	pt = x86_pgtable_build_identity(ram, X86_BOOT_PT_END, X86_BOOT_PT_GPA,
					4ULL << 30, false);
	ret = pt < 0 ? pt : 0;
out_cmdline:
	free(cmdline);
out_initrd:
	if (in.initrd)
		munmap((void *)in.initrd, in.initrd_bytes);
out_kernel:
	munmap((void *)in.kernel, in.kernel_bytes);
	return ret;
}

/* i8042 reset: the guest asked for a reboot. */
static void guest_reset(void *arg)
{
	struct hv_vm *vm = arg;

	hv_info("kvm", "vm=%s op=guest_reset source=i8042", hv_vm_name(vm));
	hv_vm_guest_stopped(vm, HV_VM_EXIT_REBOOT);
}

/* Port 0x80 (POST codes, Linux's I/O delay): written often, read never;
 * claimed so that it is not counted as unclaimed. */
static void post_read(void *dev, uint64_t off, void *data, uint32_t len)
{
	(void)dev;
	(void)off;
	memset(data, 0xff, len);
}

static void post_write(void *dev, uint64_t off, const void *data, uint32_t len)
{
	(void)dev;
	(void)off;
	(void)data;
	(void)len;
}

static const struct hv_io_ops post_ops = {post_read, post_write};

/* PCI bus 0 and the virtio devices the VM's configuration asks for. */
static int add_pci(struct hv_vm *vm, struct hv_kvm_linux *lx)
{
	const struct hv_boot_cfg *b = &vm->cfg.boot;
	struct hv_kvm_pci_disk disk[HV_BOOT_DISKS_MAX];
	struct hv_kvm_pci_cfg c = {disk, 0, b->rng, b->net_tap, {0}};

	for (uint32_t i = 0; i < b->nr_disks && i < HV_BOOT_DISKS_MAX; i++) {
		bool adopt = b->adopt_fds && b->disk_fd[i] >= 0;

		disk[c.nr_disks++] = (struct hv_kvm_pci_disk){
			b->disk[i].path, b->disk[i].read_only, adopt,
			adopt ? b->disk_fd[i] : -1};
	}
	memcpy(c.net_mac, b->net_mac, 6);
	c.net_adopt = b->adopt_fds && b->net_fd >= 0;
	c.net_fd = c.net_adopt ? b->net_fd : -1;
	return hv_kvm_pci_create(hv_vm_name(vm), &c, lx->pio, lx->mmio,
				 &lx->env, &lx->pci);
}

static int add_devices(struct hv_vm *vm, struct hv_kvm_linux *lx)
{
	int ret;

	ret = hv_iobus_register(lx->pio, 0x80, 1, &post_ops, NULL);
	if (ret)
		return ret;

	ret = hv_uart_create(&lx->env, HV_UART_COM1_IRQ, vm->console,
			     &lx->uart);
	if (ret)
		return ret;
	ret = hv_iobus_register(lx->pio, HV_UART_COM1_BASE, HV_UART_PORTS,
				&hv_uart_io_ops, lx->uart);
	if (ret)
		return ret;
	ret = hv_i8042_create(&lx->env, guest_reset, vm, &lx->i8042);
	if (ret)
		return ret;
	ret = hv_iobus_register(lx->pio, HV_I8042_DATA_PORT, 1,
				&hv_i8042_data_ops, lx->i8042);
	if (!ret)
		ret = hv_iobus_register(lx->pio, HV_I8042_CMD_PORT, 1,
					&hv_i8042_cmd_ops, lx->i8042);
	if (!ret)
		ret = add_pci(vm, lx);
	return ret;
}

void hv_kvm_linux_fini(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	struct hv_kvm_linux *lx = k->lx;

	if (!lx)
		return;
	(void)vm;
	/* The devices first (the vCPUs are gone): their threads stop and
	 * their irqfds leave the routes before the buses go. */
	hv_kvm_pci_destroy(lx->pci);
	hv_iobus_destroy(lx->pio);
	hv_iobus_destroy(lx->mmio);
	hv_uart_destroy(lx->uart);
	hv_i8042_destroy(lx->i8042);
	pthread_mutex_destroy(&lx->route_lock);
	free(lx);
	k->lx = NULL;
}

int hv_kvm_linux_init(struct hv_vm *vm, struct hv_kvm_vm *k)
{
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
	struct hv_kvm_linux *lx;
	int ret;

	if (vm->cfg.nr_vcpus > X86_MP_MAX_CPUS)
		return -EINVAL;
	lx = calloc(1, sizeof(*lx));
	if (!lx)
		return -ENOMEM;
	lx->vm = vm;
	pthread_mutex_init(&lx->route_lock, NULL);
	lx->env = (struct hv_dev_env){
		.opaque = vm,
		.gpa_map = env_gpa_map,
		.mark_dirty = env_mark_dirty,
		.irq_line = env_irq_line,
		.msi = env_msi,
		.ioeventfd = env_ioeventfd,
		.irqfd_msi = env_irqfd_msi,
		.irqfd_del = env_irqfd_del,
	};
	k->lx = lx;
	if (ioctl(k->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		ret = -errno;
		hv_err("kvm", "vm=%s op=create_pit2 err=%d", hv_vm_name(vm),
		       ret);
		goto err;
	}
	ret = hv_iobus_create(&lx->pio);
	if (!ret)
		ret = hv_iobus_create(&lx->mmio);
	if (!ret)
		ret = add_devices(vm, lx);
	/* Adopted RAM (a local live update) holds the running guest: the
	 * kernel, zero page and tables are there already, and writing them
	 * again would overwrite it; the restored state continues it. */
	if (!ret && !hv_vm_mem_adopted(vm))
		ret = load_linux(vm, lx);
	if (ret)
		goto err;
	return 0;
err:
	hv_kvm_linux_fini(vm, k);
	return ret;
}

/* ---- vCPUs ------------------------------------------------------------ */

/* Bits needed to number @n things (x2APIC id shift of a topology level). */
static uint32_t order(uint32_t n)
{
	uint32_t b = 0;

	while ((1u << b) < n)
		b++;
	return b;
}

/*
 * The host's supported CPUID with this vCPU's identity: APIC id in leaf
 * 1 and the topology leaves 0xb/0x1f (one thread per core, nr_vcpus
 * cores in one package), the logical count of leaf 1. Vendor, features
 * and the KVM signature leaves (kvmclock) stay as KVM offers them.
 */
static int set_cpuid(int fd, const void *supported, uint32_t id, uint32_t nr)
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

		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0xffff) | id << 24 |
				 (1u << order(nr)) << 16;
			if (nr > 1)
				e->edx |= 1u << 28; /* HTT: count valid */
			/* "Running on a hypervisor": without it Linux never
			 * looks at the KVM leaves (no kvmclock). */
			e->ecx |= 1u << 31;
			break;
		case 0xb:
		case 0x1f:
			e->edx = id;
			if (e->index == 0) {
				e->eax = 0;
				e->ebx = 1;
				e->ecx = 1u << 8; /* SMT level */
			} else if (e->index == 1) {
				e->eax = order(nr);
				e->ebx = nr;
				e->ecx = 2u << 8 | 1; /* core level */
			} else {
				e->eax = e->ebx = 0;
				e->ecx = e->index;
			}
			break;
		}
	}
	if (ioctl(fd, KVM_SET_CPUID2, c) < 0)
		ret = -errno;
	free(c);
	return ret;
}

/* MSRs a guest expects set at reset (Firecracker's list): fast strings,
 * MTRRs on with write-back default (else all of RAM is uncached). */
static int set_msrs(int fd)
{
	static const uint32_t idx[] = {0x174,	   0x175,      0x176,
				       0xc0000081, 0xc0000082, 0xc0000083,
				       0xc0000084, 0xc0000102, 0x10,
				       0x1a0,	   0x2ff};
	static const uint64_t val[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x806};
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[HV_ARRAY_SIZE(idx)];
	} m;

	memset(&m, 0, sizeof(m));
	m.h.nmsrs = HV_ARRAY_SIZE(idx);
	for (size_t i = 0; i < HV_ARRAY_SIZE(idx); i++) {
		m.e[i].index = idx[i];
		m.e[i].data = val[i];
	}
	if (ioctl(fd, KVM_SET_MSRS, &m) != (int)HV_ARRAY_SIZE(idx))
		return -EIO;
	return 0;
}

/* LINT0 ExtINT (the PIC's virtual wire), LINT1 NMI, as the MP table
 * says. */
static int set_lint(int fd)
{
	struct kvm_lapic_state la;
	uint32_t v;

	if (ioctl(fd, KVM_GET_LAPIC, &la) < 0)
		return -errno;
	memcpy(&v, la.regs + 0x350, 4);
	v = (v & ~0x700u) | 7u << 8;
	memcpy(la.regs + 0x350, &v, 4);
	memcpy(&v, la.regs + 0x360, 4);
	v = (v & ~0x700u) | 4u << 8;
	memcpy(la.regs + 0x360, &v, 4);
	return ioctl(fd, KVM_SET_LAPIC, &la) < 0 ? -errno : 0;
}

static void seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool l)
{
	memset(s, 0, sizeof(*s));
	s->limit = 0xffffffffu;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = l;
	s->db = !l;
}

/* The boot protocol's 64-bit entry: long mode on the identity tables,
 * CS 0x10, DS/ES/SS 0x18, interrupts off, RSI = zero page. Or PVH's:
 * 32-bit protected mode, paging off, the same selectors (CS 32-bit
 * here), EBX = start info. */
static int set_entry(int fd, const struct hv_kvm_linux *lx)
{
	struct kvm_sregs sr;
	struct kvm_regs r;
	struct kvm_fpu fpu;

	if (ioctl(fd, KVM_GET_SREGS, &sr) < 0)
		return -errno;
	seg(&sr.cs, 0x10, 0xb, !lx->pvh);
	seg(&sr.ds, 0x18, 0x3, false);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.limit = 0xffff;
	sr.tr.type = 11;
	sr.tr.present = 1;
	sr.gdt.base = X86_BOOT_GDT_GPA;
	sr.gdt.limit = 4 * 8 - 1;
	sr.idt.base = 0;
	sr.idt.limit = 0;
	if (lx->pvh) {
		sr.cr0 = 0x11 | 0x20; /* ET | PE | NE */
		sr.cr3 = 0;
		sr.cr4 = 0;
		sr.efer = 0;
	} else {
		sr.cr0 = 0x80000011 | 0x20; /* PG | ET | PE | NE */
		sr.cr3 = X86_BOOT_PT_GPA;
		sr.cr4 = 0x20;	 /* PAE */
		sr.efer = 0x500; /* LME | LMA */
	}
	if (ioctl(fd, KVM_SET_SREGS, &sr) < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	if (lx->pvh) {
		r.rip = lx->entry32;
		r.rbx = lx->start_info;
	} else {
		r.rip = lx->entry64;
		r.rsi = lx->zero_page;
	}
	r.rsp = r.rbp = BOOT_STACK;
	r.rflags = 0x2;
	if (ioctl(fd, KVM_SET_REGS, &r) < 0)
		return -errno;
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	return ioctl(fd, KVM_SET_FPU, &fpu) < 0 ? -errno : 0;
}

int hv_kvm_linux_vcpu_init(struct hv_vcpu *vcpu, int fd)
{
	struct hv_vm *vm = vcpu->vm;
	struct hv_kvm_vm *k = kvm_of(vm);
	int ret;

	ret = set_cpuid(fd, k->cpuid, vcpu->id, vm->cfg.nr_vcpus);
	if (!ret)
		ret = set_msrs(fd);
	if (!ret)
		ret = set_lint(fd);
	/* APs keep their reset state: with the in-kernel LAPIC they wait
	 * (KVM_MP_STATE_UNINITIALIZED) for the BSP's INIT and SIPI. */
	if (!ret && vcpu->id == 0)
		ret = set_entry(fd, k->lx);
	if (ret)
		hv_err("kvm", "vm=%s vcpu=%u op=linux_vcpu_init err=%d",
		       hv_vm_name(vm), vcpu->id, ret);
	return ret;
}

/* ---- exits ------------------------------------------------------------ */

static void exit_pio(struct hv_kvm_linux *lx, struct kvm_run *run)
{
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool wr = run->io.direction == KVM_EXIT_IO_OUT;

	/* String I/O: count items of size bytes, one after the other. */
	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size)
		if (!hv_iobus_access(lx->pio, run->io.port, wr, data,
				     run->io.size))
			__atomic_fetch_add(&lx->unclaimed_pio, 1,
					   __ATOMIC_RELAXED);
}

static void exit_mmio(struct hv_kvm_linux *lx, struct kvm_run *run)
{
	if (!hv_iobus_access(lx->mmio, run->mmio.phys_addr, run->mmio.is_write,
			     run->mmio.data, run->mmio.len))
		__atomic_fetch_add(&lx->unclaimed_mmio, 1, __ATOMIC_RELAXED);
}

int hv_kvm_linux_exit(struct hv_vcpu *vcpu, struct kvm_run *run,
		      struct hv_exit *exit)
{
	struct hv_vm *vm = vcpu->vm;
	struct hv_kvm_linux *lx = kvm_of(vm)->lx;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		exit_pio(lx, run);
		return 0;
	case KVM_EXIT_MMIO:
		exit_mmio(lx, run);
		return 0;
	case KVM_EXIT_SHUTDOWN:
		/* A triple fault resets a PC; Linux uses it as its last
		 * way to reboot. */
		hv_info("kvm", "vm=%s vcpu=%u op=guest_reset source=shutdown",
			hv_vm_name(vm), vcpu->id);
		hv_vm_guest_stopped(vm, HV_VM_EXIT_REBOOT);
		exit->kind = HV_EXIT_KICK;
		exit->detail = "KVM_EXIT_SHUTDOWN";
		return 1;
	case KVM_EXIT_SYSTEM_EVENT:
		switch (run->system_event.type) {
		case KVM_SYSTEM_EVENT_SHUTDOWN:
			hv_vm_guest_stopped(vm, HV_VM_EXIT_POWEROFF);
			break;
		case KVM_SYSTEM_EVENT_CRASH:
			hv_vm_guest_stopped(vm, HV_VM_EXIT_PANIC);
			break;
		default:
			hv_vm_guest_stopped(vm, HV_VM_EXIT_REBOOT);
			break;
		}
		exit->kind = HV_EXIT_KICK;
		exit->detail = "KVM_EXIT_SYSTEM_EVENT";
		return 1;
	case KVM_EXIT_HLT:
		/* Only without an in-kernel LAPIC; never spin on it. */
		hv_vm_guest_stopped(vm, HV_VM_EXIT_POWEROFF);
		exit->kind = HV_EXIT_KICK;
		exit->detail = "KVM_EXIT_HLT";
		return 1;
	case KVM_EXIT_INTERNAL_ERROR:
	case KVM_EXIT_FAIL_ENTRY:
	case KVM_EXIT_UNKNOWN:
	case KVM_EXIT_EXCEPTION:
		/* Fatal for the guest: every vCPU stops; this one reports
		 * the error through the exit table. */
		hv_vm_guest_stopped(vm, HV_VM_EXIT_ERROR);
		return 2;
	}
	return 2;
}
