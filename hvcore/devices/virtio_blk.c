// SPDX-License-Identifier: MIT
#include "hvcore/devices/virtio_blk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hvcore/log.h"

#define SECTOR 512ull
#define HDR 16u
/* Segments per request we announce (seg_max): the chain's data part. */
#define SEG_MAX (HV_VQ_MAX_SIZE - 2)

struct hv_virtio_blk {
	struct hv_virtio_dev vd;
	/* immutable after create */
	int fd;
	bool ro;
	uint64_t sectors;
	char id[HV_VIRTIO_BLK_ID_BYTES];
	uint8_t cfg[24];
	/* device thread */
	struct hv_vq_chain chain;
	struct iovec iov[HV_VQ_MAX_SEGS];
	/* atomics */
	struct hv_virtio_blk_stats st;
};

static void put_le(uint8_t *p, uint64_t v, unsigned len)
{
	for (unsigned i = 0; i < len; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void blk_cfg_read(struct hv_virtio_dev *vd, uint32_t off, void *data,
			 uint32_t len)
{
	struct hv_virtio_blk *b = vd->priv;

	memcpy(data, b->cfg + off, len);
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* Data transfer between the image and the chain's data buffers. */
static uint8_t blk_rw(struct hv_virtio_blk *b, bool write, uint64_t sector,
		      uint64_t *done)
{
	struct hv_vq_chain *c = &b->chain;
	uint64_t len = write ? c->rd_len - HDR : c->wr_len - 1;
	unsigned n;
	ssize_t r;

	if (write && b->ro)
		return HV_VIRTIO_BLK_S_IOERR;
	if (len % SECTOR || sector > b->sectors ||
	    len / SECTOR > b->sectors - sector)
		return HV_VIRTIO_BLK_S_IOERR;
	if (!len)
		return HV_VIRTIO_BLK_S_OK;
	if (write)
		n = hv_vq_iov(c->rd, c->nrd, HDR, len, b->iov, HV_VQ_MAX_SEGS);
	else
		n = hv_vq_iov(c->wr, c->nwr, 0, len, b->iov, HV_VQ_MAX_SEGS);
	if (!n)
		return HV_VIRTIO_BLK_S_IOERR;
	/* One call each way: an image file answers in full or fails; a short
	 * count (the file shrank under us) is an error. */
	if (write)
		r = pwritev(b->fd, b->iov, (int)n, (off_t)(sector * SECTOR));
	else
		r = preadv(b->fd, b->iov, (int)n, (off_t)(sector * SECTOR));
	if (r < 0 || (uint64_t)r != len)
		return HV_VIRTIO_BLK_S_IOERR;
	*done = len;
	count(write ? &b->st.bytes_written : &b->st.bytes_read, len);
	return HV_VIRTIO_BLK_S_OK;
}

/* Serve the popped chain; returns the bytes written into it. */
static uint32_t blk_request(struct hv_virtio_blk *b)
{
	struct hv_vq_chain *c = &b->chain;
	uint8_t hdr[HDR], st;
	uint64_t sector, done = 0, written = 0;
	uint32_t type;

	hv_vq_gather(c, 0, hdr, HDR);
	memcpy(&type, hdr, 4);
	memcpy(&sector, hdr + 8, 8);
	switch (type) {
	case HV_VIRTIO_BLK_T_IN:
		st = blk_rw(b, false, sector, &done);
		written = done;
		break;
	case HV_VIRTIO_BLK_T_OUT:
		st = blk_rw(b, true, sector, &done);
		break;
	case HV_VIRTIO_BLK_T_FLUSH:
		count(&b->st.flushes, 1);
		st = fdatasync(b->fd) ? HV_VIRTIO_BLK_S_IOERR
				      : HV_VIRTIO_BLK_S_OK;
		break;
	case HV_VIRTIO_BLK_T_GET_ID:
		written = hv_vq_scatter(c, 0, b->id,
					HV_MIN((uint64_t)HV_VIRTIO_BLK_ID_BYTES,
					       c->wr_len - 1));
		st = HV_VIRTIO_BLK_S_OK;
		break;
	default:
		st = HV_VIRTIO_BLK_S_UNSUPP;
	}
	if (st != HV_VIRTIO_BLK_S_OK)
		count(&b->st.errors, 1);
	count(&b->st.requests, 1);
	/* The status byte is the last writable byte (5.2.6). */
	hv_vq_scatter(c, c->wr_len - 1, &st, 1);
	return (uint32_t)(written + 1);
}

static void blk_notify(struct hv_virtio_dev *vd, unsigned q)
{
	struct hv_virtio_blk *b = vd->priv;
	struct hv_vq *vq = &vd->vq[q];
	int ret;

	do {
		hv_vq_notify_disable(vq);
		while ((ret = hv_vq_pop(vq, &b->chain)) != 0) {
			if (ret < 0 || b->chain.rd_len < HDR ||
			    b->chain.wr_len < 1) {
				hv_virtio_needs_reset(vd, "malformed request");
				return;
			}
			hv_vq_push(vq, &b->chain, blk_request(b));
		}
		hv_virtio_queue_irq(vd, q);
	} while (hv_vq_notify_enable(vq));
}

/* Before a migration's switchover: what the guest wrote is on the image
 * for the destination, which opens the same one (shared storage). */
static void blk_quiesce(struct hv_virtio_dev *vd)
{
	struct hv_virtio_blk *b = vd->priv;

	if (!b->ro && fdatasync(b->fd))
		hv_warn("virtio_blk", "op=quiesce_flush dev=%s err=%d",
			vd->name, -errno);
}

static const struct hv_virtio_dev_ops blk_ops = {
	.cfg_read = blk_cfg_read,
	.queue_notify = blk_notify,
	.quiesce = blk_quiesce,
};

int hv_virtio_blk_create(const struct hv_virtio_blk_cfg *cfg,
			 struct hv_virtio_blk **out)
{
	struct hv_virtio_blk *b;
	const char *base, *id;
	struct stat s;
	uint64_t size;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ro = cfg->read_only;
	if (cfg->adopt) {
		/* Another process's image fd (local live update): a dup, in
		 * the mode the disk needs (I/O is pread/pwrite: the shared
		 * file offset is never used). */
		int fl = cfg->fd < 0 ? -1 : fcntl(cfg->fd, F_GETFL);

		if (fl < 0 || (!b->ro && (fl & O_ACCMODE) != O_RDWR)) {
			ret = fl < 0 ? -EBADF : -EINVAL;
			goto err;
		}
		b->fd = fcntl(cfg->fd, F_DUPFD_CLOEXEC, 0);
	} else {
		b->fd = open(cfg->path,
			     (b->ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	}
	if (b->fd < 0) {
		ret = -errno;
		goto err;
	}
	if (fstat(b->fd, &s)) {
		ret = -errno;
		goto err_fd;
	}
	if (S_ISREG(s.st_mode)) {
		size = (uint64_t)s.st_size;
	} else if (S_ISBLK(s.st_mode)) {
		off_t end = lseek(b->fd, 0, SEEK_END);

		size = end < 0 ? 0 : (uint64_t)end;
	} else {
		ret = -EINVAL;
		goto err_fd;
	}
	b->sectors = size / SECTOR;
	if (!b->sectors) {
		ret = -EINVAL;
		goto err_fd;
	}
	base = strrchr(cfg->path, '/');
	base = base ? base + 1 : cfg->path;
	/* 20 bytes, zero-padded, not NUL-terminated when full (5.2.6). */
	id = cfg->serial ? cfg->serial : base;
	memcpy(b->id, id, HV_MIN(strlen(id), sizeof(b->id)));
	put_le(b->cfg, b->sectors, 8);
	put_le(b->cfg + 12, SEG_MAX, 4);
	b->vd = (struct hv_virtio_dev){
		.ops = &blk_ops,
		.name = cfg->name ? cfg->name : "blk",
		.type = HV_VIRTIO_ID_BLOCK,
		.features = 1ull << HV_VIRTIO_BLK_F_SEG_MAX |
			    1ull << HV_VIRTIO_BLK_F_FLUSH |
			    (b->ro ? 1ull << HV_VIRTIO_BLK_F_RO : 0) |
			    1ull << HV_VIRTIO_F_INDIRECT_DESC |
			    1ull << HV_VIRTIO_F_EVENT_IDX,
		.nqueues = 1,
		.queue_max = HV_VQ_MAX_SIZE,
		.cfg_size = sizeof(b->cfg),
		.priv = b,
	};
	*out = b;
	return 0;
err_fd:
	close(b->fd);
err:
	free(b);
	return ret;
}

void hv_virtio_blk_destroy(struct hv_virtio_blk *b)
{
	if (!b)
		return;
	close(b->fd);
	free(b);
}

struct hv_virtio_dev *hv_virtio_blk_dev(struct hv_virtio_blk *b)
{
	return &b->vd;
}

int hv_virtio_blk_fd(const struct hv_virtio_blk *b)
{
	return b->fd;
}

uint64_t hv_virtio_blk_sectors(const struct hv_virtio_blk *b)
{
	return b->sectors;
}

void hv_virtio_blk_stats(const struct hv_virtio_blk *b,
			 struct hv_virtio_blk_stats *out)
{
	out->requests = __atomic_load_n(&b->st.requests, __ATOMIC_RELAXED);
	out->errors = __atomic_load_n(&b->st.errors, __ATOMIC_RELAXED);
	out->bytes_read = __atomic_load_n(&b->st.bytes_read, __ATOMIC_RELAXED);
	out->bytes_written =
		__atomic_load_n(&b->st.bytes_written, __ATOMIC_RELAXED);
	out->flushes = __atomic_load_n(&b->st.flushes, __ATOMIC_RELAXED);
}
