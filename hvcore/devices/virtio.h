/* SPDX-License-Identifier: MIT */
/*
 * struct hv_virtio_dev: what a virtio device model (blk, net, rng, vsock)
 * gives its transport and what it may ask of it, independent of the
 * transport (virtio-pci today, hvcore/devices/virtio_pci.h).
 *
 * The device fills the first group of fields and its ops; the transport
 * owns the queues, negotiates features, runs the device's thread and calls
 * the ops:
 *
 *   vCPU thread (config access)    cfg_read / cfg_write
 *   vCPU thread (DRIVER_OK)        activate: queues are started, the
 *                                  device's thread not yet
 *   device thread                  queue_notify(q): the driver kicked q
 *                                  (or, once, at activation)
 *   device thread                  fd_ready: the device's own fd
 *                                  (poll_fd, net: its tap) is readable
 *   vCPU thread (reset, destroy)   reset: after the device's thread has
 *                                  stopped; no queue is used after it
 *
 * A device never blocks a vCPU: its I/O happens in queue_notify on the
 * device's thread (or on threads of its own that reset stops).
 */
#ifndef HVCORE_DEVICES_VIRTIO_H
#define HVCORE_DEVICES_VIRTIO_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/devices/virtqueue.h"

/* Device status (virtio 1.2, 2.1). */
#define HV_VIRTIO_S_ACKNOWLEDGE 1
#define HV_VIRTIO_S_DRIVER 2
#define HV_VIRTIO_S_DRIVER_OK 4
#define HV_VIRTIO_S_FEATURES_OK 8
#define HV_VIRTIO_S_NEEDS_RESET 64
#define HV_VIRTIO_S_FAILED 128

/* Transport feature bits (6). */
#define HV_VIRTIO_F_VERSION_1 32

/* Device types (5). */
#define HV_VIRTIO_ID_NET 1
#define HV_VIRTIO_ID_BLOCK 2
#define HV_VIRTIO_ID_RNG 4
#define HV_VIRTIO_ID_VSOCK 19

#define HV_VIRTIO_MAX_QUEUES 8

struct hv_virtio_dev;

/* What a transport does for its device (the functions below). */
struct hv_virtio_transport_ops {
	void (*queue_irq)(struct hv_virtio_dev *vd, unsigned q);
	void (*needs_reset)(struct hv_virtio_dev *vd, const char *why);
	void (*config_changed)(struct hv_virtio_dev *vd);
	bool (*broken)(struct hv_virtio_dev *vd);
};

struct hv_virtio_dev_ops {
	/* Device-specific configuration, @off + @len <= cfg_size (checked by
	 * the transport). A read fills @data (zeroed first). */
	void (*cfg_read)(struct hv_virtio_dev *vd, uint32_t off, void *data,
			 uint32_t len);
	void (*cfg_write)(struct hv_virtio_dev *vd, uint32_t off,
			  const void *data, uint32_t len);
	/* 0, or -errno: the device goes NEEDS_RESET. Optional. */
	int (*activate)(struct hv_virtio_dev *vd);
	void (*queue_notify)(struct hv_virtio_dev *vd, unsigned q);
	/* Optional. */
	void (*reset)(struct hv_virtio_dev *vd);
	/* Optional: the device's thread has stopped for a migration
	 * (hv_virtio_pci_quiesce()); make what it did durable (blk: flush
	 * the image). Control thread. */
	void (*quiesce)(struct hv_virtio_dev *vd);
	/*
	 * Optional: a file descriptor of the device's own (net: the tap)
	 * that its thread also waits on, for reading; -1 for none. Asked
	 * each time the thread starts. The fd is one-shot: after
	 * fd_ready() returns true, or after any queue_notify(), the thread
	 * waits on it again; after fd_ready() returns false it does not
	 * until the next queue_notify() (net: no receive buffer, the
	 * frame is held until the driver adds some). That keeps a
	 * readable fd from spinning the thread while the device cannot
	 * take from it.
	 */
	int (*poll_fd)(struct hv_virtio_dev *vd);
	bool (*fd_ready)(struct hv_virtio_dev *vd);
};

struct hv_virtio_dev {
	/* Set by the device, immutable after the transport is created. */
	const struct hv_virtio_dev_ops *ops;
	const char *name;   /* for logs: "blk0" */
	uint16_t type;	    /* HV_VIRTIO_ID_* */
	uint64_t features;  /* offered; the transport adds VERSION_1 */
	unsigned nqueues;   /* 1..HV_VIRTIO_MAX_QUEUES */
	uint16_t queue_max; /* power of two <= HV_VQ_MAX_SIZE */
	uint32_t cfg_size;  /* <= 4096 */
	void *priv;

	/* Set by the transport. negotiated: valid from activate to reset.
	 * vq[q]: started from activate to reset, the device thread's. */
	uint64_t negotiated;
	struct hv_vq vq[HV_VIRTIO_MAX_QUEUES];
	const struct hv_virtio_transport_ops *tops;
	void *transport;
};

/*
 * Device side, device thread: after pushing to queue @q, interrupt the
 * driver if it wants one (EVENT_IDX or its flags, hv_vq_need_irq()).
 */
static inline void hv_virtio_queue_irq(struct hv_virtio_dev *vd, unsigned q)
{
	vd->tops->queue_irq(vd, q);
}

/*
 * The device cannot go on (a refused chain, a broken ring): set
 * NEEDS_RESET and tell the driver with a configuration interrupt; the
 * device stops using its queues until the driver resets it. Any thread.
 */
static inline void hv_virtio_needs_reset(struct hv_virtio_dev *vd,
					 const char *why)
{
	vd->tops->needs_reset(vd, why);
}

/* The configuration changed (capacity, link): new generation, interrupt. */
static inline void hv_virtio_config_changed(struct hv_virtio_dev *vd)
{
	vd->tops->config_changed(vd);
}

/* Whether the device was told to stop (NEEDS_RESET or FAILED). */
static inline bool hv_virtio_broken(struct hv_virtio_dev *vd)
{
	return vd->tops->broken(vd);
}

static inline bool hv_virtio_has(const struct hv_virtio_dev *vd, unsigned bit)
{
	return vd->negotiated >> bit & 1;
}

#endif
