/* SPDX-License-Identifier: MIT */
/*
 * mig_layout: the VM layout a source offers in setup (Mig__VmLayout) and
 * its validation by the destination (docs/architecture.md).
 *
 * hvcore VMs have guest RAM below the MMIO hole from gpa 0 and the rest
 * from gpa 4 GiB (hvcore/ram_layout.h), each range cut into memslots of
 * cfg.slot_bytes (the last of a range may be shorter), ids 0, 1, 2, ... in
 * gfn order (hv_vm_slot_geometry()); a destination can only rebuild that
 * shape, so mig_layout_to_cfg() accepts exactly those layouts and derives the hv_vm_cfg to create the paused twin with.
 * Everything received is checked before use; pure and thread-safe except
 * mig_layout_build(), which reads the VM (control thread).
 */
#ifndef MIG_LAYOUT_H
#define MIG_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "hvcore/vm.h"
#include "proto/migration.pb-c.h"

/* MIG_FEATURE_* bits: a source needing one that the destination lacks
 * is refused with REFUSE_FEATURES; optional ones are used only when the
 * destination's SetupAccept offers them.
 * DELTA: PageBatch.delta_mask / delta_len (delta.h); optional. */
#define MIG_FEATURE_DELTA (1ull << 0)
/* POSTCOPY: PostcopyUnsent, PageRequest, PostcopyDone (postcopy_map.h);
 * optional, offered by a destination whose memory backing supports it
 * (postcopy_uffd.h), so it is not in MIG_FEATURES_SUPPORTED. */
#define MIG_FEATURE_POSTCOPY (1ull << 1)
/* A Linux guest: the layout carries its boot files and devices
 * (LinuxBoot), the state its devices; a destination that does not know
 * the bit refuses in setup and the VM stays on the source. */
#define MIG_FEATURE_LINUX (1ull << 2)
#define MIG_FEATURES_SUPPORTED (MIG_FEATURE_DELTA | MIG_FEATURE_LINUX)

/* Longest VM name the layout carries (the daemon's own rule, parse.h). */
#define MIG_VM_NAME_MAX 63

/*
 * A VM name the layout may carry: 1..MIG_VM_NAME_MAX bytes of
 * [A-Za-z0-9._-], not "." or "..", not starting with '-' -- safe in file
 * names, log lines and the daemon's registry. NULL or "" is not a name.
 */
bool mig_vm_name_valid(const char *name);

/*
 * Describe @vm, offering @name (NULL or "": none; else it must pass
 * mig_vm_name_valid()). *@out is a heap message for mig_layout_free(); it
 * points to @name, which must outlive it. Returns 0, -ENOMEM or -EINVAL
 * (a VM without slots, a bad name).
 */
int mig_layout_build(struct hv_vm *vm, const char *name, Mig__VmLayout **out);
void mig_layout_free(Mig__VmLayout *l);

/*
 * Validate @l and derive the destination's VM configuration: accelerator,
 * backing and other local choices from @base (may be NULL: defaults, the
 * accelerator named by the layout), memory size, slot size and vCPU count
 * from @l; the workload parameters are defaults (the real ones arrive in
 * guest RAM). The offered name (l->name) must be "" or pass
 * mig_vm_name_valid() (REFUSE_NAME otherwise). Returns 0, or a
 * Mig__RefuseReason (> 0) with a one-line reason in @why.
 */
int mig_layout_to_cfg(const Mig__VmLayout *l, const struct hv_vm_cfg *base,
		      struct hv_vm_cfg *cfg, char *why, size_t why_len);

#endif
