/* SPDX-License-Identifier: MIT */
/*
 * The virtio-pci transport's object, shared by virtio_pci.c (the
 * registers, the device thread) and virtio_pci_state.c (quiesce, save
 * and load for a live migration). Not for other users: virtio_pci.h is
 * the contract.
 */
#ifndef HVCORE_DEVICES_VIRTIO_PCI_PRIV_H
#define HVCORE_DEVICES_VIRTIO_PCI_PRIV_H

#include <pthread.h>

#include "hvcore/devices/virtio_pci.h"

struct vp_queue {
	uint16_t size, msix;
	bool enabled;
	uint64_t desc, avail, used;
	int kick;	    /* eventfd; the device thread waits on it */
	uint64_t ioeventfd; /* gpa it is registered at, 0: not */
};

struct hv_virtio_pci {
	/* immutable after create */
	struct hv_pci_dev pci;
	struct hv_virtio_dev *vd;
	const struct hv_dev_env *env;
	uint64_t offered;
	int stop; /* eventfd: the device thread returns */

	/* lock: the common configuration, from vCPU threads */
	pthread_mutex_t lock;
	uint32_t dfselect, gfselect;
	uint64_t driver_features;
	uint16_t msix_config;
	uint16_t qsel;
	struct vp_queue q[HV_VIRTIO_MAX_QUEUES];
	bool running;  /* the device thread exists */
	bool quiesced; /* stopped by hv_virtio_pci_quiesce(), to restart */
	pthread_t thread;

	/* atomics: also written by the device thread */
	uint8_t status;
	uint8_t generation;
	uint8_t isr;
};

/* virtio_pci.c; lock held. */
void hv__vp_ioeventfds_set(struct hv_virtio_pci *vp, uint64_t bar, bool on);
void hv__vp_thread_stop(struct hv_virtio_pci *vp);
int hv__vp_thread_start(struct hv_virtio_pci *vp);
uint8_t hv__vp_status_get(struct hv_virtio_pci *vp);

#endif
