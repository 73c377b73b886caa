// SPDX-License-Identifier: MIT
#include "migrated/mig/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "hvcore/log.h"

struct mig_tls {
	SSL_CTX *ctx;
	bool server;
	char *peer_name;
};

void mig_tls_log_errors(const char *what)
{
	unsigned long e = ERR_peek_error();
	char buf[256];

	if (!e) {
		hv_err("tls", "op=%s err=unknown", what);
		return;
	}
	ERR_error_string_n(e, buf, sizeof(buf));
	hv_err("tls", "op=%s err=\"%s\"", what, buf);
	ERR_clear_error();
}

/* mig_tls_log_errors() naming the file that did not load. */
static void log_file_errors(const char *op, const char *path)
{
	char esc[HV_LOG_ESCAPE_LEN(200)], what[sizeof(esc) + 32];

	snprintf(what, sizeof(what), "%s file=\"%s\"", op,
		 hv_log_escape(path, esc, sizeof(esc)));
	mig_tls_log_errors(what);
}

int mig_tls_create(const struct mig_tls_cfg *cfg, struct mig_tls **out)
{
	struct mig_tls *t;
	int ret = -EIO;

	if (!cfg || !cfg->ca_file || !cfg->cert_file || !cfg->key_file)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->server = cfg->server;
	if (cfg->peer_name && !(t->peer_name = strdup(cfg->peer_name))) {
		ret = -ENOMEM;
		goto fail;
	}
	ERR_clear_error();
	t->ctx = SSL_CTX_new(cfg->server ? TLS_server_method()
					 : TLS_client_method());
	if (!t->ctx) {
		mig_tls_log_errors("ctx_new");
		ret = -ENOMEM;
		goto fail;
	}
	if (!SSL_CTX_set_min_proto_version(t->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(t->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(t->ctx,
				      "TLS_AES_128_GCM_SHA256:"
				      "TLS_AES_256_GCM_SHA384:"
				      "TLS_CHACHA20_POLY1305_SHA256")) {
		mig_tls_log_errors("ctx_proto");
		goto fail;
	}
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_TICKET |
					    SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_num_tickets(t->ctx, 0);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_AUTO_RETRY);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);

	if (SSL_CTX_load_verify_locations(t->ctx, cfg->ca_file, NULL) != 1) {
		log_file_errors("load_ca", cfg->ca_file);
		ret = -ENOENT;
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->cert_file) != 1) {
		log_file_errors("load_cert", cfg->cert_file);
		ret = -ENOENT;
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->key_file,
					SSL_FILETYPE_PEM) != 1) {
		log_file_errors("load_key", cfg->key_file);
		ret = -ENOENT;
		goto fail;
	}
	if (SSL_CTX_check_private_key(t->ctx) != 1) {
		mig_tls_log_errors("check_key");
		ret = -EKEYREJECTED;
		goto fail;
	}
	/* Mutual authentication: both sides insist on a valid peer. */
	SSL_CTX_set_verify(t->ctx,
			   SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
			   NULL);
	SSL_CTX_set_verify_depth(t->ctx, 4);
	*out = t;
	return 0;
fail:
	SSL_CTX_free(t->ctx);
	free(t->peer_name);
	free(t);
	return ret;
}

void mig_tls_destroy(struct mig_tls *tls)
{
	if (!tls)
		return;
	SSL_CTX_free(tls->ctx);
	free(tls->peer_name);
	free(tls);
}

bool mig_tls_is_server(const struct mig_tls *tls)
{
	return tls->server;
}

const char *mig_tls_peer_name(const struct mig_tls *tls)
{
	return tls->peer_name;
}

SSL_CTX *mig_tls_ctx(const struct mig_tls *tls)
{
	return tls->ctx;
}
