// SPDX-License-Identifier: MIT
/*
 * The migration port against idle and hostile peers
 * (migrated/mig/listener.c). Loopback only.
 */
#include "tests/harness/hv_test.h"
#include "migrated/mig/devca.h"
#include "migrated/mig/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FLOOD 100u

static char dir[64];
static struct mig_devca ca;
static struct mig_tls *srv_tls, *cli_tls;

static struct mig_tls *tls_new(bool server)
{
	struct mig_tls_cfg cfg = {
		.ca_file = ca.ca_cert,
		.cert_file = ca.host_cert,
		.key_file = ca.host_key,
		.server = server,
	};
	struct mig_tls *t = NULL;

	return mig_tls_create(&cfg, &t) ? NULL : t;
}

static int suite_init(void)
{
	signal(SIGPIPE, SIG_IGN);
	strcpy(dir, "/tmp/mig-lst-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	strcat(dir, "/ca");
	if (mig_devca_ensure(dir, &ca))
		return 1;
	srv_tls = tls_new(true);
	cli_tls = tls_new(false);
	return !srv_tls || !cli_tls;
}

static int suite_clean(void)
{
	char cmd[120];

	mig_tls_destroy(srv_tls);
	mig_tls_destroy(cli_tls);
	snprintf(cmd, sizeof(cmd), "rm -rf -- %.*s", (int)(strlen(dir) - 3),
		 dir);
	return system(cmd) ? 1 : 0;
}

/* A TCP connection to the port that sends @len bytes of @data, then
 * nothing. */
static int raw_connect(uint16_t port, const void *data, size_t len)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sin,
				      sizeof(sin)),
			      0);
	if (len)
		CU_ASSERT_EQUAL(write(fd, data, len), (ssize_t)len);
	return fd;
}

/* The first bytes of a TLS ClientHello, cut short. */
static const uint8_t truncated_client_hello[] = {
	0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
};

struct peer {
	uint16_t port;
	struct mig_tls *tls;
	unsigned role;
	uint8_t sid[MIG_SESSION_ID_LEN];
	int ret;
	struct mig_conn *c;
	pthread_t thread;
};

/* The real peer: connect, handshake, send a Hello, keep the channel. */
static void *peer_main(void *arg)
{
	struct peer *p = arg;

	p->ret = mig_conn_connect("127.0.0.1", p->port, p->tls, 5000, &p->c);
	if (!p->ret)
		p->ret = mig_hello_send(p->c, 0, p->role, p->sid, 0, 1);
	return NULL;
}

static void peer_start(struct peer *p, uint16_t port, struct mig_tls *tls,
		       unsigned role, uint8_t sid_byte)
{
	memset(p, 0, sizeof(*p));
	p->port = port;
	p->tls = tls;
	p->role = role;
	memset(p->sid, sid_byte, sizeof(p->sid));
	p->ret = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&p->thread, NULL, peer_main, p),
			      0);
}

static void peer_join(struct peer *p)
{
	pthread_join(p->thread, NULL);
	mig_conn_destroy(p->c);
}

/*
 * More idle connections than the listener holds, and a few truncated
 * ClientHellos, all from the real peer's own address and all before it:
 * the real peer still gets in, quickly, and the idle ones are evicted.
 */
