// SPDX-License-Identifier: MIT
/* PCI bus 0 over configuration mechanism 1 (hvcore/devices/pci.c). */
#include "tests/harness/hv_test.h"

#include <unistd.h>

#include "hvcore/devices/pci.h"
#include "tests/unit/hvcore/devices/fake_env.h"

struct t_bar {
	unsigned reads, writes;
	uint64_t last_off;
};

static void t_read(void *opaque, uint64_t off, void *data, uint32_t len)
{
	struct t_bar *b = opaque;

	b->reads++;
	b->last_off = off;
	memset(data, 0xab, len);
}

static void t_write(void *opaque, uint64_t off, const void *data, uint32_t len)
{
	struct t_bar *b = opaque;

	(void)data;
	(void)len;
	b->writes++;
	b->last_off = off;
}

static const struct hv_io_ops t_ops = {t_read, t_write};

static struct hv_iobus *pio, *mmio;
static struct hv_pci_bus *bus;
static struct fake_vm *vm;

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

static uint32_t mmio_rd(uint64_t gpa)
{
	uint32_t v = 0;

	hv_iobus_access(mmio, gpa, false, &v, 4);
	return v;
}

static void mmio_wr(uint64_t gpa, uint32_t v)
{
	hv_iobus_access(mmio, gpa, true, &v, 4);
}

static void bus_up(void)
{
	vm = fake_vm_new();
	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&pio), 0);
	CU_ASSERT_EQUAL_FATAL(hv_iobus_create(&mmio), 0);
	CU_ASSERT_EQUAL_FATAL(hv_pci_bus_create(pio, mmio, &bus), 0);
}

static void bus_down(void)
{
	hv_pci_bus_destroy(bus);
	hv_iobus_destroy(mmio);
	hv_iobus_destroy(pio);
	fake_vm_free(vm);
}

static void test_linux_conf1_probe_finds_host_bridge(void)
{
	uint8_t b = 1;
	uint32_t v = 0x80000000u;

	bus_up();
	/* arch/x86/pci/direct.c: pci_check_type1(). */
	hv_iobus_access(pio, 0xcfb, true, &b, 1);
	hv_iobus_access(pio, 0xcf8, true, &v, 4);
	v = 0;
	hv_iobus_access(pio, 0xcf8, false, &v, 4);
	CU_ASSERT_EQUAL(v, 0x80000000u);
	CU_ASSERT_EQUAL(cfg_rd(0, 0x0a, 2), 0x0600); /* host bridge */
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0x00081b36u);
	/* Empty slots, other functions and buses float high. */
	CU_ASSERT_EQUAL(cfg_rd(5, 0, 4), 0xffffffffu);
	v = 0x80000100u; /* 00:00.1 */
	hv_iobus_access(pio, 0xcf8, true, &v, 4);
	hv_iobus_access(pio, 0xcfc, false, &v, 4);
	CU_ASSERT_EQUAL(v, 0xffffffffu);
	v = 0x80010000u; /* bus 1 */
	hv_iobus_access(pio, 0xcf8, true, &v, 4);
	hv_iobus_access(pio, 0xcfc, false, &v, 4);
	CU_ASSERT_EQUAL(v, 0xffffffffu);
	/* The host bridge's registers are read-only. */
	cfg_wr(0, 0, 0x12345678, 4);
	CU_ASSERT_EQUAL(cfg_rd(0, 0, 4), 0x00081b36u);
	bus_down();
}

