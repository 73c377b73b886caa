// SPDX-License-Identifier: MIT
/*
 * migd_client: blocking control-RPC client (client.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "migrated/rpc/ctl_frame.h"
#include "migrated/rpc/parse.h"
#include "migrated/mig/tls.h"
#include "migrated/rpc/client.h"

#include <openssl/err.h>

struct ev_node {
	struct ev_node *next;
	Migd__Event *ev;
};

struct migd_client {
	int fd;
	SSL *ssl;	     /* TCP + TLS; NULL on the Unix socket */
	struct mig_tls *tls; /* its context */
	uint64_t next_id;
	struct migd_framer framer;
	struct ev_node *head, *tail;
	unsigned nr_events;
	uint64_t dropped;
	int error; /* sticky: the connection is unusable */
};

static int64_t now_ms(void);
static int tls_wait(struct migd_client *c, short events, int64_t deadline);
static int tls_want(struct migd_client *c, int r, short *events);

int migd_client_default_socket(char *buf, size_t size)
{
	const char *env = getenv("MIGRATED_SOCKET");
	struct stat st;
	int n;

	/* What the user named wins; else the system service, as virsh
	 * finds libvirtd; else a daemon of the user's own. A socket we
	 * may not even look at (EACCES: not in its group) is the system's
	 * too: the refusal then says how to join. */
	if ((!env || !*env) && !getenv("MIGRATED_STATE_DIR") &&
	    (lstat(MIGD_SYSTEM_SOCKET, &st) ? errno == EACCES
					    : S_ISSOCK(st.st_mode))) {
		n = snprintf(buf, size, "%s", MIGD_SYSTEM_SOCKET);
		return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
	}
	return migd_default_socket(buf, size);
}

int migd_client_connect(const char *path, struct migd_client **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char def[sizeof(sa.sun_path)];
	struct migd_client *c;
	int fd, ret;

	if (!path) {
		ret = migd_client_default_socket(def, sizeof(def));
		if (ret)
			return ret;
		path = def;
	}
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		free(c);
		return ret;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		free(c);
		return ret;
	}
	c->fd = fd;
	c->next_id = 1;
	migd_framer_init(&c->framer, MIGD_FRAME_MAX);
	*out = c;
	return 0;
}

int migd_client_connect_tls(const char *host, uint16_t port,
			    const struct migd_client_tls *t, int timeout_ms,
			    struct migd_client **out)
{
	struct mig_tls_cfg tcfg = {
		.ca_file = t->ca_file,
		.cert_file = t->cert_file,
		.key_file = t->key_file,
		.server = false,
		.peer_name = t->check_name ? host : NULL,
	};
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL, *a;
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct migd_client *c;
	char sport[8];
	int fd = -1, ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	migd_framer_init(&c->framer, MIGD_FRAME_MAX);
	c->next_id = 1;
	ret = mig_tls_create(&tcfg, &c->tls);
	if (ret)
		goto fail;
	snprintf(sport, sizeof(sport), "%u", port);
	ret = getaddrinfo(host, sport, &hints, &ai);
	if (ret) {
		ret = -EHOSTUNREACH;
		goto fail;
	}
	ret = -ECONNREFUSED;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		goto fail;
	c->fd = fd;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->ssl = SSL_new(mig_tls_ctx(c->tls));
	if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
		ret = -ENOMEM;
		goto fail;
	}
	if (tcfg.peer_name)
		SSL_set_tlsext_host_name(c->ssl, host);
	for (;;) {
		short ev;
		int r = SSL_connect(c->ssl);

		if (r == 1)
			break;
		if (tls_want(c, r, &ev)) {
			long vr = SSL_get_verify_result(c->ssl);

			ret = vr != X509_V_OK ? -EKEYREJECTED : -ECONNRESET;
			goto fail;
		}
		ret = tls_wait(c, ev, deadline);
		if (ret)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	migd_client_close(c);
	return ret;
}

void migd_client_close(struct migd_client *c)
{
	if (!c)
		return;
	while (c->head) {
		struct ev_node *n = c->head;

		c->head = n->next;
		migd__event__free_unpacked(n->ev, NULL);
		free(n);
	}
	migd_framer_fini(&c->framer);
	if (c->ssl) {
		SSL_shutdown(c->ssl); /* best effort close_notify */
		SSL_free(c->ssl);
	}
	mig_tls_destroy(c->tls);
	close(c->fd);
	free(c);
}

