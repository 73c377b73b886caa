// SPDX-License-Identifier: MIT
#include "migrated/mig/conn_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "hvcore/log.h"
#include "migrated/mig/addr.h"

/*
 * A receive buffer above this is freed after its message: one large
 * message (a layout, the VM state) must not pin megabytes per channel
 * for the rest of the stream.
 */
#define RBUF_KEEP_MAX 65536u

/*
 * What a plain side answers to a TLS ClientHello, and a TLS side to a
 * plain Hello: each in the form the other end can read, so that both
 * ends name the mismatch instead of a protocol error. A TLS listener
 * writes this fatal protocol_version alert record; a plain listener
 * writes a frame header, which a TLS client fails on as "wrong version
 * number".
 */
static const uint8_t tls_alert_rec[] = { 0x15, 0x03, 0x03, 0x00,
					 0x02, 0x02, 0x46 };

/* Do the first bytes of a record look like TLS (handshake or alert)? */
static bool looks_like_tls(const uint8_t *p, size_t n)
{
	return n >= 2 && (p[0] == 0x15 || p[0] == 0x16) && p[1] == 0x03;
}

int mig_listen(const char *host, uint16_t port, int *fd_out,
	       uint16_t *port_out)
{
	struct mig_addr a;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, ret;

	/* The first address of a name: a listener binds one. */
	ret = mig_addr_resolve(host, port, true, &a, 1);
	if (ret < 0)
		return ret;
	ss = a.ss;
	len = a.len;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN))
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

int mig__conn_set_timeouts(int fd, unsigned timeout_ms)
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
int mig__conn_ssl_err(struct mig_conn *c, int r, const char *what)
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
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
		/* The peer closed without a close_notify: it went away (a
		 * cancel, its process ended), as a plain EOF; not an error
		 * of TLS to log (a cancel logged four of them). */
		if (ERR_GET_REASON(ERR_peek_error()) ==
		    SSL_R_UNEXPECTED_EOF_WHILE_READING) {
			ret = -EPIPE;
			break;
		}
#endif
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
	/* Bytes OpenSSL holds, decrypted or not, are a frame arriving even
	 * when the socket itself has nothing more to read. */
	if (c->ssl && SSL_has_pending(c->ssl))
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

struct mig_conn *mig__conn_new(int fd)
{
	struct mig_conn *c = calloc(1, sizeof(*c));

	if (c) {
		c->fd = fd;
		c->wake_fd = -1;
	}
	return c;
}

/* Set up c->ssl for a handshake on c->fd, checking the server's name. */
int mig__conn_ssl_prepare(struct mig_conn *c, struct mig_tls *tls)
{
	const char *name = mig_tls_peer_name(tls);
	int r;

	ERR_clear_error();
	c->ssl = SSL_new(mig_tls_ctx(tls));
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd))
		return -ENOMEM;
	if (mig_tls_is_server(tls)) {
		SSL_set_accept_state(c->ssl);
	} else if (name) {
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
	return 0;
}

/* The errno of a failed handshake step @r (not a "want" one). */
int mig__conn_handshake_error(struct mig_conn *c, int r, bool server)
{
	const char *op = server ? "accept" : "connect";
	long vr = SSL_get_verify_result(c->ssl);
	int reason = ERR_GET_REASON(ERR_peek_error());

	if (vr != X509_V_OK) {
		hv_err("tls", "op=%s err=peer_refused reason=\"%s\"", op,
		       X509_verify_cert_error_string(vr));
		ERR_clear_error();
		return -EACCES;
	}
	/* The server answered with bytes that are not TLS: a plain peer. */
	if (!server && reason == SSL_R_WRONG_VERSION_NUMBER) {
		hv_err("tls", "op=%s err=tls_plain_mismatch what=peer_is_plain",
		       op);
		ERR_clear_error();
		return -EPROTOTYPE;
	}
	return mig__conn_ssl_err(c, r, op);
}

/*
 * A plain Hello on a TLS listener: the peer runs --insecure. Peeked, so
 * that a TLS ClientHello is left for OpenSSL. 0 when the first byte is
 * not our magic's, -EAGAIN when nothing arrived yet (non-blocking).
 */
int mig__conn_plain_peer_check(struct mig_conn *c, int flags)
{
	uint8_t b;
	ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | flags);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -EAGAIN;
	if (n != 1 || b != (uint8_t)(MIG_FRAME_MAGIC & 0xff))
		return 0;
	hv_err("tls", "op=accept err=tls_plain_mismatch what=peer_is_plain");
	(void)!send(c->fd, tls_alert_rec, sizeof(tls_alert_rec),
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	return -EPROTOTYPE;
}

/* Blocking handshake on a connected socket; frees nothing on failure. */
static int conn_handshake(struct mig_conn *c, struct mig_tls *tls)
{
	bool server = mig_tls_is_server(tls);
	int r;

	r = mig__conn_ssl_prepare(c, tls);
	if (r)
		return r;
	if (server) {
		r = mig__conn_plain_peer_check(c, 0);
		if (r && r != -EAGAIN)
			return r;
	}
	r = server ? SSL_accept(c->ssl) : SSL_connect(c->ssl);
	if (r == 1)
		return 0;
	return mig__conn_handshake_error(c, r, server);
}

