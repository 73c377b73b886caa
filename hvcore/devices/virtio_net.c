// SPDX-License-Identifier: MIT
#include "hvcore/devices/virtio_net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hvcore/log.h"

#define HDR HV_VIRTIO_NET_HDR_LEN
#define RXQ 0u
#define TXQ 1u
/* Frames taken from the fd per wake-up before the thread looks at its
 * other events again (the fd stays readable: it is polled again). */
#define RX_BUDGET 64u
/* struct virtio_net_config as offered: mac[6], status, and
 * max_virtqueue_pairs (read only with VIRTIO_NET_F_MQ). */
#define CFG_SIZE 10u

struct hv_virtio_net {
	struct hv_virtio_dev vd;
	/* immutable after create */
	int fd;
	uint8_t mac[6];
	uint8_t cfg[CFG_SIZE];
	/* device thread */
	struct hv_vq_chain chain;
	struct iovec iov[HV_VQ_MAX_SEGS];
	size_t rx_len; /* a frame held in rx_buf (header included), or 0 */
	uint8_t rx_buf[HDR + HV_VIRTIO_NET_FRAME_MAX];
	/* atomics */
	struct hv_virtio_net_stats st;
};

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static void net_cfg_read(struct hv_virtio_dev *vd, uint32_t off, void *data,
			 uint32_t len)
{
	struct hv_virtio_net *n = vd->priv;

	memcpy(data, n->cfg + off, len);
}

/* The next frame from the fd into rx_buf, behind a zeroed header with
 * num_buffers = 1. false when there is none now (or the fd failed). */
static bool rx_fill(struct hv_virtio_net *n)
{
	ssize_t r;

	if (n->rx_len)
		return true;
	r = read(n->fd, n->rx_buf + HDR, HV_VIRTIO_NET_FRAME_MAX);
	if (r <= 0)
		return false;
	memset(n->rx_buf, 0, HDR);
	n->rx_buf[10] = 1; /* num_buffers, little-endian */
	n->rx_len = HDR + (size_t)r;
	return true;
}

/*
 * Move frames from the fd to the receive queue. Returns whether the fd
 * should be polled again: false when a frame waits for a buffer (the
 * driver's kick brings us back) or the device broke.
 */
static bool net_rx(struct hv_virtio_net *n)
{
	struct hv_virtio_dev *vd = &n->vd;
	struct hv_vq *vq = &vd->vq[RXQ];
	bool irq = false, again = true;
	int ret;

	if (!vq->started)
		return false;
	for (unsigned i = 0; i < RX_BUDGET; i++) {
		if (!rx_fill(n))
			break;
		ret = hv_vq_pop(vq, &n->chain);
		/* No buffer: ask for a kick; look again in case one came
		 * meanwhile (virtqueue.h, notify_enable). */
		if (!ret && hv_vq_notify_enable(vq))
			ret = hv_vq_pop(vq, &n->chain);
		if (!ret) {
			again = false;
			break;
		}
		if (ret < 0 || n->chain.wr_len < HDR) {
			hv_virtio_needs_reset(vd, "malformed receive chain");
			return false;
		}
		if (n->chain.wr_len < n->rx_len) {
			/* Too big for this chain: dropped, the chain
			 * completed empty (the driver reposts it). */
			count(&n->st.rx_dropped, 1);
			hv_vq_push(vq, &n->chain, 0);
		} else {
			hv_vq_scatter(&n->chain, 0, n->rx_buf, n->rx_len);
			hv_vq_push(vq, &n->chain, (uint32_t)n->rx_len);
			count(&n->st.rx_packets, 1);
			count(&n->st.rx_bytes, n->rx_len - HDR);
		}
		n->rx_len = 0;
		irq = true;
	}
	if (irq)
		hv_virtio_queue_irq(vd, RXQ);
	return again;
}

/* One transmit chain: the frame past the header, written as it is. */
static void tx_one(struct hv_virtio_net *n)
{
	struct hv_vq_chain *c = &n->chain;
	uint64_t len = c->rd_len - HDR;
	unsigned k;
	ssize_t r;

	if (!len)
		return;
	k = hv_vq_iov(c->rd, c->nrd, HDR, len, n->iov, HV_VQ_MAX_SEGS);
	r = k ? writev(n->fd, n->iov, (int)k) : -1;
	if (r < 0 || (uint64_t)r != len) {
		count(&n->st.tx_errors, 1);
		return;
	}
	count(&n->st.tx_packets, 1);
	count(&n->st.tx_bytes, len);
}

