// SPDX-License-Identifier: MIT
/*
 * migd_metrics: Prometheus text over HTTP/1.1 (metrics.h); the VM, worker
 * and migration families are metrics_host.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/host/daemon.h"
#include "migrated/rpc/http_head.h"
#include "migrated/host/metrics.h"
#include "migrated/host/metrics_priv.h"
#include "migrated/mig/addr.h"

#define COMP "migd.metrics"
#define HEAD_MAX 8192u
#define SCRAPERS_MAX 64u
#define HEAD_TIMEOUT_MS 5000u

struct scrape;

struct migd_metrics {
	struct migd_host *d;
	uv_tcp_t listener;
	struct scrape *scrapes;
	unsigned nr;
	uint64_t served;
};

struct scrape {
	uv_tcp_t tcp; /* first */
	uv_timer_t timer;
	struct migd_metrics *m;
	struct scrape *next;
	char head[HEAD_MAX];
	size_t len;
	bool responded;
	bool closing;
	int handles; /* open handles left to close */
};

/* ---- text builder ------------------------------------------------------ */

void migd__mput(struct migd_mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap + (size_t)n + 1) * 2;
			char *p = realloc(b->p, cap);

			if (!p) {
				b->oom = true;
				return;
			}
			b->p = p;
			b->cap = cap;
		}
	}
}

void migd__mfamily(struct migd_mbuf *b, const char *name, const char *type,
		   const char *help)
{
	migd__mput(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values: VM names are [A-Za-z0-9._-] (parse.h), peers host:port;
 * escape anyway, as the format requires. */
const char *migd__mesc(const char *s, char *out, size_t size)
{
	size_t o = 0;

	for (; s && *s && o + 3 < size; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	return out;
}

const char *migd__mnum(double v, char *out)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, MIGD_NUM_MAX, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			break;
	}
	return out;
}

int migd_metrics_render(struct migd_host *d, char **out, size_t *len)
{
	struct migd_mbuf b = {0};
	char v[MIGD_NUM_MAX];

	migd__mfamily(&b, "migd_up", "gauge", "1 while the daemon serves.");
	migd__mput(&b, "migd_up 1\n");
	migd__mfamily(&b, "migd_uptime_seconds", "gauge",
		      "Seconds since start.");
	migd__mput(&b, "migd_uptime_seconds %s\n",
		   migd__mnum((hv_now_ns() - d->start_ns) / 1e9, v));
	migd__metrics_vms(d, &b);
	migd__metrics_workers(d, &b);
	migd__metrics_migs(d, &b);
	migd__mfamily(&b, "migd_rpc_connections", "gauge",
		      "Open control connections (Unix and TLS).");
	migd__mput(&b, "migd_rpc_connections %u\n", d->srv.nr_conns);
	migd__mfamily(&b, "migd_rpc_requests_total", "counter",
		      "Control requests served.");
	migd__mput(&b, "migd_rpc_requests_total %llu\n",
		   (unsigned long long)d->srv.requests);
	migd__mfamily(&b, "migd_rpc_tls_refused_total", "counter",
		      "TLS handshakes refused (no, foreign or expired "
		      "certificate).");
	migd__mput(&b, "migd_rpc_tls_refused_total %llu\n",
		   (unsigned long long)d->srv.tls_refused);
	migd__mfamily(&b, "migd_rpc_timeouts_total", "counter",
		      "TCP control connections closed by a deadline: before "
		      "the TLS handshake completed, or idle without a "
		      "subscription.");
	migd__mput(&b, "migd_rpc_timeouts_total{kind=\"handshake\"} %llu\n",
		   (unsigned long long)d->srv.handshake_timeouts);
	migd__mput(&b, "migd_rpc_timeouts_total{kind=\"idle\"} %llu\n",
		   (unsigned long long)d->srv.idle_timeouts);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

/* ---- HTTP -------------------------------------------------------------- */

struct http_write {
	uv_write_t req;
	char *buf;
};

static void scrape_handle_closed(uv_handle_t *h)
{
	struct scrape *s = h->data;

	if (--s->handles == 0)
		free(s);
}

static void scrape_close(struct scrape *s)
{
	struct migd_metrics *m = s->m;

	if (s->closing)
		return;
	s->closing = true;
	for (struct scrape **pp = &m->scrapes; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			m->nr--;
			break;
		}
	}
	uv_close((uv_handle_t *)&s->timer, scrape_handle_closed);
	uv_close((uv_handle_t *)&s->tcp, scrape_handle_closed);
}

static void http_written(uv_write_t *req, int status)
{
	struct http_write *w = (struct http_write *)req;
	struct scrape *s = req->handle->data;

	free(w->buf);
	free(w);
	(void)status;
	scrape_close(s);
}

/* The status line and headers, then @body unless @head_only (HEAD: the
 * headers of the GET, Content-Length included, and no body). */
static void respond(struct scrape *s, int code, const char *reason,
		    const char *body, size_t blen, bool head_only)
{
	struct http_write *w = calloc(1, sizeof(*w));
	char head[256];
	int hl;
	uv_buf_t bufs[1];

	s->responded = true;
	uv_read_stop((uv_stream_t *)&s->tcp);
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\n"
		      "Content-Type: text/plain; version=0.0.4; "
		      "charset=utf-8\r\n"
		      "Content-Length: %zu\r\n"
		      "%s"
		      "Connection: close\r\n\r\n",
		      code, reason, blen,
		      code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (head_only)
		blen = 0;
	if (!w || !(w->buf = malloc((size_t)hl + blen))) {
		free(w);
		scrape_close(s);
		return;
	}
	memcpy(w->buf, head, (size_t)hl);
	memcpy(w->buf + hl, body, blen);
	bufs[0] = uv_buf_init(w->buf, (unsigned)((size_t)hl + blen));
	if (uv_write(&w->req, (uv_stream_t *)&s->tcp, bufs, 1, http_written)) {
		free(w->buf);
		free(w);
		scrape_close(s);
	}
}

/* The answers that are not the exposition, by verdict. */
static const struct {
	int code;
	const char *reason, *body;
} refusals[] = {
	[MIGD_HTTP_NOT_FOUND] = {404, "Not Found", "try /metrics\n"},
	[MIGD_HTTP_BAD_METHOD] = {405, "Method Not Allowed",
				  "GET or HEAD only\n"},
	[MIGD_HTTP_TOO_LARGE] = {431, "Request Header Fields Too Large", ""},
};

static void handle_request(struct scrape *s, enum migd_http_verdict v)
{
	char *text;
	size_t len;

	bool head = v == MIGD_HTTP_METRICS_HEAD;

	if (v != MIGD_HTTP_METRICS && !head) {
		respond(s, refusals[v].code, refusals[v].reason,
			refusals[v].body, strlen(refusals[v].body), false);
		return;
	}
	if (migd_metrics_render(s->m->d, &text, &len)) {
		respond(s, 500, "Internal Server Error", "out of memory\n", 14,
			head);
		return;
	}
	s->m->served++;
	respond(s, 200, "OK", text, len, head);
	free(text);
}

static void scrape_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct scrape *s = h->data;

	(void)hint;
	buf->base = s->head + s->len;
	buf->len = HEAD_MAX - 1 - s->len;
}

