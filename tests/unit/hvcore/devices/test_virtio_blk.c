// SPDX-License-Identifier: MIT
/* The virtio block device over a temporary image (virtio_blk.c). */
#include "tests/harness/hv_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "hvcore/devices/virtio_blk.h"
#include "tests/unit/hvcore/devices/fake_driver.h"

#define SECTORS 64
#define N HV_VRING_DESC_F_NEXT
#define W HV_VRING_DESC_F_WRITE

static char img[64];
static struct fake_drv d;
static struct hv_virtio_blk *blk;
static uint16_t next_head;

static void blk_up(bool ro)
{
	int fd;

	strcpy(img, "/tmp/test_virtio_blk.XXXXXX");
	fd = mkstemp(img);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, SECTORS * 512 + 100), 0);
	close(fd);
	struct hv_virtio_blk_cfg cfg = {
		.path = img, .read_only = ro, .serial = "disk-serial-1"};
	CU_ASSERT_EQUAL_FATAL(hv_virtio_blk_create(&cfg, &blk), 0);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, hv_virtio_blk_dev(blk)), 0);
	CU_ASSERT_EQUAL_FATAL(
		drv_negotiate(&d,
			      1ull << HV_VIRTIO_F_VERSION_1 |
				      1ull << HV_VIRTIO_BLK_F_FLUSH |
				      (ro ? 1ull << HV_VIRTIO_BLK_F_RO : 0)),
		0);
	drv_start(&d, 1, 16, true, false, false);
	next_head = 0;
}

static void blk_down(void)
{
	drv_detach(&d);
	hv_virtio_blk_destroy(blk);
	unlink(img);
}

/* One request: header, optional data (@len bytes at DRV_BUF, device
 * readable for OUT, writable otherwise), status. Returns the status byte,
 * and the used length in @used. */
static int request(uint32_t type, uint64_t sector, uint32_t len, uint32_t *used)
{
	struct fake_ring *r = &d.ring[0];
	uint16_t h = next_head;
	gpa_t hdr = 0x70000, st = 0x70100;
	uint8_t *p = d.vm->ram + hdr;
	uint16_t idx = r->avail_idx + 1;
	uint32_t id;

	memset(p, 0, 16);
	memcpy(p, &type, 4);
	memcpy(p + 8, &sector, 8);
	d.vm->ram[st] = 0xee;
	fake_desc_set(r, h, hdr, 16, N, h + 1);
	if (len) {
		fake_desc_set(r, h + 1, DRV_BUF, len,
			      N | (type == HV_VIRTIO_BLK_T_OUT ? 0 : W), h + 2);
		fake_desc_set(r, h + 2, st, 1, W, 0);
	} else {
		fake_desc_set(r, h + 1, st, 1, W, 0);
	}
	next_head = (uint16_t)((h + 3) % 15);
	fake_ring_offer(r, h);
	drv_kick(&d, 0);
	if (!fake_wait_used(r, idx))
		return -1;
	fake_used_elem(r, idx - 1, &id, used);
	CU_ASSERT_EQUAL(id, h);
	return d.vm->ram[st];
}

static void test_write_then_read_back(void)
{
	uint8_t buf[1024];
	uint32_t used;
	int fd;

	blk_up(false);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_DEVICE, 8), SECTORS);
	for (unsigned i = 0; i < 1024; i++)
		d.vm->ram[DRV_BUF + i] = (uint8_t)(i * 7 + 1);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_OUT, 5, 1024, &used),
			HV_VIRTIO_BLK_S_OK);
	CU_ASSERT_EQUAL(used, 1);
	/* The host's file holds it. */
	fd = open(img, O_RDONLY);
	CU_ASSERT_EQUAL(pread(fd, buf, 1024, 5 * 512), 1024);
	close(fd);
	CU_ASSERT_EQUAL(memcmp(buf, d.vm->ram + DRV_BUF, 1024), 0);
	memset(d.vm->ram + DRV_BUF, 0, 1024);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, 5, 1024, &used),
			HV_VIRTIO_BLK_S_OK);
	CU_ASSERT_EQUAL(used, 1025);
	CU_ASSERT_EQUAL(memcmp(buf, d.vm->ram + DRV_BUF, 1024), 0);
	CU_ASSERT(fake_dirty(d.vm, DRV_BUF));
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_FLUSH, 0, 0, &used),
			HV_VIRTIO_BLK_S_OK);
	{
		struct hv_virtio_blk_stats s;

		hv_virtio_blk_stats(blk, &s);
		CU_ASSERT_EQUAL(s.requests, 3);
		CU_ASSERT_EQUAL(s.bytes_written, 1024);
		CU_ASSERT_EQUAL(s.bytes_read, 1024);
		CU_ASSERT_EQUAL(s.flushes, 1);
	}
	blk_down();
}

