// SPDX-License-Identifier: MIT
/* Round trips of the migration stream schema (proto/migration.proto). */
#include "tests/harness/hv_test.h"
#include "proto/migration.pb-c.h"

#include <stdlib.h>
#include <string.h>

static void test_hello_round_trip_keeps_every_field(void)
{
	Mig__Hello in = MIG__HELLO__INIT, *out;
	uint8_t sid[16], *buf;
	size_t len;

	for (unsigned i = 0; i < sizeof(sid); i++)
		sid[i] = (uint8_t)(i * 7 + 1);
	in.version_min = 1;
	in.version_max = 2;
	in.role = MIG__ROLE__ROLE_DATA;
	in.session_id.data = sid;
	in.session_id.len = sizeof(sid);
	in.channel_index = 3;
	in.nr_channels = 4;
	in.host_id = "src";

	len = mig__hello__get_packed_size(&in);
	buf = malloc(len);
	CU_ASSERT_EQUAL_FATAL(mig__hello__pack(&in, buf), len);
	out = mig__hello__unpack(NULL, len, buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(out->version_min, 1);
	CU_ASSERT_EQUAL(out->version_max, 2);
	CU_ASSERT_EQUAL(out->role, MIG__ROLE__ROLE_DATA);
	CU_ASSERT_EQUAL(out->session_id.len, sizeof(sid));
	CU_ASSERT(!memcmp(out->session_id.data, sid, sizeof(sid)));
	CU_ASSERT_EQUAL(out->channel_index, 3);
	CU_ASSERT_EQUAL(out->nr_channels, 4);
	CU_ASSERT_STRING_EQUAL(out->host_id, "src");
	mig__hello__free_unpacked(out, NULL);
	free(buf);
}

static void test_layout_round_trip_keeps_every_slot(void)
{
	Mig__VmLayout in = MIG__VM_LAYOUT__INIT, *out;
	Mig__Memslot slots[3], *ps[3];
	uint8_t *buf;
	size_t len;

	for (unsigned i = 0; i < 3; i++) {
		mig__memslot__init(&slots[i]);
		slots[i].id = i;
		slots[i].base_gfn = 0x100000ULL * i;
		slots[i].npages = 512 * (i + 1);
		slots[i].flags = i & 1;
		ps[i] = &slots[i];
	}
	in.n_slots = 3;
	in.slots = ps;
	in.nr_vcpus = 2;
	in.accel = "kvm";
	in.page_size = 4096;

	len = mig__vm_layout__get_packed_size(&in);
	buf = malloc(len);
	mig__vm_layout__pack(&in, buf);
	out = mig__vm_layout__unpack(NULL, len, buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL_FATAL(out->n_slots, 3);
	for (unsigned i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(out->slots[i]->id, i);
		CU_ASSERT_EQUAL(out->slots[i]->base_gfn, 0x100000ULL * i);
		CU_ASSERT_EQUAL(out->slots[i]->npages, 512 * (i + 1));
		CU_ASSERT_EQUAL(out->slots[i]->flags, i & 1);
	}
	CU_ASSERT_EQUAL(out->nr_vcpus, 2);
	CU_ASSERT_STRING_EQUAL(out->accel, "kvm");
	mig__vm_layout__free_unpacked(out, NULL);
	free(buf);
}

static void test_truncated_layout_is_refused(void)
{
	Mig__VmLayout in = MIG__VM_LAYOUT__INIT;
	Mig__Memslot slot = MIG__MEMSLOT__INIT, *ps = &slot;
	uint8_t buf[128];
	size_t len;

	slot.npages = 1ULL << 40;
	in.n_slots = 1;
	in.slots = &ps;
	in.accel = "soft";
	len = mig__vm_layout__pack(&in, buf);
	CU_ASSERT_FATAL(len > 4);
	CU_ASSERT_PTR_NULL(mig__vm_layout__unpack(NULL, len - 3, buf));
}

static CU_TestInfo tests[] = {
	{ "hello_round_trip_keeps_every_field",
	  test_hello_round_trip_keeps_every_field },
	{ "layout_round_trip_keeps_every_slot",
	  test_layout_round_trip_keeps_every_slot },
	{ "truncated_layout_is_refused", test_truncated_layout_is_refused },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("proto/migration", NULL, NULL, tests);
