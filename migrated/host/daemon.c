// SPDX-License-Identifier: MIT
/*
 * struct migd_host: start-up, the loop, clean shutdown (daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/common/calls.h"
#include "migrated/host/daemon.h"
#include "migrated/host/host.h"
#include "migrated/host/host_drain.h"
#include "migrated/host/host_fleet.h"
#include "migrated/host/metrics.h"
#include "migrated/host/notify.h"
#include "migrated/host/reload.h"
#include "migrated/fleet/fleet.h"
#include "migrated/mig/devca.h"

#define COMP "migd"

static enum hv_accel_kind resolve_accel(enum hv_accel_kind want)
{
	int fd;

	if (want != HV_ACCEL_INVALID)
		return want;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return HV_ACCEL_KVM;
	}
	return HV_ACCEL_SOFT;
}

static int setup_tls(struct migd_host *d)
{
	struct mig_devca ca;
	int ret;

	if (d->cfg.dev_tls) {
		ret = mig_devca_ensure(d->cfg.tls_dir, &ca);
		if (ret) {
			hv_err(COMP, "event=devca_failed dir=%s err=%d",
			       d->cfg.tls_dir, ret);
			return ret;
		}
		snprintf(d->tls_ca, sizeof(d->tls_ca), "%s", ca.ca_cert);
		snprintf(d->tls_cert, sizeof(d->tls_cert), "%s", ca.host_cert);
		snprintf(d->tls_key, sizeof(d->tls_key), "%s", ca.host_key);
		d->tls_ready = true;
		return 0;
	}
	d->tls_ready = migd_tls_files(d->cfg.tls_dir, d->tls_ca, d->tls_cert,
				      d->tls_key);
	return 0;
}

/* The live policy of TCP clients: what a reload changed applies to the
 * next call and the next timer of connections already open. */
static void host_server_policy(void *owner, struct migd_server_policy *pol)
{
	const struct migd_host *d = owner;

	pol->rules = d->cfg.rpc_rules;
	pol->nr_rules = d->cfg.nr_rpc_rules;
	pol->default_role = d->cfg.rpc_default_role;
	pol->handshake_timeout_ms = d->cfg.rpc_handshake_timeout_ms;
	pol->idle_timeout_ms = d->cfg.rpc_idle_timeout_ms;
}

static const struct migd_server_ops host_server_ops = {
	.dispatch = migd_host_dispatch,
	.policy = host_server_policy,
};

static void host_proc(struct migd_call *call, struct migd_proc *p)
{
	const struct migd_host *d = migd_host_of(call);

	p->accel = d->accel;
	p->start_ns = d->start_ns;
	p->tls_ready = d->tls_ready;
	p->fleet = d->fleet != NULL;
	p->srv = &d->srv;
}

void migd_host_call_ping(struct migd_call *call)
{
	struct migd_proc p;

	host_proc(call, &p);
	migd_call_ping(call, &p);
}

void migd_host_call_capabilities(struct migd_call *call)
{
	struct migd_proc p;

	host_proc(call, &p);
	migd_call_capabilities(call, &p);
}

static void signal_cb(uv_signal_t *s, int signum)
{
	struct migd_host *d = s->data;

	hv_info(COMP, "event=signal sig=%s", strsignal(signum));
	migd_shutdown(d);
}

static void sighup_cb(uv_signal_t *s, int signum)
{
	hv_info(COMP, "event=signal sig=%s", strsignal(signum));
	migd_reload(s->data);
}

/* The VMs its workers run (for the shutdown's log and status). */
static unsigned nr_vms(const struct migd_host *d)
{
	unsigned n = 0;

	for (struct migd_worker *w = d->sup ? d->sup->workers : NULL; w;
	     w = w->next)
		n += w->has_vm && !w->vm_gone && !w->retired && !w->crashed;
	return n;
}

