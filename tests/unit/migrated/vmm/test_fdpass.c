// SPDX-License-Identifier: MIT
/*
 * migd_fdpass: one framed message with fds over a Unix stream socket.
 * Round trip with fds that work on the other side (CLOEXEC), a frame far
 * larger than the socket buffer (partial transfers both ways), and the
 * refusals: wrong fd count (received fds closed), oversize, timeout, peer
 * gone.
 */
#include "tests/harness/hv_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "migrated/vmm/fdpass.h"

/* Open fds of this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own */
}

static void pair(int sv[2])
{
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				   sv) == 0);
}

static void test_round_trip_with_fds(void)
{
	int sv[2], p1[2], p2[2], got[2];
	const char msg[] = "hello, worker";
	void *buf = NULL;
	size_t len = 0;
	char c = 0;

	pair(sv);
	CU_ASSERT_FATAL(pipe(p1) == 0 && pipe(p2) == 0);
	{
		int fds[2] = { p1[1], p2[1] };

		CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], msg, sizeof(msg), fds,
						 2, 1000),
				0);
	}
	CU_ASSERT_EQUAL_FATAL(migd_fdpass_recv(sv[1], &buf, &len, 64, got, 2,
					       1000),
			      0);
	CU_ASSERT_EQUAL(len, sizeof(msg));
	CU_ASSERT_EQUAL(memcmp(buf, msg, len), 0);
	/* Fresh descriptors for the same pipes, close-on-exec. */
	CU_ASSERT(fcntl(got[0], F_GETFD) & FD_CLOEXEC);
	CU_ASSERT(fcntl(got[1], F_GETFD) & FD_CLOEXEC);
	CU_ASSERT_EQUAL(write(got[0], "a", 1), 1);
	CU_ASSERT_EQUAL(write(got[1], "b", 1), 1);
	CU_ASSERT_EQUAL(read(p1[0], &c, 1), 1);
	CU_ASSERT_EQUAL(c, 'a');
	CU_ASSERT_EQUAL(read(p2[0], &c, 1), 1);
	CU_ASSERT_EQUAL(c, 'b');
	free(buf);
	/* No fds at all. */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[1], "x", 1, NULL, 0, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[0], &buf, &len, 64, NULL, 0, 1000),
			0);
	CU_ASSERT_EQUAL(len, 1);
	free(buf);
	for (int i = 0; i < 2; i++)
		close(got[i]), close(p1[i]), close(p2[i]), close(sv[i]);
}

struct big {
	int sock;
	uint8_t *data;
	size_t len;
	int fd;
	int ret;
};

static void *send_big(void *arg)
{
	struct big *b = arg;

	b->ret = migd_fdpass_send(b->sock, b->data, b->len, &b->fd, 1, 10000);
	return NULL;
}

/* 8 MiB through a socket buffer of some 200 KiB: many partial writes
 * and reads, the fd still with the frame. */
static void test_large_frame_partial_transfers(void)
{
	struct big b = { .len = 8u << 20 };
	pthread_t th;
	void *buf = NULL;
	size_t len = 0;
	int sv[2], fd = -1;

	pair(sv);
	b.sock = sv[0];
	b.fd = sv[0];
	b.data = malloc(b.len);
	CU_ASSERT_FATAL(b.data != NULL);
	for (size_t i = 0; i < b.len; i++)
		b.data[i] = (uint8_t)(i * 7 + (i >> 13));
	CU_ASSERT_FATAL(pthread_create(&th, NULL, send_big, &b) == 0);
	usleep(20000); /* the sender fills the buffer and waits */
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, b.len, &fd, 1,
					 10000),
			0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(b.ret, 0);
	CU_ASSERT_EQUAL(len, b.len);
	CU_ASSERT(buf && memcmp(buf, b.data, b.len) == 0);
	CU_ASSERT(fd >= 0);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(b.data);
	close(sv[0]);
	close(sv[1]);
}

static void test_wrong_fd_count_closes_them(void)
{
	int sv[2], p[2], got[2] = { -1, -1 };
	void *buf = (void *)1;
	size_t len = 7;
	int before;

	pair(sv);
	CU_ASSERT_FATAL(pipe(p) == 0);
	before = count_fds();
	/* Two sent, one expected. */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, p, 2, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 64, got, 1, 1000),
			-EPROTO);
	CU_ASSERT_PTR_NULL(buf);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_EQUAL(count_fds(), before);
	/* None sent, one expected. */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, NULL, 0, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 64, got, 1, 1000),
			-EPROTO);
	/* One sent, none expected. */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, p, 1, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 64, NULL, 0, 1000),
			-EPROTO);
	CU_ASSERT_EQUAL(count_fds(), before);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

