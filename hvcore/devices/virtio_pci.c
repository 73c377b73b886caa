// SPDX-License-Identifier: MIT
#include "hvcore/devices/virtio_pci.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hvcore/bug.h"
#include "hvcore/devices/virtio_pci_priv.h"
#include "hvcore/log.h"

/* Virtio PCI capability types (4.1.4). */
enum {
	CAP_COMMON = 1,
	CAP_NOTIFY = 2,
	CAP_ISR = 3,
	CAP_DEVICE = 4,
};

static void le_put(void *p, uint64_t v, unsigned len)
{
	for (unsigned i = 0; i < len; i++)
		((uint8_t *)p)[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get(const void *p, unsigned len)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < len; i++)
		v |= (uint64_t)((const uint8_t *)p)[i] << (8 * i);
	return v;
}

uint8_t hv__vp_status_get(struct hv_virtio_pci *vp)
{
	return __atomic_load_n(&vp->status, __ATOMIC_ACQUIRE);
}

/* Interrupt: MSI-X vector @vec when enabled, else INTA# with ISR @bit. */
static void vp_signal(struct hv_virtio_pci *vp, uint16_t vec, uint8_t bit)
{
	if (hv_pci_msix_enabled(&vp->pci)) {
		if (vec != HV_VIRTIO_MSI_NO_VECTOR)
			hv_pci_msix_notify(&vp->pci, vec);
		return;
	}
	__atomic_fetch_or(&vp->isr, bit, __ATOMIC_SEQ_CST);
	hv_pci_intx(&vp->pci, true);
}

static void vp_queue_irq(struct hv_virtio_dev *vd, unsigned q)
{
	struct hv_virtio_pci *vp = vd->transport;

	if (q < vd->nqueues && hv_vq_need_irq(&vd->vq[q]))
		vp_signal(vp, __atomic_load_n(&vp->q[q].msix, __ATOMIC_RELAXED),
			  1);
}

static void vp_config_changed(struct hv_virtio_dev *vd)
{
	struct hv_virtio_pci *vp = vd->transport;

	__atomic_fetch_add(&vp->generation, 1, __ATOMIC_SEQ_CST);
	vp_signal(vp, __atomic_load_n(&vp->msix_config, __ATOMIC_RELAXED), 2);
}

static void vp_needs_reset(struct hv_virtio_dev *vd, const char *why)
{
	struct hv_virtio_pci *vp = vd->transport;
	uint8_t old = __atomic_fetch_or(&vp->status, HV_VIRTIO_S_NEEDS_RESET,
					__ATOMIC_SEQ_CST);

	if (old & HV_VIRTIO_S_NEEDS_RESET)
		return;
	hv_warn("virtio", "op=needs_reset dev=%s why=\"%s\"", vd->name, why);
	vp_config_changed(vd);
}

static bool vp_broken(struct hv_virtio_dev *vd)
{
	struct hv_virtio_pci *vp = vd->transport;

	return hv__vp_status_get(vp) & (HV_VIRTIO_S_NEEDS_RESET | HV_VIRTIO_S_FAILED);
}

static const struct hv_virtio_transport_ops vp_tops = {
	vp_queue_irq,
	vp_needs_reset,
	vp_config_changed,
	vp_broken,
};

/* epoll tags of the device thread besides queue numbers. */
#define EV_STOP UINT32_MAX
#define EV_DEV (UINT32_MAX - 1)

/* Wait (again) on the device's own fd, one-shot (virtio.h, poll_fd). */
static void dev_fd_arm(int ep, int fd, int op)
{
	struct epoll_event e = {EPOLLIN | EPOLLONESHOT, {.u32 = EV_DEV}};

	epoll_ctl(ep, op, fd, &e);
}

/* The device thread: serves queue kicks (and the device's own fd, when
 * it has one) until told to stop. */
