/* SPDX-License-Identifier: MIT */
/*
 * The worker's control RPC handlers, one per Request.call case (the
 * dispatch table is in calls.c): VM calls in calls_vm.c, migration and subscription
 * calls in calls_mig.c, dirty-rate calls in calls_dirty.c. Each runs on the loop thread, fills call->resp or
 * fails the call (server.h).
 */
#ifndef MIGD_CALLS_H
#define MIGD_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "hvcore/accel.h"

#include "migrated/vmm/registry.h"
#include "migrated/rpc/server.h"

struct migd;

/* Run call @call_case (struct migd_server_ops.dispatch): its handler, or
 * UNIMPLEMENTED for a call the worker does not serve. Its name for logs. */
const char *migd_vmm_dispatch(unsigned call_case, struct migd_call *call);

void migd_call_ping(struct migd_call *call);
/*
 * calls_caps.c: the capabilities call (docs/api.md, "Versions and
 * compatibility"), and whether accelerator @kind can create VMs on this
 * host now (soft: always; kvm: /dev/kvm opens). Any thread.
 */
void migd_call_capabilities(struct migd_call *call);
bool migd_accel_usable(enum hv_accel_kind kind);
void migd_call_vm_create(struct migd_call *call);
void migd_call_vm_list(struct migd_call *call);
void migd_call_vm_inspect(struct migd_call *call);
void migd_call_vm_pause(struct migd_call *call);
void migd_call_vm_resume(struct migd_call *call);
void migd_call_vm_destroy(struct migd_call *call);

void migd_call_mig_incoming(struct migd_call *call);
void migd_call_mig_start(struct migd_call *call);
void migd_call_mig_status(struct migd_call *call);
void migd_call_mig_watch(struct migd_call *call);
void migd_call_mig_cancel(struct migd_call *call);
void migd_call_mig_postcopy(struct migd_call *call);
void migd_call_mig_switchover(struct migd_call *call);
void migd_call_mig_recover(struct migd_call *call);
void migd_call_mig_tune(struct migd_call *call);
void migd_call_mig_resolve(struct migd_call *call);
/* calls_sub.c: subscriptions, served by the daemon and a worker alike;
 * the progress interval of a subscription asking for @ms (0: default). */
void migd_call_subscribe(struct migd_call *call);
uint64_t migd_sub_interval_ns(uint32_t ms);
void migd_call_unsubscribe(struct migd_call *call);
void migd_call_dirty_rate(struct migd_call *call);
void migd_call_converge_estimate(struct migd_call *call);
void migd_call_vm_set_workload(struct migd_call *call);
/*
 * boot_check.c: the boot files of a create request (VmCreateRequest.boot,
 * a Linux guest), checked before anything is made. The host daemon calls
 * it before it spawns a worker, so a bad request costs no process and
 * leaves nothing behind; the worker calls it again (a request may come
 * from an older daemon, and the files may have changed in between). The
 * worker's VM still fails later for what only the accelerator can tell.
 * In migd_calls, which both link.
 */
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

/*
 * devices_check.c: a Linux guest's virtio devices (Boot.disks, Boot.rng),
 * checked by migd_boot_check() with the boot files. 0, or the reason in
 * @err (options as migratectl spells them) and -EINVAL (a device without
 * a kernel, more than HV_BOOT_DISKS_MAX disks, a relative or too long
 * path, not a regular file or block device, smaller than a sector, one
 * image on two disks that are not both read-only), -EROFS (a regular
 * file without any write permission bit, not asked read-only, even
 * when the daemon is root) or the -errno of
 * opening the image read-write (read-only with read_only): -ENOENT,
 * -EACCES, -EROFS... Any thread.
 */
struct hv_boot_cfg;
int migd_devices_check(const Migd__Boot *b, bool linux_guest, char *err,
		       size_t err_size);
/* Copy the (checked) devices of @b into @cfg. */
void migd_devices_cfg(const Migd__Boot *b, struct hv_boot_cfg *cfg);
/* vm_devices.c (the worker): the devices of @vm into an inspect result
 * and its Boot, allocated in @call. */
struct hv_vm;
void migd_devices_inspect(struct migd_call *call, struct hv_vm *vm,
			  Migd__Boot *boot, Migd__VmInspectResult *r);

/* calls_console.c: a Linux guest's console, read and typed into. */
void migd_call_vm_console(struct migd_call *call);
/* calls_vm.c: the VM @name of the worker's registry, or NULL with @call
 * failed (INVALID_ARGUMENT without a name, NOT_FOUND). */
struct migd_vm *migd_call_find_vm(struct migd_call *call, const char *name);
void migd_call_vm_console_write(struct migd_call *call);
/* calls_vm.c: where a Linux guest's console output is kept,
 * STATE/vms/NAME.console (rotated to NAME.console.1). */
void migd_console_log_path(struct migd *d, const char *name, char *buf,
			   size_t size);
/* calls_check.c: the page-stamp oracle over one VM. */
void migd_call_vm_check(struct migd_call *call);

/* A MigRef names something (else the call fails INVALID_ARGUMENT);
 * fail the call NOT_FOUND for @r. (calls_sub.c; calls_mig.c, host_calls.c) */
bool migd_mig_ref_check(struct migd_call *call, const Migd__MigRef *r);
void migd_mig_ref_missing(struct migd_call *call, const Migd__MigRef *r);

#endif