void migd_shutdown(struct migd_host *d)
{
	if (d->stopping)
		return;
	if (d->cfg.stop_vms && migd_host_stop_vms(d))
		return; /* called again when the VMs are gone */
	d->stopping = true;
	hv_info(COMP, "event=shutdown vms=%u workers=%u", nr_vms(d),
		d->sup ? d->sup->nr_workers : 0);
	/* Its workers and their VMs keep running (unless --stop-vms; a
	 * worker stops in migrated/vmm/vmm.c). */
	migd_notifyf("STOPPING=1\nSTATUS=stopping: %u VM(s), %u worker(s)",
		     nr_vms(d), d->sup ? d->sup->nr_workers : 0);
	migd_host_fleet_stop(d);
	migd_host_fini(d);
	migd_metrics_stop(d->metrics);
	d->metrics = NULL;
	migd_server_stop(&d->srv);
	uv_signal_stop(&d->sig_term);
	uv_signal_stop(&d->sig_int);
	uv_signal_stop(&d->sig_hup);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
}

int migd_run(const struct migd_cfg *cfg)
{
	struct migd_host *d = calloc(1, sizeof(*d));
	uv_loop_t loop;
	long gid;
	int ret;

	if (!d)
		return 1;
	d->cfg = *cfg;
	d->start_ns = hv_now_ns();
	if (!d->cfg.socket_path[0] &&
	    snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path),
		     "%s/control.sock",
		     d->cfg.state_dir) >= (int)sizeof(d->cfg.socket_path)) {
		hv_err(COMP, "event=start_failed why=\"socket path too long\"");
		free(d);
		return 1;
	}
	if (!d->cfg.tls_dir[0])
		snprintf(d->cfg.tls_dir, sizeof(d->cfg.tls_dir), "%.*s/tls",
			 (int)(sizeof(d->cfg.tls_dir) - 5), d->cfg.state_dir);
	gid = -1;
	if (d->cfg.socket_group[0]) {
		struct group *g = getgrnam(d->cfg.socket_group);

		if (!g) {
			hv_err(COMP,
			       "event=start_failed socket_group=%s "
			       "why=\"no such group: create it (groupadd "
			       "--system %s) or drop --socket-group\"",
			       d->cfg.socket_group, d->cfg.socket_group);
			free(d);
			return 1;
		}
		gid = (long)g->gr_gid;
	}
	ret = migd_private_dir(d->cfg.state_dir, gid);
	if (ret) {
		hv_err(COMP, "event=start_failed state_dir=%s err=\"%s\"",
		       d->cfg.state_dir, strerror(-ret));
		free(d);
		return 1;
	}
	d->accel = resolve_accel(cfg->accel);
	/* Asked for by name, KVM must be there: a daemon that starts and
	 * then fails every VM it is asked for helps nobody. */
	if (d->accel == HV_ACCEL_KVM) {
		int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

		if (fd < 0) {
			ret = -errno;
			hv_err(COMP,
			       "event=start_failed accel=kvm err=\"%s\" "
			       "why=\"--accel kvm, but /dev/kvm does not open: "
			       "load kvm_intel or kvm_amd, give the user the "
			       "group kvm, or use --accel soft or auto\"",
			       strerror(-ret));
			free(d);
			return 1;
		}
		close(fd);
	}
	if (setup_tls(d)) {
		free(d);
		return 1;
	}
	ret = uv_loop_init(&loop);
	if (ret) {
		free(d);
		return 1;
	}
	d->loop = &loop;
	ret = migd_server_start(&d->srv, d->loop, &host_server_ops, d,
				d->cfg.socket_path, gid);
	if (ret) {
		hv_err(COMP, "event=start_failed socket=%s err=\"%s\"",
		       d->cfg.socket_path,
		       ret == -EADDRINUSE ? "another daemon is running there"
					  : strerror(-ret));
		d->exit_code = 1;
		goto out_loop;
	}
	ret = migd_host_init(d);
	if (ret) {
		d->exit_code = 1;
		migd_server_stop(&d->srv);
		goto out_loop;
	}
	if (d->cfg.rpc_tcp) {
		if (!d->tls_ready) {
			hv_err(COMP, "event=start_failed rpc_listen=%s:%u "
				     "why=\"no TLS material: ca.pem, host.pem, "
				     "host.key in the TLS dir, or --dev-tls\"",
			       d->cfg.rpc_host, d->cfg.rpc_port);
			d->exit_code = 1;
			migd_server_stop(&d->srv);
			goto out_loop;
		}
		ret = migd_server_listen_tcp(&d->srv, d->cfg.rpc_host,
					     d->cfg.rpc_port, d->tls_ca,
					     d->tls_cert, d->tls_key);
		if (ret) {
			hv_err(COMP, "event=start_failed rpc_listen=%s:%u "
				     "err=\"%s\"",
			       d->cfg.rpc_host, d->cfg.rpc_port,
			       ret < -1000 ? uv_strerror(ret)
					   : strerror(-ret));
			d->exit_code = 1;
			migd_server_stop(&d->srv);
			goto out_loop;
		}
	}
	if (d->cfg.metrics) {
		uint16_t port;

		ret = migd_metrics_start(d, d->cfg.metrics_host,
					 d->cfg.metrics_port, &port,
					 &d->metrics);
		if (ret) {
			hv_err(COMP, "event=start_failed metrics_listen=%s:%u "
				     "err=\"%s\"",
			       d->cfg.metrics_host, d->cfg.metrics_port,
			       uv_strerror(ret));
			d->exit_code = 1;
			migd_server_stop(&d->srv);
			goto out_loop;
		}
	}
	/* Last: the record names the RPC address, and a daemon that cannot
	 * join its fleet must not serve (host_fleet.h). */
	ret = migd_host_fleet_start(d);
	if (ret) {
		d->exit_code = 1;
		migd_metrics_stop(d->metrics);
		d->metrics = NULL;
		migd_host_fini(d);
		migd_server_stop(&d->srv);
		goto out_loop;
	}
	uv_signal_init(d->loop, &d->sig_term);
	uv_signal_init(d->loop, &d->sig_int);
	d->sig_term.data = d;
	d->sig_int.data = d;
	uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
	uv_signal_init(d->loop, &d->sig_hup);
	d->sig_hup.data = d;
	uv_signal_start(&d->sig_int, signal_cb, SIGINT);
	uv_signal_start(&d->sig_hup, sighup_cb, SIGHUP);
	hv_info(COMP,
		"event=started version=%s pid=%d state_dir=%s socket=%s "
		"rpc_tls=%s accel=%s tls=%s dirty_monitor=%s engine=%s",
		MIGD_VERSION, (int)getpid(), d->cfg.state_dir,
		d->cfg.socket_path,
		d->srv.tcp_listening ? d->srv.tcp_addr : "off",
		hv_accel_kind_name(d->accel),
		d->tls_ready ? d->cfg.tls_dir : "none",
		d->cfg.dirty_monitor ? "on" : "off",
#ifdef MIGD_HAVE_ENGINE
		"yes"
#else
		"no"
#endif
	);
	migd_notifyf("READY=1\nMAINPID=%d\nSTATUS=running: socket %s, rpc %s",
		     (int)getpid(), d->cfg.socket_path,
		     d->srv.tcp_listening ? d->srv.tcp_addr : "off");
	uv_run(d->loop, UV_RUN_DEFAULT);
	hv_info(COMP, "event=stopped");
out_loop:
	/* Anything left open (a failed start) is closed so the loop can be
	 * torn down without leaks. */
	uv_walk(d->loop, migd_close_walk_cb, NULL);
	uv_run(d->loop, UV_RUN_DEFAULT);
	uv_loop_close(d->loop);
	ret = d->exit_code;
	/* A drain still running at shutdown ends now that our socket is
	 * closed (its calls fail at once); then its fleet object goes. */
	migd_host_drain_fini(d);
	free(d->sup);
	free(d);
	return ret;
}
