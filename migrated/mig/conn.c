// SPDX-License-Identifier: MIT
#include "migrated/mig/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "hvcore/log.h"

struct mig_conn {
	/* immutable after create */
	int fd;
	SSL *ssl; /* NULL: insecure plain TCP */
	/* any thread */
	_Atomic int err;
	/* owner thread only */
	uint8_t *rbuf; /* message buffer, grown up to the type's cap */
	size_t rbuf_cap;
	uint8_t sbuf[MIG_FRAME_HDR_SIZE + 4096];
	uint64_t sent, recvd;
};

/* Parse a numeric IPv4 or IPv6 address. */
static int parse_addr(const char *host, uint16_t port,
		      struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

int mig_listen(const char *host, uint16_t port, int *fd_out,
	       uint16_t *port_out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, ret;

	ret = parse_addr(host, port, &ss, &len);
	if (ret)
		return ret;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 64))
		goto fail;
	if (port_out) {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len))
			goto fail;
		*port_out = ntohs(ss.ss_family == AF_INET
					  ? ((struct sockaddr_in *)&ss)->sin_port
					  : ((struct sockaddr_in6 *)&ss)
						    ->sin6_port);
	}
	*fd_out = fd;
	return 0;
fail:
	ret = -errno;
	close(fd);
	return ret;
}

static int set_timeouts(int fd, unsigned timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	/* Control frames are small and latency matters; batches are big. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* Failures that mean "a certificate was missing or refused". */
static bool cert_refused(int reason)
{
	static const int reasons[] = {
		SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE,
		SSL_R_CERTIFICATE_VERIFY_FAILED,
		SSL_R_TLSV1_ALERT_UNKNOWN_CA,
		SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED,
		SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED,
		SSL_R_SSLV3_ALERT_BAD_CERTIFICATE,
	};

	for (unsigned i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reason == reasons[i])
			return true;
	return false;
}

/* Map a failed SSL call to an errno; logs TLS-level failures once. */
static int ssl_err(struct mig_conn *c, int r, const char *what)
{
	int e = SSL_get_error(c->ssl, r), saved = errno;
	int ret;

	switch (e) {
	case SSL_ERROR_ZERO_RETURN:
		ret = -EPIPE;
		break;
	case SSL_ERROR_SYSCALL:
		if (saved == EAGAIN || saved == EWOULDBLOCK)
			ret = -ETIMEDOUT;
		else
			ret = saved ? -saved : -EPIPE;
		break;
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		ret = -ETIMEDOUT;
		break;
	default:
		ret = cert_refused(ERR_GET_REASON(ERR_peek_error()))
			      ? -EACCES
			      : -EPROTO;
		if (atomic_load(&c->err) != -ECANCELED)
			mig_tls_log_errors(what);
		break;
	}
	ERR_clear_error();
	return ret;
}

int mig_conn_set_error(struct mig_conn *c, int err)
{
	int expected = 0;

	if (err && !atomic_compare_exchange_strong(&c->err, &expected, err))
		return expected;
	return err;
}

int mig_conn_error(const struct mig_conn *c)
{
	return atomic_load(&((struct mig_conn *)c)->err);
}

int mig_conn_wait_recv(struct mig_conn *c, unsigned timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	uint64_t left = timeout_ms;
	int err = mig_conn_error(c), r;

	if (err)
		return err;
	if (c->ssl && SSL_pending(c->ssl) > 0)
		return 0;
	/* Slices, so that a shutdown from another thread (which sets the
	 * error and makes the socket readable) is seen either way. */
	while (left) {
		unsigned slice = left > 100 ? 100 : (unsigned)left;

		r = poll(&pfd, 1, (int)slice);
		if (r < 0 && errno != EINTR)
			return mig_conn_set_error(c, -errno);
		err = mig_conn_error(c);
		if (err)
			return err;
		if (r > 0)
			return 0;
		left -= slice;
	}
	return -ETIMEDOUT;
}

void mig_conn_shutdown(struct mig_conn *c)
{
	mig_conn_set_error(c, -ECANCELED);
	shutdown(c->fd, SHUT_RDWR);
}

static struct mig_conn *conn_new(int fd)
{
	struct mig_conn *c = calloc(1, sizeof(*c));

	if (c)
		c->fd = fd;
	return c;
}

/* Handshake on a connected socket; on failure frees c but not fd. */
static int conn_handshake(struct mig_conn *c, struct mig_tls *tls)
{
	bool server = mig_tls_is_server(tls);
	const char *name = mig_tls_peer_name(tls);
	long vr;
	int r;

	ERR_clear_error();
	c->ssl = SSL_new(mig_tls_ctx(tls));
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd))
		return -ENOMEM;
	if (!server && name) {
		X509_VERIFY_PARAM *p = SSL_get0_param(c->ssl);
		ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name);

		if (ip) {
			ASN1_OCTET_STRING_free(ip);
			r = X509_VERIFY_PARAM_set1_ip_asc(p, name);
		} else {
			r = SSL_set1_host(c->ssl, name);
		}
		if (r != 1)
			return -ENOMEM;
	}
	r = server ? SSL_accept(c->ssl) : SSL_connect(c->ssl);
	if (r == 1)
		return 0;
	vr = SSL_get_verify_result(c->ssl);
	if (vr != X509_V_OK) {
		hv_err("tls", "op=%s err=peer_refused reason=\"%s\"",
		       server ? "accept" : "connect",
		       X509_verify_cert_error_string(vr));
		ERR_clear_error();
		return -EACCES;
	}
	return ssl_err(c, r, server ? "accept" : "connect");
}

