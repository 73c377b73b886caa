// SPDX-License-Identifier: MIT
/*
 * Operator-string parsing shared by the daemon and the tools (parse.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "migrated/rpc/parse.h"

int migd_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int migd_parse_hostport(const char *s, bool allow_port0, char *host,
			size_t host_size, uint16_t *port)
{
	const char *colon, *hs, *he;
	uint64_t p;
	size_t hl;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		he = strchr(s, ']');
		if (!he || he[1] != ':')
			return -EINVAL;
		hs = s + 1;
		colon = he + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hs = s;
		he = colon;
		/* A bare IPv6 address needs brackets to carry a port. */
		if (memchr(hs, ':', (size_t)(he - hs)))
			return -EINVAL;
	}
	hl = (size_t)(he - hs);
	if (hl > MIGD_HOST_MAX || hl >= host_size)
		return -EINVAL;
	for (size_t i = 0; i < hl; i++) {
		unsigned char c = (unsigned char)hs[i];

		if (!isalnum(c) && c != '.' && c != '-' && c != ':' &&
		    c != '_')
			return -EINVAL;
	}
	if (migd_parse_u64(colon + 1, 65535, &p) || (p == 0 && !allow_port0))
		return -EINVAL;
	memcpy(host, hs, hl);
	host[hl] = '\0';
	*port = (uint16_t)p;
	return 0;
}

int migd_parse_listen(const char *s, char *host, size_t host_size,
		      uint16_t *port, uint16_t *port_max)
{
	char buf[MIGD_HOST_MAX + 16];
	const char *colon, *dash;
	uint64_t hi;
	uint16_t lo;
	size_t n;

	if (!s || !*s)
		return -EINVAL;
	colon = strrchr(s, ':');
	dash = colon ? strchr(colon, '-') : NULL;
	if (!dash) {
		if (migd_parse_hostport(s, true, host, host_size, &lo))
			return -EINVAL;
		*port = *port_max = lo;
		return 0;
	}
	/* "HOST:LO-HI": both ends real ports, LO <= HI. */
	n = (size_t)(dash - s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (migd_parse_u64(dash + 1, 65535, &hi) || hi == 0)
		return -EINVAL;
	if (migd_parse_hostport(buf, false, host, host_size, &lo) || hi < lo)
		return -EINVAL;
	*port = lo;
	*port_max = (uint16_t)hi;
	return 0;
}

int migd_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	case 'B':
		break;
	default:
		return -EINVAL;
	}
	if (*end && toupper((unsigned char)*end) != 'B')
		end++;
	if (!strcasecmp(end, "iB"))
		end += 2;
	else if (!strcasecmp(end, "B"))
		end += 1;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

bool migd_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > MIGD_NAME_MAX || name[0] == '-' ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

int migd_default_state_dir(char *buf, size_t size)
{
	const char *env = getenv("MIGRATED_STATE_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, size, "%s", env);
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(buf, size, "%s/migrated", env);
	else
		n = snprintf(buf, size, "/tmp/migrated-%u",
			     (unsigned)getuid());
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int migd_default_socket(char *buf, size_t size)
{
	const char *env = getenv("MIGRATED_SOCKET");
	char dir[4096];
	int n, ret;

	if (env && *env) {
		n = snprintf(buf, size, "%s", env);
		return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
	}
	ret = migd_default_state_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	n = snprintf(buf, size, "%s/control.sock", dir);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

char *migd_fmt_hostport(char *buf, size_t size, const char *host,
			unsigned port)
{
	if (!host || !*host)
		snprintf(buf, size, "*:%u", port);
	else if (strchr(host, ':'))
		snprintf(buf, size, "[%s]:%u", host, port);
	else
		snprintf(buf, size, "%s:%u", host, port);
	return buf;
}
