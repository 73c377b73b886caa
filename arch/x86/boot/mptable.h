/* SPDX-License-Identifier: MIT */
/*
 * The Intel MultiProcessor Specification 1.4 tables (kvmtool's and early
 * Firecracker's way to describe an SMP guest without ACPI): a floating
 * pointer structure and a configuration table with one processor entry
 * per vCPU (APIC id = vCPU index, vCPU 0 the BSP), a PCI bus (0) and an
 * ISA bus (1), the IOAPIC, ISA IRQs 0-15 on IOAPIC pins 0-15 (KVM's
 * default GSI routing), optionally the PCI devices' INTx# pins, and
 * LINT0 = ExtINT, LINT1 = NMI on every LAPIC.
 * Linux finds the floating pointer by scanning the BIOS area
 * (0xf0000-0xfffff) when it finds no ACPI tables.
 */
#ifndef ARCH_X86_BOOT_MPTABLE_H
#define ARCH_X86_BOOT_MPTABLE_H

#include <stdint.h>

#define X86_IOAPIC_GPA 0xfec00000u
#define X86_LAPIC_GPA 0xfee00000u
#define X86_IOAPIC_PINS 24
#define X86_MP_PCI_BUS 0
#define X86_MP_ISA_BUS 1
/* Processor entries fit one 64 KiB BIOS area with room to spare. */
#define X86_MP_MAX_CPUS 255

/* The most PCI interrupt entries a table takes (32 slots x INTA#..INTD#). */
#define X86_MP_MAX_PCI_IRQS 128

/*
 * A PCI legacy interrupt: INTx# @pin (0 = INTA#) of device @slot on bus 0
 * reaches IOAPIC pin @ioapic_pin. Its entry is an I/O interrupt entry on
 * the PCI bus with source bus IRQ (slot << 2) | pin and polarity and
 * trigger "conform to the bus" (level, active low), as kvmtool writes it.
 */
struct x86_mp_pci_irq {
	uint8_t slot, pin, ioapic_pin;
};

/* Bytes the floating pointer and the table need for @nr_cpus. */
uint64_t x86_mptable_size(uint32_t nr_cpus);
uint64_t x86_mptable_size_pci(uint32_t nr_cpus, uint32_t nr_pci);

/*
 * Write the floating pointer at @buf (guest-physical @gpa, 16-aligned)
 * and the configuration table right after it. -EINVAL for @nr_cpus 0 or
 * above X86_MP_MAX_CPUS, a misaligned @gpa, or @buf_bytes too small.
 */
int x86_mptable_write(uint8_t *buf, uint64_t buf_bytes, uint32_t gpa,
		      uint32_t nr_cpus);
/* The same with @nr_pci PCI interrupt entries (-EINVAL above
 * X86_MP_MAX_PCI_IRQS, a slot above 31, a pin above 3 or an IOAPIC pin
 * out of its X86_IOAPIC_PINS). */
int x86_mptable_write_pci(uint8_t *buf, uint64_t buf_bytes, uint32_t gpa,
			  uint32_t nr_cpus, const struct x86_mp_pci_irq *pci,
			  uint32_t nr_pci);

#endif
