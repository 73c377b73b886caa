/* SPDX-License-Identifier: MIT */
/*
 * mig_tls: the TLS configuration of migration channels: OpenSSL 3,
 * TLS 1.3 only, mutual certificate authentication.
 * Both sides present a certificate and verify the peer's against the
 * configured CA (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT on the
 * server): a peer without a certificate, with one from another CA, or with
 * an expired one fails the handshake, before any message is read.
 *
 * The cipher suites prefer TLS_AES_128_GCM_SHA256, the fastest with AES-NI
 * and the one hvbench stream compares against. Session tickets are off:
 * migration channels never resume.
 *
 * A struct mig_tls wraps one SSL_CTX, immutable after create and shared by
 * every channel of a session, from any thread (OpenSSL 3 makes SSL_CTX
 * use thread-safe). Insecure plain TCP is not a mode of this object: a
 * channel gets it by passing tls = NULL to mig_conn_* (migrated/mig/conn.h),
 * which callers do only when the operator asked for it explicitly.
 */
#ifndef MIG_TLS_H
#define MIG_TLS_H

#include <stdbool.h>

#include <openssl/ssl.h>

struct mig_tls_cfg {
	const char *ca_file;   /* PEM: the CA that signs peers */
	const char *cert_file; /* PEM: our certificate (chain) */
	const char *key_file;  /* PEM: our private key */
	bool server;	       /* accepting side of the channels */
	/* Client only, optional: the name or IP the server's certificate
	 * must carry; NULL checks the CA signature only. */
	const char *peer_name;
};

struct mig_tls;

/*
 * Returns 0, -EINVAL (missing field), -ENOENT (a file cannot be loaded),
 * -EKEYREJECTED (key does not match the certificate), -ENOMEM or -EIO
 * (other OpenSSL errors). Logs the OpenSSL reason once.
 */
int mig_tls_create(const struct mig_tls_cfg *cfg, struct mig_tls **out);
void mig_tls_destroy(struct mig_tls *tls);

bool mig_tls_is_server(const struct mig_tls *tls);
const char *mig_tls_peer_name(const struct mig_tls *tls);
/* For mig_conn only: the context new SSL objects are made from. */
SSL_CTX *mig_tls_ctx(const struct mig_tls *tls);

/*
 * Log OpenSSL's queued errors (one line, the first reason) with @what,
 * then clear the queue of the calling thread.
 */
void mig_tls_log_errors(const char *what);

#endif
