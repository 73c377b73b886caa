// SPDX-License-Identifier: MIT
/*
 * migd_server deadlines on TCP + TLS: a real server on this test's own
 * libuv loop (Unix socket plus a TLS listener on 127.0.0.1, dev CA), and
 * clients in a thread with blocking sockets, timing when the server
 * closes them. Short timeouts (hundreds of ms) keep the suite quick; the
 * bounds are loose on the slow side because ASan builds share two cores.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "migrated/rpc/ctl_frame.h"
#include "migrated/rpc/server.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/tls.h"
#include "tests/harness/hv_test.h"

static char dir[] = "/tmp/migd-server.XXXXXX";
static struct mig_devca ca;

static int setup(void)
{
	char ca_dir[600];

	if (!mkdtemp(dir))
		return -1;
	snprintf(ca_dir, sizeof(ca_dir), "%s/tls", dir);
	return mig_devca_ensure(ca_dir, &ca) ? -1 : 0;
}

static int teardown(void)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) < 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the server side: a bare migd_server with its own owner ---------- */

struct rig {
	uv_loop_t loop;
	struct migd_server srv;
	struct migd_server_policy pol;
	uint16_t port;
};

static void rig_policy(void *owner, struct migd_server_policy *out)
{
	const struct rig *r = owner;

	*out = r->pol;
}

/* Subscriptions only: what these tests send. */
static const char *rig_dispatch(unsigned cs, struct migd_call *call)
{
	switch (cs) {
	case MIGD__REQUEST__CALL_SUBSCRIBE:
		migd_server_subscribe(call);
		return "subscribe";
	case MIGD__REQUEST__CALL_UNSUBSCRIBE:
		if (migd_server_unsubscribe(call->conn,
					    call->req->unsubscribe->subscription))
			migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
				       "no such subscription");
		return "unsubscribe";
	default:
		migd_call_fail(call, MIGD__STATUS__STATUS_UNIMPLEMENTED,
			       "unknown call (case %u)", cs);
		return "?";
	}
}

static const struct migd_server_ops rig_ops = {
	.dispatch = rig_dispatch,
	.policy = rig_policy,
};

static void rig_start(struct rig *r, uint32_t handshake_ms, uint32_t idle_ms)
{
	char sock[700];

	CU_ASSERT_FATAL(uv_loop_init(&r->loop) == 0);
	memset(&r->pol, 0, sizeof(r->pol));
	r->pol.handshake_timeout_ms = handshake_ms;
	r->pol.idle_timeout_ms = idle_ms;
	snprintf(sock, sizeof(sock), "%s/control.sock", dir);
	CU_ASSERT_FATAL(migd_server_start(&r->srv, &r->loop, &rig_ops, r,
					  sock, -1) == 0);
	CU_ASSERT_FATAL(migd_server_listen_tcp(&r->srv, "127.0.0.1", 0,
					       ca.ca_cert, ca.host_cert,
					       ca.host_key) == 0);
	r->port = r->srv.tcp_port;
}

static void rig_stop(struct rig *r)
{
	migd_server_stop(&r->srv);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	CU_ASSERT_EQUAL(uv_loop_close(&r->loop), 0);
}

