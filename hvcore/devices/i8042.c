// SPDX-License-Identifier: MIT
/*
 * i8042 controller model: the commands Linux's i8042 driver and its
 * keyboard reset use (IBM PC/AT technical reference, 8042 commands).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/devices/i8042.h"

#define STS_OBF 0x01
#define STS_SYS 0x04
#define STS_CMD 0x08 /* last write was to the command port */
#define STS_UNLOCKED 0x10

#define CTR_KBD_INT 0x01
#define CTR_SYS 0x04
#define CTR_KBD_DIS 0x10
#define CTR_AUX_DIS 0x20
#define CTR_XLATE 0x40

enum {
	CMD_READ_CTR = 0x20,
	CMD_WRITE_CTR = 0x60,
	CMD_AUX_DISABLE = 0xa7,
	CMD_AUX_ENABLE = 0xa8,
	CMD_AUX_TEST = 0xa9,
	CMD_SELF_TEST = 0xaa,
	CMD_KBD_TEST = 0xab,
	CMD_KBD_DISABLE = 0xad,
	CMD_KBD_ENABLE = 0xae,
	CMD_READ_OUTPORT = 0xd0,
	CMD_WRITE_OUTPORT = 0xd1,
	CMD_WRITE_KBD_OUT = 0xd2,
	CMD_RESET = 0xfe,
};

#define KBD_ACK 0xfa
#define KBD_RESET 0xff
#define KBD_BAT_OK 0xaa
#define OUTPORT_RESET 0x01 /* low: the CPU is held in reset */

struct hv_i8042 {
	/* immutable after create */
	struct hv_dev_env env;
	void (*reset)(void *arg);
	void *reset_arg;

	/* protected by lock */
	pthread_mutex_t lock;
	uint8_t status, ctr, outport;
	uint8_t pending_cmd; /* command waiting for its data byte, or 0 */
	uint8_t out[4];	     /* output buffer queue */
	unsigned out_len;
};

/* Queue a byte for the guest; keyboard bytes raise IRQ 1 when enabled. */
static void out_push(struct hv_i8042 *k, uint8_t b, bool kbd)
{
	if (k->out_len < sizeof(k->out))
		k->out[k->out_len++] = b;
	k->status |= STS_OBF;
	if (kbd && k->ctr & CTR_KBD_INT) {
		k->env.irq_line(k->env.opaque, HV_I8042_KBD_IRQ, true);
		k->env.irq_line(k->env.opaque, HV_I8042_KBD_IRQ, false);
	}
}

static uint8_t out_pop(struct hv_i8042 *k)
{
	uint8_t b;

	if (!k->out_len)
		return 0;
	b = k->out[0];
	memmove(k->out, k->out + 1, --k->out_len);
	if (!k->out_len)
		k->status &= ~STS_OBF;
	return b;
}

/* Returns true when the guest asked for a reset. */
static bool command(struct hv_i8042 *k, uint8_t cmd)
{
	k->status |= STS_CMD;
	switch (cmd) {
	case CMD_READ_CTR:
		out_push(k, k->ctr, false);
		break;
	case CMD_WRITE_CTR:
	case CMD_WRITE_OUTPORT:
	case CMD_WRITE_KBD_OUT:
		k->pending_cmd = cmd;
		break;
	case CMD_AUX_DISABLE:
		k->ctr |= CTR_AUX_DIS;
		break;
	case CMD_AUX_ENABLE:
		k->ctr &= ~CTR_AUX_DIS;
		break;
	case CMD_AUX_TEST:
	case CMD_KBD_TEST:
		out_push(k, 0x00, false); /* no error */
		break;
	case CMD_SELF_TEST:
		out_push(k, 0x55, false);
		k->status |= STS_SYS;
		break;
	case CMD_KBD_DISABLE:
		k->ctr |= CTR_KBD_DIS;
		break;
	case CMD_KBD_ENABLE:
		k->ctr &= ~CTR_KBD_DIS;
		break;
	case CMD_READ_OUTPORT:
		out_push(k, k->outport, false);
		break;
	case CMD_RESET:
		return true;
	default:
		/* 0xf0-0xff pulse output lines; bit 0 low pulses reset. */
		if (cmd >= 0xf0 && !(cmd & 1))
			return true;
		break;
	}
	return false;
}

