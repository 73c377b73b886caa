// SPDX-License-Identifier: MIT
/*
 * Framed messages with SCM_RIGHTS over a Unix stream socket (fdpass.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/time.h"
#include "migrated/vmm/fdpass.h"

#define HDR_BYTES 4u

struct deadline {
	bool none;
	uint64_t at_ns;
};

static void deadline_set(struct deadline *d, unsigned timeout_ms)
{
	d->none = timeout_ms == 0;
	d->at_ns = hv_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Wait for @events on @sock until the deadline: 0, -ETIMEDOUT, -errno. */
static int wait_for(int sock, short events, const struct deadline *d)
{
	struct pollfd p = {.fd = sock, .events = events};

	for (;;) {
		int ms = -1, r;

		if (!d->none) {
			uint64_t now = hv_now_ns();

			if (now >= d->at_ns)
				return -ETIMEDOUT;
			/* Round up: never spin on a sub-millisecond rest. */
			ms = (int)((d->at_ns - now + 999999) / 1000000);
		}
		r = poll(&p, 1, ms);
		if (r > 0) {
			if (p.revents & POLLNVAL)
				return -EBADF;
			return 0; /* ready, or HUP/ERR: the transfer says */
		}
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int migd_fdpass_send(int sock, const void *buf, size_t len, const int *fds,
		     unsigned nfds, unsigned timeout_ms)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * MIGD_FDPASS_MAX_FDS)];
	} ctl;
	uint8_t hdr[HDR_BYTES];
	struct deadline d;
	size_t done = 0, total;

	if (!buf || !len || len > UINT32_MAX || nfds > MIGD_FDPASS_MAX_FDS ||
	    (nfds && !fds))
		return -EINVAL;
	put_le32(hdr, (uint32_t)len);
	total = HDR_BYTES + len;
	deadline_set(&d, timeout_ms);
	while (done < total) {
		struct iovec iov[2];
		struct msghdr mh = {.msg_iov = iov};
		ssize_t n;
		int ret;

		if (done < HDR_BYTES) {
			iov[0] = (struct iovec){hdr + done, HDR_BYTES - done};
			iov[1] = (struct iovec){(void *)buf, len};
			mh.msg_iovlen = 2;
		} else {
			iov[0] = (struct iovec){(uint8_t *)buf +
							(done - HDR_BYTES),
						total - done};
			mh.msg_iovlen = 1;
		}
		if (done == 0 && nfds) {
			struct cmsghdr *c;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.b;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE ? -ECONNRESET : -errno;
		ret = wait_for(sock, POLLOUT, &d);
		if (ret)
			return ret;
	}
	return 0;
}

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* Take the SCM_RIGHTS fds of @mh into @got (room for MAX_FDS). */
static int take_fds(struct msghdr *mh, int *got, unsigned *ngot)
{
	int ret = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (*ngot < MIGD_FDPASS_MAX_FDS)
				got[(*ngot)++] = fd;
			else {
				close(fd);
				ret = -EPROTO;
			}
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		ret = -EPROTO;
	return ret;
}

/* Read exactly @want bytes into @dst, collecting fds. */
static int recv_exact(int sock, uint8_t *dst, size_t want, int *got,
		      unsigned *ngot, const struct deadline *d)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * MIGD_FDPASS_MAX_FDS)];
	} ctl;
	size_t done = 0;

	while (done < want) {
		struct iovec iov = {dst + done, want - done};
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.b,
			.msg_controllen = sizeof(ctl.b),
		};
		ssize_t n;
		int ret;

		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n > 0) {
			ret = take_fds(&mh, got, ngot);
			if (ret)
				return ret;
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = wait_for(sock, POLLIN, d);
		if (ret)
			return ret;
	}
	return 0;
}

int migd_fdpass_recv(int sock, void **buf, size_t *len, size_t max_len,
		     int *fds, unsigned nfds, unsigned timeout_ms)
{
	unsigned got;
	int ret;

	if (nfds > MIGD_FDPASS_MAX_FDS || (nfds && !fds))
		return -EINVAL;
	ret = migd_fdpass_recv_upto(sock, buf, len, max_len, fds, nfds, nfds,
				    &got, timeout_ms);
	if (!ret && got != nfds) {
		close_fds(fds, got);
		free(*buf);
		*buf = NULL;
		*len = 0;
		ret = -EPROTO;
	}
	return ret;
}

int migd_fdpass_recv_upto(int sock, void **buf, size_t *len, size_t max_len,
			  int *fds, unsigned min_fds, unsigned max_fds,
			  unsigned *nfds, unsigned timeout_ms)
{
	int got[MIGD_FDPASS_MAX_FDS];
	unsigned ngot = 0;
	uint8_t hdr[HDR_BYTES];
	struct deadline d;
	uint8_t *p = NULL;
	uint32_t n;
	int ret;

	if (!buf || !len || !nfds || min_fds > max_fds ||
	    max_fds > MIGD_FDPASS_MAX_FDS || (max_fds && !fds))
		return -EINVAL;
	*nfds = 0;
	*buf = NULL;
	*len = 0;
	deadline_set(&d, timeout_ms);
	ret = recv_exact(sock, hdr, HDR_BYTES, got, &ngot, &d);
	if (ret)
		goto err;
	n = get_le32(hdr);
	if (!n || n > max_len) {
		ret = -EMSGSIZE;
		goto err;
	}
	p = malloc(n);
	if (!p) {
		ret = -ENOMEM;
		goto err;
	}
	ret = recv_exact(sock, p, n, got, &ngot, &d);
	if (ret)
		goto err;
	if (ngot < min_fds || ngot > max_fds) {
		ret = -EPROTO;
		goto err;
	}
	if (ngot)
		memcpy(fds, got, sizeof(int) * ngot);
	*nfds = ngot;
	*buf = p;
	*len = n;
	return 0;

err:
	close_fds(got, ngot);
	free(p);
	return ret;
}
