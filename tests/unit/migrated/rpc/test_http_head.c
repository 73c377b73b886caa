// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint's request-head parser (migrated/rpc/http_head.c).
 */
#include <string.h>

#include "hvcore/types.h"
#include "migrated/rpc/http_head.h"
#include "tests/harness/hv_test.h"

#define MAX 8191u

static enum migd_http_verdict parse(const char *s)
{
	return migd_http_head_parse(s, strlen(s), MAX);
}

static void test_only_get_or_head_of_metrics_is_served(void)
{
	static const struct {
		const char *head;
		enum migd_http_verdict v;
	} cases[] = {
		{"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", MIGD_HTTP_METRICS},
		{"GET /metrics?x=1 HTTP/1.0\n\n", MIGD_HTTP_METRICS},
		{"HEAD /metrics HTTP/1.1\r\n\r\n", MIGD_HTTP_METRICS_HEAD},
		{"HEAD /metrics?x HTTP/1.1\r\n\r\n", MIGD_HTTP_METRICS_HEAD},
		{"HEAD / HTTP/1.1\r\n\r\n", MIGD_HTTP_NOT_FOUND},
		{"HEAD/metrics HTTP/1.1\r\n\r\n", MIGD_HTTP_BAD_METHOD},
		{"GET / HTTP/1.1\r\n\r\n", MIGD_HTTP_NOT_FOUND},
		{"GET /metricsX HTTP/1.1\r\n\r\n", MIGD_HTTP_NOT_FOUND},
		{"GET /metrics\n\n", MIGD_HTTP_NOT_FOUND},
		{"GET \n\n", MIGD_HTTP_NOT_FOUND},
		{"POST /metrics HTTP/1.1\r\n\r\n", MIGD_HTTP_BAD_METHOD},
		{"get /metrics HTTP/1.1\r\n\r\n", MIGD_HTTP_BAD_METHOD},
		{"GE\n\n", MIGD_HTTP_BAD_METHOD},
		{"\n\n", MIGD_HTTP_BAD_METHOD},
	};

	for (size_t i = 0; i < HV_ARRAY_SIZE(cases); i++)
		CU_ASSERT_EQUAL(parse(cases[i].head), cases[i].v);
}

static void test_waits_for_the_blank_line(void)
{
	const char *full = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
	size_t n = strlen(full);

	/* Every proper prefix, as reads may cut it, asks for more. */
	for (size_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(migd_http_head_parse(full, i, MAX),
				MIGD_HTTP_MORE);
	CU_ASSERT_EQUAL(migd_http_head_parse(full, n, MAX), MIGD_HTTP_METRICS);
}

static void test_full_buffer_without_end_is_431(void)
{
	static char buf[MAX];

	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET /metrics HTTP/1.1\r\n", 23);
	CU_ASSERT_EQUAL(migd_http_head_parse(buf, MAX - 1, MAX),
			MIGD_HTTP_MORE);
	CU_ASSERT_EQUAL(migd_http_head_parse(buf, MAX, MAX),
			MIGD_HTTP_TOO_LARGE);
	/* The blank line in the last bytes still counts. */
	memcpy(buf + MAX - 4, "\r\n\r\n", 4);
	CU_ASSERT_EQUAL(migd_http_head_parse(buf, MAX, MAX), MIGD_HTTP_METRICS);
}

static void test_nul_bytes_do_not_hide_the_end(void)
{
	/* Bytes are counted, not read up to a NUL: a head with a NUL in a
	 * header is answered at its blank line, not left to time out. */
	static const char head[] = "GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n";
	static const char bad[] = "GET /\0metrics HTTP/1.1\r\n\r\n";

	CU_ASSERT_EQUAL(migd_http_head_parse(head, sizeof(head) - 1, MAX),
			MIGD_HTTP_METRICS);
	CU_ASSERT_EQUAL(migd_http_head_parse(bad, sizeof(bad) - 1, MAX),
			MIGD_HTTP_NOT_FOUND);
}

static CU_TestInfo tests[] = {
	{"only_get_or_head_of_metrics_is_served",
	 test_only_get_or_head_of_metrics_is_served},
	{"waits_for_the_blank_line", test_waits_for_the_blank_line},
	{"full_buffer_without_end_is_431", test_full_buffer_without_end_is_431},
	{"nul_bytes_do_not_hide_the_end", test_nul_bytes_do_not_hide_the_end},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/http_head", NULL, NULL, tests);
