// SPDX-License-Identifier: MIT
/*
 * migd_tlsconn: TLS over memory BIOs (tlsconn.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "migrated/rpc/tlsconn.h"

#define PLAIN_CHUNK 16384

struct migd_tlsconn {
	SSL *ssl;
	BIO *rbio; /* ciphertext from the peer, read by OpenSSL */
	BIO *wbio; /* ciphertext OpenSSL wants sent */
	bool established;
	char error[160];
	char peer[96];
	/* The certificate's CN and subjectAltNames (rpcauth.h) */
	char ids[MIGD_TLS_PEER_IDS_MAX][MIGD_TLS_PEER_ID_MAX + 1];
	unsigned nr_ids;
};

int migd_tlsconn_new(SSL_CTX *ctx, struct migd_tlsconn **out)
{
	struct migd_tlsconn *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return -ENOMEM;
	tc->ssl = SSL_new(ctx);
	tc->rbio = BIO_new(BIO_s_mem());
	tc->wbio = BIO_new(BIO_s_mem());
	if (!tc->ssl || !tc->rbio || !tc->wbio) {
		BIO_free(tc->rbio);
		BIO_free(tc->wbio);
		SSL_free(tc->ssl);
		free(tc);
		ERR_clear_error();
		return -ENOMEM;
	}
	/* An empty memory BIO reports "retry", not EOF. */
	BIO_set_mem_eof_return(tc->rbio, -1);
	BIO_set_mem_eof_return(tc->wbio, -1);
	SSL_set_bio(tc->ssl, tc->rbio, tc->wbio); /* SSL owns both now */
	SSL_set_accept_state(tc->ssl);
	*out = tc;
	return 0;
}

void migd_tlsconn_free(struct migd_tlsconn *tc)
{
	if (!tc)
		return;
	SSL_free(tc->ssl);
	free(tc);
}

/* Record OpenSSL's first queued reason (and the verify result) in @tc. */
static void note_error(struct migd_tlsconn *tc, const char *what)
{
	unsigned long e = ERR_peek_error();
	long vr = SSL_get_verify_result(tc->ssl);
	char reason[120] = "unknown";

	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	if (vr != X509_V_OK)
		snprintf(tc->error, sizeof(tc->error), "%s: %s", what,
			 X509_verify_cert_error_string(vr));
	else
		snprintf(tc->error, sizeof(tc->error), "%s: %s", what, reason);
	ERR_clear_error();
}

/* Keep @s (@n bytes, not NUL-terminated) as an identity: names with a
 * NUL inside or longer than the cap are skipped, never truncated (a
 * truncated name could equal another one). */
static void add_id(struct migd_tlsconn *tc, const unsigned char *s, int n)
{
	if (n <= 0 || n > MIGD_TLS_PEER_ID_MAX ||
	    tc->nr_ids == MIGD_TLS_PEER_IDS_MAX || memchr(s, '\0', (size_t)n))
		return;
	memcpy(tc->ids[tc->nr_ids], s, (size_t)n);
	tc->ids[tc->nr_ids][n] = '\0';
	tc->nr_ids++;
}

static void note_peer(struct migd_tlsconn *tc)
{
	X509 *cert = SSL_get1_peer_certificate(tc->ssl);
	X509_NAME *subj;
	GENERAL_NAMES *sans;
	int i;

	if (!cert)
		return;
	subj = X509_get_subject_name(cert);
	X509_NAME_get_text_by_NID(subj, NID_commonName, tc->peer,
				  sizeof(tc->peer));
	/* Every CN entry, not only the first (rules match any). */
	for (i = -1;
	     (i = X509_NAME_get_index_by_NID(subj, NID_commonName, i)) >= 0;) {
		ASN1_STRING *d =
			X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
		unsigned char *u = NULL;
		int n = ASN1_STRING_to_UTF8(&u, d);

		add_id(tc, u, n);
		OPENSSL_free(u);
	}
	sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	for (i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);

		if (g->type == GEN_DNS || g->type == GEN_URI ||
		    g->type == GEN_EMAIL)
			add_id(tc, ASN1_STRING_get0_data(g->d.ia5),
			       ASN1_STRING_length(g->d.ia5));
	}
	GENERAL_NAMES_free(sans);
	X509_free(cert);
}

unsigned migd_tlsconn_peer_ids(const struct migd_tlsconn *tc,
			       const char **ids, unsigned max)
{
	unsigned n = 0;

	for (; tc && n < tc->nr_ids && n < max; n++)
		ids[n] = tc->ids[n];
	return n;
}

int migd_tlsconn_feed(struct migd_tlsconn *tc, const void *data, size_t n,
		      migd_tls_plain_fn fn, void *arg)
{
	uint8_t buf[PLAIN_CHUNK];
	int ret;

	if (n && BIO_write(tc->rbio, data, (int)n) != (int)n)
		return -ENOMEM;
	if (!tc->established) {
		ret = SSL_do_handshake(tc->ssl);
		if (ret != 1) {
			int err = SSL_get_error(tc->ssl, ret);

			if (err == SSL_ERROR_WANT_READ ||
			    err == SSL_ERROR_WANT_WRITE)
				return 0;
			note_error(tc, "handshake");
			return -EACCES;
		}
		tc->established = true;
		note_peer(tc);
	}
	for (;;) {
		ret = SSL_read(tc->ssl, buf, sizeof(buf));
		if (ret > 0) {
			int r = fn(arg, buf, (size_t)ret);

			if (r)
				return r;
			continue;
		}
		switch (SSL_get_error(tc->ssl, ret)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			return 0;
		case SSL_ERROR_ZERO_RETURN:
			return -ECONNRESET;
		default:
			note_error(tc, "read");
			return -EPROTO;
		}
	}
}

int migd_tlsconn_write(struct migd_tlsconn *tc, const void *data, size_t n)
{
	size_t done = 0;

	if (!tc->established)
		return -ENOTCONN;
	/* Memory BIOs grow as needed, so SSL_write never wants to retry. */
	while (done < n) {
		size_t w;

		if (SSL_write_ex(tc->ssl, (const uint8_t *)data + done,
				 n - done, &w) != 1) {
			note_error(tc, "write");
			return -EPROTO;
		}
		done += w;
	}
	return 0;
}

long migd_tlsconn_take_out(struct migd_tlsconn *tc, uint8_t **out)
{
	size_t pending = BIO_ctrl_pending(tc->wbio);
	uint8_t *buf;
	int n;

	*out = NULL;
	if (!pending)
		return 0;
	buf = malloc(pending);
	if (!buf)
		return -ENOMEM;
	n = BIO_read(tc->wbio, buf, (int)pending);
	if (n <= 0) {
		free(buf);
		return 0;
	}
	*out = buf;
	return n;
}

bool migd_tlsconn_established(const struct migd_tlsconn *tc)
{
	return tc->established;
}

const char *migd_tlsconn_error(const struct migd_tlsconn *tc)
{
	return tc->error;
}

const char *migd_tlsconn_peer(const struct migd_tlsconn *tc)
{
	return tc->peer;
}
