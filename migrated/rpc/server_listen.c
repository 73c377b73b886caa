// SPDX-License-Identifier: MIT
/*
 * migd_server: the listeners (server.h) -- the control socket, TCP with
 * mutual TLS and its reload, a socket handed over to a worker -- and
 * stopping or draining them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/rpc/server_priv.h"
#include "migrated/mig/addr.h"
#include "migrated/mig/tls.h"

#define COMP "migd.rpc"

/* ---- listener ---------------------------------------------------------- */

/* True when something accepts connections at @path. */
static bool socket_alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	alive = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return alive;
}

int migd_server_start(struct migd_server *srv, uv_loop_t *loop,
		      const struct migd_server_ops *ops, void *owner,
		      const char *path, long gid)
{
	struct stat st;
	mode_t old;
	int ret;

	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->ops = ops;
	srv->owner = owner;
	if (strlen(path) >= sizeof(srv->path))
		return -ENAMETOOLONG;
	strcpy(srv->path, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (socket_alive(path))
			return -EADDRINUSE;
		unlink(path); /* stale, from a daemon that died */
	}
	ret = uv_pipe_init(loop, &srv->listener, 0);
	if (ret)
		return ret;
	srv->listener.data = srv;
	/* Born 0600: no window in which another user could connect. Start-up
	 * is single-threaded, so the process-wide umask is safe to flip. */
	old = umask(0177);
	ret = uv_pipe_bind(&srv->listener, path);
	umask(old);
	if (!ret)
		ret = chmod(path, 0600) ? -errno : 0;
	/* An operator group (--socket-group): its members are operators
	 * too. */
	if (!ret && gid >= 0 &&
	    (chown(path, (uid_t)-1, (gid_t)gid) || chmod(path, 0660)))
		ret = -errno;
	if (!ret)
		ret = uv_listen((uv_stream_t *)&srv->listener, 128, migd__accept_cb);
	if (ret) {
		uv_close((uv_handle_t *)&srv->listener, NULL);
		unlink(path);
		return ret;
	}
	srv->listening = true;
	hv_info(COMP, "event=listening socket=%s", path);
	return 0;
}

int migd_server_listen_tcp(struct migd_server *srv, const char *host,
			   uint16_t port, const char *ca_file,
			   const char *cert_file, const char *key_file)
{
	struct mig_tls_cfg tcfg = {
		.ca_file = ca_file,
		.cert_file = cert_file,
		.key_file = key_file,
		.server = true,
	};
	struct sockaddr_storage ss;
	struct mig_addr a;
	int namelen = sizeof(ss);
	char ip[64] = "";
	int ret;

	if (!host || !host[0])
		host = "0.0.0.0";
	/* An address, or a host name (its first address). */
	ret = mig_addr_resolve(host, port, true, &a, 1);
	if (ret < 0)
		return ret == -EHOSTUNREACH ? -EINVAL : ret;
	ss = a.ss;
	ret = mig_tls_create(&tcfg, &srv->tls);
	if (ret)
		return ret;
	ret = uv_tcp_init(srv->loop, &srv->tcp_listener);
	if (ret)
		goto fail_tls;
	srv->tcp_listener.data = srv;
	ret = uv_tcp_bind(&srv->tcp_listener, (struct sockaddr *)&ss, 0);
	if (!ret)
		ret = uv_listen((uv_stream_t *)&srv->tcp_listener, 256,
				migd__accept_tcp_cb);
	if (!ret)
		ret = uv_tcp_getsockname(&srv->tcp_listener,
					 (struct sockaddr *)&ss, &namelen);
	if (ret) {
		uv_close((uv_handle_t *)&srv->tcp_listener, NULL);
		goto fail_tls;
	}
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		uv_ip6_name(s6, ip, sizeof(ip));
		srv->tcp_port = ntohs(s6->sin6_port);
		snprintf(srv->tcp_addr, sizeof(srv->tcp_addr), "[%s]:%u", ip,
			 srv->tcp_port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		uv_ip4_name(s4, ip, sizeof(ip));
		srv->tcp_port = ntohs(s4->sin_port);
		snprintf(srv->tcp_addr, sizeof(srv->tcp_addr), "%s:%u", ip,
			 srv->tcp_port);
	}
	srv->tcp_listening = true;
	hv_info(COMP, "event=listening transport=tls addr=%s ca=%s",
		srv->tcp_addr, ca_file);
	return 0;
fail_tls:
	mig_tls_destroy(srv->tls);
	srv->tls = NULL;
	return ret;
}

