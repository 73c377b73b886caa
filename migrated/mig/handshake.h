/* SPDX-License-Identifier: MIT */
/*
 * mig_hello: the first exchange on every channel of a session (control and
 * data), and the stream version negotiation.
 *
 * The source connects and sends Hello (its version range, role, session
 * id, channel index and count); the destination checks it and answers
 * with its own Hello, carrying the negotiated version as both ends of its
 * range. Both sides then speak the highest version in both ranges, or the
 * side that finds none fails the channel with -EPROTONOSUPPORT (the
 * destination answers a control Hello it cannot serve with SetupRefuse
 * REFUSE_VERSION first). The session id, 16 random bytes chosen by the
 * source, ties the data channels to their control channel: a data channel
 * with another id, a repeated or out-of-range index is refused. It is
 * also the migration's UUID that both daemons show (MigInfo.uuid) and log:
 * the source marks it as a version 4 UUID, and since every stream version
 * has always carried it, a peer of any version sees the same id.
 *
 * Functions do blocking I/O on the connection (its timeouts apply) from
 * the thread that owns it; the pure ones are thread-safe.
 */
#ifndef MIG_HANDSHAKE_H
#define MIG_HANDSHAKE_H

#include <stdint.h>

#include "migrated/mig/conn.h"

#define MIG_SESSION_ID_LEN 16u
#define MIG_HOST_ID_MAX 64u

/* A validated Hello. */
struct mig_hello_info {
	uint32_t version_min, version_max;
	unsigned role; /* Mig__Role */
	uint8_t session_id[MIG_SESSION_ID_LEN];
	uint32_t channel_index;
	uint32_t nr_channels;
	char host_id[MIG_HOST_ID_MAX]; /* for logs; NUL-terminated */
};

/* Room for a session id as text: 36 characters and the NUL. */
#define MIG_UUID_STR_LEN 37u

/*
 * 16 random bytes from getrandom(2), marked as an RFC 4122 version 4
 * (random) UUID: the migration's id on both hosts (mig_uuid_format()).
 * 0 or -errno.
 */
int mig_session_id_new(uint8_t id[MIG_SESSION_ID_LEN]);

/*
 * Pure: @id as the canonical UUID text "xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx" (lower-case hex) into @out, NUL-terminated. Any 16 bytes
 * format, so an id from a source older than the version marking (plain
 * random bytes) prints the same way.
 */
void mig_uuid_format(const uint8_t id[MIG_SESSION_ID_LEN],
		     char out[MIG_UUID_STR_LEN]);

/*
 * Pure: the highest version in both [@peer_min, @peer_max] and
 * [MIG_FRAME_VERSION_MIN, MIG_FRAME_VERSION] into *@out. 0, or
 * -EPROTONOSUPPORT when the ranges do not meet (or peer_min > peer_max).
 */
int mig_version_negotiate(uint32_t peer_min, uint32_t peer_max,
			  uint32_t *out);

/*
 * Send a Hello. @version 0 offers our whole range (the source); non-zero
 * pins both ends to it (the destination's answer). 0 or the connection's
 * error.
 */
int mig_hello_send(struct mig_conn *c, uint32_t version, unsigned role,
		   const uint8_t id[MIG_SESSION_ID_LEN], uint32_t index,
		   uint32_t nr_channels);

/*
 * What may come instead of a Hello: the Hello itself, or the peer's
 * refusal, abort or cancel, each small. Anything else is refused by its
 * header, before its message is read.
 */
#define MIG_HELLO_REPLY_TYPES                                                \
	(MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_HELLO) |                           \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_SETUP_REFUSE) |                    \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_ABORT) |                           \
	 MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_CANCEL))

/*
 * Check a received frame of @type whose message is @msg (freed here) as a
 * Hello and fill *@out; for a connection read without blocking
 * (mig_conn_server_step()). Errors as mig_hello_recv(); the connection is
 * not touched.
 */
int mig_hello_take(unsigned type, ProtobufCMessage *msg,
		   struct mig_hello_info *out);

/*
 * Receive and check a Hello: the frame must be MSG_HELLO (otherwise
 * -EPROTONOSUPPORT for a SetupRefuse REFUSE_VERSION, -ECONNREFUSED for
 * another refusal, -ECANCELED for a Cancel or an Abort with reason
 * ABORT_CANCELLED (the peer cancelled), -ECONNABORTED for another abort,
 * else -EPROTO), the role
 * valid, the session id 16 bytes, 1 <= nr_channels <= MIG_CHANNELS_MAX,
 * index < nr_channels (index 0 for the control channel). *@out filled on
 * success; version negotiation is the caller's (it knows which side it
 * is). Returns 0, -EPROTO or the connection's error; a bad Hello also
 * fails the connection with -EPROTO.
 */
int mig_hello_recv(struct mig_conn *c, struct mig_hello_info *out);

/*
 * After a channel of the session failed: read what the peer's control
 * channel @c still brings within @wait_ms, looking for its Abort or
 * Cancel, so that the user is told why the peer went (a closed data
 * channel says nothing). Other frames are skipped. Returns -ECANCELED
 * (Cancel, or Abort with reason ABORT_CANCELLED: the peer cancelled),
 * -ECONNABORTED (another Abort; its detail into @detail, escaped of
 * nothing, NUL-terminated) or 0 when neither came. Owner thread of @c.
 */
int mig_peer_reason(struct mig_conn *c, unsigned wait_ms, char *detail,
		    size_t len);

/* What the user reads when the peer cancelled. */
#define MIG_PEER_CANCELLED "cancelled by the peer"

#endif
