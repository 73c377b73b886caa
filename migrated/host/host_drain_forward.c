// SPDX-License-Identifier: MIT
/*
 * migd_drain_forward: a host drain call naming another host of the fleet
 * goes to that host's daemon (host_drain_priv.h). Its address comes from
 * the host's record in etcd (drain_route.h); the call is sent over TCP +
 * mutual TLS with this daemon's TLS files, the way the drain calls its
 * destinations, from a libuv thread-pool thread so that the loop goes
 * on; the answer is returned as it came (deferred call, server.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "hvcore/log.h"
#include "migrated/host/daemon.h"
#include "migrated/host/drain_route.h"
#include "migrated/host/host_drain_priv.h"
#include "migrated/host/host_fleet.h"
#include "migrated/fleet/fleet.h"
#include "migrated/rpc/client.h"

#define COMP "migd.drain"
#define CONNECT_MS 5000
#define CALL_MS 20000

struct fwd {
	uv_work_t work;
	struct migd_defer *df;
	Migd__Request *req; /* owned copy, forwarded flag set */
	Migd__Response *resp;
	int ret;
	char host[MIGD_DRAIN_ID_MAX + 1];
	char addr[MIGD_HOST_MAX + 1];
	char text[MIGD_HOST_MAX + 16];
	uint16_t port;
	char ca[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16];
};

/* Thread pool: connect, call, close. */
static void fwd_work(uv_work_t *w)
{
	struct fwd *fw = w->data;
	struct migd_client_tls t = { .ca_file = fw->ca,
				     .cert_file = fw->cert,
				     .key_file = fw->key };
	struct migd_client *c = NULL;

	fw->ret = migd_client_connect_tls(fw->addr, fw->port, &t, CONNECT_MS,
					  &c);
	if (!fw->ret)
		fw->ret = migd_client_call(c, fw->req, CALL_MS, &fw->resp);
	migd_client_close(c);
}

/* The peer's refusal names the peer, so that the client knows who. */
static void name_peer(struct fwd *fw)
{
	Migd__Error *e = fw->resp->error;
	size_t n;
	char *m;

	if (!e || e->status == MIGD__STATUS__STATUS_OK)
		return;
	n = strlen(fw->host) + strlen(fw->text) +
	    (e->message ? strlen(e->message) : 0) + 16;
	m = malloc(n);
	if (!m)
		return;
	snprintf(m, n, "host '%s' (%s): %s", fw->host, fw->text,
		 e->message ? e->message : "");
	free(e->message);
	e->message = m;
}

/* Loop thread: answer the client. */
static void fwd_done(uv_work_t *w, int status)
{
	struct fwd *fw = w->data;

	if (status && !fw->ret)
		fw->ret = status == UV_ECANCELED ? -ECANCELED : status;
	if (fw->ret) {
		hv_warn(COMP, "event=drain_forward_failed host=%s rpc=%s "
			"err=\"%s\"", fw->host, fw->text, strerror(-fw->ret));
		migd_defer_fail(fw->df, MIGD__STATUS__STATUS_UNAVAILABLE,
				"cannot reach the daemon of host '%s' at %s: "
				"%s", fw->host, fw->text, strerror(-fw->ret));
	} else {
		hv_info(COMP, "event=drain_forwarded host=%s rpc=%s "
			"status=%d", fw->host, fw->text,
			(int)migd_resp_status(fw->resp));
		name_peer(fw);
		migd_defer_finish(fw->df, fw->resp);
		migd__response__free_unpacked(fw->resp, NULL);
	}
	migd__request__free_unpacked(fw->req, NULL);
	free(fw);
}

/* A copy of the call's request, marked forwarded. */
static Migd__Request *fwd_request(const Migd__Request *r)
{
	size_t len = migd__request__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);
	Migd__Request *q;

	if (!buf)
		return NULL;
	migd__request__pack(r, buf);
	q = migd__request__unpack(NULL, len, buf);
	free(buf);
	if (!q)
		return NULL;
	q->id = 0;
	switch (q->call_case) {
	case MIGD__REQUEST__CALL_HOST_DRAIN:
		q->host_drain->forwarded = true;
		break;
	case MIGD__REQUEST__CALL_HOST_DRAIN_CANCEL:
		q->host_drain_cancel->forwarded = true;
		break;
	case MIGD__REQUEST__CALL_HOST_UNDRAIN:
		q->host_undrain->forwarded = true;
		break;
	default:
		break;
	}
	return q;
}