static void test_idle_flood_does_not_lock_out_the_real_peer(void)
{
	struct mig_listener_cfg cfg = {
		.tls = srv_tls,
		.handshake_ms = 3000,
		.max_pending = 16,
		.max_per_peer = 8,
		.io_ms = 3000,
	};
	struct mig_listener_stats st;
	struct mig_hello_info hi;
	struct mig_listener *l;
	struct mig_conn *c = NULL;
	int fds[FLOOD + 3];
	struct peer p;

	CU_ASSERT_EQUAL_FATAL(mig_listener_create("127.0.0.1", 0, &cfg, &l),
			      0);
	for (unsigned i = 0; i < FLOOD; i++)
		fds[i] = raw_connect(mig_listener_port(l), NULL, 0);
	for (unsigned i = FLOOD; i < FLOOD + 3; i++)
		fds[i] = raw_connect(mig_listener_port(l),
				     truncated_client_hello,
				     sizeof(truncated_client_hello));
	peer_start(&p, mig_listener_port(l), cli_tls, MIG__ROLE__ROLE_CONTROL,
		   7);
	/* Well within the idle ones' handshake time: no time-out helps. */
	CU_ASSERT_EQUAL(mig_listener_accept(l, 2000, NULL, NULL, &c, &hi), 0);
	peer_join(&p);
	CU_ASSERT_EQUAL(p.ret, 0);
	CU_ASSERT_EQUAL(hi.role, MIG__ROLE__ROLE_CONTROL);
	CU_ASSERT_EQUAL(hi.session_id[0], 7);
	mig_listener_get_stats(l, &st);
	printf("\n    accepted=%llu evicted=%llu timed_out=%llu refused=%llu\n",
	       (unsigned long long)st.accepted,
	       (unsigned long long)st.evicted,
	       (unsigned long long)st.timed_out,
	       (unsigned long long)st.refused);
	CU_ASSERT(st.accepted >= 16);
	CU_ASSERT(st.evicted > 0);
	CU_ASSERT_EQUAL(st.handed, 1);
	mig_conn_destroy(c);
	mig_listener_destroy(l);
	for (unsigned i = 0; i < FLOOD + 3; i++)
		close(fds[i]);
}

/* A TCP connection from loopback address @src that sends nothing. */
static int idle_from(const char *src, uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct sockaddr_in me = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(inet_pton(AF_INET, src, &me.sin_addr) == 1);
	CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sin,
				      sizeof(sin)),
			      0);
	return fd;
}

/* Still open from our side's view: no end of file within 100 ms. */
static bool still_open(int fd)
{
	struct timeval tv = { 0, 100000 };
	char b;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return read(fd, &b, 1) < 0;
}

/*
 * One address's flood evicts its own connections only: past max_per_peer
 * from 127.0.0.2, the oldest of 127.0.0.2 go, and the connections of
 * 127.0.0.1 stay.
 */
static void test_per_peer_bound_evicts_that_peer_only(void)
{
	struct mig_listener_cfg cfg = {
		.tls = srv_tls,
		.handshake_ms = 5000,
		.max_pending = 16,
		.max_per_peer = 4,
		.io_ms = 1000,
	};
	struct mig_listener_stats st;
	struct mig_hello_info hi;
	struct mig_listener *l;
	struct mig_conn *c = NULL;
	int mine[3], theirs[10];

	CU_ASSERT_EQUAL_FATAL(mig_listener_create("127.0.0.1", 0, &cfg, &l),
			      0);
	for (unsigned i = 0; i < 3; i++)
		mine[i] = idle_from("127.0.0.1", mig_listener_port(l));
	/* Let the listener take these three first. */
	CU_ASSERT_EQUAL(mig_listener_accept(l, 200, NULL, NULL, &c, &hi),
			-ETIMEDOUT);
	for (unsigned i = 0; i < 10; i++)
		theirs[i] = idle_from("127.0.0.2", mig_listener_port(l));
	CU_ASSERT_EQUAL(mig_listener_accept(l, 300, NULL, NULL, &c, &hi),
			-ETIMEDOUT);
	mig_listener_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.accepted, 13);
	CU_ASSERT_EQUAL(st.evicted, 6);
	for (unsigned i = 0; i < 3; i++)
		CU_ASSERT(still_open(mine[i]));
	for (unsigned i = 0; i < 6; i++)
		CU_ASSERT(!still_open(theirs[i]));
	for (unsigned i = 6; i < 10; i++)
		CU_ASSERT(still_open(theirs[i]));
	mig_listener_destroy(l);
	for (unsigned i = 0; i < 3; i++)
		close(mine[i]);
	for (unsigned i = 0; i < 10; i++)
		close(theirs[i]);
}

