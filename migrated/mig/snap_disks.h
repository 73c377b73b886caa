/* SPDX-License-Identifier: MIT */
/*
 * mig_snap_disk_writer: is a disk image open for writing by another
 * process? A restore checks each writable disk of the snapshot with it
 * before it opens any (snap_load.h, docs/snapshots.md): a second kernel
 * writing a file system that a running VM writes corrupts it.
 *
 * It looks through /proc/PID/fd of every process it may read (the same
 * user's; root: all) for the image's inode, and at /proc/PID/fdinfo for
 * the open mode. A best effort, not a lock: a process of another user, on
 * another host (shared storage), or one that opens the image after the
 * check is not seen. Pure /proc reads: any thread.
 */
#ifndef MIG_SNAP_DISKS_H
#define MIG_SNAP_DISKS_H

#include <sys/types.h>

/*
 * 1 and *@pid set when a process other than this one has @path open for
 * writing; 0 when none is seen; -errno when @path cannot be stat'ed.
 */
int mig_snap_disk_writer(const char *path, pid_t *pid);

#endif