/* Look @host up and fill @fw's address; false: @call failed. */
static bool route(struct migd_call *call, const char *host, struct fwd *fw)
{
	struct migd_host *d = migd_host_of(call);
	struct migd_etcd_kvs kvs = { 0 };
	char err[512];
	int ret;

	ret = migd_fleet_list(migd_host_fleet_keys(d), false, &kvs, err,
			      sizeof(err));
	if (ret) {
		migd_call_fail(call, MIGD__STATUS__STATUS_UNAVAILABLE,
			       "cannot read the fleet's hosts to reach host "
			       "'%s': %s", host, err);
		return false;
	}
	ret = migd_drain_route(&kvs, host, d->srv.tcp_listening
					   ? d->srv.tcp_addr : "",
			       fw->addr, sizeof(fw->addr), &fw->port,
			       fw->text, sizeof(fw->text));
	migd_etcd_kvs_free(&kvs);
	if (ret == -ENOENT)
		migd_call_fail(call, MIGD__STATUS__STATUS_NOT_FOUND,
			       "no host '%s' is registered in the fleet",
			       host);
	else if (ret == -ELOOP)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "host '%s''s record names this daemon's "
			       "address %s (a stale record: that host is "
			       "gone)", host, fw->text);
	else if (ret)
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "host '%s' has no control RPC address in its "
			       "record ('%s'): its daemon needs --rpc-listen",
			       host, fw->text);
	return !ret;
}

bool migd_drain_forward(struct migd_call *call, const char *host,
			bool forwarded)
{
	struct migd_host *d = migd_host_of(call);
	const char *id = migd_host_fleet_id(d);
	struct fwd *fw;
	int ret;

	if (!host || !host[0] || (id && !strcmp(host, id)))
		return false;
	if (!id) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "this daemon is not in a fleet (--etcd): it "
			       "knows no host '%s'", host);
		return true;
	}
	if (forwarded) {
		migd_call_fail(call, MIGD__STATUS__STATUS_INVALID_ARGUMENT,
			       "a call forwarded to host '%s' reached host "
			       "'%s' (the fleet's record of '%s' names this "
			       "daemon's address)", host, id, host);
		return true;
	}
	if (!d->tls_ready) {
		migd_call_fail(call, MIGD__STATUS__STATUS_FAILED_PRECONDITION,
			       "no TLS files (--tls-dir or --dev-tls): the "
			       "call for host '%s' goes to its daemon over "
			       "mutual TLS", host);
		return true;
	}
	fw = calloc(1, sizeof(*fw));
	if (!fw) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		return true;
	}
	snprintf(fw->host, sizeof(fw->host), "%s", host);
	if (!route(call, host, fw)) {
		free(fw);
		return true;
	}
	fw->req = fwd_request(call->req);
	if (!fw->req) {
		migd_call_fail(call, MIGD__STATUS__STATUS_RESOURCE_EXHAUSTED,
			       "out of memory");
		free(fw);
		return true;
	}
	snprintf(fw->ca, sizeof(fw->ca), "%s", d->tls_ca);
	snprintf(fw->cert, sizeof(fw->cert), "%s", d->tls_cert);
	snprintf(fw->key, sizeof(fw->key), "%s", d->tls_key);
	fw->work.data = fw;
	fw->df = migd_call_defer(call);
	if (!fw->df)
		goto fail;
	ret = uv_queue_work(d->loop, &fw->work, fwd_work, fwd_done);
	if (ret) {
		migd_defer_fail(fw->df, MIGD__STATUS__STATUS_INTERNAL,
				"cannot queue the call for host '%s': %s",
				host, uv_strerror(ret));
		goto fail;
	}
	hv_info(COMP, "event=drain_forward host=%s rpc=%s call=%d", host,
		fw->text, (int)call->req->call_case);
	return true;
fail:
	migd__request__free_unpacked(fw->req, NULL);
	free(fw);
	return true;
}
