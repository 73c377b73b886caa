// SPDX-License-Identifier: MIT
/*
 * The session id as the migration's UUID (migrated/mig/handshake.h): a
 * new id is marked as a random (version 4) RFC 4122 UUID, and any 16
 * bytes format as its canonical text, so that an older source's plain
 * random id prints too.
 */
#include "tests/harness/hv_test.h"

#include <string.h>

#include "migrated/mig/handshake.h"

static void test_uuid_text_is_canonical(void)
{
	static const uint8_t id[MIG_SESSION_ID_LEN] = {
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
	};
	char s[MIG_UUID_STR_LEN];

	memset(s, 'x', sizeof(s));
	mig_uuid_format(id, s);
	CU_ASSERT_STRING_EQUAL(s, "00112233-4455-6677-8899-aabbccddeeff");
	CU_ASSERT_EQUAL(strlen(s), MIG_UUID_STR_LEN - 1);
}

static void test_new_ids_are_v4_and_differ(void)
{
	uint8_t a[MIG_SESSION_ID_LEN], b[MIG_SESSION_ID_LEN];
	char s[MIG_UUID_STR_LEN];

	for (int i = 0; i < 64; i++) {
		CU_ASSERT_EQUAL_FATAL(mig_session_id_new(a), 0);
		CU_ASSERT_EQUAL(a[6] >> 4, 4);	  /* version 4 */
		CU_ASSERT_EQUAL(a[8] & 0xc0, 0x80); /* RFC 4122 variant */
		mig_uuid_format(a, s);
		CU_ASSERT_EQUAL(s[14], '4');
		CU_ASSERT_PTR_NOT_NULL(strchr("89ab", s[19]));
	}
	CU_ASSERT_EQUAL_FATAL(mig_session_id_new(b), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
}

static CU_TestInfo tests[] = {
	{ "uuid_text_is_canonical", test_uuid_text_is_canonical },
	{ "new_ids_are_v4_and_differ", test_new_ids_are_v4_and_differ },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/mig/handshake", NULL, NULL, tests);
