/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_fork: a fork-like guest workload over the shadow MMU
 * (hvcore/soft/shadow.h), the soft counterpart of the kernel's rmap_fork
 * test: what makes one guest page mapped by hundreds of shadow PTEs.
 *
 * It plays the guest kernel: it owns a page allocator over a gfn range of
 * guest memory and builds x86-64 page tables there. Address space 0, the
 * parent, maps data_pages pages at HV_SOFT_FORK_DATA_GVA and stamps each
 * (struct hv_wl_stamp, vcpu 0). A spawn clones it as Linux's fork does:
 * new tables whose entries map the parent's pages read-only, the parent's
 * own entries write-protected too (copy-on-write for both). A child's
 * touch reads every page through the shadow MMU (creating a shadow PTE and
 * an rmap entry per page) and writes every cow_every-th one: the guest
 * fault makes the guest kernel copy the page and point the child's entry
 * at the copy. An exit clears the child's entries one by one (each an
 * emulated write that removes one shadow PTE from its gfn's rmap: the rmap
 * removal path), then its table entries (orphaned shadow pages zapped),
 * frees its pages and drops its root.
 *
 * Every table write goes through hv_soft_shadow_gpa_write(), so the
 * shadow MMU sees exactly what a guest would make it see.
 *
 * Threads: one caller at a time.
 */
#ifndef HVCORE_SOFT_SHADOW_FORK_H
#define HVCORE_SOFT_SHADOW_FORK_H

#include <stdint.h>

#include "hvcore/soft/shadow.h"

#define HV_SOFT_FORK_DATA_GVA 0x40000000ULL /* 1 GiB */
#define HV_SOFT_FORK_MAX_DATA_PAGES (512u * 512u)

struct hv_soft_fork_cfg {
	uint64_t data_pages;   /* parent's pages, 1 .. MAX_DATA_PAGES */
	unsigned max_children;
	unsigned cow_every;    /* a child writes every n-th page; 0: none */
};

struct hv_soft_fork;

/*
 * A workload over @sh using guest pages [@first, @end) for its tables and
 * data (borrowed @sh outlives it). 0, -EINVAL, -ENOMEM. *out untouched
 * on failure.
 */
int hv_soft_fork_create(struct hv_soft_shadow *sh, gfn_t first, gfn_t end,
			const struct hv_soft_fork_cfg *cfg,
			struct hv_soft_fork **out);
/* Frees the host-side bookkeeping only (guest memory is the caller's). */
void hv_soft_fork_destroy(struct hv_soft_fork *f);

/* Build the parent and stamp its pages. 0, -ENOSPC (guest pages), or an
 * error of the shadow MMU. */
int hv_soft_fork_parent_init(struct hv_soft_fork *f);
/* Clone the parent; *@id is the child (1 .. max_children). 0, -ENOSPC. */
int hv_soft_fork_spawn(struct hv_soft_fork *f, unsigned *id);
/* The child reads every page, copy-on-writes every cow_every-th. */
int hv_soft_fork_touch(struct hv_soft_fork *f, unsigned id);
/* Tear the child down (see above). */
int hv_soft_fork_exit(struct hv_soft_fork *f, unsigned id);

/* Address space @id (0 parent): its PML4's gpa, 0 when not live. */
gpa_t hv_soft_fork_cr3(const struct hv_soft_fork *f, unsigned id);
uint64_t hv_soft_fork_data_pages(const struct hv_soft_fork *f);

#endif
