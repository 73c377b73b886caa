// SPDX-License-Identifier: MIT
/*
 * migd_host: workers -- spawn, records, connection, events, exit (host.h).
 * Re-adoption at start-up is in host_adopt.c, the calls in host_calls.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_fleet.h"
#include "migrated/host/host_priv.h"

#define COMP "migd.host"
#define READ_CHUNK (64u << 10)

void *migd_msg_dup(const ProtobufCMessage *m,
		   const ProtobufCMessageDescriptor *desc)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	void *copy;

	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	copy = protobuf_c_message_unpack(desc, NULL, n, buf);
	free(buf);
	return copy;
}

/* ---- lookup ------------------------------------------------------------ */

struct migd_worker *migd_host_find(struct migd_host *d, const char *name)
{
	if (!name || !*name)
		return NULL;
	for (struct migd_worker *w = d->sup->workers; w; w = w->next)
		if (!w->retired && !w->vm_gone && !strcmp(w->name, name))
			return w;
	return NULL;
}

struct migd_worker *migd_host_find_wid(struct migd_host *d, uint64_t wid)
{
	for (struct migd_worker *w = d->sup->workers; w; w = w->next)
		if (w->wid == wid)
			return w;
	return NULL;
}

bool migd_host_name_taken(struct migd_host *d, const char *name)
{
	return migd_host_find(d, name) != NULL;
}

/* ---- records ----------------------------------------------------------- */

int migd__proc_start_time(int pid, uint64_t *out)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields start after the last
	 * ')'; that is field 3 (state), the start time is field 22. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	p++;
	for (field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &v) != 1)
		return -EIO;
	*out = v;
	return 0;
}

int migd__record_write(struct migd_worker *w)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", w->rec);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	/* vm: the VM it runs (a crash of it is reported); reserved: a name
	 * held for a VM still arriving (nothing to report if it dies). */
	fprintf(f, "wid=%llu\npid=%d\nstart_time=%llu\nsocket=%s\nvm=%s\n"
		   "reserved=%s\ncrashed=%s\n",
		(unsigned long long)w->wid, w->pid,
		(unsigned long long)w->start_time, w->sock,
		w->has_vm ? w->name : "", w->has_vm ? "" : w->name,
		w->crashed ? w->exit_reason : "");
	if (fclose(f) || rename(tmp, w->rec)) {
		unlink(tmp);
		return -errno;
	}
	return 0;
}

static void paths(struct migd_host *d, uint64_t wid, struct migd_worker *w)
{
	snprintf(w->sock, sizeof(w->sock), "%.80s/%llu.sock", d->sup->vms_dir,
		 (unsigned long long)wid);
	snprintf(w->rec, sizeof(w->rec), "%.4000s/%llu.rec", d->sup->vms_dir,
		 (unsigned long long)wid);
}

struct migd_worker *migd__worker_new(struct migd_host *d, uint64_t wid)
{
	struct migd_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->d = d;
	w->wid = wid;
	w->reqs_tail = &w->reqs;
	paths(d, wid, w);
	migd_framer_init(&w->framer, MIGD_FRAME_MAX);
	w->next = d->sup->workers;
	d->sup->workers = w;
	d->sup->nr_workers++;
	if (wid >= d->sup->next_wid)
		d->sup->next_wid = wid + 1;
	return w;
}

static void fail_pending(struct migd_worker *w);

static void worker_free_maybe(struct migd_worker *w)
{
	if (!w->unlinked || w->handles)
		return;
	migd_framer_fini(&w->framer);
	if (w->info)
		migd__vm_info__free_unpacked(w->info, NULL);
	if (w->dr)
		migd__dirty_rate_sample__free_unpacked(w->dr, NULL);
	free(w);
}

static void handle_closed(uv_handle_t *h)
{
	struct migd_worker *w = h->data;

	w->handles--;
	worker_free_maybe(w);
}

static void close_conn(struct migd_worker *w)
{
	if (w->pipe_open && !uv_is_closing((uv_handle_t *)&w->pipe))
		uv_close((uv_handle_t *)&w->pipe, handle_closed);
	w->pipe_open = false;
}