static void *vp_thread(void *arg)
{
	struct hv_virtio_pci *vp = arg;
	struct hv_virtio_dev *vd = vp->vd;
	struct epoll_event ev[HV_VIRTIO_MAX_QUEUES + 2];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int dfd = vd->ops->poll_fd ? vd->ops->poll_fd(vd) : -1;
	bool armed = false;

	if (ep < 0) {
		hv_virtio_needs_reset(vd, "epoll_create1 failed");
		return NULL;
	}
	ev[0] = (struct epoll_event){EPOLLIN, {.u32 = EV_STOP}};
	epoll_ctl(ep, EPOLL_CTL_ADD, vp->stop, &ev[0]);
	for (unsigned q = 0; q < vd->nqueues; q++) {
		ev[0] = (struct epoll_event){EPOLLIN, {.u32 = q}};
		if (vd->vq[q].started)
			epoll_ctl(ep, EPOLL_CTL_ADD, vp->q[q].kick, &ev[0]);
	}
	/* Buffers made available before DRIVER_OK (receive queues). */
	for (unsigned q = 0; q < vd->nqueues; q++)
		if (vd->vq[q].started && !vp_broken(vd))
			vd->ops->queue_notify(vd, q);
	if (dfd >= 0) {
		dev_fd_arm(ep, dfd, EPOLL_CTL_ADD);
		armed = true;
	}
	for (;;) {
		int n = epoll_wait(ep, ev, HV_ARRAY_SIZE(ev), -1);
		bool notified = false;

		for (int i = 0; i < n; i++) {
			uint32_t q = ev[i].data.u32;
			uint64_t v;

			if (q == EV_STOP)
				goto out;
			if (q == EV_DEV) {
				/* One-shot: disarmed until armed again. */
				armed = false;
				if (!vp_broken(vd) && vd->ops->fd_ready(vd)) {
					dev_fd_arm(ep, dfd, EPOLL_CTL_MOD);
					armed = true;
				}
				continue;
			}
			if (read(vp->q[q].kick, &v, 8) == 8 && !vp_broken(vd)) {
				vd->ops->queue_notify(vd, q);
				notified = true;
			}
		}
		if (notified && dfd >= 0 && !armed && !vp_broken(vd)) {
			dev_fd_arm(ep, dfd, EPOLL_CTL_MOD);
			armed = true;
		}
	}
out:
	close(ep);
	return NULL;
}

void hv__vp_ioeventfds_set(struct hv_virtio_pci *vp, uint64_t bar, bool on)
{
	const struct hv_dev_env *env = vp->env;

	if (!env->ioeventfd)
		return;
	for (unsigned q = 0; q < vp->vd->nqueues; q++) {
		struct vp_queue *vq = &vp->q[q];
		uint64_t a = bar + HV_VIRTIO_PCI_NOTIFY +
			     HV_VIRTIO_PCI_NOTIFY_MULT * q;

		if (!on && vq->ioeventfd) {
			env->ioeventfd(env->opaque, vq->ioeventfd, 2, false,
				       vq->kick, false);
			vq->ioeventfd = 0;
		} else if (on && bar && !vq->ioeventfd &&
			   vp->vd->vq[q].started &&
			   !env->ioeventfd(env->opaque, a, 2, false, vq->kick,
					   true)) {
			vq->ioeventfd = a;
		}
	}
}

/* The BAR moved while the device runs: the doorbells follow. Config lock
 * held; vp->lock is not needed, the kick fds and started queues only
 * change under a reset, which the guest does not race with its own BAR
 * programming. */
static void vp_bar_moved(struct hv_pci_dev *d, unsigned bar, uint64_t old,
			 uint64_t new)
{
	struct hv_virtio_pci *vp = d->owner;

	(void)old;
	if (bar != 0)
		return;
	hv__vp_ioeventfds_set(vp, 0, false);
	if (vp->running || vp->quiesced)
		hv__vp_ioeventfds_set(vp, new, true);
}

/*
 * Stop the device: its thread first (so no queue is in use), then the
 * doorbells, the device's own state, the queues. lock held. Timeline of a
 * reset racing the device thread: the thread may be inside queue_notify
 * pushing to a ring; pthread_join waits for it to return to epoll_wait
 * and see the stop fd, so hv_vq_stop() never pulls a ring from under it.
 */
