// SPDX-License-Identifier: MIT
/*
 * The devices of a KVM Linux guest as one versioned component of the VM
 * state (DevState, proto/vmstate.proto): the UART, the i8042 and every
 * virtio-pci device with its queues, in slot order. The device models
 * give and take plain C states (uart16550.h, i8042.h, virtio_pci.h);
 * this file owns the format, its caps and checks. Also the pause and
 * run of the devices around a migration's switchover (hvcore/accel.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/devices/i8042.h"
#include "hvcore/devices/uart16550.h"
#include "hvcore/devices/virtio_net.h"
#include "hvcore/devices/virtio_pci.h"
#include "hvcore/kvm/kvm_pci.h"
#include "hvcore/kvm/kvm_priv.h"
#include "hvcore/log.h"
#include "proto/vmstate.pb-c.h"

#define DEV_STATE_VERSION 1u
#define DEV_STATE_MAX (256u << 10)

/* Everything of the devices, decoded (or to encode). */
struct dev_snap {
	struct hv_uart_state uart;
	struct hv_i8042_state kbd;
	unsigned n;
	struct hv_virtio_pci_state vp[HV_KVM_MAX_DEVS];
	unsigned slot[HV_KVM_MAX_DEVS];
	uint64_t sectors[HV_KVM_MAX_DEVS];
	bool ro[HV_KVM_MAX_DEVS];
	bool net[HV_KVM_MAX_DEVS];
	uint8_t mac[HV_KVM_MAX_DEVS][6];
};

void hv_kvm_devices_pause(struct hv_vm *vm)
{
	struct hv_kvm_linux_devs d;

	if (hv_kvm_linux_devs(vm, &d))
		hv_kvm_pci_quiesce(d.pci);
}

void hv_kvm_devices_run(struct hv_vm *vm)
{
	struct hv_kvm_linux_devs d;

	if (hv_kvm_linux_devs(vm, &d))
		hv_kvm_pci_run(d.pci);
}

static int snap_take(const struct hv_kvm_linux_devs *d, struct dev_snap *s)
{
	int ret;

	hv_uart_save(d->uart, &s->uart);
	hv_i8042_save(d->i8042, &s->kbd);
	s->n = hv_kvm_pci_count(d->pci);
	if (s->n > HV_KVM_MAX_DEVS)
		return -E2BIG;
	for (unsigned i = 0; i < s->n; i++) {
		struct hv_virtio_pci *vp =
			hv_kvm_pci_dev_at(d->pci, i, &s->sectors[i], &s->ro[i]);

		if (!vp)
			return -ENODEV;
		ret = hv_virtio_pci_save(vp, &s->vp[i]);
		if (ret)
			return ret;
		s->slot[i] = hv_virtio_pci_dev(vp)->slot;
		s->net[i] = hv_kvm_pci_net_at(d->pci, i, s->mac[i]);
	}
	return 0;
}

static void q_to_pb(const struct hv_virtio_pci_qstate *q,
		    Hvstate__VirtqState *p)
{
	hvstate__virtq_state__init(p);
	p->size = q->size;
	p->msix = q->msix;
	p->enabled = q->enabled;
	p->desc = q->desc;
	p->avail = q->avail;
	p->used = q->used;
	p->last_avail = q->last_avail;
	p->used_idx = q->used_idx;
	p->signalled_used = q->signalled_used;
	p->signalled_valid = q->signalled_valid;
}

/* The encoder's storage: protobuf-c messages point into it. */
struct enc {
	Hvstate__DevState ds;
	Hvstate__UartState uart;
	Hvstate__I8042State kbd;
	Hvstate__VirtioPciState vp[HV_KVM_MAX_DEVS], *vpp[HV_KVM_MAX_DEVS];
	Hvstate__VirtqState q[HV_KVM_MAX_DEVS][HV_VIRTIO_MAX_QUEUES];
	Hvstate__VirtqState *qp[HV_KVM_MAX_DEVS][HV_VIRTIO_MAX_QUEUES];
	Hvstate__PciMsixEntry mx[HV_KVM_MAX_DEVS][HV_PCI_MSIX_MAX];
	Hvstate__PciMsixEntry *mxp[HV_KVM_MAX_DEVS][HV_PCI_MSIX_MAX];
};

