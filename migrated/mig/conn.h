/* SPDX-License-Identifier: MIT */
/*
 * mig_conn: one connected migration channel -- a TCP socket, with TLS
 * (migrated/mig/tls.h) unless the caller explicitly asked for insecure
 * plain TCP (tls == NULL) -- carrying frames (migrated/mig/frame.h).
 *
 * I/O is blocking, with a per-connection timeout (SO_RCVTIMEO and
 * SO_SNDTIMEO; 0 = none) after which the channel is considered dead. Data
 * channels run each in its own thread doing blocking I/O: for bulk
 * transfer this is the simplest and the fastest (no readiness round trips,
 * full TLS records, one thread per core of compression and encryption);
 * the daemon's libuv loop drives only the control channel.
 *
 * A connection keeps its first error, as QEMU's QEMUFile does: once a call
 * fails (I/O error, timeout, peer closed, bad frame, shutdown), every later
 * send/recv returns that same error without touching the socket, so a
 * caller can issue several calls and check once.
 *
 * Threads: one thread at a time does I/O on a connection (an SSL object is
 * not safe for concurrent use). mig_conn_shutdown() may be called from any
 * thread at any time: it wakes a thread blocked in I/O, which then returns
 * -ECANCELED. The process must ignore SIGPIPE (OpenSSL writes with
 * write(2)); the daemon, the tools, the tests and hvbench do.
 */
#ifndef MIG_CONN_H
#define MIG_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migrated/mig/frame.h"
#include "migrated/mig/tls.h"

struct mig_conn;

/*
 * Listen on @host ("127.0.0.1", "::1", "0.0.0.0", "::", or a host name:
 * its first address, addr.h) and @port (0: any; the port chosen goes to
 * *@port_out if non-NULL). *@fd_out gets the listening socket (the
 * caller closes it). Returns 0, -EHOSTUNREACH (a name that does not
 * resolve) or -errno.
 */
int mig_listen(const char *host, uint16_t port, int *fd_out,
	       uint16_t *port_out);

/*
 * Accept one connection on @lfd within @timeout_ms (0: wait forever) and,
 * if @tls (a server mig_tls) is non-NULL, complete the TLS handshake,
 * verifying the client's certificate. Returns 0, -ETIMEDOUT, -EACCES (the
 * peer's certificate was missing or refused), -EPROTOTYPE (a plain peer
 * on a TLS channel, or the reverse), -EPROTO (other handshake failure),
 * -ENOMEM or -errno. Nothing is read from a refused peer.
 */
int mig_conn_accept(int lfd, struct mig_tls *tls, unsigned timeout_ms,
		    struct mig_conn **out);

/*
 * Connect to @host:@port (an address, or a host name: each of its
 * addresses in turn until one accepts, addr.h) and, with @tls (a client mig_tls),
 * handshake and verify the server. Errors as mig_conn_accept(), plus
 * -ECONNREFUSED. With TLS 1.3 the server checks the client's certificate
 * after the client has finished: a refused client learns it on its first
 * recv (-EACCES or -EPROTO or -ECONNRESET).
 */
int mig_conn_connect(const char *host, uint16_t port, struct mig_tls *tls,
		     unsigned timeout_ms, struct mig_conn **out);

/*
 * The non-blocking accept of migrated/mig/listener.h, one connection
 * among many on one thread. mig_conn_server_new() makes the accepted
 * socket @fd non-blocking and wraps it (TLS server side when @tls); on
 * success @fd belongs to *@out. mig_conn_server_step() then advances it
 * whenever its socket is ready: the TLS handshake, then the first frame,
 * which must be one of @types. It returns 0 once that frame is in (*@hdr
 * and *@msg as mig_conn_recv()), -EAGAIN until then with *@events the
 * poll(2) events to wait for, or a failure as mig_conn_accept() and
 * mig_conn_recv(), the connection then failed. mig_conn_set_blocking()
 * makes a connection that is done blocking, with @timeout_ms timeouts.
 */
int mig_conn_server_new(int fd, struct mig_tls *tls, struct mig_conn **out);
int mig_conn_server_step(struct mig_conn *c, uint64_t types, short *events,
			 struct mig_frame_hdr *hdr, ProtobufCMessage **msg);
int mig_conn_set_blocking(struct mig_conn *c, unsigned timeout_ms);
/* The socket, for poll(2) only. */
int mig_conn_fd(const struct mig_conn *c);

