// SPDX-License-Identifier: MIT
/*
 * migrated: the live-migration daemon. Parses options, then migd_run().
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		"  --tls-dir DIR          ca.pem, host.pem, host.key of\n"
		"                         migration TLS (default STATE/tls)\n"
		"  --dev-tls              generate a throwaway CA and host\n"
		"                         certificate in the TLS dir if missing\n"
		"                         (two daemons must share the dir)\n"
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

int main(int argc, char **argv)
{
	enum { O_STATE = 256, O_SOCKET, O_ACCEL, O_LOG, O_LISTEN, O_TLSDIR,
	       O_DEVTLS, O_VERSION, O_HELP };
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "accel", required_argument, NULL, O_ACCEL },
		{ "log-level", required_argument, NULL, O_LOG },
		{ "migration-listen", required_argument, NULL, O_LISTEN },
		{ "tls-dir", required_argument, NULL, O_TLSDIR },
		{ "dev-tls", no_argument, NULL, O_DEVTLS },
		{ "version", no_argument, NULL, O_VERSION },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct migd_cfg cfg;
	int c;

	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.mig_host, "0.0.0.0");
	if (migd_default_state_dir(cfg.state_dir, sizeof(cfg.state_dir))) {
		fprintf(stderr, "migrated: default state dir too long\n");
		return 2;
	}
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		size_t i;

		switch (c) {
		case O_STATE:
			if (strlen(optarg) >= sizeof(cfg.state_dir) - 32 ||
			    !*optarg)
				return bad("--state-dir", optarg,
					   "empty or too long");
			strcpy(cfg.state_dir, optarg);
			break;
		case O_SOCKET:
			if (strlen(optarg) >= sizeof(cfg.socket_path) ||
			    !*optarg)
				return bad("--socket", optarg,
					   "empty or longer than 107 bytes");
			strcpy(cfg.socket_path, optarg);
			break;
		case O_ACCEL:
			if (!strcmp(optarg, "auto"))
				cfg.accel = HV_ACCEL_INVALID;
			else if ((cfg.accel = migd_accel_parse(
					  optarg, HV_ACCEL_INVALID)) ==
				 HV_ACCEL_INVALID)
				return bad("--accel", optarg,
					   "kvm, soft or auto");
			break;
		case O_LOG:
			for (i = 0; i < HV_ARRAY_SIZE(log_levels); i++)
				if (!strcmp(optarg, log_levels[i].name))
					break;
			if (i == HV_ARRAY_SIZE(log_levels))
				return bad("--log-level", optarg,
					   "err, warn, info or debug");
			hv_log_set_level(log_levels[i].level);
			break;
		case O_LISTEN:
			if (migd_parse_hostport(optarg, true, cfg.mig_host,
						sizeof(cfg.mig_host),
						&cfg.mig_port))
				return bad("--migration-listen", optarg,
					   "HOST:PORT");
			if (!cfg.mig_host[0])
				strcpy(cfg.mig_host, "0.0.0.0");
			break;
		case O_TLSDIR:
			if (strlen(optarg) >= sizeof(cfg.tls_dir) - 32 ||
			    !*optarg)
				return bad("--tls-dir", optarg,
					   "empty or too long");
			strcpy(cfg.tls_dir, optarg);
			break;
		case O_DEVTLS:
			cfg.dev_tls = true;
			break;
		case O_VERSION:
			printf("migrated %s\n", MIGD_VERSION);
			return 0;
		case O_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
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
