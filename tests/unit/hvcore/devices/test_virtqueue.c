// SPDX-License-Identifier: MIT
/* The split virtqueue and its chain walker (hvcore/devices/virtqueue.c). */
#include "tests/harness/hv_test.h"

#include "tests/unit/hvcore/devices/fake_env.h"

#define RING 0x10000
#define BUF 0x40000
#define W HV_VRING_DESC_F_WRITE
#define N HV_VRING_DESC_F_NEXT
#define I HV_VRING_DESC_F_INDIRECT

static struct fake_vm *vm;
static struct fake_ring r;
static struct hv_vq vq;
static struct hv_vq_chain c;

static void setup(bool indirect, bool event_idx)
{
	vm = fake_vm_new();
	fake_ring_init(&r, vm, RING, 8);
	fake_ring_vq(&r, &vq, indirect, event_idx);
	CU_ASSERT_EQUAL_FATAL(hv_vq_start(&vq), 0);
}

static void teardown(void)
{
	hv_vq_stop(&vq);
	fake_vm_free(vm);
}

static void test_chain_splits_into_readable_and_writable(void)
{
	char out[16] = {0};
	uint32_t id, len;

	setup(false, false);
	memcpy(vm->ram + BUF, "hello, ", 7);
	memcpy(vm->ram + BUF + 0x100, "device", 6);
	fake_desc_set(&r, 3, BUF, 7, N, 5);
	fake_desc_set(&r, 5, BUF + 0x100, 6, N, 1);
	fake_desc_set(&r, 1, BUF + 0x5000, 100, W, 0);
	fake_ring_offer(&r, 3);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	CU_ASSERT_EQUAL(c.head, 3);
	CU_ASSERT_EQUAL(c.nrd, 2);
	CU_ASSERT_EQUAL(c.nwr, 1);
	CU_ASSERT_EQUAL(c.rd_len, 13);
	CU_ASSERT_EQUAL(c.wr_len, 100);
	CU_ASSERT_EQUAL(hv_vq_gather(&c, 0, out, sizeof(out)), 13);
	CU_ASSERT_EQUAL(memcmp(out, "hello, device", 13), 0);
	CU_ASSERT_EQUAL(hv_vq_gather(&c, 9, out, 2), 2);
	CU_ASSERT_EQUAL(memcmp(out, "vi", 2), 0);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 0);
	CU_ASSERT_FALSE(fake_dirty(vm, BUF + 0x5000));
	CU_ASSERT_FALSE(fake_dirty(vm, r.used));

	/* Reuse the chain walked above: the answer goes into its buffer. */
	CU_ASSERT_EQUAL(hv_vq_scatter(&c, 0, "ok", 2), 2);
	hv_vq_push(&vq, &c, 2);
	CU_ASSERT_EQUAL(fake_used_idx(&r), 1);
	fake_used_elem(&r, 0, &id, &len);
	CU_ASSERT_EQUAL(id, 3);
	CU_ASSERT_EQUAL(len, 2);
	CU_ASSERT_EQUAL(memcmp(vm->ram + BUF + 0x5000, "ok", 2), 0);
	/* What the device wrote is in the dirty log: data and used ring. */
	CU_ASSERT(fake_dirty(vm, BUF + 0x5000));
	CU_ASSERT(fake_dirty(vm, r.used));
	CU_ASSERT_FALSE(fake_dirty(vm, BUF));
	teardown();
}

static void test_indirect_table_is_walked(void)
{
	struct hv_vring_desc *t;

	setup(true, false);
	t = (struct hv_vring_desc *)(vm->ram + 0x30000);
	t[0] = (struct hv_vring_desc){BUF, 16, N, 2};
	t[2] = (struct hv_vring_desc){BUF + 0x1000, 512, W | N, 1};
	t[1] = (struct hv_vring_desc){BUF + 0x2000, 1, W, 0};
	fake_desc_set(&r, 0, 0x30000, 3 * 16, I, 0);
	fake_ring_offer(&r, 0);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	CU_ASSERT_EQUAL(c.nrd, 1);
	CU_ASSERT_EQUAL(c.nwr, 2);
	CU_ASSERT_EQUAL(c.wr_len, 513);
	CU_ASSERT_PTR_EQUAL(c.wr[1].hva, vm->ram + BUF + 0x2000);
	teardown();
}

/* Offer @head and expect the walker's refusal @err, with nothing written
 * to guest memory. */
