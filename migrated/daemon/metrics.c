// SPDX-License-Identifier: MIT
/*
 * migd_metrics: Prometheus text over HTTP/1.1 (metrics.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/log.h"
#include "migrated/daemon/daemon.h"
#include "migrated/daemon/http_head.h"
#include "migrated/daemon/metrics.h"
#include "migrated/daemon/migration.h"
#include "migrated/daemon/monitor.h"

#define COMP "migd.metrics"
#define HEAD_MAX 8192u
#define SCRAPERS_MAX 64u
#define HEAD_TIMEOUT_MS 5000u

struct scrape;

struct migd_metrics {
	struct migd *d;
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

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void __attribute__((format(printf, 2, 3)))
put(struct buf *b, const char *fmt, ...)
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

static void family(struct buf *b, const char *name, const char *type,
		   const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values: VM names are [A-Za-z0-9._-] (parse.h), peers host:port;
 * escape anyway, as the format requires. */
static const char *esc(const char *s, char *out, size_t size)
{
	size_t o = 0;

	for (; *s && o + 3 < size; s++) {
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

static const char *const win_label[HV_DR_NR_WINDOWS] = {"1s", "10s", "60s"};

/*
 * One dirty-rate family (pages or bytes per second) for every VM: the
 * monitor's windows, or the running migration's own measurement.
 */
static void dirty_family(struct migd *d, struct buf *b, struct migd_dr_msg *dm,
			 const char *name, const char *help, bool bytes)
{
	char n[160];

	family(b, name, "gauge", help);
	for (struct migd_vm *v = d->reg.head; v; v = v->next) {
		migd_dirty_fill(d, v, dm);
		esc(v->name, n, sizeof(n));
		if (dm->s.n_windows == 0) {
			put(b, "%s{vm=\"%s\",window=\"migration\",source=\"%s\"} "
			       "%llu\n",
			    name, n, dm->s.source,
			    (unsigned long long)(bytes ? dm->s.bytes_per_s
						       : dm->s.pages_per_s));
			continue;
		}
		for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++)
			put(b,
			    "%s{vm=\"%s\",window=\"%s\",source=\"monitor\"} "
			    "%.1f\n",
			    name, n, win_label[w],
			    bytes ? dm->win[w].bytes_per_s
				  : dm->win[w].pages_per_s);
	}
}

static void render_vms(struct migd *d, struct buf *b, struct migd_dr_msg *dm)
{
	static const struct {
		Migd__VmState st;
		const char *name;
	} states[] = {
		{MIGD__VM_STATE__VM_STATE_CREATED, "created"},
		{MIGD__VM_STATE__VM_STATE_RUNNING, "running"},
		{MIGD__VM_STATE__VM_STATE_PAUSED, "paused"},
		{MIGD__VM_STATE__VM_STATE_MIGRATING, "migrating"},
		{MIGD__VM_STATE__VM_STATE_STOPPED, "stopped"},
		{MIGD__VM_STATE__VM_STATE_UNRESOLVED, "unresolved"},
	};
	char n[160];

	family(b, "migd_vms", "gauge", "VMs owned by this daemon, by state.");
	for (size_t i = 0; i < HV_ARRAY_SIZE(states); i++) {
		unsigned c = 0;

		for (struct migd_vm *v = d->reg.head; v; v = v->next)
			c += migd_vm_api_state(v) == states[i].st;
		put(b, "migd_vms{state=\"%s\"} %u\n", states[i].name, c);
	}
	family(b, "migd_vms_created_total", "counter",
	       "VMs created through the API since start.");
	put(b, "migd_vms_created_total %llu\n",
	    (unsigned long long)d->vms_created);

	dirty_family(d, b, dm, "migd_vm_dirty_pages_per_second",
		     "Pages dirtied per second (distinct per sample), by window.",
		     false);
	dirty_family(d, b, dm, "migd_vm_dirty_bytes_per_second",
		     "Bytes dirtied per second, by window.", true);
	family(b, "migd_vm_working_set_pages", "gauge",
	       "Distinct pages dirtied in the window.");
	for (struct migd_vm *v = d->reg.head; v; v = v->next) {
		migd_dirty_fill(d, v, dm);
		esc(v->name, n, sizeof(n));
		for (unsigned w = 0; w < dm->s.n_windows; w++)
			put(b,
			    "migd_vm_working_set_pages{vm=\"%s\","
			    "window=\"%s\"} %llu\n",
			    n, win_label[w],
			    (unsigned long long)dm->win[w].working_set_pages);
	}
	family(b, "migd_vcpu_dirty_pages_per_second", "gauge",
	       "Per-vCPU dirty pages per second (split estimated from the "
	       "guest's write counters).");
	for (struct migd_vm *v = d->reg.head; v; v = v->next) {
		migd_dirty_fill(d, v, dm);
		esc(v->name, n, sizeof(n));
		for (size_t i = 0; i < dm->s.n_vcpus; i++)
			for (unsigned w = 0; w < HV_DR_NR_WINDOWS; w++)
				put(b,
				    "migd_vcpu_dirty_pages_per_second{vm="
				    "\"%s\",vcpu=\"%zu\",window=\"%s\","
				    "estimated=\"%s\"} %.1f\n",
				    n, i, win_label[w],
				    dm->s.vcpu_split_estimated ? "true"
							       : "false",
				    dm->vc_rates[i][w]);
	}
}

static void render_migs(struct migd *d, struct buf *b)
{
	static const char *const phases[MIG_PHASE_COUNT] = {
		"invalid", "setup",	"iterate", "switchover",
		"commit",  "completed", "failed",  "cancelled",
		"unresolved",
	};
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
		{"migd_migration_phase", "gauge",
		 "1 for the migration's current phase."},
		{"migd_migration_iteration", "gauge", "Precopy iteration."},
		{"migd_migration_progress_ratio", "gauge",
		 "1 - remaining / RAM (1 when completed)."},
		{"migd_migration_bytes_wire", "counter",
		 "Bytes on the wire, compressed and framed."},
		{"migd_migration_pages_sent", "counter", "Pages sent."},
		{"migd_migration_remaining_bytes", "gauge",
		 "Dirty bytes left to send."},
		{"migd_migration_bandwidth_bytes_per_second", "gauge",
		 "Bandwidth of the last iteration."},
		{"migd_migration_dirty_bytes_per_second", "gauge",
		 "Dirty rate the engine measured in the last iteration."},
		{"migd_migration_downtime_seconds", "gauge",
		 "Downtime measured by the source (sum of its parts)."},
		{"migd_migration_guest_downtime_seconds", "gauge",
		 "Largest heartbeat gap the guest saw."},
	};
	char vm[160], peer[300];

	for (size_t f = 0; f < HV_ARRAY_SIZE(fams); f++) {
		family(b, fams[f].name, fams[f].type, fams[f].help);
		for (struct migd_mig *m = d->migs; m; m = m->next) {
			struct mig_progress p;
			const char *dir =
				m->dir == MIGD__MIG_DIRECTION__MIG_DIRECTION_OUTGOING
					? "outgoing"
					: "incoming";
			double v = 0;

			if (m->finished) {
				p = m->final;
			} else {
				pthread_mutex_lock(&m->lock);
				p = m->latest;
				pthread_mutex_unlock(&m->lock);
			}
			esc(m->vm, vm, sizeof(vm));
			esc(m->prm.host, peer, sizeof(peer));
			if (f == 0) {
				for (unsigned ph = 1; ph < MIG_PHASE_COUNT;
				     ph++)
					put(b,
					    "migd_migration_phase{id=\"%llu\","
					    "vm=\"%s\",direction=\"%s\","
					    "phase=\"%s\"} %d\n",
					    (unsigned long long)m->id, vm, dir,
					    phases[ph], p.phase == ph);
				continue;
			}
			switch (f) {
			case 1:
				v = p.iteration;
				break;
			case 2:
				v = p.phase == MIG_PHASE_COMPLETED ? 1
				    : p.ram_bytes
					    ? 1 - (double)p.remaining_bytes /
							      (double)p
								      .ram_bytes
					    : 0;
				if (v < 0)
					v = 0;
				break;
			case 3:
				v = (double)p.bytes_wire;
				break;
			case 4:
				v = (double)p.pages_sent;
				break;
			case 5:
				v = (double)p.remaining_bytes;
				break;
			case 6:
				v = (double)p.bandwidth;
				break;
			case 7:
				v = (double)p.dirty_rate;
				break;
			case 8:
				v = p.downtime.total_ns / 1e9;
				break;
			case 9:
				v = p.guest_downtime_ns / 1e9;
				break;
			}
			put(b,
			    "%s{id=\"%llu\",vm=\"%s\",direction=\"%s\","
			    "peer=\"%s\"} %.6g\n",
			    fams[f].name, (unsigned long long)m->id, vm, dir,
			    peer, v);
		}
	}
	family(b, "migd_migrations", "gauge",
	       "Migrations known (running and the last finished), by phase.");
	for (unsigned ph = 1; ph < MIG_PHASE_COUNT; ph++) {
		unsigned c = 0;

		for (struct migd_mig *m = d->migs; m; m = m->next)
			c += (m->finished ? m->final.phase : m->latest.phase) ==
			     ph;
		put(b, "migd_migrations{phase=\"%s\"} %u\n", phases[ph], c);
	}
	family(b, "migd_migration_errors_total", "counter",
	       "Outgoing migrations that failed (not cancelled).");
	put(b, "migd_migration_errors_total %llu\n",
	    (unsigned long long)d->mig_errors);
	family(b, "migd_migration_unresolved_total", "counter",
	       "Outgoing migrations whose commit had no answer (source VM "
	       "kept paused until resolved).");
	put(b, "migd_migration_unresolved_total %llu\n",
	    (unsigned long long)d->mig_unresolved);
	family(b, "migd_migration_verify_failures_total", "counter",
	       "Outgoing migrations whose post-commit verification found "
	       "pages that differ (also in migd_migration_errors_total).");
	put(b, "migd_migration_verify_failures_total %llu\n",
	    (unsigned long long)d->mig_verify_failures);
}

