// SPDX-License-Identifier: MIT
/* The postcopy unsent-set codec (migrated/mig/postcopy_map.c) and its
 * frames. */
#include "tests/harness/hv_test.h"
#include "migrated/mig/frame.h"
#include "migrated/mig/postcopy_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void set_bit(uint64_t *b, uint64_t i)
{
	b[i >> 6] |= 1ull << (i & 63);
}

static bool get_bit(const uint64_t *b, uint64_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}

/* Encode [first, first + n) of @src, decode into a fresh bitmap of a slot
 * of @slot pages; the range must come back bit for bit. */
static unsigned round_trip(const uint64_t *src, uint64_t slot, uint64_t first,
			   uint64_t n, size_t *len_out)
{
	Mig__PostcopyUnsent u = MIG__POSTCOPY_UNSENT__INIT;
	uint64_t *dst = calloc((slot + 63) / 64, 8), set, added = 0, want = 0;
	unsigned enc;
	uint8_t *data;
	size_t len;

	CU_ASSERT_EQUAL_FATAL(mig_pc_unsent_encode(src, first, n, &data, &len,
						   &enc, &set),
			      0);
	u.slot = 1;
	u.first_page = first;
	u.npages = n;
	u.encoding = enc;
	u.data.data = data;
	u.data.len = len;
	u.set_pages = set;
	CU_ASSERT_EQUAL(mig_pc_unsent_apply(&u, slot, dst, &added), 0);
	for (uint64_t i = 0; i < slot; i++) {
		bool in = i >= first && i < first + n;

		if (in && get_bit(src, i))
			want++;
		if (get_bit(dst, i) != (in && get_bit(src, i))) {
			CU_FAIL("decoded bit differs");
			break;
		}
	}
	CU_ASSERT_EQUAL(added, want);
	CU_ASSERT_EQUAL(set, want);
	*len_out = len;
	free(data);
	free(dst);
	return enc;
}

static void test_unsent_round_trip_keeps_every_bit(void)
{
	uint64_t slot = 100000, *b = calloc((slot + 63) / 64, 8);
	size_t len;

	/* Nothing unsent: runs, no bytes. */
	CU_ASSERT_EQUAL(round_trip(b, slot, 0, slot, &len),
			MIG__UNSENT_ENCODING__UNSENT_RUNS);
	CU_ASSERT_EQUAL(len, 0);
	/* A hot region: two varints. */
	for (uint64_t i = 5000; i < 9000; i++)
		set_bit(b, i);
	CU_ASSERT_EQUAL(round_trip(b, slot, 0, slot, &len),
			MIG__UNSENT_ENCODING__UNSENT_RUNS);
	CU_ASSERT(len <= 6);
	/* Odd subranges and ends that cut runs. */
	round_trip(b, slot, 4999, 2, &len);
	round_trip(b, slot, 8999, 1, &len);
	round_trip(b, slot, 6000, slot - 6000, &len);
	/* Random pages: the bitmap is smaller than the runs. */
	srand(7);
	for (uint64_t i = 0; i < slot; i++)
		if (rand() & 1)
			set_bit(b, i);
	CU_ASSERT_EQUAL(round_trip(b, slot, 3, slot - 3, &len),
			MIG__UNSENT_ENCODING__UNSENT_BITMAP);
	CU_ASSERT_EQUAL(len, (slot - 3 + 7) / 8);
	round_trip(b, slot, 0, 13, &len);
	free(b);
}

static void test_unsent_never_larger_than_its_bitmap(void)
{
	uint64_t n = 4096, b[64] = { 0 };
	unsigned enc;
	uint8_t *data;
	size_t len;
	uint64_t set;

	/* Every other page: runs would be 2 bytes a page. */
	for (uint64_t i = 0; i < n; i += 2)
		set_bit(b, i);
	CU_ASSERT_EQUAL_FATAL(
		mig_pc_unsent_encode(b, 0, n, &data, &len, &enc, &set), 0);
	CU_ASSERT_EQUAL(enc, MIG__UNSENT_ENCODING__UNSENT_BITMAP);
	CU_ASSERT_EQUAL(len, n / 8);
	CU_ASSERT_EQUAL(set, n / 2);
	free(data);
	CU_ASSERT_EQUAL(mig_pc_unsent_encode(b, 0, 0, &data, &len, &enc, &set),
			-EINVAL);
	CU_ASSERT_EQUAL(mig_pc_unsent_encode(b, 0, MIG_PC_UNSENT_RANGE_MAX + 1,
					     &data, &len, &enc, &set),
			-EINVAL);
}

