// SPDX-License-Identifier: MIT
/*
 * The 16550A UART (hvcore/devices/uart16550.c) as Linux's 8250 driver
 * drives it: output reaches the console, the divisor latch hides RBR and
 * IER, the FIFO shows in IIR, loopback is what the driver's probe
 * expects, input raises the RX interrupt (a rising edge on IRQ 4) and
 * reading it drains the line, the THR-empty interrupt follows IER and
 * IIR reads, and OUT2 gates the line.
 */
#include <string.h>

#include "hvcore/console.h"
#include "hvcore/devices/uart16550.h"
#include "tests/harness/hv_test.h"
#include "tests/unit/hvcore/devices/fake_irq_env.h"

struct rig {
	struct fake_env f;
	struct hv_console *con;
	struct hv_uart *u;
};

static void rig_init(struct rig *r)
{
	struct hv_dev_env env = fake_env_init(&r->f);

	CU_ASSERT_EQUAL_FATAL(hv_console_create(0, NULL, false, &r->con), 0);
	CU_ASSERT_EQUAL_FATAL(hv_uart_create(&env, 4, r->con, &r->u), 0);
}

static void rig_fini(struct rig *r)
{
	hv_uart_destroy(r->u);
	hv_console_destroy(r->con);
}

static uint8_t rd(struct rig *r, uint64_t reg)
{
	uint8_t v = 0xee;

	hv_uart_io_ops.read(r->u, reg, &v, 1);
	return v;
}

static void wr(struct rig *r, uint64_t reg, uint8_t v)
{
	hv_uart_io_ops.write(r->u, reg, &v, 1);
}

static void test_output_reaches_the_console(void)
{
	struct rig r;
	char out[16] = {0};
	uint64_t pos = 0;

	rig_init(&r);
	wr(&r, 0, 'h');
	wr(&r, 0, 'i');
	CU_ASSERT_EQUAL(hv_console_read(r.con, &pos, out, sizeof(out), NULL),
			2);
	CU_ASSERT_STRING_EQUAL(out, "hi");
	/* THR always empty: LSR says so. */
	CU_ASSERT_EQUAL(rd(&r, 5) & 0x60, 0x60);
	rig_fini(&r);
}

static void test_divisor_latch_hides_rbr_and_ier(void)
{
	struct rig r;
	uint64_t pos = 0;
	char c;

	rig_init(&r);
	wr(&r, 3, 0x83); /* DLAB, 8N1 */
	wr(&r, 0, 0x01); /* 115200 baud */
	wr(&r, 1, 0x00);
	CU_ASSERT_EQUAL(rd(&r, 0), 0x01);
	CU_ASSERT_EQUAL(rd(&r, 1), 0x00);
	CU_ASSERT_EQUAL(rd(&r, 3), 0x83);
	/* The divisor write sent nothing. */
	CU_ASSERT_EQUAL(hv_console_read(r.con, &pos, &c, 1, NULL), 0);
	wr(&r, 3, 0x03);
	wr(&r, 1, 0x05);
	CU_ASSERT_EQUAL(rd(&r, 1), 0x05);
	wr(&r, 3, 0x83);
	CU_ASSERT_EQUAL(rd(&r, 1), 0x00);
	rig_fini(&r);
}

static void test_fifo_bits_and_scratch(void)
{
	struct rig r;

	rig_init(&r);
	CU_ASSERT_EQUAL(rd(&r, 2), 0x01); /* no FIFO, no interrupt */
	wr(&r, 2, 0x07);		  /* enable, clear both */
	CU_ASSERT_EQUAL(rd(&r, 2), 0xc1); /* 16550A: FIFO bits set */
	wr(&r, 7, 0xa5);
	CU_ASSERT_EQUAL(rd(&r, 7), 0xa5);
	rig_fini(&r);
}

