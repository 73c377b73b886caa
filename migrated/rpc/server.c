// SPDX-License-Identifier: MIT
/*
 * migd_server: control RPC over a Unix socket and TCP + mutual TLS
 * (server.h): connections, requests, deferred calls. The listeners are in
 * server_listen.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "migrated/rpc/server_priv.h"
#include "migrated/rpc/tlsconn.h"
#include "migrated/mig/tls.h"

#define COMP "migd.rpc"
#define READ_CHUNK (64u << 10)

/* ---- call helpers ------------------------------------------------------ */

struct arena_blk {
	struct arena_blk *next;
	max_align_t data[];
};

void *migd_call_alloc(struct migd_call *call, size_t size)
{
	struct arena_blk *b = calloc(1, sizeof(*b) + size);

	if (!b) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return NULL;
	}
	b->next = call->arena;
	call->arena = b;
	return b->data;
}

char *migd_call_strdup(struct migd_call *call, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = migd_call_alloc(call, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

Migd__Status migd_call_fail(struct migd_call *call, Migd__Status status,
			    const char *fmt, ...)
{
	va_list ap;

	if (call->status != MIGD__STATUS__STATUS_OK)
		return status;
	call->status = status;
	va_start(ap, fmt);
	vsnprintf(call->message, sizeof(call->message), fmt, ap);
	va_end(ap);
	return status;
}

int migd_call_warn(struct migd_call *call, const char *fmt, ...)
{
	Migd__Response *r = call->resp;
	char **w = migd_call_alloc(call, (r->n_warnings + 1) * sizeof(*w));
	char buf[256];
	va_list ap;

	if (!w)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (r->n_warnings)
		memcpy(w, r->warnings, r->n_warnings * sizeof(*w));
	w[r->n_warnings] = migd_call_strdup(call, buf);
	if (!w[r->n_warnings])
		return -ENOMEM;
	r->warnings = w;
	r->n_warnings++;
	return 0;
}

Migd__Status migd_status_from_errno(int err)
{
	switch (err) {
	case 0:
		return MIGD__STATUS__STATUS_OK;
	case -EINVAL:
	case -ERANGE:
	case -EMSGSIZE:
		return MIGD__STATUS__STATUS_INVALID_ARGUMENT;
	case -ENOENT:
		return MIGD__STATUS__STATUS_NOT_FOUND;
	case -EEXIST:
		return MIGD__STATUS__STATUS_ALREADY_EXISTS;
	case -EBUSY:
	case -EALREADY:
		return MIGD__STATUS__STATUS_FAILED_PRECONDITION;
	case -ENOMEM:
	case -ENOSPC:
	case -EMFILE:
		return MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED;
	case -ENODEV:
	case -EOPNOTSUPP:
	case -EADDRINUSE:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
		return MIGD__STATUS__STATUS_UNAVAILABLE;
	case -ECANCELED:
		return MIGD__STATUS__STATUS_CANCELLED;
	default:
		return MIGD__STATUS__STATUS_INTERNAL;
	}
}

static void arena_free(void *arena)
{
	while (arena) {
		struct arena_blk *b = arena;

		arena = b->next;
		free(b);
	}
}

/* ---- writing ----------------------------------------------------------- */

struct write_req {
	uv_write_t req;
	uint8_t *buf;
};


static void write_done(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;

	free(w->buf);
	free(w);
	(void)status; /* a failed write shows up as a read error / EOF */
}

/* Queue @buf (malloc'd, ownership taken) of @len bytes on the stream. */
static int write_raw(struct migd_conn *conn, uint8_t *buf, size_t len)
{
	struct write_req *w = calloc(1, sizeof(*w));
	uv_buf_t b;
	int ret;

	if (!w) {
		free(buf);
		return -ENOMEM;
	}
	w->buf = buf;
	b = uv_buf_init((char *)buf, (unsigned)len);
	ret = uv_write(&w->req, &conn->h.stream, &b, 1, write_done);
	if (ret) {
		free(w->buf);
		free(w);
		migd__conn_close(conn, uv_err_name(ret));
		return ret;
	}
	return 0;
}

/* Send what TLS has ready (handshake records, alerts, ciphertext). */
static int tls_flush(struct migd_conn *conn)
{
	uint8_t *buf;
	long n = migd_tlsconn_take_out(conn->tls, &buf);

	if (n <= 0)
		return (int)n;
	return write_raw(conn, buf, (size_t)n);
}

int migd__conn_send(struct migd_conn *conn, const ProtobufCMessage *msg)
{
	uint8_t *buf;
	size_t len;
	int ret;

	if (conn->closing)
		return -EPIPE;
	if (uv_stream_get_write_queue_size(&conn->h.stream) >
	    MIGD_CONN_WQ_MAX) {
		migd__conn_close(conn, "client not reading");
		return -ENOBUFS;
	}
	ret = migd_frame_pack(msg, MIGD_FRAME_MAX, &buf, &len);
	if (ret)
		return ret;
	if (!conn->tls)
		return write_raw(conn, buf, len);
	ret = migd_tlsconn_write(conn->tls, buf, len);
	free(buf);
	if (ret) {
		migd__conn_close(conn, "tls write failed");
		return ret;
	}
	return tls_flush(conn);
}

static int send_response(struct migd_conn *conn, Migd__Response *resp)
{
	Migd__ServerMessage sm = MIGD__SERVER_MESSAGE__INIT;

	sm.msg_case = MIGD__SERVER_MESSAGE__MSG_RESPONSE;
	sm.response = resp;
	return migd__conn_send(conn, &sm.base);
}

/* ---- requests ---------------------------------------------------------- */

static void migd_defer_drop(struct migd_conn *conn);
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);

static void server_policy(struct migd_server *srv,
			  struct migd_server_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->default_role = MIGD_RPC_ROLE_INVALID;
	if (srv->ops && srv->ops->policy)
		srv->ops->policy(srv->owner, pol);
}
static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/*
 * A TCP client's role (rpcauth.h) allows call @cs? Looked up on every call
 * rather than once per connection, so that a reload that revokes an
 * identity closes it to connections already open. The Unix socket is the
 * operator's.
 */
static bool authorised(struct migd_conn *conn, unsigned cs,
		       struct migd_call *call)
{
	struct migd_server_policy pol = { 0 };
	const char *ids[MIGD_TLS_PEER_IDS_MAX], *matched;
	enum migd_rpc_role role, need;
	char esc[HV_LOG_ESCAPE_LEN(96)];
	unsigned n;

	if (!conn->tls)
		return true;
	server_policy(conn->srv, &pol);
	n = migd_tlsconn_peer_ids(conn->tls, ids, HV_ARRAY_SIZE(ids));
	role = migd_rpcauth_role(pol.rules, pol.nr_rules, pol.default_role,
				 ids, n, &matched);
	need = migd_rpcauth_needs_request(call->req);
	if (migd_rpcauth_covers(role, need))
		return true;
	migd_call_fail(call, MIGD__STATUS__STATUS_PERMISSION_DENIED,
		       "certificate '%s' has role %s%s; this call needs "
		       "role %s%s",
		       matched ? matched : migd_tlsconn_peer(conn->tls),
		       migd_rpc_role_name(role),
		       matched ? "" : " (the default: no --rpc-role names it)",
		       need == MIGD_RPC_ROLE_READ_ONLY
			       ? "read-only or above"
			       : need == MIGD_RPC_ROLE_PEER
					 ? "peer-daemon or operator"
					 : "operator",
		       need > migd_rpcauth_needs(cs)
			       ? " (an insecure incoming migration)"
			       : "");
	hv_info(COMP, "event=rpc_denied conn=%llu peer=\"%s\" role=%s "
		      "call_case=%u",
		(unsigned long long)conn->id,
		hv_log_escape(migd_tlsconn_peer(conn->tls), esc, sizeof(esc)),
		migd_rpc_role_name(role), cs);
	return false;
}

static void serve(struct migd_conn *conn, const Migd__Request *req)
{
	struct migd_server *srv = conn->srv;
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__Error err = MIGD__ERROR__INIT;
	struct migd_call call = {
		.owner = srv->owner,
		.conn = conn,
		.req = req,
		.resp = &resp,
		.status = MIGD__STATUS__STATUS_OK,
	};
	unsigned cs = (unsigned)req->call_case;
	const char *name = "?";
	char esc[640]; /* the message, escaped; a log line is 1 KiB */
	int ret;

	resp.id = req->id;
	if (req->id == 0) {
		migd_call_fail(&call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "request id must not be 0");
	} else if (!authorised(conn, cs, &call)) {
		/* refused: nothing of the call runs */
	} else {
		name = srv->ops->dispatch(cs, &call);
	}
	srv->requests++;
	if (call.deferred && call.status == MIGD__STATUS__STATUS_OK) {
		/* migd_defer_finish() answers; nothing else is read from
		 * this connection until then (responses stay in order). */
		arena_free(call.arena);
		if (srv->ops->after_call)
			srv->ops->after_call(srv->owner, cs);
		return;
	}
	if (call.deferred)
		migd_defer_drop(conn);
	if (call.status != MIGD__STATUS__STATUS_OK) {
		/* A failed call carries no result. */
		resp.result_case = MIGD__RESPONSE__RESULT__NOT_SET;
		err.status = call.status;
		err.message = call.message;
		hv_log_escape(call.message, esc, sizeof(esc));
		hv_dbg(COMP, "event=call_failed conn=%llu id=%llu call=%s "
			     "status=%s msg=\"%s\"",
		       (unsigned long long)conn->id,
		       (unsigned long long)req->id, name,
		       protobuf_c_enum_descriptor_get_value(
			       &migd__status__descriptor, call.status)
			       ->name,
		       esc);
	} else {
		err.status = MIGD__STATUS__STATUS_OK;
		err.message = (char *)"";
	}
	resp.error = &err;
	ret = send_response(conn, &resp);
	if (ret && ret != -EPIPE && ret != -ENOBUFS)
		hv_warn(COMP, "event=send_failed conn=%llu id=%llu err=%d",
			(unsigned long long)conn->id,
			(unsigned long long)req->id, ret);
	arena_free(call.arena);
	if (srv->ops->after_call)
		srv->ops->after_call(srv->owner, cs);
}


static void refuse_malformed(struct migd_conn *conn, const char *why)
{
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__Error err = MIGD__ERROR__INIT;

	err.status = MIGD__STATUS__STATUS_INVALID_ARGUMENT;
	err.message = (char *)why;
	resp.error = &err;
	send_response(conn, &resp);
	migd__conn_close(conn, why);
}

/* ---- connections ------------------------------------------------------- */

/* Called once per handle of the connection (stream, timer): the last
 * one frees it. */
static void conn_closed(uv_handle_t *h)
{
	struct migd_conn *conn = h->data;

	if (--conn->open_handles)
		return;
	while (conn->subs) {
		struct migd_sub *s = conn->subs;

		conn->subs = s->next;
		free(s);
	}
	migd_framer_fini(&conn->framer);
	migd_tlsconn_free(conn->tls);
	free(conn);
}

void migd__conn_close(struct migd_conn *conn, const char *why)
{
	struct migd_server *srv = conn->srv;

	if (conn->closing)
		return;
	conn->closing = true;
	for (struct migd_conn **pp = &srv->conns; *pp; pp = &(*pp)->next) {
		if (*pp == conn) {
			*pp = conn->next;
			srv->nr_conns--;
			break;
		}
	}
	hv_dbg(COMP, "event=conn_closed conn=%llu why=\"%s\"",
	       (unsigned long long)conn->id, why);
	if (conn->defer) {
		conn->defer->conn = NULL;
		conn->defer = NULL;
	}
	if (srv->ops->on_conns && !srv->stopping)
		srv->ops->on_conns(srv->owner, srv->nr_conns);
	if (conn->has_timer)
		uv_close((uv_handle_t *)&conn->timer, conn_closed);
	uv_close((uv_handle_t *)&conn->h.stream, conn_closed);
}

/* ---- deadlines (TCP) ---------------------------------------------------- */

/*
 * Why: a TCP client that connects and never finishes the handshake, or
 * finishes it and then sends nothing, would hold one of MIGD_CONNS_MAX
 * slots for good -- enough of them lock every orchestrator out. One timer
 * per connection carries the current deadline:
 *   accept:             handshake deadline (rpc_handshake_timeout_ms)
 *   handshake done:     idle deadline (rpc_idle_timeout_ms), re-armed by
 *                       every read; stopped while a subscription exists
 *   deadline reached:   close
 */
static void conn_timer_cb(uv_timer_t *t)
{
	struct migd_conn *conn = t->data;
	struct migd_server *srv = conn->srv;
	struct migd_server_policy pol;
	char esc[HV_LOG_ESCAPE_LEN(96)];

	if (conn->closing)
		return;
	server_policy(srv, &pol);
	if (!migd_tlsconn_established(conn->tls)) {
		srv->handshake_timeouts++;
		hv_warn(COMP, "event=tls_handshake_timeout conn=%llu ms=%u",
			(unsigned long long)conn->id,
			pol.handshake_timeout_ms);
		migd__conn_close(conn, "tls handshake timeout");
	} else if (!conn->nr_subs) {
		srv->idle_timeouts++;
		hv_info(COMP, "event=conn_idle_timeout conn=%llu peer=\"%s\" "
			      "ms=%u",
			(unsigned long long)conn->id,
			hv_log_escape(migd_tlsconn_peer(conn->tls), esc,
				      sizeof(esc)),
			pol.idle_timeout_ms);
		migd__conn_close(conn, "idle timeout");
	}
}

void migd__conn_idle_arm(struct migd_conn *conn)
{
	struct migd_server_policy pol;
	uint32_t ms;

	server_policy(conn->srv, &pol);
	ms = pol.idle_timeout_ms;
	if (!conn->has_timer || conn->closing ||
	    !migd_tlsconn_established(conn->tls))
		return;
	if (ms && !conn->nr_subs)
		uv_timer_start(&conn->timer, conn_timer_cb, ms, 0);
	else
		uv_timer_stop(&conn->timer);
}

/* Accept of a TCP connection: the timer, armed for the handshake. */
static int conn_timer_init(struct migd_conn *conn)
{
	struct migd_server_policy pol;
	int ret = uv_timer_init(conn->srv->loop, &conn->timer);

	server_policy(conn->srv, &pol);
	if (ret)
		return ret;
	conn->timer.data = conn;
	conn->has_timer = true;
	conn->open_handles++;
	return pol.handshake_timeout_ms
		       ? uv_timer_start(&conn->timer, conn_timer_cb,
					pol.handshake_timeout_ms, 0)
		       : 0;
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	buf->base = malloc(READ_CHUNK);
	buf->len = buf->base ? READ_CHUNK : 0;
}

/* Plaintext arrived (the Unix socket, or TLS after its handshake):
 * reassemble frames and serve every complete request. */
static int conn_plain(void *arg, const void *data, size_t n)
{
	struct migd_conn *conn = arg;
	const uint8_t *msg;
	uint32_t len;
	int ret;

	if (conn->closing)
		return -EPIPE;
	ret = n ? migd_framer_feed(&conn->framer, data, n) : 0;
	if (ret) {
		migd__conn_close(conn, "out of memory");
		return ret;
	}
	while (!conn->closing && !conn->defer &&
	       (ret = migd_framer_next(&conn->framer, &msg, &len)) == 1) {
		Migd__Request *req = migd__request__unpack(NULL, len, msg);

		if (!req) {
			hv_warn(COMP, "event=bad_request conn=%llu len=%u",
				(unsigned long long)conn->id, len);
			refuse_malformed(conn, "malformed request");
			return -EPROTO;
		}
		serve(conn, req);
		migd__request__free_unpacked(req, NULL);
	}
	if (ret < 0) {
		hv_warn(COMP, "event=bad_frame conn=%llu err=%d",
			(unsigned long long)conn->id, ret);
		refuse_malformed(conn, "bad frame length");
		return ret;
	}
	return conn->closing ? -EPIPE : 0;
}

static void tls_read(struct migd_conn *conn, const void *data, size_t n)
{
	struct migd_server *srv = conn->srv;
	bool was = migd_tlsconn_established(conn->tls);
	int ret = migd_tlsconn_feed(conn->tls, data, n, conn_plain, conn);
	char esc[HV_LOG_ESCAPE_LEN(96)];

	if (!conn->closing)
		tls_flush(conn); /* handshake records or the alert */
	if (!was && migd_tlsconn_established(conn->tls)) {
		hv_dbg(COMP, "event=tls_established conn=%llu peer=\"%s\"",
		       (unsigned long long)conn->id,
		       hv_log_escape(migd_tlsconn_peer(conn->tls), esc,
				     sizeof(esc)));
		/* Handshake deadline off, idle deadline on (or off when
		 * what came along with the Finished subscribed). */
		migd__conn_idle_arm(conn);
	}
	if (ret == -EACCES) {
		srv->tls_refused++;
		hv_warn(COMP, "event=tls_refused conn=%llu why=\"%s\"",
			(unsigned long long)conn->id,
			migd_tlsconn_error(conn->tls));
		migd__conn_close(conn, "tls handshake refused");
	} else if (ret == -ECONNRESET) {
		migd__conn_close(conn, "tls close_notify");
	} else if (ret == -EPROTO) {
		migd__conn_close(conn, migd_tlsconn_error(conn->tls));
	}
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct migd_conn *conn = (struct migd_conn *)s;

	if (n < 0) {
		free(buf->base);
		if (n != UV_EOF)
			migd__conn_close(conn, uv_err_name((int)n));
		else
			migd__conn_close(conn, migd_framer_pending(&conn->framer)
						 ? "eof inside a frame"
						 : "eof");
		return;
	}
	/* Any byte is activity; a subscription made by what it carries
	 * stops the deadline again (migd_server_subscribe). */
	if (conn->tls)
		migd__conn_idle_arm(conn);
	if (conn->tls)
		tls_read(conn, buf->base, (size_t)n);
	else
		conn_plain(conn, buf->base, (size_t)n);
	free(buf->base);
}

/*
 * Why: TCP connections that have not finished their TLS handshake are
 * anyone's; left to fill MIGD_CONNS_MAX until their time-out, a flood of
 * them would lock out the Unix socket and every real client. Past
 * MIGD_TLS_PENDING_MAX of them, a newcomer closes the oldest (the list
 * is newest first); a real client finishes its handshake in milliseconds.
 */
static void handshake_room(struct migd_server *srv)
{
	struct migd_conn *oldest = NULL;
	unsigned n = 0;

	for (struct migd_conn *c = srv->conns; c; c = c->next) {
		if (!c->tls || migd_tlsconn_established(c->tls))
			continue;
		n++;
		oldest = c;
	}
	if (n < MIGD_TLS_PENDING_MAX)
		return;
	srv->handshake_evictions++;
	hv_dbg(COMP, "event=tls_handshake_evicted conn=%llu pending=%u",
	       (unsigned long long)oldest->id, n);
	migd__conn_close(oldest, "evicted by a newer handshake");
}

static void accept_common(struct migd_server *srv, uv_stream_t *listener,
			  bool tcp)
{
	struct migd_conn *conn;
	const char *why = NULL;
	int ret;

	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return;
	if (tcp)
		uv_tcp_init(srv->loop, &conn->h.tcp);
	else
		uv_pipe_init(srv->loop, &conn->h.pipe, 0);
	conn->h.stream.data = conn;
	conn->open_handles = 1;
	conn->srv = srv;
	conn->id = ++srv->next_conn_id;
	migd_framer_init(&conn->framer, MIGD_FRAME_MAX);
	ret = uv_accept(listener, &conn->h.stream);
	if (!ret && tcp)
		handshake_room(srv);
	if (ret)
		why = uv_err_name(ret);
	else if (srv->nr_conns >= MIGD_CONNS_MAX)
		why = "too many connections";
	else if (tcp && migd_tlsconn_new(mig_tls_ctx(srv->tls), &conn->tls))
		why = "out of memory";
	else if (tcp && conn_timer_init(conn))
		why = "no timer";
	if (why) {
		hv_warn(COMP, "event=conn_refused conn=%llu why=\"%s\"",
			(unsigned long long)conn->id, why);
		conn->closing = true;
		if (conn->has_timer)
			uv_close((uv_handle_t *)&conn->timer, conn_closed);
		uv_close((uv_handle_t *)&conn->h.stream, conn_closed);
		return;
	}
	if (tcp)
		uv_tcp_nodelay(&conn->h.tcp, 1);
	conn->next = srv->conns;
	srv->conns = conn;
	srv->nr_conns++;
	if (srv->ops->on_conns)
		srv->ops->on_conns(srv->owner, srv->nr_conns);
	ret = uv_read_start(&conn->h.stream, alloc_cb, read_cb);
	if (ret)
		migd__conn_close(conn, uv_err_name(ret));
}

void migd__accept_cb(uv_stream_t *listener, int status)
{
	if (status < 0) {
		hv_warn(COMP, "event=accept_failed err=%s",
			uv_err_name(status));
		return;
	}
	accept_common(listener->data, listener, false);
}

void migd__accept_tcp_cb(uv_stream_t *listener, int status)
{
	if (status < 0) {
		hv_warn(COMP, "event=accept_failed transport=tcp err=%s",
			uv_err_name(status));
		return;
	}
	accept_common(listener->data, listener, true);
}

/* ---- deferred calls ---------------------------------------------------- */

struct migd_defer *migd_call_defer(struct migd_call *call)
{
	struct migd_conn *conn = call->conn;
	struct migd_defer *df;

	if (conn->defer) { /* cannot happen: reading stops while one waits */
		migd_call_fail(call, MIGD__STATUS__STATUS_INTERNAL,
			       "a deferred call is already waiting");
		return NULL;
	}
	df = calloc(1, sizeof(*df));
	if (!df) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return NULL;
	}
	df->conn = conn;
	df->req_id = call->req->id;
	df->owner = call->owner;
	conn->defer = df;
	call->deferred = true;
	uv_read_stop(&conn->h.stream);
	return df;
}