static void test_out_of_range_and_partial_sectors_fail(void)
{
	uint32_t used;

	blk_up(false);
	/* The last sector is fine; one past it, or across it, is not. */
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, SECTORS - 1, 512, &used),
			HV_VIRTIO_BLK_S_OK);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, SECTORS, 512, &used),
			HV_VIRTIO_BLK_S_IOERR);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_OUT, SECTORS - 1, 1024, &used),
			HV_VIRTIO_BLK_S_IOERR);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, UINT64_MAX, 512, &used),
			HV_VIRTIO_BLK_S_IOERR);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, 0, 100, &used),
			HV_VIRTIO_BLK_S_IOERR);
	CU_ASSERT_EQUAL(request(99, 0, 0, &used), HV_VIRTIO_BLK_S_UNSUPP);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_GET_ID, 0, 20, &used),
			HV_VIRTIO_BLK_S_OK);
	CU_ASSERT_EQUAL(used, 21);
	CU_ASSERT_EQUAL(memcmp(d.vm->ram + DRV_BUF, "disk-serial-1", 14), 0);
	blk_down();
}

static void test_read_only_refuses_writes(void)
{
	uint32_t used;

	blk_up(true);
	drv_wr(&d, HV_VIRTIO_PCI_DFSELECT, 0, 4);
	CU_ASSERT(drv_rd(&d, HV_VIRTIO_PCI_DF, 4) & 1u << HV_VIRTIO_BLK_F_RO);
	memset(d.vm->ram + DRV_BUF, 0x5a, 512);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_OUT, 0, 512, &used),
			HV_VIRTIO_BLK_S_IOERR);
	CU_ASSERT_EQUAL(request(HV_VIRTIO_BLK_T_IN, 0, 512, &used),
			HV_VIRTIO_BLK_S_OK);
	CU_ASSERT_EQUAL(d.vm->ram[DRV_BUF], 0);
	blk_down();
}

static void test_malformed_request_needs_reset(void)
{
	struct fake_ring *r = &d.ring[0];

	blk_up(false);
	/* A header only: nowhere to put the status. */
	fake_desc_set(r, 0, 0x70000, 16, 0, 0);
	fake_ring_offer(r, 0);
	drv_kick(&d, 0);
	CU_ASSERT(drv_wait_msis(&d, 1));
	CU_ASSERT(drv_status(&d) & HV_VIRTIO_S_NEEDS_RESET);
	CU_ASSERT_EQUAL(fake_used_idx(r), 0);
	blk_down();
}

static void test_missing_image_is_refused(void)
{
	struct hv_virtio_blk_cfg cfg = {.path = "/nonexistent/disk.img"};
	struct hv_virtio_blk *b = NULL;

	CU_ASSERT_EQUAL(hv_virtio_blk_create(&cfg, &b), -ENOENT);
	cfg.path = "/tmp";
	CU_ASSERT(hv_virtio_blk_create(&cfg, &b) < 0);
	CU_ASSERT_PTR_NULL(b);
}

static CU_TestInfo tests[] = {
	{"write_then_read_back", test_write_then_read_back},
	{"out_of_range_and_partial_sectors_fail",
	 test_out_of_range_and_partial_sectors_fail},
	{"read_only_refuses_writes", test_read_only_refuses_writes},
	{"malformed_request_needs_reset", test_malformed_request_needs_reset},
	{"missing_image_is_refused", test_missing_image_is_refused},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/virtio_blk", NULL, NULL, tests);