static void net_tx(struct hv_virtio_net *n)
{
	struct hv_virtio_dev *vd = &n->vd;
	struct hv_vq *vq = &vd->vq[TXQ];
	int ret;

	do {
		hv_vq_notify_disable(vq);
		while ((ret = hv_vq_pop(vq, &n->chain)) != 0) {
			if (ret < 0 || n->chain.rd_len < HDR) {
				hv_virtio_needs_reset(vd,
						      "malformed transmit chain");
				return;
			}
			tx_one(n);
			hv_vq_push(vq, &n->chain, 0);
		}
		hv_virtio_queue_irq(vd, TXQ);
	} while (hv_vq_notify_enable(vq));
}

static void net_notify(struct hv_virtio_dev *vd, unsigned q)
{
	struct hv_virtio_net *n = vd->priv;

	if (q == RXQ)
		net_rx(n);
	else if (q == TXQ)
		net_tx(n);
}

static int net_poll_fd(struct hv_virtio_dev *vd)
{
	struct hv_virtio_net *n = vd->priv;

	return n->fd;
}

static bool net_fd_ready(struct hv_virtio_dev *vd)
{
	return net_rx(vd->priv);
}

/* After the device thread stopped: a held frame is dropped (a NIC's
 * reset loses what it had not delivered). */
static void net_reset(struct hv_virtio_dev *vd)
{
	struct hv_virtio_net *n = vd->priv;

	if (n->rx_len)
		count(&n->st.rx_dropped, 1);
	n->rx_len = 0;
}

static const struct hv_virtio_dev_ops net_ops = {
	.cfg_read = net_cfg_read,
	.queue_notify = net_notify,
	.poll_fd = net_poll_fd,
	.fd_ready = net_fd_ready,
	.reset = net_reset,
};

int hv_virtio_net_create(const struct hv_virtio_net_cfg *cfg,
			 struct hv_virtio_net **out)
{
	struct hv_virtio_net *n;

	if (cfg->fd < 0 || cfg->mac[0] & 1)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->fd = cfg->fd;
	memcpy(n->mac, cfg->mac, 6);
	memcpy(n->cfg, cfg->mac, 6);
	n->cfg[6] = HV_VIRTIO_NET_S_LINK_UP;
	n->cfg[8] = 1; /* max_virtqueue_pairs */
	n->vd = (struct hv_virtio_dev){
		.ops = &net_ops,
		.name = cfg->name ? cfg->name : "net",
		.type = HV_VIRTIO_ID_NET,
		.features = 1ull << HV_VIRTIO_NET_F_MAC |
			    1ull << HV_VIRTIO_NET_F_STATUS |
			    1ull << HV_VIRTIO_F_INDIRECT_DESC |
			    1ull << HV_VIRTIO_F_EVENT_IDX,
		.nqueues = 2,
		.queue_max = HV_VQ_MAX_SIZE,
		.cfg_size = CFG_SIZE,
		.priv = n,
	};
	*out = n;
	return 0;
}

void hv_virtio_net_destroy(struct hv_virtio_net *n)
{
	if (!n)
		return;
	close(n->fd);
	free(n);
}

struct hv_virtio_dev *hv_virtio_net_dev(struct hv_virtio_net *n)
{
	return &n->vd;
}

void hv_virtio_net_mac(const struct hv_virtio_net *n, uint8_t mac[6])
{
	memcpy(mac, n->mac, 6);
}

int hv_virtio_net_fd(const struct hv_virtio_net *n)
{
	return n->fd;
}

void hv_virtio_net_stats(const struct hv_virtio_net *n,
			 struct hv_virtio_net_stats *out)
{
	out->rx_packets = __atomic_load_n(&n->st.rx_packets, __ATOMIC_RELAXED);
	out->rx_bytes = __atomic_load_n(&n->st.rx_bytes, __ATOMIC_RELAXED);
	out->rx_dropped = __atomic_load_n(&n->st.rx_dropped, __ATOMIC_RELAXED);
	out->tx_packets = __atomic_load_n(&n->st.tx_packets, __ATOMIC_RELAXED);
	out->tx_bytes = __atomic_load_n(&n->st.tx_bytes, __ATOMIC_RELAXED);
	out->tx_errors = __atomic_load_n(&n->st.tx_errors, __ATOMIC_RELAXED);
}
