// SPDX-License-Identifier: MIT
/* Escaping of peer-supplied strings for logs (hvcore/log.c). */
#include "tests/harness/hv_test.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The message @msg logged in format @f into a pipe, read back. */
static void log_line(enum hv_log_format f, char *buf, size_t size,
		     const char *msg)
{
	int fds[2];
	ssize_t n;

	buf[0] = '\0';
	if (pipe(fds))
		return;
	hv_log_set_fd(fds[1]);
	hv_log_set_format(f);
	hv_log(HV_LOG_ERR, "test", "%s", msg);
	hv_log_set_format(HV_LOG_FORMAT_TEXT);
	hv_log_set_fd(2);
	close(fds[1]);
	n = read(fds[0], buf, size - 1);
	close(fds[0]);
	buf[n > 0 ? n : 0] = '\0';
}

static void test_json_format_is_one_object_with_every_field(void)
{
	char esc[HV_LOG_ESCAPE_LEN(32)], msg[256], line[1100];

	hv_log_escape("a \"q\" \\ \x01 b", esc, sizeof(esc));
	log_line(HV_LOG_FORMAT_JSON, line, sizeof(line),
		 "event=x vm=v1 bare words");
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "\"level\":\"error\","
					    "\"comp\":\"test\",\"event\":\"x\","
					    "\"vm\":\"v1\""));
	CU_ASSERT_EQUAL(line[0], '{');
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "}\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "\"msg\":\"bare words\"}"));
	/* A quoted value's log escapes become JSON escapes. */
	snprintf(msg, sizeof(msg), "why=\"%s\"", esc);
	log_line(HV_LOG_FORMAT_JSON, line, sizeof(line), msg);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(line, "\"why\":\"a \\\"q\\\" \\\\ \\u0001 b\"}\n"));
	/* Text stays key=value. */
	log_line(HV_LOG_FORMAT_TEXT, line, sizeof(line), "vm=v1");
	CU_ASSERT_PTR_NOT_NULL(strstr(line, " level=error comp=test vm=v1\n"));
}

static void test_json_format_survives_a_line_too_long(void)
{
	char big[3000], line[1100];

	memcpy(big, "k=\"", 3);
	memset(big + 3, 'x', sizeof(big) - 4);
	big[sizeof(big) - 1] = '\0';
	log_line(HV_LOG_FORMAT_JSON, line, sizeof(line), big);
	CU_ASSERT_EQUAL(line[0], '{');
	CU_ASSERT(strlen(line) <= 1024);
	CU_ASSERT(strlen(line) >= 2 && !strcmp(line + strlen(line) - 2, "}\n"));
}

static CU_TestInfo tests[] = {
	{ "escape_keeps_plain_text", test_escape_keeps_plain_text },
	{ "json_format_is_one_object_with_every_field",
	  test_json_format_is_one_object_with_every_field },
	{ "json_format_survives_a_line_too_long",
	  test_json_format_survives_a_line_too_long },
	{ "escape_defuses_quotes_newlines_and_control_bytes",
	  test_escape_defuses_quotes_newlines_and_control_bytes },
	{ "escape_cuts_long_strings_with_a_mark",
	  test_escape_cuts_long_strings_with_a_mark },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("hvcore/log", NULL, NULL, tests);
