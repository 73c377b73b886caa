/* SPDX-License-Identifier: MIT */
/*
 * migd_tlsconn: the server side of one TLS 1.3 connection driven through
 * OpenSSL memory BIOs, so that a libuv stream carries the ciphertext and
 * the loop thread never blocks on the network.
 *
 * Why memory BIOs on the loop rather than a TLS thread with blocking
 * sockets: every control call already runs on the loop thread (the
 * registry, subscriptions and migrations are loop-only objects), so a TLS
 * thread would have to hand each decrypted request over through
 * uv_async and each response and event back, doubling the queues and
 * their back-pressure rules. With memory BIOs, TLS is a pure
 * transformation of byte buffers: read_cb feeds ciphertext in, plaintext
 * comes out into the same framer the Unix socket uses, and conn_send
 * encrypts into a buffer that goes to uv_write. The crypto cost stays on
 * the loop: one ECDHE + ECDSA P-256 handshake (well under a millisecond)
 * per connection, then AES-GCM at GB/s for the small control messages.
 *
 * Refusal before any request: plaintext is handed to the caller only once
 * SSL_do_handshake() succeeded on the server, i.e. after the client's
 * Certificate, CertificateVerify and Finished were checked against the CA
 * (mig_tls sets SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT). A
 * client without a certificate, with one from another CA, or with an
 * expired one gets an alert; whatever application data it pipelined
 * after its Finished is never decrypted.
 *
 * Threads: loop thread only (one object per connection).
 */
#ifndef MIGD_TLSCONN_H
#define MIGD_TLSCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct migd_tlsconn;

/* Plaintext received after the handshake: return 0, or a negative errno
 * to stop feeding (the connection is being closed). */
typedef int (*migd_tls_plain_fn)(void *arg, const void *data, size_t n);

/* A server-side connection from @ctx (mig_tls_ctx() of a server
 * mig_tls). 0, -ENOMEM. */
int migd_tlsconn_new(SSL_CTX *ctx, struct migd_tlsconn **out);
void migd_tlsconn_free(struct migd_tlsconn *tc);

/*
 * Feed @n bytes of ciphertext from the peer. Drives the handshake; once
 * it is done, passes every decrypted byte to @fn. Returns 0, -EACCES when
 * the handshake failed (reason in migd_tlsconn_error()), -EPROTO for a
 * TLS error after it, -ECONNRESET when the peer sent close_notify, or
 * what @fn returned. Afterwards, flush migd_tlsconn_take_out() (handshake
 * messages and alerts).
 */
int migd_tlsconn_feed(struct migd_tlsconn *tc, const void *data, size_t n,
		      migd_tls_plain_fn fn, void *arg);

/* Encrypt @n bytes of plaintext (handshake done). 0, -ENOTCONN, -EPROTO. */
int migd_tlsconn_write(struct migd_tlsconn *tc, const void *data, size_t n);

/*
 * Move the ciphertext waiting to be sent into a malloc'd buffer (*@out,
 * the caller frees it) and return its size; 0 (and *@out = NULL) when
 * nothing waits, -ENOMEM.
 */
long migd_tlsconn_take_out(struct migd_tlsconn *tc, uint8_t **out);

bool migd_tlsconn_established(const struct migd_tlsconn *tc);
/* Why the handshake failed ("certificate verify failed: certificate has
 * expired", ...), "" before that. */
const char *migd_tlsconn_error(const struct migd_tlsconn *tc);
/* The peer certificate's subject CN once established, else "". */
const char *migd_tlsconn_peer(const struct migd_tlsconn *tc);

/*
 * The identities of the peer certificate once established: each subject
 * CN, then each DNS, URI and e-mail subjectAltName, in certificate order
 * (at most MIGD_TLS_PEER_IDS_MAX; a name longer than MIGD_TLS_PEER_ID_MAX
 * bytes or with a NUL in it is left out). Points @ids[] at strings that
 * live as long as @tc; returns how many (0 before the handshake).
 */
#define MIGD_TLS_PEER_IDS_MAX 16
#define MIGD_TLS_PEER_ID_MAX 255
unsigned migd_tlsconn_peer_ids(const struct migd_tlsconn *tc,
			       const char **ids, unsigned max);

#endif
