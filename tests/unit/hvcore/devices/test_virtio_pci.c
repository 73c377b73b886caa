// SPDX-License-Identifier: MIT
/* The virtio 1.x modern PCI transport (hvcore/devices/virtio_pci.c), with
 * an echo device: each chain's readable bytes are copied to its writable
 * buffers. */
#include "tests/harness/hv_test.h"

#include <pthread.h>
#include <unistd.h>

#include "tests/unit/hvcore/devices/fake_driver.h"

#define VF(bit) (1ull << (bit))

struct echo {
	struct hv_virtio_dev vd;
	uint32_t cfg;
	unsigned activations, resets;
	unsigned served;
	bool refuse_activate;
	pthread_t notify_thread;
};

static void echo_cfg_read(struct hv_virtio_dev *vd, uint32_t off, void *data,
			  uint32_t len)
{
	struct echo *e = vd->priv;

	memcpy(data, (uint8_t *)&e->cfg + off, len);
}

static void echo_cfg_write(struct hv_virtio_dev *vd, uint32_t off,
			   const void *data, uint32_t len)
{
	struct echo *e = vd->priv;

	memcpy((uint8_t *)&e->cfg + off, data, len);
}

static int echo_activate(struct hv_virtio_dev *vd)
{
	struct echo *e = vd->priv;

	e->activations++;
	return e->refuse_activate ? -EIO : 0;
}

static void echo_notify(struct hv_virtio_dev *vd, unsigned q)
{
	struct echo *e = vd->priv;
	static struct hv_vq_chain c;
	uint8_t buf[256];
	int ret;

	__atomic_store_n(&e->notify_thread, pthread_self(), __ATOMIC_SEQ_CST);
	while ((ret = hv_vq_pop(&vd->vq[q], &c)) != 0) {
		uint64_t n;

		if (ret < 0) {
			hv_virtio_needs_reset(vd, "bad chain");
			return;
		}
		n = hv_vq_gather(&c, 0, buf, sizeof(buf));
		n = hv_vq_scatter(&c, 0, buf, n);
		hv_vq_push(&vd->vq[q], &c, (uint32_t)n);
		__atomic_fetch_add(&e->served, 1, __ATOMIC_SEQ_CST);
	}
	hv_virtio_queue_irq(vd, q);
}

static void echo_reset(struct hv_virtio_dev *vd)
{
	struct echo *e = vd->priv;

	e->resets++;
}

static const struct hv_virtio_dev_ops echo_ops = {
	echo_cfg_read, echo_cfg_write, echo_activate, echo_notify, echo_reset,
};

static void echo_init(struct echo *e)
{
	memset(e, 0, sizeof(*e));
	e->vd = (struct hv_virtio_dev){
		.ops = &echo_ops,
		.name = "echo0",
		.type = HV_VIRTIO_ID_RNG,
		.features = VF(HV_VIRTIO_F_EVENT_IDX) |
			    VF(HV_VIRTIO_F_INDIRECT_DESC),
		.nqueues = 2,
		.queue_max = 64,
		.cfg_size = 4,
		.priv = e,
	};
	e->cfg = 0x11223344;
}

/* One request on queue @q: "ping" in, 16 bytes out. */
static void offer_ping(struct fake_drv *d, unsigned q, uint16_t head)
{
	struct fake_ring *r = &d->ring[q];
	gpa_t b = DRV_BUF + 0x1000 * head;

	memcpy(d->vm->ram + b, "ping", 4);
	fake_desc_set(r, head, b, 4, HV_VRING_DESC_F_NEXT, head + 1);
	fake_desc_set(r, head + 1, b + 0x100, 16, HV_VRING_DESC_F_WRITE, 0);
	fake_ring_offer(r, head);
}

