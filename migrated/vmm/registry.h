/* SPDX-License-Identifier: MIT */
/*
 * migd_registry: the VMs one daemon owns, by name.
 *
 * Each entry wraps one struct hv_vm with what the control API shows about
 * it: its name, the workload it was created with, when and how it came
 * (created here or migrated in), and whether an outgoing migration owns it
 * (then every call that would touch it is refused with
 * FAILED_PRECONDITION, because mig/session.h forbids it).
 *
 * Names can also be held (migd_registry_hold) for a VM that is on its way
 * here by migration: from the moment its destination accepted the name
 * until the VM is added (migd_registry_add_held) or the migration failed
 * (migd_registry_release), nobody else can take it.
 *
 * Threads: loop thread only, except hold/release/taken, which any thread
 * may call (an incoming migration's engine thread holds the name the
 * source offers, migration.h). @lock guards the list links, the names and
 * the holds against those callers: the loop thread changes the list under
 * it and reads it without (it is the only writer). VM creation, pause,
 * resume and destroy run on the loop too; they wait for vCPUs to park
 * (milliseconds), never for the network.
 */
#ifndef MIGD_REGISTRY_H
#define MIGD_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/vm.h"
#include "migrated/common/cfg.h"
#include "migrated/rpc/parse.h"
#include "proto/control.pb-c.h"

#define MIGD_HEARTBEAT_US_DEFAULT 10000u

/* The workload as the client asked for it, defaults filled in. */
struct migd_wl {
	uint32_t pattern; /* enum hv_wl_pattern */
	uint32_t content; /* enum hv_wl_content */
	uint64_t rate_pages;
	uint64_t region_offset;
	uint64_t region_bytes;
	uint32_t write_pct;
	uint32_t hot_pct;
	uint32_t hot_share_pct;
	uint32_t heartbeat_us;
	uint64_t seed;
	bool prefill;
};

struct migd_vm {
	struct migd_vm *next;
	char name[MIGD_NAME_MAX + 1];
	struct hv_vm *vm; /* owned */
	struct migd_wl wl;
	uint64_t created_unix_ms;
	bool migrated_in;
	/* Non-zero while outgoing migration @mig_id owns the VM. */
	uint64_t mig_id;
	/* ... and its commit is unresolved: paused, intact, maybe running
	 * on the destination (VM_STATE_UNRESOLVED until mig_resolve). */
	bool mig_unresolved;
	/* Dirty-rate monitor (monitor.h); NULL while a migration owns the
	 * dirty log or when monitoring is off. Owned. */
	struct hv_dirtyrate *mon;
	/* The monitor's last 1 s rate (bytes/s), kept when it stops: what
	 * a migration's first pass reports, before it measured its own. */
	uint64_t mon_last_bps;
	/* Local live updates it went through (vmm/update.c). */
	uint32_t updates;
	/* Its guest stopped on its own and the worker stopped the VM
	 * (monitor.c, migd_vm_watch_exit). */
	bool exit_seen;
};

/* A name held for a VM arriving by migration. */
struct migd_name_hold {
	struct migd_name_hold *next;
	char name[MIGD_NAME_MAX + 1];
};

struct migd_registry {
	/* written by the loop thread under lock; loop reads without it */
	struct migd_vm *head;
	unsigned count;
	pthread_mutex_t lock;
	/* protected by lock */
	struct migd_name_hold *holds;
};

/*
 * Turn a create request into a VM configuration, defaults applied and
 * every field checked. @accel is the resolved accelerator. dirty_ring 0
 * (the daemon default) is left to the caller: cfg->dirty_ring_entries 0. Returns 0, or
 * -EINVAL with a reason in @err. Pure: tested without a hypervisor.
 */
int migd_vm_cfg_build(const Migd__VmCreateRequest *r,
		      enum hv_accel_kind accel, struct hv_vm_cfg *cfg,
		      struct migd_wl *wl, char *err, size_t err_size);

void migd_registry_init(struct migd_registry *reg);
/* Destroys every VM (vCPUs stopped first). */
void migd_registry_fini(struct migd_registry *reg);

struct migd_vm *migd_registry_find(struct migd_registry *reg,
				   const char *name);

/*
 * Take ownership of @vm under @name. -EEXIST (a VM has the name or it is
 * held), -ENOSPC (MIGD_VMS_MAX), -ENOMEM, -EINVAL (too long); on failure
 * @vm stays the caller's.
 */
int migd_registry_add(struct migd_registry *reg, const char *name,
		      struct hv_vm *vm, const struct migd_wl *wl,
		      bool migrated_in, struct migd_vm **out);

/*
 * The same for a name the caller holds: on success the hold becomes the
 * VM's entry; on failure the hold stays the caller's (release it).
 */
int migd_registry_add_held(struct migd_registry *reg, const char *name,
			   struct hv_vm *vm, const struct migd_wl *wl,
			   bool migrated_in, struct migd_vm **out);

/*
 * Hold @name for a VM that is arriving: 0, -EEXIST (a VM has it or it is
 * held already), -EINVAL (not 1..MIGD_NAME_MAX bytes), -ENOMEM. Any
 * thread.
 */
int migd_registry_hold(struct migd_registry *reg, const char *name);
/* Drop the hold of @name (no-op if none). Any thread. */
void migd_registry_release(struct migd_registry *reg, const char *name);
/* True when a VM has @name or it is held. Any thread. */
bool migd_registry_taken(struct migd_registry *reg, const char *name);

/*
 * The workload a VM runs, read from its guest memory, where the guest
 * reads it (hvcore/workload.h): a VM that came by migration or from a
 * snapshot was created with default parameters, and its real ones came
 * with its RAM. Also sets @vm's cfg.wl. @name: for the log. Loop thread.
 */
void migd_wl_from_guest(struct hv_vm *vm, struct migd_wl *wl,
			const char *name);

/* Unlink and destroy the entry and its VM. */
void migd_registry_remove(struct migd_registry *reg, struct migd_vm *v);

/* The state the API reports (MIGRATING while a migration owns it). */
Migd__VmState migd_vm_api_state(struct migd_vm *v);

#endif