void hv__vp_thread_stop(struct hv_virtio_pci *vp)
{
	uint64_t one = 1, v;

	if (vp->running) {
		/* An eventfd write fails only at a counter of 2^64 - 2. */
		HV_BUG_ON(write(vp->stop, &one, 8) != 8);
		pthread_join(vp->thread, NULL);
		if (read(vp->stop, &v, 8) != 8)
			v = 0;
		vp->running = false;
	}
}

int hv__vp_thread_start(struct hv_virtio_pci *vp)
{
	int ret = pthread_create(&vp->thread, NULL, vp_thread, vp);

	if (ret)
		return -ret;
	vp->running = true;
	return 0;
}

static void vp_stop(struct hv_virtio_pci *vp)
{
	vp->quiesced = false;
	hv__vp_thread_stop(vp);
	hv__vp_ioeventfds_set(vp, 0, false);
}

static void vp_reset(struct hv_virtio_pci *vp)
{
	struct hv_virtio_dev *vd = vp->vd;

	vp_stop(vp);
	if (vd->ops->reset)
		vd->ops->reset(vd);
	for (unsigned q = 0; q < vd->nqueues; q++) {
		uint64_t v;

		hv_vq_stop(&vd->vq[q]);
		/* Drop a kick left from before. */
		while (read(vp->q[q].kick, &v, 8) == 8)
			;
		vp->q[q].size = vd->queue_max;
		vp->q[q].msix = HV_VIRTIO_MSI_NO_VECTOR;
		vp->q[q].enabled = false;
		vp->q[q].desc = vp->q[q].avail = vp->q[q].used = 0;
	}
	vd->negotiated = 0;
	vp->driver_features = 0;
	vp->dfselect = vp->gfselect = 0;
	vp->qsel = 0;
	vp->msix_config = HV_VIRTIO_MSI_NO_VECTOR;
	__atomic_store_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vp->status, 0, __ATOMIC_SEQ_CST);
	hv_pci_intx(&vp->pci, false);
}

/* DRIVER_OK: start the queues, the device, its thread. lock held. */
static int vp_activate(struct hv_virtio_pci *vp)
{
	struct hv_virtio_dev *vd = vp->vd;
	int ret;

	vd->negotiated = vp->driver_features;
	for (unsigned q = 0; q < vd->nqueues; q++) {
		struct hv_vq *vq = &vd->vq[q];

		memset(vq, 0, sizeof(*vq));
		if (!vp->q[q].enabled)
			continue;
		vq->env = vp->env;
		vq->size = vp->q[q].size;
		vq->desc_gpa = vp->q[q].desc;
		vq->avail_gpa = vp->q[q].avail;
		vq->used_gpa = vp->q[q].used;
		vq->indirect = hv_virtio_has(vd, HV_VIRTIO_F_INDIRECT_DESC);
		vq->event_idx = hv_virtio_has(vd, HV_VIRTIO_F_EVENT_IDX);
		ret = hv_vq_start(vq);
		if (ret) {
			hv_warn("virtio",
				"op=queue_start dev=%s queue=%u size=%u "
				"desc=0x%llx avail=0x%llx used=0x%llx ret=%d",
				vd->name, q, vq->size,
				(unsigned long long)vq->desc_gpa,
				(unsigned long long)vq->avail_gpa,
				(unsigned long long)vq->used_gpa, ret);
			goto fail;
		}
	}
	if (vd->ops->activate) {
		ret = vd->ops->activate(vd);
		if (ret)
			goto fail;
	}
	ret = hv__vp_thread_start(vp);
	if (ret)
		goto fail;
	hv__vp_ioeventfds_set(vp, hv_pci_bar_addr(&vp->pci, 0), true);
	return 0;
fail:
	for (unsigned q = 0; q < vd->nqueues; q++)
		hv_vq_stop(&vd->vq[q]);
	return ret;
}

