// SPDX-License-Identifier: MIT
/*
 * Channels: TLS mutual authentication, development CA, plain TCP, and the
 * stream keeping its first error (migrated/mig/conn.c, tls.c, devca.c).
 * Loopback addresses only.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/conn.h"
#include "migrated/mig/devca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/ssl.h>

static char dir_a[64], dir_b[64];
static struct mig_devca ca_a, ca_b;

static int suite_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(dir_a, "/tmp/mig-test-XXXXXX");
	strcpy(dir_b, "/tmp/mig-test-XXXXXX");
	if (!mkdtemp(dir_a) || !mkdtemp(dir_b))
		return 1;
	strcat(dir_a, "/ca");
	strcat(dir_b, "/ca");
	if (mig_devca_ensure(dir_a, &ca_a) || mig_devca_ensure(dir_b, &ca_b))
		return 1;
	return 0;
}

static int suite_clean(void)
{
	char cmd[200];

	/* Both parents are our own mkdtemp directories. */
	snprintf(cmd, sizeof(cmd), "rm -rf -- %.*s %.*s",
		 (int)(strlen(dir_a) - 3), dir_a, (int)(strlen(dir_b) - 3),
		 dir_b);
	return system(cmd) ? 1 : 0;
}

static struct mig_tls *tls_new(const struct mig_devca *ca, const char *cert,
			       const char *key, bool server)
{
	struct mig_tls_cfg cfg = {
		.ca_file = ca->ca_cert,
		.cert_file = cert,
		.key_file = key,
		.server = server,
	};
	struct mig_tls *t = NULL;

	CU_ASSERT_EQUAL_FATAL(mig_tls_create(&cfg, &t), 0);
	return t;
}

struct server {
	int lfd;
	uint16_t port;
	struct mig_tls *tls;
	int accept_ret;
	int recv_ret;
	unsigned type;
	pthread_t thread;
};

/* Accept one channel, read one frame, answer with an Ack. */
static void *server_main(void *arg)
{
	struct server *s = arg;
	struct mig_conn *c = NULL;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;

	s->accept_ret = mig_conn_accept(s->lfd, s->tls, 5000, &c);
	if (s->accept_ret)
		return NULL;
	s->recv_ret = mig_conn_recv(c, &h, &m);
	if (!s->recv_ret) {
		Mig__Ack ack = MIG__ACK__INIT;

		s->type = h.type;
		mig_frame_msg_free(m);
		ack.pages = 42;
		mig_conn_send(c, MIG__MSG_TYPE__MSG_ACK, &ack.base, NULL, 0);
	}
	mig_conn_destroy(c);
	return NULL;
}

static void server_start(struct server *s, const char *host,
			 struct mig_tls *tls)
{
	memset(s, 0, sizeof(*s));
	s->tls = tls;
	s->accept_ret = s->recv_ret = 1;
	CU_ASSERT_EQUAL_FATAL(mig_listen(host, 0, &s->lfd, &s->port), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&s->thread, NULL, server_main,
					     s),
			      0);
}

static void server_join(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
}

/* Send a Hello, expect the Ack back; returns the first failure. */
static int client_exchange(struct mig_conn *c)
{
	Mig__Hello hello = MIG__HELLO__INIT;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	int ret;

	hello.version_min = 1;
	hello.version_max = 1;
	hello.role = MIG__ROLE__ROLE_CONTROL;
	ret = mig_conn_send(c, MIG__MSG_TYPE__MSG_HELLO, &hello.base, NULL, 0);
	if (!ret)
		ret = mig_conn_recv(c, &h, &m);
	if (ret)
		return ret;
	CU_ASSERT_EQUAL(h.type, MIG__MSG_TYPE__MSG_ACK);
	CU_ASSERT_EQUAL(((Mig__Ack *)m)->pages, 42);
	mig_frame_msg_free(m);
	return 0;
}

