/* SPDX-License-Identifier: MIT */
/*
 * Inside mig_conn: the object and the helpers that conn.c (blocking I/O,
 * framing) shares with conn_accept.c (the listener's non-blocking
 * accept). Not a contract: mig__ prefix, for those two files only.
 */
#ifndef MIG_CONN_PRIV_H
#define MIG_CONN_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "migrated/mig/conn.h"

struct mig_conn {
	/* immutable after create */
	int fd;
	SSL *ssl; /* NULL: insecure plain TCP */
	/* any thread */
	_Atomic int err;
	int wake_fd; /* eventfd of mig_conn_interrupt(), -1: none */
	/* owner thread only */
	uint8_t *rbuf; /* message buffer, grown up to the type's cap */
	size_t rbuf_cap;
	uint8_t sbuf[MIG_FRAME_HDR_SIZE + 4096];
	uint64_t sent, recvd;
	unsigned io_ms; /* the receive time-out, for the wait on wake_fd */
	/* mig_conn_server_step() only: handshake done, first frame so far */
	bool hs_done, peeked;
	uint8_t hraw[MIG_FRAME_HDR_SIZE];
	size_t have;
};

struct mig_conn *mig__conn_new(int fd);
void mig__conn_free(struct mig_conn *c);
int mig__conn_set_timeouts(int fd, unsigned timeout_ms);
/* TLS: c->ssl made from @tls, the server's name set on a client. */
int mig__conn_ssl_prepare(struct mig_conn *c, struct mig_tls *tls);
/* The errno of a failed SSL call @r (logged once), of a handshake. */
int mig__conn_ssl_err(struct mig_conn *c, int r, const char *what);
int mig__conn_handshake_error(struct mig_conn *c, int r, bool server);
/* A plain Hello's first byte on a TLS channel: -EPROTOTYPE, answered
 * with a TLS alert; 0 otherwise, -EAGAIN when nothing came (@flags
 * MSG_DONTWAIT). */
int mig__conn_plain_peer_check(struct mig_conn *c, int flags);
/* Frames: a header that did not decode (@n bytes of it, @err the read's
 * error or 0); a decoded one checked against @types, rbuf grown for its
 * message; the message in rbuf unpacked. Each fails the connection. */
int mig__conn_bad_header(struct mig_conn *c, const uint8_t *raw, size_t n,
			 int err);
int mig__conn_hdr_admit(struct mig_conn *c, const uint8_t *raw,
			uint64_t types, struct mig_frame_hdr *h);
int mig__conn_msg_unpack(struct mig_conn *c, const struct mig_frame_hdr *h,
			 ProtobufCMessage **msg);

#endif
