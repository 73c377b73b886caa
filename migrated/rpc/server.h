/* SPDX-License-Identifier: MIT */
/*
 * migd_server: the control RPC server (proto/control.proto, framing in
 * ctl_frame.h) on a Unix socket for local tools and, optionally, on TCP
 * with TLS 1.3 and mutual certificate authentication for remote
 * orchestrators (tlsconn.h: TLS runs over memory BIOs on the loop). Both
 * transports carry the same frames into the same handlers.
 *
 * Each accepted connection reassembles frames, decodes one Request per
 * frame and hands it to its owner's dispatch (struct migd_server_ops:
 * the host's calls, or a worker's, migrated/vmm/calls.h) on the loop
 * thread; the handler
 * fills a Response that is packed and written before the next request of
 * that connection is read, so responses come in request order. A frame of
 * a bad length, an undecodable message or a write queue above
 * MIGD_CONN_WQ_MAX (a client that does not read) closes the connection;
 * the daemon carries on.
 *
 * TCP connections hold a slot (MIGD_CONNS_MAX is shared with the Unix
 * socket) only while they do something: one that has not completed its
 * TLS handshake after the policy's handshake_timeout_ms, or that then
 * sends nothing for its idle_timeout_ms while it has no subscription, is
 * closed (0 turns either off), and at most MIGD_TLS_PENDING_MAX are in
 * their handshake at once (a newer one closes the oldest), so a flood of
 * idle connections never fills the slots of the Unix socket and the real
 * clients. A subscriber may stay silent: it listens.
 * The Unix socket has no timeouts (only its owner can connect).
 *
 * Subscriptions (SubscribeRequest, MigWatchRequest) hang off their
 * connection and die with it (server_events.c). migd_server_publish() delivers one event to
 * every matching subscription; progress events are paced per
 * subscription.
 *
 * Threads: loop thread only.
 */
#ifndef MIGD_SERVER_H
#define MIGD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "migrated/rpc/ctl_frame.h"
#include "migrated/rpc/parse.h"
#include "migrated/rpc/rpcauth.h"
#include "proto/control.pb-c.h"

#define MIGD_CONNS_MAX 512
/* TCP connections still in their TLS handshake (server.c handshake_room) */
#define MIGD_TLS_PENDING_MAX 64u
#define MIGD_SUBS_PER_CONN 64
#define MIGD_CONN_WQ_MAX (16u << 20)
#define MIGD_PROGRESS_INTERVAL_MS 500u
#define MIGD_PROGRESS_INTERVAL_MIN_MS 50u

struct migd_call;

/*
 * What a TCP client may do and how long it may take (rpcauth.h): the
 * owner's live configuration, asked for on each use, so that a reload
 * applies to connections already open.
 */
struct migd_server_policy {
	const struct migd_rpc_rule *rules;
	unsigned nr_rules;
	enum migd_rpc_role default_role;
	uint32_t handshake_timeout_ms; /* 0 = no limit */
	uint32_t idle_timeout_ms;      /* 0 = no limit */
};

/*
 * The server's owner (the host daemon or a worker), given with @owner to
 * migd_server_start(); the server knows nothing else of it. Loop thread.
 */
struct migd_server_ops {
	/* Run the authorised call @call_case and return its name for logs;
	 * a call it does not know, it fails (UNIMPLEMENTED). */
	const char *(*dispatch)(unsigned call_case, struct migd_call *call);
	/* Optional: fill the policy of TCP clients; NULL = no roles' rules,
	 * no limits. */
	void (*policy)(void *owner, struct migd_server_policy *out);
	/* Optional: told the number of connections after each accept and
	 * close (workers: the daemon came or went). */
	void (*on_conns)(void *owner, unsigned nr_conns);
	/* Optional: told after each call was served (workers: idle check). */
	void (*after_call)(void *owner, unsigned call_case);
};

struct migd_sub {
	struct migd_sub *next;
	uint64_t id;	/* the request id that opened it */
	uint32_t kinds; /* bit per Migd__EventKind; 0 = every kind */
	char vm[MIGD_NAME_MAX + 1];
	uint64_t mig_id;
	uint64_t interval_ns;
	uint64_t last_progress_ns;
	bool end_with_mig; /* MigWatch: ends after the terminal phase */
};

struct migd_tlsconn;
struct mig_tls;

struct migd_defer;

struct migd_conn {
	union { /* first: the handle pointer is the connection pointer */
		uv_stream_t stream;
		uv_pipe_t pipe;
		uv_tcp_t tcp;
	} h;
	struct migd_server *srv;
	struct migd_tlsconn *tls; /* TCP only; NULL on the Unix socket */
	struct migd_conn *next;
	uint64_t id; /* for logs */
	struct migd_framer framer;
	struct migd_sub *subs;
	unsigned nr_subs;
	uint64_t event_seq;
	bool closing;
	/* TCP: the handshake deadline, then the idle one (server.c) */
	uv_timer_t timer;
	bool has_timer;
	unsigned open_handles; /* freed when the last one closed */
	struct migd_defer *defer; /* the call being answered later */
};

struct migd_server {
	uv_loop_t *loop;
	const struct migd_server_ops *ops;
	void *owner;
	uv_pipe_t listener;
	bool listening;
	char path[108];
	struct migd_conn *conns;
	unsigned nr_conns;
	uint64_t next_conn_id;
	uint64_t requests; /* served, for logs and metrics */
	/* TCP + mutual TLS listener (migd_server_listen_tcp) */
	uv_tcp_t tcp_listener;
	bool tcp_listening;
	struct mig_tls *tls;
	char tcp_addr[MIGD_HOST_MAX + 16]; /* as bound, "host:port" */
	uint16_t tcp_port;
	uint64_t tls_refused; /* handshakes refused (metrics, tests) */
	uint64_t handshake_timeouts; /* closed before the TLS handshake */
	uint64_t handshake_evictions; /* closed for a newer handshake */
	uint64_t idle_timeouts;	     /* closed after silence */
	bool stopping;
	bool keep_path; /* started on a handed-over fd: not ours to unlink */
};