/* A connection that never speaks is closed after handshake_ms. */
static void test_silent_connection_is_closed_after_the_handshake_time(void)
{
	struct mig_listener_cfg cfg = {
		.tls = srv_tls,
		.handshake_ms = 200,
		.io_ms = 1000,
	};
	struct mig_listener_stats st;
	struct mig_hello_info hi;
	struct mig_listener *l;
	struct mig_conn *c = NULL;
	struct timeval tv = { 2, 0 };
	char b;
	int fd;

	CU_ASSERT_EQUAL_FATAL(mig_listener_create("127.0.0.1", 0, &cfg, &l),
			      0);
	fd = raw_connect(mig_listener_port(l), NULL, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	CU_ASSERT_EQUAL(mig_listener_accept(l, 600, NULL, NULL, &c, &hi),
			-ETIMEDOUT);
	mig_listener_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.accepted, 1);
	CU_ASSERT_EQUAL(st.timed_out, 1);
	/* Closed by the listener: end of file, not our receive time-out. */
	CU_ASSERT_EQUAL(read(fd, &b, 1), 0);
	close(fd);
	mig_listener_destroy(l);
}

static bool want_sid_9(void *arg, const struct mig_hello_info *hi)
{
	(void)arg;
	return hi->session_id[0] == 9;
}

/* A valid Hello of another session is dropped; ours is then taken. */
static void test_unwanted_hello_is_dropped_not_fatal(void)
{
	struct mig_listener_cfg cfg = { .tls = NULL, .io_ms = 2000 };
	struct mig_listener_stats st;
	struct mig_hello_info hi;
	struct mig_listener *l;
	struct mig_conn *c = NULL;
	struct peer stray, real;

	CU_ASSERT_EQUAL_FATAL(mig_listener_create("127.0.0.1", 0, &cfg, &l),
			      0);
	peer_start(&stray, mig_listener_port(l), NULL, MIG__ROLE__ROLE_DATA,
		   3);
	peer_join(&stray);
	peer_start(&real, mig_listener_port(l), NULL, MIG__ROLE__ROLE_DATA, 9);
	CU_ASSERT_EQUAL(mig_listener_accept(l, 2000, want_sid_9, NULL, &c,
					    &hi),
			0);
	peer_join(&real);
	CU_ASSERT_EQUAL(hi.session_id[0], 9);
	mig_listener_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.refused, 1);
	CU_ASSERT_EQUAL(st.handed, 1);
	mig_conn_destroy(c);
	mig_listener_destroy(l);
}

/* A cancel ends a wait with no peer at all within about 100 ms. */
static void test_cancel_ends_the_wait(void)
{
	atomic_bool cancel = true;
	struct mig_listener_cfg cfg = { .io_ms = 1000, .cancel = &cancel };
	struct mig_hello_info hi;
	struct mig_listener *l;
	struct mig_conn *c = NULL;

	CU_ASSERT_EQUAL_FATAL(mig_listener_create("127.0.0.1", 0, &cfg, &l),
			      0);
	CU_ASSERT_EQUAL(mig_listener_accept(l, 0, NULL, NULL, &c, &hi),
			-ECANCELED);
	mig_listener_destroy(l);
}

static CU_TestInfo tests[] = {
	{ "idle_flood_does_not_lock_out_the_real_peer",
	  test_idle_flood_does_not_lock_out_the_real_peer },
	{ "per_peer_bound_evicts_that_peer_only",
	  test_per_peer_bound_evicts_that_peer_only },
	{ "silent_connection_is_closed_after_the_handshake_time",
	  test_silent_connection_is_closed_after_the_handshake_time },
	{ "unwanted_hello_is_dropped_not_fatal",
	  test_unwanted_hello_is_dropped_not_fatal },
	{ "cancel_ends_the_wait", test_cancel_ends_the_wait },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/mig/listener", suite_init, suite_clean, tests);
