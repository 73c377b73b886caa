// SPDX-License-Identifier: MIT
#include "hvcore/log.h"
#include "hvcore/bug.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Process-wide logging configuration. These three atomics are the only
 * globals in hvcore: a log sink is a property of the process, not of any
 * one object.
 */
static _Atomic int log_level = -1;
static _Atomic int log_fd = 2;
static _Atomic int log_format = -1;

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

void hv_log_set_format(enum hv_log_format format)
{
	atomic_store(&log_format, (int)format);
}

static enum hv_log_format get_format(void)
{
	int f = atomic_load(&log_format);

	if (f < 0) {
		const char *env = getenv("HV_LOG_FORMAT");

		f = env && !strcmp(env, "json") ? HV_LOG_FORMAT_JSON
						: HV_LOG_FORMAT_TEXT;
		atomic_store(&log_format, f);
	}
	return (enum hv_log_format)f;
}

/* Append @c to @out as JSON string content; false when it is full. */
static bool json_put(char *out, size_t size, size_t *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e[6];
	size_t n = 0;

	if (c == '"' || c == '\\') {
		e[n++] = '\\';
		e[n++] = (char)c;
	} else if (c < 0x20 || c >= 0x7f) {
		memcpy(e, "\\u00", 4);
		n = 4;
		e[n++] = hex[c >> 4];
		e[n++] = hex[c & 15];
	} else {
		e[n++] = (char)c;
	}
	if (*o + n >= size)
		return false;
	memcpy(out + *o, e, n);
	*o += n;
	return true;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/*
 * One JSON member "key":"value" appended to @out at *@o, the value cut so
 * that the member (closing quote included) fits in @size; nothing when
 * not even the key fits. @v is @vlen bytes of a text value, @quoted when
 * it held log escapes (\", \\, \xNN: hv_log_escape) to undo.
 */
static void json_member(char *out, size_t size, size_t *o, const char *k,
			size_t klen, const char *v, size_t vlen, bool quoted)
{
	size_t start = *o;

	if (*o + klen + 6 >= size)
		return;
	out[(*o)++] = ',';
	out[(*o)++] = '"';
	for (size_t i = 0; i < klen; i++)
		json_put(out, size, o, (unsigned char)k[i]);
	if (*o + 4 >= size) {
		*o = start;
		return;
	}
	memcpy(out + *o, "\":\"", 3);
	*o += 3;
	for (size_t i = 0; i < vlen; i++) {
		unsigned char c = (unsigned char)v[i];

		if (quoted && c == '\\' && i + 1 < vlen &&
		    (v[i + 1] == '"' || v[i + 1] == '\\')) {
			c = (unsigned char)v[++i];
		} else if (quoted && c == '\\' && i + 3 < vlen &&
			   v[i + 1] == 'x' && hexval(v[i + 2]) >= 0 &&
			   hexval(v[i + 3]) >= 0) {
			c = (unsigned char)(hexval(v[i + 2]) * 16 +
					    hexval(v[i + 3]));
			i += 3;
		}
		/* size - 1: the closing quote always fits. */
		if (!json_put(out, size - 1, o, c))
			break;
	}
	out[(*o)++] = '"';
}

/*
 * The key=value text @msg as JSON members after the fixed ones, into
 * @out at *@o (at most @size bytes used). Words that are not key=value
 * are gathered into "msg".
 */
static void json_fields(const char *msg, char *out, size_t size, size_t *o)
{
	char words[512];
	size_t w = 0;
	const char *p = msg;

	for (;;) {
		const char *k, *eq, *v;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		k = p;
		for (eq = p; *eq && *eq != '=' && *eq != ' '; eq++)
			;
		if (*eq != '=' || eq == k) {
			/* a bare word */
			for (; *p && *p != ' '; p++)
				if (w + 2 < sizeof(words))
					words[w++] = *p;
			if (w + 2 < sizeof(words))
				words[w++] = ' ';
			continue;
		}
		p = eq + 1;
		if (*p == '"') {
			v = ++p;
			while (*p && *p != '"')
				p += p[0] == '\\' && p[1] ? 2 : 1;
			json_member(out, size, o, k, (size_t)(eq - k), v,
				    (size_t)(p - v), true);
			if (*p == '"')
				p++;
		} else {
			v = p;
			while (*p && *p != ' ')
				p++;
			json_member(out, size, o, k, (size_t)(eq - k), v,
				    (size_t)(p - v), false);
		}
	}
	if (w)
		json_member(out, size, o, "msg", 3, words, w - 1, false);
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
	if (get_format() == HV_LOG_FORMAT_JSON) {
		char msg[1024];
		size_t o;

		vsnprintf(msg, sizeof(msg), fmt, ap);
		n = snprintf(line, sizeof(line),
			     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\","
			     "\"level\":\"%s\",\"comp\":\"%s\"",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			     tm.tm_hour, tm.tm_min, tm.tm_sec,
			     ts.tv_nsec / 1000000, level_names[level], comp);
		o = n > 0 && n < (int)sizeof(line) ? (size_t)n : 0;
		/* Room for "}\n" whatever was cut. */
		json_fields(msg, line, sizeof(line) - 2, &o);
		line[o++] = '}';
		line[o++] = '\n';
		n = (int)o;
		goto write;
	}
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
write:
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
