// SPDX-License-Identifier: MIT
/*
 * The worker process's start-up, loop and clean shutdown (worker.h):
 * what migd_run() does for the host daemon, for one VM's worker.
 *
 * Start-up: state directory (0700), TLS file names, VM registry, the
 * control server on the socket its daemon bound (fd, worker.c's ops), the
 * fleet's ownership keys, the dirty-rate events, SIGTERM. Shutdown (SIGTERM,
 * undone in reverse): its migrations first (an outgoing one must give its
 * VM back before the VM goes, an incoming one must discard what it
 * received), then its VM. An idle worker ends through worker.c instead.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "hvcore/time.h"
#include "migrated/fleet/fleet.h"
#include "migrated/common/calls.h"
#include "migrated/common/proc.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/vmm.h"
#include "migrated/vmm/worker.h"

#define COMP "migd"

uint64_t migd_self_worker_id;

/* The ownership keys its migrations commit with, from the --etcd options
 * its daemon passed (no lease: the daemon holds it). 0 standalone too;
 * -errno logged. */
static int fleet_open(struct migd_vmm *d)
{
	struct migd_fleet_cfg fc = {0};
	char err[512];
	int ret;

	if (!d->cfg.etcd_endpoints[0])
		return 0;
	fc.etcd.endpoints = d->cfg.etcd_endpoints;
	fc.etcd.cacert = d->cfg.etcd_cacert;
	fc.etcd.cert = d->cfg.etcd_cert;
	fc.etcd.key = d->cfg.etcd_key;
	fc.prefix = d->cfg.etcd_prefix[0] ? d->cfg.etcd_prefix : NULL;
	fc.host_id = d->cfg.host_id;
	ret = migd_fleet_open(&fc, &d->fleet_keys, err, sizeof(err));
	if (ret)
		hv_err(COMP,
		       "event=start_failed worker=%llu err=\"fleet: "
		       "%s\"",
		       (unsigned long long)d->cfg.worker_id, err);
	return ret;
}

static void vmm_proc(struct migd_call *call, struct migd_proc *p)
{
	const struct migd_vmm *d = migd_vmm_of(call);

	p->accel = d->accel;
	p->start_ns = d->start_ns;
	p->tls_ready = d->tls_ready;
	p->fleet = d->fleet_keys != NULL;
	p->srv = &d->srv;
}

void migd_vmm_call_ping(struct migd_call *call)
{
	struct migd_proc p;

	vmm_proc(call, &p);
	migd_call_ping(call, &p);
}

void migd_vmm_call_capabilities(struct migd_call *call)
{
	struct migd_proc p;

	vmm_proc(call, &p);
	migd_call_capabilities(call, &p);
}

static void vmm_shutdown(struct migd_vmm *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	hv_info(COMP, "event=shutdown vms=%u workers=%u", d->reg.count, 0u);
	migd_mig_shutdown_all(d);
	migd_monitor_events_stop(d);
	migd_server_stop(&d->srv);
	migd_registry_fini(&d->reg);
	uv_signal_stop(&d->sig_term);
	uv_signal_stop(&d->sig_int);
	uv_signal_stop(&d->sig_hup);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
}

static void signal_cb(uv_signal_t *s, int signum)
{
	struct migd_vmm *d = s->data;

	hv_info(COMP, "event=signal sig=%s", strsignal(signum));
	vmm_shutdown(d);
}

int migd_vmm_run(const struct migd_cfg *cfg)
{
	struct migd_vmm *d = calloc(1, sizeof(*d));
	uv_loop_t loop;
	int ret;

	if (!d)
		return 1;
	d->cfg = *cfg;
	d->start_ns = hv_now_ns();
	ret = migd_private_dir(d->cfg.state_dir, -1);
	if (ret) {
		hv_err(COMP, "event=start_failed state_dir=%s err=\"%s\"",
		       d->cfg.state_dir, strerror(-ret));
		free(d);
		return 1;
	}
	/* main() insists on --accel: the daemon resolved it. */
	d->accel = cfg->accel;
	d->tls_ready = migd_tls_files(d->cfg.tls_dir, d->tls_ca, d->tls_cert,
				      d->tls_key);
	ret = uv_loop_init(&loop);
	if (ret) {
		free(d);
		return 1;
	}
	d->loop = &loop;
	migd_registry_init(&d->reg);
	migd_self_worker_id = d->cfg.worker_id;
	ret = migd_server_start_fd(&d->srv, d->loop, &migd_worker_server_ops, d,
				   d->cfg.listen_fd, d->cfg.socket_path);
	if (!ret)
		ret = fleet_open(d);
	if (ret) {
		hv_err(COMP, "event=start_failed worker=%llu err=%d",
		       (unsigned long long)d->cfg.worker_id, ret);
		d->exit_code = 1;
		goto out_loop;
	}
	migd_monitor_events_start(d);
	/* SIGINT is the daemon's terminal's (main.c ignores it), SIGHUP
	 * the daemon's: only SIGTERM stops a worker. */
	uv_signal_init(d->loop, &d->sig_term);
	uv_signal_init(d->loop, &d->sig_int);
	uv_signal_init(d->loop, &d->sig_hup);
	d->sig_term.data = d;
	d->sig_int.data = d;
	d->sig_hup.data = d;
	uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
	hv_info(COMP, "event=worker_started worker=%llu pid=%d accel=%s",
		(unsigned long long)d->cfg.worker_id, (int)getpid(),
		hv_accel_kind_name(d->accel));
	uv_run(d->loop, UV_RUN_DEFAULT);
out_loop:
	/* Anything left open (a failed start) is closed so the loop can be
	 * torn down without leaks. */
	uv_walk(d->loop, migd_close_walk_cb, NULL);
	uv_run(d->loop, UV_RUN_DEFAULT);
	uv_loop_close(d->loop);
	ret = d->exit_code;
	migd_fleet_stop(d->fleet_keys, false);
	free(d);
	return ret;
}
