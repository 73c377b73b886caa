/* SPDX-License-Identifier: MIT */
/*
 * A Linux guest's boot configuration (struct hv_boot_cfg: kernel, initrd,
 * command line, disks, entropy device, NIC) as the wire message
 * Mig__LinuxBoot, for the two places that carry it to a new VM: a
 * migration's layout (layout.c) and a local live update's handover
 * (migrated/vmm/handover.c). The console log is not part of it: where a
 * VM's console goes is its host's business. Pure and thread-safe.
 */
#ifndef MIG_LINUX_BOOT_H
#define MIG_LINUX_BOOT_H

#include <stddef.h>

#include "hvcore/vm.h"
#include "proto/migration.pb-c.h"

/*
 * *out: one allocation (free() it) holding the message, pointing into @b,
 * which must outlive it. -ENOMEM.
 */
int mig_linux_boot_pack(const struct hv_boot_cfg *b, Mig__LinuxBoot **out);

/*
 * Check @m (received: anything may be wrong) and fill @b's kernel,
 * initrd, cmdline, disks and rng; @b's other fields are left alone.
 * -EINVAL with what is wrong in @why (@why_len bytes).
 */
int mig_linux_boot_unpack(const Mig__LinuxBoot *m, struct hv_boot_cfg *b,
			  char *why, size_t why_len);

#endif /* MIG_LINUX_BOOT_H */
