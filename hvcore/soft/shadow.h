/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_shadow: the soft MMU's shadow mode, the software model of KVM's
 * shadow MMU with EPT=N. Guest page tables in the x86-64 4-level format
 * (built by guest code in guest memory, HV_GPTE_* below) are translated on
 * demand into shadow page tables whose leaves point at host pages:
 *
 *  - one shadow page per (guest table gfn, level), found by a gfn hash;
 *    a non-leaf shadow PTE points at the child shadow page, which keeps
 *    the list of shadow PTEs pointing at it (KVM's parent_ptes); a shadow
 *    page left with no parent and not a root is zapped;
 *  - an rmap per gfn (hvcore/soft/rmap.h, width chosen at create) holds
 *    every leaf shadow PTE that maps the gfn. It is how every mapping of a
 *    gfn is found: write-protecting a gfn that becomes a guest page table,
 *    write-protecting for dirty logging (log start, clear-dirty-log),
 *    zapping a memslot's range;
 *  - guest page tables are write-protected: while a gfn is shadowed no
 *    leaf shadow PTE maps it writable, and a guest write to it is emulated
 *    (hv_soft_shadow_gpa_write, or a user store through the access path):
 *    the bytes land in guest memory and the shadow PTEs derived from the
 *    entries written are dropped (KVM's kvm_mmu_pte_write without the
 *    write-flooding heuristic);
 *  - dirty logging by write protection: a write fault on a gfn of a logged
 *    slot sets its bit in the memslot bitmap and makes the leaf writable;
 *    a read fault there maps it read-only.
 *
 * There is no software TLB: every access walks the shadow table (4 loads)
 * under the shadow lock, so a change is visible to the next access and no
 * flush protocol is needed. Guest huge pages (PS) are refused (-EINVAL);
 * every shadow leaf is 4 KiB. The guest kernel's own direct map is not
 * modelled: guest-kernel writes to guest-physical memory go through
 * hv_soft_shadow_gpa_write() by gpa.
 *
 * Locking: one mutex (KVM's mmu_lock held for write, as the shadow MMU
 * takes it) around every call; any thread. The memslot set is read inside
 * a read-side section per call; a memslot being removed must be zapped
 * (hv_soft_shadow_zap_gfns) after the set published the change.
 */
#ifndef HVCORE_SOFT_SHADOW_H
#define HVCORE_SOFT_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/memslots.h"
#include "hvcore/soft/rmap.h"
#include "hvcore/types.h"

/* Guest page-table entry bits (x86-64, 4-level, 4 KiB pages only). */
#define HV_GPTE_P (1ULL << 0)
#define HV_GPTE_RW (1ULL << 1)
#define HV_GPTE_US (1ULL << 2)
#define HV_GPTE_A (1ULL << 5)
#define HV_GPTE_D (1ULL << 6)
#define HV_GPTE_PS (1ULL << 7)
#define HV_GPTE_ADDR 0x000ffffffffff000ULL

/* Guest-visible outcome of an access (>= 0); errors are negative. */
enum hv_soft_shadow_pf {
	HV_SHADOW_OK = 0,
	HV_SHADOW_PF_NOT_PRESENT, /* the guest's #PF: not present */
	HV_SHADOW_PF_PROT,	  /* the guest's #PF: write to read-only */
};

/* Rmap-count buckets of the histogram: 0, 1, 2-3, ..., 512-1023, 1024+. */
#define HV_SOFT_SHADOW_HIST_BUCKETS 12

struct hv_soft_shadow_cfg {
	unsigned rmap_width;	/* one of HV_SOFT_RMAP_WIDTHS */
	enum hv_soft_rmap_layout rmap_layout;
	uint64_t max_gfn;	/* gfns mapped lie in [0, max_gfn) */
};

struct hv_soft_shadow_stats {
	uint64_t sps;		/* shadow pages now */
	uint64_t leaves;	/* present leaf shadow PTEs now */
	uint64_t faults;	/* accesses that took the slow path */
	uint64_t emulated;	/* guest writes to shadowed gfns emulated */
	uint64_t zapped_sps;	/* shadow pages zapped */
	uint64_t wp_sptes;	/* leaves write-protected through the rmap */
	uint64_t rmap_descs;	/* rmap descriptors in use (leaf + parent) */
	uint64_t rmap_peak_descs;
	size_t rmap_desc_size;
};

/* A translation as the shadow table holds it (no fault taken). */
struct hv_soft_shadow_xlate {
	bool present;
	bool writable;
	void *hva;	/* host page the leaf maps */
	uint64_t *spte; /* the leaf shadow PTE */
};

struct hv_soft_shadow;

/*
 * Empty shadow MMU over @slots (borrowed; outlives it). 0, -EINVAL (no
 * rmap instance of that width, max_gfn 0), -ENOMEM. *out untouched on
 * failure.
 */
int hv_soft_shadow_create(const struct hv_soft_shadow_cfg *cfg,
			  struct hv_memslots *slots,
			  struct hv_soft_shadow **out);
/* Frees every shadow page and descriptor. destroy(NULL) no-op. */
void hv_soft_shadow_destroy(struct hv_soft_shadow *sh);

/*
 * A guest access of @len bytes at @gva (within one page) in the address
 * space whose PML4 is at @cr3, copying to (@write) or from @buf. Faults
 * in the shadow entries it needs; the root shadow page of @cr3 is created
 * on first use and pinned until hv_soft_shadow_root_drop(). Returns
 * HV_SHADOW_OK, a guest page fault (enum hv_soft_shadow_pf; nothing
 * copied), -EINVAL (crosses a page, guest huge page), -EFAULT (a table or
 * the page outside memslots or max_gfn), -ENOMEM.
 */
int hv_soft_shadow_access(struct hv_soft_shadow *sh, gpa_t cr3, uint64_t gva,
			  bool write, void *buf, size_t len);

/* The address space of @cr3 is gone: unpin and zap its root. */
void hv_soft_shadow_root_drop(struct hv_soft_shadow *sh, gpa_t cr3);

/*
 * Guest-kernel write of @len bytes at @gpa (within one page), dirty-logged;
 * emulated when the gfn is a shadowed guest table. 0, -EINVAL, -EFAULT.
 */
int hv_soft_shadow_gpa_write(struct hv_soft_shadow *sh, gpa_t gpa,
			     const void *buf, size_t len);

/* Guest-kernel read of @len bytes at @gpa (within one page). 0, -EINVAL,
 * -EFAULT. */
int hv_soft_shadow_gpa_read(struct hv_soft_shadow *sh, gpa_t gpa, void *buf,
			    size_t len);

/*
 * Write-protect every leaf mapping a gfn of [@gfn, @gfn + @n) whose bit is
 * set in @mask (bit i = gfn + i; NULL = all), through the rmap: dirty-log
 * start and clear. Returns the number of leaves changed.
 */
uint64_t hv_soft_shadow_write_protect(struct hv_soft_shadow *sh, gfn_t gfn,
				      uint64_t n, const uint64_t *mask);

/* Drop every mapping of [@gfn, @gfn + @n) and every shadow page of a
 * guest table there (memslot removal). */
void hv_soft_shadow_zap_gfns(struct hv_soft_shadow *sh, gfn_t gfn,
			     uint64_t n);

/* The oracle's view: walk the shadow table of @cr3 for @gva, no fault. */
void hv_soft_shadow_translate(struct hv_soft_shadow *sh, gpa_t cr3,
			      uint64_t gva, struct hv_soft_shadow_xlate *x);

/* Every present leaf shadow PTE with the gfn it maps (from the shadow
 * pages, not from the rmap). */
void hv_soft_shadow_for_each_leaf(struct hv_soft_shadow *sh,
				  void (*fn)(uint64_t *spte, gfn_t gfn,
					     void *arg),
				  void *arg);
/* The rmap of @gfn. */
void hv_soft_shadow_rmap_for_each(struct hv_soft_shadow *sh, gfn_t gfn,
				  hv_soft_rmap_fn fn, void *arg);
unsigned hv_soft_shadow_rmap_count(struct hv_soft_shadow *sh, gfn_t gfn);
/* True while @gfn is a shadowed guest table (write-protected). */
bool hv_soft_shadow_gfn_tracked(struct hv_soft_shadow *sh, gfn_t gfn);

/*
 * Rmap-count histogram over every gfn of every memslot, in the buckets of
 * KVM's mmu_rmaps_stat (0, 1, 2-3, 4-7, ... 512-1023; then 1024+). One
 * row: shadow leaves are 4 KiB only.
 */
void hv_soft_shadow_rmap_hist(struct hv_soft_shadow *sh,
			      uint64_t out[HV_SOFT_SHADOW_HIST_BUCKETS]);

void hv_soft_shadow_get_stats(struct hv_soft_shadow *sh,
			      struct hv_soft_shadow_stats *st);

#endif