/*
 * One request being served. A handler sets the result oneof of @resp,
 * allocating what it points to with migd_call_alloc() (freed after the
 * response is sent), or fails the call with migd_call_fail().
 */
struct migd_call {
	void *owner; /* the server's (migd_server_start()) */
	struct migd_conn *conn;
	const Migd__Request *req;
	Migd__Response *resp;
	Migd__Status status; /* OK unless failed */
	char message[512];
	void *arena; /* chain of allocations */
	bool deferred; /* migd_call_defer() */
};

/*
 * A call answered after its handler returned (the daemon waits for a
 * worker). The handler calls migd_call_defer() and must not use the
 * call's arena or request afterwards; the connection reads no further
 * request until migd_defer_finish() or migd_defer_fail() (either frees
 * @df; if the client left meanwhile they only free it).
 */
struct migd_defer {
	void *owner; /* the server's */
	struct migd_conn *conn; /* NULL once the client is gone */
	uint64_t req_id;
};

/* NULL with the call failed (OOM). */
struct migd_defer *migd_call_defer(struct migd_call *call);
/* Send @resp (its id set here; error NULL = OK). */
void migd_defer_finish(struct migd_defer *df, Migd__Response *resp);
void migd_defer_fail(struct migd_defer *df, Migd__Status status,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef void (*migd_call_fn)(struct migd_call *call);

/* Zeroed memory that lives until the response is sent; NULL on OOM (the
 * call is then failed with RESOURCE_EXHAUSTED). */
void *migd_call_alloc(struct migd_call *call, size_t size);
char *migd_call_strdup(struct migd_call *call, const char *s);
/* Fail the call (first failure wins); returns @status for brevity. */
Migd__Status migd_call_fail(struct migd_call *call, Migd__Status status,
			    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Add a warning to the call's answer (Response.warnings): the call
 * succeeds, and the client shows the text to the operator. Returns -ENOMEM
 * (the call failed) when it cannot. */
int migd_call_warn(struct migd_call *call, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Map a negative errno to a status (-ENOENT -> NOT_FOUND, ...). */
Migd__Status migd_status_from_errno(int err);

/*
 * Listen on @path: refuses (-EADDRINUSE) when a live daemon answers there,
 * removes a stale socket file otherwise; the socket is mode 0600, or 0660
 * in group @gid when @gid >= 0 (an operator group: its members are
 * operators too).
 */
int migd_server_start(struct migd_server *srv, uv_loop_t *loop,
		      const struct migd_server_ops *ops, void *owner,
		      const char *path, long gid);
/*
 * Also serve on TCP @host:@port (port 0: any; the bound port is
 * srv->tcp_port) with TLS 1.3 and mutual authentication: the server
 * presents @cert_file/@key_file and accepts only clients whose
 * certificate chains to @ca_file and is valid now. Call after
 * migd_server_start(). 0, -EINVAL, -ENOENT (TLS files), -EADDRINUSE or
 * another negative errno from libuv.
 */
int migd_server_listen_tcp(struct migd_server *srv, const char *host,
			   uint16_t port, const char *ca_file,
			   const char *cert_file, const char *key_file);

/*
 * Serve on a listening Unix socket @fd that was handed over (a worker's,
 * bound by its daemon at @path, which stays the daemon's to remove).
 */
int migd_server_start_fd(struct migd_server *srv, uv_loop_t *loop,
			 const struct migd_server_ops *ops, void *owner,
			 int fd, const char *path);

/* Stop listening, flush what is queued to each connection, then close
 * them (a worker that exits). */
void migd_server_drain(struct migd_server *srv);

/*
 * Rebuild the TCP listener's TLS context from @ca_file, @cert_file and
 * @key_file (as migd_server_listen_tcp() loads them), on SIGHUP
 * (reload.h). Connections accepted from now on use the new context;
 * established ones and ones still in their handshake keep the one they
 * were accepted with (each SSL holds a reference to it). When the new
 * files cannot be loaded, the old context keeps serving and the reason is
 * logged (event=rpc_tls_reload_failed, and OpenSSL's on a comp=tls line).
 * 0, -ENOTCONN (no TCP listener), or mig_tls_create()'s error (-ENOENT: a
 * file cannot be loaded, -EKEYREJECTED: the key does not match).
 */
int migd_server_reload_tls(struct migd_server *srv, const char *ca_file,
			   const char *cert_file, const char *key_file);

/* Close every connection and the listeners; remove the socket file. */
void migd_server_stop(struct migd_server *srv);

/*
 * Add a subscription to @conn from @call (id = request id). Returns the
 * subscription, or NULL with the call failed (limit, OOM).
 */
struct migd_sub *migd_server_subscribe(struct migd_call *call);

/* Remove subscription @id of @conn: 0 or -ENOENT. */
int migd_server_unsubscribe(struct migd_conn *conn, uint64_t id);

/*
 * Deliver @ev (kind and body set; subscription, seq and time filled here)
 * to every subscription that matches its kind, @vm and @mig_id (a
 * subscription's empty filter matches anything). @mig_final: the
 * migration reached its terminal phase; MigWatch subscriptions of it get
 * an END event after @ev and are removed.
 */
void migd_server_publish(struct migd_server *srv, Migd__Event *ev,
			 const char *vm, uint64_t mig_id, bool mig_final);

#endif
