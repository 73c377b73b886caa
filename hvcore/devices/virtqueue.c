// SPDX-License-Identifier: MIT
#include "hvcore/devices/virtqueue.h"

#include <errno.h>
#include <string.h>

/*
 * Guest memory is shared with vCPUs that run while the device works:
 * every ring field is read or written once, with an atomic access, and the
 * orderings the spec asks for (2.7.13, 2.7.14) ride on those accesses
 * (no bare fences: ThreadSanitizer does not model them):
 *
 *   device reads avail->idx (acquire) -> reads ring[] and descriptors
 *   device writes data, used ring element -> writes used->idx (release)
 *   device writes used->idx (or avail_event) -> reads used_event (or
 *     avail->idx), both seq_cst so the store is not passed by the load;
 *     the driver wrote those before its own full barrier and its read of
 *     our index: one of us sees the other.
 */
static inline uint16_t ld16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint16_t ld16_sc(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void st16_sc(uint16_t *p, uint16_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

static inline void st32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static uint64_t desc_bytes(uint16_t size)
{
	return 16ull * size;
}

static uint64_t avail_bytes(uint16_t size)
{
	return 6ull + 2ull * size;
}

static uint64_t used_bytes(uint16_t size)
{
	return 6ull + 8ull * size;
}

int hv_vq_start(struct hv_vq *vq)
{
	const struct hv_dev_env *env = vq->env;

	if (!vq->size || vq->size > HV_VQ_MAX_SIZE ||
	    (vq->size & (vq->size - 1)))
		return -EINVAL;
	/* 2.7: alignment 16 (table), 2 (avail), 4 (used). */
	if ((vq->desc_gpa & 15) || (vq->avail_gpa & 1) || (vq->used_gpa & 3))
		return -EINVAL;
	vq->desc =
		env->gpa_map(env->opaque, vq->desc_gpa, desc_bytes(vq->size));
	vq->avail =
		env->gpa_map(env->opaque, vq->avail_gpa, avail_bytes(vq->size));
	vq->used =
		env->gpa_map(env->opaque, vq->used_gpa, used_bytes(vq->size));
	if (!vq->desc || !vq->avail || !vq->used) {
		vq->desc = NULL;
		vq->avail = NULL;
		vq->used = NULL;
		return -EFAULT;
	}
	vq->last_avail = 0;
	vq->used_idx = 0;
	vq->signalled_used = 0;
	vq->signalled_valid = false;
	vq->started = true;
	return 0;
}

void hv_vq_stop(struct hv_vq *vq)
{
	vq->started = false;
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
}

/* Read descriptor @i of @table once, into a copy the guest cannot change. */
static void desc_read(const struct hv_vring_desc *table, unsigned i,
		      struct hv_vring_desc *d)
{
	const volatile struct hv_vring_desc *s = &table[i];

	d->addr = s->addr;
	d->len = s->len;
	d->flags = s->flags;
	d->next = s->next;
}

static int seg_add(const struct hv_vq *vq, struct hv_vq_chain *c,
		   const struct hv_vring_desc *d)
{
	struct hv_vq_seg *s;
	void *hva;

	if (d->addr + d->len < d->addr)
		return -EFAULT;
	if (d->flags & HV_VRING_DESC_F_WRITE) {
		if (c->nwr == HV_VQ_MAX_SEGS)
			return -E2BIG;
	} else {
		/* Readable after writable: 2.7.4.2 forbids it. */
		if (c->nwr)
			return -EINVAL;
		if (c->nrd == HV_VQ_MAX_SEGS)
			return -E2BIG;
	}
	/* An empty buffer carries nothing; skip it, but it still counts
	 * against the loop bound. */
	if (!d->len)
		return 0;
	hva = vq->env->gpa_map(vq->env->opaque, d->addr, d->len);
	if (!hva)
		return -EFAULT;
	if (d->flags & HV_VRING_DESC_F_WRITE) {
		s = &c->wr[c->nwr++];
		c->wr_len += d->len;
	} else {
		s = &c->rd[c->nrd++];
		c->rd_len += d->len;
	}
	s->hva = hva;
	s->gpa = d->addr;
	s->len = d->len;
	return 0;
}

/* Walk an indirect table of @n descriptors at @table (already mapped). */
static int walk_indirect(const struct hv_vq *vq,
			 const struct hv_vring_desc *table, unsigned n,
			 struct hv_vq_chain *c)
{
	struct hv_vring_desc d;
	unsigned i = 0, steps = 0;
	int ret;

	for (;;) {
		desc_read(table, i, &d);
		if (d.flags & HV_VRING_DESC_F_INDIRECT)
			return -EINVAL; /* 2.7.5.3.1: no nesting */
		ret = seg_add(vq, c, &d);
		if (ret)
			return ret;
		if (!(d.flags & HV_VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return -EINVAL;
		if (++steps >= n)
			return -ELOOP;
		i = d.next;
	}
}

int hv_vq_walk(const struct hv_vq *vq, uint16_t head, struct hv_vq_chain *c)
{
	struct hv_vring_desc d;
	unsigned i = head, steps = 0;
	int ret;

	c->head = head;
	c->nrd = c->nwr = 0;
	c->rd_len = c->wr_len = 0;
	if (head >= vq->size)
		return -EINVAL;
	for (;;) {
		desc_read(vq->desc, i, &d);
		if (d.flags & HV_VRING_DESC_F_INDIRECT) {
			const struct hv_vring_desc *table;

			/* 2.7.5.3.1: not with NEXT; a whole number of
			 * descriptors; only when negotiated. */
			if (!vq->indirect || (d.flags & HV_VRING_DESC_F_NEXT) ||
			    !d.len || (d.len & 15))
				return -EINVAL;
			if (d.len / 16 > HV_VQ_MAX_SEGS)
				return -E2BIG;
			if (d.addr + d.len < d.addr)
				return -EFAULT;
			table = vq->env->gpa_map(vq->env->opaque, d.addr,
						 d.len);
			if (!table)
				return -EFAULT;
			/* An indirect descriptor ends the chain; a table
			 * after direct buffers still obeys the order. */
			return walk_indirect(vq, table, d.len / 16, c);
		}
		ret = seg_add(vq, c, &d);
		if (ret)
			return ret;
		if (!(d.flags & HV_VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= vq->size)
			return -EINVAL;
		if (++steps >= vq->size)
			return -ELOOP;
		i = d.next;
	}
}

int hv_vq_pop(struct hv_vq *vq, struct hv_vq_chain *c)
{
	uint16_t avail_idx, head;
	int ret;

	if (!vq->started)
		return 0;
	avail_idx = __atomic_load_n(&vq->avail[1], __ATOMIC_ACQUIRE);
	if (avail_idx == vq->last_avail)
		return 0;
	/* The driver never has more than a queue's worth outstanding. */
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->size)
		return -EPROTO;
	head = ld16(&vq->avail[2 + (vq->last_avail & (vq->size - 1))]);
	vq->last_avail++;
	ret = hv_vq_walk(vq, head, c);
	return ret ? ret : 1;
}

static void used_put(struct hv_vq *vq, uint16_t head, uint32_t len)
{
	const struct hv_dev_env *env = vq->env;
	unsigned slot = vq->used_idx & (vq->size - 1);
	uint32_t *elem = (uint32_t *)(vq->used + 4 + 8 * slot);

	st32(&elem[0], head);
	st32(&elem[1], len);
	env->mark_dirty(env->opaque, vq->used_gpa + 4 + 8 * slot, 8);
	vq->used_idx++;
	/* The data and the element before the index the driver polls. */
	st16_sc((uint16_t *)(vq->used + 2), vq->used_idx);
	env->mark_dirty(env->opaque, vq->used_gpa + 2, 2);
}

void hv_vq_push(struct hv_vq *vq, const struct hv_vq_chain *c, uint32_t written)
{
	const struct hv_dev_env *env = vq->env;
	uint64_t left = HV_MIN((uint64_t)written, c->wr_len);

	if (!vq->started)
		return;
	for (unsigned i = 0; i < c->nwr && left; i++) {
		uint32_t n = (uint32_t)HV_MIN(left, (uint64_t)c->wr[i].len);

		env->mark_dirty(env->opaque, c->wr[i].gpa, n);
		left -= n;
	}
	used_put(vq, c->head, (uint32_t)HV_MIN((uint64_t)written, c->wr_len));
}

void hv_vq_push_head(struct hv_vq *vq, uint16_t head)
{
	if (vq->started)
		used_put(vq, head, 0);
}

bool hv_vq_need_irq(struct hv_vq *vq)
{
	uint16_t old, new, event;
	bool valid;

	if (!vq->started ||
	    (vq->signalled_valid && vq->signalled_used == vq->used_idx))
		return false;
	if (!vq->event_idx && vq->used_idx == vq->signalled_used) {
		vq->signalled_valid = true;
		return false; /* nothing pushed since the last look */
	}
	/* Our used->idx (stored seq_cst) before the driver's used_event or
	 * flags. */
	if (!vq->event_idx) {
		vq->signalled_used = vq->used_idx;
		vq->signalled_valid = true;
		return !(ld16_sc(&vq->avail[0]) &
			 HV_VRING_AVAIL_F_NO_INTERRUPT);
	}
	old = vq->signalled_used;
	valid = vq->signalled_valid;
	new = vq->signalled_used = vq->used_idx;
	vq->signalled_valid = true;
	if (!valid)
		return true;
	event = ld16_sc(&vq->avail[2 + vq->size]);
	/* vring_need_event(): did new pass event since old? */
	return (uint16_t)(new - event - 1) < (uint16_t)(new - old);
}

bool hv_vq_notify_enable(struct hv_vq *vq)
{
	const struct hv_dev_env *env = vq->env;

	if (!vq->started)
		return false;
	if (vq->event_idx) {
		uint16_t *ev = (uint16_t *)(vq->used + 4 + 8 * vq->size);

		st16_sc(ev, vq->last_avail);
		env->mark_dirty(env->opaque, vq->used_gpa + 4 + 8 * vq->size,
				2);
	} else {
		uint16_t *flags = (uint16_t *)vq->used;

		st16_sc(flags, ld16(flags) & ~HV_VRING_USED_F_NO_NOTIFY);
		env->mark_dirty(env->opaque, vq->used_gpa, 2);
	}
	/* Published (seq_cst) before we look again: a buffer added
	 * meanwhile either sees our request and notifies, or is seen here. */
	return ld16_sc(&vq->avail[1]) != vq->last_avail;
}

void hv_vq_notify_disable(struct hv_vq *vq)
{
	uint16_t *flags;

	if (!vq->started || vq->event_idx)
		return;
	flags = (uint16_t *)vq->used;
	st16_sc(flags, ld16(flags) | HV_VRING_USED_F_NO_NOTIFY);
	vq->env->mark_dirty(vq->env->opaque, vq->used_gpa, 2);
}

static uint64_t copy_segs(const struct hv_vq_seg *seg, unsigned nseg,
			  uint64_t off, void *buf, uint64_t len, bool to_seg)
{
	uint64_t done = 0;

	for (unsigned i = 0; i < nseg && done < len; i++) {
		uint64_t n;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		n = HV_MIN(seg[i].len - off, len - done);
		if (to_seg)
			memcpy((uint8_t *)seg[i].hva + off,
			       (const uint8_t *)buf + done, n);
		else
			memcpy((uint8_t *)buf + done,
			       (const uint8_t *)seg[i].hva + off, n);
		done += n;
		off = 0;
	}
	return done;
}

uint64_t hv_vq_gather(const struct hv_vq_chain *c, uint64_t off, void *buf,
		      uint64_t len)
{
	return copy_segs(c->rd, c->nrd, off, buf, len, false);
}

uint64_t hv_vq_scatter(const struct hv_vq_chain *c, uint64_t off,
		       const void *buf, uint64_t len)
{
	return copy_segs(c->wr, c->nwr, off, (void *)buf, len, true);
}

unsigned hv_vq_iov(const struct hv_vq_seg *seg, unsigned nseg, uint64_t off,
		   uint64_t len, struct iovec *iov, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nseg && len; i++) {
		uint64_t k;

		if (off >= seg[i].len) {
			off -= seg[i].len;
			continue;
		}
		if (n == max)
			return 0;
		k = HV_MIN(seg[i].len - off, len);
		iov[n].iov_base = (uint8_t *)seg[i].hva + off;
		iov[n].iov_len = k;
		n++;
		len -= k;
		off = 0;
	}
	return len ? 0 : n;
}