/* Unlink @w from the table and free it once its handles closed. The
 * process (if a child) is not killed: it is no longer ours to watch. */
static void worker_unlink(struct migd_worker *w)
{
	struct migd_supervisor *h = w->d->sup;

	for (struct migd_worker **pp = &h->workers; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			h->nr_workers--;
			break;
		}
	}
	w->unlinked = true;
	close_conn(w);
	if (w->proc_open && !uv_is_closing((uv_handle_t *)&w->proc))
		uv_close((uv_handle_t *)&w->proc, handle_closed);
	w->proc_open = false;
	worker_free_maybe(w);
}

void migd__worker_detach(struct migd_worker *w)
{
	fail_pending(w);
	worker_unlink(w);
}

void migd_host_remove(struct migd_worker *w)
{
	unlink(w->rec);
	worker_unlink(w);
}

/* ---- requests ---------------------------------------------------------- */

static void fail_pending(struct migd_worker *w)
{
	while (w->reqs) {
		struct migd_wreq *r = w->reqs;

		w->reqs = r->next;
		if (!w->reqs)
			w->reqs_tail = &w->reqs;
		r->cb(w, NULL, r->arg);
		free(r);
	}
}

static void write_done(uv_write_t *req, int status)
{
	free(req->data);
	free(req);
}

int migd_worker_call(struct migd_worker *w, Migd__Request *req,
		     migd_wcall_cb cb, void *arg)
{
	struct migd_wreq *r;
	uv_write_t *wr;
	uint8_t *buf;
	size_t len;
	uv_buf_t b;
	int ret;

	if (w->conn_lost || !w->pipe_open)
		return -EPIPE;
	r = calloc(1, sizeof(*r));
	wr = calloc(1, sizeof(*wr));
	if (!r || !wr) {
		free(r);
		free(wr);
		return -ENOMEM;
	}
	req->id = ++w->next_req;
	ret = migd_frame_pack(&req->base, MIGD_FRAME_MAX, &buf, &len);
	if (ret) {
		free(r);
		free(wr);
		return ret;
	}
	r->id = req->id;
	r->cb = cb;
	r->arg = arg;
	/* Before connect completes libuv queues the write. */
	b = uv_buf_init((char *)buf, (unsigned)len);
	wr->data = buf;
	ret = uv_write(wr, (uv_stream_t *)&w->pipe, &b, 1, write_done);
	if (ret) {
		free(buf);
		free(wr);
		free(r);
		return -EPIPE;
	}
	*w->reqs_tail = r;
	w->reqs_tail = &r->next;
	return 0;
}

/* ---- exit -------------------------------------------------------------- */

static void describe_exit(struct migd_worker *w, char *out, size_t n)
{
	if (!w->child)
		snprintf(out, n, "its worker (pid %d) exited while adopted "
				 "(not our child: no exit status)", w->pid);
	else if (w->term_signal)
		snprintf(out, n, "its worker (pid %d) was killed by signal %d "
				 "(%s)",
			 w->pid, w->term_signal, strsignal(w->term_signal));
	else
		snprintf(out, n, "its worker (pid %d) exited with status %lld",
			 w->pid, (long long)w->exit_status);
}

/* The worker is gone (its connection closed and, if a child, it was
 * reaped). A VM it still ran crashed with it. */
static void worker_gone(struct migd_worker *w)
{
	struct migd_host *d = w->d;

	if (w->unlinked)
		return;
	fail_pending(w);
	if (w->xfer[0])
		unlink(w->xfer);
	migd__host_update_lost(w);
	if (!w->has_vm || w->vm_gone || w->retired || !w->name[0]) {
		hv_info(COMP, "event=worker_exited wid=%llu pid=%d vm=%s",
			(unsigned long long)w->wid, w->pid,
			w->name[0] ? w->name : "-");
		migd_host_remove(w);
		return;
	}
	w->crashed = true;
	describe_exit(w, w->exit_reason, sizeof(w->exit_reason));
	d->sup->crashes++;
	hv_err(COMP, "event=vm_crashed vm=%s wid=%llu why=\"%s\"", w->name,
	       (unsigned long long)w->wid, w->exit_reason);
	migd__record_write(w);
	close_conn(w);
	migd__host_vm_crashed(w);
}

