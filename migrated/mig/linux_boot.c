// SPDX-License-Identifier: MIT
#include "migrated/mig/linux_boot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mig_linux_boot_pack(const struct hv_boot_cfg *b, Mig__LinuxBoot **out)
{
	struct {
		Mig__LinuxBoot boot;
		Mig__LinuxDisk disk[HV_BOOT_DISKS_MAX];
		Mig__LinuxDisk *pp[HV_BOOT_DISKS_MAX];
	} *x = calloc(1, sizeof(*x));
	uint32_t n = 0;

	if (!x)
		return -ENOMEM;
	mig__linux_boot__init(&x->boot);
	x->boot.kernel = (char *)b->kernel;
	x->boot.initrd = (char *)b->initrd;
	x->boot.cmdline = (char *)b->cmdline;
	for (; n < b->nr_disks && n < HV_BOOT_DISKS_MAX; n++) {
		mig__linux_disk__init(&x->disk[n]);
		x->disk[n].path = (char *)b->disk[n].path;
		x->disk[n].read_only = b->disk[n].read_only;
		x->pp[n] = &x->disk[n];
	}
	x->boot.n_disks = n;
	x->boot.disks = x->pp;
	x->boot.rng = b->rng;
	if (b->net_tap[0]) {
		x->boot.net_tap = (char *)b->net_tap;
		x->boot.net_mac.data = (uint8_t *)b->net_mac;
		x->boot.net_mac.len = 6;
	}
	/* The message is the allocation's first member. */
	*out = &x->boot;
	return 0;
}

/* Copy @s into @dst (@size bytes) if it fits; NULL reads as "". */
static int copy_str(char *dst, size_t size, const char *s)
{
	if (!s)
		s = "";
	if (strlen(s) >= size)
		return -EINVAL;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

int mig_linux_boot_unpack(const Mig__LinuxBoot *m, struct hv_boot_cfg *b,
			  char *why, size_t why_len)
{
	if (!m->kernel || !*m->kernel ||
	    copy_str(b->kernel, sizeof(b->kernel), m->kernel) ||
	    copy_str(b->initrd, sizeof(b->initrd), m->initrd) ||
	    copy_str(b->cmdline, sizeof(b->cmdline), m->cmdline)) {
		snprintf(why, why_len, "Linux boot configuration (kernel, "
			 "initrd or command line missing or too long)");
		return -EINVAL;
	}
	if (m->n_disks > HV_BOOT_DISKS_MAX) {
		snprintf(why, why_len, "%zu disks (at most %u)", m->n_disks,
			 HV_BOOT_DISKS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->n_disks; i++) {
		const char *p = m->disks[i]->path;

		if (!p || !*p ||
		    copy_str(b->disk[i].path, sizeof(b->disk[i].path), p)) {
			snprintf(why, why_len, "disk %zu path", i);
			return -EINVAL;
		}
		b->disk[i].read_only = m->disks[i]->read_only;
	}
	b->nr_disks = (uint32_t)m->n_disks;
	b->rng = m->rng;
	b->net_tap[0] = '\0';
	if (m->net_tap && *m->net_tap) {
		if (copy_str(b->net_tap, sizeof(b->net_tap), m->net_tap) ||
		    m->net_mac.len != 6 || m->net_mac.data[0] & 1) {
			snprintf(why, why_len, "virtio-net tap or MAC");
			return -EINVAL;
		}
		memcpy(b->net_mac, m->net_mac.data, 6);
	}
	return 0;
}