int migd_metrics_render(struct migd *d, char **out, size_t *len)
{
	struct buf b = {0};
	struct migd_dr_msg *dm = malloc(sizeof(*dm));

	if (!dm)
		return -ENOMEM;
	family(&b, "migd_up", "gauge", "1 while the daemon serves.");
	put(&b, "migd_up 1\n");
	family(&b, "migd_uptime_seconds", "gauge", "Seconds since start.");
	put(&b, "migd_uptime_seconds %.3f\n",
	    (migd_now_ns() - d->start_ns) / 1e9);
	render_vms(d, &b, dm);
	render_migs(d, &b);
	family(&b, "migd_rpc_connections", "gauge",
	       "Open control connections (Unix and TLS).");
	put(&b, "migd_rpc_connections %u\n", d->srv.nr_conns);
	family(&b, "migd_rpc_requests_total", "counter",
	       "Control requests served.");
	put(&b, "migd_rpc_requests_total %llu\n",
	    (unsigned long long)d->srv.requests);
	family(&b, "migd_rpc_tls_refused_total", "counter",
	       "TLS handshakes refused (no, foreign or expired certificate).");
	put(&b, "migd_rpc_tls_refused_total %llu\n",
	    (unsigned long long)d->srv.tls_refused);
	family(&b, "migd_rpc_timeouts_total", "counter",
	       "TCP control connections closed by a deadline: before the TLS "
	       "handshake completed, or idle without a subscription.");
	put(&b, "migd_rpc_timeouts_total{kind=\"handshake\"} %llu\n",
	    (unsigned long long)d->srv.handshake_timeouts);
	put(&b, "migd_rpc_timeouts_total{kind=\"idle\"} %llu\n",
	    (unsigned long long)d->srv.idle_timeouts);
	free(dm);
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

static void respond(struct scrape *s, int code, const char *reason,
		    const char *body, size_t blen)
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
		      "Connection: close\r\n\r\n",
		      code, reason, blen);
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
	[MIGD_HTTP_BAD_METHOD] = {405, "Method Not Allowed", "GET only\n"},
	[MIGD_HTTP_TOO_LARGE] = {431, "Request Header Fields Too Large", ""},
};

static void handle_request(struct scrape *s, enum migd_http_verdict v)
{
	char *text;
	size_t len;

	if (v != MIGD_HTTP_METRICS) {
		respond(s, refusals[v].code, refusals[v].reason,
			refusals[v].body, strlen(refusals[v].body));
		return;
	}
	if (migd_metrics_render(s->m->d, &text, &len)) {
		respond(s, 500, "Internal Server Error", "out of memory\n", 14);
		return;
	}
	s->m->served++;
	respond(s, 200, "OK", text, len);
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

int migd_metrics_start(struct migd *d, const char *host, uint16_t port,
		       uint16_t *port_out, struct migd_metrics **out)
{
	struct migd_metrics *m;
	struct sockaddr_storage ss;
	int namelen = sizeof(ss);
	int ret;

	if (!host || !*host)
		host = "127.0.0.1";
	if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) &&
	    uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss))
		return -EINVAL;
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
