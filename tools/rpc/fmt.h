/* SPDX-License-Identifier: MIT */
/*
 * Human-readable formatting shared by the tools: sizes, rates, durations,
 * enum names without their prefix. Each writes into a caller buffer and
 * returns it, so several can sit in one printf.
 */
#ifndef MIGD_FMT_H
#define MIGD_FMT_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* 1536 -> "1.5 KiB", 1073741824 -> "1.0 GiB". */
char *migd_fmt_bytes(char *buf, size_t size, uint64_t bytes);
/* Bytes/s -> "107.1 MiB/s" (binary, like every size the tools take). */
char *migd_fmt_rate(char *buf, size_t size, uint64_t bytes_per_s);
/* Nanoseconds -> "850 us", "12.3 ms", "2.41 s". */
char *migd_fmt_ns(char *buf, size_t size, uint64_t ns);
/* Enum value name, lower-case, with @prefix (e.g. "VM_STATE_") cut. */
char *migd_fmt_enum(char *buf, size_t size, const ProtobufCEnumDescriptor *d,
		    int value, const char *prefix);

#endif
