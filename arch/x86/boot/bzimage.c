// SPDX-License-Identifier: MIT
/*
 * The x86 Linux boot protocol, 64-bit entry: setup header checks, kernel
 * and initrd placement, the zero page and its e820 map.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86/boot/bzimage.h"
#include "hvcore/log.h"
#include "hvcore/types.h"

/* Setup header offsets (file and boot_params alike). */
#define HDR_SETUP_SECTS 0x1f1
#define HDR_BOOT_FLAG 0x1fe
#define HDR_JUMP 0x200
#define HDR_HEADER 0x202
#define HDR_VERSION 0x206
#define HDR_TYPE_OF_LOADER 0x210
#define HDR_LOADFLAGS 0x211
#define HDR_RAMDISK_IMAGE 0x218
#define HDR_RAMDISK_SIZE 0x21c
#define HDR_CMD_LINE_PTR 0x228
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_KERNEL_ALIGNMENT 0x230
#define HDR_RELOCATABLE 0x234
#define HDR_XLOADFLAGS 0x236
#define HDR_CMDLINE_SIZE 0x238
#define HDR_PREF_ADDRESS 0x258
#define HDR_INIT_SIZE 0x260
/* The setup header never reaches past this (edd_mbr_sig_buffer). */
#define HDR_LIMIT 0x290

#define BOOT_FLAG 0xaa55
#define HDR_MAGIC 0x53726448u /* "HdrS" */
#define XLF_KERNEL_64 0x1
#define LOADFLAG_LOADED_HIGH 0x1
#define LOADFLAG_CAN_USE_HEAP 0x80
#define LOADER_UNDEFINED 0xff
#define PAGE 4096ULL

