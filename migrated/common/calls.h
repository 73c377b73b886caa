/* SPDX-License-Identifier: MIT */
/*
 * The calls the host daemon and a worker both answer, and the checks both
 * make of a request (migd_common). Each process puts these handlers in its
 * own dispatch table (migrated/host/host_calls.c, migrated/vmm/calls.c).
 * Nothing here links the engine or hvcore_vm: the host daemon links it.
 * Handlers run on the loop thread, fill call->resp or fail the call
 * (migrated/rpc/server.h).
 */
#ifndef MIGD_COMMON_CALLS_H
#define MIGD_COMMON_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvcore/accel.h"
#include "migrated/common/proc.h"
#include "migrated/rpc/server.h"
#include "proto/control.pb-c.h"

/*
 * calls_caps.c: ping, and the capabilities call (docs/api.md, "Versions
 * and compatibility"), of the process @p (each process's dispatch gives
 * its own); and whether accelerator @kind can create VMs on this host now
 * (soft: always; kvm: /dev/kvm opens). Any thread.
 */
void migd_call_ping(struct migd_call *call, const struct migd_proc *p);
void migd_call_capabilities(struct migd_call *call, const struct migd_proc *p);
bool migd_accel_usable(enum hv_accel_kind kind);

/* calls_sub.c: subscriptions, served by the daemon and a worker alike;
 * the progress interval of a subscription asking for @ms (0: default). */
void migd_call_subscribe(struct migd_call *call);
uint64_t migd_sub_interval_ns(uint32_t ms);
void migd_call_unsubscribe(struct migd_call *call);

/* A MigRef names something (else the call fails INVALID_ARGUMENT);
 * fail the call NOT_FOUND for @r. (calls_sub.c; used by
 * migrated/vmm/calls_mig.c and migrated/host/host_calls.c) */
bool migd_mig_ref_check(struct migd_call *call, const Migd__MigRef *r);
void migd_mig_ref_missing(struct migd_call *call, const Migd__MigRef *r);

/*
 * boot_check.c: the boot files of a create request (VmCreateRequest.boot,
 * a Linux guest), checked before anything is made. The host daemon calls
 * it before it spawns a worker, so a bad request costs no process and
 * leaves nothing behind; the worker calls it again (a request may come
 * from an older daemon, and the files may have changed in between). The
 * worker's VM still fails later for what only the accelerator can tell.
 * In migd_common, which both link.
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
 * devices_check.c: a Linux guest's virtio devices (Boot.disks, Boot.rng,
 * Boot.net), checked by migd_boot_check() with the boot files. The NIC:
 * -EINVAL (a bad tap name, a malformed or multicast MAC), -EBUSY (another
 * VM or program has the tap open), or the -errno of opening it
 * (hv_tap_open(): -ENOENT without /dev/net/tun, -EPERM...); the tap is
 * opened and closed again (a tap that did not exist is created and gone
 * again, to be created by the worker). 0, or the reason in
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
/* Copy the (checked) devices of @b into @cfg; a NIC without a MAC gets
 * migd_mac_from_name(@vm). */
void migd_devices_cfg(const Migd__Boot *b, const char *vm,
		      struct hv_boot_cfg *cfg);
/* "XX:XX:XX:XX:XX:XX" (hex, either case) into @mac: 0 or -EINVAL. */
int migd_mac_parse(const char *s, uint8_t mac[6]);
/* The default MAC of VM @name's NIC: 02:6d: and 32 bits of a hash of the
 * name (locally administered, unicast; stable across restarts and
 * migrations, which carry the MAC anyway). */
void migd_mac_from_name(const char *name, uint8_t mac[6]);

#endif
