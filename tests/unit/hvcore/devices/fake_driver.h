/* SPDX-License-Identifier: MIT */
/*
 * A virtio-pci driver for device tests, doing what Linux's virtio_pci
 * (modern) does, through configuration mechanism 1 and MMIO on the fake
 * VM's buses: find the BAR and the capabilities, reset, ACKNOWLEDGE,
 * DRIVER, negotiate, FEATURES_OK, set up the queues (rings in fake RAM),
 * MSI-X vectors (config 0, queue q -> q + 1), DRIVER_OK.
 */
#ifndef TESTS_UNIT_HVCORE_DEVICES_FAKE_DRIVER_H
#define TESTS_UNIT_HVCORE_DEVICES_FAKE_DRIVER_H

#include "hvcore/devices/virtio_pci.h"
#include "tests/unit/hvcore/devices/fake_env.h"

/* Rings of queue q at 0x10000 * (q + 1); buffers from 0x80000 up. */
#define DRV_RING(q) (0x10000u * ((q) + 1))
#define DRV_BUF 0x80000u

struct fake_drv {
	struct fake_vm *vm;
	struct hv_iobus *pio, *mmio;
	struct hv_pci_bus *bus;
	struct hv_virtio_pci *vp;
	unsigned slot;
	uint64_t bar;
	struct fake_ring ring[HV_VIRTIO_MAX_QUEUES];
};

static inline uint32_t drv_cfg_rd(struct fake_drv *d, unsigned reg,
				  unsigned len)
{
	uint32_t a = 0x80000000u | d->slot << 11 | (reg & 0xfc), v = 0;

	hv_iobus_access(d->pio, 0xcf8, true, &a, 4);
	hv_iobus_access(d->pio, 0xcfc + (reg & 3), false, &v, len);
	return v;
}

static inline void drv_cfg_wr(struct fake_drv *d, unsigned reg, uint32_t v,
			      unsigned len)
{
	uint32_t a = 0x80000000u | d->slot << 11 | (reg & 0xfc);

	hv_iobus_access(d->pio, 0xcf8, true, &a, 4);
	hv_iobus_access(d->pio, 0xcfc + (reg & 3), true, &v, len);
}

static inline uint64_t drv_rd(struct fake_drv *d, uint64_t off, unsigned len)
{
	uint64_t v = 0;

	hv_iobus_access(d->mmio, d->bar + off, false, &v, len);
	return v;
}

static inline void drv_wr(struct fake_drv *d, uint64_t off, uint64_t v,
			  unsigned len)
{
	hv_iobus_access(d->mmio, d->bar + off, true, &v, len);
}

static inline uint8_t drv_status(struct fake_drv *d)
{
	return (uint8_t)drv_rd(d, HV_VIRTIO_PCI_STATUS, 1);
}

/* Put @vd on a fresh bus; find its slot and BAR, enable memory. */
static inline int drv_attach(struct fake_drv *d, struct hv_virtio_dev *vd)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->vm = fake_vm_new();
	hv_iobus_create(&d->pio);
	hv_iobus_create(&d->mmio);
	hv_pci_bus_create(d->pio, d->mmio, &d->bus);
	ret = hv_virtio_pci_create(d->bus, vd, &d->vm->env, &d->vp);
	if (ret)
		return ret;
	for (d->slot = 1; d->slot < 32; d->slot++)
		if (drv_cfg_rd(d, 0, 2) == 0x1af4)
			break;
	d->bar = (drv_cfg_rd(d, 0x10, 4) & ~0xfu) |
		 (uint64_t)drv_cfg_rd(d, 0x14, 4) << 32;
	drv_cfg_wr(d, HV_PCI_COMMAND,
		   HV_PCI_COMMAND_MEMORY | HV_PCI_COMMAND_MASTER, 2);
	return 0;
}

/* Negotiate @want (of what is offered); 0 or -EIO when FEATURES_OK did
 * not stick. */
