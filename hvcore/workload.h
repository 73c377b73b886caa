/* SPDX-License-Identifier: MIT */
/*
 * The parametric dirtying workload (docs/architecture.md) and its ABI.
 *
 * One implementation, hvcore/workload.c, is compiled twice: freestanding
 * into the x86 guest image (arch/x86/guest), where memory is
 * identity-mapped, and into the host for the soft accelerator, where every
 * page access goes through the software MMU. Both reach memory and time
 * only through struct hv_wl_env, so the two run the same code.
 *
 * Guest memory layout shared by host and guest (guest-physical):
 *   HV_WL_PARAMS_GPA  struct hv_wl_params      (host writes, guest reads)
 *   HV_WL_STATUS_GPA  struct hv_wl_status[n]   (guest writes, host reads)
 * and each vCPU's region: region_pages pages of RAM, consecutive in RAM
 * offsets (hvcore/ram_layout.h) from the RAM offset of region_gpa. Page i
 * of the region is at gpa hv_ram_off_to_gpa(off(region_gpa) + i * 4 KiB):
 * a region may span the MMIO hole, its pages below the hole and the rest
 * from 4 GiB up. The RAM layout travels in the params page (ram); a
 * layout with ram_bytes == 0 maps flat (gpa == RAM offset).
 *
 * Every page write stamps the first 16 bytes of the page with
 * struct hv_wl_stamp: (vcpu, seq), seq being that vCPU's write counter,
 * starting at 1 and strictly increasing. A page never written holds zero.
 * This is what the dirty-log and migration oracles check page by page.
 *
 * This header must stay freestanding: <stdint.h> only.
 */
#ifndef HVCORE_WORKLOAD_H
#define HVCORE_WORKLOAD_H

#include <stdint.h>

#include "hvcore/ram_layout.h"

#define HV_WL_MAGIC 0x4c57564du       /* "MVWL" */
#define HV_WL_STAMP_MAGIC 0x504d5453u /* "STMP" */
/* 2: the RAM layout in the params page, regions follow RAM offsets, and
 * the vCPU params grew prefill. */
#define HV_WL_VERSION 2u
#define HV_WL_MAX_VCPUS 64u
/*
 * The status line is published once per batch of this many accesses (and
 * while pacing), so a vCPU stopped mid-batch (a KVM pause interrupts any
 * instruction) may have stamped up to this many pages beyond status.seq.
 */
#define HV_WL_BATCH 64u

/* Fixed guest-physical pages (below the guest image at 1 MiB). */
#define HV_WL_PARAMS_GPA 0x10000ULL
#define HV_WL_STATUS_GPA 0x12000ULL /* 64 vCPUs x 64 bytes = 1 page */

enum hv_wl_pattern {
	HV_WL_PATTERN_INVALID = 0,
	HV_WL_PATTERN_SWEEP,  /* every page of the region, in order */
	HV_WL_PATTERN_RANDOM, /* uniform random pages */
	HV_WL_PATTERN_HOTSET, /* hot_pct of pages take hot_share_pct of writes */
	HV_WL_PATTERN_IDLE,   /* no memory accesses; heartbeats only */
	HV_WL_PATTERN_COUNT,
};

enum hv_wl_content {
	HV_WL_CONTENT_INVALID = 0,
	HV_WL_CONTENT_STAMP,  /* stamp only, rest of the page untouched/zero */
	HV_WL_CONTENT_TEXT,   /* text-like, about 3:1 under zstd level 1 */
	HV_WL_CONTENT_RANDOM, /* incompressible */
	HV_WL_CONTENT_COUNT,
};

/* Per-vCPU parameters. The host may change rate_pages, throttle_pct and
 * stop while the guest runs; the guest rereads them every batch. */
struct hv_wl_vcpu_params {
	uint32_t pattern;	/* enum hv_wl_pattern */
	uint32_t content;	/* enum hv_wl_content */
	uint64_t region_gpa;	/* page-aligned, RAM (not in the hole) */
	uint64_t region_pages;	/* RAM pages from there, skipping the hole */
	uint64_t rate_pages;	/* target page writes per second; 0 = flat out */
	uint32_t write_pct;	/* 0..100: share of accesses that write */
	uint32_t hot_pct;	/* hotset: percent of pages that are hot */
	uint32_t hot_share_pct; /* hotset: percent of accesses to hot pages */
	uint32_t heartbeat_us;	/* 0: no heartbeats */
	uint64_t seed;
	uint64_t max_writes;	/* stop after this many writes; 0 = never */
	uint32_t throttle_pct;	/* 0..99: share of time the vCPU must idle */
	uint32_t stop;		/* non-zero: finish the batch and return */
	/*
	 * Non-zero: before the pattern starts, write every page of the
	 * region once, in order, flat out (page i gets seq i + 1), so that
	 * the region is fully populated like a real VM's memory. Valid with
	 * every pattern, idle included (then the region must be valid).
	 * Done once status.seq >= region_pages (hv_wl_prefilled()).
	 */
	uint32_t prefill;
	uint32_t reserved;
};

