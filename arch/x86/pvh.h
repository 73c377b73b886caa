/* SPDX-License-Identifier: MIT */
/*
 * Loading a PVH ELF image (the x86 guest image, arch/x86/guest) into guest
 * RAM: PT_LOAD segments copied to their physical addresses (bss zeroed),
 * the XEN_ELFNOTE_PHYS32_ENTRY note giving the 32-bit entry, and our own
 * "MIGRATED" note giving the 64-bit AP entry (arch/x86/guest/ucall.h).
 * Also writes the PVH hvm_start_info the entry expects in %ebx.
 *
 * The file is untrusted input: every offset and size is checked against
 * the file and against guest RAM. Any thread; no shared state.
 */
#ifndef ARCH_X86_PVH_H
#define ARCH_X86_PVH_H

#include "hvcore/types.h"

/* The PVH boot ABI (Xen's arch-x86/hvm/start_info.h, version 1): what
 * the 32-bit entry finds at %ebx, all addresses guest-physical. */
#define X86_HVM_START_MAGIC 0x336ec578u

struct x86_hvm_start_info {
	uint32_t magic;
	uint32_t version; /* 1: memmap_* are valid */
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr; /* nr_modules struct x86_hvm_modlist_entry */
	uint64_t cmdline_paddr; /* NUL-terminated; 0: none */
	uint64_t rsdp_paddr;	/* 0: none */
	uint64_t memmap_paddr;	/* memmap_entries struct x86_hvm_memmap_entry */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct x86_hvm_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr; /* 0: none */
	uint64_t reserved;
};

struct x86_hvm_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* e820 types: 1 RAM, 2 reserved */
	uint32_t reserved;
};

struct x86_pvh_image {
	uint32_t entry32;    /* PVH 32-bit entry (guest-physical) */
	uint64_t ap_entry64; /* 0 when the image has no AP entry note */
	gpa_t lowest;	     /* lowest and end of the loaded range */
	gpa_t end;
};

/*
 * Load @path into @ram (@ram_bytes of guest RAM starting at gpa 0).
 * -ENOENT/-errno opening or reading, -ENOEXEC for a malformed ELF, a
 * missing PVH note or a segment outside RAM. Nothing is written to @ram
 * unless the whole image validated.
 */
int x86_pvh_load(const char *path, uint8_t *ram, uint64_t ram_bytes,
		 struct x86_pvh_image *out);

/* Same, from an image in memory. */
int x86_pvh_load_buf(const uint8_t *elf, size_t len, uint8_t *ram,
		     uint64_t ram_bytes, struct x86_pvh_image *out);

/*
 * Write a PVH hvm_start_info (version 1, magic 0x336ec578, no modules, a
 * one-entry memory map of @ram_bytes of RAM) at @gpa. -EINVAL when it does
 * not fit in RAM.
 */
int x86_pvh_write_start_info(uint8_t *ram, uint64_t ram_bytes, gpa_t gpa);

#endif
