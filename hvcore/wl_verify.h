/* SPDX-License-Identifier: MIT */
/*
 * hv_wl_verify: the page-stamp oracle. Given a copy (or the frozen
 * original) of a VM's guest RAM, it says whether every page of every
 * workload region holds what the workload of hvcore/workload.h can have
 * written there, and nothing else.
 *
 * The params page (HV_WL_PARAMS_GPA) and the status lines
 * (HV_WL_STATUS_GPA) are read from the RAM itself, so the check needs
 * nothing but the memory: after a migration they arrived with the pages.
 *
 * Rules, per region page of a non-idle vCPU v with published seq S:
 *  - a page that is zero through all its 4 KiB was never written: fine
 *    (for the sweep only while the sweep cannot have reached it yet);
 *  - otherwise its first bytes are a struct hv_wl_stamp with the stamp
 *    magic, vcpu == v, the region's content kind and 1 <= seq <=
 *    S + HV_WL_BATCH (a vCPU paused mid-batch has stamped up to a batch
 *    beyond what it published), and the whole page equals
 *    hv_wl_fill_page() of that stamp (one flipped byte anywhere shows);
 *  - sweep with 100% writes: page p can only hold a seq with
 *    (seq - 1) % region_pages == p, and it must be the newest such seq
 *    the vCPU can have written: seq > S - region_pages. An older one is
 *    a dirty page the copy lost ("stale").
 *  - prefill (hvcore/workload.h): once S >= region_pages no page of the
 *    region may be zero ("stale": the prefill wrote it); an idle vCPU
 *    with a prefill is checked as a sweep that stopped after one pass.
 * Per vCPU with S > 0: the write S itself must be in memory ("lost"
 * otherwise: the guest counts a write only once it was made).
 *
 * The memory must not change during the call: pause the VM first.
 */
#ifndef HVCORE_WL_VERIFY_H
#define HVCORE_WL_VERIFY_H

#include "hvcore/types.h"

/* Bad gfns reported by number (the first ones, in gfn order). */
#define HV_WL_VERIFY_BAD_MAX 8u

struct hv_wl_verify {
	uint64_t pages;	      /* region pages checked */
	uint64_t written;     /* of them, pages holding a stamp */
	uint64_t bad;	      /* pages failing any rule */
	uint64_t bad_stamp;   /* not zero and no valid stamp of this vCPU */
	uint64_t bad_content; /* valid stamp, content differs */
	uint64_t stale;	      /* sweep: older stamp than the order implies */
	uint32_t lost_vcpus;  /* vCPUs whose last published write is missing */
	uint32_t nr_bad_gfns;
	gfn_t bad_gfns[HV_WL_VERIFY_BAD_MAX];
};

/*
 * Check the @ram_bytes of guest RAM at @ram (in RAM-offset order: the
 * regions are found through the RAM layout of the params page,
 * hvcore/ram_layout.h) and fill @out. Returns 0 when the check ran (its verdict is in @out: clean when
 * out->bad == 0 and out->lost_vcpus == 0), -EINVAL when the params page
 * is not a valid workload or a region lies outside @ram_bytes (nothing to
 * check then; @out zeroed). Pure: reads @ram only, any thread.
 */
int hv_wl_verify(const uint8_t *ram, uint64_t ram_bytes,
		 struct hv_wl_verify *out);

/*
 * The same, skipping what @fd (the guest memfd of @ram, same offsets; -1:
 * none) holds no data for: a hole reads as zeros, and reading it through
 * the mapping would allocate a page for each, which for a large sparse VM
 * is most of its RAM. Pages in holes are judged as zero pages.
 */
int hv_wl_verify_fd(const uint8_t *ram, uint64_t ram_bytes, int fd,
		    struct hv_wl_verify *out);

/*
 * A data map of @npages pages from RAM offset @off into @bits (one bit a
 * page, set = may hold data, clear = a hole that reads as zeros): 0, or a
 * negative errno when it cannot tell (the pages are then read).
 * hv_guest_mem_data_map() has this shape.
 */
typedef int (*hv_wl_data_map_fn)(void *ctx, uint64_t off, uint64_t npages,
				 uint64_t *bits);
/*
 * The same, learning the holes from @map (whatever the backing: a memfd
 * hole or anonymous memory never touched), which it calls with @ctx a
 * chunk at a time. -ENOMEM besides the errors above.
 */
int hv_wl_verify_map(const uint8_t *ram, uint64_t ram_bytes,
		     hv_wl_data_map_fn map, void *ctx, struct hv_wl_verify *out);

/* True when @r found nothing wrong. */
static inline int hv_wl_verify_clean(const struct hv_wl_verify *r)
{
	return r->bad == 0 && r->lost_vcpus == 0;
}

#endif