static void test_bar_sizing_and_decoding(void)
{
	static struct hv_pci_dev d;
	struct t_bar tb = {0};
	uint64_t a;

	bus_up();
	hv_pci_dev_init(&d, 0x1af4, 0x1042, 0x018000, 1, 0x1af4, 2);
	CU_ASSERT_EQUAL(hv_pci_dev_set_bar(&d, 0, 0x4000, true, &t_ops, &tb),
			0);
	CU_ASSERT_EQUAL(hv_pci_dev_set_bar(&d, 5, 0x1000, true, &t_ops, &tb),
			-EINVAL);
	CU_ASSERT_EQUAL(hv_pci_bus_add(bus, &d, &vm->env), 0);
	CU_ASSERT_EQUAL(d.slot, 1);
	CU_ASSERT_EQUAL(cfg_rd(1, 0, 4), 0x10421af4u);
	CU_ASSERT_EQUAL(cfg_rd(1, 0x0b, 1), 0x01);
	a = cfg_rd(1, 0x10, 4);
	CU_ASSERT_EQUAL(a & 0xf, HV_PCI_BAR_MEM64);
	a = (a & ~0xfull) | (uint64_t)cfg_rd(1, 0x14, 4) << 32;
	CU_ASSERT(a >= HV_PCI_MMIO_BASE &&
		  a + 0x4000 <= HV_PCI_MMIO_BASE + HV_PCI_MMIO_SIZE);
	CU_ASSERT_EQUAL(a % 0x4000, 0);
	/* Not decoded until memory is enabled. */
	CU_ASSERT_EQUAL(hv_pci_bar_addr(&d, 0), 0);
	CU_ASSERT_EQUAL(mmio_rd(a + 8), 0xffffffffu);
	cfg_wr(1, 0x04, HV_PCI_COMMAND_MEMORY, 2);
	CU_ASSERT_EQUAL(hv_pci_bar_addr(&d, 0), a);
	CU_ASSERT_EQUAL(mmio_rd(a + 8), 0xabababab);
	CU_ASSERT_EQUAL(tb.last_off, 8);

	/* Size probing as Linux does it: decoding off, all ones, restore. */
	cfg_wr(1, 0x04, 0, 2);
	CU_ASSERT_EQUAL(mmio_rd(a + 8), 0xffffffffu);
	cfg_wr(1, 0x10, 0xffffffffu, 4);
	cfg_wr(1, 0x14, 0xffffffffu, 4);
	CU_ASSERT_EQUAL(cfg_rd(1, 0x10, 4), 0xffffc000u | HV_PCI_BAR_MEM64);
	CU_ASSERT_EQUAL(cfg_rd(1, 0x14, 4), 0xffffffffu);
	/* The guest moves it; the old range is gone, the new one decodes. */
	cfg_wr(1, 0x10, 0xd0000000u, 4);
	cfg_wr(1, 0x14, 0, 4);
	cfg_wr(1, 0x04, HV_PCI_COMMAND_MEMORY, 2);
	CU_ASSERT_EQUAL(hv_pci_bar_addr(&d, 0), 0xd0000000u);
	CU_ASSERT_EQUAL(mmio_rd(a + 8), 0xffffffffu);
	CU_ASSERT_EQUAL(mmio_rd(0xd0000000u + 0x10), 0xabababab);
	/* Moving with decoding on moves at once. */
	cfg_wr(1, 0x10, 0xd0010000u, 4);
	CU_ASSERT_EQUAL(mmio_rd(0xd0000000u), 0xffffffffu);
	CU_ASSERT_EQUAL(mmio_rd(0xd0010000u), 0xabababab);
	/* Unwritable bits stay: a ROM BAR and the vendor ID. */
	cfg_wr(1, 0x30, 0xffffffffu, 4);
	CU_ASSERT_EQUAL(cfg_rd(1, 0x30, 4), 0);
	hv_pci_bus_del(bus, &d);
	CU_ASSERT_EQUAL(mmio_rd(0xd0010000u), 0xffffffffu);
	CU_ASSERT_EQUAL(cfg_rd(1, 0, 4), 0xffffffffu);
	bus_down();
}

static struct hv_pci_dev *msix_dev(struct t_bar *tb, uint64_t *bar)
{
	static struct hv_pci_dev d;

	hv_pci_dev_init(&d, 0x1af4, 0x1044, 0xff0000, 1, 0x1af4, 4);
	CU_ASSERT_EQUAL(hv_pci_dev_set_bar(&d, 0, 0x10000, false, &t_ops, tb),
			0);
	CU_ASSERT_EQUAL(hv_pci_dev_add_msix(&d, 4, 0, 0x8000, 0x9000), 0);
	CU_ASSERT_EQUAL_FATAL(hv_pci_bus_add(bus, &d, &vm->env), 0);
	cfg_wr(d.slot, 0x04, HV_PCI_COMMAND_MEMORY, 2);
	*bar = hv_pci_bar_addr(&d, 0);
	return &d;
}