static void status_write(struct hv_virtio_pci *vp, uint8_t new)
{
	uint8_t old = hv__vp_status_get(vp), set;

	if (!new) {
		vp_reset(vp);
		return;
	}
	/* The driver only ever adds bits (2.1.1); NEEDS_RESET is ours. */
	new |= old &HV_VIRTIO_S_NEEDS_RESET;
	if ((new &old) != old)
		return;
	set = new & ~old;
	if (set & HV_VIRTIO_S_FEATURES_OK) {
		uint64_t f = vp->driver_features;

		if ((f & ~vp->offered) || !(f >> HV_VIRTIO_F_VERSION_1 & 1))
			new &= ~HV_VIRTIO_S_FEATURES_OK;
	}
	if ((set & HV_VIRTIO_S_DRIVER_OK) &&
	    (!(new &HV_VIRTIO_S_FEATURES_OK) || vp->running))
		new &= ~HV_VIRTIO_S_DRIVER_OK;
	__atomic_store_n(&vp->status, new, __ATOMIC_SEQ_CST);
	if ((new &set &HV_VIRTIO_S_DRIVER_OK) && !(new &HV_VIRTIO_S_FAILED)) {
		if (vp_activate(vp))
			hv_virtio_needs_reset(vp->vd, "activation failed");
	}
	if (set & HV_VIRTIO_S_FAILED)
		vp_stop(vp);
}

/* Writes to the selected queue's registers: only before DRIVER_OK. */
static void queue_write(struct hv_virtio_pci *vp, unsigned reg, uint64_t v,
			unsigned shift, unsigned len)
{
	struct hv_virtio_dev *vd = vp->vd;
	struct vp_queue *q;
	uint64_t *p = NULL, mask;

	if (vp->qsel >= vd->nqueues || (hv__vp_status_get(vp) & HV_VIRTIO_S_DRIVER_OK))
		return;
	q = &vp->q[vp->qsel];
	switch (reg) {
	case HV_VIRTIO_PCI_Q_SIZE:
		/* A power of two no larger than offered; else kept. */
		if (v && v <= vd->queue_max && !(v & (v - 1)))
			q->size = (uint16_t)v;
		return;
	case HV_VIRTIO_PCI_Q_MSIX:
		__atomic_store_n(&q->msix,
				 v < vp->pci.msix_n ? (uint16_t)v
						    : HV_VIRTIO_MSI_NO_VECTOR,
				 __ATOMIC_RELAXED);
		return;
	case HV_VIRTIO_PCI_Q_ENABLE:
		if (v == 1)
			q->enabled = true;
		return;
	case HV_VIRTIO_PCI_Q_DESC:
		p = &q->desc;
		break;
	case HV_VIRTIO_PCI_Q_AVAIL:
		p = &q->avail;
		break;
	case HV_VIRTIO_PCI_Q_USED:
		p = &q->used;
		break;
	default:
		return;
	}
	/* 64-bit fields: whole, or one 32-bit half (Linux writes halves). */
	mask = len == 8 ? ~0ull : ((1ull << (8 * len)) - 1) << shift;
	*p = (*p & ~mask) | ((v << shift) & mask);
}

/* The register at @off: its start and size, or 0 when none. */
static unsigned common_reg(uint64_t off, unsigned *start)
{
	static const uint8_t regs[][2] = {
		{HV_VIRTIO_PCI_DFSELECT, 4},
		{HV_VIRTIO_PCI_DF, 4},
		{HV_VIRTIO_PCI_GFSELECT, 4},
		{HV_VIRTIO_PCI_GF, 4},
		{HV_VIRTIO_PCI_MSIX_CONFIG, 2},
		{HV_VIRTIO_PCI_NUM_QUEUES, 2},
		{HV_VIRTIO_PCI_STATUS, 1},
		{HV_VIRTIO_PCI_CFG_GENERATION, 1},
		{HV_VIRTIO_PCI_Q_SELECT, 2},
		{HV_VIRTIO_PCI_Q_SIZE, 2},
		{HV_VIRTIO_PCI_Q_MSIX, 2},
		{HV_VIRTIO_PCI_Q_ENABLE, 2},
		{HV_VIRTIO_PCI_Q_NOFF, 2},
		{HV_VIRTIO_PCI_Q_DESC, 8},
		{HV_VIRTIO_PCI_Q_AVAIL, 8},
		{HV_VIRTIO_PCI_Q_USED, 8},
	};

	for (unsigned i = 0; i < HV_ARRAY_SIZE(regs); i++) {
		if (off >= regs[i][0] && off < regs[i][0] + regs[i][1]) {
			*start = regs[i][0];
			return regs[i][1];
		}
	}
	return 0;
}

