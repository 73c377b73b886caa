/* SPDX-License-Identifier: MIT */
/*
 * mig_snap_save: write a VM's snapshot directory (snap_state.h for the
 * files), live or paused.
 *
 * Live (the VM runs): dirty logging starts, every page with data is
 * written at its RAM offset of `memory` (a page of zeros is a hole), then
 * passes rewrite the pages the log says were dirtied since, until a pass
 * has at most opts.small_pages or opts.max_passes ran; then the VM is
 * paused, the last pass and the state are written and (unless
 * opts.leave_paused) the VM resumes: the snapshot is of that pause, whose
 * length is reported like a migration's downtime. A paused VM is written
 * in one pass, and stays paused.
 *
 * Crash safety: everything is written into a fresh sibling directory
 * (.NAME.partial-PID), fsynced (files, then the directory), then renamed
 * over @dir (RENAME_EXCHANGE when @dir exists, whose old contents are
 * removed afterwards) and the parent fsynced. A snapshot that dies at any
 * point leaves the previous @dir as it was (and perhaps a .partial
 * directory, which restore never reads).
 *
 * Threads: the caller's, which owns @vm's pause and resume and its dirty
 * log for the duration (no other harvester: stop the dirty-rate monitor
 * first). Blocks for the whole snapshot.
 */
#ifndef MIG_SNAP_SAVE_H
#define MIG_SNAP_SAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/vm.h"

struct mig_snap_opts {
	unsigned max_passes;  /* dirty passes after the first; 0: 8 */
	uint64_t small_pages; /* stop when a pass has at most this; 0: 256 */
	bool leave_paused;    /* a live snapshot ends with the VM paused */
	/* Test hook: leave the final, paused pass out (the snapshot is then
	 * stale; the integration test shows the oracle catches it). */
	bool skip_last_pass;
};

struct mig_snap_stats {
	uint64_t duration_ns;
	uint64_t pause_ns;      /* the VM paused for the last pass and state */
	uint32_t passes;        /* including the first and the last */
	uint64_t pages_written; /* pages with data written, all passes */
	uint64_t last_pass_pages;
	uint64_t bytes_written; /* memory pages and the state file */
	uint64_t file_bytes;    /* allocated on disk: both files */
	uint64_t state_bytes;   /* the state file */
	bool live;
};

/*
 * Snapshot @vm (CREATED, RUNNING or PAUSED; -EBUSY otherwise) into the
 * absolute path @dir, offering @name in the state file. 0 with @st
 * filled, or a negative errno with a one-line reason in @why; the VM is
 * then running if it was (resumed if the snapshot had paused it).
 */
int mig_snap_save(struct hv_vm *vm, const char *name, const char *dir,
		  const struct mig_snap_opts *opts, struct mig_snap_stats *st,
		  char *why, size_t why_len);

#endif