/* Apply @data as a RUNS/BITMAP range and expect @want; @bits must stay
 * untouched on error. */
static void expect_apply(unsigned enc, const uint8_t *data, size_t len,
			 uint64_t first, uint64_t n, uint64_t set,
			 uint64_t slot, int want)
{
	Mig__PostcopyUnsent u = MIG__POSTCOPY_UNSENT__INIT;
	uint64_t bits[4] = { 0 }, zero[4] = { 0 };

	u.first_page = first;
	u.npages = n;
	u.encoding = enc;
	u.data.data = (uint8_t *)data;
	u.data.len = len;
	u.set_pages = set;
	CU_ASSERT_EQUAL(mig_pc_unsent_apply(&u, slot, bits, NULL), want);
	if (want)
		CU_ASSERT(!memcmp(bits, zero, sizeof(bits)));
}

static void test_unsent_bad_range_writes_nothing(void)
{
	const unsigned R = MIG__UNSENT_ENCODING__UNSENT_RUNS;
	const unsigned B = MIG__UNSENT_ENCODING__UNSENT_BITMAP;
	const uint8_t ok[] = { 2, 3 };		 /* pages 2..4 */
	const uint8_t zero_run[] = { 2, 0 };	 /* a set run of 0 */
	const uint8_t past[] = { 100, 100 };	 /* beyond the range */
	const uint8_t trunc[] = { 2 };		 /* a pair cut short */
	const uint8_t unterminated[] = { 0x80 }; /* varint cut short */
	const uint8_t overlong[] = { 0x82, 0x00, 0x01 }; /* 2 not shortest */
	const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
				 0xff, 0xff, 0xff, 0xff, 0x7f, 1 };
	const uint8_t bm[] = { 0xff, 0x01 }; /* 9 pages */

	expect_apply(R, ok, sizeof(ok), 0, 200, 3, 256, 0);
	expect_apply(R, ok, sizeof(ok), 0, 200, 4, 256, -EBADMSG);
	expect_apply(R, zero_run, sizeof(zero_run), 0, 200, 0, 256, -EBADMSG);
	expect_apply(R, past, sizeof(past), 0, 150, 100, 256, -EBADMSG);
	expect_apply(R, trunc, sizeof(trunc), 0, 200, 0, 256, -EBADMSG);
	expect_apply(R, unterminated, sizeof(unterminated), 0, 200, 0, 256,
		     -EBADMSG);
	expect_apply(R, overlong, sizeof(overlong), 0, 200, 1, 256, -EBADMSG);
	expect_apply(R, huge, sizeof(huge), 0, 200, 1, 256, -EBADMSG);
	/* The range itself. */
	expect_apply(R, ok, sizeof(ok), 0, 0, 3, 256, -ERANGE);
	expect_apply(R, ok, sizeof(ok), 200, 57, 3, 256, -ERANGE);
	expect_apply(R, ok, sizeof(ok), UINT64_MAX, 2, 3, 256, -ERANGE);
	expect_apply(0, ok, sizeof(ok), 0, 200, 3, 256, -EBADMSG);
	expect_apply(7, ok, sizeof(ok), 0, 200, 3, 256, -EBADMSG);
	/* Bitmap: exact length, no bit past the range. */
	expect_apply(B, bm, sizeof(bm), 10, 9, 9, 256, 0);
	expect_apply(B, bm, sizeof(bm), 10, 8, 9, 256, -EBADMSG);
	expect_apply(B, bm, 1, 10, 9, 8, 256, -EBADMSG);
	expect_apply(B, bm, sizeof(bm), 10, 17, 9, 256, -EBADMSG);
	expect_apply(B, bm, sizeof(bm), 10, 9, 8, 256, -EBADMSG);
}

/*
 * Golden vectors of the postcopy frames (stream version 1, optional
 * feature MIG_FEATURE_POSTCOPY): PostcopyUnsent{slot 1, first_page 0,
 * npages 200, RUNS, data {2, 3}, set_pages 3} and PageRequest{seq 9,
 * gfns {5, 300}}.
 */