static void test_linux_sequence_reaches_the_device(void)
{
	struct fake_drv d;
	struct echo e;
	uint32_t id, len;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	CU_ASSERT_EQUAL(drv_cfg_rd(&d, 2, 2), 0x1040 + HV_VIRTIO_ID_RNG);
	CU_ASSERT(d.bar >= HV_PCI_MMIO_BASE);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_NUM_QUEUES, 2), 2);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_DEVICE, 4), 0x11223344);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1) |
						  VF(HV_VIRTIO_F_EVENT_IDX)),
			0);
	drv_start(&d, 2, 16, true, false, true);
	CU_ASSERT_EQUAL(drv_status(&d) & HV_VIRTIO_S_DRIVER_OK,
			HV_VIRTIO_S_DRIVER_OK);
	CU_ASSERT_EQUAL(e.activations, 1);
	CU_ASSERT(hv_virtio_has(&e.vd, HV_VIRTIO_F_EVENT_IDX));
	CU_ASSERT_FALSE(hv_virtio_has(&e.vd, HV_VIRTIO_F_INDIRECT_DESC));

	offer_ping(&d, 1, 0);
	drv_kick(&d, 1);
	CU_ASSERT_FATAL(fake_wait_used(&d.ring[1], 1));
	fake_used_elem(&d.ring[1], 0, &id, &len);
	CU_ASSERT_EQUAL(id, 0);
	CU_ASSERT_EQUAL(len, 4);
	CU_ASSERT_EQUAL(memcmp(d.vm->ram + DRV_BUF + 0x100, "ping", 4), 0);
	CU_ASSERT(fake_dirty(d.vm, DRV_BUF + 0x100));
	CU_ASSERT(drv_wait_msis(&d, 1));
	CU_ASSERT_EQUAL(fake_msi_data(d.vm), 0x40 + 2); /* queue 1's vector */
	/* Served on the device's thread, not the one that kicked. */
	CU_ASSERT_FALSE(pthread_equal(
		__atomic_load_n(&e.notify_thread, __ATOMIC_SEQ_CST),
		pthread_self()));

	/* Past FEATURES_OK and DRIVER_OK, their registers are frozen. */
	drv_wr(&d, HV_VIRTIO_PCI_GFSELECT, 0, 4);
	drv_wr(&d, HV_VIRTIO_PCI_GF, 0, 4);
	CU_ASSERT(drv_rd(&d, HV_VIRTIO_PCI_GF, 4) & VF(HV_VIRTIO_F_EVENT_IDX));
	drv_wr(&d, HV_VIRTIO_PCI_Q_SELECT, 1, 2);
	drv_wr(&d, HV_VIRTIO_PCI_Q_DESC, 0x123000, 8);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_DESC, 8), DRV_RING(1));
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_NOFF, 2), 1);

	/* Reset: returns with the device's thread stopped. */
	len = e.resets;
	drv_wr(&d, HV_VIRTIO_PCI_STATUS, 0, 1);
	CU_ASSERT_EQUAL(drv_status(&d), 0);
	CU_ASSERT_EQUAL(e.resets, len + 1);
	offer_ping(&d, 1, 2);
	drv_kick(&d, 1);
	usleep(20000);
	CU_ASSERT_EQUAL(fake_used_idx(&d.ring[1]), 1);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_DESC, 8), 0);
	drv_detach(&d);
}

static void test_features_ok_needs_version_1_and_offered_bits(void)
{
	struct fake_drv d;
	struct echo e;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_EVENT_IDX)), -EIO);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1) | VF(3)),
			-EIO);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	/* DRIVER_OK without FEATURES_OK does not stick either. */
	drv_wr(&d, HV_VIRTIO_PCI_STATUS, 0, 1);
	drv_wr(&d, HV_VIRTIO_PCI_STATUS,
	       HV_VIRTIO_S_ACKNOWLEDGE | HV_VIRTIO_S_DRIVER |
		       HV_VIRTIO_S_DRIVER_OK,
	       1);
	CU_ASSERT_FALSE(drv_status(&d) & HV_VIRTIO_S_DRIVER_OK);
	CU_ASSERT_EQUAL(e.activations, 0);
	drv_detach(&d);
}