static uint64_t common_read(struct hv_virtio_pci *vp, unsigned reg)
{
	struct hv_virtio_dev *vd = vp->vd;
	const struct vp_queue *q =
		vp->qsel < vd->nqueues ? &vp->q[vp->qsel] : NULL;

	switch (reg) {
	case HV_VIRTIO_PCI_DFSELECT:
		return vp->dfselect;
	case HV_VIRTIO_PCI_DF:
		return vp->dfselect < 2
			       ? (uint32_t)(vp->offered >> (32 * vp->dfselect))
			       : 0;
	case HV_VIRTIO_PCI_GFSELECT:
		return vp->gfselect;
	case HV_VIRTIO_PCI_GF:
		return vp->gfselect < 2 ? (uint32_t)(vp->driver_features >>
						     (32 * vp->gfselect))
					: 0;
	case HV_VIRTIO_PCI_MSIX_CONFIG:
		return vp->msix_config;
	case HV_VIRTIO_PCI_NUM_QUEUES:
		return vd->nqueues;
	case HV_VIRTIO_PCI_STATUS:
		return hv__vp_status_get(vp);
	case HV_VIRTIO_PCI_CFG_GENERATION:
		return __atomic_load_n(&vp->generation, __ATOMIC_SEQ_CST);
	case HV_VIRTIO_PCI_Q_SELECT:
		return vp->qsel;
	case HV_VIRTIO_PCI_Q_SIZE:
		return q ? q->size : 0;
	case HV_VIRTIO_PCI_Q_MSIX:
		return q ? q->msix : HV_VIRTIO_MSI_NO_VECTOR;
	case HV_VIRTIO_PCI_Q_ENABLE:
		return q ? q->enabled : 0;
	case HV_VIRTIO_PCI_Q_NOFF:
		return q ? vp->qsel : 0;
	case HV_VIRTIO_PCI_Q_DESC:
		return q ? q->desc : 0;
	case HV_VIRTIO_PCI_Q_AVAIL:
		return q ? q->avail : 0;
	case HV_VIRTIO_PCI_Q_USED:
		return q ? q->used : 0;
	}
	return 0;
}

static void common_write(struct hv_virtio_pci *vp, unsigned reg, uint64_t v,
			 unsigned shift, unsigned len)
{
	bool before_fok = !(hv__vp_status_get(vp) & HV_VIRTIO_S_FEATURES_OK);

	switch (reg) {
	case HV_VIRTIO_PCI_DFSELECT:
		vp->dfselect = (uint32_t)v;
		break;
	case HV_VIRTIO_PCI_GFSELECT:
		vp->gfselect = (uint32_t)v;
		break;
	case HV_VIRTIO_PCI_GF:
		if (before_fok && vp->gfselect < 2) {
			unsigned s = 32 * vp->gfselect;

			vp->driver_features &= ~(0xffffffffull << s);
			vp->driver_features |= (uint64_t)(uint32_t)v << s;
		}
		break;
	case HV_VIRTIO_PCI_MSIX_CONFIG:
		__atomic_store_n(&vp->msix_config,
				 v < vp->pci.msix_n ? (uint16_t)v
						    : HV_VIRTIO_MSI_NO_VECTOR,
				 __ATOMIC_RELAXED);
		break;
	case HV_VIRTIO_PCI_STATUS:
		status_write(vp, (uint8_t)v);
		break;
	case HV_VIRTIO_PCI_Q_SELECT:
		vp->qsel = (uint16_t)v;
		break;
	default:
		queue_write(vp, reg, v, shift, len);
	}
}

