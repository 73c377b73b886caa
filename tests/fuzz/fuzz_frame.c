// SPDX-License-Identifier: MIT
/*
 * Target: the migration stream's framing (migrated/mig/frame.h) -- the
 * 16-byte header with its per-type caps, and the unpacking of every message
 * type. The input is a stream of frames as a channel would receive it; a
 * page batch's payload is skipped by its declared length, as the receiver
 * does before handing it to the batch codec.
 *
 * Promises checked: a header is accepted only within its type's cap (a
 * connection allocates what it says before reading on); a decoded frame
 * lies inside the input, its length is
 * within its type's cap, and a decoded message encodes again (when it fits
 * its cap) into a frame that decodes to the same type (see
 * check_roundtrip() for the one exception).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "migrated/mig/frame.h"
#include "migrated/mig/postcopy_map.h"
#include "tests/fuzz/fuzz_common.h"

/* Does @m or a message inside it carry fields its descriptor lacks? */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (m->n_unknown_fields)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *at = (const char *)m + f->offset;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		/* A oneof member is there only when it is the case set. */
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
		    *(const uint32_t *)((const char *)m +
					f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)m +
						     f->quantifier_offset);
			ProtobufCMessage *const *v =
				*(ProtobufCMessage *const *const *)at;

			for (size_t j = 0; j < n; j++)
				if (v[j] && has_unknown(v[j]))
					return true;
		} else {
			const ProtobufCMessage *sub =
				*(const ProtobufCMessage *const *)at;

			if (sub && has_unknown(sub))
				return true;
		}
	}
	return false;
}

/*
 * Re-encode @msg of @type and decode it again. protobuf-c keeps unknown
 * fields and writes them back in its own spelling, which it may itself
 * refuse (a field number 0 tag is accepted as two bytes, 80 00, and
 * refused as one, 00): only a message without unknown fields must survive.
 */
static void check_roundtrip(unsigned type, const ProtobufCMessage *msg)
{
	static uint8_t buf[MIG_FRAME_HDR_SIZE + MIG_FRAME_MSG_MAX];
	struct mig_frame_hdr h;
	ProtobufCMessage *again = NULL;
	size_t len = 0, used = 0;
	int ret;

	ret = mig_frame_encode(type, msg, buf, sizeof(buf), &len);
	/* Unknown fields survive unpacking and may repack larger. */
	if (ret == -EMSGSIZE)
		return;
	FUZZ_CHECK(ret == 0);
	FUZZ_CHECK(len == mig_frame_size(msg));
	ret = mig_frame_decode(buf, len, &h, &again, &used);
	if (ret == -EBADMSG && has_unknown(msg))
		return;
	if (ret) {
		fprintf(stderr,
			"re-encoded %s frame (%zu bytes) does not "
			"decode: %d\n",
			mig_frame_type_name(type), len, ret);
		for (size_t i = 0; i < len && i < 256; i++)
			fprintf(stderr, "%02x", buf[i]);
		fprintf(stderr, "\n");
	}
	FUZZ_CHECK(ret == 0);
	FUZZ_CHECK(h.type == type && used == len);
	mig_frame_msg_free(again);
}

/*
 * The postcopy messages' own checks (postcopy_map.h): a range is applied
 * to a slot of FUZZ_PC_SLOT pages only when it lies inside it, and a
 * refused one writes nothing.
 */
#define FUZZ_PC_SLOT 65536u

static void check_postcopy(unsigned type, const ProtobufCMessage *msg)
{
	static uint64_t bits[FUZZ_PC_SLOT / 64];
	uint64_t added = 0;
	int ret;

	if (type == MIG__MSG_TYPE__MSG_PAGE_REQUEST) {
		const Mig__PageRequest *r = (const Mig__PageRequest *)msg;

		ret = mig_pc_request_check(r);
		FUZZ_CHECK(ret == 0 || ret == -EBADMSG);
		FUZZ_CHECK(!ret == (r->n_gfns >= 1 &&
				    r->n_gfns <= MIG_PC_REQ_MAX));
		return;
	}
	if (type != MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT)
		return;
	memset(bits, 0, sizeof(bits));
	ret = mig_pc_unsent_apply((const Mig__PostcopyUnsent *)msg,
				  FUZZ_PC_SLOT, bits, &added);
	FUZZ_CHECK(ret == 0 || ret == -ERANGE || ret == -EBADMSG);
	if (ret) {
		for (size_t i = 0; i < FUZZ_PC_SLOT / 64; i++)
			FUZZ_CHECK(!bits[i]);
		return;
	}
	FUZZ_CHECK(added == ((const Mig__PostcopyUnsent *)msg)->set_pages);
}

/*
 * The header alone, as a connection decodes it before it allocates the
 * message buffer (conn.c): what it accepts must be within the caps.
 */
static void check_header(const uint8_t *p, size_t n)
{
	struct mig_frame_hdr h;

	if (n < MIG_FRAME_HDR_SIZE || mig_frame_hdr_decode(p, &h))
		return;
	FUZZ_CHECK(h.magic == MIG_FRAME_MAGIC);
	FUZZ_CHECK(h.version >= MIG_FRAME_VERSION_MIN &&
		   h.version <= MIG_FRAME_VERSION);
	FUZZ_CHECK(mig_frame_descriptor(h.type));
	FUZZ_CHECK(h.len <= mig_frame_max_len(h.type));
	FUZZ_CHECK(h.len <= MIG_FRAME_MSG_MAX);
	FUZZ_CHECK(!h.flags && !h.reserved);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct mig_frame_hdr h;
		ProtobufCMessage *msg = NULL;
		size_t used = 0;
		int ret;

		check_header(data + off, size - off);
		ret = mig_frame_decode(data + off, size - off, &h, &msg, &used);
		if (ret) {
			FUZZ_CHECK(ret == -ENODATA || ret == -EPROTO ||
				   ret == -EMSGSIZE || ret == -EBADMSG ||
				   ret == -ENOMEM);
			FUZZ_CHECK(!msg);
			break;
		}
		FUZZ_CHECK(used >= MIG_FRAME_HDR_SIZE && used <= size - off);
		FUZZ_CHECK(h.len == used - MIG_FRAME_HDR_SIZE);
		FUZZ_CHECK(h.len <= mig_frame_max_len(h.type));
		FUZZ_CHECK(msg &&
			   msg->descriptor == mig_frame_descriptor(h.type));
		FUZZ_CHECK(strcmp(mig_frame_type_name(h.type), "invalid"));
		check_roundtrip(h.type, msg);
		check_postcopy(h.type, msg);
		off += used;
		if (h.type == MIG__MSG_TYPE__MSG_PAGE_BATCH) {
			uint64_t pl = ((Mig__PageBatch *)msg)->payload_len;

			off += pl < size - off ? (size_t)pl : size - off;
		}
		mig_frame_msg_free(msg);
	}
	return 0;
}
