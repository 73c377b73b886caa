// SPDX-License-Identifier: MIT
/*
 * The MP table: both checksums, the floating pointer's link to the
 * table, one enabled processor per vCPU with the BSP flagged, the IOAPIC
 * and the ISA interrupt and local interrupt entries.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86/boot/mptable.h"
#include "tests/harness/hv_test.h"

#define GPA 0xf0000u

static uint8_t sum(const uint8_t *p, uint32_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void check_table(uint32_t ncpu)
{
	static uint8_t buf[1 << 16];
	const uint8_t *mpc = buf + 16, *p;
	uint32_t len, n, cpus = 0, ints = 0, lints = 0, ioapics = 0;
	uint8_t ioapic_id = 0xff;

	memset(buf, 0xcc, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(x86_mptable_write(buf, sizeof(buf), GPA, ncpu),
			      0);
	CU_ASSERT_EQUAL(memcmp(buf, "_MP_", 4), 0);
	CU_ASSERT_EQUAL(get32(buf + 4), GPA + 16);
	CU_ASSERT_EQUAL(buf[8], 1);
	CU_ASSERT_EQUAL(buf[9], 4);
	CU_ASSERT_EQUAL(sum(buf, 16), 0);
	CU_ASSERT_EQUAL(memcmp(mpc, "PCMP", 4), 0);
	len = mpc[4] | mpc[5] << 8;
	CU_ASSERT_EQUAL(16 + len, x86_mptable_size(ncpu));
	CU_ASSERT_EQUAL(sum(mpc, len), 0);
	CU_ASSERT_EQUAL(get32(mpc + 36), X86_LAPIC_GPA);
	n = mpc[34] | mpc[35] << 8;
	p = mpc + 44;
	for (uint32_t i = 0; i < n; i++) {
		switch (p[0]) {
		case 0:
			CU_ASSERT_EQUAL(p[1], cpus);
			CU_ASSERT(p[3] & 1);
			CU_ASSERT_EQUAL(!!(p[3] & 2), cpus == 0);
			cpus++;
			p += 20;
			continue;
		case 2:
			ioapics++;
			ioapic_id = p[1];
			CU_ASSERT_EQUAL(get32(p + 4), X86_IOAPIC_GPA);
			break;
		case 3:
			/* ISA IRQ i on IOAPIC pin i. */
			CU_ASSERT_EQUAL(p[4], X86_MP_ISA_BUS);
			CU_ASSERT_EQUAL(p[5], ints);
			CU_ASSERT_EQUAL(p[6], ioapic_id);
			CU_ASSERT_EQUAL(p[7], ints);
			ints++;
			break;
		case 4:
			/* LINT0 ExtINT, LINT1 NMI, on every LAPIC. */
			CU_ASSERT_EQUAL(p[1], lints == 0 ? 3 : 1);
			CU_ASSERT_EQUAL(p[6], 0xff);
			CU_ASSERT_EQUAL(p[7], lints);
			lints++;
			break;
		}
		p += 8;
	}
	CU_ASSERT_EQUAL(p, mpc + len);
	CU_ASSERT_EQUAL(cpus, ncpu);
	CU_ASSERT_EQUAL(ioapics, 1);
	CU_ASSERT_EQUAL(ioapic_id, ncpu);
	CU_ASSERT_EQUAL(ints, 16);
	CU_ASSERT_EQUAL(lints, 2);
	/* Nothing written past the table. */
	CU_ASSERT_EQUAL(buf[16 + len], 0xcc);
}

static void test_checksums_and_entries(void)
{
	check_table(1);
	check_table(2);
	check_table(64);
}

static void test_bad_arguments_are_refused(void)
{
	uint8_t buf[4096];

	CU_ASSERT_EQUAL(x86_mptable_write(buf, sizeof(buf), GPA, 0), -EINVAL);
	CU_ASSERT_EQUAL(x86_mptable_write(buf, sizeof(buf), GPA + 8, 1),
			-EINVAL);
	CU_ASSERT_EQUAL(x86_mptable_write(buf, 100, GPA, 1), -EINVAL);
	CU_ASSERT_EQUAL(x86_mptable_write(buf, sizeof(buf), GPA, 256), -EINVAL);
}

