/* SPDX-License-Identifier: MIT */
/*
 * migd_frame: the framing of the control RPC (proto/control.proto), shared
 * by the daemon and its clients (migrated/rpc/client.h).
 *
 * A frame is a 4-byte little-endian length followed by that many bytes of
 * one protobuf message. The length must lie in [1, max]; max is at most
 * MIGD_FRAME_MAX. A length outside that range is a protocol error and the
 * stream cannot be resynchronised: the reader closes the connection.
 *
 * struct migd_framer reassembles frames from a byte stream that arrives in
 * arbitrary pieces (libuv reads, poll + read). It owns one growing buffer
 * holding at most one incomplete frame and one read's worth of bytes
 * (max + 4 + a read; its capacity doubles, so it may reach twice that,
 * from 4 KiB), and keeps its first error: once a bad length was seen
 * every later call fails with it.
 *
 * Threads: a framer belongs to one thread (the loop, or the client's).
 */
#ifndef MIGD_CTL_FRAME_H
#define MIGD_CTL_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define MIGD_FRAME_HDR 4u
/* Hard cap on one control message: a VM list of thousands of VMs fits. */
#define MIGD_FRAME_MAX (1u << 20)

/* Write @len as the 4-byte little-endian header. */
void migd_frame_put_len(uint8_t hdr[MIGD_FRAME_HDR], uint32_t len);

/*
 * Read the header: 0 and *@len, or -EMSGSIZE when the length is 0 or above
 * @max (*@len untouched).
 */
int migd_frame_get_len(const uint8_t hdr[MIGD_FRAME_HDR], uint32_t max,
		       uint32_t *len);

/*
 * Pack @msg into a new frame: *@out (malloc'd, caller frees) holds header
 * and message, *@out_len their total size. -EMSGSIZE when the packed
 * message is empty or above @max, -ENOMEM. *@out untouched on failure.
 * (An empty message is legal protobuf but not a legal frame: every message
 * the RPC sends has at least an id or a oneof case.)
 */
int migd_frame_pack(const ProtobufCMessage *msg, uint32_t max, uint8_t **out,
		    size_t *out_len);

struct migd_framer {
	uint8_t *buf;
	size_t off; /* start of unconsumed bytes */
	size_t len; /* end of valid bytes */
	size_t cap;
	uint32_t max;
	int error; /* first error, sticky */
};

/* @max in [1, MIGD_FRAME_MAX]; no allocation until the first feed. */
void migd_framer_init(struct migd_framer *f, uint32_t max);
void migd_framer_fini(struct migd_framer *f);

/*
 * Append @n bytes. 0, -ENOMEM, or the sticky error. Bytes of a frame
 * returned by the last migd_framer_next() may move: its pointer
 * is valid only until the next feed or next.
 */
int migd_framer_feed(struct migd_framer *f, const void *data, size_t n);

/*
 * Take the next complete frame: 1 with *@msg and *@len set (the message
 * without its header), 0 when more bytes are needed, -EMSGSIZE when the
 * next header is invalid (sticky).
 */
int migd_framer_next(struct migd_framer *f, const uint8_t **msg,
		     uint32_t *len);

/* Bytes received but not yet returned as frames (for EOF checks). */
size_t migd_framer_pending(const struct migd_framer *f);

#endif
