// SPDX-License-Identifier: MIT
/*
 * The virtio devices of a create request (Boot.disks, Boot.rng; calls.h):
 * checked with the boot files, by the host daemon before it spawns a
 * worker and again by the worker, and copied into the VM's configuration.
 * In migd_calls: nothing here touches a VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvcore/vm.h"
#include "migrated/common/calls.h"

#define SECTOR 512

/* One disk: absolute, opens as asked (read-write unless read_only), a
 * regular file or a block device of at least one sector. */
static int check_disk(const Migd__Disk *d, char *err, size_t err_size)
{
	const char *path = d->path ? d->path : "";
	struct stat st;
	int fd, e;

	if (!path[0]) {
		snprintf(err, err_size, "--disk: an empty path");
		return -EINVAL;
	}
	if (strlen(path) >= HV_BOOT_PATH_MAX) {
		snprintf(err, err_size, "--disk: a path of at most %d bytes",
			 HV_BOOT_PATH_MAX - 1);
		return -EINVAL;
	}
	if (path[0] != '/') {
		snprintf(err, err_size,
			 "--disk '%s': needs an absolute path on the daemon's "
			 "host",
			 path);
		return -EINVAL;
	}
	fd = open(path,
		  (d->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY |
			  O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		snprintf(err, err_size, "--disk '%s': %s (errno %d)%s", path,
			 strerror(e), e,
			 e == EACCES || e == EROFS || e == EPERM
				 ? (d->read_only
					    ? ": the daemon's user cannot "
					      "read it"
					    : ": the daemon's user cannot "
					      "write it (a read-only disk: "
					      "--disk PATH,ro)")
				 : "");
		return -e;
	}
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		snprintf(err, err_size, "--disk '%s': %s (errno %d)", path,
			 strerror(e), e);
		return -e;
	}
	if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(fd, 0, SEEK_END);

		st.st_size = end < 0 ? 0 : end;
	}
	close(fd);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, err_size,
			 "--disk '%s': not a regular file or a block device",
			 path);
		return -EINVAL;
	}
	/* A file marked read-only for everyone is not written, even by a
	 * daemon running as root (which could). */
	if (!d->read_only && S_ISREG(st.st_mode) && !(st.st_mode & 0222)) {
		snprintf(err, err_size,
			 "--disk '%s': the file is read-only (mode %04o): a "
			 "read-only disk is --disk PATH,ro",
			 path, (unsigned)(st.st_mode & 07777));
		return -EROFS;
	}
	if (st.st_size < SECTOR) {
		snprintf(err, err_size,
			 "--disk '%s': %lld bytes, smaller than one %d-byte "
			 "sector",
			 path, (long long)st.st_size, SECTOR);
		return -EINVAL;
	}
	return 0;
}

int migd_devices_check(const Migd__Boot *b, bool linux_guest, char *err,
		       size_t err_size)
{
	int ret;

	if (!b || (!b->n_disks && !b->rng))
		return 0;
	if (!linux_guest) {
		snprintf(err, err_size, "%s needs --kernel (a Linux guest)",
			 b->n_disks ? "--disk" : "--rng");
		return -EINVAL;
	}
	if (b->n_disks > HV_BOOT_DISKS_MAX) {
		snprintf(err, err_size, "--disk given %zu times: at most %d",
			 b->n_disks, HV_BOOT_DISKS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < b->n_disks; i++) {
		ret = check_disk(b->disks[i], err, err_size);
		if (ret)
			return ret;
		/* Two devices writing one image corrupt it. */
		for (size_t j = 0; j < i; j++)
			if (!strcmp(b->disks[i]->path, b->disks[j]->path) &&
			    !(b->disks[i]->read_only &&
			      b->disks[j]->read_only)) {
				snprintf(err, err_size,
					 "--disk '%s' given twice (only "
					 "read-only disks may share an "
					 "image)",
					 b->disks[i]->path);
				return -EINVAL;
			}
	}
	return 0;
}

void migd_devices_cfg(const Migd__Boot *b, struct hv_boot_cfg *cfg)
{
	cfg->nr_disks = 0;
	cfg->rng = false;
	if (!b)
		return;
	for (size_t i = 0; i < b->n_disks && i < HV_BOOT_DISKS_MAX; i++) {
		snprintf(cfg->disk[i].path, sizeof(cfg->disk[i].path), "%s",
			 b->disks[i]->path ? b->disks[i]->path : "");
		cfg->disk[i].read_only = b->disks[i]->read_only;
		cfg->nr_disks++;
	}
	cfg->rng = b->rng;
}
