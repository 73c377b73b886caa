// SPDX-License-Identifier: MIT
/*
 * 16550A UART model (register layout of the National Semiconductor
 * PC16550D data sheet).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/console.h"
#include "hvcore/devices/uart16550.h"

enum {
	REG_RBR_THR = 0, /* DLL with DLAB */
	REG_IER = 1,	 /* DLM with DLAB */
	REG_IIR_FCR = 2,
	REG_LCR = 3,
	REG_MCR = 4,
	REG_LSR = 5,
	REG_MSR = 6,
	REG_SCR = 7,
};

#define IER_RDI 0x01  /* received data available */
#define IER_THRI 0x02 /* THR empty */
#define IER_RLSI 0x04 /* receiver line status */
#define IER_MSI 0x08  /* modem status */
#define IER_MASK 0x0f

#define IIR_NO_INT 0x01
#define IIR_MSI 0x00
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_FIFO 0xc0

#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02

#define LCR_DLAB 0x80

#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define MCR_MASK 0x1f

#define LSR_DR 0x01
#define LSR_THRE 0x20
#define LSR_TEMT 0x40

#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80

#define RX_FIFO 16

struct hv_uart {
	/* immutable after create */
	struct hv_dev_env env;
	uint32_t irq;
	struct hv_console *con;

	/* protected by lock */
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thri_pending; /* THR-empty interrupt not yet acknowledged */
	bool irq_level;	   /* what irq_line was last told */
	uint8_t rx[RX_FIFO];
	unsigned rx_head, rx_len;
};

static void rx_push(struct hv_uart *u, uint8_t b)
{
	if (u->rx_len == RX_FIFO)
		return; /* overrun: the byte is lost, as on the chip */
	u->rx[(u->rx_head + u->rx_len++) % RX_FIFO] = b;
}

/* Pull console input into the FIFO (not in loopback: the line is cut). */
static void rx_fill(struct hv_uart *u)
{
	uint8_t buf[RX_FIFO];
	size_t n;

	if (u->mcr & MCR_LOOP || u->rx_len == RX_FIFO)
		return;
	n = hv_console_get(u->con, buf, RX_FIFO - u->rx_len);
	for (size_t i = 0; i < n; i++)
		rx_push(u, buf[i]);
}

static uint8_t iir_locked(struct hv_uart *u)
{
	uint8_t fifo = u->fcr & FCR_ENABLE ? IIR_FIFO : 0;

	if (u->ier & IER_RDI && u->rx_len)
		return fifo | IIR_RDI;
	if (u->ier & IER_THRI && u->thri_pending)
		return fifo | IIR_THRI;
	return fifo | IIR_NO_INT;
}

static void update_irq(struct hv_uart *u)
{
	bool level = !(iir_locked(u) & IIR_NO_INT);

	/* OUT2 gates the interrupt onto the ISA line on PCs; Linux sets it
	 * (and relies on it: its IRQ test toggles it). */
	if (!(u->mcr & MCR_OUT2))
		level = false;
	if (level == u->irq_level)
		return;
	u->irq_level = level;
	u->env.irq_line(u->env.opaque, u->irq, level);
}