static void test_devca_writes_private_keys_0600_and_keeps_them(void)
{
	struct mig_devca again;
	struct stat st, st2;

	CU_ASSERT_EQUAL_FATAL(stat(ca_a.host_key, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL_FATAL(stat(ca_a.ca_key, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL_FATAL(stat(ca_a.client_key, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL_FATAL(stat(ca_a.ca_cert, &st), 0);
	CU_ASSERT_EQUAL(mig_devca_ensure(dir_a, &again), 0);
	CU_ASSERT_STRING_EQUAL(again.ca_cert, ca_a.ca_cert);
	CU_ASSERT_EQUAL_FATAL(stat(again.ca_cert, &st2), 0);
	CU_ASSERT_EQUAL(st.st_ino, st2.st_ino); /* not regenerated */
}

static void test_mutual_tls_loopback_succeeds(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	struct mig_tls *cli = tls_new(&ca_a, ca_a.client_cert,
				      ca_a.client_key, false);
	struct mig_conn *c = NULL;
	struct server s;

	server_start(&s, "127.0.0.1", srv);
	CU_ASSERT_EQUAL(mig_conn_connect("127.0.0.1", s.port, cli, 5000, &c),
			0);
	if (c) {
		CU_ASSERT(mig_conn_is_tls(c));
		CU_ASSERT_EQUAL(client_exchange(c), 0);
		mig_conn_destroy(c);
	}
	server_join(&s);
	CU_ASSERT_EQUAL(s.accept_ret, 0);
	CU_ASSERT_EQUAL(s.recv_ret, 0);
	CU_ASSERT_EQUAL(s.type, MIG__MSG_TYPE__MSG_HELLO);
	mig_tls_destroy(cli);
	mig_tls_destroy(srv);
}

static void test_client_checks_server_name(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	struct mig_tls_cfg cfg = {
		.ca_file = ca_a.ca_cert,
		.cert_file = ca_a.host_cert,
		.key_file = ca_a.host_key,
		.peer_name = "::1",
	};
	struct mig_tls *cli = NULL;
	struct mig_conn *c = NULL;
	struct server s;
	int fd;

	/* IPv6 loopback may be missing in a container: skip visibly. */
	if (mig_listen("::1", 0, &fd, NULL)) {
		hv_test_skip(__func__, "no IPv6 loopback");
		return;
	}
	close(fd);
	CU_ASSERT_EQUAL_FATAL(mig_tls_create(&cfg, &cli), 0);
	server_start(&s, "::1", srv);
	CU_ASSERT_EQUAL(mig_conn_connect("::1", s.port, cli, 5000, &c), 0);
	if (c) {
		CU_ASSERT_EQUAL(client_exchange(c), 0);
		mig_conn_destroy(c);
	}
	server_join(&s);
	mig_tls_destroy(cli);

	/* The same certificate does not carry this name. */
	cfg.peer_name = "other.example";
	CU_ASSERT_EQUAL_FATAL(mig_tls_create(&cfg, &cli), 0);
	server_start(&s, "127.0.0.1", srv);
	/* Never dereferenced: a failed connect leaves *out as it was. */
	c = (struct mig_conn *)&s;
	CU_ASSERT_EQUAL(mig_conn_connect("127.0.0.1", s.port, cli, 5000, &c),
			-EACCES);
	CU_ASSERT_PTR_EQUAL(c, (struct mig_conn *)&s);
	server_join(&s);
	CU_ASSERT_NOT_EQUAL(s.accept_ret, 0);
	mig_tls_destroy(cli);
	mig_tls_destroy(srv);
}

/*
 * A client the server must refuse: the server's accept fails and it never
 * reads a frame; the client, which may finish its side of a TLS 1.3
 * handshake first, fails at its latest on the first exchange.
 */
static void expect_refused(struct mig_tls *srv, struct mig_tls *cli)
{
	struct mig_conn *c = NULL;
	struct server s;
	int ret;

	server_start(&s, "127.0.0.1", srv);
	ret = mig_conn_connect("127.0.0.1", s.port, cli, 5000, &c);
	if (!ret) {
		CU_ASSERT_NOT_EQUAL(client_exchange(c), 0);
		mig_conn_destroy(c);
	}
	server_join(&s);
	CU_ASSERT_EQUAL(s.accept_ret, -EACCES);
	CU_ASSERT_EQUAL(s.recv_ret, 1); /* never read anything */
}

static void test_client_from_another_ca_is_refused(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	/* Trusts the server's CA, but presents a certificate of CA b. */
	struct mig_tls *cli = tls_new(&ca_a, ca_b.host_cert, ca_b.host_key,
				      false);

	expect_refused(srv, cli);
	mig_tls_destroy(cli);
	mig_tls_destroy(srv);
}

static void test_expired_client_certificate_is_refused(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	struct mig_tls *cli;
	char cert[600], key[600];

	snprintf(cert, sizeof(cert), "%s/expired.pem", dir_a);
	snprintf(key, sizeof(key), "%s/expired.key", dir_a);
	CU_ASSERT_EQUAL_FATAL(mig_devca_issue(ca_a.ca_cert, ca_a.ca_key,
					      "expired", -2 * 86400,
					      -86400, cert, key),
			      0);
	cli = tls_new(&ca_a, cert, key, false);
	expect_refused(srv, cli);
	mig_tls_destroy(cli);
	mig_tls_destroy(srv);
}

static void test_client_without_certificate_is_refused(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct server s;
	SSL *ssl;
	char buf[16];
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_load_verify_locations(ctx, ca_a.ca_cert, NULL);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	server_start(&s, "127.0.0.1", srv);
	/* A raw OpenSSL client: trusts the CA, has no certificate. */
	sin.sin_port = htons(s.port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sin,
				      sizeof(sin)),
			      0);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) == 1) {
		/* TLS 1.3: the refusal arrives as an alert on read. */
		SSL_write(ssl, "MIGS", 4);
		CU_ASSERT(SSL_read(ssl, buf, sizeof(buf)) <= 0);
	}
	SSL_free(ssl);
	close(fd);
	server_join(&s);
	CU_ASSERT_EQUAL(s.accept_ret, -EACCES);
	CU_ASSERT_EQUAL(s.recv_ret, 1);
	SSL_CTX_free(ctx);
	mig_tls_destroy(srv);
}

/* Insecure mode: plain frames; a bad header fails the stream for good. */
static void *garbage_sender(void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	struct mig_conn *c;
	static const uint8_t junk[32] = "NOT A MIGRATION STREAM AT ALL..";

	if (mig_conn_connect("127.0.0.1", port, NULL, 5000, &c))
		return NULL;
	mig_conn_send_frame(c, junk, sizeof(junk));
	usleep(200000);
	mig_conn_destroy(c);
	return NULL;
}

static void test_stream_keeps_its_first_error(void)
{
	struct mig_conn *c;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	pthread_t t;
	uint16_t port;
	int lfd;

	CU_ASSERT_EQUAL_FATAL(mig_listen("127.0.0.1", 0, &lfd, &port), 0);
	pthread_create(&t, NULL, garbage_sender, &port);
	CU_ASSERT_EQUAL_FATAL(mig_conn_accept(lfd, NULL, 5000, &c), 0);
	CU_ASSERT(!mig_conn_is_tls(c));
	CU_ASSERT_EQUAL(mig_conn_recv(c, &h, &m), -EPROTO);
	CU_ASSERT_EQUAL(mig_conn_error(c), -EPROTO);
	/* Later calls return it without touching the socket. */
	CU_ASSERT_EQUAL(mig_conn_recv(c, &h, &m), -EPROTO);
	CU_ASSERT_EQUAL(mig_conn_send_frame(c, "x", 1), -EPROTO);
	CU_ASSERT_EQUAL(mig_conn_set_error(c, -EIO), -EPROTO);
	pthread_join(t, NULL);
	mig_conn_destroy(c);
	close(lfd);
}

static void *silent_peer(void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	struct mig_conn *c;

	if (mig_conn_connect("127.0.0.1", port, NULL, 5000, &c))
		return NULL;
	usleep(600000);
	mig_conn_destroy(c);
	return NULL;
}

static void test_silent_peer_times_out_then_stays_failed(void)
{
	struct mig_conn *c;
	struct mig_frame_hdr h;
	ProtobufCMessage *m;
	pthread_t t;
	uint16_t port;
	int lfd;

	CU_ASSERT_EQUAL_FATAL(mig_listen("127.0.0.1", 0, &lfd, &port), 0);
	CU_ASSERT_EQUAL(mig_conn_accept(lfd, NULL, 100, &c), -ETIMEDOUT);
	pthread_create(&t, NULL, silent_peer, &port);
	CU_ASSERT_EQUAL_FATAL(mig_conn_accept(lfd, NULL, 200, &c), 0);
	CU_ASSERT_EQUAL(mig_conn_recv(c, &h, &m), -ETIMEDOUT);
	CU_ASSERT_EQUAL(mig_conn_recv(c, &h, &m), -ETIMEDOUT);
	pthread_join(t, NULL);
	mig_conn_destroy(c);
	close(lfd);
}

static void test_connect_to_closed_port_is_refused(void)
{
	struct mig_conn *c = NULL;
	uint16_t port;
	int lfd;

	CU_ASSERT_EQUAL_FATAL(mig_listen("127.0.0.1", 0, &lfd, &port), 0);
	close(lfd);
	c = (struct mig_conn *)&lfd; /* never dereferenced */
	CU_ASSERT_EQUAL(mig_conn_connect("127.0.0.1", port, NULL, 1000, &c),
			-ECONNREFUSED);
	CU_ASSERT_PTR_EQUAL(c, (struct mig_conn *)&lfd);
	/* Host names resolve (addr.h): localhost is refused like its
	 * address; a name that does not resolve says so. */
	CU_ASSERT_EQUAL(mig_conn_connect("localhost", port, NULL, 1000, &c),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(mig_conn_connect("no-such-host.invalid", port, NULL,
					 1000, &c),
			-EHOSTUNREACH);
	CU_ASSERT_PTR_EQUAL(c, (struct mig_conn *)&lfd);
}

/* The client trusts another CA than the server's: the user must read
 * "certificate", not "Permission denied". */
static void test_wrong_ca_is_reported_as_a_certificate_error(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	struct mig_tls *cli = tls_new(&ca_b, ca_b.host_cert, ca_b.host_key,
				      false);
	struct mig_conn *c = NULL;
	struct server s;
	int ret;

	server_start(&s, "127.0.0.1", srv);
	ret = mig_conn_connect("127.0.0.1", s.port, cli, 5000, &c);
	server_join(&s);
	CU_ASSERT_EQUAL(ret, -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(mig_conn_strerror(ret),
				      "certificate verify failed"));
	CU_ASSERT_EQUAL(s.accept_ret, -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(mig_conn_strerror(s.accept_ret),
				      "certificate"));
	mig_conn_destroy(c);
	mig_tls_destroy(cli);
	mig_tls_destroy(srv);
}

/* A plain (--insecure) source against a TLS destination: both ends name
 * the mismatch. */
static void test_plain_client_on_tls_listener_is_a_mismatch(void)
{
	struct mig_tls *srv = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      true);
	struct mig_conn *c = NULL;
	struct server s;
	int ret;

	server_start(&s, "127.0.0.1", srv);
	CU_ASSERT_EQUAL_FATAL(mig_conn_connect("127.0.0.1", s.port, NULL, 5000,
					       &c),
			      0);
	ret = client_exchange(c);
	server_join(&s);
	CU_ASSERT_EQUAL(s.accept_ret, -EPROTOTYPE);
	CU_ASSERT_EQUAL(ret, -EPROTOTYPE);
	CU_ASSERT_PTR_NOT_NULL(strstr(mig_conn_strerror(ret),
				      "TLS/plain mismatch"));
	mig_conn_destroy(c);
	mig_tls_destroy(srv);
}

/* And the reverse: a TLS source against a plain destination. */
static void test_tls_client_on_plain_listener_is_a_mismatch(void)
{
	struct mig_tls *cli = tls_new(&ca_a, ca_a.host_cert, ca_a.host_key,
				      false);
	struct mig_conn *c = NULL;
	struct server s;
	int ret;

	server_start(&s, "127.0.0.1", NULL);
	ret = mig_conn_connect("127.0.0.1", s.port, cli, 5000, &c);
	server_join(&s);
	CU_ASSERT_EQUAL(s.accept_ret, 0);
	CU_ASSERT_EQUAL(s.recv_ret, -EPROTOTYPE);
	CU_ASSERT_EQUAL(ret, -EPROTOTYPE);
	CU_ASSERT_PTR_NOT_NULL(strstr(mig_conn_strerror(ret),
				      "TLS/plain mismatch"));
	mig_conn_destroy(c);
	mig_tls_destroy(cli);
}

/*
 * A data channel takes batches only: a 16 MiB VM state frame on it fails
 * by its header, before 16 MiB are read or allocated.
 */
static void test_unexpected_type_is_refused_before_its_message(void)
{
	int sv[2];
	uint8_t raw[MIG_FRAME_HDR_SIZE];
	struct mig_frame_hdr h = {
		.magic = MIG_FRAME_MAGIC,
		.version = MIG_FRAME_VERSION,
		.type = MIG__MSG_TYPE__MSG_VM_STATE,
		.len = MIG_FRAME_MSG_MAX,
	};
	ProtobufCMessage *m = NULL;
	struct mig_conn *c = NULL;

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	mig_frame_hdr_encode(&h, raw);
	CU_ASSERT_EQUAL(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	CU_ASSERT_EQUAL_FATAL(mig_conn_server_new(sv[0], NULL, &c), 0);
	CU_ASSERT_EQUAL(mig_conn_set_blocking(c, 2000), 0);
	/* Only the header was sent: reading the message would time out. */
	CU_ASSERT_EQUAL(mig_conn_recv_types(
				c, MIG_CONN_TYPE(MIG__MSG_TYPE__MSG_PAGE_BATCH),
				&h, &m),
			-EPROTO);
	CU_ASSERT_EQUAL(mig_conn_bytes_recv(c), MIG_FRAME_HDR_SIZE);
	CU_ASSERT_PTR_NULL(m);
	mig_conn_destroy(c);
	close(sv[1]);
}

struct reader {
	struct mig_conn *c;
	int ret;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct mig_frame_hdr h;
	ProtobufCMessage *m = NULL;

	r->ret = mig_conn_recv(r->c, &h, &m);
	mig_frame_msg_free(m);
	return NULL;
}

/*
 * An interrupt wakes a reader waiting for a frame with -EINTR and leaves
 * the channel whole: a frame sent afterwards is read as usual. (A
 * shutdown would fail the channel, and the Cancel could not go out.)
 */
static void test_interrupt_wakes_a_reader_and_leaves_the_channel_whole(void)
{
	Mig__Ack ack = MIG__ACK__INIT;
	struct mig_conn *a = NULL, *b = NULL;
	struct mig_frame_hdr h;
	ProtobufCMessage *m = NULL;
	struct reader r = { .ret = 1 };
	pthread_t t;
	int sv[2];

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_server_new(sv[0], NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_server_new(sv[1], NULL, &b), 0);
	CU_ASSERT_EQUAL(mig_conn_set_blocking(a, 5000), 0);
	CU_ASSERT_EQUAL(mig_conn_set_blocking(b, 5000), 0);
	CU_ASSERT_EQUAL_FATAL(mig_conn_set_interruptible(a), 0);
	r.c = a;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, reader_main, &r), 0);
	usleep(100 * 1000);
	mig_conn_interrupt(a);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(r.ret, -EINTR);
	CU_ASSERT_EQUAL(mig_conn_error(a), 0);
	ack.pages = 7;
	CU_ASSERT_EQUAL(mig_conn_send(b, MIG__MSG_TYPE__MSG_ACK, &ack.base,
				      NULL, 0),
			0);
	CU_ASSERT_EQUAL(mig_conn_recv(a, &h, &m), 0);
	CU_ASSERT_EQUAL(h.type, MIG__MSG_TYPE__MSG_ACK);
	if (m)
		CU_ASSERT_EQUAL(((Mig__Ack *)m)->pages, 7);
	mig_frame_msg_free(m);
	CU_ASSERT_EQUAL(mig_conn_send(a, MIG__MSG_TYPE__MSG_ACK, &ack.base,
				      NULL, 0),
			0);
	mig_conn_destroy(a);
	mig_conn_destroy(b);
}

static CU_TestInfo tests[] = {
	{ "devca_writes_private_keys_0600_and_keeps_them",
	  test_devca_writes_private_keys_0600_and_keeps_them },
	{ "mutual_tls_loopback_succeeds", test_mutual_tls_loopback_succeeds },
	{ "client_checks_server_name", test_client_checks_server_name },
	{ "client_from_another_ca_is_refused",
	  test_client_from_another_ca_is_refused },
	{ "expired_client_certificate_is_refused",
	  test_expired_client_certificate_is_refused },
	{ "client_without_certificate_is_refused",
	  test_client_without_certificate_is_refused },
	{ "stream_keeps_its_first_error", test_stream_keeps_its_first_error },
	{ "silent_peer_times_out_then_stays_failed",
	  test_silent_peer_times_out_then_stays_failed },
	{ "connect_to_closed_port_is_refused",
	  test_connect_to_closed_port_is_refused },
	{ "wrong_ca_is_reported_as_a_certificate_error",
	  test_wrong_ca_is_reported_as_a_certificate_error },
	{ "plain_client_on_tls_listener_is_a_mismatch",
	  test_plain_client_on_tls_listener_is_a_mismatch },
	{ "tls_client_on_plain_listener_is_a_mismatch",
	  test_tls_client_on_plain_listener_is_a_mismatch },
	{ "unexpected_type_is_refused_before_its_message",
	  test_unexpected_type_is_refused_before_its_message },
	{ "interrupt_wakes_a_reader_and_leaves_the_channel_whole",
	  test_interrupt_wakes_a_reader_and_leaves_the_channel_whole },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/conn", suite_init, suite_clean, tests);
