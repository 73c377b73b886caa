// SPDX-License-Identifier: MIT
/*
 * migd_tlsconn: TLS over memory BIOs. A client SSL object on memory BIOs
 * talks to the server object; bytes are pumped by hand, so the tests
 * see exactly what reaches the plaintext callback and when.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "migrated/rpc/tlsconn.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/tls.h"
#include "tests/harness/hv_test.h"

static char dir[] = "/tmp/migd-tlsconn.XXXXXX";
static char ca_dir[600], expired[600], expired_key[600];
static struct mig_devca ca, ca2;

static int setup(void)
{
	char d2[600];

	if (!mkdtemp(dir))
		return -1;
	snprintf(d2, sizeof(d2), "%s/ca_dir", dir);
	snprintf(ca_dir, sizeof(ca_dir), "%s/ca", dir);
	snprintf(expired, sizeof(expired), "%s/expired.pem", dir);
	snprintf(expired_key, sizeof(expired_key), "%s/expired.key", dir);
	if (mig_devca_ensure(ca_dir, &ca) || mig_devca_ensure(d2, &ca2) ||
	    mig_devca_issue(ca.ca_cert, ca.ca_key, "old", -7200, -3600, expired,
			    expired_key))
		return -1;
	return 0;
}

static int teardown(void)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) < 0;
}

struct sink {
	char buf[256];
	size_t len;
	unsigned calls;
};

static int deliver(void *arg, const void *data, size_t n)
{
	struct sink *s = arg;

	if (s->len + n <= sizeof(s->buf)) {
		memcpy(s->buf + s->len, data, n);
		s->len += n;
	}
	s->calls++;
	return 0;
}

struct client {
	struct mig_tls *tls;
	SSL *ssl;
	BIO *in, *out; /* in: bytes from the server; out: to the server */
};

static void client_new(struct client *c, const char *cert, const char *key)
{
	struct mig_tls_cfg cfg = {
		.ca_file = ca.ca_cert, .cert_file = cert, .key_file = key};

	CU_ASSERT_FATAL(mig_tls_create(&cfg, &c->tls) == 0);
	c->ssl = SSL_new(mig_tls_ctx(c->tls));
	c->in = BIO_new(BIO_s_mem());
	c->out = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(c->in, -1);
	SSL_set_bio(c->ssl, c->in, c->out);
	SSL_set_connect_state(c->ssl);
}

/* A client with no certificate at all (mig_tls insists on one). */
static void client_new_nocert(struct client *c)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_load_verify_locations(ctx, ca.ca_cert, NULL);
	c->tls = NULL;
	c->ssl = SSL_new(ctx);
	SSL_CTX_free(ctx); /* the SSL holds a reference */
	c->in = BIO_new(BIO_s_mem());
	c->out = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(c->in, -1);
	SSL_set_bio(c->ssl, c->in, c->out);
	SSL_set_connect_state(c->ssl);
}

static void client_free(struct client *c)
{
	SSL_free(c->ssl);
	mig_tls_destroy(c->tls);
	ERR_clear_error();
}

/* Run the handshake both ways; the client pipelines "REQUEST" as soon as
 * its side is done. Returns the server's last feed result. */
static int pump(struct client *c, struct migd_tlsconn *s, struct sink *sk)
{
	int ret = 0;
	bool sent = false;

	for (int round = 0; round < 20; round++) {
		uint8_t buf[16384], *out;
		int n;
		long m;

		if (SSL_do_handshake(c->ssl) == 1 && !sent) {
			SSL_write(c->ssl, "REQUEST", 7);
			sent = true;
		}
		while ((n = BIO_read(c->out, buf, sizeof(buf))) > 0) {
			ret = migd_tlsconn_feed(s, buf, (size_t)n, deliver, sk);
			if (ret)
				break;
		}
		m = migd_tlsconn_take_out(s, &out);
		if (m > 0) {
			BIO_write(c->in, out, (int)m);
			free(out);
		}
		if (ret)
			return ret;
		if (sent && sk->len)
			return 0;
	}
	return ret;
}