/* Offset of capability @id in slot @slot's list, 0 if absent. */
static unsigned find_cap(unsigned slot, uint8_t id)
{
	unsigned n = 0;

	if (!(cfg_rd(slot, 0x06, 2) & HV_PCI_STATUS_CAP_LIST))
		return 0;
	for (unsigned p = cfg_rd(slot, 0x34, 1); p && n < 48;
	     p = cfg_rd(slot, p + 1, 1), n++)
		if (cfg_rd(slot, p, 1) == id)
			return p;
	return 0;
}

static void test_msix_masked_vectors_pend_and_fire_on_unmask(void)
{
	struct t_bar tb = {0};
	struct hv_pci_dev *d;
	uint64_t bar;
	unsigned cap;

	bus_up();
	d = msix_dev(&tb, &bar);
	cap = find_cap(d->slot, HV_PCI_CAP_ID_MSIX);
	CU_ASSERT_FATAL(cap != 0);
	CU_ASSERT_EQUAL(cfg_rd(d->slot, cap + 2, 2) & 0x7ff, 3);
	CU_ASSERT_EQUAL(cfg_rd(d->slot, cap + 4, 4), 0x8000);
	CU_ASSERT_EQUAL(cfg_rd(d->slot, cap + 8, 4), 0x9000);
	/* Disabled: no delivery at all. */
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 1), -EINVAL);
	/* Program vector 1 (still masked), then enable. */
	mmio_wr(bar + 0x8010, 0xfee01000u);
	mmio_wr(bar + 0x8014, 0);
	mmio_wr(bar + 0x8018, 0x4041);
	CU_ASSERT_EQUAL(mmio_rd(bar + 0x8018), 0x4041);
	CU_ASSERT_EQUAL(mmio_rd(bar + 0x801c), 1); /* masked at reset */
	cfg_wr(d->slot, cap + 2, HV_PCI_MSIX_FLAGS_ENABLE, 2);
	CU_ASSERT(hv_pci_msix_enabled(d));
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 1), 1);
	CU_ASSERT_EQUAL(fake_msis(vm), 0);
	CU_ASSERT_EQUAL(mmio_rd(bar + 0x9000), 2); /* PBA bit 1 */
	mmio_wr(bar + 0x801c, 0);		   /* unmask: fires */
	CU_ASSERT_EQUAL(fake_msis(vm), 1);
	CU_ASSERT_EQUAL(vm->msi_addr, 0xfee01000u);
	CU_ASSERT_EQUAL(vm->msi_data, 0x4041);
	CU_ASSERT_EQUAL(mmio_rd(bar + 0x9000), 0);
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 1), 0);
	CU_ASSERT_EQUAL(fake_msis(vm), 2);
	/* Function mask: pends, fires when cleared. */
	cfg_wr(d->slot, cap + 2,
	       HV_PCI_MSIX_FLAGS_ENABLE | HV_PCI_MSIX_FLAGS_MASKALL, 2);
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 1), 1);
	CU_ASSERT_EQUAL(fake_msis(vm), 2);
	cfg_wr(d->slot, cap + 2, HV_PCI_MSIX_FLAGS_ENABLE, 2);
	CU_ASSERT_EQUAL(fake_msis(vm), 3);
	/* A vector the device lacks; table accesses of odd sizes. */
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 4), -EINVAL);
	{
		uint8_t b = 0x55;

		hv_iobus_access(mmio, bar + 0x8018, true, &b, 1);
		CU_ASSERT_EQUAL(mmio_rd(bar + 0x8018), 0x4041);
	}
	/* The rest of the BAR is the device's. */
	mmio_rd(bar + 0x100);
	CU_ASSERT_EQUAL(tb.reads, 1);
	CU_ASSERT_EQUAL(tb.last_off, 0x100);
	hv_pci_bus_del(bus, d);
	bus_down();
}

static int irqfds, irqfd_dels;

static int t_irqfd(void *opaque, uint64_t addr, uint32_t data, int fd)
{
	(void)opaque;
	(void)addr;
	(void)data;
	(void)fd;
	return irqfds++;
}