static void vp_to_pb(struct enc *e, unsigned i, const struct dev_snap *s)
{
	const struct hv_virtio_pci_state *v = &s->vp[i];
	Hvstate__VirtioPciState *p = &e->vp[i];

	hvstate__virtio_pci_state__init(p);
	p->slot = s->slot[i];
	p->type = v->type;
	p->cfg.data = (uint8_t *)v->pci.cfg;
	p->cfg.len = sizeof(v->pci.cfg);
	p->msix_enabled = v->pci.msix_enabled;
	p->msix_maskall = v->pci.msix_maskall;
	for (unsigned m = 0; m < v->pci.msix_n; m++) {
		hvstate__pci_msix_entry__init(&e->mx[i][m]);
		e->mx[i][m].addr_lo = v->pci.msix[m].addr_lo;
		e->mx[i][m].addr_hi = v->pci.msix[m].addr_hi;
		e->mx[i][m].data = v->pci.msix[m].data;
		e->mx[i][m].ctrl = v->pci.msix[m].ctrl;
		e->mxp[i][m] = &e->mx[i][m];
	}
	p->n_msix = v->pci.msix_n;
	p->msix = e->mxp[i];
	p->msix_pending = v->pci.msix_pending;
	p->status = v->status;
	p->generation = v->generation;
	p->isr = v->isr;
	p->driver_features = v->driver_features;
	p->dfselect = v->dfselect;
	p->gfselect = v->gfselect;
	p->msix_config = v->msix_config;
	p->qsel = v->qsel;
	for (unsigned q = 0; q < v->nqueues; q++) {
		q_to_pb(&v->q[q], &e->q[i][q]);
		e->qp[i][q] = &e->q[i][q];
	}
	p->n_queues = v->nqueues;
	p->queues = e->qp[i];
	p->blk_sectors = s->sectors[i];
	p->blk_read_only = s->ro[i];
	if (s->net[i]) {
		p->net_mac.data = (uint8_t *)s->mac[i];
		p->net_mac.len = 6;
		p->net_status = HV_VIRTIO_NET_S_LINK_UP;
	}
	e->vpp[i] = p;
}

int hv_kvm_dev_state_save(struct hv_vm *vm, struct hv_blob *out)
{
	struct hv_kvm_linux_devs d;
	int ret;

	out->data = NULL;
	out->len = 0;
	if (!hv_kvm_linux_devs(vm, &d))
		return 0;
	ret = hv_kvm_dev_state_encode(&d, out);
	if (ret)
		hv_err("kvm", "vm=%s op=dev_state_save err=%d", hv_vm_name(vm),
		       ret);
	return ret;
}

int hv_kvm_dev_state_encode(const struct hv_kvm_linux_devs *devs,
			    struct hv_blob *out)
{
	struct dev_snap *s;
	struct enc *e;
	int ret;

	out->data = NULL;
	out->len = 0;
	s = calloc(1, sizeof(*s));
	e = calloc(1, sizeof(*e));
	if (!s || !e) {
		ret = -ENOMEM;
		goto out;
	}
	ret = snap_take(devs, s);
	if (ret)
		goto out;
	hvstate__dev_state__init(&e->ds);
	hvstate__uart_state__init(&e->uart);
	hvstate__i8042_state__init(&e->kbd);
	e->ds.version = DEV_STATE_VERSION;
	e->uart.ier = s->uart.ier;
	e->uart.lcr = s->uart.lcr;
	e->uart.mcr = s->uart.mcr;
	e->uart.scr = s->uart.scr;
	e->uart.fcr = s->uart.fcr;
	e->uart.dll = s->uart.dll;
	e->uart.dlm = s->uart.dlm;
	e->uart.thri_pending = s->uart.thri_pending;
	e->uart.rx.data = s->uart.rx;
	e->uart.rx.len = s->uart.rx_len;
	e->kbd.status = s->kbd.status;
	e->kbd.ctr = s->kbd.ctr;
	e->kbd.outport = s->kbd.outport;
	e->kbd.pending_cmd = s->kbd.pending_cmd;
	e->kbd.out.data = s->kbd.out;
	e->kbd.out.len = s->kbd.out_len;
	e->ds.uart = &e->uart;
	e->ds.i8042 = &e->kbd;
	for (unsigned i = 0; i < s->n; i++)
		vp_to_pb(e, i, s);
	e->ds.n_virtio = s->n;
	e->ds.virtio = e->vpp;
	out->len = hvstate__dev_state__get_packed_size(&e->ds);
	out->data = malloc(out->len ? out->len : 1);
	if (!out->data) {
		out->len = 0;
		ret = -ENOMEM;
		goto out;
	}
	hvstate__dev_state__pack(&e->ds, out->data);
out:
	free(s);
	free(e);
	return ret;
}

