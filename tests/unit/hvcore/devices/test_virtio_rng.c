// SPDX-License-Identifier: MIT
/* The virtio entropy device (virtio_rng.c). */
#include "tests/harness/hv_test.h"

#include <unistd.h>

#include "hvcore/devices/virtio_rng.h"
#include "tests/unit/hvcore/devices/fake_driver.h"

static void test_buffers_are_filled_with_entropy(void)
{
	struct hv_virtio_rng *rng;
	struct fake_drv d;
	uint32_t id, len;
	unsigned zeros = 0;

	CU_ASSERT_EQUAL_FATAL(hv_virtio_rng_create(NULL, &rng), 0);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, hv_virtio_rng_dev(rng)), 0);
	CU_ASSERT_EQUAL(drv_cfg_rd(&d, 2, 2), 0x1044);
	CU_ASSERT_EQUAL(drv_negotiate(&d, 1ull << HV_VIRTIO_F_VERSION_1), 0);
	drv_start(&d, 1, 16, true, false, false);
	/* 64 bytes in two pieces, then 10 KiB, capped at 4 KiB. */
	fake_desc_set(&d.ring[0], 0, DRV_BUF, 32,
		      HV_VRING_DESC_F_WRITE | HV_VRING_DESC_F_NEXT, 1);
	fake_desc_set(&d.ring[0], 1, DRV_BUF + 0x100, 32, HV_VRING_DESC_F_WRITE,
		      0);
	fake_ring_offer(&d.ring[0], 0);
	fake_desc_set(&d.ring[0], 2, DRV_BUF + 0x1000, 10240,
		      HV_VRING_DESC_F_WRITE, 0);
	fake_ring_offer(&d.ring[0], 2);
	drv_kick(&d, 0);
	CU_ASSERT_FATAL(fake_wait_used(&d.ring[0], 2));
	fake_used_elem(&d.ring[0], 0, &id, &len);
	CU_ASSERT_EQUAL(id, 0);
	CU_ASSERT_EQUAL(len, 64);
	fake_used_elem(&d.ring[0], 1, &id, &len);
	CU_ASSERT_EQUAL(len, 4096);
	for (unsigned i = 0; i < 32; i++)
		zeros += !d.vm->ram[DRV_BUF + i] +
			 !d.vm->ram[DRV_BUF + 0x100 + i];
	CU_ASSERT(zeros < 8);
	CU_ASSERT(fake_dirty(d.vm, DRV_BUF + 0x100));
	CU_ASSERT_EQUAL(hv_virtio_rng_bytes(rng), 64 + 4096);
	/* A chain with nothing to write: completed empty. */
	fake_desc_set(&d.ring[0], 3, DRV_BUF, 8, 0, 0);
	fake_ring_offer(&d.ring[0], 3);
	drv_kick(&d, 0);
	CU_ASSERT_FATAL(fake_wait_used(&d.ring[0], 3));
	fake_used_elem(&d.ring[0], 2, &id, &len);
	CU_ASSERT_EQUAL(len, 0);
	/* A buffer outside RAM: NEEDS_RESET, nothing written. */
	fake_desc_set(&d.ring[0], 4, FAKE_RAM - 4, 8, HV_VRING_DESC_F_WRITE, 0);
	fake_ring_offer(&d.ring[0], 4);
	drv_kick(&d, 0);
	for (int i = 0; i < 1000 && !(drv_status(&d) & HV_VIRTIO_S_NEEDS_RESET);
	     i++)
		usleep(1000);
	CU_ASSERT(drv_status(&d) & HV_VIRTIO_S_NEEDS_RESET);
	CU_ASSERT_EQUAL(fake_used_idx(&d.ring[0]), 3);
	drv_detach(&d);
	hv_virtio_rng_destroy(rng);
}

static CU_TestInfo tests[] = {
	{"buffers_are_filled_with_entropy",
	 test_buffers_are_filled_with_entropy},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/virtio_rng", NULL, NULL, tests);
