/* SPDX-License-Identifier: MIT */
/*
 * A fake hv_dev_env for device tests: it records the IRQ line levels a
 * device sets (and counts rising edges), and has no guest memory.
 */
#ifndef TESTS_UNIT_HVCORE_DEVICES_FAKE_IRQ_ENV_H
#define TESTS_UNIT_HVCORE_DEVICES_FAKE_IRQ_ENV_H

#include <string.h>

#include "hvcore/devices/dev.h"

struct fake_env {
	bool level[32];
	unsigned rises[32];
	unsigned calls;
};

static inline int fake_irq_line(void *opaque, uint32_t gsi, bool level)
{
	struct fake_env *f = opaque;

	if (gsi < 32) {
		if (level && !f->level[gsi])
			f->rises[gsi]++;
		f->level[gsi] = level;
	}
	f->calls++;
	return 0;
}

static inline struct hv_dev_env fake_env_init(struct fake_env *f)
{
	struct hv_dev_env e;

	memset(f, 0, sizeof(*f));
	memset(&e, 0, sizeof(e));
	e.opaque = f;
	e.irq_line = fake_irq_line;
	return e;
}

#endif
