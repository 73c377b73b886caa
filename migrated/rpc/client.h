/* SPDX-License-Identifier: MIT */
/*
 * migd_client: a blocking client of the daemon's control RPC
 * (proto/control.proto, framing in migrated/rpc/ctl_frame.h), for the
 * tools. One connection, one thread: the Unix socket, or TCP with TLS 1.3
 * and mutual authentication (the context comes from migrated/mig/tls.h,
 * the same one migration channels use).
 *
 * migd_client_call() sends a Request and reads until the Response with
 * the same id arrives; Events read meanwhile are queued (at most
 * MIGD_CLIENT_EVENTS_MAX, then the oldest is dropped and counted) and
 * handed out by migd_client_next_event().
 */
#ifndef MIGD_CLIENT_H
#define MIGD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/control.pb-c.h"

#define MIGD_CLIENT_EVENTS_MAX 4096

struct migd_client;

/* The system service's control socket (tools/systemd/migrated.conf). */
#define MIGD_SYSTEM_SOCKET "/run/migrated/control.sock"

/*
 * The socket a tool reaches without --socket, first that applies:
 * $MIGRATED_SOCKET; $MIGRATED_STATE_DIR/control.sock; the system
 * service's MIGD_SYSTEM_SOCKET when it exists; else the per-user daemon's
 * ($XDG_RUNTIME_DIR/migrated or /tmp/migrated-UID, as a daemon started
 * by that user without --state-dir). 0 or -ENAMETOOLONG.
 */
int migd_client_default_socket(char *buf, size_t size);

/*
 * Connect to the daemon's socket @path (NULL: migd_client_default_socket()).
 * 0, or -ENOENT (no socket there), -ECONNREFUSED (no daemon behind it),
 * -EACCES, -ENAMETOOLONG, -ENOMEM. *@out untouched on failure.
 */
int migd_client_connect(const char *path, struct migd_client **out);
void migd_client_close(struct migd_client *c);

/* Client TLS material: PEM files; the key must match the certificate. */
struct migd_client_tls {
	const char *ca_file;   /* CA the daemon's certificate must chain to */
	const char *cert_file; /* our certificate, from the daemon's CA */
	const char *key_file;
	bool check_name;       /* the daemon's certificate must name @host */
};

/*
 * Connect to a daemon's --rpc-listen @host:@port and complete the TLS
 * handshake within @timeout_ms (< 0: no limit). 0, -ENOENT (TLS files),
 * -EHOSTUNREACH, -ECONNREFUSED, -EKEYREJECTED (the daemon's certificate
 * failed verification), -ECONNRESET (handshake failed), -ETIMEDOUT.
 * With TLS 1.3 the daemon checks OUR certificate after the client's
 * handshake completed: a refusal then shows as -ECONNRESET or -EPIPE on
 * the first call.
 */
int migd_client_connect_tls(const char *host, uint16_t port,
			    const struct migd_client_tls *t, int timeout_ms,
			    struct migd_client **out);

/*
 * Send @req (its id is set here when 0) and wait up to @timeout_ms (< 0:
 * forever) for its Response, returned in *@resp (free with
 * migd__response__free_unpacked(*resp, NULL)). 0 even when the daemon
 * refused the call (look at resp->error); -ETIMEDOUT, -EPIPE (daemon
 * gone), -EPROTO (malformed answer), -ENOMEM.
 */
int migd_client_call(struct migd_client *c, Migd__Request *req,
		     int timeout_ms, Migd__Response **resp);

/*
 * Next event, queued or read within @timeout_ms (< 0: forever). Free with
 * migd__event__free_unpacked(*ev, NULL). 0, -ETIMEDOUT, -EPIPE, -EPROTO.
 */
int migd_client_next_event(struct migd_client *c, int timeout_ms,
			   Migd__Event **ev);

/* Events dropped because the queue was full. */
uint64_t migd_client_events_dropped(const struct migd_client *c);

/* Status of a response (OK when no error is set). */
Migd__Status migd_resp_status(const Migd__Response *r);
const char *migd_resp_message(const Migd__Response *r);
/* "STATUS_NOT_FOUND" -> "not found". */
const char *migd_status_text(Migd__Status st);

/* The process exit code a tool uses for a refused call: 1 for most, 2
 * for INVALID_ARGUMENT, 3 for NOT_FOUND, 4 for UNAVAILABLE, 8 for
 * PERMISSION_DENIED. */
int migd_status_exit_code(Migd__Status st);

#endif