static void test_rings_outside_ram_make_needs_reset(void)
{
	struct fake_drv d;
	struct echo e;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	/* Queue 0's used ring past the end of RAM. */
	fake_ring_init(&d.ring[0], d.vm, DRV_RING(0), 16);
	drv_msix(&d, 0);
	{
		unsigned cap = drv_cfg_rd(&d, HV_PCI_CAPABILITY_LIST, 1);

		while (drv_cfg_rd(&d, cap, 1) != HV_PCI_CAP_ID_MSIX)
			cap = drv_cfg_rd(&d, cap + 1, 1);
		drv_cfg_wr(&d, cap + 2, HV_PCI_MSIX_FLAGS_ENABLE, 2);
	}
	drv_wr(&d, HV_VIRTIO_PCI_MSIX_CONFIG, 0, 2);
	drv_wr(&d, HV_VIRTIO_PCI_Q_SELECT, 0, 2);
	drv_wr(&d, HV_VIRTIO_PCI_Q_SIZE, 16, 2);
	drv_wr(&d, HV_VIRTIO_PCI_Q_DESC, d.ring[0].desc, 8);
	drv_wr(&d, HV_VIRTIO_PCI_Q_AVAIL, d.ring[0].avail, 8);
	drv_wr(&d, HV_VIRTIO_PCI_Q_USED, FAKE_RAM - 64, 8);
	drv_wr(&d, HV_VIRTIO_PCI_Q_ENABLE, 1, 2);
	drv_wr(&d, HV_VIRTIO_PCI_STATUS, 0x0f, 1);
	CU_ASSERT(drv_status(&d) & HV_VIRTIO_S_NEEDS_RESET);
	CU_ASSERT(drv_wait_msis(&d, 1)); /* the config interrupt */
	CU_ASSERT_EQUAL(fake_msi_data(d.vm), 0x40);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_CFG_GENERATION, 1), 1);
	/* A queue size that is not a power of two is not taken. */
	drv_wr(&d, HV_VIRTIO_PCI_STATUS, 0, 1);
	CU_ASSERT_EQUAL(drv_status(&d), 0);
	drv_wr(&d, HV_VIRTIO_PCI_Q_SIZE, 24, 2);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_SIZE, 2), 64);
	drv_wr(&d, HV_VIRTIO_PCI_Q_SIZE, 128, 2);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_SIZE, 2), 64);
	/* A vector the device lacks reads back as NO_VECTOR. */
	drv_wr(&d, HV_VIRTIO_PCI_Q_MSIX, 7, 2);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_Q_MSIX, 2), 0xffff);
	drv_detach(&d);
}

static void test_malformed_chain_stops_the_device(void)
{
	struct fake_drv d;
	struct echo e;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	drv_start(&d, 2, 16, true, false, false);
	/* A loop: 0 -> 1 -> 0. */
	fake_desc_set(&d.ring[0], 0, DRV_BUF, 4, HV_VRING_DESC_F_NEXT, 1);
	fake_desc_set(&d.ring[0], 1, DRV_BUF, 4, HV_VRING_DESC_F_NEXT, 0);
	fake_ring_offer(&d.ring[0], 0);
	drv_kick(&d, 0);
	CU_ASSERT(drv_wait_msis(&d, 1));
	CU_ASSERT(drv_status(&d) & HV_VIRTIO_S_NEEDS_RESET);
	/* Nothing more is served until the driver resets. */
	offer_ping(&d, 1, 0);
	drv_kick(&d, 1);
	usleep(20000);
	CU_ASSERT_EQUAL(fake_used_idx(&d.ring[1]), 0);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	drv_start(&d, 2, 16, true, false, false);
	offer_ping(&d, 1, 0);
	drv_kick(&d, 1);
	CU_ASSERT(fake_wait_used(&d.ring[1], 1));
	drv_detach(&d);
}

static void test_intx_and_isr_without_msix(void)
{
	struct fake_drv d;
	struct echo e;
	uint32_t gsi;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	gsi = drv_cfg_rd(&d, HV_PCI_INTERRUPT_LINE, 1);
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	drv_start(&d, 2, 16, false, false, false);
	offer_ping(&d, 0, 0);
	drv_kick(&d, 0);
	CU_ASSERT_FATAL(fake_wait_used(&d.ring[0], 1));
	for (int i = 0; i < 1000 && !fake_irq_level(d.vm, gsi); i++)
		usleep(1000);
	CU_ASSERT_EQUAL(fake_irq_level(d.vm, gsi), 1);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_ISR, 1), 1);
	CU_ASSERT_EQUAL(fake_irq_level(d.vm, gsi), 0);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_ISR, 1), 0);
	CU_ASSERT_EQUAL(fake_msis(d.vm), 0);
	drv_detach(&d);
}