/* A frame whose payload says how many fds: any count in the range. */
static void test_upto_takes_a_range(void)
{
	int sv[2], p[2], got[3] = { -1, -1, -1 };
	void *buf = NULL;
	size_t len = 0;
	unsigned n = 9;
	int before;

	pair(sv);
	CU_ASSERT_FATAL(pipe(p) == 0);
	before = count_fds();
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, p, 2, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv_upto(sv[1], &buf, &len, 64, got, 1, 3,
					      &n, 1000),
			0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(len, 1);
	CU_ASSERT(got[0] >= 0 && got[1] >= 0 && got[2] == -1);
	close(got[0]);
	close(got[1]);
	free(buf);
	CU_ASSERT_EQUAL(count_fds(), before);
	/* Below the range (none) and above it (two of at most one). */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, NULL, 0, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv_upto(sv[1], &buf, &len, 64, got, 1, 3,
					      &n, 1000),
			-EPROTO);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NULL(buf);
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], "m", 1, p, 2, 1000), 0);
	CU_ASSERT_EQUAL(migd_fdpass_recv_upto(sv[1], &buf, &len, 64, got, 0, 1,
					      &n, 1000),
			-EPROTO);
	CU_ASSERT_EQUAL(count_fds(), before);
	/* Arguments. */
	CU_ASSERT_EQUAL(migd_fdpass_recv_upto(sv[1], &buf, &len, 64, got, 2, 1,
					      &n, 50),
			-EINVAL);
	CU_ASSERT_EQUAL(migd_fdpass_recv_upto(sv[1], &buf, &len, 64, got, 0,
					      MIGD_FDPASS_MAX_FDS + 1, &n, 50),
			-EINVAL);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void test_refusals(void)
{
	int sv[2], fd = -1;
	char big[100] = { 0 };
	void *buf = NULL;
	size_t len;
	int before;

	pair(sv);
	before = count_fds();
	/* Above the receiver's limit: nothing kept, fd closed. */
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[0], big, sizeof(big), &sv[0], 1,
					 1000),
			0);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 50, &fd, 1, 1000),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(count_fds(), before);
	close(sv[0]);
	close(sv[1]);

	/* Nothing comes: the deadline. */
	pair(sv);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 50, NULL, 0, 50),
			-ETIMEDOUT);
	/* Half a frame, then nothing: the deadline covers the frame. */
	CU_ASSERT_EQUAL(write(sv[0], "\x10\x00\x00\x00" "abc", 7), 7);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 50, NULL, 0, 50),
			-ETIMEDOUT);
	/* The peer goes away: receive and send see it (no SIGPIPE). */
	close(sv[0]);
	CU_ASSERT_EQUAL(migd_fdpass_recv(sv[1], &buf, &len, 50, NULL, 0, 50),
			-ECONNRESET);
	CU_ASSERT_EQUAL(migd_fdpass_send(sv[1], "x", 1, NULL, 0, 50),
			-ECONNRESET);
	close(sv[1]);
	/* Arguments. */
	CU_ASSERT_EQUAL(migd_fdpass_send(0, "x", 0, NULL, 0, 50), -EINVAL);
	CU_ASSERT_EQUAL(migd_fdpass_send(0, "x", 1, NULL, 1, 50), -EINVAL);
	CU_ASSERT_EQUAL(migd_fdpass_recv(0, &buf, &len, 50, NULL,
					 MIGD_FDPASS_MAX_FDS + 1, 50),
			-EINVAL);
}

static CU_TestInfo tests[] = {
	{ "round_trip_with_fds", test_round_trip_with_fds },
	{ "large_frame_partial_transfers",
	  test_large_frame_partial_transfers },
	{ "wrong_fd_count_closes_them", test_wrong_fd_count_closes_them },
	{ "upto_takes_a_range", test_upto_takes_a_range },
	{ "refusals", test_refusals },
	CU_TEST_INFO_NULL,
};
HV_TEST_SUITE("migrated/vmm/fdpass", NULL, NULL, tests);
