// SPDX-License-Identifier: MIT
/*
 * KVM Linux guests: PCI bus 0 and its virtio devices (kvm_pci.h,
 * docs/devices.md). The bus (hvcore/devices/pci.c) answers configuration
 * mechanism 1 and places BARs; here the VM's boot configuration becomes
 * devices, and the MP table learns their INTA# pins.
 */
#include "hvcore/kvm/kvm_pci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/devices/pci.h"
#include "hvcore/devices/tap.h"
#include "hvcore/devices/virtio_blk.h"
#include "hvcore/devices/virtio_net.h"
#include "hvcore/devices/virtio_pci.h"
#include "hvcore/devices/virtio_rng.h"
#include "hvcore/log.h"

struct kvm_pci_dev {
	char name[8]; /* "vda".., "rng", "net0": the device's log name */
	const char *kind;
	char path[4096];
	bool read_only;
	struct hv_virtio_blk *blk; /* one of blk, rng, net */
	struct hv_virtio_rng *rng;
	struct hv_virtio_net *net;
	uint8_t mac[6];
	struct hv_virtio_pci *vp;
};

struct hv_kvm_pci {
	/* immutable after create */
	struct hv_pci_bus *bus;
	unsigned nr;
	struct kvm_pci_dev dev[HV_KVM_MAX_DEVS];
	/* control thread: set by hv_kvm_pci_announce_on_run() */
	bool announce;
};

static void dev_fini(struct kvm_pci_dev *d)
{
	/* The transport first: it stops the device's thread, then the
	 * device (its file) can go. */
	hv_virtio_pci_destroy(d->vp);
	d->vp = NULL;
	hv_virtio_blk_destroy(d->blk);
	d->blk = NULL;
	hv_virtio_rng_destroy(d->rng);
	d->rng = NULL;
	hv_virtio_net_destroy(d->net);
	d->net = NULL;
}

void hv_kvm_pci_destroy(struct hv_kvm_pci *p)
{
	if (!p)
		return;
	for (unsigned i = p->nr; i-- > 0;)
		dev_fini(&p->dev[i]);
	hv_pci_bus_destroy(p->bus);
	free(p);
}

static int add_one(const char *vm, struct hv_kvm_pci *p, struct kvm_pci_dev *d,
		   const struct hv_dev_env *env)
{
	struct hv_virtio_dev *vd;
	struct hv_pci_dev *pd;
	uint32_t lo, hi;
	int ret;

	if (d->blk)
		vd = hv_virtio_blk_dev(d->blk);
	else if (d->net)
		vd = hv_virtio_net_dev(d->net);
	else
		vd = hv_virtio_rng_dev(d->rng);
	ret = hv_virtio_pci_create(p->bus, vd, env, &d->vp);
	if (ret) {
		hv_err("kvm", "vm=%s op=pci_add dev=%s err=%d", vm, d->name,
		       ret);
		return ret;
	}
	pd = hv_virtio_pci_dev(d->vp);
	/* Where the bus placed BAR 0 (decoded once the guest enables
	 * memory space). */
	memcpy(&lo, &pd->cfg[HV_PCI_BAR0], 4);
	memcpy(&hi, &pd->cfg[HV_PCI_BAR0 + 4], 4);
	hv_info("kvm",
		"vm=%s op=pci_add dev=%s kind=%s slot=%u bar0=0x%llx gsi=%u%s%s",
		vm, d->name, d->kind, pd->slot,
		(unsigned long long)((uint64_t)hi << 32 | (lo & ~0xfu)),
		pd->intx_gsi,
		d->path[0] ? " path=" : "", d->path);
	return 0;
}

/* The NIC: its tap opened here, so that a busy one (another VM's, or
 * the source's on a migration to the same host) fails the create. */