static void common_access(struct hv_virtio_pci *vp, uint64_t off, void *data,
			  uint32_t len, bool is_write)
{
	unsigned start = 0, size = common_reg(off, &start);
	unsigned shift = (unsigned)(off - start) * 8;

	/* One whole register, or one 32-bit half of a 64-bit one. */
	if (!size || (len != size && !(size == 8 && len == 4 && !(off & 3))) ||
	    off + len > start + size)
		return;
	pthread_mutex_lock(&vp->lock);
	if (is_write)
		common_write(vp, start, le_get(data, len), shift, len);
	else
		le_put(data, common_read(vp, start) >> shift, len);
	pthread_mutex_unlock(&vp->lock);
}

static void bar_read(void *opaque, uint64_t off, void *data, uint32_t len)
{
	struct hv_virtio_pci *vp = opaque;
	struct hv_virtio_dev *vd = vp->vd;

	if (off < HV_VIRTIO_PCI_COMMON_LEN) {
		common_access(vp, off, data, len, false);
	} else if (off == HV_VIRTIO_PCI_ISR) {
		/* Reading clears it and lowers INTA# (4.1.4.5). */
		*(uint8_t *)data =
			__atomic_exchange_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
		hv_pci_intx(&vp->pci, false);
	} else if (off >= HV_VIRTIO_PCI_DEVICE &&
		   off + len <= HV_VIRTIO_PCI_DEVICE + (uint64_t)vd->cfg_size) {
		vd->ops->cfg_read(vd, (uint32_t)(off - HV_VIRTIO_PCI_DEVICE),
				  data, len);
	}
}

static void bar_write(void *opaque, uint64_t off, const void *data,
		      uint32_t len)
{
	struct hv_virtio_pci *vp = opaque;
	struct hv_virtio_dev *vd = vp->vd;

	if (off < HV_VIRTIO_PCI_COMMON_LEN) {
		common_access(vp, off, (void *)data, len, true);
	} else if (off >= HV_VIRTIO_PCI_NOTIFY &&
		   off < HV_VIRTIO_PCI_NOTIFY +
				   HV_VIRTIO_PCI_NOTIFY_MULT * vd->nqueues) {
		unsigned q = (unsigned)(off - HV_VIRTIO_PCI_NOTIFY) /
			     HV_VIRTIO_PCI_NOTIFY_MULT;
		uint64_t one = 1;

		/* The exit path: wake the device thread, as KVM would
		 * through the ioeventfd. A kick before DRIVER_OK is kept in
		 * the counter and served when the thread starts. */
		if (write(vp->q[q].kick, &one, 8) != 8)
			hv_dbg("virtio", "op=kick dev=%s queue=%u lost",
			       vd->name, q);
	} else if (off >= HV_VIRTIO_PCI_DEVICE &&
		   off + len <= HV_VIRTIO_PCI_DEVICE + (uint64_t)vd->cfg_size) {
		if (vd->ops->cfg_write)
			vd->ops->cfg_write(
				vd, (uint32_t)(off - HV_VIRTIO_PCI_DEVICE),
				data, len);
	}
}

static const struct hv_io_ops vp_bar_ops = {bar_read, bar_write};

static int add_vcap(struct hv_pci_dev *d, uint8_t type, uint32_t off,
		    uint32_t len, bool notify)
{
	uint8_t cap[20] = {HV_PCI_CAP_ID_VNDR, 0, notify ? 20 : 16, type, 0};

	le_put(&cap[8], off, 4);
	le_put(&cap[12], len, 4);
	if (notify)
		le_put(&cap[16], HV_VIRTIO_PCI_NOTIFY_MULT, 4);
	return hv_pci_dev_add_cap(d, cap, cap[2]);
}

static uint32_t class_of(uint16_t type)
{
	switch (type) {
	case HV_VIRTIO_ID_NET:
		return 0x020000; /* network controller */
	case HV_VIRTIO_ID_BLOCK:
		return 0x018000; /* mass storage, other */
	default:
		return 0xff0000;
	}
}

