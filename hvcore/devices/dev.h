/* SPDX-License-Identifier: MIT */
/*
 * What a device model of a Linux guest (docs/guests.md) may do to its VM,
 * as a table of callbacks, so that device models build and are tested
 * without a VM (tests/unit/hvcore/devices give them a fake one).
 *
 * Guest memory: devices reach guest RAM only through gpa_map, which
 * checks the whole range against RAM; a device that writes guest memory
 * calls mark_dirty for the range after writing it (data first, then the
 * dirty bit: a harvester that sees the bit reads the new data), so a
 * migration never misses what a device wrote.
 *
 * Interrupts: irq_line sets a level-triggered line of the in-kernel
 * IOAPIC/PIC (GSI numbering); msi delivers one message. irqfd and
 * ioeventfd are the fast paths (hvcore/kvm): a device that gets a
 * non-NULL ioeventfd/irqfd may register an eventfd for its doorbell or
 * interrupt and then serve it on its own thread; the NULL ones mean
 * "go through the exit path".
 */
#ifndef HVCORE_DEVICES_DEV_H
#define HVCORE_DEVICES_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/types.h"

struct hv_dev_env {
	void *opaque;
	/* Host address of [gpa, gpa + len), NULL unless all of it is guest
	 * RAM in one piece. */
	void *(*gpa_map)(void *opaque, gpa_t gpa, uint64_t len);
	void (*mark_dirty)(void *opaque, gpa_t gpa, uint64_t len);
	/* 0 or -errno. */
	int (*irq_line)(void *opaque, uint32_t gsi, bool level);
	int (*msi)(void *opaque, uint64_t addr, uint32_t data);
	/* Optional (may be NULL). Signal @fd when the guest writes @len bytes
	 * at @addr (port I/O when @pio); @assign false removes it. */
	int (*ioeventfd)(void *opaque, uint64_t addr, uint32_t len, bool pio,
			 int fd, bool assign);
	/* Optional (may be NULL). Deliver MSI (@addr, @data) when @fd is
	 * signalled; returns a handle >= 0 to remove it with irqfd_del. */
	int (*irqfd_msi)(void *opaque, uint64_t addr, uint32_t data, int fd);
	void (*irqfd_del)(void *opaque, int handle);
};

#endif