static void conn_free(struct mig_conn *c)
{
	SSL_free(c->ssl);
	free(c->rbuf);
	free(c);
}

/*
 * The connected socket @fd as a mig_conn, after the TLS handshake when
 * @tls. On failure *out is untouched and @fd stays the caller's to close.
 */
static int conn_wrap(int fd, struct mig_tls *tls, struct mig_conn **out)
{
	struct mig_conn *c = conn_new(fd);
	int ret;

	if (!c)
		return -ENOMEM;
	if (tls) {
		ret = conn_handshake(c, tls);
		if (ret) {
			conn_free(c);
			return ret;
		}
	}
	*out = c;
	return 0;
}

int mig_conn_accept(int lfd, struct mig_tls *tls, unsigned timeout_ms,
		    struct mig_conn **out)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd, ret;

	ret = poll(&pfd, 1, timeout_ms ? (int)timeout_ms : -1);
	if (ret < 0)
		return -errno;
	if (!ret)
		return -ETIMEDOUT;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = set_timeouts(fd, timeout_ms);
	if (ret)
		goto fail_fd;
	ret = conn_wrap(fd, tls, out);
	if (ret)
		goto fail_fd;
	return 0;
fail_fd:
	close(fd);
	return ret;
}

int mig_conn_connect(const char *host, uint16_t port, struct mig_tls *tls,
		     unsigned timeout_ms, struct mig_conn **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, ret;

	ret = parse_addr(host, port, &ss, &len);
	if (ret)
		return ret;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Linux bounds a blocking connect() by SO_SNDTIMEO. */
	ret = set_timeouts(fd, timeout_ms);
	if (ret)
		goto fail_fd;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		ret = errno == EINPROGRESS || errno == EAGAIN ? -ETIMEDOUT
							      : -errno;
		goto fail_fd;
	}
	ret = conn_wrap(fd, tls, out);
	if (ret)
		goto fail_fd;
	return 0;
fail_fd:
	close(fd);
	return ret;
}

