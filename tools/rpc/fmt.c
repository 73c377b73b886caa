// SPDX-License-Identifier: MIT
/*
 * Human-readable formatting for the tools (fmt.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tools/rpc/fmt.h"

char *migd_fmt_bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

/* Binary units, as every size and rate the tools accept (cli.h). */
char *migd_fmt_rate(char *buf, size_t size, uint64_t bps)
{
	if (bps >= 1ull << 30)
		snprintf(buf, size, "%.2f GiB/s", bps / (double)(1ull << 30));
	else if (bps >= 1ull << 20)
		snprintf(buf, size, "%.1f MiB/s", bps / (double)(1ull << 20));
	else if (bps >= 1ull << 10)
		snprintf(buf, size, "%.1f KiB/s", bps / (double)(1ull << 10));
	else
		snprintf(buf, size, "%llu B/s", (unsigned long long)bps);
	return buf;
}

char *migd_fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, size, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, size, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, size, "%llu us", (unsigned long long)(ns / 1000));
	return buf;
}

char *migd_fmt_enum(char *buf, size_t size, const ProtobufCEnumDescriptor *d,
		    int value, const char *prefix)
{
	const ProtobufCEnumValue *ev =
		protobuf_c_enum_descriptor_get_value(d, value);
	const char *name = ev ? ev->name : "?";
	size_t i = 0;

	if (prefix && !strncmp(name, prefix, strlen(prefix)))
		name += strlen(prefix);
	for (; name[i] && i + 1 < size; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[i] = '\0';
	return buf;
}
