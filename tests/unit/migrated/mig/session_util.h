/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the migration engine tests (test_session*.c): a TLS dev CA
 * shared by both sides, small running VMs, a source and a destination on
 * loopback with snapshot hooks, and the oracles (page-by-page memory
 * comparison, stamps, the guest still running).
 */
#ifndef TESTS_SESSION_UTIL_H
#define TESTS_SESSION_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/vm.h"
#include "migrated/mig/session.h"
#include "migrated/mig/tls.h"

#define SU_MEM (64ULL << 20)

/* Suite init/clean: SIGPIPE ignored, CA in a temp dir. 0 on success. */
int su_init(void);
int su_clean(void);
/* Options of one side, TLS with the dev CA. */
void su_opts(struct mig_opts *o, bool server);

/* Create and start a VM: @nr vCPUs sweeping their region at @rate
 * pages/s each (0 = flat out; UINT64_MAX = idle), heartbeats every 2 ms.
 * Returns NULL (and asserts) on failure; -ENODEV -> *skip set. */
struct hv_vm *su_vm(enum hv_accel_kind accel, uint32_t nr, uint64_t rate,
		    bool *skip);
/* The same with page content @content (enum hv_wl_content). */
struct hv_vm *su_vm_content(enum hv_accel_kind accel, uint32_t nr,
			    uint64_t rate, uint32_t content, bool *skip);

/* Largest seq over vCPUs... per vCPU: true when every vCPU's write
 * counter (or heartbeats for idle guests) grows within @ms. */
bool su_vm_progresses(struct hv_vm *vm, unsigned ms);

/* True when dirty logging is off (a start/stop round trip works). */
bool su_logging_off(struct hv_vm *vm);

struct su_run {
	/* in */
	struct mig_opts src_opts, dst_opts;
	bool cancel_src, destroy_dst;
	unsigned act_after_ms; /* cancel / destroy after this long */
	/* out */
	int src_ret, dst_ret;
	struct mig_progress src_final, dst_final;
	struct hv_vm *dst_vm;
	uint8_t *src_snap, *dst_snap; /* guest RAM at switchover / load */
	uint64_t snap_bytes;
	uint32_t max_throttle; /* largest throttle_pct seen in progress */
	unsigned cb_calls;
	bool phases_seen[MIG_PHASE_COUNT];
};

/* Migrate @vm to a fresh destination on 127.0.0.1; fills @r. */
void su_migrate(struct hv_vm *vm, struct su_run *r);
void su_run_free(struct su_run *r);

/* Page-by-page comparison of the two snapshots; returns the number of
 * differing pages (logs the first). */
uint64_t su_compare(const struct su_run *r);

/* Every vCPU region page of @snap carrying a stamp has a valid one, and
 * the last write of each vCPU (its status seq) is present. */
bool su_stamps_ok(const uint8_t *snap, const struct hv_vm_cfg *cfg,
		  uint64_t *stamped);

void su_print(const char *what, const struct su_run *r);

#endif