void mig_conn_destroy(struct mig_conn *c)
{
	if (!c)
		return;
	if (c->ssl && !atomic_load(&c->err)) {
		ERR_clear_error();
		SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	close(c->fd);
	conn_free(c);
}

static int conn_write(struct mig_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int ret = atomic_load(&c->err);

	if (ret)
		return ret;
	while (len) {
		if (c->ssl) {
			size_t n;
			int r;

			ERR_clear_error();
			r = SSL_write_ex(c->ssl, p, len, &n);
			if (r <= 0)
				return mig_conn_set_error(
					c, ssl_err(c, r, "write"));
			p += n;
			len -= n;
		} else {
			ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return mig_conn_set_error(
					c, errno == EAGAIN ? -ETIMEDOUT
							   : -errno);
			p += n;
			len -= (size_t)n;
		}
	}
	/* A concurrent shutdown wins over a write that squeezed through. */
	return atomic_load(&c->err);
}

int mig_conn_read(struct mig_conn *c, void *buf, size_t len)
{
	uint8_t *p = buf;
	int ret = atomic_load(&c->err);

	if (ret)
		return ret;
	while (len) {
		if (c->ssl) {
			size_t n;
			int r;

			ERR_clear_error();
			r = SSL_read_ex(c->ssl, p, len, &n);
			if (r <= 0)
				return mig_conn_set_error(
					c, ssl_err(c, r, "read"));
			p += n;
			len -= n;
		} else {
			ssize_t n = recv(c->fd, p, len, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return mig_conn_set_error(
					c, !n		      ? -EPIPE
					   : errno == EAGAIN ? -ETIMEDOUT
							     : -errno);
			p += n;
			len -= (size_t)n;
		}
	}
	c->recvd += (uint64_t)(p - (uint8_t *)buf);
	return atomic_load(&c->err);
}

int mig_conn_send_frame(struct mig_conn *c, const void *buf, size_t len)
{
	int ret = conn_write(c, buf, len);

	if (!ret)
		c->sent += len;
	return ret;
}

int mig_conn_send(struct mig_conn *c, unsigned type,
		  const ProtobufCMessage *msg, const void *payload,
		  size_t len)
{
	uint8_t *buf = c->sbuf;
	size_t flen;
	int ret;

	ret = atomic_load(&c->err);
	if (ret)
		return ret;
	ret = mig_frame_encode(type, msg, buf, sizeof(c->sbuf), &flen);
	if (ret == -ENOBUFS) {
		/* Large messages (layout, VM state) are rare: allocate. */
		buf = malloc(flen);
		if (!buf)
			return -ENOMEM;
		ret = mig_frame_encode(type, msg, buf, flen, &flen);
	}
	if (ret) {
		/* A message we cannot encode is our bug, not the stream's. */
		if (buf != c->sbuf)
			free(buf);
		return ret;
	}
	ret = mig_conn_send_frame(c, buf, flen);
	if (buf != c->sbuf)
		free(buf);
	if (!ret && len)
		ret = mig_conn_send_frame(c, payload, len);
	return ret;
}

int mig_conn_recv(struct mig_conn *c, struct mig_frame_hdr *hdr,
		  ProtobufCMessage **msg)
{
	uint8_t raw[MIG_FRAME_HDR_SIZE];
	struct mig_frame_hdr h;
	int ret;

	ret = mig_conn_read(c, raw, sizeof(raw));
	if (ret)
		return ret;
	ret = mig_frame_hdr_decode(raw, &h);
	if (ret) {
		hv_err("mig", "op=recv err=bad_header ret=%d", ret);
		return mig_conn_set_error(c, ret);
	}
	/* h.len was checked against the type's cap: growing is bounded. */
	if (h.len > c->rbuf_cap) {
		uint8_t *nb = realloc(c->rbuf, h.len);

		if (!nb)
			return mig_conn_set_error(c, -ENOMEM);
		c->rbuf = nb;
		c->rbuf_cap = h.len;
	}
	ret = mig_conn_read(c, c->rbuf, h.len);
	if (ret)
		return ret;
	ret = mig_frame_unpack(h.type, c->rbuf, h.len, msg);
	if (ret) {
		hv_err("mig", "op=recv err=bad_message type=%s len=%u",
		       mig_frame_type_name(h.type), h.len);
		return mig_conn_set_error(c, ret);
	}
	*hdr = h;
	return 0;
}

uint64_t mig_conn_bytes_sent(const struct mig_conn *c)
{
	return c->sent;
}

uint64_t mig_conn_bytes_recv(const struct mig_conn *c)
{
	return c->recvd;
}

bool mig_conn_is_tls(const struct mig_conn *c)
{
	return c->ssl != NULL;
}
