// SPDX-License-Identifier: MIT
#include "hvcore/devices/virtio_rng.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

/* The most one request gets: the guest asks again for more. */
#define RNG_MAX_REQUEST 4096u

struct hv_virtio_rng {
	struct hv_virtio_dev vd;
	/* device thread */
	struct hv_vq_chain chain;
	/* atomic */
	uint64_t bytes;
};

static void rng_cfg_read(struct hv_virtio_dev *vd, uint32_t off, void *data,
			 uint32_t len)
{
	(void)vd;
	(void)off;
	(void)data;
	(void)len;
}

/* Fill the writable side of the chain; returns the bytes written. */
static uint32_t rng_fill(struct hv_vq_chain *c)
{
	uint64_t done = 0;

	for (unsigned i = 0; i < c->nwr && done < RNG_MAX_REQUEST; i++) {
		size_t want =
			HV_MIN((uint64_t)c->wr[i].len, RNG_MAX_REQUEST - done);
		ssize_t n = getrandom(c->wr[i].hva, want, 0);

		if (n <= 0)
			break;
		done += (uint64_t)n;
		if ((size_t)n < want)
			break;
	}
	return (uint32_t)done;
}

static void rng_notify(struct hv_virtio_dev *vd, unsigned q)
{
	struct hv_virtio_rng *r = vd->priv;
	struct hv_vq *vq = &vd->vq[q];
	int ret;

	do {
		hv_vq_notify_disable(vq);
		while ((ret = hv_vq_pop(vq, &r->chain)) != 0) {
			uint32_t n;

			if (ret < 0) {
				hv_virtio_needs_reset(vd, "malformed chain");
				return;
			}
			n = rng_fill(&r->chain);
			hv_vq_push(vq, &r->chain, n);
			__atomic_fetch_add(&r->bytes, n, __ATOMIC_RELAXED);
		}
		hv_virtio_queue_irq(vd, q);
	} while (hv_vq_notify_enable(vq));
}

static const struct hv_virtio_dev_ops rng_ops = {
	.cfg_read = rng_cfg_read,
	.queue_notify = rng_notify,
};

int hv_virtio_rng_create(const char *name, struct hv_virtio_rng **out)
{
	struct hv_virtio_rng *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->vd = (struct hv_virtio_dev){
		.ops = &rng_ops,
		.name = name ? name : "rng",
		.type = HV_VIRTIO_ID_RNG,
		.features = 1ull << HV_VIRTIO_F_INDIRECT_DESC |
			    1ull << HV_VIRTIO_F_EVENT_IDX,
		.nqueues = 1,
		.queue_max = 64,
		.priv = r,
	};
	*out = r;
	return 0;
}

void hv_virtio_rng_destroy(struct hv_virtio_rng *r)
{
	free(r);
}

struct hv_virtio_dev *hv_virtio_rng_dev(struct hv_virtio_rng *r)
{
	return &r->vd;
}

uint64_t hv_virtio_rng_bytes(const struct hv_virtio_rng *r)
{
	return __atomic_load_n(&r->bytes, __ATOMIC_RELAXED);
}