void mig__conn_free(struct mig_conn *c)
{
	if (c->wake_fd >= 0)
		close(c->wake_fd);
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
	struct mig_conn *c = mig__conn_new(fd);
	int ret;

	if (!c)
		return -ENOMEM;
	if (tls) {
		ret = conn_handshake(c, tls);
		if (ret) {
			mig__conn_free(c);
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
	ret = mig__conn_set_timeouts(fd, timeout_ms);
	if (ret)
		goto fail_fd;
	ret = conn_wrap(fd, tls, out);
	if (ret)
		goto fail_fd;
	(*out)->io_ms = timeout_ms;
	return 0;
fail_fd:
	close(fd);
	return ret;
}

int mig_conn_connect(const char *host, uint16_t port, struct mig_tls *tls,
		     unsigned timeout_ms, struct mig_conn **out)
{
	struct mig_addr a[MIG_ADDR_MAX];
	int n, fd = -1, ret = -EHOSTUNREACH;

	n = mig_addr_resolve(host, port, false, a, MIG_ADDR_MAX);
	if (n < 0)
		return n;
	/* Each address of a name in turn ("localhost": ::1, 127.0.0.1),
	 * until one accepts. */
	for (int i = 0; i < n; i++) {
		fd = socket(a[i].ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		/* Linux bounds a blocking connect() by SO_SNDTIMEO. */
		ret = mig__conn_set_timeouts(fd, timeout_ms);
		if (ret)
			goto fail_fd;
		if (!connect(fd, (struct sockaddr *)&a[i].ss, a[i].len))
			break;
		ret = errno == EINPROGRESS || errno == EAGAIN ? -ETIMEDOUT
							      : -errno;
		close(fd);
		fd = -1;
		if (ret == -ETIMEDOUT)
			return ret; /* the timeout is for the whole connect */
	}
	if (fd < 0)
		return ret;
	ret = conn_wrap(fd, tls, out);
	if (ret)
		goto fail_fd;
	(*out)->io_ms = timeout_ms;
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
	mig__conn_free(c);
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
					c, mig__conn_ssl_err(c, r, "write"));
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

/* Read exactly @len bytes; *@got says how many arrived, even on error. */
static int conn_read_n(struct mig_conn *c, void *buf, size_t len,
		       size_t *got)
{
	uint8_t *p = buf;
	int ret = atomic_load(&c->err);

	*got = 0;
	if (ret)
		return ret;
	while (len) {
		if (c->ssl) {
			size_t n;
			int r;

			ERR_clear_error();
			r = SSL_read_ex(c->ssl, p, len, &n);
			if (r <= 0) {
				*got = (size_t)(p - (uint8_t *)buf);
				return mig_conn_set_error(
					c, mig__conn_ssl_err(c, r, "read"));
			}
			p += n;
			len -= n;
		} else {
			ssize_t n = recv(c->fd, p, len, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				*got = (size_t)(p - (uint8_t *)buf);
				return mig_conn_set_error(
					c, !n		      ? -EPIPE
					   : errno == EAGAIN ? -ETIMEDOUT
							     : -errno);
			}
			p += n;
			len -= (size_t)n;
		}
	}
	*got = (size_t)(p - (uint8_t *)buf);
	c->recvd += *got;
	return atomic_load(&c->err);
}

int mig_conn_read(struct mig_conn *c, void *buf, size_t len)
{
	size_t got;

	return conn_read_n(c, buf, len, &got);
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

/*
 * A header that failed to decode (@n of its bytes arrived, @err the read's
 * error or 0): TLS bytes on a plain channel are a mismatch, not garbage.
 */
int mig__conn_bad_header(struct mig_conn *c, const uint8_t *raw, size_t n,
		      int err)
{
	if (!c->ssl && looks_like_tls(raw, n)) {
		hv_err("mig", "op=recv err=tls_plain_mismatch "
			      "what=peer_speaks_tls");
		/* Answer so that a TLS client names the mismatch too. */
		if (raw[0] == 0x16)
			(void)!send(c->fd, "MIGS\x01\0\0\0", 8,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		atomic_store(&c->err, -EPROTOTYPE);
		return -EPROTOTYPE;
	}
	if (err)
		return err;
	hv_err("mig", "op=recv err=bad_header");
	return mig_conn_set_error(c, -EPROTO);
}

/* For logs of a header that failed to decode. */
static unsigned raw_type(const uint8_t *raw)
{
	return (unsigned)raw[6] | (unsigned)raw[7] << 8;
}

static uint32_t raw_len(const uint8_t *raw)
{
	return (uint32_t)raw[8] | (uint32_t)raw[9] << 8 |
	       (uint32_t)raw[10] << 16 | (uint32_t)raw[11] << 24;
}

/* Check a decoded header against @types; grow rbuf for its message. */
int mig__conn_hdr_admit(struct mig_conn *c, const uint8_t *raw, uint64_t types,
		     struct mig_frame_hdr *h)
{
	int ret = mig_frame_hdr_decode(raw, h);

	if (ret == -EPROTO)
		return mig__conn_bad_header(c, raw, MIG_FRAME_HDR_SIZE, 0);
	if (ret) {
		hv_err("mig", "op=recv err=bad_header type=%s len=%u ret=%d",
		       mig_frame_type_name(raw_type(raw)), raw_len(raw), ret);
		return mig_conn_set_error(c, ret);
	}
	/* Refused before a byte of the message is read or allocated. */
	if (h->type >= 64 || !(types & (1ull << h->type))) {
		hv_err("mig", "op=recv err=unexpected_type type=%s len=%u",
		       mig_frame_type_name(h->type), h->len);
		return mig_conn_set_error(c, -EPROTO);
	}
	/* h->len was checked against the type's cap: growing is bounded. */
	if (h->len > c->rbuf_cap) {
		uint8_t *nb = realloc(c->rbuf, h->len);

		if (!nb)
			return mig_conn_set_error(c, -ENOMEM);
		c->rbuf = nb;
		c->rbuf_cap = h->len;
	}
	return 0;
}

/* Unpack the message in rbuf; give back a large buffer. */
int mig__conn_msg_unpack(struct mig_conn *c, const struct mig_frame_hdr *h,
		      ProtobufCMessage **msg)
{
	int ret = mig_frame_unpack(h->type, c->rbuf, h->len, msg);

	if (c->rbuf_cap > RBUF_KEEP_MAX) {
		free(c->rbuf);
		c->rbuf = NULL;
		c->rbuf_cap = 0;
	}
	if (ret) {
		hv_err("mig", "op=recv err=bad_message type=%s len=%u ret=%d",
		       mig_frame_type_name(h->type), h->len, ret);
		return mig_conn_set_error(c, ret);
	}
	return 0;
}

int mig_conn_set_interruptible(struct mig_conn *c)
{
	if (c->wake_fd >= 0)
		return 0;
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return c->wake_fd < 0 ? -errno : 0;
}

void mig_conn_interrupt(struct mig_conn *c)
{
	uint64_t one = 1;

	if (c->wake_fd >= 0)
		(void)!write(c->wake_fd, &one, sizeof(one));
}

/*
 * Before a frame of an interruptible connection: wait for its first byte
 * or an interrupt. Only here, between frames, so that an interrupt never
 * leaves half a frame read and the stream stays whole.
 */
static int wait_frame(struct mig_conn *c)
{
	struct pollfd p[2] = {
		{ .fd = c->fd, .events = POLLIN },
		{ .fd = c->wake_fd, .events = POLLIN },
	};
	uint64_t n;
	int r;

	if (c->wake_fd < 0 || (c->ssl && SSL_has_pending(c->ssl)))
		return 0;
	do
		r = poll(p, 2, c->io_ms ? (int)c->io_ms : -1);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (p[1].revents & POLLIN) {
		(void)!read(c->wake_fd, &n, sizeof(n));
		return -EINTR;
	}
	/* The wait is the receive time-out: not once more in the read. */
	return r ? 0 : mig_conn_set_error(c, -ETIMEDOUT);
}

int mig_conn_wait_readable(struct mig_conn *c, unsigned ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int r;

	if (atomic_load(&c->err))
		return atomic_load(&c->err);
	if (c->ssl && SSL_has_pending(c->ssl))
		return 0;
	do
		r = poll(&p, 1, (int)ms);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r ? 0 : -ETIMEDOUT;
}

int mig_conn_recv_types(struct mig_conn *c, uint64_t types,
			struct mig_frame_hdr *hdr, ProtobufCMessage **msg)
{
	uint8_t raw[MIG_FRAME_HDR_SIZE];
	struct mig_frame_hdr h;
	size_t got;
	int ret;

	ret = atomic_load(&c->err);
	if (!ret)
		ret = wait_frame(c);
	if (ret)
		return ret;
	ret = conn_read_n(c, raw, sizeof(raw), &got);
	if (ret)
		return got ? mig__conn_bad_header(c, raw, got, ret) : ret;
	ret = mig__conn_hdr_admit(c, raw, types, &h);
	if (ret)
		return ret;
	ret = mig_conn_read(c, c->rbuf, h.len);
	if (ret)
		return ret;
	ret = mig__conn_msg_unpack(c, &h, msg);
	if (ret)
		return ret;
	*hdr = h;
	return 0;
}

int mig_conn_recv(struct mig_conn *c, struct mig_frame_hdr *hdr,
		  ProtobufCMessage **msg)
{
	return mig_conn_recv_types(c, ~0ull, hdr, msg);
}

const char *mig_conn_strerror(int err)
{
	switch (err) {
	case -EACCES:
		return "TLS certificate error (certificate verify failed, or "
		       "the peer refused ours: check the CA and certificates)";
	case -EPROTOTYPE:
		return "TLS/plain mismatch (one side uses TLS, the other "
		       "--insecure)";
	default:
		return strerror(-err);
	}
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
