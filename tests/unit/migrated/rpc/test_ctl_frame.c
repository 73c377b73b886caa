// SPDX-License-Identifier: MIT
/*
 * Control-RPC framing (migrated/rpc/ctl_frame.c): lengths, truncation,
 * oversized and zero-length frames, reassembly from arbitrary pieces.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migrated/rpc/ctl_frame.h"
#include "proto/control.pb-c.h"
#include "tests/harness/hv_test.h"

static void test_length_is_little_endian(void)
{
	uint8_t h[4];
	uint32_t len = 0;

	migd_frame_put_len(h, 0x00010203);
	CU_ASSERT_EQUAL(h[0], 0x03);
	CU_ASSERT_EQUAL(h[1], 0x02);
	CU_ASSERT_EQUAL(h[2], 0x01);
	CU_ASSERT_EQUAL(h[3], 0x00);
	CU_ASSERT_EQUAL(migd_frame_get_len(h, MIGD_FRAME_MAX, &len), 0);
	CU_ASSERT_EQUAL(len, 0x00010203);
}

static void test_zero_and_oversized_lengths_refused(void)
{
	uint8_t h[4];
	uint32_t len = 77;

	migd_frame_put_len(h, 0);
	CU_ASSERT_EQUAL(migd_frame_get_len(h, MIGD_FRAME_MAX, &len),
			-EMSGSIZE);
	migd_frame_put_len(h, MIGD_FRAME_MAX + 1);
	CU_ASSERT_EQUAL(migd_frame_get_len(h, MIGD_FRAME_MAX, &len),
			-EMSGSIZE);
	migd_frame_put_len(h, 0xffffffffu);
	CU_ASSERT_EQUAL(migd_frame_get_len(h, MIGD_FRAME_MAX, &len),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(len, 77); /* untouched on failure */
	migd_frame_put_len(h, MIGD_FRAME_MAX);
	CU_ASSERT_EQUAL(migd_frame_get_len(h, MIGD_FRAME_MAX, &len), 0);
}

static void test_pack_roundtrips_through_framer_byte_by_byte(void)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__VmRef ref = MIGD__VM_REF__INIT;
	struct migd_framer f;
	const uint8_t *msg;
	uint8_t *frame;
	size_t flen;
	uint32_t len;
	int got = 0;

	ref.name = (char *)"vm-1";
	req.id = 42;
	req.call_case = MIGD__REQUEST__CALL_VM_INSPECT;
	req.vm_inspect = &ref;
	CU_ASSERT_EQUAL_FATAL(migd_frame_pack(&req.base, MIGD_FRAME_MAX,
					      &frame, &flen),
			      0);
	migd_framer_init(&f, MIGD_FRAME_MAX);
	/* Two frames back to back, fed one byte at a time. */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < flen; i++) {
			CU_ASSERT_EQUAL(migd_framer_feed(&f, frame + i, 1), 0);
			int r = migd_framer_next(&f, &msg, &len);

			if (i + 1 < flen) {
				CU_ASSERT_EQUAL(r, 0);
			} else {
				Migd__Request *back;

				CU_ASSERT_EQUAL_FATAL(r, 1);
				CU_ASSERT_EQUAL(len, flen - MIGD_FRAME_HDR);
				back = migd__request__unpack(NULL, len, msg);
				CU_ASSERT_PTR_NOT_NULL_FATAL(back);
				CU_ASSERT_EQUAL(back->id, 42);
				CU_ASSERT_STRING_EQUAL(back->vm_inspect->name,
						       "vm-1");
				migd__request__free_unpacked(back, NULL);
				got++;
			}
		}
	}
	CU_ASSERT_EQUAL(got, 2);
	CU_ASSERT_EQUAL(migd_framer_pending(&f), 0);
	migd_framer_fini(&f);
	free(frame);
}

