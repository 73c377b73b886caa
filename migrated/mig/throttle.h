/* SPDX-License-Identifier: MIT */
/*
 * mig_throttle: auto-converge for the source (docs/architecture.md):
 * slow down the vCPUs that dirty most, through the workload's
 * throttle_pct (the share of time a vCPU idles, hvcore/workload.h).
 *
 * Per-vCPU write rates come from each vCPU's status line (its write
 * counter, seq), which every accelerator maintains, sampled once per
 * iteration. mig_throttle_spread() turns the VM-wide throttle chosen by
 * mig_converge() into per-vCPU values: the heaviest writer gets the full
 * value, the others in proportion to their rate, and vCPUs writing less
 * than 5% of the heaviest are left alone -- a guest's quiet vCPUs keep
 * their speed while the one sweeping memory is held back.
 *
 * The original parameters are kept and written back by restore() -- on
 * failure (the VM runs on the source again at full speed) and at
 * switchover while the VM is paused (so the destination does not inherit
 * the throttle: the params page is migrated with the rest of RAM).
 * Control thread of the migration only.
 */
#ifndef MIG_THROTTLE_H
#define MIG_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/vm.h"

/* vCPUs below this share of the heaviest writer's rate are not slowed. */
#define MIG_THROTTLE_QUIET_PCT 5u

struct mig_throttle {
	struct hv_vm *vm;
	uint32_t n;
	bool applied;			  /* some vCPU runs throttled */
	uint32_t orig[HV_WL_MAX_VCPUS];	  /* throttle_pct before we began */
	uint32_t cur[HV_WL_MAX_VCPUS];	  /* what we set */
	uint64_t last_seq[HV_WL_MAX_VCPUS];
	uint64_t last_ns;
	double rate[HV_WL_MAX_VCPUS];	  /* page writes/s, last sample */
};

/* Record the current parameters and counters. 0 or -EIO (params). */
int mig_throttle_init(struct mig_throttle *t, struct hv_vm *vm);

/* Update rate[] from the counters since the last sample. */
void mig_throttle_sample(struct mig_throttle *t);

/*
 * Pure: spread @pct over @n vCPUs with write rates @rates into @out (see
 * above). All rates zero: everyone gets @pct (the guest dirties memory,
 * we cannot tell who).
 */
void mig_throttle_spread(const double *rates, uint32_t n, uint32_t pct,
			 uint32_t *out);

/* Throttle the VM to @pct (0..99) as spread over the last sample. 0 or
 * the error of hv_vm_wl_set_vcpu(). */
int mig_throttle_apply(struct mig_throttle *t, uint32_t pct);

/* Put the original throttle values back (no-op when never applied). */
int mig_throttle_restore(struct mig_throttle *t);

/* The largest per-vCPU throttle in force. */
uint32_t mig_throttle_max(const struct mig_throttle *t);

#endif