static const uint8_t golden_unsent_v1[] = {
	'M',  'I',  'G',  'S',	0x01, 0x00, 0x12, 0x00, 0x0d, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x01, 0x18, 0xc8, 0x01, 0x20,
	0x01, 0x2a, 0x02, 0x02, 0x03, 0x30, 0x03,
};
static const uint8_t golden_request_v1[] = {
	'M',  'I',  'G',  'S',	0x01, 0x00, 0x13, 0x00, 0x07, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x09, 0x12, 0x03,
	0x05, 0xac, 0x02,
};

static void test_postcopy_golden_vectors_are_stable(void)
{
	Mig__PostcopyUnsent u = MIG__POSTCOPY_UNSENT__INIT;
	Mig__PageRequest r = MIG__PAGE_REQUEST__INIT;
	uint8_t runs[] = { 2, 3 }, buf[128];
	uint64_t gfns[] = { 5, 300 }, bits[4] = { 0 };
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	size_t len, used;

	u.slot = 1;
	u.npages = 200;
	u.encoding = MIG__UNSENT_ENCODING__UNSENT_RUNS;
	u.data.data = runs;
	u.data.len = sizeof(runs);
	u.set_pages = 3;
	CU_ASSERT_EQUAL_FATAL(
		mig_frame_encode(MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT, &u.base,
				 buf, sizeof(buf), &len),
		0);
	CU_ASSERT_EQUAL_FATAL(len, sizeof(golden_unsent_v1));
	CU_ASSERT(!memcmp(buf, golden_unsent_v1, len));
	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(golden_unsent_v1,
					       sizeof(golden_unsent_v1), &h,
					       &m, &used),
			      0);
	CU_ASSERT_EQUAL(h.type, MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT);
	CU_ASSERT_EQUAL(mig_pc_unsent_apply((Mig__PostcopyUnsent *)m, 256,
					    bits, NULL),
			0);
	CU_ASSERT_EQUAL(bits[0], 0x1cull);
	mig_frame_msg_free(m);

	r.seq = 9;
	r.n_gfns = 2;
	r.gfns = gfns;
	CU_ASSERT_EQUAL_FATAL(mig_frame_encode(MIG__MSG_TYPE__MSG_PAGE_REQUEST,
					       &r.base, buf, sizeof(buf),
					       &len),
			      0);
	CU_ASSERT_EQUAL_FATAL(len, sizeof(golden_request_v1));
	CU_ASSERT(!memcmp(buf, golden_request_v1, len));
	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(golden_request_v1,
					       sizeof(golden_request_v1), &h,
					       &m, &used),
			      0);
	CU_ASSERT_EQUAL(mig_pc_request_check((Mig__PageRequest *)m), 0);
	CU_ASSERT_EQUAL(((Mig__PageRequest *)m)->gfns[1], 300);
	mig_frame_msg_free(m);
}

static void test_page_request_count_is_capped(void)
{
	Mig__PageRequest r = MIG__PAGE_REQUEST__INIT;
	uint64_t gfns[MIG_PC_REQ_MAX + 1] = { 0 };

	r.gfns = gfns;
	CU_ASSERT_EQUAL(mig_pc_request_check(&r), -EBADMSG);
	r.n_gfns = MIG_PC_REQ_MAX;
	CU_ASSERT_EQUAL(mig_pc_request_check(&r), 0);
	r.n_gfns = MIG_PC_REQ_MAX + 1;
	CU_ASSERT_EQUAL(mig_pc_request_check(&r), -EBADMSG);
	/* The frame cap stops a request far over the count before it is
	 * unpacked. */
	CU_ASSERT(mig_frame_max_len(MIG__MSG_TYPE__MSG_PAGE_REQUEST) <= 1024);
	CU_ASSERT(mig_frame_max_len(MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT) >=
		  MIG_PC_UNSENT_DATA_MAX);
}

static CU_TestInfo tests[] = {
	{ "unsent_round_trip_keeps_every_bit",
	  test_unsent_round_trip_keeps_every_bit },
	{ "unsent_never_larger_than_its_bitmap",
	  test_unsent_never_larger_than_its_bitmap },
	{ "unsent_bad_range_writes_nothing",
	  test_unsent_bad_range_writes_nothing },
	{ "postcopy_golden_vectors_are_stable",
	  test_postcopy_golden_vectors_are_stable },
	{ "page_request_count_is_capped", test_page_request_count_is_capped },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/postcopy_map", NULL, NULL, tests);
