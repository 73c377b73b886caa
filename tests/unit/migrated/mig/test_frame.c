// SPDX-License-Identifier: MIT
/* Framing of the migration stream (migrated/mig/frame.c). */
#include "tests/harness/hv_test.h"
#include "hvcore/memslots.h"
#include "migrated/mig/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Version 1 golden vector: Ack{pages = 5}. A wire change adds one. */
static const uint8_t golden_ack_v1[] = {
	'M', 'I', 'G', 'S', 0x01, 0x00, 0x0c, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x08, 0x05,
};

static void test_golden_vector_v1_is_stable(void)
{
	Mig__Ack ack = MIG__ACK__INIT;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	uint8_t buf[64];
	size_t len, used;

	ack.pages = 5;
	CU_ASSERT_EQUAL_FATAL(mig_frame_encode(MIG__MSG_TYPE__MSG_ACK,
					       &ack.base, buf, sizeof(buf),
					       &len),
			      0);
	CU_ASSERT_EQUAL_FATAL(len, sizeof(golden_ack_v1));
	CU_ASSERT(!memcmp(buf, golden_ack_v1, len));
	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(golden_ack_v1,
					       sizeof(golden_ack_v1), &h, &m,
					       &used),
			      0);
	CU_ASSERT_EQUAL(h.type, MIG__MSG_TYPE__MSG_ACK);
	CU_ASSERT_EQUAL(used, sizeof(golden_ack_v1));
	CU_ASSERT_EQUAL(((Mig__Ack *)m)->pages, 5);
	mig_frame_msg_free(m);
}

static void test_round_trip_keeps_message_and_type(void)
{
	Mig__Abort ab = MIG__ABORT__INIT;
	Mig__IterEnd ie = MIG__ITER_END__INIT;
	uint64_t counts[3] = { 7, 0, 1ULL << 40 };
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	uint8_t buf[256];
	size_t len, used;

	ab.reason = MIG__ABORT_REASON__ABORT_VERIFY;
	ab.detail = "digest mismatch";
	CU_ASSERT_EQUAL_FATAL(mig_frame_encode(MIG__MSG_TYPE__MSG_ABORT,
					       &ab.base, buf, sizeof(buf),
					       &len),
			      0);
	CU_ASSERT_EQUAL(len, mig_frame_size(&ab.base));
	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(buf, len, &h, &m, &used), 0);
	CU_ASSERT_EQUAL(h.version, MIG_FRAME_VERSION);
	CU_ASSERT_EQUAL(h.type, MIG__MSG_TYPE__MSG_ABORT);
	CU_ASSERT_EQUAL(((Mig__Abort *)m)->reason,
			MIG__ABORT_REASON__ABORT_VERIFY);
	CU_ASSERT_STRING_EQUAL(((Mig__Abort *)m)->detail, "digest mismatch");
	mig_frame_msg_free(m);

	ie.iteration = 3;
	ie.n_channel_batches = 3;
	ie.channel_batches = counts;
	CU_ASSERT_EQUAL_FATAL(mig_frame_encode(MIG__MSG_TYPE__MSG_ITER_END,
					       &ie.base, buf, sizeof(buf),
					       &len),
			      0);
	CU_ASSERT_EQUAL_FATAL(mig_frame_decode(buf, len, &h, &m, &used), 0);
	CU_ASSERT_EQUAL_FATAL(((Mig__IterEnd *)m)->n_channel_batches, 3);
	CU_ASSERT_EQUAL(((Mig__IterEnd *)m)->channel_batches[2], 1ULL << 40);
	mig_frame_msg_free(m);
}

static void test_encode_refuses_wrong_descriptor_and_small_buffer(void)
{
	Mig__Ack ack = MIG__ACK__INIT;
	uint8_t buf[8];
	size_t len = 0;

	CU_ASSERT_EQUAL(mig_frame_encode(MIG__MSG_TYPE__MSG_COMMIT, &ack.base,
					 buf, sizeof(buf), &len),
			-EINVAL);
	CU_ASSERT_EQUAL(mig_frame_encode(0, &ack.base, buf, sizeof(buf),
					 &len),
			-EINVAL);
	CU_ASSERT_EQUAL(mig_frame_encode(MIG__MSG_TYPE__MSG_ACK, &ack.base,
					 buf, sizeof(buf), &len),
			-ENOBUFS);
	CU_ASSERT_EQUAL(len, MIG_FRAME_HDR_SIZE);
}

static void test_truncated_frame_is_refused(void)
{
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	size_t used;

	for (size_t n = 0; n < sizeof(golden_ack_v1); n++)
		CU_ASSERT_EQUAL(mig_frame_decode(golden_ack_v1, n, &h, &m,
						 &used),
				-ENODATA);
}

static void test_bad_header_fields_are_refused(void)
{
	struct mig_frame_hdr h = {
		.magic = MIG_FRAME_MAGIC,
		.version = MIG_FRAME_VERSION,
		.type = MIG__MSG_TYPE__MSG_ACK,
		.len = 2,
	}, bad, out;
	uint8_t raw[MIG_FRAME_HDR_SIZE];

	mig_frame_hdr_encode(&h, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), 0);

	bad = h, bad.magic ^= 1;
	mig_frame_hdr_encode(&bad, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EPROTO);
	bad = h, bad.version = 0;
	mig_frame_hdr_encode(&bad, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EPROTO);
	bad = h, bad.version = MIG_FRAME_VERSION + 1;
	mig_frame_hdr_encode(&bad, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EPROTO);
	bad = h, bad.flags = 1;
	mig_frame_hdr_encode(&bad, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EPROTO);
	bad = h, bad.reserved = 0x8000;
	mig_frame_hdr_encode(&bad, raw);
	CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EPROTO);
	/* Type 0 (INVALID), one past the last and far beyond. */
	for (unsigned t = 0; t < 0x10000; t += t < 32 ? 1 : 997) {
		bad = h, bad.type = (uint16_t)t, bad.len = 0;
		mig_frame_hdr_encode(&bad, raw);
		if (t >= MIG__MSG_TYPE__MSG_HELLO &&
		    t <= MIG__MSG_TYPE__MSG_POSTCOPY_RESUME) {
			CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), 0);
		} else {
			CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out),
					-EPROTO);
		}
	}
}

