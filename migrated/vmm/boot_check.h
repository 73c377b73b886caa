/* SPDX-License-Identifier: MIT */
/*
 * migd_boot_check: the boot files of a create request (VmCreateRequest.
 * boot: a Linux guest, docs/guests.md) checked before anything is made.
 *
 * The host daemon calls it before it spawns a worker, so a bad request
 * costs no process and leaves nothing behind; the worker calls it again
 * (a request may come from an older daemon, and the files may have
 * changed in between). The worker's VM still fails later for what only
 * the accelerator can tell (a file that is not a kernel, a build that
 * cannot boot one).
 */
#ifndef MIGD_BOOT_CHECK_H
#define MIGD_BOOT_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "hvcore/accel.h"
#include "proto/control.pb-c.h"

/* The request asks for a Linux guest: boot.kernel is set. */
bool migd_boot_wanted(const Migd__VmCreateRequest *r);

/*
 * 0 when @r is a workload guest or a well-formed Linux guest whose files
 * the calling process can read. Otherwise the reason in @err, with the
 * options' names as migratectl spells them, and:
 *   -EINVAL  initrd or cmdline without a kernel; workload options with a
 *            kernel; a kernel on an accelerator that is not kvm (@accel,
 *            resolved: the request's or the daemon's default); a relative
 *            path or one of HV_BOOT_PATH_MAX bytes or more; a command line
 *            of HV_BOOT_CMDLINE_MAX bytes or more, or with a control
 *            character; a file that is not a regular file, or empty;
 *   -errno   opening a file failed (-ENOENT, -EACCES, ...): @err names
 *            the path and the errno.
 * Any thread; touches the file system only to open and stat the files.
 */
int migd_boot_check(const Migd__VmCreateRequest *r, enum hv_accel_kind accel,
		    char *err, size_t err_size);

#endif
