/* SPDX-License-Identifier: MIT */
/*
 * A fake VM for device model tests: "guest RAM" is a malloc'd buffer at
 * gpa 0, gpa_map checks ranges against it exactly as a VM does, writes are
 * recorded per page in a dirty map, and interrupts are counted. Header-only
 * so that every test file of the area can use it.
 */
#ifndef TESTS_UNIT_HVCORE_DEVICES_FAKE_ENV_H
#define TESTS_UNIT_HVCORE_DEVICES_FAKE_ENV_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/devices/dev.h"
#include "hvcore/devices/virtqueue.h"

#define FAKE_RAM (1u << 20)
#define FAKE_PAGES (FAKE_RAM / 4096)

struct fake_vm {
	struct hv_dev_env env;
	uint8_t *ram;
	pthread_mutex_t lock;
	/* protected by lock */
	uint8_t dirty[FAKE_PAGES];
	unsigned dirty_calls;
	unsigned msis;
	uint64_t msi_addr;
	uint32_t msi_data;
	int irq_level[32];
	unsigned irq_edges;
};

static void *fake_gpa_map(void *opaque, gpa_t gpa, uint64_t len)
{
	struct fake_vm *vm = opaque;

	if (gpa >= FAKE_RAM || len > FAKE_RAM - gpa)
		return NULL;
	return vm->ram + gpa;
}

static void fake_mark_dirty(void *opaque, gpa_t gpa, uint64_t len)
{
	struct fake_vm *vm = opaque;

	pthread_mutex_lock(&vm->lock);
	vm->dirty_calls++;
	for (uint64_t p = gpa / 4096;
	     len && p <= (gpa + len - 1) / 4096 && p < FAKE_PAGES; p++)
		vm->dirty[p] = 1;
	pthread_mutex_unlock(&vm->lock);
}

static int fake_irq_line(void *opaque, uint32_t gsi, bool level)
{
	struct fake_vm *vm = opaque;

	if (gsi >= 32)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (level && !vm->irq_level[gsi])
		vm->irq_edges++;
	vm->irq_level[gsi] = level;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

static int fake_msi(void *opaque, uint64_t addr, uint32_t data)
{
	struct fake_vm *vm = opaque;

	pthread_mutex_lock(&vm->lock);
	vm->msis++;
	vm->msi_addr = addr;
	vm->msi_data = data;
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

static inline struct fake_vm *fake_vm_new(void)
{
	struct fake_vm *vm = calloc(1, sizeof(*vm));

	vm->ram = calloc(1, FAKE_RAM);
	pthread_mutex_init(&vm->lock, NULL);
	vm->env = (struct hv_dev_env){
		.opaque = vm,
		.gpa_map = fake_gpa_map,
		.mark_dirty = fake_mark_dirty,
		.irq_line = fake_irq_line,
		.msi = fake_msi,
	};
	return vm;
}

static inline void fake_vm_free(struct fake_vm *vm)
{
	pthread_mutex_destroy(&vm->lock);
	free(vm->ram);
	free(vm);
}

static inline unsigned fake_msis(struct fake_vm *vm)
{
	unsigned n;

	pthread_mutex_lock(&vm->lock);
	n = vm->msis;
	pthread_mutex_unlock(&vm->lock);
	return n;
}

static inline uint32_t fake_msi_data(struct fake_vm *vm)
{
	uint32_t v;

	pthread_mutex_lock(&vm->lock);
	v = vm->msi_data;
	pthread_mutex_unlock(&vm->lock);
	return v;
}

static inline int fake_irq_level(struct fake_vm *vm, uint32_t gsi)
{
	int l;

	pthread_mutex_lock(&vm->lock);
	l = vm->irq_level[gsi];
	pthread_mutex_unlock(&vm->lock);
	return l;
}

static inline bool fake_dirty(struct fake_vm *vm, gpa_t gpa)
{
	bool d;

	pthread_mutex_lock(&vm->lock);
	d = vm->dirty[gpa / 4096];
	pthread_mutex_unlock(&vm->lock);
	return d;
}

/*
 * The driver's side of one split ring in fake RAM, as Linux lays it out:
 * table at @base, avail ring right after, used ring at the next 4 KiB.
 */
struct fake_ring {
	struct fake_vm *vm;
	uint16_t size;
	gpa_t desc, avail, used;
	uint16_t avail_idx, used_seen;
};

static inline void fake_ring_init(struct fake_ring *r, struct fake_vm *vm,
				  gpa_t base, uint16_t size)
{
	r->vm = vm;
	r->size = size;
	r->desc = base;
	r->avail = base + 16u * size;
	r->used = (r->avail + 6 + 2u * size + 4095) & ~4095ull;
	r->avail_idx = 0;
	r->used_seen = 0;
	memset(vm->ram + base, 0, r->used + 6 + 8u * size - base);
}

static inline void fake_ring_vq(const struct fake_ring *r, struct hv_vq *vq,
				bool indirect, bool event_idx)
{
	memset(vq, 0, sizeof(*vq));
	vq->env = &r->vm->env;
	vq->size = r->size;
	vq->desc_gpa = r->desc;
	vq->avail_gpa = r->avail;
	vq->used_gpa = r->used;
	vq->indirect = indirect;
	vq->event_idx = event_idx;
}

static inline struct hv_vring_desc *fake_desc(struct fake_ring *r, unsigned i)
{
	return (struct hv_vring_desc *)(r->vm->ram + r->desc) + i;
}

static inline void fake_desc_set(struct fake_ring *r, unsigned i, gpa_t addr,
				 uint32_t len, uint16_t flags, uint16_t next)
{
	struct hv_vring_desc *d = fake_desc(r, i);

	d->addr = addr;
	d->len = len;
	d->flags = flags;
	d->next = next;
}

static inline uint16_t *fake_avail(struct fake_ring *r)
{
	return (uint16_t *)(r->vm->ram + r->avail);
}

/* Make chain @head available and publish the index. */
static inline void fake_ring_offer(struct fake_ring *r, uint16_t head)
{
	uint16_t *a = fake_avail(r);

	a[2 + (r->avail_idx & (r->size - 1))] = head;
	r->avail_idx++;
	__atomic_store_n(&a[1], r->avail_idx, __ATOMIC_RELEASE);
}

static inline uint16_t fake_used_idx(struct fake_ring *r)
{
	return __atomic_load_n((uint16_t *)(r->vm->ram + r->used + 2),
			       __ATOMIC_ACQUIRE);
}

/* Element @i of the used ring: id and len. */
static inline void fake_used_elem(struct fake_ring *r, uint16_t i, uint32_t *id,
				  uint32_t *len)
{
	uint32_t *e = (uint32_t *)(r->vm->ram + r->used + 4 +
				   8 * (i & (r->size - 1)));

	*id = e[0];
	*len = e[1];
}

/* Wait up to 5 s for the used index to reach @idx. */
static inline bool fake_wait_used(struct fake_ring *r, uint16_t idx)
{
	for (int i = 0; i < 5000; i++) {
		struct timespec ts = {0, 1000000};

		if (fake_used_idx(r) == idx)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

#endif