/*
 * Words for an error of a connection, for the user: the TLS-specific
 * causes spelled out (-EACCES: a certificate error; -EPROTOTYPE: one side
 * speaks TLS, the other plain TCP), otherwise strerror(). Static string.
 */
const char *mig_conn_strerror(int err);

/* Close the connection (TLS close_notify first, best effort). NULL ok. */
void mig_conn_destroy(struct mig_conn *c);

/*
 * Send one frame: @type's message @msg, then @len bytes of @payload (may
 * be NULL/0; only MSG_PAGE_BATCH carries one). Returns 0 or the first
 * error of the connection.
 */
int mig_conn_send(struct mig_conn *c, unsigned type,
		  const ProtobufCMessage *msg, const void *payload,
		  size_t len);

/* Send bytes already framed (the batch encoder's output). */
int mig_conn_send_frame(struct mig_conn *c, const void *buf, size_t len);

/*
 * Receive one frame: validates the header (mig_frame_hdr_decode(): a bad
 * magic, version, type or length fails the connection with -EPROTO or
 * -EMSGSIZE before allocating), reads and unpacks the message. *@msg is
 * freed by the caller with mig_frame_msg_free(). A batch's payload is read
 * next with mig_conn_read(). Returns 0 or the connection's first error;
 * -EPIPE when the peer closed the connection, -EPROTOTYPE when TLS bytes
 * arrive on a plain channel (or a TLS alert, the answer a TLS side gives a
 * plain one). A message buffer above 64 KiB is freed after its message.
 */
int mig_conn_recv(struct mig_conn *c, struct mig_frame_hdr *hdr,
		  ProtobufCMessage **msg);

/*
 * Wait up to @timeout_ms for the next frame to start arriving (bytes
 * buffered in TLS, or the socket readable: data, end of stream or an
 * error, which the next recv then reports). 0: call mig_conn_recv();
 * -ETIMEDOUT: nothing came, and unlike a timeout inside recv the
 * connection is NOT failed, so the caller can still send (the destination
 * gives up waiting for a Commit and says so with an Abort). Otherwise the
 * connection's first error. Owner thread.
 */
int mig_conn_wait_recv(struct mig_conn *c, unsigned timeout_ms);

/*
 * As mig_conn_recv(), accepting only the types whose bit (1 << type) is
 * set in @types: any other fails the connection with -EPROTO after the
 * header, before its message is read or allocated. A data channel takes
 * page batches only, a new channel its Hello only.
 */
int mig_conn_recv_types(struct mig_conn *c, uint64_t types,
			struct mig_frame_hdr *hdr, ProtobufCMessage **msg);

#define MIG_CONN_TYPE(t) (1ull << (t))

/* Read exactly @len bytes (a batch payload). 0 or the first error. */
int mig_conn_read(struct mig_conn *c, void *buf, size_t len);

/*
 * Record @err as the connection's error if it has none (a caller that
 * found a received frame bad fails the stream with it). Returns the
 * connection's first error.
 */
int mig_conn_set_error(struct mig_conn *c, int err);

/*
 * An interruptible connection: mig_conn_interrupt(), from any thread,
 * makes a mig_conn_recv*() that waits for a frame, or the next one, return
 * -EINTR, without failing the connection: unlike mig_conn_shutdown() it
 * leaves the channel usable, so that its owner can still send an Abort or
 * a Cancel and read the peer's. set_interruptible: 0 or -errno; owner
 * thread, before the calls that it interrupts.
 */
int mig_conn_set_interruptible(struct mig_conn *c);
void mig_conn_interrupt(struct mig_conn *c);

/*
 * Wait up to @ms for bytes to read. 0, -ETIMEDOUT, or the connection's
 * error. Owner thread.
 */
int mig_conn_wait_readable(struct mig_conn *c, unsigned ms);

/* The first error, 0 while none. Any thread. */
int mig_conn_error(const struct mig_conn *c);

/* Fail the connection with -ECANCELED and wake blocked I/O. Any thread. */
void mig_conn_shutdown(struct mig_conn *c);

/* Bytes written/read by frames, before TLS. Owner thread only. */
uint64_t mig_conn_bytes_sent(const struct mig_conn *c);
uint64_t mig_conn_bytes_recv(const struct mig_conn *c);

bool mig_conn_is_tls(const struct mig_conn *c);

#endif
