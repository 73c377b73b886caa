/* SPDX-License-Identifier: MIT */
/*
 * Logging: one line per event, key=value.
 *
 *   hv_info("memslot", "op=add slot=%u gfn=0x%llx pages=%llu", ...);
 *
 * prints
 *
 *   ts=2026-11-30T04:16:25.123Z level=info comp=memslot op=add slot=3 ...
 *
 * to stderr (or the sink set with hv_log_set_sink()), or, in the JSON
 * format (for log shippers), one object per line with the same fields:
 *
 *   {"ts":"2026-11-30T04:16:25.123Z","level":"info","comp":"memslot",
 *    "op":"add","slot":"3",...}
 *
 * (every value a string; quoted text values unescaped and re-escaped as
 * JSON; a word that is not key=value goes into "msg"). Log where an error is
 * handled, once, naming the object; never per page on a hot path.
 * Thread-safe: each line is formatted into a local buffer and written with
 * one write(2).
 */
#ifndef HVCORE_LOG_H
#define HVCORE_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum hv_log_level {
	HV_LOG_INVALID = 0,
	HV_LOG_ERR,
	HV_LOG_WARN,
	HV_LOG_INFO,
	HV_LOG_DBG,
};

/* Lines above @level are dropped. Default: HV_LOG_INFO, or $HV_LOG_LEVEL. */
void hv_log_set_level(enum hv_log_level level);
enum hv_log_level hv_log_get_level(void);

enum hv_log_format {
	HV_LOG_FORMAT_TEXT = 0, /* key=value */
	HV_LOG_FORMAT_JSON,	/* one JSON object per line */
};

/* Default: text, or json when $HV_LOG_FORMAT is "json" (so that child
 * processes follow their parent's choice). */
void hv_log_set_format(enum hv_log_format format);

/* Redirect lines to file descriptor @fd (default 2). */
void hv_log_set_fd(int fd);

void hv_log(enum hv_log_level level, const char *comp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void hv_vlog(enum hv_log_level level, const char *comp, const char *fmt,
	     va_list ap);

/*
 * A copy of @in fit to log inside double quotes: printable ASCII as is,
 * '"' and '\\' with a backslash, anything else (control bytes, bytes of
 * 0x80 and up) as \xNN, so that a peer's string can neither forge a field
 * or a line nor carry terminal escapes. Written into @out (@len >= 4
 * bytes), NUL-terminated, cut with "..." if it does not fit. NULL is "".
 * Returns @out, for use as a printf argument. Thread-safe.
 */
char *hv_log_escape(const char *in, char *out, size_t len);

/* Size of a buffer that holds any escaped string of up to @n bytes. */
#define HV_LOG_ESCAPE_LEN(n) (4 * (n) + 1)

#define hv_err(comp, ...) hv_log(HV_LOG_ERR, comp, __VA_ARGS__)
#define hv_warn(comp, ...) hv_log(HV_LOG_WARN, comp, __VA_ARGS__)
#define hv_info(comp, ...) hv_log(HV_LOG_INFO, comp, __VA_ARGS__)
#define hv_dbg(comp, ...) hv_log(HV_LOG_DBG, comp, __VA_ARGS__)

#endif