/* Wait for @events on the TLS socket; -ETIMEDOUT past @deadline. */
static int tls_wait(struct migd_client *c, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };
	int timeout = -1, ret;

	if (deadline >= 0) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		timeout = (int)left;
	}
	do
		ret = poll(&pfd, 1, timeout);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return ret == 0 ? -ETIMEDOUT : 0;
}

/* SSL_get_error() of a failed call -> what to wait for, or an error. */
static int tls_want(struct migd_client *c, int r, short *events)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		*events = POLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*events = POLLOUT;
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return -EPIPE;
	default:
		ERR_clear_error();
		return -ECONNRESET;
	}
}

static int tls_write_all(struct migd_client *c, const uint8_t *p, size_t n)
{
	while (n) {
		size_t w;
		short ev;
		int r = SSL_write_ex(c->ssl, p, n, &w);

		if (r == 1) {
			p += w;
			n -= w;
			continue;
		}
		r = tls_want(c, r, &ev);
		if (r)
			return -EPIPE;
		r = tls_wait(c, ev, now_ms() + 10000);
		if (r)
			return r;
	}
	return 0;
}

static int write_all(struct migd_client *c, const uint8_t *p, size_t n)
{
	int fd = c->fd;

	if (c->ssl)
		return tls_write_all(c, p, n);
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -EPIPE;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read one ServerMessage, waiting until @deadline (ms, < 0: forever). */
static int read_msg(struct migd_client *c, int64_t deadline,
		    Migd__ServerMessage **out)
{
	uint8_t buf[65536];
	const uint8_t *msg;
	uint32_t len;
	int ret;

	if (c->error)
		return c->error;
	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int timeout = -1;
		ssize_t n;

		ret = migd_framer_next(&c->framer, &msg, &len);
		if (ret == 0 && c->ssl) {
			size_t got;
			short ev;
			int r = SSL_read_ex(c->ssl, buf, sizeof(buf), &got);

			if (r == 1) {
				ret = migd_framer_feed(&c->framer, buf, got);
				if (ret)
					return c->error = ret;
				continue;
			}
			/* An alert (refused certificate) or EOF ends the
			 * connection; want-read/write waits below. */
			r = tls_want(c, r, &ev);
			if (r)
				return c->error = r;
			r = tls_wait(c, ev, deadline);
			if (r == -ETIMEDOUT)
				return r;
			if (r)
				return c->error = r;
			continue;
		}
		if (ret == 1) {
			*out = migd__server_message__unpack(NULL, len, msg);
			if (!*out)
				return c->error = -EPROTO;
			return 0;
		}
		if (ret < 0)
			return c->error = -EPROTO;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			timeout = (int)left;
		}
		ret = poll(&pfd, 1, timeout);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return c->error = -errno;
		if (ret == 0)
			return -ETIMEDOUT;
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return c->error = -EPIPE;
		ret = migd_framer_feed(&c->framer, buf, (size_t)n);
		if (ret)
			return c->error = ret;
	}
}

static void queue_event(struct migd_client *c, Migd__Event *ev)
{
	struct ev_node *n = malloc(sizeof(*n));

	if (!n) {
		migd__event__free_unpacked(ev, NULL);
		c->dropped++;
		return;
	}
	if (c->nr_events >= MIGD_CLIENT_EVENTS_MAX) {
		struct ev_node *old = c->head;

		c->head = old->next;
		if (!c->head)
			c->tail = NULL;
		migd__event__free_unpacked(old->ev, NULL);
		free(old);
		c->nr_events--;
		c->dropped++;
	}
	n->ev = ev;
	n->next = NULL;
	if (c->tail)
		c->tail->next = n;
	else
		c->head = n;
	c->tail = n;
	c->nr_events++;
}

/* Detach the payload of @sm and free the envelope. */
static void *take(Migd__ServerMessage *sm, bool event)
{
	void *p;

	if (event) {
		p = sm->event;
		sm->event = NULL;
	} else {
		p = sm->response;
		sm->response = NULL;
	}
	sm->msg_case = MIGD__SERVER_MESSAGE__MSG__NOT_SET;
	migd__server_message__free_unpacked(sm, NULL);
	return p;
}