static uint8_t msr_locked(struct hv_uart *u)
{
	uint8_t m = 0;

	if (!(u->mcr & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	if (u->mcr & MCR_RTS)
		m |= MSR_CTS;
	if (u->mcr & MCR_DTR)
		m |= MSR_DSR;
	if (u->mcr & MCR_OUT1)
		m |= MSR_RI;
	if (u->mcr & MCR_OUT2)
		m |= MSR_DCD;
	return m;
}

static uint8_t reg_read(struct hv_uart *u, uint64_t reg)
{
	uint8_t v = 0;

	switch (reg) {
	case REG_RBR_THR:
		if (u->lcr & LCR_DLAB)
			return u->dll;
		if (u->rx_len) {
			v = u->rx[u->rx_head];
			u->rx_head = (u->rx_head + 1) % RX_FIFO;
			u->rx_len--;
		}
		rx_fill(u);
		return v;
	case REG_IER:
		return u->lcr & LCR_DLAB ? u->dlm : u->ier;
	case REG_IIR_FCR:
		v = iir_locked(u);
		/* Reading IIR acknowledges a THR-empty interrupt. */
		if ((v & 0x0f) == IIR_THRI)
			u->thri_pending = false;
		return v;
	case REG_LCR:
		return u->lcr;
	case REG_MCR:
		return u->mcr;
	case REG_LSR:
		return LSR_THRE | LSR_TEMT | (u->rx_len ? LSR_DR : 0);
	case REG_MSR:
		return msr_locked(u);
	case REG_SCR:
		return u->scr;
	}
	return 0;
}

static void reg_write(struct hv_uart *u, uint64_t reg, uint8_t v)
{
	switch (reg) {
	case REG_RBR_THR:
		if (u->lcr & LCR_DLAB) {
			u->dll = v;
			return;
		}
		if (u->mcr & MCR_LOOP)
			rx_push(u, v);
		else
			hv_console_put(u->con, &v, 1);
		/* Sent at once: THR is empty again. */
		u->thri_pending = true;
		return;
	case REG_IER:
		if (u->lcr & LCR_DLAB) {
			u->dlm = v;
			return;
		}
		/* Enabling the THR-empty interrupt with THR empty raises it
		 * (the 16550A does; Linux's 8250 driver counts on it). */
		if (v & IER_THRI && !(u->ier & IER_THRI))
			u->thri_pending = true;
		u->ier = v & IER_MASK;
		return;
	case REG_IIR_FCR:
		if (v & FCR_CLEAR_RX)
			u->rx_head = u->rx_len = 0;
		u->fcr = v & FCR_ENABLE ? (uint8_t)(v & 0xc9) : 0;
		rx_fill(u);
		return;
	case REG_LCR:
		u->lcr = v;
		return;
	case REG_MCR:
		u->mcr = v & MCR_MASK;
		rx_fill(u);
		return;
	case REG_SCR:
		u->scr = v;
		return;
	}
	/* LSR and MSR are read-only. */
}

static void uart_read(void *dev, uint64_t off, void *data, uint32_t len)
{
	struct hv_uart *u = dev;

	pthread_mutex_lock(&u->lock);
	((uint8_t *)data)[0] = reg_read(u, off);
	if (len > 1)
		memset((uint8_t *)data + 1, 0, len - 1);
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
}

static void uart_write(void *dev, uint64_t off, const void *data, uint32_t len)
{
	struct hv_uart *u = dev;

	(void)len;
	pthread_mutex_lock(&u->lock);
	reg_write(u, off, ((const uint8_t *)data)[0]);
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
}

const struct hv_io_ops hv_uart_io_ops = {
	.read = uart_read,
	.write = uart_write,
};

/* Console input arrived (the writer's thread, console lock not held). */
static void uart_input(void *arg)
{
	struct hv_uart *u = arg;

	pthread_mutex_lock(&u->lock);
	rx_fill(u);
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
}

int hv_uart_create(const struct hv_dev_env *env, uint32_t irq,
		   struct hv_console *con, struct hv_uart **out)
{
	struct hv_uart *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->env = *env;
	u->irq = irq;
	u->con = con;
	pthread_mutex_init(&u->lock, NULL);
	hv_console_set_notify(con, uart_input, u);
	*out = u;
	return 0;
}

void hv_uart_destroy(struct hv_uart *u)
{
	if (!u)
		return;
	hv_console_set_notify(u->con, NULL, NULL);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void hv_uart_save(struct hv_uart *u, struct hv_uart_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&u->lock);
	s->ier = u->ier;
	s->lcr = u->lcr;
	s->mcr = u->mcr;
	s->scr = u->scr;
	s->fcr = u->fcr;
	s->dll = u->dll;
	s->dlm = u->dlm;
	s->thri_pending = u->thri_pending;
	s->rx_len = u->rx_len;
	for (unsigned i = 0; i < u->rx_len; i++)
		s->rx[i] = u->rx[(u->rx_head + i) % RX_FIFO];
	pthread_mutex_unlock(&u->lock);
}

int hv_uart_load(struct hv_uart *u, const struct hv_uart_state *s)
{
	if (s->rx_len > RX_FIFO)
		return -EINVAL;
	pthread_mutex_lock(&u->lock);
	u->ier = s->ier & IER_MASK;
	u->lcr = s->lcr;
	u->mcr = s->mcr & MCR_MASK;
	u->scr = s->scr;
	u->fcr = s->fcr;
	u->dll = s->dll;
	u->dlm = s->dlm;
	u->thri_pending = s->thri_pending;
	u->rx_head = 0;
	u->rx_len = s->rx_len;
	memcpy(u->rx, s->rx, s->rx_len);
	/* The line as the source left it: raised when an enabled interrupt
	 * is pending (the IOAPIC's own state came with the VM's). */
	u->irq_level = false;
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
	return 0;
}
