/* SPDX-License-Identifier: MIT */
/*
 * migd_http_head: what the metrics endpoint (metrics.h) makes of the bytes
 * of an HTTP request head received so far. Pure and thread-safe; it reads
 * exactly @len bytes and needs no terminating NUL, so it can be run on any
 * bytes a peer sends (tests/fuzz/fuzz_metrics_http.c does).
 *
 * The head is complete at the first blank line ("\r\n\r\n", or "\n\n" from
 * a sloppy client). Only the request line is looked at: "GET /metrics "
 * or "GET /metrics?..." is the one request served (HEAD the same without
 * the body); headers are ignored.
 */
#ifndef MIGD_HTTP_HEAD_H
#define MIGD_HTTP_HEAD_H

#include <stddef.h>

enum migd_http_verdict {
	MIGD_HTTP_MORE = 0,   /* no blank line yet: read more */
	MIGD_HTTP_METRICS,    /* GET /metrics: 200 with the exposition */
	MIGD_HTTP_NOT_FOUND,  /* GET of another path: 404 */
	MIGD_HTTP_BAD_METHOD, /* another method: 405 */
	MIGD_HTTP_TOO_LARGE,  /* @max bytes and still no blank line: 431 */
	MIGD_HTTP_METRICS_HEAD, /* HEAD /metrics: 200, the GET's headers */
};

/* The verdict on the @len bytes at @buf, of which at most @max fit. */
enum migd_http_verdict migd_http_head_parse(const char *buf, size_t len,
					    size_t max);

#endif
