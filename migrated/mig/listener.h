/* SPDX-License-Identifier: MIT */
/*
 * mig_listener: the destination's migration port, which anyone on the
 * network can reach. It hands out connections that completed the TLS
 * handshake (unless plain TCP was asked for) and sent a valid Hello the
 * caller wants; every other connection is dropped and logged, and none
 * can keep the port from the real migration:
 *
 * - connections are accepted as soon as they arrive, into a bounded set
 *   of pending ones driven without blocking on one thread, so the kernel's
 *   backlog never fills;
 * - a pending connection that has not finished the handshake and its
 *   Hello within handshake_ms is closed;
 * - at most max_pending are pending, at most max_per_peer from one
 *   address; a new connection over a bound evicts the oldest pending one
 *   (of that address, for the per-address bound) that has sent nothing
 *   yet, else the oldest. A real peer sends its ClientHello (or Hello) at
 *   once, so idle connections go first, however many there are;
 * - a connection whose Hello the caller does not want (another session, a
 *   repeated channel) is dropped, not an error of the wait.
 *
 * Threads: one thread at a time calls mig_listener_accept(); nothing is
 * accepted between calls (connections wait in the kernel's backlog).
 */
#ifndef MIG_LISTENER_H
#define MIG_LISTENER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "migrated/mig/conn.h"
#include "migrated/mig/handshake.h"

#define MIG_LISTENER_HANDSHAKE_MS_DEFAULT 5000u
#define MIG_LISTENER_PENDING_DEFAULT 64u
#define MIG_LISTENER_PER_PEER_DEFAULT 32u

struct mig_listener_cfg {
	struct mig_tls *tls;	  /* server side; NULL: plain TCP */
	unsigned handshake_ms;	  /* 0: ..._HANDSHAKE_MS_DEFAULT */
	unsigned max_pending;	  /* 0: ..._PENDING_DEFAULT */
	unsigned max_per_peer;	  /* 0: ..._PER_PEER_DEFAULT */
	unsigned io_ms;		  /* timeouts of the connections handed out */
	const atomic_bool *cancel; /* polled every 100 ms; may be NULL */
	/* mig_listener_accept_session(): non-NULL, only the control channel
	 * of this session (MIG_SESSION_ID_LEN bytes, the caller's, outliving
	 * the listener): a postcopy recovery waits for its own source. */
	const uint8_t *session_id;
};

/* What happened to the connections so far, for tests and logs. */
struct mig_listener_stats {
	uint64_t accepted;  /* by accept(2) */
	uint64_t handed;    /* returned by mig_listener_accept() */
	uint64_t timed_out; /* no handshake and Hello within handshake_ms */
	uint64_t evicted;   /* made room for a newer connection */
	uint64_t refused;   /* failed TLS or Hello, or not wanted */
};

struct mig_listener;

/*
 * Listen on numeric @host and @port (0: any) as mig_listen(). Returns 0,
 * -EINVAL, -ENOMEM or -errno. @cfg->tls stays the caller's and must
 * outlive the listener.
 */
int mig_listener_create(const char *host, uint16_t port,
			const struct mig_listener_cfg *cfg,
			struct mig_listener **out);

/* Closes the socket and every pending connection. NULL is ok. */
void mig_listener_destroy(struct mig_listener *l);

uint16_t mig_listener_port(const struct mig_listener *l);

/* Does the caller want a connection that sent Hello @hi? */
typedef bool (*mig_listener_want_fn)(void *arg,
				     const struct mig_hello_info *hi);

/*
 * Wait up to @wait_ms (0: no limit) for a connection whose Hello @want
 * accepts (NULL: any valid Hello). On success *@out is a blocking
 * connection with io_ms timeouts, owned by the caller, and *@hi its
 * Hello. Returns 0, -ETIMEDOUT, -ECANCELED (cfg->cancel became true) or
 * -errno of poll(2).
 */
int mig_listener_accept(struct mig_listener *l, unsigned wait_ms,
			mig_listener_want_fn want, void *arg,
			struct mig_conn **out, struct mig_hello_info *hi);

void mig_listener_get_stats(const struct mig_listener *l,
			    struct mig_listener_stats *out);

/* One session's channels, as mig_listener_accept_session() found them. */
struct mig_session_accept {
	uint8_t sid[MIG_SESSION_ID_LEN];
	uint32_t version; /* negotiated */
	unsigned nchan;	  /* data channels */
};

/*
 * Takes each connection as soon as it is the session's: @index -1 for the
 * control channel (already interruptible, mig_conn_set_interruptible()),
 * else the data channel's index. From then on @c is the caller's, to
 * close on failure too; it may be shut down from any thread.
 */
typedef void (*mig_listener_take_fn)(void *arg, int index,
				     struct mig_conn *c);

/*
 * The destination's half of a session's Hellos (handshake.h): wait with no
 * limit for a control channel, negotiate the version (a source with none
 * in common gets SetupRefuse REFUSE_VERSION), answer its Hello; then
 * accept its data channels, each within @data_ms, and answer theirs. A
 * data Hello of another session, or a repeated index, is dropped. Returns
 * 0 with *@out set, or the error, with what failed in @why: -ECANCELED
 * (cfg->cancel), -ETIMEDOUT, -EPROTONOSUPPORT or an I/O error.
 */
int mig_listener_accept_session(struct mig_listener *l, unsigned data_ms,
				mig_listener_take_fn take, void *arg,
				struct mig_session_accept *out, char *why,
				size_t why_len);

#endif
