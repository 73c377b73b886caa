/* SPDX-License-Identifier: MIT */
/*
 * migd_drain_place: where a host drain sends one VM (host_drain.h). A
 * pure function over what the drain knows of each candidate host: its
 * registered capacity (fleet record: mem_bytes, vcpus), what runs there
 * (its VM list) plus what this drain has sent or is sending there, and
 * how many of this drain's migrations go into it right now.
 *
 * Rule: among the usable hosts where the VM's memory fits (mem_used +
 * mem <= mem_bytes), the one with the most free memory once the VM is
 * there; ties: the most free vCPUs (vCPUs may be overcommitted, so they
 * rank but do not refuse), then the smallest id (a stable order). If
 * that host already has @max_per_host of this drain's migrations in
 * flight the VM waits for it rather than go to a worse host: where each
 * VM lands depends on the capacities only, not on which migration
 * happened to finish first; the limits only pace the drain.
 *
 * Threads: none; any thread.
 */
#ifndef MIGD_DRAIN_PLACE_H
#define MIGD_DRAIN_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIGD_DRAIN_ID_MAX 63

struct migd_drain_host {
	char id[MIGD_DRAIN_ID_MAX + 1];
	bool usable;	      /* reachable, not draining, not us */
	uint64_t mem_bytes;   /* registered */
	uint32_t vcpus;	      /* registered */
	uint64_t mem_used;    /* its VMs + what this drain sends there */
	uint32_t vcpus_used;
	unsigned inflight;    /* this drain's migrations into it now */
};

/*
 * The index of the host a VM of @mem bytes and @vcpus goes to, or:
 * -ENOSPC: it fits on no usable host (skip the VM); -EBUSY: the best
 * host is at @max_per_host (0 counts as 1) now (wait for one of its
 * migrations to finish).
 */
int migd_drain_place(const struct migd_drain_host *h, size_t n, uint64_t mem,
		     uint32_t vcpus, unsigned max_per_host);

#endif
