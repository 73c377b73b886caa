/* SPDX-License-Identifier: MIT */
/*
 * hv_vq: the device side of one virtio 1.x split virtqueue (virtio 1.2,
 * 2.7): a descriptor table, the driver's avail ring and the device's used
 * ring, all in guest memory, reached only through hv_dev_env.gpa_map.
 *
 * The guest owns that memory and may change it at any time, so every
 * descriptor is read once into a local copy and checked before use, and
 * nothing the guest wrote is trusted: a chain is refused (never followed)
 * when a descriptor's buffer is not guest RAM or its length overflows, a
 * next index is out of range, the chain is longer than the queue (a loop),
 * an indirect table is not allowed or holds another one, a device-readable
 * descriptor follows a device-writable one (2.7.4.2: the driver MUST place
 * writable ones after readable ones), or it has more than HV_VQ_MAX_SEGS
 * segments. A refusal returns an error and touches nothing; the device
 * then completes the chain with an error or marks itself NEEDS_RESET.
 *
 * Threads: a queue belongs to one thread at a time: the transport sets it
 * up (hv_vq_start()) before the device's thread runs and tears it down
 * (hv_vq_stop()) after that thread stopped; in between only the device's
 * thread calls pop/push/notify.
 */
#ifndef HVCORE_DEVICES_VIRTQUEUE_H
#define HVCORE_DEVICES_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "hvcore/devices/dev.h"
#include "hvcore/types.h"

/* Ring layout (virtio 1.2, 2.7), little-endian (x86 host and guest). */
#define HV_VRING_DESC_F_NEXT 1
#define HV_VRING_DESC_F_WRITE 2
#define HV_VRING_DESC_F_INDIRECT 4
#define HV_VRING_USED_F_NO_NOTIFY 1
#define HV_VRING_AVAIL_F_NO_INTERRUPT 1

/* Feature bits of the ring itself. */
#define HV_VIRTIO_F_INDIRECT_DESC 28
#define HV_VIRTIO_F_EVENT_IDX 29

struct hv_vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

/* The largest queue a device offers, and the most segments in one chain
 * (direct or through one indirect table). */
#define HV_VQ_MAX_SIZE 256
#define HV_VQ_MAX_SEGS 512

/* One buffer of a chain: host address (inside guest RAM), its gpa (for
 * the dirty log) and length. */
struct hv_vq_seg {
	void *hva;
	gpa_t gpa;
	uint32_t len;
};

/* A descriptor chain, split into what the device reads (the driver's
 * request) and what it writes (its answer), in chain order. */
struct hv_vq_chain {
	uint16_t head;
	unsigned nrd, nwr;
	uint64_t rd_len, wr_len;
	struct hv_vq_seg rd[HV_VQ_MAX_SEGS];
	struct hv_vq_seg wr[HV_VQ_MAX_SEGS];
};

struct hv_vq {
	/* Set by the transport before hv_vq_start(), immutable after. */
	const struct hv_dev_env *env;
	uint16_t size; /* power of two, 1..HV_VQ_MAX_SIZE */
	gpa_t desc_gpa, avail_gpa, used_gpa;
	bool indirect;	/* VIRTIO_F_INDIRECT_DESC negotiated */
	bool event_idx; /* VIRTIO_F_EVENT_IDX negotiated */

	/* Device thread only (after start). */
	struct hv_vring_desc *desc;
	uint16_t *avail; /* flags, idx, ring[size], used_event */
	uint8_t *used;	 /* flags, idx, ring[size] of {id, len}, avail_event */
	uint16_t last_avail;
	uint16_t used_idx;
	uint16_t signalled_used; /* used_idx at the last interrupt */
	bool signalled_valid;
	bool started;
};

/*
 * Check the rings' addresses and alignment and map them. 0, or -EINVAL
 * (bad size or alignment) / -EFAULT (a ring not in guest RAM): the queue
 * stays stopped, and the transport marks the device NEEDS_RESET.
 */
int hv_vq_start(struct hv_vq *vq);
void hv_vq_stop(struct hv_vq *vq);

/*
 * Walk the chain that starts at descriptor @head into @c. 0, or a negative
 * errno naming the refusal (-EINVAL bad index, flags or order, -EFAULT a
 * buffer outside RAM, -ELOOP a chain longer than its table, -E2BIG too many
 * segments). Reads the descriptor table only; writes nothing. Pure enough
 * to fuzz (tests/fuzz/fuzz_virtqueue.c).
 */
int hv_vq_walk(const struct hv_vq *vq, uint16_t head, struct hv_vq_chain *c);

/*
 * Take the next available chain. 1 with @c filled, 0 when the ring is
 * empty, -EPROTO when the avail ring itself is broken (its index ran more
 * than a queue ahead: the device must be reset), or the hv_vq_walk() error
 * of a refused chain, with c->head set and the chain consumed: the device
 * completes it (hv_vq_push() with length 0) or marks itself NEEDS_RESET.
 */
int hv_vq_pop(struct hv_vq *vq, struct hv_vq_chain *c);

/*
 * Return chain @head to the driver with @written bytes written to its
 * writable segments (which are marked dirty, then the used element, then
 * the used index, released after the data).
 */
void hv_vq_push(struct hv_vq *vq, const struct hv_vq_chain *c,
		uint32_t written);
/* The same for a refused chain: only its head is known. */
void hv_vq_push_head(struct hv_vq *vq, uint16_t head);

/* After pushes: true when the driver wants an interrupt now (used_event
 * with EVENT_IDX, else the avail ring's NO_INTERRUPT flag). */
bool hv_vq_need_irq(struct hv_vq *vq);

/*
 * Ask for / stop asking for notifications (avail_event with EVENT_IDX,
 * else the used ring's NO_NOTIFY flag). enable returns true when buffers
 * arrived meanwhile, so the device polls again before it sleeps.
 */
bool hv_vq_notify_enable(struct hv_vq *vq);
void hv_vq_notify_disable(struct hv_vq *vq);

/*
 * Copy between a chain's segments and a flat buffer, from byte @off of the
 * readable (gather) or writable (scatter) side. Return the bytes copied.
 */
uint64_t hv_vq_gather(const struct hv_vq_chain *c, uint64_t off, void *buf,
		      uint64_t len);
uint64_t hv_vq_scatter(const struct hv_vq_chain *c, uint64_t off,
		       const void *buf, uint64_t len);

/* Fill @iov (of @max) with the segments covering [@off, @off + @len) of
 * one side; returns the count, 0 if it does not fit in @max. */
unsigned hv_vq_iov(const struct hv_vq_seg *seg, unsigned nseg, uint64_t off,
		   uint64_t len, struct iovec *iov, unsigned max);

#endif
