/* SPDX-License-Identifier: MIT */
/*
 * hv_iobus: which device answers an address. One bus for port I/O and
 * one for MMIO per VM; a vCPU exit looks the address up and calls the
 * device's handler. Ranges never overlap (register refuses -EEXIST).
 *
 * Handlers run on the vCPU thread that exited, so a device whose state
 * several vCPUs reach takes its own lock. Registration happens while the
 * VM is built (before vCPUs run) or under the caller's own exclusion;
 * lookups take the bus's read lock.
 */
#ifndef HVCORE_DEVICES_IOBUS_H
#define HVCORE_DEVICES_IOBUS_H

#include <stdbool.h>
#include <stdint.h>

struct hv_io_ops {
	/* @off is from the start of the registered range; @len 1, 2, 4 or 8.
	 * A read fills @data (the bus zero-fills it first). */
	void (*read)(void *dev, uint64_t off, void *data, uint32_t len);
	void (*write)(void *dev, uint64_t off, const void *data, uint32_t len);
};

struct hv_iobus;

int hv_iobus_create(struct hv_iobus **out);
void hv_iobus_destroy(struct hv_iobus *bus);
/* -EINVAL for an empty or wrapping range, -EEXIST when it overlaps one. */
int hv_iobus_register(struct hv_iobus *bus, uint64_t base, uint64_t len,
		      const struct hv_io_ops *ops, void *dev);
/* Remove the range that starts at @base; -ENOENT if none. */
int hv_iobus_unregister(struct hv_iobus *bus, uint64_t base);
/*
 * Dispatch one access. false when no device claims [addr, addr + len):
 * reads then return all ones in @data, as on real buses, and the caller
 * may count it.
 */
bool hv_iobus_access(struct hv_iobus *bus, uint64_t addr, bool is_write,
		     void *data, uint32_t len);

#endif
