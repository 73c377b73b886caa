/* SPDX-License-Identifier: MIT */
/* Constants shared by the guest's assembly and C (no C types here). */
#ifndef ARCH_X86_GUEST_LAYOUT_H
#define ARCH_X86_GUEST_LAYOUT_H

#define MAX_CPUS 64
#define KSTACK_SHIFT 14 /* 16 KiB per CPU */
#define KSTACK_SIZE (1 << KSTACK_SHIFT)
#define USTACK_SIZE (16 * 1024)

/* HV_X86_AP_PT_GPA (ucall.h, C only): the VMM's tables of all RAM. */
#define VMM_PT_GPA 0x20000

#define PTE_P 0x1
#define PTE_W 0x2
#define PTE_U 0x4
#define PTE_PS 0x80

#define CR0_PE 0x1
#define CR0_WP 0x10000
#define CR0_PG 0x80000000
#define CR4_PAE 0x20
#define MSR_EFER 0xc0000080
#define EFER_LME 0x100

#define RFLAGS_FIXED 0x2
#define RFLAGS_IOPL3 0x3000

/* GDT: null, kernel code, kernel data, user data, user code, then one
 * 16-byte TSS descriptor per CPU. */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x18
#define SEL_UCODE 0x20
#define SEL_TSS0 0x28
#define GDT_BYTES (SEL_TSS0 + 16 * MAX_CPUS)

#define QEMU_DEBUG_EXIT_PORT 0xf4
#define COM1_PORT 0x3f8

#endif
