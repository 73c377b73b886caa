// SPDX-License-Identifier: MIT
/*
 * migrated: the live-migration daemon. Parses options, then migd_run().
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/dirtyrate.h"
#include "hvcore/log.h"
#include "migrated/daemon/daemon.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migrated [options]\n"
		"  --state-dir DIR        state directory, created 0700\n"
		"                         (default $MIGRATED_STATE_DIR,\n"
		"                         $XDG_RUNTIME_DIR/migrated or\n"
		"                         /tmp/migrated-UID)\n"
		"  --socket PATH          control socket (default "
		"STATE/control.sock)\n"
		"  --accel kvm|soft|auto  default accelerator (auto)\n"
		"  --log-level LEVEL      err, warn, info or debug (info)\n"
		"  --migration-listen HOST:PORT\n"
		"                         default listen address of incoming\n"
		"                         migrations (default 0.0.0.0:0 = any\n"
		"                         port)\n"
		"  --migration-io-timeout-ms MS\n"
		"                         a migration channel without progress\n"
		"                         for MS fails (10000); a destination\n"
		"                         gives up on the Commit after MS/2\n"
		"  --tls-dir DIR          ca.pem, host.pem, host.key of\n"
		"                         migration TLS (default STATE/tls)\n"
		"  --dev-tls              generate a throwaway CA and host\n"
		"                         certificate in the TLS dir if missing\n"
		"                         (two daemons must share the dir)\n"
		"  --rpc-listen HOST:PORT|off\n"
		"                         control RPC on TCP + mutual TLS (off)\n"
		"  --rpc-handshake-timeout-ms MS\n"
		"                         close a TCP client that has not\n"
		"                         finished its TLS handshake (5000;\n"
		"                         0 = never)\n"
		"  --rpc-idle-timeout-ms MS\n"
		"                         close a TCP client that sends nothing\n"
		"                         for MS and has no subscription\n"
		"                         (120000; 0 = never)\n"
		"  --dirty-ring ENTRIES|off\n"
		"                         dirty ring entries per vCPU of KVM\n"
		"                         VMs created without one (power of\n"
		"                         two, 256..65536; off = the dirty\n"
		"                         bitmap; default off)\n"
		"  --stop-vms             on SIGTERM also destroy every VM; by\n"
		"                         default VMs keep running in their\n"
		"                         worker processes and a restarted\n"
		"                         daemon adopts them\n"
		"  --vmm PATH             the worker binary (default\n"
		"                         migrated-vmm next to migrated)\n"
		"  --config FILE          key = value lines (docs/api.md)\n"
		"  --version, --help\n");
}

static const struct {
	const char *name;
	enum hv_log_level level;
} log_levels[] = {
	{ "err", HV_LOG_ERR },	 { "error", HV_LOG_ERR },
	{ "warn", HV_LOG_WARN }, { "info", HV_LOG_INFO },
	{ "debug", HV_LOG_DBG }, { "dbg", HV_LOG_DBG },
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "migrated: bad %s '%s': %s\n", opt, val, why);
	return 2;
}

enum { O_STATE = 256, O_SOCKET, O_ACCEL, O_LOG, O_LISTEN, O_TLSDIR,
       O_DEVTLS, O_RPC, O_METRICS, O_DMON, O_DINT, O_DSHIFT, O_DEVENT,
       O_RPC_HS, O_RPC_IDLE, O_RING, O_CONFIG, O_VERSION, O_HELP, O_MIG_IO,
       O_STOP_VMS, O_VMM };

static const struct option opts[] = {
	{ "state-dir", required_argument, NULL, O_STATE },
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "accel", required_argument, NULL, O_ACCEL },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "migration-listen", required_argument, NULL, O_LISTEN },
	{ "migration-io-timeout-ms", required_argument, NULL, O_MIG_IO },
	{ "tls-dir", required_argument, NULL, O_TLSDIR },
	{ "dev-tls", no_argument, NULL, O_DEVTLS },
	{ "rpc-listen", required_argument, NULL, O_RPC },
	{ "rpc-handshake-timeout-ms", required_argument, NULL, O_RPC_HS },
	{ "rpc-idle-timeout-ms", required_argument, NULL, O_RPC_IDLE },
	{ "metrics-listen", required_argument, NULL, O_METRICS },
	{ "dirty-monitor", required_argument, NULL, O_DMON },
	{ "dirty-interval-ms", required_argument, NULL, O_DINT },
	{ "dirty-sample-shift", required_argument, NULL, O_DSHIFT },
	{ "dirty-event-ms", required_argument, NULL, O_DEVENT },
	{ "dirty-ring", required_argument, NULL, O_RING },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "version", no_argument, NULL, O_VERSION },
	{ "help", no_argument, NULL, O_HELP },
	{ "stop-vms", no_argument, NULL, O_STOP_VMS },
	{ "vmm", required_argument, NULL, O_VMM },
	{ NULL, 0, NULL, 0 },
};

static int config_load(const char *path, struct migd_cfg *cfg);

/* Apply one option; 0, 2 (bad value), or -1 for --version/--help done. */
static int apply(int c, const char *arg, struct migd_cfg *cfg)
{
	uint64_t u;
	size_t i;

	switch (c) {
	case O_STATE:
		if (strlen(arg) >= sizeof(cfg->state_dir) - 32 || !*arg)
			return bad("--state-dir", arg, "empty or too long");
		strcpy(cfg->state_dir, arg);
		break;
	case O_SOCKET:
		if (strlen(arg) >= sizeof(cfg->socket_path) || !*arg)
			return bad("--socket", arg,
				   "empty or longer than 107 bytes");
		strcpy(cfg->socket_path, arg);
		break;
	case O_ACCEL:
		if (!strcmp(arg, "auto"))
			cfg->accel = HV_ACCEL_INVALID;
		else if ((cfg->accel = migd_accel_parse(
				  arg, HV_ACCEL_INVALID)) == HV_ACCEL_INVALID)
			return bad("--accel", arg, "kvm, soft or auto");
		break;
	case O_LOG:
		for (i = 0; i < HV_ARRAY_SIZE(log_levels); i++)
			if (!strcmp(arg, log_levels[i].name))
				break;
		if (i == HV_ARRAY_SIZE(log_levels))
			return bad("--log-level", arg,
				   "err, warn, info or debug");
		hv_log_set_level(log_levels[i].level);
		break;
	case O_LISTEN:
		if (migd_parse_hostport(arg, true, cfg->mig_host,
					sizeof(cfg->mig_host), &cfg->mig_port))
			return bad("--migration-listen", arg, "HOST:PORT");
		if (!cfg->mig_host[0])
			strcpy(cfg->mig_host, "0.0.0.0");
		break;
	case O_TLSDIR:
		if (strlen(arg) >= sizeof(cfg->tls_dir) - 32 || !*arg)
			return bad("--tls-dir", arg, "empty or too long");
		strcpy(cfg->tls_dir, arg);
		break;
	case O_DEVTLS:
		cfg->dev_tls = true;
		break;
	case O_STOP_VMS:
		cfg->stop_vms = true;
		break;
	case O_VMM:
		if (strlen(arg) >= sizeof(cfg->vmm_path) || !*arg)
			return bad("--vmm", arg, "empty or too long");
		strcpy(cfg->vmm_path, arg);
		break;
	case O_RPC:
		if (!strcmp(arg, "off")) {
			cfg->rpc_tcp = false;
			break;
		}
		if (migd_parse_hostport(arg, true, cfg->rpc_host,
					sizeof(cfg->rpc_host), &cfg->rpc_port))
			return bad("--rpc-listen", arg, "HOST:PORT or off");
		cfg->rpc_tcp = true;
		break;
	case O_RPC_HS:
		if (migd_parse_u64(arg, MIGD_RPC_TIMEOUT_MS_MAX, &u))
			return bad("--rpc-handshake-timeout-ms", arg,
				   "0 (never) ..86400000");
		cfg->rpc_handshake_timeout_ms = (uint32_t)u;
		break;
	case O_RPC_IDLE:
		if (migd_parse_u64(arg, MIGD_RPC_TIMEOUT_MS_MAX, &u))
			return bad("--rpc-idle-timeout-ms", arg,
				   "0 (never) ..86400000");
		cfg->rpc_idle_timeout_ms = (uint32_t)u;
		break;
	case O_METRICS:
		if (!strcmp(arg, "off")) {
			cfg->metrics = false;
			break;
		}
		if (migd_parse_hostport(arg, true, cfg->metrics_host,
					sizeof(cfg->metrics_host),
					&cfg->metrics_port))
			return bad("--metrics-listen", arg, "HOST:PORT or off");
		cfg->metrics = true;
		break;
	case O_DMON:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return bad("--dirty-monitor", arg, "on or off");
		cfg->dirty_monitor = !strcmp(arg, "on");
		break;
	case O_DINT:
		if (migd_parse_u64(arg, HV_DR_INTERVAL_MS_MAX, &u) ||
		    u < HV_DR_INTERVAL_MS_MIN)
			return bad("--dirty-interval-ms", arg, "20..1000");
		cfg->dirty_interval_ms = (uint32_t)u;
		break;
	case O_DSHIFT:
		if (migd_parse_u64(arg, HV_DR_SHIFT_MAX, &u))
			return bad("--dirty-sample-shift", arg, "0..6");
		cfg->dirty_sample_shift = (uint32_t)u;
		break;
	case O_DEVENT:
		if (migd_parse_u64(arg, 60000, &u) || u < 100)
			return bad("--dirty-event-ms", arg, "100..60000");
		cfg->dirty_event_ms = (uint32_t)u;
		break;
	case O_MIG_IO:
		if (migd_parse_u64(arg, 600000, &u) || u < 200)
			return bad("--migration-io-timeout-ms", arg,
				   "200..600000");
		cfg->mig_io_timeout_ms = (uint32_t)u;
		break;
	case O_RING:
		if (!strcmp(arg, "off")) {
			cfg->dirty_ring = 0;
			break;
		}
		if (migd_parse_u64(arg, MIGD_DIRTY_RING_MAX, &u) ||
		    u < MIGD_DIRTY_RING_MIN || (u & (u - 1)))
			return bad("--dirty-ring", arg,
				   "a power of two in 256..65536, or off");
		cfg->dirty_ring = (uint32_t)u;
		break;
	case O_CONFIG:
		return config_load(arg, cfg);
	case O_VERSION:
		printf("migrated %s\n", MIGD_VERSION);
		return -1;
	case O_HELP:
		usage(stdout);
		return -1;
	default:
		usage(stderr);
		return 2;
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * The config file (tools/systemd/migrated.conf): "key = value" lines whose
 * keys are the long options without "--"; '#' starts a comment; flags
 * take true/false. Command-line options given after --config win.
 */
static int config_load(const char *path, struct migd_cfg *cfg)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	unsigned lineno = 0;
	int ret = 0;

	if (!f) {
		fprintf(stderr, "migrated: cannot read config %s: %s\n", path,
			strerror(errno));
		return 2;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *eq, *key, *val;
		size_t i;

		lineno++;
		if (hash)
			*hash = '\0';
		key = trim(line);
		if (!*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			fprintf(stderr, "migrated: %s:%u: expected key = "
					"value\n", path, lineno);
			ret = 2;
			break;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		for (i = 0; opts[i].name; i++)
			if (!strcmp(opts[i].name, key))
				break;
		if (!opts[i].name || opts[i].val == O_CONFIG ||
		    opts[i].val == O_VERSION || opts[i].val == O_HELP) {
			fprintf(stderr, "migrated: %s:%u: unknown key '%s'\n",
				path, lineno, key);
			ret = 2;
			break;
		}
		if (opts[i].has_arg == no_argument) {
			if (!strcmp(val, "false") || !strcmp(val, "no") ||
			    !strcmp(val, "0"))
				continue;
			if (strcmp(val, "true") && strcmp(val, "yes") &&
			    strcmp(val, "1")) {
				fprintf(stderr, "migrated: %s:%u: %s takes "
						"true or false\n",
					path, lineno, key);
				ret = 2;
				break;
			}
		}
		ret = apply(opts[i].val, val, cfg);
		if (ret < 0)
			ret = 2;
	}
	fclose(f);
	return ret;
}

int main(int argc, char **argv)
{
	struct migd_cfg cfg;
	int c, ret;

	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.mig_host, "0.0.0.0");
	cfg.dirty_monitor = true;
	cfg.dirty_interval_ms = MIGD_DIRTY_INTERVAL_MS_DEFAULT;
	cfg.dirty_event_ms = MIGD_DIRTY_EVENT_MS_DEFAULT;
	cfg.dirty_ring = MIGD_DIRTY_RING_DEFAULT;
	cfg.rpc_handshake_timeout_ms = MIGD_RPC_HANDSHAKE_TIMEOUT_MS_DEFAULT;
	cfg.rpc_idle_timeout_ms = MIGD_RPC_IDLE_TIMEOUT_MS_DEFAULT;
	if (migd_default_state_dir(cfg.state_dir, sizeof(cfg.state_dir))) {
		fprintf(stderr, "migrated: default state dir too long\n");
		return 2;
	}
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		ret = apply(c, optarg, &cfg);
		if (ret)
			return ret < 0 ? 0 : ret;
	}
	if (optind < argc) {
		fprintf(stderr, "migrated: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	/* A client that disconnects must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	return migd_run(&cfg);
}
