// SPDX-License-Identifier: MIT
/*
 * The virtio devices of a create request (Boot.disks, Boot.rng, Boot.net;
 * calls.h):
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

#include "hvcore/devices/tap.h"
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

int migd_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char end;

	if (!s || strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &end) != 6)
		return -EINVAL;
	for (unsigned i = 0; i < 6; i++) {
		/* sscanf's %x takes a sign or a blank: hex digits only. */
		if (!strchr("0123456789abcdefABCDEF", s[3 * i]) ||
		    !strchr("0123456789abcdefABCDEF", s[3 * i + 1]) ||
		    (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

void migd_mac_from_name(const char *name, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const char *c = name ? name : ""; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	/* 52:54:00 is QEMU's; 0x02 alone marks locally administered,
	 * unicast (bit 0 clear). */
	mac[0] = 0x02;
	mac[1] = 0x6d; /* 'm' */
	mac[2] = (uint8_t)(h >> 24);
	mac[3] = (uint8_t)(h >> 16);
	mac[4] = (uint8_t)(h >> 8);
	mac[5] = (uint8_t)h;
}

/* The NIC: a valid tap name that opens now (exists or may be created,
 * and no other VM has it), a unicast MAC when one is given. */
static int check_net(const Migd__Net *n, char *err, size_t err_size)
{
	const char *tap = n->tap ? n->tap : "";
	uint8_t mac[6];
	int fd, ret;

	if (hv_tap_name_check(tap)) {
		snprintf(err, err_size,
			 "--net '%s': a tap interface name of 1..%d bytes "
			 "without '/', ':' or blanks",
			 tap, HV_TAP_NAME_MAX - 1);
		return -EINVAL;
	}
	if (n->mac && *n->mac) {
		if (migd_mac_parse(n->mac, mac)) {
			snprintf(err, err_size,
				 "--net %s,mac=%s: a MAC address is "
				 "XX:XX:XX:XX:XX:XX (hex)",
				 tap, n->mac);
			return -EINVAL;
		}
		if (mac[0] & 1) {
			snprintf(err, err_size,
				 "--net %s,mac=%s: a multicast address (the "
				 "first byte is odd); a NIC needs a unicast "
				 "one",
				 tap, n->mac);
			return -EINVAL;
		}
	}
	ret = hv_tap_open(tap, &fd);
	if (ret == -EBUSY) {
		snprintf(err, err_size,
			 "--net '%s': the tap is in use by another VM (or "
			 "program) on this host; one tap serves one VM",
			 tap);
		return ret;
	}
	if (ret) {
		snprintf(err, err_size, "--net '%s': cannot open the tap: %s%s",
			 tap, strerror(-ret),
			 ret == -ENOENT ? " (/dev/net/tun: is the tun module "
					  "loaded?)"
			 : ret == -EPERM
				 ? " (create it for the daemon's user: ip "
				   "tuntap add dev NAME mode tap user USER)"
				 : "");
		return ret;
	}
	close(fd);
	return 0;
}

int migd_devices_check(const Migd__Boot *b, bool linux_guest, char *err,
		       size_t err_size)
{
	int ret;

	if (!b || (!b->n_disks && !b->rng && !b->net))
		return 0;
	if (!linux_guest) {
		snprintf(err, err_size, "%s needs --kernel (a Linux guest)",
			 b->n_disks ? "--disk" : b->rng ? "--rng" : "--net");
		return -EINVAL;
	}
	if (b->net) {
		ret = check_net(b->net, err, err_size);
		if (ret)
			return ret;
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

void migd_devices_cfg(const Migd__Boot *b, const char *vm,
		      struct hv_boot_cfg *cfg)
{
	cfg->nr_disks = 0;
	cfg->rng = false;
	cfg->net_tap[0] = '\0';
	if (!b)
		return;
	if (b->net && b->net->tap && *b->net->tap) {
		snprintf(cfg->net_tap, sizeof(cfg->net_tap), "%s",
			 b->net->tap);
		if (!b->net->mac || !*b->net->mac ||
		    migd_mac_parse(b->net->mac, cfg->net_mac))
			migd_mac_from_name(vm, cfg->net_mac);
	}
	for (size_t i = 0; i < b->n_disks && i < HV_BOOT_DISKS_MAX; i++) {
		snprintf(cfg->disk[i].path, sizeof(cfg->disk[i].path), "%s",
			 b->disks[i]->path ? b->disks[i]->path : "");
		cfg->disk[i].read_only = b->disks[i]->read_only;
		cfg->nr_disks++;
	}
	cfg->rng = b->rng;
}
