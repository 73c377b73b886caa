/* SPDX-License-Identifier: MIT */
/*
 * hv_virtio_net: a virtio network device (virtio 1.2, 5.1) over a tap
 * (hvcore/devices/tap.h) or, for tests, any fd that carries one frame per
 * read and write (a datagram socketpair). Queue 0 receives, queue 1
 * transmits; one queue pair, no control queue, no offloads.
 *
 * Features: VIRTIO_NET_F_MAC (the configured address) and
 * VIRTIO_NET_F_STATUS (link up, always), with VERSION_1 (the transport's),
 * INDIRECT_DESC and EVENT_IDX. So every buffer starts with the 12-byte
 * struct virtio_net_hdr_v1, which the device strips on transmit and
 * writes (all zero, num_buffers 1) on receive: the tap sees plain
 * Ethernet frames.
 *
 * Receive: the transport's device thread waits on the fd (virtio.h,
 * poll_fd/fd_ready), reads a frame, and copies it with its header into
 * the next receive chain, which hv_vq_push() marks dirty for a
 * migration. With no receive buffer, the frame is held and the fd not
 * polled until the driver kicks queue 0; a frame larger than the chain
 * is dropped (counted) and the chain completed empty.
 * Transmit: each chain's readable side past the header is one frame,
 * written with writev; a full tap (EAGAIN) drops it, as a NIC does.
 * A chain the walker refuses, a receive chain with no room for the
 * header or a transmit chain shorter than it sets NEEDS_RESET.
 *
 * Threads: create/destroy on the control thread (destroy after the
 * transport's); everything else on the device thread; stats any thread.
 */
#ifndef HVCORE_DEVICES_VIRTIO_NET_H
#define HVCORE_DEVICES_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/devices/virtio.h"

#define HV_VIRTIO_NET_F_MAC 5
#define HV_VIRTIO_NET_F_STATUS 16
#define HV_VIRTIO_NET_S_LINK_UP 1
/* struct virtio_net_hdr_v1: flags, gso_type, hdr_len, gso_size,
 * csum_start, csum_offset, num_buffers. */
#define HV_VIRTIO_NET_HDR_LEN 12
/* The largest frame the device reads from its fd (a tap's 64 KiB). */
#define HV_VIRTIO_NET_FRAME_MAX 65536u

struct hv_virtio_net_cfg {
	/* The fd to use, taken over (closed by destroy): a tap's from
	 * hv_tap_open(), or a test's socket. */
	int fd;
	uint8_t mac[6];
	const char *name; /* for logs; NULL: "net" */
};

struct hv_virtio_net_stats {
	uint64_t rx_packets, rx_bytes, rx_dropped;
	uint64_t tx_packets, tx_bytes, tx_errors;
};

struct hv_virtio_net;

/* 0, -EINVAL (@cfg->fd < 0, or a multicast MAC), or -ENOMEM; on failure
 * the fd is still the caller's. */
int hv_virtio_net_create(const struct hv_virtio_net_cfg *cfg,
			 struct hv_virtio_net **out);
/* After the transport is destroyed; closes the fd. NULL: no-op. */
void hv_virtio_net_destroy(struct hv_virtio_net *n);
struct hv_virtio_dev *hv_virtio_net_dev(struct hv_virtio_net *n);
void hv_virtio_net_mac(const struct hv_virtio_net *n, uint8_t mac[6]);
/* The fd (for the announce after a migration, hv_tap_announce()). */
int hv_virtio_net_fd(const struct hv_virtio_net *n);
/* Counters (relaxed reads; any thread). */
void hv_virtio_net_stats(const struct hv_virtio_net *n,
			 struct hv_virtio_net_stats *out);

#endif
