// SPDX-License-Identifier: MIT
/*
 * migd_http_head: the metrics endpoint's request-head parser (http_head.h).
 */
#include <stdbool.h>
#include <string.h>

#include "migrated/rpc/http_head.h"

static bool starts_with(const char *buf, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len >= n && !memcmp(buf, lit, n);
}

enum migd_http_verdict migd_http_head_parse(const char *buf, size_t len,
					    size_t max)
{
	size_t m;
	bool head = false;

	if (!memmem(buf, len, "\r\n\r\n", 4) && !memmem(buf, len, "\n\n", 2))
		return len >= max ? MIGD_HTTP_TOO_LARGE : MIGD_HTTP_MORE;
	if (starts_with(buf, len, "GET ")) {
		m = 4;
	} else if (starts_with(buf, len, "HEAD ")) {
		m = 5;
		head = true;
	} else {
		return MIGD_HTTP_BAD_METHOD;
	}
	if (!starts_with(buf + m, len - m, "/metrics ") &&
	    !starts_with(buf + m, len - m, "/metrics?"))
		return MIGD_HTTP_NOT_FOUND;
	return head ? MIGD_HTTP_METRICS_HEAD : MIGD_HTTP_METRICS;
}
