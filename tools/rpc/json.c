// SPDX-License-Identifier: MIT
/*
 * Descriptor-driven JSON output of protobuf-c messages (json.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tools/rpc/json.h"

void migd_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	}
	return 0;
}

static void print_double(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void print_value(FILE *f, const ProtobufCFieldDescriptor *fd,
			const void *p)
{
	switch (fd->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		fprintf(f, "%" PRId32, *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		fprintf(f, "%" PRIu32, *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		fprintf(f, "%" PRId64, *(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		fprintf(f, "%" PRIu64, *(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		print_double(f, *(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		print_double(f, *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)p ? "true" : "false", f);
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		int v = *(const int *)p;
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(fd->descriptor,
							     v);

		if (ev)
			migd_json_string(f, ev->name);
		else
			fprintf(f, "%d", v);
		break;
	}
	case PROTOBUF_C_TYPE_STRING:
		migd_json_string(f, *(char *const *)p);
		break;
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;

		fputc('"', f);
		for (size_t i = 0; i < b->len; i++)
			fprintf(f, "%02x", b->data[i]);
		fputc('"', f);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;

		if (m)
			migd_json_print(f, m);
		else
			fputs("null", f);
		break;
	}
	}
}

void migd_json_print(FILE *f, const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	const char *base = (const char *)msg;
	bool first = true;

	fputc('{', f);
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		const void *p = base + fd->offset;

		if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t which = *(const uint32_t *)(base +
							     fd->quantifier_offset);

			if (which != fd->id)
				continue;
		}
		if (fd->type == PROTOBUF_C_TYPE_MESSAGE &&
		    fd->label != PROTOBUF_C_LABEL_REPEATED &&
		    !*(ProtobufCMessage *const *)p)
			continue;
		if (!first)
			fputc(',', f);
		first = false;
		migd_json_string(f, fd->name);
		fputc(':', f);
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base +
						     fd->quantifier_offset);
			const char *arr = *(char *const *)p;
			size_t es = elem_size(fd->type);

			fputc('[', f);
			for (size_t k = 0; k < n; k++) {
				if (k)
					fputc(',', f);
				print_value(f, fd, arr + k * es);
			}
			fputc(']', f);
		} else {
			print_value(f, fd, p);
		}
	}
	fputc('}', f);
}