static inline int drv_negotiate(struct fake_drv *d, uint64_t want)
{
	uint64_t offered;

	drv_wr(d, HV_VIRTIO_PCI_STATUS, 0, 1);
	drv_wr(d, HV_VIRTIO_PCI_STATUS, HV_VIRTIO_S_ACKNOWLEDGE, 1);
	drv_wr(d, HV_VIRTIO_PCI_STATUS,
	       HV_VIRTIO_S_ACKNOWLEDGE | HV_VIRTIO_S_DRIVER, 1);
	drv_wr(d, HV_VIRTIO_PCI_DFSELECT, 0, 4);
	offered = drv_rd(d, HV_VIRTIO_PCI_DF, 4);
	drv_wr(d, HV_VIRTIO_PCI_DFSELECT, 1, 4);
	offered |= drv_rd(d, HV_VIRTIO_PCI_DF, 4) << 32;
	(void)offered;
	drv_wr(d, HV_VIRTIO_PCI_GFSELECT, 0, 4);
	drv_wr(d, HV_VIRTIO_PCI_GF, (uint32_t)want, 4);
	drv_wr(d, HV_VIRTIO_PCI_GFSELECT, 1, 4);
	drv_wr(d, HV_VIRTIO_PCI_GF, (uint32_t)(want >> 32), 4);
	drv_wr(d, HV_VIRTIO_PCI_STATUS,
	       HV_VIRTIO_S_ACKNOWLEDGE | HV_VIRTIO_S_DRIVER |
		       HV_VIRTIO_S_FEATURES_OK,
	       1);
	return drv_status(d) & HV_VIRTIO_S_FEATURES_OK ? 0 : -EIO;
}

/* Program MSI-X vector @v to (0xfee00000, 0x40 + v), unmasked. */
static inline void drv_msix(struct fake_drv *d, unsigned v)
{
	drv_wr(d, HV_VIRTIO_PCI_MSIX_TABLE + 16 * v, 0xfee00000u, 4);
	drv_wr(d, HV_VIRTIO_PCI_MSIX_TABLE + 16 * v + 4, 0, 4);
	drv_wr(d, HV_VIRTIO_PCI_MSIX_TABLE + 16 * v + 8, 0x40 + v, 4);
	drv_wr(d, HV_VIRTIO_PCI_MSIX_TABLE + 16 * v + 12, 0, 4);
}

/* Set up @nq queues of @size and go DRIVER_OK; with @msix, MSI-X on. */
static inline void drv_start(struct fake_drv *d, unsigned nq, uint16_t size,
			     bool msix, bool indirect, bool event_idx)
{
	if (msix) {
		unsigned cap = drv_cfg_rd(d, HV_PCI_CAPABILITY_LIST, 1);

		while (cap && drv_cfg_rd(d, cap, 1) != HV_PCI_CAP_ID_MSIX)
			cap = drv_cfg_rd(d, cap + 1, 1);
		for (unsigned v = 0; v <= nq; v++)
			drv_msix(d, v);
		drv_cfg_wr(d, cap + 2, HV_PCI_MSIX_FLAGS_ENABLE, 2);
		drv_wr(d, HV_VIRTIO_PCI_MSIX_CONFIG, 0, 2);
	}
	for (unsigned q = 0; q < nq; q++) {
		struct fake_ring *r = &d->ring[q];
		struct hv_vq tmp;

		fake_ring_init(r, d->vm, DRV_RING(q), size);
		fake_ring_vq(r, &tmp, indirect, event_idx);
		drv_wr(d, HV_VIRTIO_PCI_Q_SELECT, q, 2);
		drv_wr(d, HV_VIRTIO_PCI_Q_SIZE, size, 2);
		/* Two halves, as Linux's vp_iowrite64_twopart(). */
		drv_wr(d, HV_VIRTIO_PCI_Q_DESC, (uint32_t)r->desc, 4);
		drv_wr(d, HV_VIRTIO_PCI_Q_DESC + 4, r->desc >> 32, 4);
		drv_wr(d, HV_VIRTIO_PCI_Q_AVAIL, r->avail, 8);
		drv_wr(d, HV_VIRTIO_PCI_Q_USED, r->used, 8);
		if (msix)
			drv_wr(d, HV_VIRTIO_PCI_Q_MSIX, q + 1, 2);
		drv_wr(d, HV_VIRTIO_PCI_Q_ENABLE, 1, 2);
	}
	drv_wr(d, HV_VIRTIO_PCI_STATUS,
	       HV_VIRTIO_S_ACKNOWLEDGE | HV_VIRTIO_S_DRIVER |
		       HV_VIRTIO_S_FEATURES_OK | HV_VIRTIO_S_DRIVER_OK,
	       1);
}

static inline void drv_kick(struct fake_drv *d, unsigned q)
{
	drv_wr(d, HV_VIRTIO_PCI_NOTIFY + HV_VIRTIO_PCI_NOTIFY_MULT * q, q, 2);
}

/* Wait up to 5 s for @n MSIs in all. */
static inline bool drv_wait_msis(struct fake_drv *d, unsigned n)
{
	for (int i = 0; i < 5000; i++) {
		struct timespec ts = {0, 1000000};

		if (fake_msis(d->vm) >= n)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static inline void drv_detach(struct fake_drv *d)
{
	hv_virtio_pci_destroy(d->vp);
	hv_pci_bus_destroy(d->bus);
	hv_iobus_destroy(d->mmio);
	hv_iobus_destroy(d->pio);
	fake_vm_free(d->vm);
}

#endif
