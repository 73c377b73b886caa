// SPDX-License-Identifier: MIT
/*
 * The i8042 (hvcore/devices/i8042.c): Linux's probe sequence (self test,
 * command byte read and write, keyboard port test) answers as on a PC,
 * and the reset command (and an output-port write with the reset bit
 * low) calls the reset callback exactly once each, while other commands
 * never do.
 */
#include "hvcore/devices/i8042.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/hvcore/devices/fake_irq_env.h"

static unsigned resets;

static void on_reset(void *arg)
{
	(void)arg;
	resets++;
}

static uint8_t rd(struct hv_i8042 *k, bool cmd)
{
	uint8_t v = 0xee;

	(cmd ? &hv_i8042_cmd_ops : &hv_i8042_data_ops)->read(k, 0, &v, 1);
	return v;
}

static void wr(struct hv_i8042 *k, bool cmd, uint8_t v)
{
	(cmd ? &hv_i8042_cmd_ops : &hv_i8042_data_ops)->write(k, 0, &v, 1);
}

static void test_linux_probe_sequence(void)
{
	struct fake_env f;
	struct hv_dev_env env = fake_env_init(&f);
	struct hv_i8042 *k;
	uint8_t ctr;

	CU_ASSERT_EQUAL_FATAL(hv_i8042_create(&env, on_reset, NULL, &k), 0);
	resets = 0;
	CU_ASSERT_EQUAL(rd(k, true) & 0x01, 0); /* output buffer empty */
	wr(k, true, 0x20);			/* read command byte */
	CU_ASSERT(rd(k, true) & 0x01);
	ctr = rd(k, false);
	CU_ASSERT(ctr & 0x01);
	CU_ASSERT_EQUAL(rd(k, true) & 0x01, 0);
	wr(k, true, 0x60); /* write it back without the IRQ */
	wr(k, false, (uint8_t)(ctr & ~0x01));
	wr(k, true, 0x20);
	CU_ASSERT_EQUAL(rd(k, false), ctr & ~0x01);
	wr(k, true, 0xaa); /* controller self test */
	CU_ASSERT_EQUAL(rd(k, false), 0x55);
	CU_ASSERT(rd(k, true) & 0x04); /* system flag */
	wr(k, true, 0xab);	       /* keyboard port test */
	CU_ASSERT_EQUAL(rd(k, false), 0x00);
	/* A keyboard command is acknowledged, with IRQ 1 when enabled. */
	wr(k, true, 0x60);
	wr(k, false, 0x47);
	wr(k, false, 0xf4);
	CU_ASSERT_EQUAL(rd(k, false), 0xfa);
	CU_ASSERT_EQUAL(f.rises[1], 1);
	CU_ASSERT_FALSE(f.level[1]);
	CU_ASSERT_EQUAL(resets, 0);
	hv_i8042_destroy(k);
}

static void test_reset_commands_call_back(void)
{
	struct fake_env f;
	struct hv_dev_env env = fake_env_init(&f);
	struct hv_i8042 *k;

	CU_ASSERT_EQUAL_FATAL(hv_i8042_create(&env, on_reset, NULL, &k), 0);
	resets = 0;
	wr(k, true, 0xfe);
	CU_ASSERT_EQUAL(resets, 1);
	wr(k, true, 0xd1); /* write output port: reset bit low */
	wr(k, false, 0x00);
	CU_ASSERT_EQUAL(resets, 2);
	wr(k, true, 0xd1); /* reset bit high: nothing */
	wr(k, false, 0x01);
	wr(k, true, 0xff); /* pulse nothing */
	wr(k, true, 0xad);
	wr(k, true, 0xae);
	CU_ASSERT_EQUAL(resets, 2);
	hv_i8042_destroy(k);
}

static CU_TestInfo tests[] = {
	{"linux_probe_sequence", test_linux_probe_sequence},
	{"reset_commands_call_back", test_reset_commands_call_back},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/i8042", NULL, NULL, tests);