static void expect_refused(uint16_t head, int err)
{
	uint8_t *copy = malloc(FAKE_RAM);

	memcpy(copy, vm->ram, FAKE_RAM);
	fake_ring_offer(&r, head);
	memcpy(copy + r.avail, vm->ram + r.avail, 6 + 2 * r.size);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), err);
	CU_ASSERT_EQUAL(c.head, head);
	CU_ASSERT_EQUAL(memcmp(copy, vm->ram, FAKE_RAM), 0);
	CU_ASSERT_EQUAL(vm->dirty_calls, 0);
	free(copy);
}

static void test_malformed_chains_are_refused(void)
{
	struct hv_vring_desc *t;

	setup(true, false);
	t = (struct hv_vring_desc *)(vm->ram + 0x30000);
	/* Buffer beyond RAM, straddling its end, and a wrapping length. */
	fake_desc_set(&r, 0, FAKE_RAM, 16, 0, 0);
	expect_refused(0, -EFAULT);
	fake_desc_set(&r, 0, FAKE_RAM - 8, 16, 0, 0);
	expect_refused(0, -EFAULT);
	fake_desc_set(&r, 0, UINT64_MAX - 4, 16, 0, 0);
	expect_refused(0, -EFAULT);
	/* A loop: 1 -> 2 -> 1. */
	fake_desc_set(&r, 1, BUF, 4, N, 2);
	fake_desc_set(&r, 2, BUF, 4, N, 1);
	expect_refused(1, -ELOOP);
	/* A self loop of empty buffers. */
	fake_desc_set(&r, 1, BUF, 0, N, 1);
	expect_refused(1, -ELOOP);
	/* Next out of the table; head out of the table. */
	fake_desc_set(&r, 1, BUF, 4, N, 8);
	expect_refused(1, -EINVAL);
	expect_refused(9, -EINVAL);
	/* Readable after writable. */
	fake_desc_set(&r, 1, BUF, 4, W | N, 2);
	fake_desc_set(&r, 2, BUF, 4, 0, 0);
	expect_refused(1, -EINVAL);
	/* Indirect: with NEXT, empty, not a multiple of 16, outside RAM. */
	fake_desc_set(&r, 3, 0x30000, 32, I | N, 4);
	expect_refused(3, -EINVAL);
	fake_desc_set(&r, 3, 0x30000, 0, I, 0);
	expect_refused(3, -EINVAL);
	fake_desc_set(&r, 3, 0x30000, 20, I, 0);
	expect_refused(3, -EINVAL);
	fake_desc_set(&r, 3, FAKE_RAM - 16, 32, I, 0);
	expect_refused(3, -EFAULT);
	/* An indirect table inside an indirect table. */
	t[0] = (struct hv_vring_desc){0x30000, 32, I, 0};
	fake_desc_set(&r, 3, 0x30000, 32, I, 0);
	expect_refused(3, -EINVAL);
	/* A loop and a bad next inside the table. */
	t[0] = (struct hv_vring_desc){BUF, 4, N, 1};
	t[1] = (struct hv_vring_desc){BUF, 4, N, 0};
	expect_refused(3, -ELOOP);
	t[1] = (struct hv_vring_desc){BUF, 4, N, 2};
	expect_refused(3, -EINVAL);
	/* A table too large to walk. */
	fake_desc_set(&r, 3, 0x30000, 16 * (HV_VQ_MAX_SEGS + 1), I, 0);
	expect_refused(3, -E2BIG);
	teardown();

	/* Indirect descriptors when the feature was not negotiated. */
	setup(false, false);
	fake_desc_set(&r, 0, 0x30000, 32, I, 0);
	expect_refused(0, -EINVAL);
	teardown();
}

static void test_refused_chain_can_be_completed(void)
{
	uint32_t id, len;

	setup(false, false);
	fake_desc_set(&r, 4, FAKE_RAM, 16, 0, 0);
	fake_ring_offer(&r, 4);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), -EFAULT);
	hv_vq_push_head(&vq, c.head);
	CU_ASSERT_EQUAL(fake_used_idx(&r), 1);
	fake_used_elem(&r, 0, &id, &len);
	CU_ASSERT_EQUAL(id, 4);
	CU_ASSERT_EQUAL(len, 0);
	teardown();
}

static void test_broken_avail_index_needs_reset(void)
{
	setup(false, false);
	fake_avail(&r)[1] = 9; /* 9 buffers in a ring of 8 */
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), -EPROTO);
	teardown();
}

static void test_rings_outside_ram_are_refused(void)
{
	vm = fake_vm_new();
	fake_ring_init(&r, vm, RING, 8);
	fake_ring_vq(&r, &vq, false, false);
	vq.used_gpa = FAKE_RAM - 8;
	CU_ASSERT_EQUAL(hv_vq_start(&vq), -EFAULT);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 0);
	fake_ring_vq(&r, &vq, false, false);
	vq.desc_gpa += 8;
	CU_ASSERT_EQUAL(hv_vq_start(&vq), -EINVAL);
	fake_ring_vq(&r, &vq, false, false);
	vq.size = 6;
	CU_ASSERT_EQUAL(hv_vq_start(&vq), -EINVAL);
	fake_vm_free(vm);
}

