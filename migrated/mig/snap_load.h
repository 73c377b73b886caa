/* SPDX-License-Identifier: MIT */
/*
 * mig_snap_load: make a VM from a snapshot directory (snap_save.h,
 * snap_state.h), verified.
 *
 * The state file is read and checked first (snap_state.h); then the VM
 * is created from its configuration, its RAM emptied (what hv_vm_create()
 * wrote there is not the snapshot's), the memory file's data extents read
 * into RAM at their offsets, and every page of RAM hashed and compared
 * with the state file's page table (a hole must hash as a page of zeros),
 * and the table with the memory digest; only then is the VM state loaded.
 * Any failure destroys the VM: nothing half-restored is returned.
 *
 * Threads: the caller's (blocks for the whole load); hashing uses up to
 * MIG_SNAP_LOAD_THREADS threads.
 */
#ifndef MIG_SNAP_LOAD_H
#define MIG_SNAP_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "hvcore/vm.h"

#define MIG_SNAP_LOAD_THREADS 4u

struct mig_snap_load_stats {
	uint64_t duration_ns;
	uint64_t bytes_read;  /* data read from the memory file */
	uint64_t pages;       /* pages verified (all of RAM) */
	uint64_t created_unix_ms; /* when the snapshot was taken */
	char origin[64];      /* the VM name the snapshot was taken of */
};

/*
 * Load the snapshot in the absolute path @dir into a new VM named @name,
 * with the local choices (backing, dirty ring, a Linux guest's console
 * log path) of @base (may be NULL; its accelerator, when set, must be
 * the snapshot's). A Linux guest's boot files and disks are opened again
 * at the paths the snapshot names. *@out: the VM,
 * CREATED with its state loaded (hv_vm_start() runs it). 0, or a
 * negative errno with a one-line reason in @why (mig_snap_state_read()'s
 * for the state file; -EBADMSG for a memory file of the wrong size or a
 * page that fails its hash); *@out untouched then.
 */
int mig_snap_load(const char *dir, const char *name,
		  const struct hv_vm_cfg *base, struct hv_vm **out,
		  struct mig_snap_load_stats *st, char *why, size_t why_len);

#endif
