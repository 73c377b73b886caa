// SPDX-License-Identifier: MIT
/*
 * Target: the metrics endpoint's HTTP request-head parser
 * (migrated/rpc/http_head.h), run the way metrics.c runs it: on the
 * bytes received so far, after every read, until it gives a verdict, with
 * the endpoint's 8 KiB head buffer.
 *
 * The input's first byte seeds the sizes of the reads (1..512 bytes); the
 * rest is what the scraper sends.
 *
 * Promises checked: "read more" only while there is no blank line and room
 * is left; 431 only when the buffer is full without one; 200 only for
 * "GET /metrics" followed by ' ' or '?'; 404 only for other GETs.
 */
#include <string.h>

#include "migrated/rpc/http_head.h"
#include "tests/fuzz/fuzz_common.h"

#define HEAD_MAX 8191u /* metrics.c: HEAD_MAX - 1 bytes of head */

static bool has_end(const char *p, size_t n)
{
	return memmem(p, n, "\r\n\r\n", 4) || memmem(p, n, "\n\n", 2);
}

static void check(const char *p, size_t n, enum migd_http_verdict v)
{
	bool get = n >= 4 && !memcmp(p, "GET ", 4);
	bool head = n >= 5 && !memcmp(p, "HEAD ", 5);
	size_t m = head ? 5 : 4; /* the path's offset */
	bool path = n >= m + 9 && !memcmp(p + m, "/metrics", 8) &&
		    (p[m + 8] == ' ' || p[m + 8] == '?');

	switch (v) {
	case MIGD_HTTP_MORE:
		FUZZ_CHECK(!has_end(p, n) && n < HEAD_MAX);
		break;
	case MIGD_HTTP_TOO_LARGE:
		FUZZ_CHECK(!has_end(p, n) && n >= HEAD_MAX);
		break;
	case MIGD_HTTP_METRICS:
		FUZZ_CHECK(has_end(p, n) && get && path);
		break;
	case MIGD_HTTP_METRICS_HEAD:
		FUZZ_CHECK(has_end(p, n) && head && path);
		break;
	case MIGD_HTTP_NOT_FOUND:
		FUZZ_CHECK(has_end(p, n) && (get || head) && !path);
		break;
	case MIGD_HTTP_BAD_METHOD:
		FUZZ_CHECK(has_end(p, n) && !get && !head);
		break;
	default:
		FUZZ_CHECK(!"unknown verdict");
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char head[HEAD_MAX];
	enum migd_http_verdict v = MIGD_HTTP_MORE;
	uint32_t rng;
	size_t off = 1, len = 0;

	if (size < 1)
		return 0;
	rng = data[0] | 1u;
	while (v == MIGD_HTTP_MORE && off < size) {
		size_t n;

		rng = rng * 1103515245u + 12345u;
		n = HV_MIN(size - off, 1 + (rng >> 16) % 512);
		n = HV_MIN(n, HEAD_MAX - len);
		memcpy(head + len, data + off, n);
		len += n;
		off += n;
		v = migd_http_head_parse(head, len, HEAD_MAX);
		check(head, len, v);
	}
	return 0;
}