static int add_net(const char *vm, struct hv_kvm_pci *p,
		   const struct hv_kvm_pci_cfg *c, const struct hv_dev_env *env)
{
	struct kvm_pci_dev *d = &p->dev[p->nr];
	struct hv_virtio_net_cfg nc = {.fd = -1};
	int ret;

	snprintf(d->name, sizeof(d->name), "net0");
	d->kind = "virtio-net";
	snprintf(d->path, sizeof(d->path), "%s", c->net_tap);
	memcpy(d->mac, c->net_mac, 6);
	if (c->net_adopt)
		ret = hv_tap_adopt(c->net_fd, c->net_tap, &nc.fd);
	else
		ret = hv_tap_open(c->net_tap, &nc.fd);
	if (ret) {
		hv_err("kvm", "vm=%s op=%s tap=%s err=%d%s", vm,
		       c->net_adopt ? "tap_adopt" : "tap_open", c->net_tap, ret,
		       ret == -EBUSY ? " note=tap_in_use_by_another_vm" : "");
		return ret;
	}
	memcpy(nc.mac, c->net_mac, 6);
	nc.name = d->name;
	ret = hv_virtio_net_create(&nc, &d->net);
	if (ret) {
		close(nc.fd);
		return ret;
	}
	p->nr++;
	return add_one(vm, p, d, env);
}

int hv_kvm_pci_create(const char *name, const struct hv_kvm_pci_cfg *c,
		      struct hv_iobus *pio, struct hv_iobus *mmio,
		      const struct hv_dev_env *env, struct hv_kvm_pci **out)
{
	struct hv_kvm_pci *p;
	int ret;

	bool net = c->net_tap && c->net_tap[0];

	if (c->nr_disks > HV_KVM_MAX_DEVS ||
	    c->nr_disks + (c->rng ? 1 : 0) + (net ? 1 : 0) > HV_KVM_MAX_DEVS ||
	    (c->nr_disks && !c->disk))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = hv_pci_bus_create(pio, mmio, &p->bus);
	if (ret)
		goto err;
	for (unsigned i = 0; i < c->nr_disks; i++) {
		struct kvm_pci_dev *d = &p->dev[p->nr];
		struct hv_virtio_blk_cfg bc = {0};

		snprintf(d->name, sizeof(d->name), "vd%c", 'a' + (char)i);
		d->kind = "virtio-blk";
		if (!c->disk[i].path ||
		    strlen(c->disk[i].path) >= sizeof(d->path)) {
			ret = -EINVAL;
			goto err;
		}
		snprintf(d->path, sizeof(d->path), "%s", c->disk[i].path);
		d->read_only = c->disk[i].read_only;
		bc.path = d->path;
		bc.read_only = d->read_only;
		bc.name = d->name;
		bc.adopt = c->disk[i].adopt;
		bc.fd = c->disk[i].fd;
		ret = hv_virtio_blk_create(&bc, &d->blk);
		if (ret) {
			hv_err("kvm",
			       "vm=%s op=disk_%s path=%s ro=%d err=%d", name,
			       bc.adopt ? "adopt" : "open", d->path,
			       d->read_only, ret);
			goto err;
		}
		p->nr++;
		ret = add_one(name, p, d, env);
		if (ret)
			goto err;
	}
	if (c->rng) {
		struct kvm_pci_dev *d = &p->dev[p->nr];

		snprintf(d->name, sizeof(d->name), "rng");
		d->kind = "virtio-rng";
		ret = hv_virtio_rng_create(d->name, &d->rng);
		if (ret)
			goto err;
		p->nr++;
		ret = add_one(name, p, d, env);
		if (ret)
			goto err;
	}
	if (net) {
		ret = add_net(name, p, c, env);
		if (ret)
			goto err;
	}
	*out = p;
	return 0;
err:
	hv_kvm_pci_destroy(p);
	return ret;
}

uint32_t hv_kvm_pci_mp_irqs(const struct hv_kvm_pci *p,
			    struct x86_mp_pci_irq *out, uint32_t max)
{
	uint32_t n = 0;

	for (unsigned i = 0; p && i < p->nr && n < max; i++) {
		struct hv_pci_dev *pd;

		if (!p->dev[i].vp)
			continue;
		pd = hv_virtio_pci_dev(p->dev[i].vp);
		out[n++] = (struct x86_mp_pci_irq){
			.slot = (uint8_t)pd->slot,
			.pin = 0, /* INTA# */
			.ioapic_pin = (uint8_t)pd->intx_gsi,
		};
	}
	return n;
}

