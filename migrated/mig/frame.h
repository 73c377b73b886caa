/* SPDX-License-Identifier: MIT */
/*
 * mig_frame: the framing of the migration stream (docs/architecture.md).
 *
 * Every message on a control or data channel is one frame:
 *
 *   offset size  field
 *   0      4     magic     MIG_FRAME_MAGIC, "MIGS" on the wire
 *   4      2     version   MIG_FRAME_VERSION (MIN..current accepted)
 *   6      2     type      enum Mig__MsgType (proto/migration.proto)
 *   8      4     length    bytes of the protobuf message that follows
 *   12     2     flags     none defined yet: must be 0
 *   14     2     reserved  must be 0
 *   16     length          the protobuf-c message named by type
 *
 * All integers are little-endian, written byte by byte (never by casting a
 * struct). A MSG_PAGE_BATCH frame is followed by PageBatch.payload_len raw
 * bytes of page data; their bounds are the batch codec's business
 * (migrated/mig/batch.h), not the frame's.
 *
 * Every type has a hard cap on its message length (mig_frame_max_len()),
 * checked when the header is decoded, before anything is allocated, and a
 * cap on what unpacking its message may allocate (mig_frame_max_alloc()):
 * protobuf-c turns a 2-byte empty repeated entry into 128 bytes of heap,
 * so the length cap alone does not bound the heap.
 * Functions here work on buffers only, so they are tested without sockets;
 * they are pure and thread-safe.
 */
#ifndef MIG_FRAME_H
#define MIG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "proto/migration.pb-c.h"

#define MIG_FRAME_MAGIC 0x5347494du /* bytes 'M' 'I' 'G' 'S' */
/*
 * Version 1 is the first version of the stream. A reader accepts
 * [MIG_FRAME_VERSION_MIN, MIG_FRAME_VERSION]; when the stream changes, the
 * current version is bumped and MIN becomes the previous one (a reader
 * accepts the current and the previous version), and the change adds a
 * golden vector to test_frame.c.
 */
#define MIG_FRAME_VERSION 1u
#define MIG_FRAME_VERSION_MIN 1u
#define MIG_FRAME_HDR_SIZE 16u
#define MIG_FRAME_F_ALL 0u

/* The largest message of any type (MSG_VM_STATE, whose cap it is). */
#define MIG_FRAME_MSG_MAX (16u << 20)
/* Cap of a layout (MSG_SETUP): HV_MEMSLOT_MAX slots at their widest fit. */
#define MIG_FRAME_SETUP_MAX (2u << 20)

struct mig_frame_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type; /* enum Mig__MsgType */
	uint32_t len;  /* message bytes after the header */
	uint16_t flags;
	uint16_t reserved;
};

/* Name of @type for logs ("page_batch"), "invalid" when unknown. */
const char *mig_frame_type_name(unsigned type);

/*
 * Cap on the message length of @type, or 0 when @type is not a known
 * message type (MSG_INVALID included).
 */
uint32_t mig_frame_max_len(unsigned type);

/* Cap on the heap unpacking one @type message may take, 0 when unknown. */
uint32_t mig_frame_max_alloc(unsigned type);

/* The protobuf-c descriptor of @type's message, NULL when unknown. */
const ProtobufCMessageDescriptor *mig_frame_descriptor(unsigned type);

/* Write @hdr into @out, little-endian. Does not validate. */
void mig_frame_hdr_encode(const struct mig_frame_hdr *hdr,
			  uint8_t out[MIG_FRAME_HDR_SIZE]);

/*
 * Parse and validate a header from @in. Returns 0, or:
 *   -EPROTO    bad magic, unsupported version, unknown type, non-zero
 *              flags or reserved;
 *   -EMSGSIZE  length above the type's cap.
 * @out is written only on success.
 */
int mig_frame_hdr_decode(const uint8_t in[MIG_FRAME_HDR_SIZE],
			 struct mig_frame_hdr *out);

/*
 * Encode one frame (header and message) of @type into @buf of @cap bytes;
 * *@len gets the frame's size. @msg must be of @type's descriptor.
 * Returns 0, -EINVAL (unknown type or wrong descriptor), -EMSGSIZE (above
 * the type's cap) or -ENOBUFS (@cap too small; *@len is then the size
 * needed).
 */
int mig_frame_encode(unsigned type, const ProtobufCMessage *msg,
		     uint8_t *buf, size_t cap, size_t *len);

/* Size of the frame mig_frame_encode() would write for @msg. */
size_t mig_frame_size(const ProtobufCMessage *msg);

/*
 * Unpack the message of a frame whose header was validated: @data/@len is
 * the message. *@out gets a message to free with mig_frame_msg_free().
 * Returns 0, -EINVAL (unknown type), -EMSGSIZE (above the length cap, or
 * unpacking would allocate above mig_frame_max_alloc()), -EBADMSG (not a
 * valid message of that type, or out of memory: protobuf-c does not tell).
 */
int mig_frame_unpack(unsigned type, const uint8_t *data, size_t len,
		     ProtobufCMessage **out);

/*
 * Decode one whole frame from the front of @buf/@len: validates the header,
 * checks that the message is all there and unpacks it. On success *@hdr,
 * *@msg (to free with mig_frame_msg_free()) and *@consumed (header plus
 * message; a batch's payload is not included) are set. Returns 0 or the
 * errors of mig_frame_hdr_decode()/mig_frame_unpack(), or -ENODATA when
 * @buf ends before the frame does (truncated).
 */
int mig_frame_decode(const uint8_t *buf, size_t len,
		     struct mig_frame_hdr *hdr, ProtobufCMessage **msg,
		     size_t *consumed);

/* Free a message from mig_frame_unpack()/mig_frame_decode(); NULL is ok. */
void mig_frame_msg_free(ProtobufCMessage *msg);

#endif
