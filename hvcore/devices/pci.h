/* SPDX-License-Identifier: MIT */
/*
 * hv_pci_bus: PCI bus 0 of a Linux guest, reached through configuration
 * mechanism 1 (an address latch at port 0xcf8, data at 0xcfc-0xcff), with
 * a host bridge at device 0 (Red Hat's 1b36:0008, class 0600) and up to 31
 * single-function devices. Linux's legacy probe (pci=conf1, no ACPI) finds
 * it: it checks that 0xcf8 holds a written dword and looks for a host
 * bridge on bus 0 (docs/devices.md).
 *
 * Devices embed a struct hv_pci_dev: a 256-byte type-0 configuration space
 * (IDs, command/status, six BARs with size probing, a capability list) and
 * optionally MSI-X with its table and PBA in one of the device's BARs. The
 * bus gives each memory BAR an address in the BAR window when the device
 * is added (as firmware would, so the guest keeps it), and a BAR is
 * decoded -- registered on the MMIO hv_iobus -- only while the command
 * register's memory enable is set and the BAR holds an address; moving a
 * BAR unregisters the old range and registers the new one.
 *
 * Locking: the bus's config lock serialises the 0xcf8 latch and every
 * configuration access and BAR move; a device's MSI-X state has its own
 * lock (taken under the config lock, and alone by hv_pci_msix_notify()
 * from any thread). BAR handlers run on the vCPU thread with no bus lock
 * held.
 */
#ifndef HVCORE_DEVICES_PCI_H
#define HVCORE_DEVICES_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hvcore/devices/dev.h"
#include "hvcore/devices/iobus.h"

#define HV_PCI_CFG_PORT 0xcf8
#define HV_PCI_CFG_PORT_LEN 8
/* 32-bit BAR window: the bottom of the MMIO hole, below the IOAPIC
 * (0xfec00000) and LAPIC (0xfee00000), leaving [0xe0000000, 0xf0000000)
 * for an ECAM region later. */
#define HV_PCI_MMIO_BASE 0xc0000000ULL
#define HV_PCI_MMIO_SIZE 0x20000000ULL
#define HV_PCI_SLOTS 32
/* Legacy interrupt of slot s (INTA#): GSI HV_PCI_INTX_GSI_BASE + s % 4,
 * IOAPIC pins 16..19 as an MP table must route them (docs/devices.md). */
#define HV_PCI_INTX_GSI_BASE 16

/* Configuration space registers used here. */
#define HV_PCI_VENDOR_ID 0x00
#define HV_PCI_DEVICE_ID 0x02
#define HV_PCI_COMMAND 0x04
#define HV_PCI_COMMAND_IO 0x1
#define HV_PCI_COMMAND_MEMORY 0x2
#define HV_PCI_COMMAND_MASTER 0x4
#define HV_PCI_COMMAND_INTX_DISABLE 0x400
#define HV_PCI_STATUS 0x06
#define HV_PCI_STATUS_CAP_LIST 0x10
#define HV_PCI_STATUS_INTERRUPT 0x08
#define HV_PCI_CLASS_REVISION 0x08
#define HV_PCI_HEADER_TYPE 0x0e
#define HV_PCI_BAR0 0x10
#define HV_PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define HV_PCI_SUBSYSTEM_ID 0x2e
#define HV_PCI_CAPABILITY_LIST 0x34
#define HV_PCI_INTERRUPT_LINE 0x3c
#define HV_PCI_INTERRUPT_PIN 0x3d
#define HV_PCI_CAP_ID_VNDR 0x09
#define HV_PCI_CAP_ID_MSIX 0x11
#define HV_PCI_MSIX_FLAGS_ENABLE 0x8000
#define HV_PCI_MSIX_FLAGS_MASKALL 0x4000
#define HV_PCI_MSIX_ENTRY_CTRL_MASKBIT 1
#define HV_PCI_BAR_MEM64 0x4

#define HV_PCI_MSIX_MAX 64

struct hv_pci_bus;
struct hv_pci_dev;

struct hv_pci_bar {
	/* immutable after hv_pci_bus_add() */
	struct hv_pci_dev *dev;
	uint64_t size; /* 0: no BAR */
	bool mem64;
	const struct hv_io_ops *ops;
	void *opaque;
	/* config lock */
	uint64_t mapped; /* gpa registered on the MMIO bus; 0: none */
};

struct hv_pci_msix_entry {
	uint32_t addr_lo, addr_hi, data, ctrl;
	/* irqfd fast path (hv_dev_env.irqfd_msi), made on first use and
	 * remade when the guest rewrote the message. */
	int efd, handle;
	uint64_t fd_addr;
	uint32_t fd_data;
};