static void conn_lost(struct migd_worker *w, const char *why)
{
	if (w->conn_lost)
		return;
	w->conn_lost = true;
	hv_dbg(COMP, "event=worker_conn_lost wid=%llu why=%s",
	       (unsigned long long)w->wid, why);
	fail_pending(w);
	close_conn(w);
	/* A child is judged once reaped (its exit status says how it went);
	 * an adopted worker when its connection goes. */
	if (!w->child || w->exited)
		worker_gone(w);
}

static void exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct migd_worker *w = p->data;

	w->exited = true;
	w->exit_status = status;
	w->term_signal = sig;
	if (w->conn_lost || !w->connected)
		worker_gone(w);
	else
		conn_lost(w, "exited");
}

/* ---- reading ----------------------------------------------------------- */

static void on_message(struct migd_worker *w, const uint8_t *msg, uint32_t len)
{
	Migd__ServerMessage *sm = migd__server_message__unpack(NULL, len, msg);

	if (!sm) {
		hv_warn(COMP, "event=worker_bad_message wid=%llu len=%u",
			(unsigned long long)w->wid, len);
		return;
	}
	if (sm->msg_case == MIGD__SERVER_MESSAGE__MSG_RESPONSE) {
		struct migd_wreq *r = w->reqs;

		if (!r || r->id != sm->response->id) {
			hv_warn(COMP, "event=worker_stray_response wid=%llu "
				      "id=%llu",
				(unsigned long long)w->wid,
				(unsigned long long)sm->response->id);
		} else {
			w->reqs = r->next;
			if (!w->reqs)
				w->reqs_tail = &w->reqs;
			r->cb(w, sm->response, r->arg);
			free(r);
		}
	} else if (sm->msg_case == MIGD__SERVER_MESSAGE__MSG_EVENT) {
		migd__host_event(w, sm->event);
	}
	migd__server_message__free_unpacked(sm, NULL);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	buf->base = malloc(READ_CHUNK);
	buf->len = buf->base ? READ_CHUNK : 0;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct migd_worker *w = s->data;
	const uint8_t *msg;
	uint32_t len;
	int ret;

	if (n < 0) {
		free(buf->base);
		conn_lost(w, n == UV_EOF ? "eof" : uv_err_name((int)n));
		return;
	}
	ret = migd_framer_feed(&w->framer, buf->base, (size_t)n);
	free(buf->base);
	while (!ret && !w->conn_lost && !w->unlinked &&
	       (ret = migd_framer_next(&w->framer, &msg, &len)) == 1) {
		on_message(w, msg, len);
		ret = 0;
	}
	if (ret < 0 && !w->conn_lost)
		conn_lost(w, "bad frame");
}

static void subscribed(struct migd_worker *w, Migd__Response *resp, void *arg)
{
	if (resp && resp->error &&
	    resp->error->status != MIGD__STATUS__STATUS_OK)
		hv_warn(COMP, "event=worker_subscribe_failed wid=%llu msg=%s",
			(unsigned long long)w->wid, resp->error->message);
}

static void connect_cb(uv_connect_t *req, int status)
{
	struct migd_worker *w = req->data;

	if (status) {
		hv_warn(COMP, "event=worker_connect_failed wid=%llu err=%s",
			(unsigned long long)w->wid, uv_err_name(status));
		conn_lost(w, "connect failed");
		return;
	}
	w->connected = true;
	uv_read_start((uv_stream_t *)&w->pipe, alloc_cb, read_cb);
}