/* PCI INTx entries: on the PCI bus, source IRQ (slot << 2) | pin, the
 * IOAPIC pin asked for, after the ISA ones; both checksums still hold. */
static void test_pci_interrupt_entries(void)
{
	static uint8_t buf[1 << 16];
	const struct x86_mp_pci_irq irq[3] = {{1, 0, 17}, {2, 0, 18},
					      {5, 3, 17}};
	const uint8_t *mpc = buf + 16, *p;
	uint32_t len, n, pci = 0, isa = 0;

	CU_ASSERT_EQUAL_FATAL(
		x86_mptable_write_pci(buf, sizeof(buf), GPA, 2, irq, 3), 0);
	len = mpc[4] | mpc[5] << 8;
	CU_ASSERT_EQUAL(16 + len, x86_mptable_size_pci(2, 3));
	CU_ASSERT_EQUAL(x86_mptable_size_pci(2, 3), x86_mptable_size(2) + 24);
	CU_ASSERT_EQUAL(sum(buf, 16), 0);
	CU_ASSERT_EQUAL(sum(mpc, len), 0);
	n = mpc[34] | mpc[35] << 8;
	p = mpc + 44;
	for (uint32_t i = 0; i < n; i++) {
		if (p[0] == 0) {
			p += 20;
			continue;
		}
		if (p[0] == 3 && p[4] == X86_MP_ISA_BUS) {
			isa++;
		} else if (p[0] == 3 && p[4] == X86_MP_PCI_BUS) {
			CU_ASSERT_EQUAL(isa, 16); /* after the ISA IRQs */
			CU_ASSERT_EQUAL(p[1], 0); /* INT */
			CU_ASSERT_EQUAL(p[2] | p[3] << 8, 0); /* conforms */
			CU_ASSERT_EQUAL(p[5], irq[pci].slot << 2 | irq[pci].pin);
			CU_ASSERT_EQUAL(p[6], 2); /* the IOAPIC's id */
			CU_ASSERT_EQUAL(p[7], irq[pci].ioapic_pin);
			pci++;
		}
		p += 8;
	}
	CU_ASSERT_EQUAL(pci, 3);
	CU_ASSERT_EQUAL(p, mpc + len);
}

static void test_bad_pci_entries_are_refused(void)
{
	static uint8_t buf[1 << 16];
	struct x86_mp_pci_irq irq = {32, 0, 16};

	CU_ASSERT_EQUAL(x86_mptable_write_pci(buf, sizeof(buf), GPA, 1, &irq,
					      1),
			-EINVAL);
	irq = (struct x86_mp_pci_irq){1, 4, 16};
	CU_ASSERT_EQUAL(x86_mptable_write_pci(buf, sizeof(buf), GPA, 1, &irq,
					      1),
			-EINVAL);
	irq = (struct x86_mp_pci_irq){1, 0, X86_IOAPIC_PINS};
	CU_ASSERT_EQUAL(x86_mptable_write_pci(buf, sizeof(buf), GPA, 1, &irq,
					      1),
			-EINVAL);
	CU_ASSERT_EQUAL(x86_mptable_write_pci(buf, sizeof(buf), GPA, 1, NULL,
					      1),
			-EINVAL);
	irq = (struct x86_mp_pci_irq){1, 0, 16};
	CU_ASSERT_EQUAL(x86_mptable_write_pci(buf, x86_mptable_size(1) + 7,
					      GPA, 1, &irq, 1),
			-EINVAL);
}

static CU_TestInfo tests[] = {
	{"checksums_and_entries", test_checksums_and_entries},
	{"pci_interrupt_entries", test_pci_interrupt_entries},
	{"bad_pci_entries_are_refused", test_bad_pci_entries_are_refused},
	{"bad_arguments_are_refused", test_bad_arguments_are_refused},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("arch/x86/boot/mptable", NULL, NULL, tests);
