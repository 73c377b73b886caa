// SPDX-License-Identifier: MIT
/*
 * Operator-string parsing (migrated/rpc/parse.c).
 */
#include <string.h>

#include "migrated/rpc/parse.h"
#include "migrated/mig/layout.h"
#include "tests/harness/hv_test.h"

static void test_hostport_accepts_names_v4_v6_and_any(void)
{
	char h[64];
	uint16_t p = 0;

	CU_ASSERT_EQUAL(migd_parse_hostport("localhost:4444", false, h,
					    sizeof(h), &p), 0);
	CU_ASSERT_STRING_EQUAL(h, "localhost");
	CU_ASSERT_EQUAL(p, 4444);
	CU_ASSERT_EQUAL(migd_parse_hostport("127.0.0.1:1", false, h,
					    sizeof(h), &p), 0);
	CU_ASSERT_EQUAL(p, 1);
	CU_ASSERT_EQUAL(migd_parse_hostport("[::1]:65535", false, h,
					    sizeof(h), &p), 0);
	CU_ASSERT_STRING_EQUAL(h, "::1");
	CU_ASSERT_EQUAL(p, 65535);
	CU_ASSERT_EQUAL(migd_parse_hostport(":0", true, h, sizeof(h), &p), 0);
	CU_ASSERT_STRING_EQUAL(h, "");
	CU_ASSERT_EQUAL(p, 0);
}

static void test_hostport_refuses_bad_ports_and_hosts(void)
{
	static const char *const bad[] = {
		"", "host", "host:", "host:0", "host:65536", "host:-1",
		"host:12x", "::1:80", "[::1]80", "[::1:80", "ho st:80",
		"host:+80", "a;b:80",
	};
	char h[64];
	uint16_t p = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(migd_parse_hostport(bad[i], false, h,
						    sizeof(h), &p), -EINVAL);
	}
	CU_ASSERT_EQUAL(p, 7);
	/* A host longer than the buffer is refused, not truncated. */
	CU_ASSERT_EQUAL(migd_parse_hostport("abcdefgh:80", false, h, 8, &p),
			-EINVAL);
}

static void test_listen_takes_a_port_or_a_range(void)
{
	char h[64];
	uint16_t lo = 0, hi = 0;

	CU_ASSERT_EQUAL(migd_parse_listen("10.0.0.5:49152-49215", h,
					  sizeof(h), &lo, &hi), 0);
	CU_ASSERT_STRING_EQUAL(h, "10.0.0.5");
	CU_ASSERT_EQUAL(lo, 49152);
	CU_ASSERT_EQUAL(hi, 49215);
	CU_ASSERT_EQUAL(migd_parse_listen("[::1]:7000-7000", h, sizeof(h),
					  &lo, &hi), 0);
	CU_ASSERT_STRING_EQUAL(h, "::1");
	CU_ASSERT_EQUAL(lo, 7000);
	CU_ASSERT_EQUAL(hi, 7000);
	/* A dash in the host name is not a range. */
	CU_ASSERT_EQUAL(migd_parse_listen("mig-net.example:0", h, sizeof(h),
					  &lo, &hi), 0);
	CU_ASSERT_STRING_EQUAL(h, "mig-net.example");
	CU_ASSERT_EQUAL(lo, 0);
	CU_ASSERT_EQUAL(hi, 0);
}

static void test_listen_refuses_empty_and_reversed_ranges(void)
{
	static const char *const bad[] = {
		"h:5000-", "h:-5000", "h:5001-5000", "h:0-10", "h:1-65536",
		"h:1-2-3", "h:1-x", "h", "",
	};
	char h[64];
	uint16_t lo = 7, hi = 7;

	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++)
		CU_ASSERT_EQUAL(migd_parse_listen(bad[i], h, sizeof(h), &lo,
						  &hi), -EINVAL);
	CU_ASSERT_EQUAL(lo, 7);
	CU_ASSERT_EQUAL(hi, 7);
}

static void test_size_units(void)
{
	uint64_t v;

	CU_ASSERT_EQUAL(migd_parse_size("4096", &v), 0);
	CU_ASSERT_EQUAL(v, 4096);
	CU_ASSERT_EQUAL(migd_parse_size("64K", &v), 0);
	CU_ASSERT_EQUAL(v, 64 << 10);
	CU_ASSERT_EQUAL(migd_parse_size("512m", &v), 0);
	CU_ASSERT_EQUAL(v, 512ull << 20);
	CU_ASSERT_EQUAL(migd_parse_size("1GiB", &v), 0);
	CU_ASSERT_EQUAL(v, 1ull << 30);
	CU_ASSERT_EQUAL(migd_parse_size("2GB", &v), 0);
	CU_ASSERT_EQUAL(v, 2ull << 30);
	CU_ASSERT_EQUAL(migd_parse_size("10B", &v), 0);
	CU_ASSERT_EQUAL(v, 10);
}

