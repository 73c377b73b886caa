// SPDX-License-Identifier: MIT
/*
 * virtio-pci for a live migration: quiesce and restart the device's
 * thread, save and load the transport and its queues (virtio_pci.h).
 */
#include <errno.h>
#include <string.h>

#include "hvcore/devices/virtio_pci_priv.h"
#include "hvcore/log.h"

void hv_virtio_pci_quiesce(struct hv_virtio_pci *vp)
{
	struct hv_virtio_dev *vd = vp->vd;

	pthread_mutex_lock(&vp->lock);
	if (vp->running) {
		hv__vp_thread_stop(vp);
		vp->quiesced = true;
		if (vd->ops->quiesce)
			vd->ops->quiesce(vd);
	}
	pthread_mutex_unlock(&vp->lock);
}

void hv_virtio_pci_run(struct hv_virtio_pci *vp)
{
	int ret;

	pthread_mutex_lock(&vp->lock);
	if (vp->quiesced && !vp->running) {
		ret = hv__vp_thread_start(vp);
		if (ret)
			hv_virtio_needs_reset(vp->vd, "thread restart failed");
		else
			vp->quiesced = false;
	}
	pthread_mutex_unlock(&vp->lock);
}

int hv_virtio_pci_save(struct hv_virtio_pci *vp, struct hv_virtio_pci_state *s)
{
	struct hv_virtio_dev *vd = vp->vd;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	hv_pci_dev_save(&vp->pci, &s->pci);
	pthread_mutex_lock(&vp->lock);
	if (vp->running) {
		ret = -EBUSY;
		goto out;
	}
	s->type = vd->type;
	s->status = hv__vp_status_get(vp);
	s->generation = __atomic_load_n(&vp->generation, __ATOMIC_SEQ_CST);
	s->isr = __atomic_load_n(&vp->isr, __ATOMIC_SEQ_CST);
	s->driver_features = vp->driver_features;
	s->dfselect = vp->dfselect;
	s->gfselect = vp->gfselect;
	s->msix_config = vp->msix_config;
	s->qsel = vp->qsel;
	s->nqueues = vd->nqueues;
	for (unsigned q = 0; q < vd->nqueues; q++) {
		const struct vp_queue *pq = &vp->q[q];
		const struct hv_vq *vq = &vd->vq[q];
		struct hv_virtio_pci_qstate *qs = &s->q[q];

		qs->size = pq->size;
		qs->msix = pq->msix;
		qs->enabled = pq->enabled;
		qs->desc = pq->desc;
		qs->avail = pq->avail;
		qs->used = pq->used;
		if (vq->started) {
			qs->last_avail = vq->last_avail;
			qs->used_idx = vq->used_idx;
			qs->signalled_used = vq->signalled_used;
			qs->signalled_valid = vq->signalled_valid;
		}
	}
out:
	pthread_mutex_unlock(&vp->lock);
	return ret;
}

static bool qstate_ok(const struct hv_virtio_dev *vd,
		      const struct hv_virtio_pci_qstate *qs, unsigned msix_n)
{
	return qs->size && qs->size <= vd->queue_max &&
	       !(qs->size & (qs->size - 1)) &&
	       (qs->msix < msix_n || qs->msix == HV_VIRTIO_MSI_NO_VECTOR);
}

/* Start the queues at their saved indexes (vp_activate's, resumed). */
static int start_queues(struct hv_virtio_pci *vp,
			const struct hv_virtio_pci_state *s)
{
	struct hv_virtio_dev *vd = vp->vd;
	int ret;

	vd->negotiated = s->driver_features;
	for (unsigned q = 0; q < vd->nqueues; q++) {
		const struct hv_virtio_pci_qstate *qs = &s->q[q];
		struct hv_vq *vq = &vd->vq[q];

		memset(vq, 0, sizeof(*vq));
		if (!qs->enabled)
			continue;
		vq->env = vp->env;
		vq->size = qs->size;
		vq->desc_gpa = qs->desc;
		vq->avail_gpa = qs->avail;
		vq->used_gpa = qs->used;
		vq->indirect = hv_virtio_has(vd, HV_VIRTIO_F_INDIRECT_DESC);
		vq->event_idx = hv_virtio_has(vd, HV_VIRTIO_F_EVENT_IDX);
		ret = hv_vq_start(vq);
		if (ret) {
			hv_warn("virtio",
				"op=queue_load dev=%s queue=%u size=%u ret=%d",
				vd->name, q, vq->size, ret);
			for (unsigned i = 0; i <= q; i++)
				hv_vq_stop(&vd->vq[i]);
			vd->negotiated = 0;
			return -EINVAL;
		}
		vq->last_avail = qs->last_avail;
		vq->used_idx = qs->used_idx;
		vq->signalled_used = qs->signalled_used;
		vq->signalled_valid = qs->signalled_valid;
	}
	if (vd->ops->activate) {
		ret = vd->ops->activate(vd);
		if (ret) {
			for (unsigned q = 0; q < vd->nqueues; q++)
				hv_vq_stop(&vd->vq[q]);
			vd->negotiated = 0;
			return ret;
		}
	}
	return 0;
}

int hv_virtio_pci_load(struct hv_virtio_pci *vp,
		       const struct hv_virtio_pci_state *s)
{
	struct hv_virtio_dev *vd = vp->vd;
	bool live = (s->status & HV_VIRTIO_S_DRIVER_OK) &&
		    !(s->status & (HV_VIRTIO_S_NEEDS_RESET |
				   HV_VIRTIO_S_FAILED));
	int ret;

	if (s->type != vd->type || s->nqueues != vd->nqueues ||
	    (s->driver_features & ~vp->offered) ||
	    (s->msix_config >= vp->pci.msix_n &&
	     s->msix_config != HV_VIRTIO_MSI_NO_VECTOR))
		return -EINVAL;
	for (unsigned q = 0; q < vd->nqueues; q++)
		if (!qstate_ok(vd, &s->q[q], vp->pci.msix_n))
			return -EINVAL;
	pthread_mutex_lock(&vp->lock);
	if (hv__vp_status_get(vp) || vp->running) {
		ret = -EBUSY;
		goto out;
	}
	ret = hv_pci_dev_load(&vp->pci, &s->pci);
	if (ret)
		goto out;
	if (live) {
		ret = start_queues(vp, s);
		if (ret)
			goto out;
	}
	vp->driver_features = s->driver_features;
	vp->dfselect = s->dfselect;
	vp->gfselect = s->gfselect;
	vp->msix_config = s->msix_config;
	vp->qsel = s->qsel;
	for (unsigned q = 0; q < vd->nqueues; q++) {
		const struct hv_virtio_pci_qstate *qs = &s->q[q];

		vp->q[q].size = qs->size;
		vp->q[q].msix = qs->msix;
		vp->q[q].enabled = qs->enabled;
		vp->q[q].desc = qs->desc;
		vp->q[q].avail = qs->avail;
		vp->q[q].used = qs->used;
	}
	__atomic_store_n(&vp->generation, s->generation, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vp->isr, s->isr, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vp->status, s->status, __ATOMIC_SEQ_CST);
	if (live) {
		vp->quiesced = true;
		hv__vp_ioeventfds_set(vp, hv_pci_bar_addr(&vp->pci, 0), true);
	}
	/* INTA# as the ISR says (MSI-X pending vectors stay in the PBA). */
	if (s->isr && !hv_pci_msix_enabled(&vp->pci))
		hv_pci_intx(&vp->pci, true);
out:
	pthread_mutex_unlock(&vp->lock);
	return ret;
}