static void test_loopback_as_the_8250_probe_expects(void)
{
	struct rig r;
	uint64_t pos = 0;
	char c;

	rig_init(&r);
	wr(&r, 4, 0x10 | 0x0a); /* LOOP | RTS | OUT2 */
	CU_ASSERT_EQUAL(rd(&r, 6) & 0xf0, 0x90);
	wr(&r, 4, 0x10 | 0x05); /* LOOP | DTR | OUT1 */
	CU_ASSERT_EQUAL(rd(&r, 6) & 0xf0, 0x60);
	/* A byte sent in loopback comes back and not out. */
	wr(&r, 0, 'x');
	CU_ASSERT(rd(&r, 5) & 0x01);
	CU_ASSERT_EQUAL(rd(&r, 0), 'x');
	CU_ASSERT_EQUAL(rd(&r, 5) & 0x01, 0);
	CU_ASSERT_EQUAL(hv_console_read(r.con, &pos, &c, 1, NULL), 0);
	wr(&r, 4, 0x0b);
	CU_ASSERT_EQUAL(rd(&r, 6) & 0xb0, 0xb0); /* DCD DSR CTS */
	rig_fini(&r);
}

static void test_input_raises_rx_interrupt_until_read(void)
{
	struct rig r;

	rig_init(&r);
	wr(&r, 4, 0x08); /* OUT2 */
	wr(&r, 1, 0x01); /* RX interrupt */
	CU_ASSERT_FALSE(r.f.level[4]);
	CU_ASSERT_EQUAL(hv_console_write(r.con, "ab", 2), 2);
	CU_ASSERT_TRUE(r.f.level[4]);
	CU_ASSERT_EQUAL(r.f.rises[4], 1);
	CU_ASSERT_EQUAL(rd(&r, 2) & 0x0f, 0x04);
	CU_ASSERT_EQUAL(rd(&r, 0), 'a');
	CU_ASSERT_TRUE(r.f.level[4]);
	CU_ASSERT_EQUAL(rd(&r, 0), 'b');
	CU_ASSERT_FALSE(r.f.level[4]);
	CU_ASSERT_EQUAL(rd(&r, 2) & 0x0f, 0x01);
	/* More than the FIFO holds: the rest waits in the console. */
	char many[40];

	memset(many, 'z', sizeof(many));
	CU_ASSERT_EQUAL(hv_console_write(r.con, many, sizeof(many)),
			sizeof(many));
	CU_ASSERT_EQUAL(r.f.rises[4], 2);
	for (unsigned i = 0; i < sizeof(many); i++)
		CU_ASSERT_EQUAL(rd(&r, 0), 'z');
	CU_ASSERT_FALSE(r.f.level[4]);
	rig_fini(&r);
}

static void test_thr_empty_interrupt_follows_ier_and_iir(void)
{
	struct rig r;

	rig_init(&r);
	wr(&r, 4, 0x08);
	wr(&r, 1, 0x02); /* enabling it with THR empty raises it */
	CU_ASSERT_TRUE(r.f.level[4]);
	CU_ASSERT_EQUAL(rd(&r, 2) & 0x0f, 0x02); /* read acknowledges */
	CU_ASSERT_FALSE(r.f.level[4]);
	CU_ASSERT_EQUAL(rd(&r, 2) & 0x0f, 0x01);
	wr(&r, 0, 'q'); /* sent: empty again, a new edge */
	CU_ASSERT_TRUE(r.f.level[4]);
	CU_ASSERT_EQUAL(r.f.rises[4], 2);
	wr(&r, 1, 0x00);
	CU_ASSERT_FALSE(r.f.level[4]);
	rig_fini(&r);
}

static void test_out2_gates_the_line(void)
{
	struct rig r;

	rig_init(&r);
	wr(&r, 1, 0x01);
	hv_console_write(r.con, "a", 1);
	CU_ASSERT_FALSE(r.f.level[4]);
	CU_ASSERT_EQUAL(rd(&r, 2) & 0x0f, 0x04); /* pending all the same */
	wr(&r, 4, 0x08);
	CU_ASSERT_TRUE(r.f.level[4]);
	rig_fini(&r);
}

static CU_TestInfo tests[] = {
	{"output_reaches_the_console", test_output_reaches_the_console},
	{"divisor_latch_hides_rbr_and_ier",
	 test_divisor_latch_hides_rbr_and_ier},
	{"fifo_bits_and_scratch", test_fifo_bits_and_scratch},
	{"loopback_as_the_8250_probe_expects",
	 test_loopback_as_the_8250_probe_expects},
	{"input_raises_rx_interrupt_until_read",
	 test_input_raises_rx_interrupt_until_read},
	{"thr_empty_interrupt_follows_ier_and_iir",
	 test_thr_empty_interrupt_follows_ier_and_iir},
	{"out2_gates_the_line", test_out2_gates_the_line},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/uart16550", NULL, NULL, tests);