/* Run the loop until @done (set by a client thread). */
static void rig_run_until(struct rig *r, atomic_bool *done)
{
	while (!atomic_load(done)) {
		uv_run(&r->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	uv_run(&r->loop, UV_RUN_NOWAIT);
}

/* ---- the client side ------------------------------------------------- */

static int tcp_connect(uint16_t port, unsigned rcv_timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = rcv_timeout_ms / 1000,
			      .tv_usec = (rcv_timeout_ms % 1000) * 1000 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

struct client {
	uint16_t port;
	unsigned wait_ms;   /* how long to wait for the server to close */
	const void *send;   /* raw bytes to send first (not TLS) */
	size_t send_len;
	bool tls;	    /* complete a TLS handshake first */
	bool subscribe;	    /* then subscribe ... */
	bool unsubscribe;   /* ... wait wait_ms, then unsubscribe */
	/* results */
	bool ok;	   /* connected (and handshake done) */
	bool closed;	   /* the server closed within wait_ms */
	bool open_after_sub; /* subscribed: still open after wait_ms */
	uint64_t close_ms; /* from connect / handshake / unsubscribe */
	atomic_bool done;
};

/* Send one framed request; read and check its response. */
static bool call(SSL *ssl, Migd__Request *req)
{
	uint8_t *buf, in[4096];
	size_t len, got = 0, want = MIGD_FRAME_HDR;
	uint32_t body = 0;
	Migd__ServerMessage *sm;
	bool ok;

	if (migd_frame_pack(&req->base, MIGD_FRAME_MAX, &buf, &len))
		return false;
	ok = SSL_write(ssl, buf, (int)len) == (int)len;
	free(buf);
	while (ok && got < want) {
		int n = SSL_read(ssl, in + got, (int)(sizeof(in) - got));

		if (n <= 0)
			return false;
		got += (size_t)n;
		if (got >= MIGD_FRAME_HDR && want == MIGD_FRAME_HDR) {
			if (migd_frame_get_len(in, sizeof(in) - MIGD_FRAME_HDR,
					       &body))
				return false;
			want = MIGD_FRAME_HDR + body;
		}
	}
	if (!ok)
		return false;
	sm = migd__server_message__unpack(NULL, body, in + MIGD_FRAME_HDR);
	ok = sm && sm->msg_case == MIGD__SERVER_MESSAGE__MSG_RESPONSE &&
	     sm->response->error &&
	     sm->response->error->status == MIGD__STATUS__STATUS_OK;
	if (sm)
		migd__server_message__free_unpacked(sm, NULL);
	return ok;
}

/* Block until the peer closes (true) or the receive timeout passes. */
static bool wait_closed(int fd, SSL *ssl)
{
	char b[256];

	for (;;) {
		int n = ssl ? SSL_read(ssl, b, sizeof(b))
			    : (int)recv(fd, b, sizeof(b), 0);

		if (n > 0)
			continue;
		if (n == 0)
			return true;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return false;
		return true; /* reset */
	}
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct mig_tls_cfg tcfg = { .ca_file = ca.ca_cert,
				    .cert_file = ca.client_cert,
				    .key_file = ca.client_key };
	struct mig_tls *tls = NULL;
	SSL *ssl = NULL;
	uint64_t t0;
	int fd;

	fd = tcp_connect(c->port, c->wait_ms);
	if (fd < 0)
		goto out;
	if (c->send && send(fd, c->send, c->send_len, 0) < 0)
		goto out_fd;
	if (c->tls) {
		if (mig_tls_create(&tcfg, &tls))
			goto out_fd;
		ssl = SSL_new(mig_tls_ctx(tls));
		SSL_set_fd(ssl, fd);
		if (SSL_connect(ssl) != 1)
			goto out_ssl;
	}
	if (c->subscribe) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__SubscribeRequest sub = MIGD__SUBSCRIBE_REQUEST__INIT;

		req.id = 7;
		req.call_case = MIGD__REQUEST__CALL_SUBSCRIBE;
		req.subscribe = &sub;
		if (!call(ssl, &req))
			goto out_ssl;
		/* A subscriber may stay silent: still open afterwards. */
		c->open_after_sub = !wait_closed(fd, ssl);
	}
	if (c->unsubscribe) {
		Migd__Request req = MIGD__REQUEST__INIT;
		Migd__UnsubscribeRequest un = MIGD__UNSUBSCRIBE_REQUEST__INIT;

		req.id = 8;
		req.call_case = MIGD__REQUEST__CALL_UNSUBSCRIBE;
		un.subscription = 7;
		req.unsubscribe = &un;
		if (!call(ssl, &req))
			goto out_ssl;
	}
	c->ok = true;
	t0 = now_ms();
	c->closed = wait_closed(fd, ssl);
	c->close_ms = now_ms() - t0;
out_ssl:
	SSL_free(ssl);
	mig_tls_destroy(tls);
out_fd:
	close(fd);
out:
	atomic_store(&c->done, true);
	return NULL;
}

static void run_client(struct rig *r, struct client *c)
{
	pthread_t t;

	c->port = r->port;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, client_main, c) == 0);
	rig_run_until(r, &c->done);
	pthread_join(t, NULL);
	/* Let the server see the client's close as well. */
	for (int i = 0; i < 200 && r->srv.nr_conns; i++) {
		uv_run(&r->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

/* ---- tests ----------------------------------------------------------- */

static void test_silent_tcp_client_closed_at_handshake_deadline(void)
{
	struct rig r;
	struct client c = { .wait_ms = 5000 };

	rig_start(&r, 300, 60000);
	run_client(&r, &c);
	CU_ASSERT(c.ok);
	CU_ASSERT(c.closed);
	CU_ASSERT(c.close_ms >= 250 && c.close_ms < 3000);
	CU_ASSERT_EQUAL(r.srv.handshake_timeouts, 1);
	CU_ASSERT_EQUAL(r.srv.nr_conns, 0); /* the slot is free again */
	rig_stop(&r);
}

static void test_partial_client_hello_closed_at_handshake_deadline(void)
{
	/* A TLS record header announcing a handshake message that never
	 * comes: the server waits for the rest, but not forever. */
	static const uint8_t partial[] = { 0x16, 0x03, 0x01, 0x02, 0x00,
					   0x01, 0x00, 0x01, 0xfc, 0x03 };
	struct rig r;
	struct client c = { .wait_ms = 5000,
			    .send = partial,
			    .send_len = sizeof(partial) };

	rig_start(&r, 300, 60000);
	run_client(&r, &c);
	CU_ASSERT(c.ok && c.closed);
	CU_ASSERT(c.close_ms >= 250 && c.close_ms < 3000);
	CU_ASSERT_EQUAL(r.srv.handshake_timeouts, 1);
	rig_stop(&r);
}

static void test_idle_client_closed_after_idle_not_handshake_deadline(void)
{
	struct rig r;
	struct client c = { .wait_ms = 6000, .tls = true };

	/* Closed at the idle deadline (measured from the handshake), which
	 * replaced the shorter handshake one. */
	rig_start(&r, 300, 1000);
	run_client(&r, &c);
	CU_ASSERT(c.ok && c.closed);
	CU_ASSERT(c.close_ms >= 800 && c.close_ms < 5000);
	CU_ASSERT_EQUAL(r.srv.handshake_timeouts, 0);
	CU_ASSERT_EQUAL(r.srv.idle_timeouts, 1);
	CU_ASSERT_EQUAL(r.srv.nr_conns, 0);
	rig_stop(&r);
}

static void test_subscriber_stays_open_until_it_unsubscribes(void)
{
	struct rig r;
	struct client c = { .wait_ms = 1500,
			    .tls = true,
			    .subscribe = true,
			    .unsubscribe = true };

	/* Silent for 1.5 s with a subscription and a 400 ms idle limit:
	 * kept. Without it, the idle deadline applies again. */
	rig_start(&r, 300, 400);
	run_client(&r, &c);
	CU_ASSERT(c.ok);
	CU_ASSERT(c.open_after_sub);
	CU_ASSERT(c.closed);
	CU_ASSERT(c.close_ms >= 300 && c.close_ms < 1500);
	CU_ASSERT_EQUAL(r.srv.idle_timeouts, 1);
	rig_stop(&r);
}

static void test_zero_timeouts_never_close(void)
{
	struct rig r;
	struct client c = { .wait_ms = 1000 };

	rig_start(&r, 0, 0);
	run_client(&r, &c);
	CU_ASSERT(c.ok);
	CU_ASSERT(!c.closed);
	CU_ASSERT_EQUAL(r.srv.handshake_timeouts + r.srv.idle_timeouts,
			0);
	rig_stop(&r);
}

static CU_TestInfo tests[] = {
	{ "silent_tcp_client_closed_at_handshake_deadline",
	  test_silent_tcp_client_closed_at_handshake_deadline },
	{ "partial_client_hello_closed_at_handshake_deadline",
	  test_partial_client_hello_closed_at_handshake_deadline },
	{ "idle_client_closed_after_idle_not_handshake_deadline",
	  test_idle_client_closed_after_idle_not_handshake_deadline },
	{ "subscriber_stays_open_until_it_unsubscribes",
	  test_subscriber_stays_open_until_it_unsubscribes },
	{ "zero_timeouts_never_close", test_zero_timeouts_never_close },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/rpc/server", setup, teardown, tests);
