/* SPDX-License-Identifier: MIT */
/*
 * hv_ram_layout: where guest RAM sits in guest-physical space.
 *
 * Host side, guest RAM is one contiguous mapping (and memfd) of ram_bytes;
 * its byte offset there is the "RAM offset" (= the memfd file offset).
 * Guest side, it is laid out as QEMU and Cloud Hypervisor do on x86: RAM
 * offsets [0, hole_start) at the same gpas, the MMIO hole
 * [hole_start, hole_end) (LAPIC, IOAPIC, device MMIO) left out, and the
 * rest of RAM from gpa hole_end up:
 *
 *   gpa  0 ........ hole_start ..... hole_end ................ top
 *        | RAM 0..  |   MMIO hole    | RAM hole_start..ram_bytes |
 *
 * A VM of at most hole_start bytes has no RAM above the hole. A layout of
 * all zeros except ram_bytes (hole_start == hole_end == 0) is flat: gpa ==
 * RAM offset everywhere; a layout with ram_bytes == 0 is "unknown" and
 * also maps flat, without bounds (hand-built workload params of tests).
 *
 * Pure and freestanding (<stdint.h> only): the x86 guest image, the soft
 * accelerator, the migration library and the daemon all use it.
 */
#ifndef HVCORE_RAM_LAYOUT_H
#define HVCORE_RAM_LAYOUT_H

#include <stdint.h>

/* Where hvcore VMs put the hole: [3 GiB, 4 GiB), as QEMU's pc and
 * microvm machines and Cloud Hypervisor do. */
#define HV_RAM_HOLE_START 0xc0000000ULL
#define HV_RAM_HOLE_END 0x100000000ULL
/* What the mapping functions return for a gpa outside RAM. */
#define HV_RAM_BAD ((uint64_t)-1)

struct hv_ram_layout {
	uint64_t ram_bytes;  /* 0: unknown (flat, unbounded) */
	uint64_t hole_start; /* gpa; == hole_end: no hole */
	uint64_t hole_end;   /* gpa, >= hole_start */
};

/* The layout hvcore gives a VM of @ram_bytes. */
static inline struct hv_ram_layout hv_ram_layout_std(uint64_t ram_bytes)
{
	struct hv_ram_layout l = { ram_bytes, HV_RAM_HOLE_START,
				   HV_RAM_HOLE_END };

	return l;
}

/* RAM offset of @gpa, or HV_RAM_BAD when @gpa is in the hole or above
 * RAM. */
static inline uint64_t hv_ram_gpa_to_off(const struct hv_ram_layout *l,
					 uint64_t gpa)
{
	uint64_t off;

	if (gpa < l->hole_start)
		off = gpa;
	else if (gpa < l->hole_end)
		return HV_RAM_BAD;
	else
		off = gpa - (l->hole_end - l->hole_start);
	if (l->ram_bytes && off >= l->ram_bytes)
		return HV_RAM_BAD;
	return off;
}

/* Gpa of RAM offset @off (not checked against ram_bytes). */
static inline uint64_t hv_ram_off_to_gpa(const struct hv_ram_layout *l,
					 uint64_t off)
{
	return off < l->hole_start ? off : off + (l->hole_end - l->hole_start);
}

/* One past the highest RAM gpa (what the guest must map). */
static inline uint64_t hv_ram_top_gpa(const struct hv_ram_layout *l)
{
	return l->ram_bytes ? hv_ram_off_to_gpa(l, l->ram_bytes - 1) + 1 : 0;
}

/*
 * RAM offset of [@gpa, @gpa + @len) when the whole range is RAM in one
 * piece (it does not cross the hole or leave RAM), else HV_RAM_BAD.
 * @len == 0 is a valid empty range at any RAM gpa.
 */
static inline uint64_t hv_ram_range_to_off(const struct hv_ram_layout *l,
					   uint64_t gpa, uint64_t len)
{
	uint64_t off = hv_ram_gpa_to_off(l, gpa);

	if (off == HV_RAM_BAD || !len)
		return off;
	if (hv_ram_gpa_to_off(l, gpa + len - 1) != off + len - 1 ||
	    gpa + len - 1 < gpa)
		return HV_RAM_BAD;
	return off;
}

#endif