static void test_size_refuses_junk_and_overflow(void)
{
	static const char *const bad[] = { "", "G", "1X", "1GG", "1 G",
					   "-1", "99999999999T",
					   "18446744073709551616" };
	uint64_t v = 3;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(migd_parse_size(bad[i], &v), -EINVAL);
	CU_ASSERT_EQUAL(v, 3);
}

static void test_vm_names(void)
{
	char long_name[80];

	CU_ASSERT_TRUE(migd_name_valid("vm1"));
	CU_ASSERT_TRUE(migd_name_valid("web-01.prod_a"));
	CU_ASSERT_FALSE(migd_name_valid(""));
	CU_ASSERT_FALSE(migd_name_valid("."));
	CU_ASSERT_FALSE(migd_name_valid(".."));
	CU_ASSERT_FALSE(migd_name_valid("-x"));
	CU_ASSERT_FALSE(migd_name_valid("a/b"));
	CU_ASSERT_FALSE(migd_name_valid("a b"));
	CU_ASSERT_FALSE(migd_name_valid(NULL));
	memset(long_name, 'a', sizeof(long_name));
	long_name[MIGD_NAME_MAX] = '\0';
	CU_ASSERT_TRUE(migd_name_valid(long_name));
	long_name[MIGD_NAME_MAX] = 'a';
	long_name[MIGD_NAME_MAX + 1] = '\0';
	CU_ASSERT_FALSE(migd_name_valid(long_name));
}

/* Names travel in the migration stream (VmLayout.name), checked there by
 * mig_vm_name_valid(): both rules must agree, or a VM created here could
 * not migrate under its name, or a peer could land a name the API would
 * refuse. */
static void test_vm_name_rule_matches_the_stream(void)
{
	static const char *const cases[] = {
		"vm1", "web-01.prod_a", "", ".", "..", "-x", "a/b", "a b",
		"x.", "...", "_", "a\tb", "\xff", "A-Z_0.9", "a:1", "a%",
	};
	char s[2] = { 0, 0 };

	for (size_t i = 0; i < HV_ARRAY_SIZE(cases); i++)
		CU_ASSERT_EQUAL(migd_name_valid(cases[i]),
				mig_vm_name_valid(cases[i]));
	for (int c = 1; c < 256; c++) {
		s[0] = (char)c;
		CU_ASSERT_EQUAL(migd_name_valid(s), mig_vm_name_valid(s));
	}
	CU_ASSERT_EQUAL(MIGD_NAME_MAX, MIG_VM_NAME_MAX);
}

static void test_fmt_hostport_brackets_ipv6(void)
{
	char b[64];

	CU_ASSERT_STRING_EQUAL(migd_fmt_hostport(b, sizeof(b), "::1", 47400),
			       "[::1]:47400");
	CU_ASSERT_STRING_EQUAL(migd_fmt_hostport(b, sizeof(b), "127.0.0.1",
						 1),
			       "127.0.0.1:1");
	CU_ASSERT_STRING_EQUAL(migd_fmt_hostport(b, sizeof(b), "localhost",
						 0),
			       "localhost:0");
	CU_ASSERT_STRING_EQUAL(migd_fmt_hostport(b, sizeof(b), "", 9), "*:9");
	/* What it prints, parse_hostport reads back. */
	{
		char h[64];
		uint16_t p;

		migd_fmt_hostport(b, sizeof(b), "fe80::1", 65535);
		CU_ASSERT_EQUAL(migd_parse_hostport(b, false, h, sizeof(h),
						    &p),
				0);
		CU_ASSERT_STRING_EQUAL(h, "fe80::1");
		CU_ASSERT_EQUAL(p, 65535);
	}
	/* Truncated, still terminated. */
	CU_ASSERT_STRING_EQUAL(migd_fmt_hostport(b, 5, "::1", 80), "[::1");
}

static CU_TestInfo tests[] = {
	{ "fmt_hostport_brackets_ipv6", test_fmt_hostport_brackets_ipv6 },
	{ "hostport_accepts_names_v4_v6_and_any",
	  test_hostport_accepts_names_v4_v6_and_any },
	{ "hostport_refuses_bad_ports_and_hosts",
	  test_hostport_refuses_bad_ports_and_hosts },
	{ "listen_takes_a_port_or_a_range",
	  test_listen_takes_a_port_or_a_range },
	{ "listen_refuses_empty_and_reversed_ranges",
	  test_listen_refuses_empty_and_reversed_ranges },
	{ "size_units", test_size_units },
	{ "size_refuses_junk_and_overflow",
	  test_size_refuses_junk_and_overflow },
	{ "vm_names", test_vm_names },
	{ "vm_name_rule_matches_the_stream",
	  test_vm_name_rule_matches_the_stream },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/parse", NULL, NULL, tests);