struct hv_pci_dev {
	/* immutable after hv_pci_bus_add() */
	struct hv_pci_bus *bus;
	const struct hv_dev_env *env;
	unsigned slot;
	uint32_t intx_gsi;
	/* Called (config lock held) after BAR @bar moved from @old to @new
	 * (0: not decoded); optional. */
	void (*bar_moved)(struct hv_pci_dev *d, unsigned bar, uint64_t old,
			  uint64_t new);
	void *owner;

	/* config lock */
	uint8_t cfg[256];
	uint8_t wmask[256];
	uint8_t cap_end;
	struct hv_pci_bar bar[6];

	/* MSI-X: layout immutable after add; state under msix_lock. */
	unsigned msix_n;
	unsigned msix_bar;
	uint32_t msix_table, msix_pba; /* offsets in the BAR */
	uint8_t msix_cap;
	pthread_mutex_t msix_lock;
	bool msix_enabled, msix_maskall;
	struct hv_pci_msix_entry msix[HV_PCI_MSIX_MAX];
	uint64_t msix_pending;
};

/*
 * Register the configuration ports on @pio and the host bridge; BARs go
 * on @mmio. Both buses outlive the PCI bus.
 */
int hv_pci_bus_create(struct hv_iobus *pio, struct hv_iobus *mmio,
		      struct hv_pci_bus **out);
/* Devices must have been removed (hv_pci_bus_del()). NULL is a no-op. */
void hv_pci_bus_destroy(struct hv_pci_bus *bus);

/* Build a device's configuration space: IDs, class (base, sub, prog-if
 * in @class24), subsystem, INTA#. */
void hv_pci_dev_init(struct hv_pci_dev *d, uint16_t vendor, uint16_t device,
		     uint32_t class24, uint8_t revision, uint16_t subsys_vendor,
		     uint16_t subsys_id);
/* A memory BAR of @size bytes (a power of two >= 4096) served by @ops;
 * @mem64 takes BAR @idx and @idx + 1. 0 or -EINVAL. */
int hv_pci_dev_set_bar(struct hv_pci_dev *d, unsigned idx, uint64_t size,
		       bool mem64, const struct hv_io_ops *ops, void *opaque);
/* Append capability @cap (@len bytes; its first two bytes, id and next,
 * are filled in). Returns its offset, or -ENOSPC. */
int hv_pci_dev_add_cap(struct hv_pci_dev *d, const void *cap, uint8_t len);
/* MSI-X with @n vectors, table at @table and PBA at @pba in BAR @bar
 * (which must be set first). 0 or -EINVAL / -ENOSPC. */
int hv_pci_dev_add_msix(struct hv_pci_dev *d, unsigned n, unsigned bar,
			uint32_t table, uint32_t pba);

/*
 * Put @d in the first free slot, give its BARs addresses in the window,
 * and make it visible to configuration reads. 0, or -ENOSPC (no slot or
 * no room in the window). The device's memory stays the caller's and
 * must stay put until hv_pci_bus_del().
 */
int hv_pci_bus_add(struct hv_pci_bus *bus, struct hv_pci_dev *d,
		   const struct hv_dev_env *env);
/* Remove @d: its BARs leave the MMIO bus, its irqfds are closed. */
void hv_pci_bus_del(struct hv_pci_bus *bus, struct hv_pci_dev *d);

/* The gpa BAR @idx is decoded at, 0 when it is not. */
uint64_t hv_pci_bar_addr(struct hv_pci_dev *d, unsigned idx);

/* Whether the guest enabled MSI-X (then INTx is not used). */
bool hv_pci_msix_enabled(struct hv_pci_dev *d);
/*
 * Signal MSI-X vector @vec: delivered (0), or pending because it or the
 * function is masked (1, delivered on unmask); -EINVAL for a vector the
 * device does not have or MSI-X disabled. Any thread.
 */
int hv_pci_msix_notify(struct hv_pci_dev *d, unsigned vec);
/* Drive INTA# (unless the guest disabled INTx in the command register). */
void hv_pci_intx(struct hv_pci_dev *d, bool level);

/* What migrates of a device on the bus: its configuration space and its
 * MSI-X state (table, enable bits, pending vectors). */
struct hv_pci_dev_state {
	uint8_t cfg[256];
	bool msix_enabled, msix_maskall;
	unsigned msix_n;
	struct {
		uint32_t addr_lo, addr_hi, data, ctrl;
	} msix[HV_PCI_MSIX_MAX];
	uint64_t msix_pending;
};

/* Config lock and MSI-X lock taken: not from a BAR handler. */
void hv_pci_dev_save(struct hv_pci_dev *d, struct hv_pci_dev_state *s);
/*
 * Load @s into @d, on its bus: the guest-writable bits of the
 * configuration space (BARs, command, capability controls), then the
 * BARs are decoded where they say, and the MSI-X state. Pending vectors
 * stay pending (delivered on unmask). -EINVAL when @s is another kind
 * of device (IDs, class) or has another vector count; nothing changed.
 */
int hv_pci_dev_load(struct hv_pci_dev *d, const struct hv_pci_dev_state *s);

#endif
