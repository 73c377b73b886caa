/* SPDX-License-Identifier: MIT */
/*
 * hv_soft_rig: a self-contained soft VM for tests and benchmarks, without
 * the generic hv_vm layer: 2 MiB-aligned anonymous guest RAM (THP advised),
 * two memslots (low: [0, 8 MiB) with the workload ABI pages; high: the
 * vCPU regions), a soft VM, and one host thread per soft vCPU running the
 * workload.
 *
 * Huge pages: the stage-2 table maps 2 MiB (and 1 GiB where aligned)
 * leaves whenever the memslot range and host address are aligned; the host
 * backing is ordinary anonymous memory with MADV_HUGEPAGE (THP is
 * "madvise" here; no hugetlb pages are reserved), which only affects speed.
 *
 * One control thread drives a rig.
 */
#ifndef HVCORE_SOFT_RIG_H
#define HVCORE_SOFT_RIG_H

#include "hvcore/soft/soft_vcpu.h"

#define HV_SOFT_RIG_LOW_BYTES (8ULL << 20)
#define HV_SOFT_RIG_SLOT_LOW 0u
#define HV_SOFT_RIG_SLOT_HIGH 1u

struct hv_soft_rig_cfg {
	const struct hv_arch_pte_fmt *fmt;
	uint32_t nr_vcpus;
	uint64_t region_pages; /* per vCPU, multiple of 512 */
	bool huge;
	bool pml_per_entry;
	uint32_t pattern; /* enum hv_wl_pattern for every vCPU */
};

struct hv_soft_rig {
	struct hv_soft_rig_cfg cfg;
	uint8_t *mem;
	uint64_t mem_bytes;
	struct hv_memslots *slots;
	struct hv_soft_vm *vm;
	struct hv_soft_vcpu **vcpus;
	pthread_t *threads;
	int *results;
	bool running;
	uint64_t high_pages;
};

int hv_soft_rig_create(const struct hv_soft_rig_cfg *cfg,
		       struct hv_soft_rig **out);
/* Stops threads if running. destroy(NULL) no-op. */
void hv_soft_rig_destroy(struct hv_soft_rig *rig);

/* Start / stop the vCPU threads (stop sets the params stop flag and joins;
 * returns the first workload error). */
int hv_soft_rig_start(struct hv_soft_rig *rig);
int hv_soft_rig_stop(struct hv_soft_rig *rig);

/* Join the vCPU threads without asking them to stop (they end at
 * max_writes). Returns the first workload error. */
int hv_soft_rig_wait(struct hv_soft_rig *rig);

/* The workload params page in guest RAM (set fields before start). */
struct hv_wl_params *hv_soft_rig_params(struct hv_soft_rig *rig);

/* Turn dirty logging on for both slots (bitmaps initially all set). */
int hv_soft_rig_log_start(struct hv_soft_rig *rig, enum hv_soft_log_mode m);

/* Harvest slot @slot: sync PMLs, fetch-and-clear the whole bitmap into
 * @dst. Returns dirty pages or negative errno. */
int64_t hv_soft_rig_harvest(struct hv_soft_rig *rig, uint32_t slot,
			    uint64_t *dst);

/* Pages in slot @slot; its host address. */
uint64_t hv_soft_rig_slot_pages(struct hv_soft_rig *rig, uint32_t slot);
uint8_t *hv_soft_rig_slot_hva(struct hv_soft_rig *rig, uint32_t slot);

/* Sum of the vCPUs' published write counters (status lines). */
uint64_t hv_soft_rig_writes(struct hv_soft_rig *rig);

#endif