static void test_event_idx_suppresses_interrupts(void)
{
	uint16_t *used_event;

	setup(false, true);
	used_event = &fake_avail(&r)[2 + r.size];
	for (unsigned i = 0; i < 4; i++) {
		fake_desc_set(&r, i, BUF, 4, 0, 0);
		fake_ring_offer(&r, i);
	}
	/* The first interrupt always goes. */
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	hv_vq_push(&vq, &c, 0);
	CU_ASSERT(hv_vq_need_irq(&vq));
	/* The driver wants one when used idx passes 2 (used_event = 2). */
	*used_event = 2;
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	hv_vq_push(&vq, &c, 0);
	CU_ASSERT_FALSE(hv_vq_need_irq(&vq)); /* idx 2: not past 2 yet */
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	hv_vq_push(&vq, &c, 0);
	CU_ASSERT(hv_vq_need_irq(&vq)); /* idx 3 passed 2 */
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	hv_vq_push(&vq, &c, 0);
	CU_ASSERT_FALSE(hv_vq_need_irq(&vq));

	/* avail_event tells the driver which index to notify at. */
	CU_ASSERT_FALSE(hv_vq_notify_enable(&vq));
	CU_ASSERT_EQUAL(*(uint16_t *)(vm->ram + r.used + 4 + 8 * r.size), 4);
	fake_ring_offer(&r, 0);
	CU_ASSERT(hv_vq_notify_enable(&vq));
	teardown();
}

static void test_no_interrupt_flag_without_event_idx(void)
{
	setup(false, false);
	fake_desc_set(&r, 0, BUF, 4, 0, 0);
	fake_ring_offer(&r, 0);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	hv_vq_push(&vq, &c, 0);
	CU_ASSERT(hv_vq_need_irq(&vq));
	fake_avail(&r)[0] = HV_VRING_AVAIL_F_NO_INTERRUPT;
	CU_ASSERT_FALSE(hv_vq_need_irq(&vq));
	hv_vq_notify_disable(&vq);
	CU_ASSERT_EQUAL(*(uint16_t *)(vm->ram + r.used),
			HV_VRING_USED_F_NO_NOTIFY);
	hv_vq_notify_enable(&vq);
	CU_ASSERT_EQUAL(*(uint16_t *)(vm->ram + r.used), 0);
	teardown();
}

static void test_iov_covers_a_range(void)
{
	struct iovec iov[4];

	setup(false, false);
	fake_desc_set(&r, 0, BUF, 10, N, 1);
	fake_desc_set(&r, 1, BUF + 0x100, 10, N, 2);
	fake_desc_set(&r, 2, BUF + 0x200, 1, W, 0);
	fake_ring_offer(&r, 0);
	CU_ASSERT_EQUAL(hv_vq_pop(&vq, &c), 1);
	CU_ASSERT_EQUAL(hv_vq_iov(c.rd, c.nrd, 4, 10, iov, 4), 2);
	CU_ASSERT_PTR_EQUAL(iov[0].iov_base, vm->ram + BUF + 4);
	CU_ASSERT_EQUAL(iov[0].iov_len, 6);
	CU_ASSERT_EQUAL(iov[1].iov_len, 4);
	CU_ASSERT_EQUAL(hv_vq_iov(c.rd, c.nrd, 4, 10, iov, 1), 0);
	CU_ASSERT_EQUAL(hv_vq_iov(c.rd, c.nrd, 4, 20, iov, 4), 0);
	teardown();
}

static CU_TestInfo tests[] = {
	{"chain_splits_into_readable_and_writable",
	 test_chain_splits_into_readable_and_writable},
	{"indirect_table_is_walked", test_indirect_table_is_walked},
	{"malformed_chains_are_refused", test_malformed_chains_are_refused},
	{"refused_chain_can_be_completed", test_refused_chain_can_be_completed},
	{"broken_avail_index_needs_reset", test_broken_avail_index_needs_reset},
	{"rings_outside_ram_are_refused", test_rings_outside_ram_are_refused},
	{"event_idx_suppresses_interrupts",
	 test_event_idx_suppresses_interrupts},
	{"no_interrupt_flag_without_event_idx",
	 test_no_interrupt_flag_without_event_idx},
	{"iov_covers_a_range", test_iov_covers_a_range},
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/devices/virtqueue", NULL, NULL, tests);
