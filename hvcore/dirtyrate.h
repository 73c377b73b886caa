/* SPDX-License-Identifier: MIT */
/*
 * hv_dirtyrate: the dirty-rate monitor of one running VM
 * (docs/kvm-dirty-tracking.md, "The dirty-rate monitor"). It knows nothing of the network: the daemon reads its
 * snapshots and publishes them.
 *
 * Source of truth: the VM's own dirty log. The monitor starts dirty
 * logging on the VM (the accelerator's best mode unless told otherwise)
 * and, from a thread of its own, every cfg.interval_ms:
 *   hv_vm_dirty_harvest()          (kvm ring/bitmap, soft PML/WP -> bitmaps)
 *   hv_vm_dirty_fetch_clear()      per sampled 2 MiB block of every slot
 * and counts the pages. Those counts give pages/s and bytes/s over the 1 s,
 * 10 s and 60 s windows. A per-page 64-bit history (bit i = dirtied in the
 * i-th last complete second) gives the working set (distinct pages over
 * each window) and the hot/cold histogram: how many pages were dirtied in
 * exactly k of the last HV_DR_HIST_N seconds.
 *
 * Sampling (cfg.sample_shift = s): only one 2 MiB block in 2^s is fetched
 * and re-armed; the other blocks, once written, stay writable and cost the
 * guest nothing more. Counts are scaled by 2^s. s = 0 is exact; larger s
 * divides the write-fault cost the guest pays by 2^s, at the price of
 * sampling noise for workloads that touch few blocks per window.
 *
 * Per-vCPU rates: where the dirty mode attributes pages to vCPUs (KVM's
 * dirty ring, the soft accelerator's PML and write-protection faults),
 * each vCPU's rate is what its own log reported (hv_vm_vcpu_dirty_logged
 * deltas) -- measured, "free with the ring". The bitmap mode cannot tell
 * vCPUs apart: there the VM's measured rate is split between vCPUs in
 * proportion to the guest's own write counters (hv_vm_wl_status seq
 * deltas), and the snapshot says so (vcpu_split_estimated). The same
 * counters give guest_pages_per_s, the guest's claim, used only as an
 * accuracy reference, never as a dirty source.
 *
 * Exclusive with every other harvester: a running migration harvests and
 * clears the same bitmaps, so the owner must destroy the monitor before a
 * migration starts (the daemon does, and reports the migration's own
 * dirty-rate measurement meanwhile) and may create a new one afterwards.
 *
 * Threads: create/destroy on the VM's control thread (they start and stop
 * dirty logging); the sampler is the monitor's own thread; get() from any
 * thread (a mutex guards the snapshot).
 */
#ifndef HVCORE_DIRTYRATE_H
#define HVCORE_DIRTYRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/accel.h"
#include "hvcore/workload.h"

struct hv_vm;
struct hv_dirtyrate;

#define HV_DR_INTERVAL_MS_DEFAULT 200u
#define HV_DR_INTERVAL_MS_MIN 20u
#define HV_DR_INTERVAL_MS_MAX 1000u
#define HV_DR_SHIFT_MAX 6u
#define HV_DR_BLOCK_PAGES 512u /* the sampling unit: 2 MiB */
#define HV_DR_HIST_N 10u       /* hot/cold over the last 10 seconds */

enum hv_dr_window { HV_DR_1S, HV_DR_10S, HV_DR_60S, HV_DR_NR_WINDOWS };

struct hv_dirtyrate_cfg {
	uint32_t interval_ms;	 /* 0 = default; MIN..MAX */
	uint32_t sample_shift;	 /* 0..HV_DR_SHIFT_MAX */
	enum hv_dirty_mode mode; /* 0 = the accelerator's best */
};

struct hv_dr_window_stats {
	uint32_t seconds;   /* 1, 10, 60 */
	double covered_s;   /* time the data covers (< seconds early) */
	double pages_per_s; /* measured, scaled by 2^shift */
	double bytes_per_s;
	double guest_pages_per_s; /* the guest's own claim (reference) */
	/* Distinct pages dirtied in the last @seconds complete seconds
	 * (scaled); 0 until the first second completed. */
	uint64_t working_set;
};

struct hv_dirtyrate_snap {
	uint64_t time_ns; /* CLOCK_MONOTONIC of the newest sample */
	uint64_t samples;
	enum hv_dirty_mode mode;
	uint32_t interval_ms;
	uint32_t sample_shift;
	uint64_t mem_pages; /* guest RAM pages */
	uint32_t nr_vcpus;
	struct hv_dr_window_stats win[HV_DR_NR_WINDOWS];
	/* Per vCPU, pages/s per window: the measured rate split by the
	 * guest's write counters (estimated, see above). */
	double vcpu_pages_per_s[HV_WL_MAX_VCPUS][HV_DR_NR_WINDOWS];
	bool vcpu_split_estimated;
	/* hist[k], 1 <= k <= HV_DR_HIST_N: pages (scaled) dirtied in exactly
	 * k of the last @hist_seconds complete seconds; hist[0] unused. */
	uint64_t hist[HV_DR_HIST_N + 1];
	uint32_t hist_seconds;
	/* The monitor's own cost per sample (harvest + fetch), ns. */
	uint64_t sample_ns_last;
	uint64_t sample_ns_max;
	int error; /* last sampling error (negative errno), 0 if none */
};

/*
 * Start monitoring @vm (CREATED, RUNNING or PAUSED; not being migrated):
 * start dirty logging, drop the initial all-dirty report, start the
 * sampler thread. 0, -EINVAL (cfg), -EBUSY (logging already on: a
 * migration or another monitor owns the log), -EOPNOTSUPP (mode),
 * -ENOMEM. *@out untouched on failure.
 */
int hv_dirtyrate_create(struct hv_vm *vm, const struct hv_dirtyrate_cfg *cfg,
			struct hv_dirtyrate **out);

/* Stop the sampler, stop dirty logging, free. destroy(NULL) no-op. */
void hv_dirtyrate_destroy(struct hv_dirtyrate *dr);

/* Copy the latest snapshot. Any thread. */
void hv_dirtyrate_get(struct hv_dirtyrate *dr, struct hv_dirtyrate_snap *out);

#endif