static SSL_CTX *server_ctx(struct mig_tls **t)
{
	struct mig_tls_cfg cfg = {.ca_file = ca.ca_cert,
				  .cert_file = ca.host_cert,
				  .key_file = ca.host_key,
				  .server = true};

	CU_ASSERT_FATAL(mig_tls_create(&cfg, t) == 0);
	return mig_tls_ctx(*t);
}

static void run_refused(struct client *c, const char *why)
{
	struct mig_tls *t;
	struct migd_tlsconn *s;
	struct sink sk = {0};

	CU_ASSERT_FATAL(migd_tlsconn_new(server_ctx(&t), &s) == 0);
	CU_ASSERT_EQUAL(pump(c, s, &sk), -EACCES);
	CU_ASSERT_FALSE(migd_tlsconn_established(s));
	/* Nothing the client pipelined reached the request parser. */
	CU_ASSERT_EQUAL(sk.calls, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(migd_tlsconn_error(s), why));
	migd_tlsconn_free(s);
	mig_tls_destroy(t);
}

static void test_valid_client_gets_its_bytes_and_answers(void)
{
	struct client c;
	struct mig_tls *t;
	struct migd_tlsconn *s;
	struct sink sk = {0};
	uint8_t *out;
	char back[16] = "";
	long m;

	client_new(&c, ca.client_cert, ca.client_key);
	CU_ASSERT_FATAL(migd_tlsconn_new(server_ctx(&t), &s) == 0);
	CU_ASSERT_EQUAL(pump(&c, s, &sk), 0);
	CU_ASSERT(migd_tlsconn_established(s));
	CU_ASSERT_EQUAL(sk.len, 7);
	CU_ASSERT_NSTRING_EQUAL(sk.buf, "REQUEST", 7);
	CU_ASSERT_STRING_EQUAL(migd_tlsconn_peer(s), "migrated client");
	CU_ASSERT_EQUAL(migd_tlsconn_write(s, "ANSWER", 6), 0);
	m = migd_tlsconn_take_out(s, &out);
	CU_ASSERT_FATAL(m > 0);
	BIO_write(c.in, out, (int)m);
	free(out);
	CU_ASSERT_EQUAL(SSL_read(c.ssl, back, sizeof(back)), 6);
	CU_ASSERT_NSTRING_EQUAL(back, "ANSWER", 6);
	migd_tlsconn_free(s);
	mig_tls_destroy(t);
	client_free(&c);
}

static void test_no_certificate_refused_before_any_byte(void)
{
	struct client c;

	client_new_nocert(&c);
	run_refused(&c, "did not return a certificate");
	client_free(&c);
}

static void test_other_ca_refused_before_any_byte(void)
{
	struct client c;

	client_new(&c, ca2.client_cert, ca2.client_key);
	run_refused(&c, "unable to get local issuer");
	client_free(&c);
}

static void test_expired_certificate_refused_before_any_byte(void)
{
	struct client c;

	client_new(&c, expired, expired_key);
	run_refused(&c, "expired");
	client_free(&c);
}

static void test_write_before_handshake_is_refused(void)
{
	struct mig_tls *t;
	struct migd_tlsconn *s;

	CU_ASSERT_FATAL(migd_tlsconn_new(server_ctx(&t), &s) == 0);
	CU_ASSERT_EQUAL(migd_tlsconn_write(s, "x", 1), -ENOTCONN);
	migd_tlsconn_free(s);
	migd_tlsconn_free(NULL);
	mig_tls_destroy(t);
}

static CU_TestInfo tests[] = {
	{"valid_client_gets_its_bytes_and_answers",
	 test_valid_client_gets_its_bytes_and_answers},
	{"no_certificate_refused_before_any_byte",
	 test_no_certificate_refused_before_any_byte},
	{"other_ca_refused_before_any_byte",
	 test_other_ca_refused_before_any_byte},
	{"expired_certificate_refused_before_any_byte",
	 test_expired_certificate_refused_before_any_byte},
	{"write_before_handshake_is_refused",
	 test_write_before_handshake_is_refused},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/tlsconn", setup, teardown, tests);
