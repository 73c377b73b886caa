// SPDX-License-Identifier: MIT
/*
 * The PCI wiring of KVM Linux guests (hvcore/kvm/kvm_pci.c) over a fake
 * VM, without /dev/kvm: what Linux's conf1 probe and bus scan read (the
 * host bridge at 00:00.0, the disks then the rng at 00:01.0..), BAR 0 of
 * each in the window of the MMIO hole, naturally aligned and disjoint,
 * INTA# routes for the MP table, the counters vm inspect shows, and a
 * missing or read-only disk refused with nothing left on the buses.
 */
#include "tests/harness/hv_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/devices/pci.h"
#include "hvcore/devices/virtio_pci.h"
#include "hvcore/kvm/kvm_pci.h"
#include "tests/unit/hvcore/devices/fake_env.h"

static struct hv_iobus *pio, *mmio;
static struct fake_vm *vm;
static char img[64];

static uint32_t cfg_rd(unsigned slot, unsigned reg, unsigned len)
{
	uint32_t a = 0x80000000u | slot << 11 | (reg & 0xfc), v = 0;

	hv_iobus_access(pio, 0xcf8, true, &a, 4);
	hv_iobus_access(pio, 0xcfc + (reg & 3), false, &v, len);
	return v;
}

static void cfg_wr(unsigned slot, unsigned reg, uint32_t v, unsigned len)
{
	uint32_t a = 0x80000000u | slot << 11 | (reg & 0xfc);

	hv_iobus_access(pio, 0xcf8, true, &a, 4);
	hv_iobus_access(pio, 0xcfc + (reg & 3), true, &v, len);
}

static void up(void)
{
	int fd;

	vm = fake_vm_new();
	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&pio), 0);
	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&mmio), 0);
	snprintf(img, sizeof(img), "/tmp/test_kvm_pci.%d.img", (int)getpid());
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

static void down(void)
{
	hv_iobus_destroy(pio);
	hv_iobus_destroy(mmio);
	fake_vm_free(vm);
	unlink(img);
}

static struct hv_kvm_pci_disk disk[HV_KVM_MAX_DEVS + 1];

static void cfg_disks_rng(struct hv_kvm_pci_cfg *b, unsigned disks, bool rng)
{
	memset(b, 0, sizeof(*b));
	for (unsigned i = 0; i < disks; i++)
		disk[i] = (struct hv_kvm_pci_disk){img, i > 0};
	b->disk = disk;
	b->nr_disks = disks;
	b->rng = rng;
}

