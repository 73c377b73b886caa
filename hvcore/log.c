// SPDX-License-Identifier: MIT
#include "hvcore/log.h"
#include "hvcore/bug.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Process-wide logging configuration. These two atomics are the only
 * globals in hvcore: a log sink is a property of the process, not of any
 * one object.
 */
static _Atomic int log_level = -1;
static _Atomic int log_fd = 2;

static const char *const level_names[] = {
	[HV_LOG_INVALID] = "invalid", [HV_LOG_ERR] = "error",
	[HV_LOG_WARN] = "warn",       [HV_LOG_INFO] = "info",
	[HV_LOG_DBG] = "debug",
};

void hv_log_set_level(enum hv_log_level level)
{
	atomic_store(&log_level, (int)level);
}

enum hv_log_level hv_log_get_level(void)
{
	int level = atomic_load(&log_level);

	if (level < 0) {
		const char *env = getenv("HV_LOG_LEVEL");

		level = HV_LOG_INFO;
		if (env) {
			for (int i = HV_LOG_ERR; i <= HV_LOG_DBG; i++)
				if (!strcmp(env, level_names[i]))
					level = i;
		}
		atomic_store(&log_level, level);
	}
	return (enum hv_log_level)level;
}

void hv_log_set_fd(int fd)
{
	atomic_store(&log_fd, fd);
}

void hv_vlog(enum hv_log_level level, const char *comp, const char *fmt,
	     va_list ap)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	int n, m;

	if (level <= HV_LOG_INVALID || level > hv_log_get_level())
		return;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s comp=%s ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		     level_names[level], comp);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so that lines from threads never interleave. */
	if (write(atomic_load(&log_fd), line, n) < 0)
		return;
}

void hv_log(enum hv_log_level level, const char *comp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hv_vlog(level, comp, fmt, ap);
	va_end(ap);
}

/* @c as it appears escaped, into @e; returns its length (1, 2 or 4). */
static size_t escape_char(unsigned char c, char e[4])
{
	static const char hex[] = "0123456789abcdef";

	if (c == '"' || c == '\\') {
		e[0] = '\\';
		e[1] = (char)c;
		return 2;
	}
	if (c >= 0x20 && c < 0x7f) {
		e[0] = (char)c;
		return 1;
	}
	e[0] = '\\';
	e[1] = 'x';
	e[2] = hex[c >> 4];
	e[3] = hex[c & 15];
	return 4;
}

char *hv_log_escape(const char *in, char *out, size_t len)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t o = 0, need = 0, mark;
	char e[4];

	HV_BUG_ON(len < 4);
	for (const unsigned char *p = s; *p; p++)
		need += escape_char(*p, e);
	/* Cut short: keep room for the "..." that says so. */
	mark = need > len - 1 ? 3 : 0;
	for (const unsigned char *p = s; *p; p++) {
		size_t n = escape_char(*p, e);

		if (o + n + mark > len - 1)
			break;
		memcpy(out + o, e, n);
		o += n;
	}
	memcpy(out + o, "...", mark);
	out[o + mark] = '\0';
	return out;
}

void hv_bug(const char *cond, const char *file, int line)
{
	hv_err("bug", "cond=\"%s\" at=%s:%d", cond, file, line);
	abort();
}
