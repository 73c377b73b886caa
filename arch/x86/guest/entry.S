/* SPDX-License-Identifier: MIT */
/*
 * Guest image entry points.
 *
 * hv_guest_pvh_entry: the PVH entry (XEN_ELFNOTE_PHYS32_ENTRY): 32-bit
 * protected mode, paging off, flat segments, %ebx = hvm_start_info. It
 * builds identity page tables for the first 4 GiB in 2 MiB pages with the
 * U bit set (workloads run at CPL 3 and touch all of RAM), enters long mode,
 * switches to the VMM's tables of all RAM when there are some, and calls
 * hv_guest_cpu_main(0, start_info) on CPU 0's kernel stack.
 *
 * hv_guest_ap_entry: 64-bit entry of the other vCPUs, started by the VMM
 * already in long mode (see ucall.h), %rdi = vCPU index.
 */
#include "arch/x86/guest/layout.h"

	.section .note.hvguest, "a"
	.balign 4
	/* XEN_ELFNOTE_PHYS32_ENTRY (18): 32-bit physical entry. */
	.long 4f - 3f		/* namesz */
	.long 6f - 5f		/* descsz */
	.long 18		/* type */
3:	.asciz "Xen"
4:	.balign 4
5:	.long hv_guest_pvh_entry
6:	.balign 4
	/* "MIGRATED" note type 1: 64-bit AP entry. */
	.long 8f - 7f
	.long 10f - 9f
	.long 1
7:	.asciz "MIGRATED"
8:	.balign 4
9:	.quad hv_guest_ap_entry
10:	.balign 4

	.section .text.boot, "ax"
	.code32
	.globl hv_guest_pvh_entry
hv_guest_pvh_entry:
	cli
	cld
	movl %ebx, %esi			/* keep start_info */

	/* PML4[0] -> PDPT, PDPT[0..3] -> PD0..3 */
	movl $boot_pml4, %edi
	movl $boot_pdpt, %eax
	orl $(PTE_P | PTE_W | PTE_U), %eax
	movl %eax, (%edi)
	movl $0, 4(%edi)

	movl $boot_pdpt, %edi
	movl $boot_pd, %eax
	orl $(PTE_P | PTE_W | PTE_U), %eax
	movl $4, %ecx
1:	movl %eax, (%edi)
	movl $0, 4(%edi)
	addl $4096, %eax
	addl $8, %edi
	loop 1b

	/* 2048 x 2 MiB leaves: entry i maps i * 2 MiB; below 4 GiB the
	 * address fits the low dword, the high dword stays 0. */
	movl $boot_pd, %edi
	xorl %edx, %edx			/* i */
2:	movl %edx, %eax
	shll $21, %eax
	orl $(PTE_P | PTE_W | PTE_U | PTE_PS), %eax
	movl %eax, (%edi,%edx,8)
	movl $0, 4(%edi,%edx,8)
	incl %edx
	cmpl $2048, %edx
	jb 2b

	/* CR4.PAE, CR3, EFER.LME, CR0.PG|WP */
	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $boot_pml4, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $(CR0_PG | CR0_WP | CR0_PE), %eax
	movl %eax, %cr0

	lgdt hv_guest_gdt_ptr32
	ljmp $SEL_KCODE, $long_entry

	.code64
long_entry:
	movl $SEL_KDATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	/*
	 * The VMM's tables (HV_X86_AP_PT_GPA, arch/x86/pgtable.h) map all
	 * of RAM, above 4 GiB too; ours map the first 4 GiB. Switch to
	 * them when they are there: their PML4[0] points at the next page
	 * with P|W|U. Under QEMU (PVH, no such VMM) the page holds
	 * something else and we stay on ours.
	 */
	cmpq $(VMM_PT_GPA + 4096 + (PTE_P | PTE_W | PTE_U)), VMM_PT_GPA
	jne 1f
	movq $VMM_PT_GPA, %rax
	movq %rax, %cr3
1:
	movq $(hv_guest_kstack + KSTACK_SIZE), %rsp
	xorl %edi, %edi			/* cpu 0 */
	/* %esi: start_info */
	call hv_guest_cpu_main
3:	cli
	hlt
	jmp 3b

	.globl hv_guest_ap_entry
hv_guest_ap_entry:
	cli
	cld
	/* rsp = hv_guest_kstack + (cpu + 1) * KSTACK_SIZE */
	movq %rdi, %rax
	incq %rax
	shlq $KSTACK_SHIFT, %rax
	leaq hv_guest_kstack(%rip), %rsp
	addq %rax, %rsp
	xorl %esi, %esi
	call hv_guest_cpu_main
4:	cli
	hlt
	jmp 4b

/*
 * Enter ring 3: hv_guest_enter_user(rip, rsp, arg) -> never returns.
 * IOPL 3 so that port I/O would be allowed if the platform permits it.
 */
	.globl hv_guest_enter_user
hv_guest_enter_user:
	pushq $(SEL_UDATA | 3)
	pushq %rsi
	pushq $(RFLAGS_IOPL3 | RFLAGS_FIXED)
	pushq $(SEL_UCODE | 3)
	pushq %rdi
	movq %rdx, %rdi
	movl $(SEL_UDATA | 3), %eax
	movl %eax, %ds
	movl %eax, %es
	iretq

/*
 * Exception stubs: push a zero error code when the CPU does not, then the
 * vector, save the general registers as struct hv_trap_frame and call
 * hv_guest_trap(frame).
 */
	.macro TRAP_NOERR vec
	.balign 16
trap_\vec:
	pushq $0
	pushq $\vec
	jmp trap_common
	.endm
	.macro TRAP_ERR vec
	.balign 16
trap_\vec:
	pushq $\vec
	jmp trap_common
	.endm

	TRAP_NOERR 0
	TRAP_NOERR 1
	TRAP_NOERR 2
	TRAP_NOERR 3
	TRAP_NOERR 4
	TRAP_NOERR 5
	TRAP_NOERR 6
	TRAP_NOERR 7
	TRAP_ERR 8
	TRAP_NOERR 9
	TRAP_ERR 10
	TRAP_ERR 11
	TRAP_ERR 12
	TRAP_ERR 13
	TRAP_ERR 14
	TRAP_NOERR 15
	TRAP_NOERR 16
	TRAP_ERR 17
	TRAP_NOERR 18
	TRAP_NOERR 19
	TRAP_NOERR 20
	TRAP_ERR 21
	TRAP_NOERR 22
	TRAP_NOERR 23
	TRAP_NOERR 24
	TRAP_NOERR 25
	TRAP_NOERR 26
	TRAP_NOERR 27
	TRAP_NOERR 28
	TRAP_ERR 29
	TRAP_ERR 30
	TRAP_NOERR 31

trap_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	call hv_guest_trap
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq

	.section .rodata
	.balign 8
	.globl hv_guest_trap_stubs
hv_guest_trap_stubs:
	.irp v,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad trap_\v
	.endr

	.section .data
	.balign 8
hv_guest_gdt_ptr32:
	.word GDT_BYTES - 1
	.long hv_guest_gdt

	.section .bss
	.balign 4096
boot_pml4:	.skip 4096
boot_pdpt:	.skip 4096
boot_pd:	.skip 4 * 4096