static void test_several_frames_in_one_feed(void)
{
	uint8_t buf[3 * 8];
	struct migd_framer f;
	const uint8_t *msg;
	uint32_t len;

	for (int i = 0; i < 3; i++) {
		migd_frame_put_len(buf + i * 8, 4);
		memset(buf + i * 8 + 4, 'a' + i, 4);
	}
	migd_framer_init(&f, 16);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, buf, sizeof(buf)), 0);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(migd_framer_next(&f, &msg, &len), 1);
		CU_ASSERT_EQUAL(len, 4);
		CU_ASSERT_EQUAL(msg[0], 'a' + i);
	}
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), 0);
	migd_framer_fini(&f);
}

static void test_truncated_frame_is_pending_not_returned(void)
{
	uint8_t buf[4 + 10];
	struct migd_framer f;
	const uint8_t *msg;
	uint32_t len;

	migd_frame_put_len(buf, 10);
	memset(buf + 4, 1, 10);
	migd_framer_init(&f, 64);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, buf, 3), 0);
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), 0);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, buf + 3, 10), 0);
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), 0);
	CU_ASSERT_EQUAL(migd_framer_pending(&f), 13);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, buf + 13, 1), 0);
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), 1);
	CU_ASSERT_EQUAL(len, 10);
	migd_framer_fini(&f);
}

static void test_oversized_header_refused_before_body_and_sticky(void)
{
	uint8_t h[4];
	struct migd_framer f;
	const uint8_t *msg;
	uint32_t len;

	migd_framer_init(&f, 1024);
	migd_frame_put_len(h, 1025);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, h, 4), 0);
	/* Refused on the header alone: no megabytes buffered first. */
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), -EMSGSIZE);
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), -EMSGSIZE);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, h, 4), -EMSGSIZE);
	migd_framer_fini(&f);
}

static void test_zero_length_frame_refused(void)
{
	uint8_t h[4] = { 0, 0, 0, 0 };
	struct migd_framer f;
	const uint8_t *msg;
	uint32_t len;

	migd_framer_init(&f, 1024);
	CU_ASSERT_EQUAL(migd_framer_feed(&f, h, 4), 0);
	CU_ASSERT_EQUAL(migd_framer_next(&f, &msg, &len), -EMSGSIZE);
	migd_framer_fini(&f);
}

static void test_pack_refuses_empty_and_oversized_messages(void)
{
	Migd__Request empty = MIGD__REQUEST__INIT;
	Migd__Request big = MIGD__REQUEST__INIT;
	Migd__VmRef ref = MIGD__VM_REF__INIT;
	uint8_t *out = (uint8_t *)0x1;
	size_t n = 5;
	char *name = malloc(4096);

	CU_ASSERT_EQUAL(migd_frame_pack(&empty.base, MIGD_FRAME_MAX, &out, &n),
			-EMSGSIZE);
	memset(name, 'x', 4095);
	name[4095] = '\0';
	ref.name = name;
	big.id = 1;
	big.call_case = MIGD__REQUEST__CALL_VM_INSPECT;
	big.vm_inspect = &ref;
	CU_ASSERT_EQUAL(migd_frame_pack(&big.base, 1024, &out, &n),
			-EMSGSIZE);
	CU_ASSERT_PTR_EQUAL(out, (uint8_t *)0x1);
	CU_ASSERT_EQUAL(n, 5);
	free(name);
}

static CU_TestInfo tests[] = {
	{ "length_is_little_endian", test_length_is_little_endian },
	{ "zero_and_oversized_lengths_refused",
	  test_zero_and_oversized_lengths_refused },
	{ "pack_roundtrips_through_framer_byte_by_byte",
	  test_pack_roundtrips_through_framer_byte_by_byte },
	{ "several_frames_in_one_feed", test_several_frames_in_one_feed },
	{ "truncated_frame_is_pending_not_returned",
	  test_truncated_frame_is_pending_not_returned },
	{ "oversized_header_refused_before_body_and_sticky",
	  test_oversized_header_refused_before_body_and_sticky },
	{ "zero_length_frame_refused", test_zero_length_frame_refused },
	{ "pack_refuses_empty_and_oversized_messages",
	  test_pack_refuses_empty_and_oversized_messages },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/ctl_frame", NULL, NULL, tests);
