/* SPDX-License-Identifier: MIT */
/*
 * What server.c (connections, requests) and server_events.c
 * (subscriptions, events) share. Not a contract for other files: migd__
 * prefix. Loop thread only.
 */
#ifndef MIGD_SERVER_PRIV_H
#define MIGD_SERVER_PRIV_H

#include "migrated/rpc/server.h"

/* Frame @msg and queue it on @conn (encrypted on TLS). 0, -EPIPE (the
 * connection is closing), -ENOBUFS (the client does not read: closed), or
 * another negative errno. */
int migd__conn_send(struct migd_conn *conn, const ProtobufCMessage *msg);

/*
 * The connection's subscriptions changed, or it showed activity: an
 * established TLS connection without subscriptions gets a fresh idle
 * deadline, one with subscriptions none (a client that only listens to
 * events legitimately sends nothing). No-op on the Unix socket, during the
 * TLS handshake, or with the idle timeout off.
 */
void migd__conn_idle_arm(struct migd_conn *conn);

/* server.c, for server_listen.c: accept on the Unix / TCP listener;
 * close a connection (idempotent). */
void migd__accept_cb(uv_stream_t *listener, int status);
void migd__accept_tcp_cb(uv_stream_t *listener, int status);
void migd__conn_close(struct migd_conn *conn, const char *why);

#endif