/* What arch/x86/pci/direct.c and the bus scan see. */
static void test_host_bridge_and_devices_in_slot_order(void)
{
	struct hv_kvm_pci_cfg b;
	struct hv_kvm_pci *p;
	uint32_t a = 0x80000000u, back = 0;

	up();
	cfg_disks_rng(&b, 2, true);
	CU_ASSERT_EQUAL_FATAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env,
						&p),
			      0);
	/* pci_check_type1(): a dword written to 0xcf8 reads back. */
	hv_iobus_access(pio, 0xcf8, true, &a, 4);
	hv_iobus_access(pio, 0xcf8, false, &back, 4);
	CU_ASSERT_EQUAL(back, a);
	/* 00:00.0: the host bridge, class 0600. */
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0x00081b36u);
	CU_ASSERT_EQUAL(cfg_rd(0, 0x0a, 2), 0x0600);
	CU_ASSERT_EQUAL(cfg_rd(0, 0x0e, 1) & 0x7f, 0);
	/* 00:01.0, 00:02.0 virtio-blk (1af4:1042), 00:03.0 virtio-rng
	 * (1af4:1044), then nothing (all ones). */
	CU_ASSERT_EQUAL(cfg_rd(1, 0, 4), 0x10421af4u);
	CU_ASSERT_EQUAL(cfg_rd(2, 0, 4), 0x10421af4u);
	CU_ASSERT_EQUAL(cfg_rd(3, 0, 4), 0x10441af4u);
	CU_ASSERT_EQUAL(cfg_rd(4, 0, 4), 0xffffffffu);
	CU_ASSERT_EQUAL(cfg_rd(1, 0x2c, 4), 0x11001af4u); /* subsystem */
	/* Interrupt line and pin: INTA# on GSI 16 + slot % 4. */
	for (unsigned s = 1; s <= 3; s++) {
		CU_ASSERT_EQUAL(cfg_rd(s, 0x3c, 1), 16 + s % 4);
		CU_ASSERT_EQUAL(cfg_rd(s, 0x3d, 1), 1);
	}
	/* A function other than 0 or a bus other than 0: nothing. */
	a = 0x80000000u | 1u << 11 | 1u << 8; /* 00:01.1 */
	hv_iobus_access(pio, 0xcf8, true, &a, 4);
	back = 0;
	hv_iobus_access(pio, 0xcfc, false, &back, 4);
	CU_ASSERT_EQUAL(back, 0xffffffffu);
	a = 0x80000000u | 1u << 16 | 1u << 11; /* 01:01.0 */
	hv_iobus_access(pio, 0xcf8, true, &a, 4);
	back = 0;
	hv_iobus_access(pio, 0xcfc, false, &back, 4);
	CU_ASSERT_EQUAL(back, 0xffffffffu);
	hv_kvm_pci_destroy(p);
	/* The ports left the bus with it. */
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0xffffffffu);
	down();
}

/* BAR 0 of each device: 64-bit, 64 KiB, in the window, naturally
 * aligned, disjoint; decoded once memory space is enabled, as Linux
 * keeps it; the MP table routes and the inspect view agree. */
static void test_bars_in_the_window_and_routes(void)
{
	struct x86_mp_pci_irq irq[8];
	struct hv_kvm_dev_info info[8];
	struct hv_kvm_pci_cfg b;
	struct hv_kvm_pci *p;
	uint64_t bar[4] = {0};
	uint32_t n;

	up();
	cfg_disks_rng(&b, 2, true);
	CU_ASSERT_EQUAL_FATAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env,
						&p),
			      0);
	for (unsigned s = 1; s <= 3; s++) {
		uint32_t lo = cfg_rd(s, 0x10, 4), hi = cfg_rd(s, 0x14, 4);

		CU_ASSERT_EQUAL(lo & 0xf, HV_PCI_BAR_MEM64);
		bar[s] = (uint64_t)hi << 32 | (lo & ~0xfu);
		CU_ASSERT(bar[s] >= HV_PCI_MMIO_BASE);
		CU_ASSERT(bar[s] + HV_VIRTIO_PCI_BAR_SIZE <=
			  HV_PCI_MMIO_BASE + HV_PCI_MMIO_SIZE);
		CU_ASSERT_EQUAL(bar[s] % HV_VIRTIO_PCI_BAR_SIZE, 0);
		for (unsigned o = 1; o < s; o++)
			CU_ASSERT(bar[s] >= bar[o] + HV_VIRTIO_PCI_BAR_SIZE ||
				  bar[o] >= bar[s] + HV_VIRTIO_PCI_BAR_SIZE);
		/* Sizing: all ones reads back the size mask, and the
		 * address is restored after. */
		cfg_wr(s, 0x10, 0xffffffffu, 4);
		CU_ASSERT_EQUAL(cfg_rd(s, 0x10, 4) & ~0xfu,
				(uint32_t)~(HV_VIRTIO_PCI_BAR_SIZE - 1));
		cfg_wr(s, 0x10, lo, 4);
		/* Decoded only with memory space on. */
		n = 0xdeadbeef;
		hv_iobus_access(mmio, bar[s] + HV_VIRTIO_PCI_COMMON, false, &n,
				4);
		CU_ASSERT_EQUAL(n, 0xffffffffu);
		cfg_wr(s, 0x04, HV_PCI_COMMAND_MEMORY | HV_PCI_COMMAND_MASTER,
		       2);
		/* device_feature_select 0 reads back 0 from a decoded BAR. */
		n = 0xdeadbeef;
		CU_ASSERT(hv_iobus_access(
			mmio, bar[s] + HV_VIRTIO_PCI_DFSELECT, false, &n, 4));
		CU_ASSERT_EQUAL(n, 0);
	}
	n = hv_kvm_pci_mp_irqs(p, irq, 8);
	CU_ASSERT_EQUAL(n, 3);
	for (unsigned i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(irq[i].slot, i + 1);
		CU_ASSERT_EQUAL(irq[i].pin, 0);
		CU_ASSERT_EQUAL(irq[i].ioapic_pin, 16 + (i + 1) % 4);
	}
	CU_ASSERT_EQUAL(hv_kvm_pci_mp_irqs(p, irq, 1), 1);
	n = hv_kvm_pci_devices(p, info, 8);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_STRING_EQUAL(info[0].kind, "virtio-blk");
	CU_ASSERT_STRING_EQUAL(info[0].path, img);
	CU_ASSERT(!info[0].read_only);
	CU_ASSERT(info[1].read_only);
	CU_ASSERT_STRING_EQUAL(info[2].kind, "virtio-rng");
	for (unsigned i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(info[i].slot, i + 1);
		CU_ASSERT_EQUAL(info[i].bar0, bar[i + 1]);
		CU_ASSERT_EQUAL(info[i].gsi, 16 + (i + 1) % 4);
		CU_ASSERT_EQUAL(info[i].requests, 0);
	}
	hv_kvm_pci_destroy(p);
	down();
}