static int vp_from_pb(const Hvstate__VirtioPciState *p,
		      struct hv_virtio_pci_state *v)
{
	memset(v, 0, sizeof(*v));
	if (p->cfg.len != sizeof(v->pci.cfg) || p->n_msix > HV_PCI_MSIX_MAX ||
	    p->n_queues > HV_VIRTIO_MAX_QUEUES || p->type > UINT16_MAX ||
	    p->status > UINT8_MAX || p->generation > UINT8_MAX ||
	    p->isr > UINT8_MAX || p->msix_config > UINT16_MAX ||
	    p->qsel > UINT16_MAX)
		return -EINVAL;
	v->type = (uint16_t)p->type;
	memcpy(v->pci.cfg, p->cfg.data, sizeof(v->pci.cfg));
	v->pci.msix_enabled = p->msix_enabled;
	v->pci.msix_maskall = p->msix_maskall;
	v->pci.msix_n = (unsigned)p->n_msix;
	for (size_t m = 0; m < p->n_msix; m++) {
		v->pci.msix[m].addr_lo = p->msix[m]->addr_lo;
		v->pci.msix[m].addr_hi = p->msix[m]->addr_hi;
		v->pci.msix[m].data = p->msix[m]->data;
		v->pci.msix[m].ctrl = p->msix[m]->ctrl;
	}
	v->pci.msix_pending = p->msix_pending;
	v->status = (uint8_t)p->status;
	v->generation = (uint8_t)p->generation;
	v->isr = (uint8_t)p->isr;
	v->driver_features = p->driver_features;
	v->dfselect = p->dfselect;
	v->gfselect = p->gfselect;
	v->msix_config = (uint16_t)p->msix_config;
	v->qsel = (uint16_t)p->qsel;
	v->nqueues = (unsigned)p->n_queues;
	for (size_t q = 0; q < p->n_queues; q++) {
		const Hvstate__VirtqState *x = p->queues[q];
		struct hv_virtio_pci_qstate *y = &v->q[q];

		if (x->size > UINT16_MAX || x->msix > UINT16_MAX ||
		    x->last_avail > UINT16_MAX || x->used_idx > UINT16_MAX ||
		    x->signalled_used > UINT16_MAX)
			return -EINVAL;
		y->size = (uint16_t)x->size;
		y->msix = (uint16_t)x->msix;
		y->enabled = x->enabled;
		y->desc = x->desc;
		y->avail = x->avail;
		y->used = x->used;
		y->last_avail = (uint16_t)x->last_avail;
		y->used_idx = (uint16_t)x->used_idx;
		y->signalled_used = (uint16_t)x->signalled_used;
		y->signalled_valid = x->signalled_valid;
	}
	return 0;
}

/* Registers are bytes: a wider value is not a state a UART had. */
static bool uart_ok(const Hvstate__UartState *u)
{
	return (u->ier | u->lcr | u->mcr | u->scr | u->fcr | u->dll | u->dlm) <=
	       UINT8_MAX;
}

static bool kbd_ok(const Hvstate__I8042State *k)
{
	return (k->status | k->ctr | k->outport | k->pending_cmd) <= UINT8_MAX;
}

int hv_kvm_dev_state_decode(const struct hv_blob *in, void *snap)
{
	struct dev_snap *s = snap;
	Hvstate__DevState *m;
	int ret = -EINVAL;

	memset(s, 0, sizeof(*s));
	if (!in->len || in->len > DEV_STATE_MAX)
		return -EINVAL;
	m = hvstate__dev_state__unpack(NULL, in->len, in->data);
	if (!m)
		return -EINVAL;
	if (m->version != DEV_STATE_VERSION || !m->uart || !m->i8042 ||
	    m->n_virtio > HV_KVM_MAX_DEVS || m->uart->rx.len > HV_UART_FIFO ||
	    m->i8042->out.len > sizeof(s->kbd.out) || !uart_ok(m->uart) ||
	    !kbd_ok(m->i8042))
		goto out;
	s->uart.ier = (uint8_t)m->uart->ier;
	s->uart.lcr = (uint8_t)m->uart->lcr;
	s->uart.mcr = (uint8_t)m->uart->mcr;
	s->uart.scr = (uint8_t)m->uart->scr;
	s->uart.fcr = (uint8_t)m->uart->fcr;
	s->uart.dll = (uint8_t)m->uart->dll;
	s->uart.dlm = (uint8_t)m->uart->dlm;
	s->uart.thri_pending = m->uart->thri_pending;
	s->uart.rx_len = (unsigned)m->uart->rx.len;
	if (m->uart->rx.len)
		memcpy(s->uart.rx, m->uart->rx.data, m->uart->rx.len);
	s->kbd.status = (uint8_t)m->i8042->status;
	s->kbd.ctr = (uint8_t)m->i8042->ctr;
	s->kbd.outport = (uint8_t)m->i8042->outport;
	s->kbd.pending_cmd = (uint8_t)m->i8042->pending_cmd;
	s->kbd.out_len = (unsigned)m->i8042->out.len;
	if (m->i8042->out.len)
		memcpy(s->kbd.out, m->i8042->out.data, m->i8042->out.len);
	s->n = (unsigned)m->n_virtio;
	for (unsigned i = 0; i < s->n; i++) {
		if (m->virtio[i]->slot >= 32 ||
		    vp_from_pb(m->virtio[i], &s->vp[i]) ||
		    (m->virtio[i]->net_mac.len != 0 &&
		     m->virtio[i]->net_mac.len != 6))
			goto out;
		s->net[i] = m->virtio[i]->net_mac.len == 6;
		if (s->net[i])
			memcpy(s->mac[i], m->virtio[i]->net_mac.data, 6);
		s->slot[i] = m->virtio[i]->slot;
		s->sectors[i] = m->virtio[i]->blk_sectors;
		s->ro[i] = m->virtio[i]->blk_read_only;
	}
	ret = 0;
out:
	hvstate__dev_state__free_unpacked(m, NULL);
	return ret;
}

