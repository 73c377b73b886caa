// SPDX-License-Identifier: MIT
/*
 * migrated-vmm: the worker process of one VM (migrated/vmm/worker.h).
 * Started by migrated with the options below; not meant to be run by
 * hand (it serves only the socket its daemon bound for it, fd 3).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/vmm/vmm.h"
#include "migrated/rpc/parse.h"
#include "migrated/vmm/registry.h"
#include "migrated/vmm/worker.h"

enum { O_WID = 256, O_STATE, O_DSOCK, O_LFD, O_SOCK, O_ACCEL, O_TLS,
       O_LISTEN, O_IO, O_DMON, O_DINT, O_DSHIFT, O_DEVENT, O_RING, O_LOG,
       O_TAKEOVER, O_BACKING, O_ACCEL_AUTO, O_ETCD, O_HOST_ID, O_ETCD_PREFIX, O_ETCD_CA,
       O_ETCD_CERT, O_ETCD_KEY };

static const struct option opts[] = {
	{ "worker-id", required_argument, NULL, O_WID },
	{ "state-dir", required_argument, NULL, O_STATE },
	{ "daemon-socket", required_argument, NULL, O_DSOCK },
	{ "listen-fd", required_argument, NULL, O_LFD },
	{ "socket", required_argument, NULL, O_SOCK },
	{ "accel", required_argument, NULL, O_ACCEL },
	{ "accel-auto", no_argument, NULL, O_ACCEL_AUTO },
	{ "tls-dir", required_argument, NULL, O_TLS },
	{ "migration-listen", required_argument, NULL, O_LISTEN },
	{ "migration-io-timeout-ms", required_argument, NULL, O_IO },
	{ "dirty-monitor", required_argument, NULL, O_DMON },
	{ "dirty-interval-ms", required_argument, NULL, O_DINT },
	{ "dirty-sample-shift", required_argument, NULL, O_DSHIFT },
	{ "dirty-event-ms", required_argument, NULL, O_DEVENT },
	{ "dirty-ring", required_argument, NULL, O_RING },
	{ "backing", required_argument, NULL, O_BACKING },
	{ "log-level-num", required_argument, NULL, O_LOG },
	{ "takeover-fd", required_argument, NULL, O_TAKEOVER },
	{ "etcd", required_argument, NULL, O_ETCD },
	{ "host-id", required_argument, NULL, O_HOST_ID },
	{ "etcd-prefix", required_argument, NULL, O_ETCD_PREFIX },
	{ "etcd-cacert", required_argument, NULL, O_ETCD_CA },
	{ "etcd-cert", required_argument, NULL, O_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, O_ETCD_KEY },
	{ NULL, 0, NULL, 0 },
};

static int num(const char *opt, const char *arg, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || v > max) {
		fprintf(stderr, "migrated-vmm: bad %s '%s'\n", opt, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int copy(const char *opt, const char *arg, char *dst, size_t n)
{
	if (!*arg || strlen(arg) >= n) {
		fprintf(stderr, "migrated-vmm: bad %s '%s'\n", opt, arg);
		return -1;
	}
	memcpy(dst, arg, strlen(arg) + 1);
	return 0;
}

static int apply(int c, const char *arg, struct migd_cfg *cfg)
{
	uint64_t v;

	switch (c) {
	case O_WID:
		if (num("--worker-id", arg, UINT64_MAX, &cfg->worker_id))
			return -1;
		return 0;
	case O_STATE:
		return copy("--state-dir", arg, cfg->state_dir,
			    sizeof(cfg->state_dir) - 32);
	case O_DSOCK:
		return copy("--daemon-socket", arg, cfg->daemon_socket,
			    sizeof(cfg->daemon_socket));
	case O_SOCK:
		return copy("--socket", arg, cfg->socket_path,
			    sizeof(cfg->socket_path));
	case O_TLS:
		return copy("--tls-dir", arg, cfg->tls_dir,
			    sizeof(cfg->tls_dir) - 32);
	case O_LFD:
	case O_TAKEOVER:
		if (num("fd", arg, 1024, &v))
			return -1;
		*(c == O_LFD ? &cfg->listen_fd : &cfg->takeover_fd) = (int)v;
		return 0;
	case O_ACCEL:
		cfg->accel = hv_accel_kind_parse(arg, HV_ACCEL_INVALID);
		return cfg->accel == HV_ACCEL_INVALID ? -1 : 0;
	case O_ACCEL_AUTO:
		cfg->accel_auto = true;
		return 0;
	case O_BACKING:
		cfg->backing = hv_mem_backing_parse(arg);
		return cfg->backing == HV_BACKING_INVALID ? -1 : 0;
	case O_LISTEN:
		return migd_parse_listen(arg, cfg->mig_host,
					 sizeof(cfg->mig_host), &cfg->mig_port,
					 &cfg->mig_port_max)
			       ? -1
			       : 0;
	case O_IO:
		if (num("--migration-io-timeout-ms", arg, UINT32_MAX, &v))
			return -1;
		cfg->mig_io_timeout_ms = (uint32_t)v;
		return 0;
	case O_DMON:
		cfg->dirty_monitor = !strcmp(arg, "on");
		return 0;
	case O_DINT:
	case O_DSHIFT:
	case O_DEVENT:
	case O_RING:
		if (num("dirty option", arg, UINT32_MAX, &v))
			return -1;
		if (c == O_DINT)
			cfg->dirty_interval_ms = (uint32_t)v;
		else if (c == O_DSHIFT)
			cfg->dirty_sample_shift = (uint32_t)v;
		else if (c == O_DEVENT)
			cfg->dirty_event_ms = (uint32_t)v;
		else
			cfg->dirty_ring = (uint32_t)v;
		return 0;
	case O_ETCD:
		return copy("--etcd", arg, cfg->etcd_endpoints,
			    sizeof(cfg->etcd_endpoints));
	case O_HOST_ID:
		return copy("--host-id", arg, cfg->host_id,
			    sizeof(cfg->host_id));
	case O_ETCD_PREFIX:
		return copy("--etcd-prefix", arg, cfg->etcd_prefix,
			    sizeof(cfg->etcd_prefix));
	case O_ETCD_CA:
		return copy("--etcd-cacert", arg, cfg->etcd_cacert, PATH_MAX);
	case O_ETCD_CERT:
		return copy("--etcd-cert", arg, cfg->etcd_cert, PATH_MAX);
	case O_ETCD_KEY:
		return copy("--etcd-key", arg, cfg->etcd_key, PATH_MAX);
	case O_LOG:
		if (num("--log-level-num", arg, HV_LOG_DBG, &v))
			return -1;
		hv_log_set_level((enum hv_log_level)v);
		return 0;
	default:
		return -1;
	}
}

int main(int argc, char **argv)
{
	struct migd_cfg cfg;
	int c;

	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_fd = -1;
	cfg.takeover_fd = -1;
	cfg.dirty_monitor = true;
	cfg.dirty_interval_ms = MIGD_DIRTY_INTERVAL_MS_DEFAULT;
	cfg.dirty_event_ms = MIGD_DIRTY_EVENT_MS_DEFAULT;
	cfg.backing = MIGD_BACKING_DEFAULT;
	strcpy(cfg.mig_host, "0.0.0.0");
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (apply(c, optarg, &cfg))
			return 2;
	if (!cfg.worker_id || cfg.listen_fd < 0 || !cfg.state_dir[0] ||
	    !cfg.daemon_socket[0] || !cfg.socket_path[0] ||
	    cfg.accel == HV_ACCEL_INVALID) {
		fprintf(stderr, "migrated-vmm: the worker of one VM, started "
				"by migrated (not by hand): --worker-id, "
				"--listen-fd, --socket, --state-dir, "
				"--daemon-socket and --accel are required\n");
		return 2;
	}
	if (!cfg.tls_dir[0])
		snprintf(cfg.tls_dir, sizeof(cfg.tls_dir), "%.*s/tls",
			 (int)(sizeof(cfg.tls_dir) - 5), cfg.state_dir);
	/* Nothing this process runs may gain privileges; it needs none of
	 * the daemon's other descriptors. */
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	close_range((unsigned)(cfg.takeover_fd >= 0 ? 5 : 4), ~0u, 0);
	signal(SIGPIPE, SIG_IGN);
	/* Ctrl-C in the daemon's terminal is the daemon's business. */
	signal(SIGINT, SIG_IGN);
	return migd_vmm_run(&cfg);
}