int migd_server_reload_tls(struct migd_server *srv, const char *ca_file,
			   const char *cert_file, const char *key_file)
{
	struct mig_tls_cfg tcfg = {
		.ca_file = ca_file,
		.cert_file = cert_file,
		.key_file = key_file,
		.server = true,
	};
	struct mig_tls *tls;
	int ret;

	if (!srv->tcp_listening)
		return -ENOTCONN;
	ret = mig_tls_create(&tcfg, &tls);
	if (ret) {
		hv_err(COMP, "event=rpc_tls_reload_failed addr=%s ca=%s "
			     "cert=%s key=%s err=\"%s\" "
			     "kept=\"the previous TLS context\"",
		       srv->tcp_addr, ca_file, cert_file, key_file,
		       ret == -EKEYREJECTED ? "the key does not match the "
					      "certificate"
			: ret == -ENOENT     ? "a file cannot be loaded"
					     : strerror(-ret));
		return ret;
	}
	/* Open connections hold references to the old SSL_CTX. */
	mig_tls_destroy(srv->tls);
	srv->tls = tls;
	hv_info(COMP, "event=rpc_tls_reloaded addr=%s ca=%s conns=%u",
		srv->tcp_addr, ca_file, srv->nr_conns);
	return 0;
}

void migd_server_stop(struct migd_server *srv)
{
	srv->stopping = true;
	while (srv->conns)
		migd__conn_close(srv->conns, "shutdown");
	if (srv->tcp_listening) {
		uv_close((uv_handle_t *)&srv->tcp_listener, NULL);
		srv->tcp_listening = false;
		hv_info(COMP, "event=tcp_closed addr=%s tls_refused=%llu",
			srv->tcp_addr, (unsigned long long)srv->tls_refused);
	}
	/* Connections still closing hold SSL objects, not the context:
	 * SSL_new took a reference to it. */
	mig_tls_destroy(srv->tls);
	srv->tls = NULL;
	if (srv->listening) {
		uv_close((uv_handle_t *)&srv->listener, NULL);
		if (!srv->keep_path)
			unlink(srv->path);
		srv->listening = false;
		hv_info(COMP, "event=socket_removed socket=%s requests=%llu",
			srv->path, (unsigned long long)srv->requests);
	}
}

/* ---- a listener handed over (workers) ---------------------------------- */

int migd_server_start_fd(struct migd_server *srv, uv_loop_t *loop,
			 const struct migd_server_ops *ops, void *owner,
			 int fd, const char *path)
{
	int ret;

	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->ops = ops;
	srv->owner = owner;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	ret = uv_pipe_init(loop, &srv->listener, 0);
	if (ret)
		return ret;
	srv->listener.data = srv;
	ret = uv_pipe_open(&srv->listener, fd);
	if (!ret)
		ret = uv_listen((uv_stream_t *)&srv->listener, 16, migd__accept_cb);
	if (ret) {
		uv_close((uv_handle_t *)&srv->listener, NULL);
		return ret;
	}
	srv->listening = true;
	srv->keep_path = true; /* the daemon owns the socket file */
	hv_dbg(COMP, "event=listening fd=%d socket=%s", fd, path);
	return 0;
}

/* ---- drain ------------------------------------------------------------- */

static void drain_shutdown_cb(uv_shutdown_t *req, int status)
{
	struct migd_conn *conn = req->data;

	free(req);
	migd__conn_close(conn, "drained");
}

void migd_server_drain(struct migd_server *srv)
{
	srv->stopping = true;
	if (srv->listening) {
		uv_close((uv_handle_t *)&srv->listener, NULL);
		srv->listening = false;
	}
	for (struct migd_conn *c = srv->conns, *next; c; c = next) {
		uv_shutdown_t *req = calloc(1, sizeof(*req));

		next = c->next;
		uv_read_stop(&c->h.stream);
		if (!req || c->tls ||
		    uv_shutdown(req, &c->h.stream, drain_shutdown_cb)) {
			free(req);
			migd__conn_close(c, "drained");
			continue;
		}
		req->data = c;
	}
}
