/* SPDX-License-Identifier: MIT */
/*
 * mig_snap_state: the `state` file of a snapshot directory (docs/snapshots.md).
 *
 * A snapshot is a directory of two files: `memory`, guest RAM at its RAM
 * offsets (sparse: a hole for a page of zeros), and `state`, this file:
 *
 *   off  size  field (little-endian)
 *     0     8  magic "MIGDSNAP"
 *     8     4  format version (MIG_SNAP_VERSION)
 *    12     4  header bytes (MIG_SNAP_HDR_BYTES)
 *    16     8  guest RAM bytes (the memory file's size)
 *    24     8  pages (RAM bytes / 4 KiB)
 *    32     4  layout bytes L (<= MIG_SNAP_LAYOUT_MAX)
 *    36     4  VM state bytes S (<= MIG_SNAP_VMSTATE_MAX)
 *    40     8  created, Unix ms
 *    48    16  reserved, zero
 *    64     L  the VM's configuration: a packed Mig__VmLayout, as a
 *              migration offers it (name, accelerator, vCPUs, memslots,
 *              a Linux guest's boot files and devices)
 *  64+L     S  the VM state: hv_vm_state_save()'s VmState (every vCPU,
 *              the devices)
 *     .  8*pages  each page's mig_page_hash() (digest.h), RAM order
 *     .    32  the memory digest: mig_digest_table() over those hashes
 *     .    32  SHA-256 of every byte before it
 *
 * mig_snap_state_read() checks, in this order, and says which in @why:
 * the magic (a foreign file), the version, the header's lengths against
 * their caps and the file's size (truncated or trailing bytes), the
 * trailing checksum (corrupted), then the layout (mig_layout_to_cfg()) and
 * that its RAM size is the header's. Nothing is allocated before the
 * lengths are checked. The page hashes and the digest are checked against
 * the memory as it is loaded (snap_load.h). Pure file I/O: any thread.
 */
#ifndef MIG_SNAP_STATE_H
#define MIG_SNAP_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "hvcore/accel.h"
#include "hvcore/vm.h"

#define MIG_SNAP_MAGIC "MIGDSNAP"
#define MIG_SNAP_VERSION 1u
#define MIG_SNAP_HDR_BYTES 64u
#define MIG_SNAP_LAYOUT_MAX (1u << 20)
#define MIG_SNAP_VMSTATE_MAX (64u << 20)
#define MIG_SNAP_STATE_FILE "state"
#define MIG_SNAP_MEMORY_FILE "memory"

/* What a state file holds, decoded. Owned by the caller:
 * mig_snap_state_fini() frees it. */
struct mig_snap_state {
	uint64_t mem_bytes;
	uint64_t npages;
	uint64_t created_unix_ms;
	/* The configuration from the layout (mig_layout_to_cfg(), with
	 * the @base given to read; the name is in @name). */
	struct hv_vm_cfg cfg;
	char name[64];
	struct hv_blob vmstate;
	uint64_t *table; /* npages page hashes, RAM order */
	uint8_t digest[32];
};

/*
 * Write the state file @path (created or truncated; the caller writes to a
 * temporary name and renames, see snap_save.h) from the packed layout
 * @layout (@layout_len bytes), the VM state @vmstate, the page hash table
 * @table (mem_bytes / 4 KiB entries) and the memory digest. Does not
 * fsync (the caller does, with the directory). 0, -EINVAL (a length above
 * its cap, mem_bytes not whole pages) or -errno of open/write.
 */
int mig_snap_state_write(const char *path, uint64_t mem_bytes,
			 const uint8_t *layout, size_t layout_len,
			 const struct hv_blob *vmstate, const uint64_t *table,
			 const uint8_t digest[32], uint64_t created_unix_ms);

/*
 * Read and check @path into @out (see above). @base as for
 * mig_layout_to_cfg() (may be NULL). 0, or a negative errno with a
 * one-line reason for an operator in @why: -ENOENT (no such file),
 * -EPROTO (not a snapshot state file), -EPROTONOSUPPORT (another format
 * version), -EBADMSG (truncated, trailing bytes, checksum, malformed
 * contents), -EINVAL (a configuration this build cannot create), -ENOMEM.
 * *@out is untouched on failure.
 */
int mig_snap_state_read(const char *path, const struct hv_vm_cfg *base,
			struct mig_snap_state *out, char *why, size_t why_len);

/* Free what read allocated; NULL or a zeroed struct is fine. */
void mig_snap_state_fini(struct mig_snap_state *st);

#endif