static uint16_t rd16(const uint8_t *p, uint32_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static uint32_t rd32(const uint8_t *p, uint32_t off)
{
	return (uint32_t)rd16(p, off) | (uint32_t)rd16(p, off + 2) << 16;
}

static uint64_t rd64(const uint8_t *p, uint32_t off)
{
	return (uint64_t)rd32(p, off) | (uint64_t)rd32(p, off + 4) << 32;
}

static void wr16(uint8_t *p, uint32_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t off, uint32_t v)
{
	wr16(p, off, (uint16_t)v);
	wr16(p, off + 2, (uint16_t)(v >> 16));
}

static void wr64(uint8_t *p, uint32_t off, uint64_t v)
{
	wr32(p, off, (uint32_t)v);
	wr32(p, off + 4, (uint32_t)(v >> 32));
}

static int not_kernel(const char *why)
{
	hv_err("boot", "op=bzimage_parse err=%d reason=%s", -ENOEXEC, why);
	return -ENOEXEC;
}

int x86_bzimage_parse(const void *file, uint64_t size, struct x86_bzimage *out)
{
	const uint8_t *p = file;
	struct x86_bzimage bz;
	uint32_t sects;

	memset(&bz, 0, sizeof(bz));
	if (!p || size < HDR_INIT_SIZE + 4)
		return not_kernel("file_shorter_than_setup_header");
	if (rd16(p, HDR_BOOT_FLAG) != BOOT_FLAG)
		return not_kernel("no_boot_flag_0xaa55");
	if (rd32(p, HDR_HEADER) != HDR_MAGIC)
		return not_kernel("no_HdrS_magic");
	bz.version = rd16(p, HDR_VERSION);
	/* xloadflags (and with it XLF_KERNEL_64) came with 2.12. */
	if (bz.version < 0x020c)
		return not_kernel("boot_protocol_older_than_2.12");
	bz.xloadflags = rd16(p, HDR_XLOADFLAGS);
	if (!(bz.xloadflags & XLF_KERNEL_64))
		return not_kernel("no_64bit_entry_XLF_KERNEL_64");
	bz.loadflags = p[HDR_LOADFLAGS];
	if (!(bz.loadflags & LOADFLAG_LOADED_HIGH))
		return not_kernel("not_loaded_high_zImage");
	/* The jump at 0x200 is short: its offset tells where the header
	 * ends. */
	bz.hdr_end = HDR_HEADER + p[HDR_JUMP + 1];
	if (bz.hdr_end > HDR_LIMIT || bz.hdr_end < HDR_INIT_SIZE + 4)
		return not_kernel("setup_header_length");
	sects = p[HDR_SETUP_SECTS] ? p[HDR_SETUP_SECTS] : 4;
	bz.setup_bytes = (sects + 1) * 512;
	if (bz.setup_bytes >= size)
		return not_kernel("setup_sects_past_end_of_file");
	bz.pm_off = bz.setup_bytes;
	bz.pm_bytes = size - bz.setup_bytes;
	bz.relocatable = p[HDR_RELOCATABLE] != 0;
	bz.kernel_alignment = rd32(p, HDR_KERNEL_ALIGNMENT);
	if (bz.relocatable &&
	    (!bz.kernel_alignment ||
	     (bz.kernel_alignment & (bz.kernel_alignment - 1))))
		return not_kernel("kernel_alignment_not_a_power_of_two");
	bz.initrd_addr_max = rd32(p, HDR_INITRD_ADDR_MAX);
	bz.cmdline_size = rd32(p, HDR_CMDLINE_SIZE);
	bz.pref_address = rd64(p, HDR_PREF_ADDRESS);
	bz.init_size = rd32(p, HDR_INIT_SIZE);
	if (bz.init_size < bz.pm_bytes)
		return not_kernel("init_size_smaller_than_kernel");
	*out = bz;
	return 0;
}

/* End of RAM below the hole (gpa == RAM offset there). */
uint64_t x86_low_ram_end(const struct hv_ram_layout *l)
{
	if (l->hole_start == l->hole_end || l->ram_bytes <= l->hole_start)
		return l->ram_bytes;
	return l->hole_start;
}

int x86_e820_build(const struct hv_ram_layout *l, struct x86_e820 *out,
		   unsigned max)
{
	uint64_t low = x86_low_ram_end(l);
	unsigned n = 0;

	if (max < 5 || low < 2 * X86_BOOT_HIGH_GPA)
		return -EINVAL;
	out[n++] = (struct x86_e820){0, X86_BOOT_EBDA_GPA, X86_E820_RAM};
	out[n++] = (struct x86_e820){X86_BOOT_EBDA_GPA,
				     0xa0000 - X86_BOOT_EBDA_GPA,
				     X86_E820_RESERVED};
	out[n++] = (struct x86_e820){X86_BOOT_BIOS_GPA,
				     X86_BOOT_HIGH_GPA - X86_BOOT_BIOS_GPA,
				     X86_E820_RESERVED};
	out[n++] = (struct x86_e820){X86_BOOT_HIGH_GPA, low - X86_BOOT_HIGH_GPA,
				     X86_E820_RAM};
	if (l->ram_bytes > low)
		out[n++] = (struct x86_e820){l->hole_end, l->ram_bytes - low,
					     X86_E820_RAM};
	return (int)n;
}

int x86_initrd_place(const struct x86_bzimage *bz,
		     const struct hv_ram_layout *l, uint64_t kernel_end,
		     uint64_t bytes, uint64_t *gpa)
{
	uint64_t top = x86_low_ram_end(l), at;

	if ((uint64_t)bz->initrd_addr_max + 1 < top)
		top = (uint64_t)bz->initrd_addr_max + 1;
	kernel_end = (kernel_end + PAGE - 1) & ~(PAGE - 1);
	if (!bytes || bytes > top ||
	    ((top - bytes) & ~(PAGE - 1)) < kernel_end) {
		hv_err("boot",
		       "op=initrd_place bytes=%llu kernel_end=0x%llx "
		       "top=0x%llx err=%d reason=initrd_does_not_fit",
		       (unsigned long long)bytes,
		       (unsigned long long)kernel_end, (unsigned long long)top,
		       -ENOSPC);
		return -ENOSPC;
	}
	at = (top - bytes) & ~(PAGE - 1);
	*gpa = at;
	return 0;
}

/* The protected-mode kernel's load address: pref_address when the kernel
 * is relocatable and fits there (no copy in the decompressor), else
 * 1 MiB, which every bzImage accepts. */
static int place_kernel(const struct x86_bzimage *bz,
			const struct hv_ram_layout *l, uint64_t *load)
{
	uint64_t low = x86_low_ram_end(l), need = bz->init_size;

	if (bz->relocatable && bz->pref_address >= X86_BOOT_HIGH_GPA &&
	    bz->pref_address < low && need <= low - bz->pref_address) {
		*load = bz->pref_address;
		return 0;
	}
	if (need <= low - X86_BOOT_HIGH_GPA) {
		*load = X86_BOOT_HIGH_GPA;
		return 0;
	}
	hv_err("boot",
	       "op=bzimage_load init_size=%u low_ram=%llu err=%d "
	       "reason=kernel_does_not_fit_in_ram",
	       bz->init_size, (unsigned long long)low, -ENOSPC);
	return -ENOSPC;
}

static int write_zero_page(uint8_t *ram, const struct hv_ram_layout *l,
			   const struct x86_bzimage *bz, const uint8_t *file,
			   const struct x86_linux_boot *in,
			   const struct x86_linux_entry *e)
{
	uint8_t *zp = ram + X86_BOOT_ZERO_PAGE_GPA;
	struct x86_e820 map[8];
	int n;

	n = x86_e820_build(l, map, HV_ARRAY_SIZE(map));
	if (n < 0)
		return n;
	memset(zp, 0, X86_BP_SIZE);
	memcpy(zp + X86_BP_HDR, file + X86_BP_HDR, bz->hdr_end - X86_BP_HDR);
	zp[HDR_TYPE_OF_LOADER] = LOADER_UNDEFINED;
	zp[HDR_LOADFLAGS] |= LOADFLAG_CAN_USE_HEAP;
	wr32(zp, HDR_CMD_LINE_PTR, (uint32_t)X86_BOOT_CMDLINE_GPA);
	wr32(zp, HDR_RAMDISK_IMAGE, (uint32_t)e->initrd_gpa);
	wr32(zp, HDR_RAMDISK_SIZE, in->initrd ? (uint32_t)in->initrd_bytes : 0);
	zp[X86_BP_E820_ENTRIES] = (uint8_t)n;
	for (int i = 0; i < n; i++) {
		uint32_t o = X86_BP_E820_TABLE + (uint32_t)i * 20;

		wr64(zp, o, map[i].addr);
		wr64(zp, o + 8, map[i].size);
		wr32(zp, o + 16, map[i].type);
	}
	return 0;
}

int x86_bzimage_load(uint8_t *ram, const struct hv_ram_layout *l,
		     const struct x86_linux_boot *in,
		     struct x86_linux_entry *out)
{
	struct x86_linux_entry e;
	struct x86_bzimage bz;
	size_t cmd_len;
	int ret;

	memset(&e, 0, sizeof(e));
	ret = x86_bzimage_parse(in->kernel, in->kernel_bytes, &bz);
	if (ret)
		return ret;
	cmd_len = in->cmdline ? strlen(in->cmdline) : 0;
	if (cmd_len > bz.cmdline_size || cmd_len >= X86_BOOT_CMDLINE_MAX) {
		hv_err("boot",
		       "op=bzimage_load cmdline_bytes=%zu max=%u err=%d "
		       "reason=command_line_too_long",
		       cmd_len, bz.cmdline_size, -E2BIG);
		return -E2BIG;
	}
	ret = place_kernel(&bz, l, &e.load_gpa);
	if (ret)
		return ret;
	e.entry64 = e.load_gpa + X86_BOOT_ENTRY64_OFF;
	e.zero_page = X86_BOOT_ZERO_PAGE_GPA;
	e.kernel_end = e.load_gpa + HV_MAX(bz.pm_bytes, (uint64_t)bz.init_size);
	if (in->initrd) {
		ret = x86_initrd_place(&bz, l, e.kernel_end, in->initrd_bytes,
				       &e.initrd_gpa);
		if (ret)
			return ret;
	}
	ret = write_zero_page(ram, l, &bz, in->kernel, in, &e);
	if (ret)
		return ret;
	memcpy(ram + e.load_gpa, (const uint8_t *)in->kernel + bz.pm_off,
	       bz.pm_bytes);
	if (in->initrd)
		memcpy(ram + e.initrd_gpa, in->initrd, in->initrd_bytes);
	memset(ram + X86_BOOT_CMDLINE_GPA, 0, cmd_len + 1);
	if (cmd_len)
		memcpy(ram + X86_BOOT_CMDLINE_GPA, in->cmdline, cmd_len);
	hv_info("boot",
		"op=bzimage_load protocol=%u.%02u load=0x%llx init_size=%u "
		"initrd=0x%llx+%llu cmdline_bytes=%zu",
		bz.version >> 8, bz.version & 0xff,
		(unsigned long long)e.load_gpa, bz.init_size,
		(unsigned long long)e.initrd_gpa,
		(unsigned long long)(in->initrd ? in->initrd_bytes : 0),
		cmd_len);
	*out = e;
	return 0;
}
