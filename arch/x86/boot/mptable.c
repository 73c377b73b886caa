// SPDX-License-Identifier: MIT
/*
 * MP floating pointer and configuration table (MP spec 1.4, chapter 4).
 */
#include <errno.h>
#include <string.h>

#include "arch/x86/boot/mptable.h"

#define MPF_BYTES 16
#define MPC_HDR_BYTES 44
#define MPC_CPU_BYTES 20
#define MPC_SMALL_BYTES 8 /* bus, IOAPIC, interrupt entries */
#define NR_ISA_IRQS 16

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };
enum { MP_INT, MP_NMI, MP_SMI, MP_EXTINT };

#define CPU_ENABLED 0x1
#define CPU_BSP 0x2
#define APIC_VERSION 0x14
#define IOAPIC_VERSION 0x11

static uint8_t checksum(const uint8_t *p, uint64_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return (uint8_t)-s;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static uint32_t nr_entries(uint32_t nr_cpus, uint32_t nr_pci)
{
	/* CPUs, 2 buses, the IOAPIC, 16 ISA IRQs, the PCI IRQs, 2 local
	 * interrupts. */
	return nr_cpus + 2 + 1 + NR_ISA_IRQS + nr_pci + 2;
}

uint64_t x86_mptable_size_pci(uint32_t nr_cpus, uint32_t nr_pci)
{
	return MPF_BYTES + MPC_HDR_BYTES + (uint64_t)nr_cpus * MPC_CPU_BYTES +
	       (uint64_t)(nr_entries(nr_cpus, nr_pci) - nr_cpus) *
		       MPC_SMALL_BYTES;
}

uint64_t x86_mptable_size(uint32_t nr_cpus)
{
	return x86_mptable_size_pci(nr_cpus, 0);
}

static uint8_t *intsrc(uint8_t *p, uint8_t kind, uint8_t type, uint8_t bus,
		       uint8_t bus_irq, uint8_t apic, uint8_t pin)
{
	p[0] = kind;
	p[1] = type;
	put16(p + 2, 0); /* polarity and trigger: conform to the bus */
	p[4] = bus;
	p[5] = bus_irq;
	p[6] = apic;
	p[7] = pin;
	return p + MPC_SMALL_BYTES;
}

int x86_mptable_write(uint8_t *buf, uint64_t buf_bytes, uint32_t gpa,
		      uint32_t nr_cpus)
{
	return x86_mptable_write_pci(buf, buf_bytes, gpa, nr_cpus, NULL, 0);
}

int x86_mptable_write_pci(uint8_t *buf, uint64_t buf_bytes, uint32_t gpa,
			  uint32_t nr_cpus, const struct x86_mp_pci_irq *pci,
			  uint32_t nr_pci)
{
	uint64_t size = x86_mptable_size_pci(nr_cpus, nr_pci);
	uint8_t *mpc = buf + MPF_BYTES, *p;
	uint8_t ioapic_id = (uint8_t)nr_cpus;

	if (!nr_cpus || nr_cpus > X86_MP_MAX_CPUS || (gpa & 15) ||
	    nr_pci > X86_MP_MAX_PCI_IRQS || (nr_pci && !pci) ||
	    buf_bytes < size)
		return -EINVAL;
	for (uint32_t i = 0; i < nr_pci; i++)
		if (pci[i].slot > 31 || pci[i].pin > 3 ||
		    pci[i].ioapic_pin >= X86_IOAPIC_PINS)
			return -EINVAL;
	memset(buf, 0, size);
	/* Floating pointer: one 16-byte paragraph, spec 1.4, no default
	 * configuration (the table follows), virtual wire mode. */
	memcpy(buf, "_MP_", 4);
	put32(buf + 4, gpa + MPF_BYTES);
	buf[8] = 1;
	buf[9] = 4;
	buf[10] = checksum(buf, MPF_BYTES);

	memcpy(mpc, "PCMP", 4);
	put16(mpc + 4, (uint16_t)(size - MPF_BYTES));
	mpc[6] = 4;
	memcpy(mpc + 8, "MIGRATED", 8);
	memcpy(mpc + 16, "HVCORE-KVM  ", 12);
	put16(mpc + 34, (uint16_t)nr_entries(nr_cpus, nr_pci));
	put32(mpc + 36, X86_LAPIC_GPA);

	p = mpc + MPC_HDR_BYTES;
	for (uint32_t i = 0; i < nr_cpus; i++) {
		p[0] = MP_PROCESSOR;
		p[1] = (uint8_t)i;
		p[2] = APIC_VERSION;
		p[3] = CPU_ENABLED | (i == 0 ? CPU_BSP : 0);
		put32(p + 4, 0x600);		 /* family 6 signature */
		put32(p + 8, 1u << 9 | 1u << 0); /* APIC, FPU */
		p += MPC_CPU_BYTES;
	}
	p[0] = MP_BUS;
	p[1] = X86_MP_PCI_BUS;
	memcpy(p + 2, "PCI   ", 6);
	p += MPC_SMALL_BYTES;
	p[0] = MP_BUS;
	p[1] = X86_MP_ISA_BUS;
	memcpy(p + 2, "ISA   ", 6);
	p += MPC_SMALL_BYTES;
	p[0] = MP_IOAPIC;
	p[1] = ioapic_id;
	p[2] = IOAPIC_VERSION;
	p[3] = 1; /* usable */
	put32(p + 4, X86_IOAPIC_GPA);
	p += MPC_SMALL_BYTES;
	for (uint8_t irq = 0; irq < NR_ISA_IRQS; irq++)
		p = intsrc(p, MP_INTSRC, MP_INT, X86_MP_ISA_BUS, irq, ioapic_id,
			   irq);
	for (uint32_t i = 0; i < nr_pci; i++)
		p = intsrc(p, MP_INTSRC, MP_INT, X86_MP_PCI_BUS,
			   (uint8_t)(pci[i].slot << 2 | pci[i].pin), ioapic_id,
			   pci[i].ioapic_pin);
	p = intsrc(p, MP_LINTSRC, MP_EXTINT, X86_MP_ISA_BUS, 0, 0xff, 0);
	p = intsrc(p, MP_LINTSRC, MP_NMI, X86_MP_ISA_BUS, 0, 0xff, 1);
	mpc[7] = checksum(mpc, size - MPF_BYTES);
	return 0;
}
