/* SPDX-License-Identifier: MIT */
/*
 * hv_virtio_blk: a virtio block device (virtio 1.2, 5.2) over a raw image
 * file. Requests: IN, OUT, FLUSH (VIRTIO_BLK_F_FLUSH: fdatasync), GET_ID;
 * with the read-only option VIRTIO_BLK_F_RO is offered and every OUT
 * fails with VIRTIO_BLK_S_IOERR. A request outside the image, or not in
 * whole sectors, fails with IOERR; an unknown type with UNSUPP. A chain
 * with no room for the header or the status byte cannot be answered: the
 * device goes NEEDS_RESET.
 *
 * I/O runs on the transport's device thread (preadv/pwritev straight into
 * the guest's buffers), never on a vCPU; the capacity is the image's size
 * at create, in 512-byte sectors (a trailing partial sector is not used).
 */
#ifndef HVCORE_DEVICES_VIRTIO_BLK_H
#define HVCORE_DEVICES_VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/devices/virtio.h"

#define HV_VIRTIO_BLK_F_SEG_MAX 2
#define HV_VIRTIO_BLK_F_RO 5
#define HV_VIRTIO_BLK_F_FLUSH 9

#define HV_VIRTIO_BLK_T_IN 0
#define HV_VIRTIO_BLK_T_OUT 1
#define HV_VIRTIO_BLK_T_FLUSH 4
#define HV_VIRTIO_BLK_T_GET_ID 8

#define HV_VIRTIO_BLK_S_OK 0
#define HV_VIRTIO_BLK_S_IOERR 1
#define HV_VIRTIO_BLK_S_UNSUPP 2

#define HV_VIRTIO_BLK_ID_BYTES 20

struct hv_virtio_blk_cfg {
	const char *path;
	bool read_only;
	const char *serial; /* GET_ID; NULL: the file name */
	const char *name;   /* for logs; NULL: "blk" */
	/* Adopt @fd (dup'd; the caller keeps it) instead of opening @path,
	 * which still names the disk: another process's open image (local
	 * live update). It must be O_RDWR unless @read_only. */
	bool adopt;
	int fd;
};

struct hv_virtio_blk_stats {
	uint64_t requests, errors, bytes_read, bytes_written, flushes;
};

struct hv_virtio_blk;

/* Open (or adopt) the image. 0, or -errno of open/fstat, -EBADF (an
 * adopted fd that is not open), -EINVAL (not a regular file
 * or block device, or smaller than one sector). */
int hv_virtio_blk_create(const struct hv_virtio_blk_cfg *cfg,
			 struct hv_virtio_blk **out);
/* After the transport is destroyed. NULL: no-op. */
void hv_virtio_blk_destroy(struct hv_virtio_blk *b);
/* The device to give a transport (hv_virtio_pci_create()). */
struct hv_virtio_dev *hv_virtio_blk_dev(struct hv_virtio_blk *b);
uint64_t hv_virtio_blk_sectors(const struct hv_virtio_blk *b);
/* The image's fd (the device keeps it; for a handover of the disk). */
int hv_virtio_blk_fd(const struct hv_virtio_blk *b);
/* Counters (relaxed reads; any thread). */
void hv_virtio_blk_stats(const struct hv_virtio_blk *b,
			 struct hv_virtio_blk_stats *out);

#endif