int migd__worker_connect(struct migd_worker *w)
{
	Migd__Request req = MIGD__REQUEST__INIT;
	Migd__SubscribeRequest sub = MIGD__SUBSCRIBE_REQUEST__INIT;
	int ret = uv_pipe_init(w->d->loop, &w->pipe, 0);

	if (ret)
		return ret;
	w->pipe.data = w;
	w->pipe_open = true;
	w->handles++;
	w->connect_req.data = w;
	uv_pipe_connect(&w->connect_req, &w->pipe, w->sock, connect_cb);
	/* Every event, progress at the finest pacing: the daemon's own
	 * subscribers are paced again by the daemon. */
	sub.interval_ms = MIGD_PROGRESS_INTERVAL_MIN_MS;
	req.call_case = MIGD__REQUEST__CALL_SUBSCRIBE;
	req.subscribe = &sub;
	return migd_worker_call(w, &req, subscribed, NULL);
}

/* ---- spawn ------------------------------------------------------------- */

static int bind_listener(const char *path, char *err, size_t err_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old;

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 16)) {
		int e = errno;

		umask(old);
		snprintf(err, err_size, "cannot listen on %s: %s", path,
			 strerror(e));
		close(fd);
		return -e;
	}
	umask(old);
	return fd;
}

int migd_worker_spawn(struct migd_host *d, bool takeover,
		      struct migd_worker **out, char *err, size_t err_size)
{
	struct migd_supervisor *h = d->sup;
	uv_process_options_t po = { 0 };
	uv_stdio_container_t stdio[5];
	char a_wid[24], a_io[16], a_dint[16], a_dsh[16], a_dev[16], a_ring[16];
	char a_listen[MIGD_HOST_MAX + 24], a_lvl[8];
	const char *args[64];
	struct migd_worker *w;
	int lfd, tfd = -1, n = 0, ln, ret;
	bool v6;