static void test_oversized_length_is_refused_before_allocation(void)
{
	struct mig_frame_hdr h = {
		.magic = MIG_FRAME_MAGIC,
		.version = MIG_FRAME_VERSION,
	}, out;
	uint8_t raw[MIG_FRAME_HDR_SIZE];

	for (unsigned t = MIG__MSG_TYPE__MSG_HELLO;
	     t <= MIG__MSG_TYPE__MSG_POSTCOPY_DONE; t++) {
		uint32_t cap = mig_frame_max_len(t);

		CU_ASSERT(cap > 0 && cap <= MIG_FRAME_MSG_MAX);
		h.type = (uint16_t)t;
		h.len = cap;
		mig_frame_hdr_encode(&h, raw);
		CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), 0);
		h.len = cap + 1;
		mig_frame_hdr_encode(&h, raw);
		CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EMSGSIZE);
		h.len = UINT32_MAX;
		mig_frame_hdr_encode(&h, raw);
		CU_ASSERT_EQUAL(mig_frame_hdr_decode(raw, &out), -EMSGSIZE);
	}
	CU_ASSERT_EQUAL(mig_frame_max_len(0), 0);
}

static void test_garbage_message_is_refused(void)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f };
	/* Never dereferenced: a failed unpack must leave *out as it was. */
	ProtobufCMessage *const untouched = (ProtobufCMessage *)junk;
	ProtobufCMessage *m = untouched;

	CU_ASSERT_EQUAL(mig_frame_unpack(MIG__MSG_TYPE__MSG_HELLO, junk,
					 sizeof(junk), &m),
			-EBADMSG);
	CU_ASSERT_PTR_EQUAL(m, untouched);
	CU_ASSERT_EQUAL(mig_frame_unpack(99, junk, sizeof(junk), &m),
			-EINVAL);
}

/*
 * A layout of empty repeated slot entries, 2 bytes each on the wire, the
 * most a SETUP frame may carry: unpacked it would be 64 times its size.
 * The allocation cap refuses it; the largest real layout (HV_MEMSLOT_MAX
 * slots, every field at its widest) still unpacks.
 */
static void test_setup_of_empty_entries_is_refused_by_the_alloc_cap(void)
{
	size_t len = MIG_FRAME_SETUP_MAX;
	uint8_t *buf = malloc(len);
	Mig__Memslot *slots = calloc(HV_MEMSLOT_MAX, sizeof(*slots));
	Mig__Memslot **pp = calloc(HV_MEMSLOT_MAX, sizeof(*pp));
	Mig__VmLayout l = MIG__VM_LAYOUT__INIT;
	ProtobufCMessage *m = NULL;
	size_t n;

	CU_ASSERT_FATAL(buf && slots && pp);
	for (size_t i = 0; i + 1 < len; i += 2) {
		buf[i] = 0x0a; /* field 1 (slots), length-delimited */
		buf[i + 1] = 0x00;
	}
	CU_ASSERT_EQUAL(mig_frame_unpack(MIG__MSG_TYPE__MSG_SETUP, buf, len,
					 &m),
			-EMSGSIZE);
	CU_ASSERT_PTR_NULL(m);

	for (unsigned i = 0; i < HV_MEMSLOT_MAX; i++) {
		mig__memslot__init(&slots[i]);
		slots[i].id = UINT32_MAX;
		slots[i].base_gfn = UINT64_MAX;
		slots[i].npages = UINT64_MAX;
		slots[i].flags = UINT32_MAX;
		pp[i] = &slots[i];
	}
	l.n_slots = HV_MEMSLOT_MAX;
	l.slots = pp;
	l.accel = "kvm";
	l.name = "a-vm-name-of-the-longest-kind-allowed-here-63-bytes-"
		 "long-xxxxxx";
	n = protobuf_c_message_pack(&l.base, buf);
	CU_ASSERT(n <= len);
	CU_ASSERT_EQUAL(mig_frame_unpack(MIG__MSG_TYPE__MSG_SETUP, buf, n, &m),
			0);
	CU_ASSERT_EQUAL(((Mig__VmLayout *)m)->n_slots, HV_MEMSLOT_MAX);
	mig_frame_msg_free(m);
	free(pp);
	free(slots);
	free(buf);
}

static CU_TestInfo tests[] = {
	{ "golden_vector_v1_is_stable", test_golden_vector_v1_is_stable },
	{ "round_trip_keeps_message_and_type",
	  test_round_trip_keeps_message_and_type },
	{ "encode_refuses_wrong_descriptor_and_small_buffer",
	  test_encode_refuses_wrong_descriptor_and_small_buffer },
	{ "truncated_frame_is_refused", test_truncated_frame_is_refused },
	{ "bad_header_fields_are_refused",
	  test_bad_header_fields_are_refused },
	{ "oversized_length_is_refused_before_allocation",
	  test_oversized_length_is_refused_before_allocation },
	{ "garbage_message_is_refused", test_garbage_message_is_refused },
	{ "setup_of_empty_entries_is_refused_by_the_alloc_cap",
	  test_setup_of_empty_entries_is_refused_by_the_alloc_cap },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/frame", NULL, NULL, tests);
