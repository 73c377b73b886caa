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
#include "migrated/host/daemon.h"
#include "migrated/host/host_fleet.h"
#include "migrated/vmm/migration.h"
#include "migrated/vmm/monitor.h"
#include "migrated/vmm/worker.h"

#define COMP "migd"

uint64_t migd_self_worker_id;

static void vmm_shutdown(struct migd *d)
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
	struct migd *d = s->data;

	hv_info(COMP, "event=signal sig=%s", strsignal(signum));
	vmm_shutdown(d);
}

int migd_vmm_run(const struct migd_cfg *cfg)
{
	struct migd *d = calloc(1, sizeof(*d));
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
	migd_tls_files(d);
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
		ret = migd_worker_fleet_open(d);
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