unsigned hv_kvm_pci_devices(const struct hv_kvm_pci *p,
			    struct hv_kvm_dev_info *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; p && i < p->nr && n < max; i++) {
		const struct kvm_pci_dev *d = &p->dev[i];
		struct hv_kvm_dev_info *o = &out[n];
		struct hv_pci_dev *pd;

		if (!d->vp)
			continue;
		pd = hv_virtio_pci_dev(d->vp);
		memset(o, 0, sizeof(*o));
		o->kind = d->kind;
		o->path = d->path;
		o->read_only = d->read_only;
		o->slot = (uint8_t)pd->slot;
		o->gsi = pd->intx_gsi;
		o->status = hv_virtio_pci_status(d->vp);
		o->msix = hv_pci_msix_enabled(pd);
		o->bar0 = hv_pci_bar_addr(pd, 0);
		o->fd = d->blk	 ? hv_virtio_blk_fd(d->blk)
			: d->net ? hv_virtio_net_fd(d->net)
				 : -1;
		if (d->blk) {
			struct hv_virtio_blk_stats s;

			hv_virtio_blk_stats(d->blk, &s);
			o->requests = s.requests;
			o->errors = s.errors;
			o->bytes_read = s.bytes_read;
			o->bytes_written = s.bytes_written;
			o->flushes = s.flushes;
		} else if (d->net) {
			struct hv_virtio_net_stats s;

			hv_virtio_net_stats(d->net, &s);
			memcpy(o->mac, d->mac, 6);
			o->requests = s.rx_packets + s.tx_packets;
			o->errors = s.rx_dropped + s.tx_errors;
			o->bytes_read = s.rx_bytes;
			o->bytes_written = s.tx_bytes;
		} else {
			o->bytes_read = hv_virtio_rng_bytes(d->rng);
		}
		n++;
	}
	return n;
}

void hv_kvm_pci_quiesce(struct hv_kvm_pci *p)
{
	for (unsigned i = 0; p && i < p->nr; i++)
		if (p->dev[i].vp)
			hv_virtio_pci_quiesce(p->dev[i].vp);
}

void hv_kvm_pci_run(struct hv_kvm_pci *p)
{
	for (unsigned i = 0; p && i < p->nr; i++)
		if (p->dev[i].vp)
			hv_virtio_pci_run(p->dev[i].vp);
	if (!p || !p->announce)
		return;
	/* After the devices run: the guest's NIC is live on this tap. */
	p->announce = false;
	for (unsigned i = 0; i < p->nr; i++) {
		struct kvm_pci_dev *d = &p->dev[i];
		int ret;

		if (!d->net)
			continue;
		ret = hv_tap_announce(hv_virtio_net_fd(d->net), d->mac);
		hv_info("kvm",
			"op=net_announce dev=%s tap=%s "
			"mac=%02x:%02x:%02x:%02x:%02x:%02x ret=%d",
			d->name, d->path, d->mac[0], d->mac[1], d->mac[2],
			d->mac[3], d->mac[4], d->mac[5], ret);
	}
}

void hv_kvm_pci_announce_on_run(struct hv_kvm_pci *p)
{
	if (p)
		p->announce = true;
}

bool hv_kvm_pci_net_at(const struct hv_kvm_pci *p, unsigned i,
		       uint8_t mac[6])
{
	if (!p || i >= p->nr || !p->dev[i].net)
		return false;
	memcpy(mac, p->dev[i].mac, 6);
	return true;
}

unsigned hv_kvm_pci_count(const struct hv_kvm_pci *p)
{
	return p ? p->nr : 0;
}

struct hv_virtio_pci *hv_kvm_pci_dev_at(struct hv_kvm_pci *p, unsigned i,
					uint64_t *sectors, bool *ro)
{
	struct kvm_pci_dev *d;

	if (!p || i >= p->nr)
		return NULL;
	d = &p->dev[i];
	*sectors = d->blk ? hv_virtio_blk_sectors(d->blk) : 0;
	*ro = d->read_only;
	return d->vp;
}
