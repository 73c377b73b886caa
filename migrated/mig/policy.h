/* SPDX-License-Identifier: MIT */
/*
 * The source's switch policy: two small pure functions (no I/O, no
 * state) that the engine calls after each precopy pass, next to
 * mig_converge() (converge.h).
 *
 * mig_pc_auto(): should a migration started with postcopy "auto" switch
 * to postcopy now? The convergence model's own figures decide. Precopy
 * converges without slowing the guest when it dirties at most half of
 * what the link carries (each pass then at least halves what is left);
 * otherwise mig_converge() throttles the vCPUs until the guest's dirty
 * rate falls to half the bandwidth, which takes
 *     needed = 100 * (1 - (bw / 2) / unthrottled)  percent,
 *     unthrottled = dirty_rate / (1 - throttle_in_force / 100).
 * Rules, in order:
 *  1. The destination does not offer postcopy: KEEP (precopy as usual).
 *  2. No bandwidth measured yet (bw == 0): KEEP.
 *  3. expected downtime = remaining / bw within the downtime limit:
 *     KEEP (precopy switches over now, the cheapest end).
 *  4. needed <= the policy limit (throttle_limit_pct, 0 = the default
 *     MIG_PC_THROTTLE_LIMIT_DEFAULT): KEEP (precopy converges, with at
 *     most that throttle).
 *  5. Otherwise SWITCH: precopy would not finish within the downtime
 *     limit without throttling the guest past the limit.
 * The output carries the figures of the decision for the log and the
 * progress report.
 *
 * mig_timeout_action(): what the migration's time limit running out
 * does, by its policy: ABORT (fail, the VM stays on the source: the
 * behaviour without a policy), SWITCHOVER (pause and finish now,
 * whatever the downtime), POSTCOPY (switch to postcopy when the
 * destination offers it, else abort and say why).
 */
#ifndef MIG_POLICY_H
#define MIG_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define MIG_PC_THROTTLE_LIMIT_DEFAULT 50u

struct mig_pc_auto_in {
	uint64_t remaining_bytes; /* dirty bytes left to send */
	double bandwidth;	  /* page bytes/s of the last pass */
	double dirty_rate;	  /* bytes/s the guest dirtied, throttled */
	uint32_t throttle_pct;	  /* throttle in force now, 0..99 */
	uint32_t downtime_ms;	  /* limit; 0 = the default (converge.h) */
	uint32_t throttle_limit_pct; /* policy limit; 0 = the default */
	bool pc_offered;	  /* the destination offers postcopy */
};

struct mig_pc_auto_out {
	bool do_switch;
	double expected_downtime_ms; /* remaining / bw; -1 if bw unknown */
	double unthrottled_rate;     /* bytes/s the guest would dirty */
	uint32_t needed_pct; /* throttle precopy needs to converge, 0..100 */
	uint32_t limit_pct;  /* the limit applied */
};

struct mig_pc_auto_out mig_pc_auto(const struct mig_pc_auto_in *in);

enum mig_timeout_policy {
	MIG_TIMEOUT_ABORT = 0, /* the default */
	MIG_TIMEOUT_SWITCHOVER,
	MIG_TIMEOUT_POSTCOPY,
	MIG_TIMEOUT_POLICY_COUNT,
};

enum mig_timeout_action {
	MIG_TOA_ABORT = 0,
	MIG_TOA_SWITCHOVER,
	MIG_TOA_POSTCOPY,
	/* POSTCOPY asked, the destination does not offer it: abort. */
	MIG_TOA_ABORT_NO_POSTCOPY,
};

enum mig_timeout_action mig_timeout_action(enum mig_timeout_policy p,
					   bool pc_offered);

/* "abort", "switchover", "postcopy"; "invalid" out of range. */
const char *mig_timeout_policy_name(enum mig_timeout_policy p);
/* The reverse: 0 and *@out, or -EINVAL. */
int mig_timeout_policy_parse(const char *s, enum mig_timeout_policy *out);

#endif
