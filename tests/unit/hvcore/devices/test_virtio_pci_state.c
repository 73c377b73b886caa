// SPDX-License-Identifier: MIT
/*
 * A virtio-pci device's live migration (virtio_pci_state.c, and the
 * UART's save/load): quiesce, save, load into a twin over a copy of the
 * RAM, run, and the driver's next request is served there, exactly once.
 */
#include "tests/harness/hv_test.h"

#include <unistd.h>

#include "hvcore/devices/virtio_rng.h"
#include "tests/unit/hvcore/devices/fake_driver.h"

static void offer(struct fake_ring *r, uint16_t head)
{
	fake_desc_set(r, head, DRV_BUF + 0x1000u * head, 64,
		      HV_VRING_DESC_F_WRITE, 0);
	fake_ring_offer(r, head);
}

static void test_queue_continues_on_the_twin(void)
{
	struct hv_virtio_rng *ra, *rb;
	struct hv_virtio_pci_state *s = calloc(1, sizeof(*s));
	struct fake_drv a, b;
	struct fake_ring rb0;
	unsigned msis;

	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_rng_create(NULL, &ra), 0);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_rng_create(NULL, &rb), 0);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&a, hv_virtio_rng_dev(ra)), 0);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&b, hv_virtio_rng_dev(rb)), 0);
	CU_ASSERT_EQUAL(drv_negotiate(&a, 1ull << HV_VIRTIO_F_VERSION_1), 0);
	drv_start(&a, 1, 16, true, false, false);
	offer(&a.ring[0], 0);
	drv_kick(&a, 0);
	CU_ASSERT_FATAL(fake_wait_used(&a.ring[0], 1));

	/* Quiesced: a request offered and kicked now is not served here. */
	CU_ASSERT_EQUAL(hv_virtio_pci_save(a.vp, s), -EBUSY);
	hv_virtio_pci_quiesce(a.vp);
	offer(&a.ring[0], 1);
	drv_kick(&a, 0);
	usleep(20000);
	CU_ASSERT_EQUAL(fake_used_idx(&a.ring[0]), 1);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_pci_save(a.vp, s), 0);
	CU_ASSERT_EQUAL(s->q[0].last_avail, 1);
	CU_ASSERT_EQUAL(s->q[0].used_idx, 1);
	CU_ASSERT(s->pci.msix_enabled);

	/* The twin: the same RAM, the state loaded, then run. */
	memcpy(b.vm->ram, a.vm->ram, FAKE_RAM);
	CU_ASSERT_EQUAL_FATAL(hv_virtio_pci_load(b.vp, s), 0);
	CU_ASSERT_EQUAL(hv_virtio_pci_status(b.vp), s->status);
	CU_ASSERT_EQUAL(hv_virtio_pci_load(b.vp, s), -EBUSY);
	msis = fake_msis(b.vm);
	hv_virtio_pci_run(b.vp);
	rb0 = a.ring[0];
	rb0.vm = b.vm;
	CU_ASSERT_FATAL(fake_wait_used(&rb0, 2));
	CU_ASSERT_EQUAL(fake_used_idx(&rb0), 2);
	CU_ASSERT(drv_wait_msis(&b, msis + 1));
	/* And the next one, kicked on the twin. */
	offer(&rb0, 2);
	drv_kick(&b, 0);
	CU_ASSERT_FATAL(fake_wait_used(&rb0, 3));
	CU_ASSERT_EQUAL(hv_virtio_rng_bytes(rb), 128);
	/* The source resumes too (a failed migration): it serves what it
	 * had left, once. */
	hv_virtio_pci_run(a.vp);
	CU_ASSERT_FATAL(fake_wait_used(&a.ring[0], 2));
	CU_ASSERT_EQUAL(hv_virtio_rng_bytes(ra), 128);

	/* A state of another shape is refused. */
	s->nqueues = 2;
	CU_ASSERT_EQUAL(hv_virtio_pci_load(a.vp, s), -EINVAL);
	drv_detach(&a);
	drv_detach(&b);
	hv_virtio_rng_destroy(ra);
	hv_virtio_rng_destroy(rb);
	free(s);
}

static CU_TestInfo tests[] = {
	{"a queue continues on the twin", test_queue_continues_on_the_twin},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("hvcore/devices/virtio_pci_state", NULL, NULL, tests);
