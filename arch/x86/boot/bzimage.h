/* SPDX-License-Identifier: MIT */
/*
 * Linux on x86 through the boot protocol's 64-bit entry
 * (Documentation/arch/x86/boot.rst): parse and check a bzImage's setup
 * header, load its protected-mode kernel, and build the zero page
 * (struct boot_params) with the e820 map of our RAM layout, the command
 * line and the initrd.
 *
 * Pure arch code: it writes into guest RAM given as one host buffer in
 * RAM-offset order with its hv_ram_layout (hvcore/ram_layout.h), and
 * every table it builds lives below 1 MiB, where gpa == RAM offset. The
 * vCPU state of the entry (long mode, identity tables, RSI = zero page)
 * is the accelerator's (hvcore/kvm/kvm_linux.c).
 *
 * Fixed low-memory map (docs/guests.md), as Firecracker's:
 *
 *   0x00500  GDT of the entry        0x07000  zero page
 *   0x09000  identity page tables    0x20000  command line
 *   0x9fc00  reserved (EBDA)         0xf0000  MP table (BIOS area)
 *   1 MiB or pref_address: kernel   initrd: as high as allowed
 */
#ifndef ARCH_X86_BOOT_BZIMAGE_H
#define ARCH_X86_BOOT_BZIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/ram_layout.h"

#define X86_BOOT_GDT_GPA 0x500ULL
#define X86_BOOT_ZERO_PAGE_GPA 0x7000ULL
#define X86_BOOT_PT_GPA 0x9000ULL
#define X86_BOOT_PT_END 0x20000ULL
#define X86_BOOT_CMDLINE_GPA 0x20000ULL
#define X86_BOOT_CMDLINE_MAX 0x10000ULL
#define X86_BOOT_EBDA_GPA 0x9fc00ULL
#define X86_BOOT_BIOS_GPA 0xf0000ULL
#define X86_BOOT_HIGH_GPA 0x100000ULL
/* The 64-bit entry is 0x200 past the protected-mode kernel's start. */
#define X86_BOOT_ENTRY64_OFF 0x200ULL

/* boot_params offsets and setup header fields this code uses. */
#define X86_BP_EXT_RAMDISK_IMAGE 0x0c0
#define X86_BP_EXT_RAMDISK_SIZE 0x0c4
#define X86_BP_EXT_CMD_LINE_PTR 0x0c8
#define X86_BP_E820_ENTRIES 0x1e8
#define X86_BP_HDR 0x1f1
#define X86_BP_E820_TABLE 0x2d0
#define X86_BP_E820_MAX 128
#define X86_BP_SIZE 4096

#define X86_E820_RAM 1
#define X86_E820_RESERVED 2

/* The parsed, checked setup header of a bzImage. */
struct x86_bzimage {
	uint16_t version;     /* boot protocol, e.g. 0x020f */
	uint32_t setup_bytes; /* real-mode part: (setup_sects + 1) * 512 */
	uint32_t hdr_end;     /* file offset one past the setup header */
	uint64_t pm_off;      /* protected-mode kernel in the file */
	uint64_t pm_bytes;
	uint8_t loadflags;
	uint16_t xloadflags;
	bool relocatable;
	uint32_t kernel_alignment;
	uint32_t initrd_addr_max; /* highest byte an initrd may use */
	uint32_t cmdline_size;	  /* longest command line, NUL excluded */
	uint64_t pref_address;
	uint32_t init_size; /* memory the kernel needs from its load address */
};

/*
 * Check @file (@size bytes) as a bzImage with a 64-bit entry: boot flag
 * and "HdrS", protocol >= 2.12 (xloadflags) with XLF_KERNEL_64, every
 * offset inside the file. -ENOEXEC (logged with the reason) when it is
 * not one.
 */
int x86_bzimage_parse(const void *file, uint64_t size, struct x86_bzimage *out);

/* The end of RAM below the MMIO hole (all of RAM without one): where
 * gpa == RAM offset, and where the loaders place the kernel and initrd. */
uint64_t x86_low_ram_end(const struct hv_ram_layout *l);

/* One e820 entry as boot_params holds it. */
struct x86_e820 {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/*
 * The e820 map of @l: RAM [0, EBDA), EBDA reserved, the BIOS area
 * [0xf0000, 1 MiB) reserved, RAM from 1 MiB to the hole (or the end of a
 * smaller VM), RAM above 4 GiB for the rest. Returns the entry count
 * (at most @max) or -EINVAL (RAM smaller than 2 MiB, @max too small).
 */
int x86_e820_build(const struct hv_ram_layout *l, struct x86_e820 *out,
		   unsigned max);

/*
 * Where an initrd of @bytes goes: page-aligned, as high as allowed
 * (below initrd_addr_max and the end of RAM below the hole), above
 * @kernel_end. -ENOSPC when it does not fit (logged).
 */
int x86_initrd_place(const struct x86_bzimage *bz,
		     const struct hv_ram_layout *l, uint64_t kernel_end,
		     uint64_t bytes, uint64_t *gpa);

/* What to load. */
struct x86_linux_boot {
	const void *kernel;
	uint64_t kernel_bytes;
	const void *initrd; /* NULL: none */
	uint64_t initrd_bytes;
	const char *cmdline;
};

/* Where it went. */
struct x86_linux_entry {
	uint64_t load_gpa;   /* the protected-mode kernel */
	uint64_t entry64;    /* load_gpa + 0x200 */
	uint64_t zero_page;  /* RSI at the entry */
	uint64_t kernel_end; /* load_gpa + max(pm_bytes, init_size) */
	uint64_t initrd_gpa; /* 0 without an initrd */
};

/*
 * Load @in into @ram (RAM-offset order, l->ram_bytes bytes) and write the
 * zero page and command line. The kernel goes to its pref_address when
 * relocatable and that fits, else to 1 MiB. -ENOEXEC (not a kernel),
 * -E2BIG (command line longer than the kernel takes), -ENOSPC (kernel or
 * initrd do not fit in RAM below the hole). Each logged once.
 */
int x86_bzimage_load(uint8_t *ram, const struct hv_ram_layout *l,
		     const struct x86_linux_boot *in,
		     struct x86_linux_entry *out);

#endif