/* serve(): a handler deferred and then failed the call synchronously. */
static void migd_defer_drop(struct migd_conn *conn)
{
	struct migd_defer *df = conn->defer;

	if (!df)
		return;
	conn->defer = NULL;
	free(df);
	if (!conn->closing)
		uv_read_start(&conn->h.stream, alloc_cb, read_cb);
}

void migd_defer_finish(struct migd_defer *df, Migd__Response *resp)
{
	struct migd_conn *conn = df->conn;
	Migd__Error ok = MIGD__ERROR__INIT;
	int ret;

	if (!conn) { /* the client went away meanwhile */
		free(df);
		return;
	}
	conn->defer = NULL;
	resp->id = df->req_id;
	if (!resp->error) {
		ok.status = MIGD__STATUS__STATUS_OK;
		ok.message = (char *)"";
		resp->error = &ok;
	}
	ret = send_response(conn, resp);
	if (ret && ret != -EPIPE && ret != -ENOBUFS)
		hv_warn(COMP, "event=send_failed conn=%llu id=%llu err=%d",
			(unsigned long long)conn->id,
			(unsigned long long)df->req_id, ret);
	if (resp->error == &ok)
		resp->error = NULL;
	free(df);
	if (conn->closing)
		return;
	uv_read_start(&conn->h.stream, alloc_cb, read_cb);
	/* Requests that arrived meanwhile wait in the framer (decrypted
	 * already on TLS). */
	conn_plain(conn, NULL, 0);
}

void migd_defer_fail(struct migd_defer *df, Migd__Status status,
		     const char *fmt, ...)
{
	Migd__Response resp = MIGD__RESPONSE__INIT;
	Migd__Error err = MIGD__ERROR__INIT;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err.status = status;
	err.message = msg;
	resp.error = &err;
	migd_defer_finish(df, &resp);
}