/* No device: the bus and its host bridge alone (Linux finds PCI, no
 * virtio). Bad disks: refused, nothing left registered. */
static void test_bad_disks_leave_nothing(void)
{
	struct x86_mp_pci_irq irq[8];
	struct hv_kvm_pci_cfg b;
	struct hv_kvm_pci *p = NULL;

	up();
	cfg_disks_rng(&b, 0, false);
	CU_ASSERT_EQUAL_FATAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env,
						&p),
			      0);
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0x00081b36u);
	CU_ASSERT_EQUAL(cfg_rd(1, 0, 4), 0xffffffffu);
	CU_ASSERT_EQUAL(hv_kvm_pci_mp_irqs(p, irq, 8), 0);
	hv_kvm_pci_destroy(p);

	/* A missing second disk after a good first one. */
	cfg_disks_rng(&b, 2, true);
	disk[1].path = "/nonexistent/test_kvm_pci.img";
	p = NULL;
	CU_ASSERT_EQUAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env, &p),
			-ENOENT);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0xffffffffu);
	/* The ports are free again: a good one registers. */
	cfg_disks_rng(&b, 1, false);
	CU_ASSERT_EQUAL_FATAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env,
						&p),
			      0);
	hv_kvm_pci_destroy(p);

	/* A directory is not an image. */
	cfg_disks_rng(&b, 1, false);
	disk[0] = (struct hv_kvm_pci_disk){"/tmp", true};
	CU_ASSERT_EQUAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env, &p),
			-EINVAL);
	/* Too many disks. */
	cfg_disks_rng(&b, 1, false);
	b.nr_disks = HV_KVM_MAX_DEVS + 1;
	CU_ASSERT_EQUAL(hv_kvm_pci_create("t", &b, pio, mmio, &vm->env, &p),
			-EINVAL);
	down();
}

static CU_TestInfo tests[] = {
	{"host_bridge_and_devices_in_slot_order",
	 test_host_bridge_and_devices_in_slot_order},
	{"bars_in_the_window_and_routes", test_bars_in_the_window_and_routes},
	{"bad_disks_leave_nothing", test_bad_disks_leave_nothing},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/kvm/kvm_pci", NULL, NULL, tests);
