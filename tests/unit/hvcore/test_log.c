// SPDX-License-Identifier: MIT
/* Escaping of peer-supplied strings for logs (hvcore/log.c). */
#include "tests/harness/hv_test.h"
#include "hvcore/log.h"

#include <string.h>

static void test_escape_keeps_plain_text(void)
{
	char b[HV_LOG_ESCAPE_LEN(16)];

	CU_ASSERT_STRING_EQUAL(hv_log_escape("vm-1.a_b", b, sizeof(b)),
			       "vm-1.a_b");
	CU_ASSERT_STRING_EQUAL(hv_log_escape(NULL, b, sizeof(b)), "");
}

/* A peer cannot end the quoted field, start a line or send escapes. */
static void test_escape_defuses_quotes_newlines_and_control_bytes(void)
{
	char b[HV_LOG_ESCAPE_LEN(32)];

	CU_ASSERT_STRING_EQUAL(
		hv_log_escape("x\" level=error\nts=\x1b[2J\\\xff", b, sizeof(b)),
		"x\\\" level=error\\x0ats=\\x1b[2J\\\\\\xff");
}

/* Cut to fit, marked, and never a half escape. */
static void test_escape_cuts_long_strings_with_a_mark(void)
{
	char b[8];

	CU_ASSERT_STRING_EQUAL(hv_log_escape("abcdefghij", b, sizeof(b)),
			       "abcd...");
	CU_ASSERT_STRING_EQUAL(hv_log_escape("abcdefg", b, sizeof(b)),
			       "abcdefg");
	CU_ASSERT_STRING_EQUAL(hv_log_escape("ab\n\n\n", b, sizeof(b)),
			       "ab...");
	CU_ASSERT_EQUAL(strlen(hv_log_escape("\n\n\n\n", b, 4)), 3);
}

static CU_TestInfo tests[] = {
	{ "escape_keeps_plain_text", test_escape_keeps_plain_text },
	{ "escape_defuses_quotes_newlines_and_control_bytes",
	  test_escape_defuses_quotes_newlines_and_control_bytes },
	{ "escape_cuts_long_strings_with_a_mark",
	  test_escape_cuts_long_strings_with_a_mark },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/log", NULL, NULL, tests);