struct hv_wl_params {
	uint32_t magic;	  /* HV_WL_MAGIC */
	uint32_t version; /* HV_WL_VERSION */
	uint32_t nr_vcpus;
	uint32_t reserved;
	uint64_t tsc_khz; /* guest TSC frequency, for pacing */
	struct hv_ram_layout ram; /* where RAM is (regions, guest paging) */
	struct hv_wl_vcpu_params vcpu[HV_WL_MAX_VCPUS];
};

/* Written by the guest only; one cache line per vCPU. */
struct hv_wl_status {
	uint64_t seq;		/* writes done (= last stamp's seq) */
	uint64_t reads;		/* reads done */
	uint64_t passes;	/* completed sweeps of the region (a prefill
				 * counts as one) */
	uint64_t heartbeats;	/* heartbeats sent */
	uint64_t last_tsc;	/* guest TSC at the last batch */
	uint64_t max_gap_tsc;	/* largest gap between batches seen */
	uint32_t running;	/* 1 while inside hv_wl_run() */
	uint32_t vcpu;
	uint64_t throttle_owed; /* idle ticks still owed to throttle_pct */
};

_Static_assert(sizeof(struct hv_wl_status) == 64, "one line per vCPU");
_Static_assert(sizeof(struct hv_wl_params) <= 8192, "two pages at most");

struct hv_wl_stamp {
	uint32_t magic; /* HV_WL_STAMP_MAGIC */
	uint16_t vcpu;
	uint16_t content; /* enum hv_wl_content */
	uint64_t seq;	  /* 1, 2, 3, ... per vCPU */
};

/*
 * What the workload may do, supplied by whoever runs it.
 *  page_for_write: host/guest pointer to the 4 KiB page at @gpa, ready to be
 *	written (the soft MMU translates, faults and logs dirtiness here);
 *  page_for_read:  the same for a read;
 *  now_tsc:        a monotonic counter ticking at params->tsc_khz kHz;
 *  heartbeat:      report liveness to the host (rare: every heartbeat_us);
 *  wait_until:     sleep until now_tsc() reaches @tsc_deadline, or less
 *                  (a kick, a pause or stop request may end it early; the
 *                  workload checks the time and loops). The workload never
 *                  asks for more than HV_WL_MAX_SLEEP_US at once, so that
 *                  it sees the host's params, stop and throttle changes
 *                  that soon, nor for less than HV_WL_MIN_SLEEP_US;
 *  relax:          called while pacing or throttled when wait_until is
 *                  NULL (a pause instruction, or a yield): a spin.
 * Any hook may be NULL except the page accessors and now_tsc.
 */
struct hv_wl_env {
	void *ctx;
	uint8_t *(*page_for_write)(void *ctx, uint64_t gpa);
	const uint8_t *(*page_for_read)(void *ctx, uint64_t gpa);
	uint64_t (*now_tsc)(void *ctx);
	void (*heartbeat)(void *ctx, const struct hv_wl_status *st);
	void (*relax)(void *ctx);
	void (*wait_until)(void *ctx, uint64_t tsc_deadline);
	/* NULL, or where the host keeps between two runs of this vCPU the
	 * writes its pacing still owed when a run returned, so that the
	 * next run catches up (capped like any pacing debt). */
	uint64_t *pace_owed;
};

/*
 * Bounds of one wait_until() call. A wait shorter than MIN is stretched to
 * it: pacing follows an absolute schedule, so the writes after a longer
 * sleep catch up without waiting (a short burst), and a vCPU paced at a
 * high rate sleeps every ~MIN us instead of spinning between writes (a
 * sleep and its wake-up cost a few us of CPU, the spin all of it). MAX
 * bounds how late the workload notices the host's changes to its params.
 */
#define HV_WL_MIN_SLEEP_US 500u
#define HV_WL_MAX_SLEEP_US 1000u

/*
 * Run vCPU @vcpu's workload until params->vcpu[vcpu].stop becomes non-zero
 * or max_writes is reached. @p and @st point into guest memory (volatile
 * reads of the host-changeable fields). Returns 0, or -22 (EINVAL) when
 * the parameters are invalid (no page is touched then).
 */
int hv_wl_run(const volatile struct hv_wl_params *p,
	      volatile struct hv_wl_status *st, uint32_t vcpu,
	      const struct hv_wl_env *env);

/* Validate one vCPU's parameters (against params->ram when it names the
 * RAM size): 0 or -22 (EINVAL). */
int hv_wl_check(const struct hv_wl_params *p, uint32_t vcpu);

/*
 * True when vCPU @vcpu's prefill (if it asked for one) is complete: the
 * prefill is the vCPU's first region_pages writes, so it is done exactly
 * when its published seq reached region_pages.
 */
static inline int hv_wl_prefilled(const volatile struct hv_wl_vcpu_params *v,
				  const volatile struct hv_wl_status *st)
{
	return !v->prefill || st->seq >= v->region_pages;
}

/* Fill @page (4 KiB) as the workload would for (vcpu, seq, content). */
void hv_wl_fill_page(uint8_t *page, uint16_t vcpu, uint64_t seq,
		     uint32_t content);

/*
 * RAM offset of vCPU @w's region start under @ram, or HV_RAM_BAD when the
 * region does not lie in RAM (start in the hole, end past ram_bytes).
 */
uint64_t hv_wl_region_off(const struct hv_ram_layout *ram,
			  const struct hv_wl_vcpu_params *w);

#endif
