/* SPDX-License-Identifier: MIT */
/*
 * An i8042 keyboard controller with no keyboard behind it: enough for
 * Linux's probe (self test, command byte, port tests) and for its reset
 * (`reboot=k`: command 0xfe, pulse the reset line), which calls the
 * owner's reset callback; that ends the VM as a REBOOT (hvcore/kvm).
 * Data port 0x60, status/command port 0x64; keyboard IRQ 1.
 *
 * Threads: accesses from vCPU threads, serialised by the device's lock;
 * the reset callback runs on the vCPU thread with the lock not held.
 */
#ifndef HVCORE_DEVICES_I8042_H
#define HVCORE_DEVICES_I8042_H

#include <stdint.h>

#include "hvcore/devices/dev.h"
#include "hvcore/devices/iobus.h"

#define HV_I8042_DATA_PORT 0x60
#define HV_I8042_CMD_PORT 0x64
#define HV_I8042_KBD_IRQ 1

struct hv_i8042;

/* Register on ports 0x60 and 0x64, each one byte wide, with the same
 * device: hv_iobus_register(bus, 0x60, 1, &hv_i8042_data_ops, dev) and
 * (bus, 0x64, 1, &hv_i8042_cmd_ops, dev). */
extern const struct hv_io_ops hv_i8042_data_ops;
extern const struct hv_io_ops hv_i8042_cmd_ops;

/* @env copied; @reset(arg) called when the guest resets the machine.
 * -ENOMEM. */
int hv_i8042_create(const struct hv_dev_env *env, void (*reset)(void *arg),
		    void *arg, struct hv_i8042 **out);
void hv_i8042_destroy(struct hv_i8042 *k);

/* What migrates: status, command byte, output port, a command waiting
 * for its data byte, the output queue (at most 4 bytes). Load: 0 or
 * -EINVAL (a longer queue). Any thread. */
struct hv_i8042_state {
	uint8_t status, ctr, outport, pending_cmd;
	uint8_t out[4];
	unsigned out_len;
};
void hv_i8042_save(struct hv_i8042 *k, struct hv_i8042_state *s);
int hv_i8042_load(struct hv_i8042 *k, const struct hv_i8042_state *s);

#endif
