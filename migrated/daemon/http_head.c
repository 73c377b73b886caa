// SPDX-License-Identifier: MIT
/*
 * migd_http_head: the metrics endpoint's request-head parser (http_head.h).
 */
#include <stdbool.h>
#include <string.h>

#include "migrated/daemon/http_head.h"

static bool starts_with(const char *buf, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len >= n && !memcmp(buf, lit, n);
}

enum migd_http_verdict migd_http_head_parse(const char *buf, size_t len,
					    size_t max)
{
	if (!memmem(buf, len, "\r\n\r\n", 4) && !memmem(buf, len, "\n\n", 2))
		return len >= max ? MIGD_HTTP_TOO_LARGE : MIGD_HTTP_MORE;
	if (!starts_with(buf, len, "GET "))
		return MIGD_HTTP_BAD_METHOD;
	if (!starts_with(buf + 4, len - 4, "/metrics ") &&
	    !starts_with(buf + 4, len - 4, "/metrics?"))
		return MIGD_HTTP_NOT_FOUND;
	return MIGD_HTTP_METRICS;
}