	w = migd__worker_new(d, h->next_wid);
	if (!w) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	lfd = bind_listener(w->sock, err, err_size);
	if (lfd < 0) {
		worker_unlink(w);
		return lfd;
	}
	if (takeover) {
		snprintf(w->xfer, sizeof(w->xfer), "%.80s/%llu.xfer",
			 h->vms_dir, (unsigned long long)w->wid);
		tfd = bind_listener(w->xfer, err, err_size);
		if (tfd < 0) {
			close(lfd);
			unlink(w->sock);
			worker_unlink(w);
			return tfd;
		}
	}
	snprintf(a_wid, sizeof(a_wid), "%llu", (unsigned long long)w->wid);
	snprintf(a_io, sizeof(a_io), "%u", d->cfg.mig_io_timeout_ms);
	snprintf(a_dint, sizeof(a_dint), "%u", d->cfg.dirty_interval_ms);
	snprintf(a_dsh, sizeof(a_dsh), "%u", d->cfg.dirty_sample_shift);
	snprintf(a_dev, sizeof(a_dev), "%u", d->cfg.dirty_event_ms);
	snprintf(a_ring, sizeof(a_ring), "%u", d->cfg.dirty_ring);
	/* migd_parse_listen() syntax: an IPv6 host in brackets, "-LAST"
	 * only for a real range. */
	v6 = strchr(d->cfg.mig_host, ':') != NULL;
	ln = snprintf(a_listen, sizeof(a_listen), "%s%s%s:%u", v6 ? "[" : "",
		     d->cfg.mig_host, v6 ? "]" : "", d->cfg.mig_port);
	if (d->cfg.mig_port_max > d->cfg.mig_port && ln > 0 &&
	    (size_t)ln < sizeof(a_listen))
		snprintf(a_listen + ln, sizeof(a_listen) - (size_t)ln, "-%u",
			 d->cfg.mig_port_max);
	snprintf(a_lvl, sizeof(a_lvl), "%d", (int)hv_log_get_level());
	args[n++] = h->vmm_path;
	args[n++] = "--worker-id";
	args[n++] = a_wid;
	args[n++] = "--state-dir";
	args[n++] = d->cfg.state_dir;
	args[n++] = "--daemon-socket";
	args[n++] = d->cfg.socket_path;
	args[n++] = "--listen-fd";
	args[n++] = "3";
	args[n++] = "--socket";
	args[n++] = w->sock;
	args[n++] = "--accel";
	args[n++] = hv_accel_kind_name(d->accel);
	if (d->cfg.accel == HV_ACCEL_INVALID)
		args[n++] = "--accel-auto";
	args[n++] = "--tls-dir";
	args[n++] = d->cfg.tls_dir;
	args[n++] = "--migration-listen";
	args[n++] = a_listen;
	args[n++] = "--migration-io-timeout-ms";
	args[n++] = a_io;
	args[n++] = "--dirty-monitor";
	args[n++] = d->cfg.dirty_monitor ? "on" : "off";
	args[n++] = "--dirty-interval-ms";
	args[n++] = a_dint;
	args[n++] = "--dirty-sample-shift";
	args[n++] = a_dsh;
	args[n++] = "--dirty-event-ms";
	args[n++] = a_dev;
	args[n++] = "--dirty-ring";
	args[n++] = a_ring;
	args[n++] = "--backing";
	args[n++] = hv_mem_backing_name(d->cfg.backing);
	args[n++] = "--log-level-num";
	args[n++] = a_lvl;
	/* The worker commits migrations in the fleet itself (host_fleet.h,
	 * docs/fleet.md): it needs the keys, not the lease. */
	if (migd_host_fleet_id(d)) {
		args[n++] = "--etcd";
		args[n++] = d->cfg.etcd_endpoints;
		args[n++] = "--host-id";
		args[n++] = migd_host_fleet_id(d);
		if (d->cfg.etcd_prefix[0]) {
			args[n++] = "--etcd-prefix";
			args[n++] = d->cfg.etcd_prefix;
		}
		if (d->cfg.etcd_cacert[0]) {
			args[n++] = "--etcd-cacert";
			args[n++] = d->cfg.etcd_cacert;
		}
		if (d->cfg.etcd_cert[0]) {
			args[n++] = "--etcd-cert";
			args[n++] = d->cfg.etcd_cert;
		}
		if (d->cfg.etcd_key[0]) {
			args[n++] = "--etcd-key";
			args[n++] = d->cfg.etcd_key;
		}
	}
	if (tfd >= 0) {
		args[n++] = "--takeover-fd";
		args[n++] = "4";
	}
	args[n] = NULL;

	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = 1;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = 2;
	stdio[3].flags = UV_INHERIT_FD;
	stdio[3].data.fd = lfd;
	stdio[4].flags = UV_INHERIT_FD;
	stdio[4].data.fd = tfd;
	po.file = h->vmm_path;
	po.args = (char **)args;
	po.stdio = stdio;
	po.stdio_count = tfd >= 0 ? 5 : 4;
	/* Its own session: a signal to the daemon's process group (Ctrl-C,
	 * systemd's KillMode=process) does not reach it. */
	po.flags = UV_PROCESS_DETACHED;
	po.exit_cb = exit_cb;
	w->proc.data = w;
	ret = uv_spawn(d->loop, &w->proc, &po);
	close(lfd);
	if (tfd >= 0)
		close(tfd);
	if (ret) {
		snprintf(err, err_size, "cannot start the worker %s: %s",
			 h->vmm_path, uv_strerror(ret));
		unlink(w->sock);
		if (takeover)
			unlink(w->xfer);
		/* uv_spawn initialised the handle even on failure */
		w->proc_open = true;
		w->handles++;
		worker_unlink(w);
		return -EIO;
	}
	w->proc_open = true;
	w->handles++;
	w->child = true;
	w->pid = w->proc.pid;
	migd__proc_start_time(w->pid, &w->start_time);
	h->spawned++;
	ret = migd__record_write(w);
	if (ret)
		hv_warn(COMP, "event=record_failed path=%s err=\"%s\"", w->rec,
			strerror(-ret));
	ret = migd__worker_connect(w);
	if (ret) {
		snprintf(err, err_size, "cannot connect to the worker: %s",
			 ret < -1000 ? uv_strerror(ret) : strerror(-ret));
		uv_process_kill(&w->proc, SIGKILL);
		conn_lost(w, "connect");
		return -EIO;
	}
	hv_info(COMP, "event=worker_started wid=%llu pid=%d",
		(unsigned long long)w->wid, w->pid);
	*out = w;
	return 0;
}
