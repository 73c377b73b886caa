// SPDX-License-Identifier: MIT
/*
 * Target: the Hello every channel starts with (migrated/mig/handshake.h),
 * received by mig_hello_recv() on a real plain-TCP mig_conn, then the
 * version negotiation of what it carried. The input is the byte stream the
 * peer sends: a loopback client writes it and closes its side, so a short
 * input is a peer that hung up mid-frame.
 *
 * The mutator keeps the frame header's length in step with the message
 * (LLVMFuzzerCustomMutator below).
 *
 * One connection per input: a connection keeps its first error, and a bad
 * Hello fails it. The client resets rather than closes (SO_LINGER 0), so
 * millions of inputs leave no TIME_WAIT sockets behind.
 *
 * Promises checked: an accepted Hello has a valid role, 1 <= nr_channels
 * <= MIG_CHANNELS_MAX, index < nr_channels (0 on the control channel) and
 * a NUL-terminated host id; a refused one fails the connection with the
 * error it returned.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "migrated/mig/conn.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/session.h"
#include "tests/fuzz/fuzz_common.h"

static int lfd = -1;
static uint16_t port;

static int client_connect(void)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	/* libFuzzer's timer signal (SIGALRM, for -timeout) interrupts a
	 * connect() now and then (EINTR, once in ~200 k inputs): say so and
	 * try again on a new socket. */
	for (int tries = 0;; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		FUZZ_CHECK(fd >= 0);
		FUZZ_CHECK(!setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg,
				       sizeof(lg)));
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		fprintf(stderr, "fuzz_hello: connect: %s (try %d)\n",
			strerror(errno), tries + 1);
		close(fd);
		FUZZ_CHECK(tries < 20);
		usleep(10000);
	}
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		FUZZ_CHECK(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed);

/*
 * Three times in four, when @data starts with a frame header, mutate the
 * message behind it and write its new length into the header: a byte
 * inserted into or erased from the message otherwise leaves a header
 * whose length no longer matches, and the Hello's checks go unreached.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
			       unsigned int seed)
{
	size_t len;

	if (seed % 4 == 0 || size < MIG_FRAME_HDR_SIZE ||
	    max <= MIG_FRAME_HDR_SIZE || memcmp(data, "MIGS", 4))
		return LLVMFuzzerMutate(data, size, max);
	len = LLVMFuzzerMutate(data + MIG_FRAME_HDR_SIZE,
			       size - MIG_FRAME_HDR_SIZE,
			       max - MIG_FRAME_HDR_SIZE);
	for (unsigned i = 0; i < 4; i++)
		data[8 + i] = (uint8_t)(len >> (8 * i));
	return MIG_FRAME_HDR_SIZE + len;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet_logs();
	signal(SIGPIPE, SIG_IGN);
	FUZZ_CHECK(mig_listen("127.0.0.1", 0, &lfd, &port) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_hello_info info;
	struct mig_conn *c = NULL;
	uint32_t ver;
	int cfd, ret;

	/* The kernel's socket buffers hold any input libFuzzer makes (its
	 * default -max_len is 4 KiB): write all before the first read. */
	if (size > 16384)
		return 0;
	cfd = client_connect();
	FUZZ_CHECK(mig_conn_accept(lfd, NULL, 5000, &c) == 0);
	write_all(cfd, data, size);
	FUZZ_CHECK(!shutdown(cfd, SHUT_WR));
	ret = mig_hello_recv(c, &info);
	if (ret) {
		FUZZ_CHECK(ret < 0 && mig_conn_error(c) == ret);
		goto out;
	}
	FUZZ_CHECK(info.role == MIG__ROLE__ROLE_CONTROL ||
		   info.role == MIG__ROLE__ROLE_DATA);
	FUZZ_CHECK(info.nr_channels >= 1 &&
		   info.nr_channels <= MIG_CHANNELS_MAX);
	FUZZ_CHECK(info.channel_index < info.nr_channels);
	FUZZ_CHECK(info.role != MIG__ROLE__ROLE_CONTROL ||
		   info.channel_index == 0);
	FUZZ_CHECK(memchr(info.host_id, 0, sizeof(info.host_id)));
	ret = mig_version_negotiate(info.version_min, info.version_max, &ver);
	if (!ret)
		FUZZ_CHECK(ver >= MIG_FRAME_VERSION_MIN &&
			   ver <= MIG_FRAME_VERSION &&
			   ver >= info.version_min && ver <= info.version_max);
	else
		FUZZ_CHECK(ret == -EPROTONOSUPPORT);
out:
	close(cfd);
	mig_conn_destroy(c);
	return 0;
}
