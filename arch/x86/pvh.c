// SPDX-License-Identifier: MIT
/*
 * PVH ELF loader (see pvh.h). Validate everything first, then copy.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/x86/guest/ucall.h"
#include "arch/x86/pvh.h"
#include "hvcore/log.h"

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define PVH_MAX_IMAGE (64u << 20)
static bool in_file(size_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

/* Walk the notes of one PT_NOTE segment. */
static int scan_notes(const uint8_t *p, uint64_t n, struct x86_pvh_image *img)
{
	uint64_t off = 0;

	while (off + sizeof(Elf64_Nhdr) <= n) {
		const Elf64_Nhdr *nh = (const void *)(p + off);
		uint64_t name_off = off + sizeof(*nh);
		uint64_t desc_off =
			name_off + HV_ALIGN_UP((uint64_t)nh->n_namesz, 4);
		uint64_t next =
			desc_off + HV_ALIGN_UP((uint64_t)nh->n_descsz, 4);
		const char *name = (const char *)(p + name_off);

		if (next > n)
			return -ENOEXEC;
		if (nh->n_namesz == 4 && !memcmp(name, "Xen", 4) &&
		    nh->n_type == XEN_ELFNOTE_PHYS32_ENTRY && nh->n_descsz >= 4)
			memcpy(&img->entry32, p + desc_off, 4);
		if (nh->n_namesz == sizeof(HV_GUEST_NOTE_NAME) &&
		    !memcmp(name, HV_GUEST_NOTE_NAME,
			    sizeof(HV_GUEST_NOTE_NAME)) &&
		    nh->n_type == HV_GUEST_NOTE_AP_ENTRY && nh->n_descsz == 8)
			memcpy(&img->ap_entry64, p + desc_off, 8);
		off = next;
	}
	return 0;
}

int x86_pvh_load_buf(const uint8_t *elf, size_t len, uint8_t *ram,
		     uint64_t ram_bytes, struct x86_pvh_image *out)
{
	const Elf64_Ehdr *eh = (const void *)elf;
	struct x86_pvh_image img = {.lowest = UINT64_MAX};
	const Elf64_Phdr *ph;
	int ret;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(*ph) || eh->e_phnum == 0 ||
	    eh->e_phnum > 64 ||
	    !in_file(len, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph)))
		return -ENOEXEC;
	ph = (const void *)(elf + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_NOTE) {
			if (!in_file(len, ph[i].p_offset, ph[i].p_filesz))
				return -ENOEXEC;
			ret = scan_notes(elf + ph[i].p_offset, ph[i].p_filesz,
					 &img);
			if (ret)
				return ret;
		}
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_filesz > ph[i].p_memsz ||
		    !in_file(len, ph[i].p_offset, ph[i].p_filesz) ||
		    ph[i].p_paddr >= ram_bytes ||
		    ph[i].p_memsz > ram_bytes - ph[i].p_paddr)
			return -ENOEXEC;
		img.lowest = HV_MIN(img.lowest, ph[i].p_paddr);
		img.end = HV_MAX(img.end, ph[i].p_paddr + ph[i].p_memsz);
	}
	if (!img.entry32 || img.end == 0 || img.entry32 < img.lowest ||
	    img.entry32 >= img.end) {
		hv_err("x86_pvh", "op=load err=%d reason=no_pvh_entry",
		       -ENOEXEC);
		return -ENOEXEC;
	}
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		memcpy(ram + ph[i].p_paddr, elf + ph[i].p_offset,
		       ph[i].p_filesz);
		memset(ram + ph[i].p_paddr + ph[i].p_filesz, 0,
		       ph[i].p_memsz - ph[i].p_filesz);
	}
	*out = img;
	return 0;
}

int x86_pvh_load(const char *path, uint8_t *ram, uint64_t ram_bytes,
		 struct x86_pvh_image *out)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		hv_err("x86_pvh", "op=open path=%s err=%d", path, ret);
		return ret;
	}
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    st.st_size > PVH_MAX_IMAGE) {
		close(fd);
		return -ENOEXEC;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)n;
	}
	ret = x86_pvh_load_buf(buf, got, ram, ram_bytes, out);
out:
	free(buf);
	close(fd);
	return ret;
}

int x86_pvh_write_start_info(uint8_t *ram, uint64_t ram_bytes, gpa_t gpa)
{
	struct x86_hvm_start_info si = {0};
	struct x86_hvm_memmap_entry mm = {0};
	uint64_t need = sizeof(si) + sizeof(mm);

	if (gpa >= ram_bytes || need > ram_bytes - gpa)
		return -EINVAL;
	si.magic = X86_HVM_START_MAGIC;
	si.version = 1;
	si.memmap_paddr = gpa + sizeof(si);
	si.memmap_entries = 1;
	mm.addr = 0;
	mm.size = ram_bytes;
	mm.type = 1;
	memcpy(ram + gpa, &si, sizeof(si));
	memcpy(ram + gpa + sizeof(si), &mm, sizeof(mm));
	return 0;
}
