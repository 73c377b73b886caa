// SPDX-License-Identifier: MIT
/*
 * Linux through its PVH entry (pvh_linux.h).
 */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "arch/x86/boot/pvh_linux.h"
#include "arch/x86/pvh.h"
#include "hvcore/log.h"

/* The start info, module 0 and the memory map share the zero page's
 * 4 KiB (nothing else uses it on this path). */
#define PVH_INFO_BYTES 4096u

bool x86_is_elf(const void *file, uint64_t size)
{
	return size >= SELFMAG && !memcmp(file, ELFMAG, SELFMAG);
}

static int write_start_info(uint8_t *ram, const struct hv_ram_layout *l,
			    const struct x86_linux_boot *in,
			    const struct x86_pvh_linux_entry *e)
{
	struct x86_e820 map[X86_BP_E820_MAX];
	struct x86_hvm_start_info si = {0};
	struct x86_hvm_modlist_entry mod = {0};
	uint64_t at = X86_BOOT_ZERO_PAGE_GPA, mm_at;
	int n;

	n = x86_e820_build(l, map, X86_BP_E820_MAX);
	if (n < 0)
		return n;
	mm_at = at + sizeof(si) + sizeof(mod);
	if (sizeof(si) + sizeof(mod) +
		    (uint64_t)n * sizeof(struct x86_hvm_memmap_entry) >
	    PVH_INFO_BYTES)
		return -E2BIG;
	si.magic = X86_HVM_START_MAGIC;
	si.version = 1;
	si.cmdline_paddr = X86_BOOT_CMDLINE_GPA;
	if (in->initrd) {
		si.nr_modules = 1;
		si.modlist_paddr = at + sizeof(si);
		mod.paddr = e->initrd_gpa;
		mod.size = in->initrd_bytes;
	}
	si.memmap_paddr = mm_at;
	si.memmap_entries = (uint32_t)n;
	memset(ram + at, 0, PVH_INFO_BYTES);
	memcpy(ram + at, &si, sizeof(si));
	memcpy(ram + at + sizeof(si), &mod, sizeof(mod));
	for (int i = 0; i < n; i++) {
		struct x86_hvm_memmap_entry m = {
			.addr = map[i].addr,
			.size = map[i].size,
			.type = map[i].type,
		};

		memcpy(ram + mm_at + (uint64_t)i * sizeof(m), &m, sizeof(m));
	}
	return 0;
}

int x86_pvh_linux_load(uint8_t *ram, const struct hv_ram_layout *l,
		       const struct x86_linux_boot *in,
		       struct x86_pvh_linux_entry *out)
{
	/* The initrd's only bound is 4 GiB (the start info holds 64-bit
	 * addresses; the kernel maps it early below 4 GiB). */
	const struct x86_bzimage no_hdr = {.initrd_addr_max = 0xffffffffu};
	struct x86_pvh_linux_entry e = {0};
	struct x86_pvh_image img;
	size_t cmd_len = in->cmdline ? strlen(in->cmdline) : 0;
	int ret;

	if (cmd_len >= X86_BOOT_CMDLINE_MAX) {
		hv_err("boot",
		       "op=pvh_load cmdline_bytes=%zu max=%llu err=%d "
		       "reason=command_line_too_long",
		       cmd_len, X86_BOOT_CMDLINE_MAX - 1, -E2BIG);
		return -E2BIG;
	}
	ret = x86_pvh_load_buf(in->kernel, in->kernel_bytes, ram,
			       x86_low_ram_end(l), &img);
	if (ret) {
		hv_err("boot", "op=pvh_load err=%d reason=not_a_pvh_vmlinux",
		       ret);
		return ret;
	}
	/* Our low tables (start info, command line, MP table) must stay
	 * clear of the kernel: Linux links it at 16 MiB. */
	if (img.lowest < X86_BOOT_HIGH_GPA) {
		hv_err("boot",
		       "op=pvh_load lowest=0x%llx err=%d "
		       "reason=segment_below_1MiB",
		       (unsigned long long)img.lowest, -ENOEXEC);
		return -ENOEXEC;
	}
	e.entry32 = img.entry32;
	e.start_info = X86_BOOT_ZERO_PAGE_GPA;
	e.kernel_end = img.end;
	if (in->initrd) {
		ret = x86_initrd_place(&no_hdr, l, e.kernel_end,
				       in->initrd_bytes, &e.initrd_gpa);
		if (ret)
			return ret;
		memcpy(ram + e.initrd_gpa, in->initrd, in->initrd_bytes);
	}
	memset(ram + X86_BOOT_CMDLINE_GPA, 0, cmd_len + 1);
	if (cmd_len)
		memcpy(ram + X86_BOOT_CMDLINE_GPA, in->cmdline, cmd_len);
	ret = write_start_info(ram, l, in, &e);
	if (ret)
		return ret;
	hv_info("boot",
		"op=pvh_load entry32=0x%x kernel=0x%llx-0x%llx "
		"initrd=0x%llx+%llu cmdline_bytes=%zu",
		e.entry32, (unsigned long long)img.lowest,
		(unsigned long long)img.end, (unsigned long long)e.initrd_gpa,
		(unsigned long long)(in->initrd ? in->initrd_bytes : 0),
		cmd_len);
	*out = e;
	return 0;
}
