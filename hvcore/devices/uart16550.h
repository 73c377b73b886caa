/* SPDX-License-Identifier: MIT */
/*
 * A 16550A UART (the console of a Linux guest: COM1, ports 0x3f8-0x3ff,
 * IRQ 4; docs/guests.md). Every register: RBR/THR, IER, IIR with the
 * FIFO bits, FCR, LCR with the divisor latch, MCR with loopback, LSR,
 * MSR, SCR. Transmission is instant: a byte written to THR goes to the
 * hv_console at once (or to the receive FIFO in loopback), so THR is
 * always empty. Received bytes come from the console's input queue into
 * a 16-byte FIFO.
 *
 * The interrupt output is a level (kvmtool's way): the IRQ line follows
 * "an enabled interrupt is pending" and every change is passed to
 * env->irq_line, so an edge-triggered IOAPIC pin sees a rising edge for
 * each new interrupt the guest has not yet served.
 *
 * Threads: register accesses come from vCPU threads (hv_iobus handlers),
 * input notifications from the console writer's thread; one mutex
 * serialises them.
 */
#ifndef HVCORE_DEVICES_UART16550_H
#define HVCORE_DEVICES_UART16550_H

#include <stdbool.h>
#include <stdint.h>

#include "hvcore/devices/dev.h"
#include "hvcore/devices/iobus.h"

#define HV_UART_COM1_BASE 0x3f8
#define HV_UART_COM1_IRQ 4
#define HV_UART_PORTS 8

struct hv_console;
struct hv_uart;

/* Register-access table for hv_iobus_register(bus, base, HV_UART_PORTS,
 * &hv_uart_io_ops, uart). */
extern const struct hv_io_ops hv_uart_io_ops;

/*
 * A UART whose output and input are @con (not owned) raising GSI @irq
 * through @env (copied). Installs itself as @con's input notify.
 * -ENOMEM.
 */
int hv_uart_create(const struct hv_dev_env *env, uint32_t irq,
		   struct hv_console *con, struct hv_uart **out);
/* Removes the notify; destroy(NULL) is a no-op. No access may be in
 * flight. */
void hv_uart_destroy(struct hv_uart *u);

/* What migrates of a UART (a live migration's device state). */
#define HV_UART_FIFO 16
struct hv_uart_state {
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thri_pending;
	uint8_t rx[HV_UART_FIFO]; /* receive FIFO, oldest first */
	unsigned rx_len;
};

/*
 * Save / load the registers, the receive FIFO and the pending
 * interrupts; load drives the IRQ line as they say. Any thread (the
 * UART's lock). Load: 0, or -EINVAL (a FIFO longer than 16).
 */
void hv_uart_save(struct hv_uart *u, struct hv_uart_state *s);
int hv_uart_load(struct hv_uart *u, const struct hv_uart_state *s);

#endif
