// SPDX-License-Identifier: MIT
/*
 * Target: the split virtqueue's chain walker (hvcore/devices/virtqueue.h)
 * over guest memory the guest controls entirely: the input is a small
 * guest's RAM (FUZZ_VQ_RAM bytes between PROT_NONE guard pages) and the
 * queue's parameters, and the device pops every chain the avail ring
 * offers, completes each one, then returns to the rings.
 *
 * Input: byte 0: queue size 2^(b & 7) (1..128); byte 1: bit 0 indirect,
 * bit 1 event_idx; the rest is copied into RAM from gpa 0. The descriptor
 * table is at gpa 0, the avail ring right after it, the used ring at
 * 0x1000; the avail index and ring come from the input too.
 *
 * Promises checked besides ASan/UBSan: a walk writes nothing to guest
 * memory; an accepted chain has at most HV_VQ_MAX_SEGS segments per side,
 * each non-empty and inside RAM, lengths that add up; a refusal is one of
 * the documented errors; pop never returns more chains than the avail
 * index offers; a push writes only the used ring and the chain's writable
 * buffers, and marks exactly what it wrote dirty.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "hvcore/devices/virtqueue.h"
#include "tests/fuzz/fuzz_common.h"

#define FUZZ_VQ_RAM (64u << 10)
#define FUZZ_VQ_USED 0x1000u

static uint8_t *ram;
static uint8_t before[FUZZ_VQ_RAM];
static uint8_t dirty[FUZZ_VQ_RAM];

static void *map(void *opaque, gpa_t gpa, uint64_t len)
{
	(void)opaque;
	if (gpa >= FUZZ_VQ_RAM || len > FUZZ_VQ_RAM - gpa)
		return NULL;
	return ram + gpa;
}

static void mark(void *opaque, gpa_t gpa, uint64_t len)
{
	(void)opaque;
	FUZZ_CHECK(gpa < FUZZ_VQ_RAM && len <= FUZZ_VQ_RAM - gpa);
	memset(dirty + gpa, 1, len);
}

static const struct hv_dev_env env = {
	.gpa_map = map,
	.mark_dirty = mark,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t *m;

	(void)argc;
	(void)argv;
	m = mmap(NULL, FUZZ_VQ_RAM + 2 * 4096, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FUZZ_CHECK(m != MAP_FAILED);
	ram = m + 4096;
	FUZZ_CHECK(!mprotect(ram, FUZZ_VQ_RAM, PROT_READ | PROT_WRITE));
	return 0;
}

static bool in_ram(const struct hv_vq_seg *s)
{
	uint8_t *p = s->hva;

	return s->len && p >= ram && p + s->len <= ram + FUZZ_VQ_RAM &&
	       p - ram == (ptrdiff_t)s->gpa;
}

static void check_chain(const struct hv_vq_chain *c)
{
	uint64_t rd = 0, wr = 0;

	FUZZ_CHECK(c->nrd <= HV_VQ_MAX_SEGS && c->nwr <= HV_VQ_MAX_SEGS);
	for (unsigned i = 0; i < c->nrd; i++) {
		FUZZ_CHECK(in_ram(&c->rd[i]));
		rd += c->rd[i].len;
	}
	for (unsigned i = 0; i < c->nwr; i++) {
		FUZZ_CHECK(in_ram(&c->wr[i]));
		wr += c->wr[i].len;
	}
	FUZZ_CHECK(rd == c->rd_len && wr == c->wr_len);
}

/* Push @c with @n bytes written: only the used ring and those bytes may
 * change, and exactly what changed is dirty. */
static void check_push(struct hv_vq *vq, struct hv_vq_chain *c, uint32_t n)
{
	static uint8_t allowed[FUZZ_VQ_RAM], zeros[FUZZ_VQ_RAM];
	uint64_t left;

	memcpy(before, ram, FUZZ_VQ_RAM);
	memset(dirty, 0, sizeof(dirty));
	memset(allowed, 0, sizeof(allowed));
	memset(allowed + FUZZ_VQ_USED, 1, 6 + 8u * vq->size);
	/* Zeros: a buffer over the avail ring can only end the run (its
	 * index falls behind ours), never offer more chains. */
	left = hv_vq_scatter(c, 0, zeros, HV_MIN(n, (uint32_t)FUZZ_VQ_RAM));
	FUZZ_CHECK(left == HV_MIN((uint64_t)n, c->wr_len));
	for (unsigned i = 0; i < c->nwr && left; i++) {
		uint32_t k = (uint32_t)HV_MIN(left, (uint64_t)c->wr[i].len);

		memset(allowed + c->wr[i].gpa, 1, k);
		left -= k;
	}
	hv_vq_push(vq, c, n);
	for (unsigned i = 0; i < FUZZ_VQ_RAM; i++) {
		FUZZ_CHECK(allowed[i] || !dirty[i]);
		FUZZ_CHECK(allowed[i] || ram[i] == before[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hv_vq_chain c;
	struct hv_vq vq = {0};
	uint16_t offered;
	unsigned popped = 0;
	int ret;

	if (size < 2)
		return 0;
	memset(ram, 0, FUZZ_VQ_RAM);
	memcpy(ram, data + 2, HV_MIN(size - 2, (size_t)FUZZ_VQ_RAM));
	vq.env = &env;
	vq.size = (uint16_t)(1u << (data[0] & 7));
	vq.indirect = data[1] & 1;
	vq.event_idx = data[1] & 2;
	vq.desc_gpa = 0;
	vq.avail_gpa = 16u * vq.size;
	vq.used_gpa = FUZZ_VQ_USED;
	FUZZ_CHECK(hv_vq_start(&vq) == 0);
	memcpy(&offered, ram + vq.avail_gpa + 2, 2);

	for (;;) {
		memcpy(before, ram, FUZZ_VQ_RAM);
		ret = hv_vq_pop(&vq, &c);
		FUZZ_CHECK(memcmp(before, ram, FUZZ_VQ_RAM) == 0);
		if (ret == 0 || ret == -EPROTO)
			break;
		FUZZ_CHECK(++popped <= offered);
		FUZZ_CHECK(c.head < vq.size || ret == -EINVAL);
		if (ret < 0) {
			FUZZ_CHECK(ret == -EINVAL || ret == -EFAULT ||
				   ret == -ELOOP || ret == -E2BIG);
			hv_vq_push_head(&vq, c.head);
			continue;
		}
		FUZZ_CHECK(ret == 1);
		check_chain(&c);
		check_push(&vq, &c,
			   (uint32_t)HV_MIN(c.wr_len / 2 + 1, FUZZ_VQ_RAM));
	}
	hv_vq_need_irq(&vq);
	hv_vq_notify_enable(&vq);
	hv_vq_notify_disable(&vq);
	hv_vq_stop(&vq);
	return 0;
}
