/* SPDX-License-Identifier: MIT */
/*
 * The Intel MultiProcessor Specification 1.4 tables (kvmtool's and early
 * Firecracker's way to describe an SMP guest without ACPI): a floating
 * pointer structure and a configuration table with one processor entry
 * per vCPU (APIC id = vCPU index, vCPU 0 the BSP), a PCI bus (0) and an
 * ISA bus (1), the IOAPIC, ISA IRQs 0-15 on IOAPIC pins 0-15 (KVM's
 * default GSI routing), and LINT0 = ExtINT, LINT1 = NMI on every LAPIC.
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

/* Bytes the floating pointer and the table need for @nr_cpus. */
uint64_t x86_mptable_size(uint32_t nr_cpus);

/*
 * Write the floating pointer at @buf (guest-physical @gpa, 16-aligned)
 * and the configuration table right after it. -EINVAL for @nr_cpus 0 or
 * above X86_MP_MAX_CPUS, a misaligned @gpa, or @buf_bytes too small.
 */
int x86_mptable_write(uint8_t *buf, uint64_t buf_bytes, uint32_t gpa,
		      uint32_t nr_cpus);

#endif