int migd_client_call(struct migd_client *c, Migd__Request *req,
		     int timeout_ms, Migd__Response **resp)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	uint8_t *frame;
	size_t len;
	int ret;

	if (c->error)
		return c->error;
	if (!req->id)
		req->id = c->next_id++;
	ret = migd_frame_pack(&req->base, MIGD_FRAME_MAX, &frame, &len);
	if (ret)
		return ret;
	ret = write_all(c, frame, len);
	free(frame);
	if (ret)
		return c->error = ret;
	for (;;) {
		Migd__ServerMessage *sm;

		ret = read_msg(c, deadline, &sm);
		if (ret)
			return ret;
		if (sm->msg_case == MIGD__SERVER_MESSAGE__MSG_EVENT &&
		    sm->event) {
			queue_event(c, take(sm, true));
			continue;
		}
		if (sm->msg_case == MIGD__SERVER_MESSAGE__MSG_RESPONSE &&
		    sm->response &&
		    (sm->response->id == req->id || sm->response->id == 0)) {
			/* id 0: the daemon could not read our request. */
			*resp = take(sm, false);
			return 0;
		}
		/* A response to another (abandoned) request: skip it. */
		migd__server_message__free_unpacked(sm, NULL);
	}
}

int migd_client_next_event(struct migd_client *c, int timeout_ms,
			   Migd__Event **ev)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	int ret;

	for (;;) {
		Migd__ServerMessage *sm;

		if (c->head) {
			struct ev_node *n = c->head;

			c->head = n->next;
			if (!c->head)
				c->tail = NULL;
			c->nr_events--;
			*ev = n->ev;
			free(n);
			return 0;
		}
		ret = read_msg(c, deadline, &sm);
		if (ret)
			return ret;
		if (sm->msg_case == MIGD__SERVER_MESSAGE__MSG_EVENT &&
		    sm->event) {
			*ev = take(sm, true);
			return 0;
		}
		migd__server_message__free_unpacked(sm, NULL);
	}
}

uint64_t migd_client_events_dropped(const struct migd_client *c)
{
	return c->dropped;
}

Migd__Status migd_resp_status(const Migd__Response *r)
{
	if (!r->error || r->error->status == MIGD__STATUS__STATUS_INVALID)
		return MIGD__STATUS__STATUS_OK;
	return r->error->status;
}

const char *migd_resp_message(const Migd__Response *r)
{
	return r->error && r->error->message ? r->error->message : "";
}

const char *migd_status_text(Migd__Status st)
{
	static const char *const names[] = {
		[MIGD__STATUS__STATUS_INVALID] = "invalid status",
		[MIGD__STATUS__STATUS_OK] = "ok",
		[MIGD__STATUS__STATUS_INVALID_ARGUMENT] = "invalid argument",
		[MIGD__STATUS__STATUS_NOT_FOUND] = "not found",
		[MIGD__STATUS__STATUS_ALREADY_EXISTS] = "already exists",
		[MIGD__STATUS__STATUS_FAILED_PRECONDITION] =
			"failed precondition",
		[MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED] =
			"resource exhausted",
		[MIGD__STATUS__STATUS_INTERNAL] = "internal error",
		[MIGD__STATUS__STATUS_UNAVAILABLE] = "unavailable",
		[MIGD__STATUS__STATUS_CANCELLED] = "cancelled",
		[MIGD__STATUS__STATUS_UNIMPLEMENTED] = "unimplemented",
		[MIGD__STATUS__STATUS_ABORTED] = "aborted",
		[MIGD__STATUS__STATUS_PERMISSION_DENIED] = "permission denied",
	};

	if ((unsigned)st < sizeof(names) / sizeof(names[0]) && names[st])
		return names[st];
	return "unknown status";
}

int migd_status_exit_code(Migd__Status st)
{
	switch (st) {
	case MIGD__STATUS__STATUS_OK:
		return 0;
	case MIGD__STATUS__STATUS_INVALID_ARGUMENT:
		return 2;
	case MIGD__STATUS__STATUS_NOT_FOUND:
		return 3;
	case MIGD__STATUS__STATUS_UNAVAILABLE:
		return 4;
	case MIGD__STATUS__STATUS_PERMISSION_DENIED:
		return 8; /* 5..7 are taken (daemon not reachable, migrate-send) */
	default:
		return 1;
	}
}