static void t_irqfd_del(void *opaque, int handle)
{
	(void)opaque;
	(void)handle;
	irqfd_dels++;
}

static void test_msix_irqfd_follows_the_message(void)
{
	struct t_bar tb = {0};
	struct hv_pci_dev *d;
	uint64_t bar, n;
	unsigned cap;

	bus_up();
	vm->env.irqfd_msi = t_irqfd;
	vm->env.irqfd_del = t_irqfd_del;
	irqfds = irqfd_dels = 0;
	d = msix_dev(&tb, &bar);
	cap = find_cap(d->slot, HV_PCI_CAP_ID_MSIX);
	mmio_wr(bar + 0x8000, 0xfee00000u);
	mmio_wr(bar + 0x8008, 0x30);
	mmio_wr(bar + 0x800c, 0);
	cfg_wr(d->slot, cap + 2, HV_PCI_MSIX_FLAGS_ENABLE, 2);
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 0), 0);
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 0), 0);
	CU_ASSERT_EQUAL(irqfds, 1);
	CU_ASSERT_EQUAL(fake_msis(vm), 0);
	CU_ASSERT_EQUAL(read(d->msix[0].efd, &n, 8), 8);
	CU_ASSERT_EQUAL(n, 2);
	/* The guest moved the interrupt: a new route. */
	mmio_wr(bar + 0x8008, 0x31);
	CU_ASSERT_EQUAL(hv_pci_msix_notify(d, 0), 0);
	CU_ASSERT_EQUAL(irqfds, 2);
	CU_ASSERT_EQUAL(irqfd_dels, 1);
	hv_pci_bus_del(bus, d);
	CU_ASSERT_EQUAL(irqfd_dels, 2);
	bus_down();
}

static void test_intx_follows_disable_bit(void)
{
	struct t_bar tb = {0};
	struct hv_pci_dev *d;
	uint64_t bar;

	bus_up();
	d = msix_dev(&tb, &bar);
	CU_ASSERT_EQUAL(cfg_rd(d->slot, 0x3d, 1), 1);
	CU_ASSERT_EQUAL(cfg_rd(d->slot, 0x3c, 1), d->intx_gsi);
	hv_pci_intx(d, true);
	CU_ASSERT_EQUAL(vm->irq_level[d->intx_gsi], 1);
	hv_pci_intx(d, false);
	cfg_wr(d->slot, 0x04,
	       HV_PCI_COMMAND_MEMORY | HV_PCI_COMMAND_INTX_DISABLE, 2);
	hv_pci_intx(d, true);
	CU_ASSERT_EQUAL(vm->irq_level[d->intx_gsi], 0);
	hv_pci_bus_del(bus, d);
	bus_down();
}

static void test_slots_run_out(void)
{
	static struct hv_pci_dev d[HV_PCI_SLOTS];
	struct t_bar tb = {0};
	unsigned ok = 0;

	bus_up();
	for (unsigned i = 0; i < HV_PCI_SLOTS; i++) {
		hv_pci_dev_init(&d[i], 0x1af4, 0x1044, 0xff0000, 1, 0, 0);
		hv_pci_dev_set_bar(&d[i], 0, 0x1000, false, &t_ops, &tb);
		if (hv_pci_bus_add(bus, &d[i], &vm->env) == 0)
			ok++;
	}
	CU_ASSERT_EQUAL(ok, HV_PCI_SLOTS - 1);
	for (unsigned i = 0; i < HV_PCI_SLOTS - 1; i++)
		hv_pci_bus_del(bus, &d[i]);
	bus_down();
}

static CU_TestInfo tests[] = {
	{"linux_conf1_probe_finds_host_bridge",
	 test_linux_conf1_probe_finds_host_bridge},
	{"bar_sizing_and_decoding", test_bar_sizing_and_decoding},
	{"msix_masked_vectors_pend_and_fire_on_unmask",
	 test_msix_masked_vectors_pend_and_fire_on_unmask},
	{"msix_irqfd_follows_the_message", test_msix_irqfd_follows_the_message},
	{"intx_follows_disable_bit", test_intx_follows_disable_bit},
	{"slots_run_out", test_slots_run_out},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/pci", NULL, NULL, tests);
