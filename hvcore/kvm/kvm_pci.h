/* SPDX-License-Identifier: MIT */
/*
 * The PCI side of a KVM Linux guest (docs/devices.md): PCI bus 0 on
 * configuration mechanism 1 (ports 0xcf8-0xcff of the VM's port bus)
 * with the host bridge at 00:00.0, and the virtio-pci devices its boot
 * configuration asks for (struct hv_boot_cfg: disks, then the entropy
 * device, then the network device on its tap), in slot order 00:01.0, 00:02.0, ... Each device's BAR 0 is
 * placed in the BAR window of the MMIO hole at add time
 * (HV_PCI_MMIO_BASE, naturally aligned), its INTA# goes to GSI
 * 16 + slot % 4 (described in the MP table through
 * hv_kvm_pci_mp_irqs()), MSI-X vectors go through the environment's
 * irqfd, queue doorbells through its ioeventfd, and each device does its
 * I/O on its transport's thread.
 *
 * Nothing here issues a KVM ioctl: the VM's environment (dev.h) does,
 * so the wiring is unit-tested over a fake VM.
 *
 * Threads: create and destroy on the VM's control thread, before the
 * vCPUs run and after they stopped; hv_kvm_pci_devices() any thread.
 */
#ifndef HVCORE_KVM_KVM_PCI_H
#define HVCORE_KVM_KVM_PCI_H

#include <stdint.h>

#include "arch/x86/boot/mptable.h"
#include "hvcore/devices/dev.h"
#include "hvcore/devices/iobus.h"
#include "hvcore/kvm/kvm.h"

struct hv_kvm_pci;

/* What devices a VM gets (kvm_linux.c fills it from its VM's
 * struct hv_boot_cfg); the strings are copied. */
struct hv_kvm_pci_disk {
	const char *path; /* raw image or block device */
	bool read_only;
	/* adopt: dup @fd (another process's open image) instead of opening
	 * @path (hv_virtio_blk_cfg.adopt) */
	bool adopt;
	int fd;
};
struct hv_kvm_pci_cfg {
	const struct hv_kvm_pci_disk *disk;
	unsigned nr_disks; /* with the rng and net at most HV_KVM_MAX_DEVS */
	bool rng;
	const char *net_tap; /* NULL or "": no virtio-net */
	uint8_t net_mac[6];
	/* net_adopt: take the tap @net_tap by dup'ing @net_fd, another
	 * process's fd of it (hv_tap_adopt()), instead of opening it */
	bool net_adopt;
	int net_fd;
};

/*
 * Register the configuration ports on @pio, the host bridge, and one
 * virtio-pci device for each of @c's disks and for its rng; @name names
 * the VM in logs. 0, or -errno with nothing left registered: the disk's
 * open (-ENOENT, -EACCES, -EROFS...), the tap's (hv_tap_open(): -EBUSY
 * when another VM or program has it), -EINVAL (not a file or block
 * device, too many devices, a path of 4096 bytes or more), -ENOSPC
 * (slots or BAR window), -ENOMEM. @pio, @mmio and @env outlive the
 * result.
 */
int hv_kvm_pci_create(const char *name, const struct hv_kvm_pci_cfg *c,
		      struct hv_iobus *pio, struct hv_iobus *mmio,
		      const struct hv_dev_env *env, struct hv_kvm_pci **out);
/* Every device reset (its thread stopped), off the bus, its file closed;
 * the configuration ports unregistered. NULL: no-op. */
void hv_kvm_pci_destroy(struct hv_kvm_pci *p);

/* The MP table's PCI interrupt entries: INTA# of every device. Returns
 * how many were written into @out (at most @max). */
uint32_t hv_kvm_pci_mp_irqs(const struct hv_kvm_pci *p,
			    struct x86_mp_pci_irq *out, uint32_t max);

/* Up to @max devices' descriptions and counters; the count. */
unsigned hv_kvm_pci_devices(const struct hv_kvm_pci *p,
			    struct hv_kvm_dev_info *out, unsigned max);

/* A live migration: every device quiesced / restarted
 * (hv_virtio_pci_quiesce(), _run()). Control thread. */
void hv_kvm_pci_quiesce(struct hv_kvm_pci *p);
void hv_kvm_pci_run(struct hv_kvm_pci *p);
/* How many devices, and device @i's transport (NULL past the end) with,
 * for a disk, its capacity in sectors (0: not a disk) and mode. */
unsigned hv_kvm_pci_count(const struct hv_kvm_pci *p);
struct hv_virtio_pci;
struct hv_virtio_pci *hv_kvm_pci_dev_at(struct hv_kvm_pci *p, unsigned i,
					uint64_t *sectors, bool *ro);
/* Whether device @i is a NIC, with its MAC in @mac. */
bool hv_kvm_pci_net_at(const struct hv_kvm_pci *p, unsigned i,
		       uint8_t mac[6]);
/* A migration's destination loaded the devices' state: the next
 * hv_kvm_pci_run() announces every NIC's MAC on its tap (a RARP frame,
 * hv_tap_announce()) so that switches learn its new port. */
void hv_kvm_pci_announce_on_run(struct hv_kvm_pci *p);

#endif
