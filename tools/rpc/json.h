/* SPDX-License-Identifier: MIT */
/*
 * JSON rendering of any protobuf-c message, driven by its descriptor, for
 * the tools' --json output: one object per message, field names as in the
 * .proto (snake_case), enums by value name, 64-bit integers as numbers,
 * bytes as hex strings, every proto3 field present (defaults included),
 * only the set member of a oneof.
 */
#ifndef MIGD_JSON_H
#define MIGD_JSON_H

#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

/* Write @msg as one JSON object (no trailing newline). */
void migd_json_print(FILE *f, const ProtobufCMessage *msg);

/* Write @s as a JSON string literal, escaped. */
void migd_json_string(FILE *f, const char *s);

#endif
