/* SPDX-License-Identifier: MIT */
/*
 * hv_virtio_pci: the virtio 1.x modern PCI transport (virtio 1.2, 4.1) of
 * one struct hv_virtio_dev: PCI ID 1af4:(1040 + type), revision 1, and
 * one 64 KiB memory BAR (BAR 0, 64-bit) that holds every structure the
 * vendor capabilities point to:
 *
 *   0x0000  common configuration (features, status, queues)
 *   0x1000  ISR status (read clears; the INTx fallback's)
 *   0x2000  device-specific configuration (the device's cfg ops)
 *   0x3000  notifications: queue q at 0x3000 + 4 * q
 *           (queue_notify_off = q, notify_off_multiplier = 4)
 *   0x8000  MSI-X table (nqueues + 1 vectors), PBA at 0x9000
 *
 * Status: ACKNOWLEDGE, DRIVER, FEATURES_OK (refused -- left clear -- when
 * the driver took a feature not offered or not VERSION_1), DRIVER_OK
 * (the queues are checked and started, the device activated, its thread
 * started), FAILED (the device stops), NEEDS_RESET (set by the device);
 * writing 0 resets, and returns only after the device's thread stopped
 * using the queues. Queue and feature registers are read-only once the
 * driver is past the step that sets them.
 *
 * Queue notifications: each queue has an eventfd that the device's
 * thread waits on. A notify write that exits to us signals it; when the
 * VM has hv_dev_env.ioeventfd, the eventfd is registered for the notify
 * address while the device runs, and KVM signals it without an exit.
 * Either way the device's work runs on its thread, never a vCPU's.
 *
 * Interrupts: MSI-X when the guest enabled it (through irqfd when the VM
 * has it, hvcore/devices/pci.h), else INTA# with the ISR.
 */
#ifndef HVCORE_DEVICES_VIRTIO_PCI_H
#define HVCORE_DEVICES_VIRTIO_PCI_H

#include "hvcore/devices/pci.h"
#include "hvcore/devices/virtio.h"

#define HV_VIRTIO_PCI_VENDOR 0x1af4
#define HV_VIRTIO_PCI_DEVICE_BASE 0x1040
#define HV_VIRTIO_PCI_BAR_SIZE 0x10000
#define HV_VIRTIO_PCI_COMMON 0x0000
#define HV_VIRTIO_PCI_ISR 0x1000
#define HV_VIRTIO_PCI_DEVICE 0x2000
#define HV_VIRTIO_PCI_NOTIFY 0x3000
#define HV_VIRTIO_PCI_NOTIFY_MULT 4
#define HV_VIRTIO_PCI_MSIX_TABLE 0x8000
#define HV_VIRTIO_PCI_MSIX_PBA 0x9000
#define HV_VIRTIO_MSI_NO_VECTOR 0xffff

/* struct virtio_pci_common_cfg offsets. */
#define HV_VIRTIO_PCI_DFSELECT 0x00
#define HV_VIRTIO_PCI_DF 0x04
#define HV_VIRTIO_PCI_GFSELECT 0x08
#define HV_VIRTIO_PCI_GF 0x0c
#define HV_VIRTIO_PCI_MSIX_CONFIG 0x10
#define HV_VIRTIO_PCI_NUM_QUEUES 0x12
#define HV_VIRTIO_PCI_STATUS 0x14
#define HV_VIRTIO_PCI_CFG_GENERATION 0x15
#define HV_VIRTIO_PCI_Q_SELECT 0x16
#define HV_VIRTIO_PCI_Q_SIZE 0x18
#define HV_VIRTIO_PCI_Q_MSIX 0x1a
#define HV_VIRTIO_PCI_Q_ENABLE 0x1c
#define HV_VIRTIO_PCI_Q_NOFF 0x1e
#define HV_VIRTIO_PCI_Q_DESC 0x20
#define HV_VIRTIO_PCI_Q_AVAIL 0x28
#define HV_VIRTIO_PCI_Q_USED 0x30
#define HV_VIRTIO_PCI_COMMON_LEN 0x38

struct hv_virtio_pci;

/*
 * Put @vd on @bus as a virtio-pci device. @vd stays the caller's and must
 * outlive the transport. 0, or -EINVAL (a device description out of
 * range), -ENOSPC (bus full), -ENOMEM, -errno of eventfd().
 */
int hv_virtio_pci_create(struct hv_pci_bus *bus, struct hv_virtio_dev *vd,
			 const struct hv_dev_env *env,
			 struct hv_virtio_pci **out);
/* Reset the device (its thread stopped), leave the bus. NULL: no-op. */
void hv_virtio_pci_destroy(struct hv_virtio_pci *vp);

struct hv_pci_dev *hv_virtio_pci_dev(struct hv_virtio_pci *vp);
/* The device status, as the driver would read it. */
uint8_t hv_virtio_pci_status(struct hv_virtio_pci *vp);

/*
 * A live migration (virtio_pci_state.c). Control thread, vCPUs parked.
 *
 * quiesce: stop the device's thread once it has completed every request
 * it took (it returns to its wait between two rings' worth of work, so
 * a request is either pushed to the used ring or still in the avail
 * ring, never half done), then the device's quiesce op (blk flushes).
 * Doorbells stay registered: a kick is kept in its eventfd. run: restart
 * a quiesced device's thread, which serves every queue once (what was
 * left in the avail rings). Both idempotent; a device not running is
 * left alone.
 */
void hv_virtio_pci_quiesce(struct hv_virtio_pci *vp);
void hv_virtio_pci_run(struct hv_virtio_pci *vp);

struct hv_virtio_pci_qstate {
	uint16_t size, msix;
	bool enabled;
	uint64_t desc, avail, used;
	uint16_t last_avail, used_idx, signalled_used;
	bool signalled_valid;
};

struct hv_virtio_pci_state {
	uint16_t type; /* the device's (checked on load) */
	struct hv_pci_dev_state pci;
	uint8_t status, generation, isr;
	uint64_t driver_features;
	uint32_t dfselect, gfselect;
	uint16_t msix_config, qsel;
	unsigned nqueues;
	struct hv_virtio_pci_qstate q[HV_VIRTIO_MAX_QUEUES];
};

/* The transport's state and every queue's; -EBUSY while the device's
 * thread runs (quiesce first). */
int hv_virtio_pci_save(struct hv_virtio_pci *vp, struct hv_virtio_pci_state *s);
/*
 * Load @s into a device the guest has not touched (status 0; -EBUSY
 * otherwise): PCI state, registers, and, when @s is DRIVER_OK, the
 * queues started at their saved indexes and the doorbells registered,
 * the device left quiesced for hv_virtio_pci_run(). -EINVAL (another
 * type or queue count, a queue larger than offered, a ring that does
 * not map: nothing of the device started then).
 */
int hv_virtio_pci_load(struct hv_virtio_pci *vp,
		       const struct hv_virtio_pci_state *s);

#endif
