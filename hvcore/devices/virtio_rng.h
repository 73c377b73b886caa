/* SPDX-License-Identifier: MIT */
/*
 * hv_virtio_rng: a virtio entropy device (virtio 1.2, 5.4): each buffer
 * the driver offers is filled from getrandom(2) on the device thread. No
 * configuration, one queue. A chain with no writable buffer is completed
 * with length 0; a refused chain sets NEEDS_RESET.
 */
#ifndef HVCORE_DEVICES_VIRTIO_RNG_H
#define HVCORE_DEVICES_VIRTIO_RNG_H

#include <stdint.h>

#include "hvcore/devices/virtio.h"

struct hv_virtio_rng;

/* 0 or -ENOMEM. */
int hv_virtio_rng_create(const char *name, struct hv_virtio_rng **out);
/* After the transport is destroyed. NULL: no-op. */
void hv_virtio_rng_destroy(struct hv_virtio_rng *r);
struct hv_virtio_dev *hv_virtio_rng_dev(struct hv_virtio_rng *r);
/* Bytes given to the guest so far (any thread). */
uint64_t hv_virtio_rng_bytes(const struct hv_virtio_rng *r);

#endif