static bool data_write(struct hv_i8042 *k, uint8_t v)
{
	uint8_t cmd = k->pending_cmd;

	k->status &= ~STS_CMD;
	k->pending_cmd = 0;
	switch (cmd) {
	case CMD_WRITE_CTR:
		k->ctr = v;
		return false;
	case CMD_WRITE_OUTPORT:
		k->outport = v;
		return !(v & OUTPORT_RESET);
	case CMD_WRITE_KBD_OUT:
		out_push(k, v, true);
		return false;
	}
	/* A byte for the keyboard: no keyboard, but acknowledge it so a
	 * driver's command sequence ends quickly. */
	out_push(k, KBD_ACK, true);
	if (v == KBD_RESET)
		out_push(k, KBD_BAT_OK, true);
	return false;
}

static void data_read_op(void *dev, uint64_t off, void *data, uint32_t len)
{
	struct hv_i8042 *k = dev;

	(void)off;
	(void)len;
	pthread_mutex_lock(&k->lock);
	((uint8_t *)data)[0] = out_pop(k);
	pthread_mutex_unlock(&k->lock);
}

static void data_write_op(void *dev, uint64_t off, const void *data,
			  uint32_t len)
{
	struct hv_i8042 *k = dev;
	bool reset;

	(void)off;
	(void)len;
	pthread_mutex_lock(&k->lock);
	reset = data_write(k, ((const uint8_t *)data)[0]);
	pthread_mutex_unlock(&k->lock);
	if (reset)
		k->reset(k->reset_arg);
}

static void cmd_read_op(void *dev, uint64_t off, void *data, uint32_t len)
{
	struct hv_i8042 *k = dev;

	(void)off;
	(void)len;
	pthread_mutex_lock(&k->lock);
	((uint8_t *)data)[0] = k->status;
	pthread_mutex_unlock(&k->lock);
}

static void cmd_write_op(void *dev, uint64_t off, const void *data,
			 uint32_t len)
{
	struct hv_i8042 *k = dev;
	bool reset;

	(void)off;
	(void)len;
	pthread_mutex_lock(&k->lock);
	reset = command(k, ((const uint8_t *)data)[0]);
	pthread_mutex_unlock(&k->lock);
	if (reset)
		k->reset(k->reset_arg);
}

const struct hv_io_ops hv_i8042_data_ops = {
	.read = data_read_op,
	.write = data_write_op,
};

const struct hv_io_ops hv_i8042_cmd_ops = {
	.read = cmd_read_op,
	.write = cmd_write_op,
};

int hv_i8042_create(const struct hv_dev_env *env, void (*reset)(void *arg),
		    void *arg, struct hv_i8042 **out)
{
	struct hv_i8042 *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->env = *env;
	k->reset = reset;
	k->reset_arg = arg;
	k->status = STS_UNLOCKED;
	k->ctr = CTR_KBD_INT | CTR_SYS | CTR_XLATE;
	k->outport = OUTPORT_RESET;
	pthread_mutex_init(&k->lock, NULL);
	*out = k;
	return 0;
}

void hv_i8042_destroy(struct hv_i8042 *k)
{
	if (!k)
		return;
	pthread_mutex_destroy(&k->lock);
	free(k);
}

void hv_i8042_save(struct hv_i8042 *k, struct hv_i8042_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&k->lock);
	s->status = k->status;
	s->ctr = k->ctr;
	s->outport = k->outport;
	s->pending_cmd = k->pending_cmd;
	s->out_len = k->out_len;
	memcpy(s->out, k->out, k->out_len);
	pthread_mutex_unlock(&k->lock);
}

int hv_i8042_load(struct hv_i8042 *k, const struct hv_i8042_state *s)
{
	if (s->out_len > sizeof(k->out))
		return -EINVAL;
	pthread_mutex_lock(&k->lock);
	k->status = s->status;
	k->ctr = s->ctr;
	k->outport = s->outport;
	k->pending_cmd = s->pending_cmd;
	k->out_len = s->out_len;
	memcpy(k->out, s->out, s->out_len);
	pthread_mutex_unlock(&k->lock);
	return 0;
}
