// SPDX-License-Identifier: MIT
#include "migrated/mig/frame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/types.h"
#include "migrated/mig/postcopy_map.h"

/*
 * Unpacked, a small message takes a few times its wire size: 8 bytes per
 * packed varint of one byte, a 24-byte message header per submessage.
 */
#define FRAME_ALLOC_FACTOR 16u

/*
 * protobuf-c allocates through this while unpacking one message: each
 * allocation is taken from @left, and one that does not fit fails the
 * unpack. The blocks are malloc()'s, so the message is freed with the
 * default allocator.
 */
struct unpack_budget {
	size_t left;
	bool exceeded;
};

static void *budget_alloc(void *data, size_t size)
{
	struct unpack_budget *b = data;

	if (size > b->left) {
		b->exceeded = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/*
 * Per-type contract: message descriptor, the length cap checked before
 * any allocation, and what unpacking one message may allocate (0: the
 * default, FRAME_ALLOC_FACTOR times the length cap). A type missing here
 * is refused by every reader.
 */
static const struct frame_type {
	const char *name;
	const ProtobufCMessageDescriptor *desc;
	uint32_t max_len;
	uint32_t max_alloc;
} frame_types[] = {
	[MIG__MSG_TYPE__MSG_HELLO] = { "hello", &mig__hello__descriptor,
				       4096 },
	/*
	 * A layout: HV_MEMSLOT_MAX (32764) slots at most (a large VM in
	 * small slots); the widest is 36 bytes a slot on the wire (1.2 MB)
	 * and 136 unpacked (4.5 MB). An empty slot entry is 2 bytes on the
	 * wire and 128 unpacked, so 2 MiB of them would take 128 MiB: the
	 * allocation cap, not the length cap, stops those (measured with
	 * protobuf-c 1.4).
	 */
	[MIG__MSG_TYPE__MSG_SETUP] = { "setup", &mig__vm_layout__descriptor,
				       MIG_FRAME_SETUP_MAX, 6u << 20 },
	[MIG__MSG_TYPE__MSG_SETUP_ACCEPT] = { "setup_accept",
					      &mig__setup_accept__descriptor,
					      256 },
	[MIG__MSG_TYPE__MSG_SETUP_REFUSE] = { "setup_refuse",
					      &mig__setup_refuse__descriptor,
					      4096 },
	[MIG__MSG_TYPE__MSG_ITER_START] = { "iter_start",
					    &mig__iter_start__descriptor,
					    256 },
	/* One count per data channel, 10 bytes each at most. */
	[MIG__MSG_TYPE__MSG_ITER_END] = { "iter_end",
					  &mig__iter_end__descriptor, 1024 },
	[MIG__MSG_TYPE__MSG_PAGE_BATCH] = { "page_batch",
					    &mig__page_batch__descriptor,
					    256 },
	[MIG__MSG_TYPE__MSG_DATA_END] = { "data_end",
					  &mig__data_end__descriptor, 256 },
	[MIG__MSG_TYPE__MSG_SWITCHOVER] = { "switchover",
					    &mig__switchover__descriptor,
					    256 },
	/* The state is one bytes field: copied once, plus the envelope. */
	[MIG__MSG_TYPE__MSG_VM_STATE] = { "vm_state",
					  &mig__vm_state_envelope__descriptor,
					  MIG_FRAME_MSG_MAX,
					  MIG_FRAME_MSG_MAX + 4096 },
	[MIG__MSG_TYPE__MSG_DIGEST] = { "digest", &mig__digest__descriptor,
					1024 },
	[MIG__MSG_TYPE__MSG_ACK] = { "ack", &mig__ack__descriptor, 256 },
	[MIG__MSG_TYPE__MSG_COMMIT] = { "commit", &mig__commit__descriptor,
					256 },
	[MIG__MSG_TYPE__MSG_ABORT] = { "abort", &mig__abort__descriptor,
				       4096 },
	[MIG__MSG_TYPE__MSG_CANCEL] = { "cancel", &mig__cancel__descriptor,
					4096 },
	[MIG__MSG_TYPE__MSG_RESUMED] = { "resumed",
					 &mig__resumed__descriptor, 256 },
	[MIG__MSG_TYPE__MSG_ITER_ACK] = { "iter_ack",
					  &mig__iter_ack__descriptor, 256 },
	/* Postcopy (postcopy_map.h): one range's runs or bitmap, at most
	 * MIG_PC_UNSENT_DATA_MAX bytes, copied once by unpacking. */
	[MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT] = {
		"postcopy_unsent", &mig__postcopy_unsent__descriptor,
		MIG_PC_UNSENT_DATA_MAX + 64, MIG_PC_UNSENT_DATA_MAX + 4096 },
	/* MIG_PC_REQ_MAX gfns of 10 bytes at most; the count itself is
	 * checked by the reader (postcopy_map.h). */
	[MIG__MSG_TYPE__MSG_PAGE_REQUEST] = { "page_request",
					      &mig__page_request__descriptor,
					      1024 },
	[MIG__MSG_TYPE__MSG_POSTCOPY_DONE] = { "postcopy_done",
					       &mig__postcopy_done__descriptor,
					       256 },
	[MIG__MSG_TYPE__MSG_POSTCOPY_RESUME] = {
		"postcopy_resume", &mig__postcopy_resume__descriptor, 256 },
};

static const struct frame_type *type_get(unsigned type)
{
	if (type >= HV_ARRAY_SIZE(frame_types) || !frame_types[type].desc)
		return NULL;
	return &frame_types[type];
}

const char *mig_frame_type_name(unsigned type)
{
	const struct frame_type *t = type_get(type);

	return t ? t->name : "invalid";
}

uint32_t mig_frame_max_len(unsigned type)
{
	const struct frame_type *t = type_get(type);

	return t ? t->max_len : 0;
}

uint32_t mig_frame_max_alloc(unsigned type)
{
	const struct frame_type *t = type_get(type);

	if (!t)
		return 0;
	return t->max_alloc ? t->max_alloc
			    : t->max_len * FRAME_ALLOC_FACTOR + 4096;
}

const ProtobufCMessageDescriptor *mig_frame_descriptor(unsigned type)
{
	const struct frame_type *t = type_get(type);

	return t ? t->desc : NULL;
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void mig_frame_hdr_encode(const struct mig_frame_hdr *hdr,
			  uint8_t out[MIG_FRAME_HDR_SIZE])
{
	put_le32(out, hdr->magic);
	put_le16(out + 4, hdr->version);
	put_le16(out + 6, hdr->type);
	put_le32(out + 8, hdr->len);
	put_le16(out + 12, hdr->flags);
	put_le16(out + 14, hdr->reserved);
}

int mig_frame_hdr_decode(const uint8_t in[MIG_FRAME_HDR_SIZE],
			 struct mig_frame_hdr *out)
{
	struct mig_frame_hdr h = {
		.magic = get_le32(in),
		.version = get_le16(in + 4),
		.type = get_le16(in + 6),
		.len = get_le32(in + 8),
		.flags = get_le16(in + 12),
		.reserved = get_le16(in + 14),
	};

	if (h.magic != MIG_FRAME_MAGIC)
		return -EPROTO;
	if (h.version < MIG_FRAME_VERSION_MIN || h.version > MIG_FRAME_VERSION)
		return -EPROTO;
	if (!type_get(h.type))
		return -EPROTO;
	if (h.flags & ~MIG_FRAME_F_ALL || h.reserved)
		return -EPROTO;
	if (h.len > mig_frame_max_len(h.type))
		return -EMSGSIZE;
	*out = h;
	return 0;
}

size_t mig_frame_size(const ProtobufCMessage *msg)
{
	return MIG_FRAME_HDR_SIZE + protobuf_c_message_get_packed_size(msg);
}

int mig_frame_encode(unsigned type, const ProtobufCMessage *msg,
		     uint8_t *buf, size_t cap, size_t *len)
{
	const struct frame_type *t = type_get(type);
	struct mig_frame_hdr h;
	size_t mlen;

	if (!t || !msg || msg->descriptor != t->desc)
		return -EINVAL;
	mlen = protobuf_c_message_get_packed_size(msg);
	if (mlen > t->max_len)
		return -EMSGSIZE;
	*len = MIG_FRAME_HDR_SIZE + mlen;
	if (cap < *len)
		return -ENOBUFS;
	h = (struct mig_frame_hdr){
		.magic = MIG_FRAME_MAGIC,
		.version = MIG_FRAME_VERSION,
		.type = (uint16_t)type,
		.len = (uint32_t)mlen,
	};
	mig_frame_hdr_encode(&h, buf);
	protobuf_c_message_pack(msg, buf + MIG_FRAME_HDR_SIZE);
	return 0;
}

int mig_frame_unpack(unsigned type, const uint8_t *data, size_t len,
		     ProtobufCMessage **out)
{
	const struct frame_type *t = type_get(type);
	struct unpack_budget b = { .left = mig_frame_max_alloc(type) };
	ProtobufCAllocator a = {
		.alloc = budget_alloc,
		.free = budget_free,
		.allocator_data = &b,
	};
	ProtobufCMessage *m;

	if (!t)
		return -EINVAL;
	if (len > t->max_len)
		return -EMSGSIZE;
	m = protobuf_c_message_unpack(t->desc, &a, len, data);
	if (!m)
		return b.exceeded ? -EMSGSIZE : -EBADMSG;
	*out = m;
	return 0;
}

int mig_frame_decode(const uint8_t *buf, size_t len,
		     struct mig_frame_hdr *hdr, ProtobufCMessage **msg,
		     size_t *consumed)
{
	struct mig_frame_hdr h;
	int ret;

	if (len < MIG_FRAME_HDR_SIZE)
		return -ENODATA;
	ret = mig_frame_hdr_decode(buf, &h);
	if (ret)
		return ret;
	if (len - MIG_FRAME_HDR_SIZE < h.len)
		return -ENODATA;
	ret = mig_frame_unpack(h.type, buf + MIG_FRAME_HDR_SIZE, h.len, msg);
	if (ret)
		return ret;
	*hdr = h;
	*consumed = MIG_FRAME_HDR_SIZE + h.len;
	return 0;
}

void mig_frame_msg_free(ProtobufCMessage *msg)
{
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
}
