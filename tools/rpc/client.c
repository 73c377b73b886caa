// SPDX-License-Identifier: MIT
/*
 * migd_client: blocking control-RPC client (client.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "migrated/daemon/ctl_frame.h"
#include "migrated/daemon/parse.h"
#include "tools/rpc/client.h"

struct ev_node {
	struct ev_node *next;
	Migd__Event *ev;
};

struct migd_client {
	int fd;
	uint64_t next_id;
	struct migd_framer framer;
	struct ev_node *head, *tail;
	unsigned nr_events;
	uint64_t dropped;
	int error; /* sticky: the connection is unusable */
};

int migd_client_connect(const char *path, struct migd_client **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char def[sizeof(sa.sun_path)];
	struct migd_client *c;
	int fd, ret;

	if (!path) {
		ret = migd_default_socket(def, sizeof(def));
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
	close(c->fd);
	free(c);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
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
	ret = write_all(c->fd, frame, len);
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
	default:
		return 1;
	}
}