static void scrape_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct scrape *s = st->data;
	enum migd_http_verdict v;

	(void)buf;
	if (s->responded || s->closing)
		return;
	if (n < 0) {
		scrape_close(s);
		return;
	}
	s->len += (size_t)n;
	v = migd_http_head_parse(s->head, s->len, HEAD_MAX - 1);
	if (v != MIGD_HTTP_MORE)
		handle_request(s, v);
}

static void scrape_timeout(uv_timer_t *t)
{
	scrape_close(t->data);
}

static void metrics_accept(uv_stream_t *l, int status)
{
	struct migd_metrics *m = l->data;
	struct scrape *s;

	if (status < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->m = m;
	uv_tcp_init(m->d->loop, &s->tcp);
	uv_timer_init(m->d->loop, &s->timer);
	s->tcp.data = s;
	s->timer.data = s;
	s->handles = 2;
	s->next = m->scrapes;
	m->scrapes = s;
	m->nr++;
	if (uv_accept(l, (uv_stream_t *)&s->tcp) || m->nr > SCRAPERS_MAX) {
		scrape_close(s);
		return;
	}
	uv_timer_start(&s->timer, scrape_timeout, HEAD_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)&s->tcp, scrape_alloc, scrape_read))
		scrape_close(s);
}

static void listener_closed(uv_handle_t *h)
{
	free(h->data);
}

int migd_metrics_start(struct migd_host *d, const char *host, uint16_t port,
		       uint16_t *port_out, struct migd_metrics **out)
{
	struct migd_metrics *m;
	struct sockaddr_storage ss;
	struct mig_addr a;
	int namelen = sizeof(ss);
	int ret;

	if (!host || !*host)
		host = "127.0.0.1";
	/* An address, or a host name (its first address). */
	ret = mig_addr_resolve(host, port, true, &a, 1);
	if (ret < 0)
		return -EINVAL;
	ss = a.ss;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->d = d;
	uv_tcp_init(d->loop, &m->listener);
	m->listener.data = m;
	ret = uv_tcp_bind(&m->listener, (struct sockaddr *)&ss, 0);
	if (!ret)
		ret = uv_listen((uv_stream_t *)&m->listener, 64,
				metrics_accept);
	if (!ret)
		ret = uv_tcp_getsockname(&m->listener, (struct sockaddr *)&ss,
					 &namelen);
	if (ret) {
		uv_close((uv_handle_t *)&m->listener, listener_closed);
		return ret;
	}
	*port_out = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	hv_info(COMP, "event=listening addr=%s:%u path=/metrics", host,
		*port_out);
	*out = m;
	return 0;
}

void migd_metrics_stop(struct migd_metrics *m)
{
	if (!m)
		return;
	while (m->scrapes)
		scrape_close(m->scrapes);
	hv_info(COMP, "event=stopped scrapes=%llu",
		(unsigned long long)m->served);
	uv_close((uv_handle_t *)&m->listener, listener_closed);
}
