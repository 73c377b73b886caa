// SPDX-License-Identifier: MIT
/*
 * The non-blocking accept of mig_conn (conn.h mig_conn_server_*): many
 * connections driven from the listener's one thread (listener.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <openssl/err.h>

#include "migrated/mig/conn_priv.h"

/* One non-blocking read of at most @len bytes into @buf. */
static int read_nb(struct mig_conn *c, void *buf, size_t len, size_t *n,
		   short *events)
{
	ssize_t k;

	if (c->ssl) {
		int r, e;

		ERR_clear_error();
		r = SSL_read_ex(c->ssl, buf, len, n);
		if (r > 0)
			return 0;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
			ERR_clear_error();
			return -EAGAIN;
		}
		return mig_conn_set_error(c, mig__conn_ssl_err(c, r, "read"));
	}
	k = recv(c->fd, buf, len, MSG_DONTWAIT);
	if (k > 0) {
		*n = (size_t)k;
		return 0;
	}
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		      errno == EINTR)) {
		*events = POLLIN;
		return -EAGAIN;
	}
	return mig_conn_set_error(c, !k ? -EPIPE : -errno);
}

int mig_conn_server_new(int fd, struct mig_tls *tls, struct mig_conn **out)
{
	struct mig_conn *c;
	int fl = fcntl(fd, F_GETFL), ret;

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	c = mig__conn_new(fd);
	if (!c)
		return -ENOMEM;
	if (tls) {
		ret = mig__conn_ssl_prepare(c, tls);
		if (ret) {
			mig__conn_free(c);
			return ret;
		}
	} else {
		c->hs_done = true;
	}
	*out = c;
	return 0;
}

static int server_handshake_step(struct mig_conn *c, short *events)
{
	int r, e;

	if (!c->peeked) {
		r = mig__conn_plain_peer_check(c, MSG_DONTWAIT);
		if (r == -EAGAIN) {
			*events = POLLIN;
			return r;
		}
		if (r)
			return mig_conn_set_error(c, r);
		c->peeked = true;
	}
	ERR_clear_error();
	r = SSL_do_handshake(c->ssl);
	if (r == 1) {
		c->hs_done = true;
		return 0;
	}
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		ERR_clear_error();
		return -EAGAIN;
	}
	return mig_conn_set_error(c, mig__conn_handshake_error(c, r, true));
}

int mig_conn_server_step(struct mig_conn *c, uint64_t types, short *events,
			 struct mig_frame_hdr *hdr, ProtobufCMessage **msg)
{
	struct mig_frame_hdr h;
	int ret = atomic_load(&c->err);

	if (ret)
		return ret;
	if (!c->hs_done) {
		ret = server_handshake_step(c, events);
		if (ret)
			return ret;
	}
	while (c->have < MIG_FRAME_HDR_SIZE) {
		size_t n;

		ret = read_nb(c, c->hraw + c->have,
			      MIG_FRAME_HDR_SIZE - c->have, &n, events);
		if (ret == -EAGAIN)
			return ret;
		if (ret)
			return c->have ? mig__conn_bad_header(c, c->hraw,
							      c->have, ret)
				       : ret;
		c->have += n;
	}
	ret = mig__conn_hdr_admit(c, c->hraw, types, &h);
	if (ret)
		return ret;
	while (c->have < MIG_FRAME_HDR_SIZE + h.len) {
		size_t off = c->have - MIG_FRAME_HDR_SIZE, n;

		ret = read_nb(c, c->rbuf + off, h.len - off, &n, events);
		if (ret)
			return ret;
		c->have += n;
	}
	c->recvd += c->have;
	ret = mig__conn_msg_unpack(c, &h, msg);
	if (ret)
		return ret;
	*hdr = h;
	return 0;
}

int mig_conn_set_blocking(struct mig_conn *c, unsigned timeout_ms)
{
	int fl = fcntl(c->fd, F_GETFL);

	if (fl < 0 || fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	c->io_ms = timeout_ms;
	return mig__conn_set_timeouts(c->fd, timeout_ms);
}

int mig_conn_fd(const struct mig_conn *c)
{
	return c->fd;
}