static int ioev_fd[8];
static uint64_t ioev_addr[8];

static int t_ioeventfd(void *opaque, uint64_t addr, uint32_t len, bool pio,
		       int fd, bool assign)
{
	(void)opaque;
	if (len != 2 || pio)
		return -EINVAL;
	for (unsigned i = 0; i < 8; i++) {
		if (assign && !ioev_addr[i]) {
			ioev_addr[i] = addr;
			ioev_fd[i] = fd;
			return 0;
		}
		if (!assign && ioev_addr[i] == addr && ioev_fd[i] == fd) {
			ioev_addr[i] = 0;
			return 0;
		}
	}
	return -ENOENT;
}

static void test_ioeventfd_serves_kicks_without_exits(void)
{
	struct fake_drv d;
	struct echo e;
	uint64_t one = 1;
	int fd = -1;

	memset(ioev_addr, 0, sizeof(ioev_addr));
	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	d.vm->env.ioeventfd = t_ioeventfd;
	CU_ASSERT_EQUAL(drv_negotiate(&d, VF(HV_VIRTIO_F_VERSION_1)), 0);
	drv_start(&d, 2, 16, true, false, false);
	for (unsigned i = 0; i < 8; i++)
		if (ioev_addr[i] == d.bar + HV_VIRTIO_PCI_NOTIFY + 4)
			fd = ioev_fd[i];
	CU_ASSERT_FATAL(fd >= 0);
	/* What KVM does on the guest's write: signal, no exit. */
	offer_ping(&d, 1, 0);
	CU_ASSERT_EQUAL(write(fd, &one, 8), 8);
	CU_ASSERT(fake_wait_used(&d.ring[1], 1));
	/* The BAR moves: the doorbells follow it. */
	drv_cfg_wr(&d, 0x10, 0xd0000000u | HV_PCI_BAR_MEM64, 4);
	fd = -1;
	for (unsigned i = 0; i < 8; i++)
		if (ioev_addr[i] == 0xd0000000u + HV_VIRTIO_PCI_NOTIFY + 4)
			fd = ioev_fd[i];
	CU_ASSERT(fd >= 0);
	/* Reset takes them away. */
	d.bar = 0xd0000000u;
	drv_wr(&d, HV_VIRTIO_PCI_STATUS, 0, 1);
	for (unsigned i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(ioev_addr[i], 0);
	drv_detach(&d);
}

static void test_config_reads_stay_in_bounds(void)
{
	struct fake_drv d;
	struct echo e;

	echo_init(&e);
	CU_ASSERT_EQUAL_FATAL(drv_attach(&d, &e.vd), 0);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_DEVICE + 2, 2), 0x1122);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_DEVICE + 2, 4), 0);
	CU_ASSERT_EQUAL(drv_rd(&d, HV_VIRTIO_PCI_DEVICE + 4, 4), 0);
	drv_wr(&d, HV_VIRTIO_PCI_DEVICE + 3, 0xffffffff, 4);
	CU_ASSERT_EQUAL(e.cfg, 0x11223344);
	/* Misaligned and odd-sized common accesses are dropped. */
	drv_wr(&d, HV_VIRTIO_PCI_STATUS - 1, 0xffff, 2);
	CU_ASSERT_EQUAL(drv_status(&d), 0);
	drv_wr(&d, HV_VIRTIO_PCI_NOTIFY + 4 * 7, 0, 2); /* no queue 7 */
	drv_detach(&d);
}

static CU_TestInfo tests[] = {
	{"linux_sequence_reaches_the_device",
	 test_linux_sequence_reaches_the_device},
	{"features_ok_needs_version_1_and_offered_bits",
	 test_features_ok_needs_version_1_and_offered_bits},
	{"rings_outside_ram_make_needs_reset",
	 test_rings_outside_ram_make_needs_reset},
	{"malformed_chain_stops_the_device",
	 test_malformed_chain_stops_the_device},
	{"intx_and_isr_without_msix", test_intx_and_isr_without_msix},
	{"ioeventfd_serves_kicks_without_exits",
	 test_ioeventfd_serves_kicks_without_exits},
	{"config_reads_stay_in_bounds", test_config_reads_stay_in_bounds},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/virtio_pci", NULL, NULL, tests);