size_t hv_kvm_dev_state_snap_size(void)
{
	return sizeof(struct dev_snap);
}

bool hv_kvm_dev_state_snap_ok(const void *snap)
{
	const struct dev_snap *s = snap;

	if (s->n > HV_KVM_MAX_DEVS || s->uart.rx_len > HV_UART_FIFO ||
	    s->kbd.out_len > sizeof(s->kbd.out))
		return false;
	for (unsigned i = 0; i < s->n; i++)
		if (s->slot[i] >= 32 ||
		    s->vp[i].nqueues > HV_VIRTIO_MAX_QUEUES ||
		    s->vp[i].pci.msix_n > HV_PCI_MSIX_MAX)
			return false;
	return true;
}

/* The destination's devices are the source's: same kinds in the same
 * slots, disks of the same size and mode. */
static int snap_matches(const struct hv_kvm_linux_devs *d,
			const struct dev_snap *s, const char *vm)
{
	if (s->n != hv_kvm_pci_count(d->pci)) {
		hv_err("kvm", "vm=%s op=dev_state_restore devices=%u here=%u",
		       vm, s->n, hv_kvm_pci_count(d->pci));
		return -EINVAL;
	}
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t sectors;
		bool ro;
		struct hv_virtio_pci *vp =
			hv_kvm_pci_dev_at(d->pci, i, &sectors, &ro);
		uint8_t mac[6] = {0};
		bool net = hv_kvm_pci_net_at(d->pci, i, mac);

		if (net != s->net[i] || (net && memcmp(mac, s->mac[i], 6))) {
			hv_err("kvm",
			       "vm=%s op=dev_state_restore slot=%u "
			       "note=nic_differs (another MAC, or a NIC on "
			       "one side only)",
			       vm, s->slot[i]);
			return -EINVAL;
		}
		if (!vp || hv_virtio_pci_dev(vp)->slot != s->slot[i] ||
		    sectors != s->sectors[i] || ro != s->ro[i]) {
			hv_err("kvm",
			       "vm=%s op=dev_state_restore slot=%u "
			       "sectors=%llu here=%llu ro=%d here=%d "
			       "note=device_differs",
			       vm, s->slot[i],
			       (unsigned long long)s->sectors[i],
			       (unsigned long long)sectors, s->ro[i], ro);
			return -EINVAL;
		}
	}
	return 0;
}

int hv_kvm_dev_state_restore(struct hv_vm *vm, const struct hv_blob *in)
{
	struct hv_kvm_linux_devs d;
	struct dev_snap *s;
	int ret;

	if (!hv_kvm_linux_devs(vm, &d))
		return in->len ? -EINVAL : 0;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = hv_kvm_dev_state_decode(in, s);
	if (!ret)
		ret = snap_matches(&d, s, hv_vm_name(vm));
	if (ret)
		goto out;
	ret = hv_uart_load(d.uart, &s->uart);
	if (!ret)
		ret = hv_i8042_load(d.i8042, &s->kbd);
	for (unsigned i = 0; i < s->n && !ret; i++) {
		uint64_t sectors;
		bool ro;

		ret = hv_virtio_pci_load(
			hv_kvm_pci_dev_at(d.pci, i, &sectors, &ro), &s->vp[i]);
	}
	/* The guest's NIC moved here: tell the switches once it runs. */
	if (!ret)
		hv_kvm_pci_announce_on_run(d.pci);
out:
	if (ret)
		hv_err("kvm", "vm=%s op=dev_state_restore err=%d",
		       hv_vm_name(vm), ret);
	free(s);
	return ret;
}