int hv_virtio_pci_create(struct hv_pci_bus *bus, struct hv_virtio_dev *vd,
			 const struct hv_dev_env *env,
			 struct hv_virtio_pci **out)
{
	struct hv_virtio_pci *vp;
	struct hv_pci_dev *d;
	unsigned q;
	int ret;

	if (!vd->ops || !vd->ops->cfg_read || !vd->ops->queue_notify ||
	    !vd->nqueues || vd->nqueues > HV_VIRTIO_MAX_QUEUES ||
	    !vd->queue_max || vd->queue_max > HV_VQ_MAX_SIZE ||
	    (vd->queue_max & (vd->queue_max - 1)) || vd->cfg_size > 0x1000)
		return -EINVAL;
	vp = calloc(1, sizeof(*vp));
	if (!vp)
		return -ENOMEM;
	vp->vd = vd;
	vp->env = env;
	vp->offered = vd->features | 1ull << HV_VIRTIO_F_VERSION_1;
	pthread_mutex_init(&vp->lock, NULL);
	vp->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vp->stop < 0) {
		ret = -errno;
		goto err_lock;
	}
	for (q = 0; q < vd->nqueues; q++) {
		vp->q[q].kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (vp->q[q].kick < 0) {
			ret = -errno;
			goto err_fds;
		}
	}
	vd->tops = &vp_tops;
	vd->transport = vp;

	d = &vp->pci;
	hv_pci_dev_init(d, HV_VIRTIO_PCI_VENDOR,
			HV_VIRTIO_PCI_DEVICE_BASE + vd->type,
			class_of(vd->type), 1, HV_VIRTIO_PCI_VENDOR, 0x1100);
	d->owner = vp;
	d->bar_moved = vp_bar_moved;
	ret = hv_pci_dev_set_bar(d, 0, HV_VIRTIO_PCI_BAR_SIZE, true,
				 &vp_bar_ops, vp);
	if (!ret)
		ret = hv_pci_dev_add_msix(d, vd->nqueues + 1, 0,
					  HV_VIRTIO_PCI_MSIX_TABLE,
					  HV_VIRTIO_PCI_MSIX_PBA);
	if (!ret)
		ret = add_vcap(d, CAP_COMMON, HV_VIRTIO_PCI_COMMON,
			       HV_VIRTIO_PCI_COMMON_LEN, false);
	if (ret >= 0)
		ret = add_vcap(d, CAP_NOTIFY, HV_VIRTIO_PCI_NOTIFY,
			       HV_VIRTIO_PCI_NOTIFY_MULT * vd->nqueues, true);
	if (ret >= 0)
		ret = add_vcap(d, CAP_ISR, HV_VIRTIO_PCI_ISR, 1, false);
	if (ret >= 0 && vd->cfg_size)
		ret = add_vcap(d, CAP_DEVICE, HV_VIRTIO_PCI_DEVICE,
			       vd->cfg_size, false);
	if (ret < 0)
		goto err_pci;
	vp_reset(vp);
	ret = hv_pci_bus_add(bus, d, env);
	if (ret)
		goto err_pci;
	*out = vp;
	return 0;
err_pci:
	pthread_mutex_destroy(&d->msix_lock);
err_fds:
	while (q-- > 0)
		close(vp->q[q].kick);
	close(vp->stop);
err_lock:
	pthread_mutex_destroy(&vp->lock);
	free(vp);
	return ret;
}

void hv_virtio_pci_destroy(struct hv_virtio_pci *vp)
{
	if (!vp)
		return;
	pthread_mutex_lock(&vp->lock);
	vp_reset(vp);
	pthread_mutex_unlock(&vp->lock);
	hv_pci_bus_del(vp->pci.bus, &vp->pci);
	for (unsigned q = 0; q < vp->vd->nqueues; q++)
		close(vp->q[q].kick);
	close(vp->stop);
	pthread_mutex_destroy(&vp->lock);
	free(vp);
}

struct hv_pci_dev *hv_virtio_pci_dev(struct hv_virtio_pci *vp)
{
	return &vp->pci;
}

uint8_t hv_virtio_pci_status(struct hv_virtio_pci *vp)
{
	return hv__vp_status_get(vp);
}
