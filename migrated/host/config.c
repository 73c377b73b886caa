// SPDX-License-Identifier: MIT
/*
 * migd_config: options and the config file into struct migd_cfg
 * (config.h).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvcore/dirtyrate.h"
#include "hvcore/mem_backing.h"
#include "migrated/host/config.h"
#include "migrated/host/daemon.h"

void migd_config_usage(FILE *f)
{
	fprintf(f,
		"usage: migrated [options]\n"
		"  --state-dir DIR        state directory, created 0700\n"
		"                         (default $MIGRATED_STATE_DIR,\n"
		"                         $XDG_RUNTIME_DIR/migrated or\n"
		"                         /tmp/migrated-UID)\n"
		"  --socket PATH          control socket (default "
		"STATE/control.sock)\n"
		"  --socket-group GROUP   operators: the socket 0660 and the\n"
		"                         state directory 0710 in GROUP, so\n"
		"                         its members need no root (default:\n"
		"                         owner only, 0600 and 0700)\n"
		"  --accel kvm|soft|auto  default accelerator (auto)\n"
		"  --backing anon|memfd|memfd-thp|hugetlb\n"
		"                         default guest RAM backing (anon;\n"
		"                         local live update needs memfd)\n"
		"  --log-level LEVEL      err, warn, info or debug (info)\n"
		"  --log-format text|json key=value lines (text) or one JSON\n"
		"                         object per line, for log shippers\n"
		"  --migration-listen HOST:PORT|HOST:FIRST-LAST\n"
		"                         default listen address of incoming\n"
		"                         migrations: the first free port of\n"
		"                         the range (port 0: any); default the\n"
		"                         --rpc-listen host, else 127.0.0.1\n"
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
		"  --metrics-listen HOST:PORT|off\n"
		"                         Prometheus text: GET or HEAD\n"
		"                         /metrics (plain HTTP; off; port 0\n"
		"                         = any)\n"
		"  --dirty-monitor on|off per-VM dirty-rate monitor (on)\n"
		"  --dirty-interval-ms MS its harvest period, 20..1000 (200)\n"
		"  --dirty-sample-shift N re-arm one 2 MiB block in 2^N, 0..6\n"
		"                         (0: every page)\n"
		"  --dirty-event-ms MS    DIRTY_RATE event period, 100..60000\n"
		"                         (1000)\n"
		"  --rpc-role IDENTITY:ROLE\n"
		"                         role of TCP clients whose certificate\n"
		"                         CN or subjectAltName is IDENTITY:\n"
		"                         none, read-only, peer-daemon or\n"
		"                         operator (repeatable; first match)\n"
		"  --rpc-default-role ROLE\n"
		"                         role of identities no rule names\n"
		"                         (default operator without rules,\n"
		"                         none with)\n"
		"  --dirty-ring ENTRIES|off\n"
		"                         dirty ring entries per vCPU of KVM\n"
		"                         VMs created without one (power of\n"
		"                         two, 256..65536; off = the dirty\n"
		"                         bitmap; default off)\n"
		"  --stop-vms             on SIGTERM also destroy every VM;\n"
		"                         by default VMs keep running in\n"
		"                         their worker processes and a\n"
		"                         restarted daemon adopts them\n"
		"  --vmm PATH             the worker binary, one process per\n"
		"                         VM (default: migrated-vmm next to\n"
		"                         migrated)\n"
		"  --etcd URL[,URL...]    join the fleet kept in this etcd\n"
		"                         cluster (docs/fleet.md); the\n"
		"                         daemon refuses to start if it\n"
		"                         cannot register\n"
		"  --etcd-cacert/--etcd-cert/--etcd-key FILE\n"
		"                         TLS to etcd (https URLs)\n"
		"  --etcd-optional        etcd unreachable at start: run\n"
		"                         standalone instead of refusing\n"
		"  --host-id ID           this host in the fleet (hostname)\n"
		"  --etcd-prefix P        key prefix (/migrated/)\n"
		"  --etcd-ttl S           host lease TTL, seconds (10)\n"
		"  --fence-grace-ms MS    pause owned VMs after MS without\n"
		"                         etcd (default 60%% of the TTL;\n"
		"                         must be below it)\n"
		"  --config FILE          key = value lines (docs/api.md);\n"
		"                         SIGHUP reads it again\n"
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

const char *migd_log_level_name(enum hv_log_level level)
{
	switch (level) {
	case HV_LOG_ERR:
		return "err";
	case HV_LOG_WARN:
		return "warn";
	case HV_LOG_INFO:
		return "info";
	case HV_LOG_DBG:
		return "debug";
	default:
		return "?";
	}
}

static int fail(char *err, size_t err_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
	return 2;
}

#define bad(opt, val, why) \
	fail(err, err_size, "bad %s '%s': %s", opt, val, why)

enum { O_STATE = 256, O_SOCKET, O_ACCEL, O_LOG, O_LISTEN, O_TLSDIR,
       O_DEVTLS, O_RPC, O_METRICS, O_DMON, O_DINT, O_DSHIFT, O_DEVENT,
       O_RPC_HS, O_RPC_IDLE, O_RING, O_CONFIG, O_VERSION, O_HELP, O_MIG_IO,
       O_STOP_VMS, O_VMM, O_BACKING, O_ETCD, O_ETCD_CA, O_ETCD_CERT,
       O_ETCD_KEY, O_ETCD_OPT, O_ETCD_PREFIX, O_ETCD_TTL, O_HOST_ID,
       O_FENCE_GRACE, O_LOG_FORMAT, O_RPC_ROLE, O_RPC_DEFROLE,
       O_SOCKET_GROUP };

static const struct option opts[] = {
	{ "state-dir", required_argument, NULL, O_STATE },
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "socket-group", required_argument, NULL, O_SOCKET_GROUP },
	{ "accel", required_argument, NULL, O_ACCEL },
	{ "backing", required_argument, NULL, O_BACKING },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "log-format", required_argument, NULL, O_LOG_FORMAT },
	{ "migration-listen", required_argument, NULL, O_LISTEN },
	{ "migration-io-timeout-ms", required_argument, NULL, O_MIG_IO },
	{ "tls-dir", required_argument, NULL, O_TLSDIR },
	{ "dev-tls", no_argument, NULL, O_DEVTLS },
	{ "rpc-listen", required_argument, NULL, O_RPC },
	{ "rpc-handshake-timeout-ms", required_argument, NULL, O_RPC_HS },
	{ "rpc-idle-timeout-ms", required_argument, NULL, O_RPC_IDLE },
	{ "rpc-role", required_argument, NULL, O_RPC_ROLE },
	{ "rpc-default-role", required_argument, NULL, O_RPC_DEFROLE },
	{ "metrics-listen", required_argument, NULL, O_METRICS },
	{ "dirty-monitor", required_argument, NULL, O_DMON },
	{ "dirty-interval-ms", required_argument, NULL, O_DINT },
	{ "dirty-sample-shift", required_argument, NULL, O_DSHIFT },
	{ "dirty-event-ms", required_argument, NULL, O_DEVENT },
	{ "dirty-ring", required_argument, NULL, O_RING },
	{ "stop-vms", no_argument, NULL, O_STOP_VMS },
	{ "vmm", required_argument, NULL, O_VMM },
	{ "etcd", required_argument, NULL, O_ETCD },
	{ "etcd-cacert", required_argument, NULL, O_ETCD_CA },
	{ "etcd-cert", required_argument, NULL, O_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, O_ETCD_KEY },
	{ "etcd-optional", no_argument, NULL, O_ETCD_OPT },
	{ "etcd-prefix", required_argument, NULL, O_ETCD_PREFIX },
	{ "etcd-ttl", required_argument, NULL, O_ETCD_TTL },
	{ "host-id", required_argument, NULL, O_HOST_ID },
	{ "fence-grace-ms", required_argument, NULL, O_FENCE_GRACE },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "version", no_argument, NULL, O_VERSION },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Apply one option: 0, 2 (bad value, @err set) or MIGD_CONFIG_EXIT. */
static int apply(int c, const char *arg, struct migd_cfg *cfg, char *err,
		 size_t err_size)
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
	case O_SOCKET_GROUP:
		if (strlen(arg) >= sizeof(cfg->socket_group) || !*arg)
			return bad("--socket-group", arg,
				   "a group name, 1..63 bytes");
		strcpy(cfg->socket_group, arg);
		break;
	case O_ACCEL:
		if (!strcmp(arg, "auto"))
			cfg->accel = HV_ACCEL_INVALID;
		else if ((cfg->accel = hv_accel_kind_parse(
				  arg, HV_ACCEL_INVALID)) == HV_ACCEL_INVALID)
			return bad("--accel", arg, "kvm, soft or auto");
		break;
	case O_BACKING:
		cfg->backing = hv_mem_backing_parse(arg);
		if (cfg->backing == HV_BACKING_INVALID)
			return bad("--backing", arg,
				   "anon, memfd, memfd-thp or hugetlb");
		break;
	case O_LOG:
		for (i = 0; i < HV_ARRAY_SIZE(log_levels); i++)
			if (!strcmp(arg, log_levels[i].name))
				break;
		if (i == HV_ARRAY_SIZE(log_levels))
			return bad("--log-level", arg,
				   "err, warn, info or debug");
		cfg->log_level = log_levels[i].level;
		break;
	case O_LOG_FORMAT:
		if (strcmp(arg, "text") && strcmp(arg, "json"))
			return bad("--log-format", arg, "text or json");
		cfg->log_format = strcmp(arg, "json") ? HV_LOG_FORMAT_TEXT
						      : HV_LOG_FORMAT_JSON;
		break;
	case O_LISTEN:
		if (migd_parse_listen(arg, cfg->mig_host,
				      sizeof(cfg->mig_host), &cfg->mig_port,
				      &cfg->mig_port_max))
			return bad("--migration-listen", arg,
				   "HOST:PORT or HOST:FIRST-LAST (port 0: "
				   "any free port)");
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
	case O_RPC_ROLE:
		if (cfg->nr_rpc_rules == MIGD_RPC_RULES_MAX)
			return bad("--rpc-role", arg, "more than 32 rules");
		if (migd_rpc_rule_parse(arg,
					&cfg->rpc_rules[cfg->nr_rpc_rules]))
			return bad("--rpc-role", arg,
				   "IDENTITY:ROLE, IDENTITY a certificate CN "
				   "or subjectAltName (1..255 bytes), ROLE "
				   "none, read-only, peer-daemon or operator");
		cfg->nr_rpc_rules++;
		break;
	case O_RPC_DEFROLE:
		cfg->rpc_default_role = migd_rpc_role_parse(arg);
		if (cfg->rpc_default_role == MIGD_RPC_ROLE_INVALID)
			return bad("--rpc-default-role", arg,
				   "none, read-only, peer-daemon or operator");
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
	case O_STOP_VMS:
		cfg->stop_vms = true;
		break;
	case O_VMM:
		if (strlen(arg) >= sizeof(cfg->vmm_path) || !*arg)
			return bad("--vmm", arg, "empty or too long");
		strcpy(cfg->vmm_path, arg);
		break;
	case O_ETCD:
		if (strlen(arg) >= sizeof(cfg->etcd_endpoints))
			return bad("--etcd", arg, "too long");
		strcpy(cfg->etcd_endpoints, arg);
		break;
	case O_ETCD_CA:
	case O_ETCD_CERT:
	case O_ETCD_KEY: {
		char *dst = c == O_ETCD_CA	? cfg->etcd_cacert :
			    c == O_ETCD_CERT	? cfg->etcd_cert :
						  cfg->etcd_key;

		if (strlen(arg) >= PATH_MAX)
			return bad("--etcd-cacert/cert/key", arg, "too long");
		strcpy(dst, arg);
		break;
	}
	case O_ETCD_OPT:
		cfg->etcd_optional = true;
		break;
	case O_ETCD_PREFIX:
		if (strlen(arg) >= sizeof(cfg->etcd_prefix) || arg[0] != '/')
			return bad("--etcd-prefix", arg,
				   "starts with '/', at most 95 bytes");
		strcpy(cfg->etcd_prefix, arg);
		break;
	case O_ETCD_TTL:
		if (migd_parse_u64(arg, 3600, &u) || u < 2)
			return bad("--etcd-ttl", arg, "2..3600 (seconds)");
		cfg->etcd_ttl_s = (uint32_t)u;
		break;
	case O_HOST_ID:
		if (strlen(arg) >= sizeof(cfg->host_id) ||
		    !migd_name_valid(arg))
			return bad("--host-id", arg,
				   "[A-Za-z0-9._-], 1..63 bytes");
		strcpy(cfg->host_id, arg);
		break;
	case O_FENCE_GRACE:
		if (migd_parse_u64(arg, 3600000, &u) || u < 100)
			return bad("--fence-grace-ms", arg, "100..3600000");
		cfg->fence_grace_ms = (uint32_t)u;
		break;
	case O_CONFIG:
		return migd_config_read(arg, cfg, err, err_size);
	case O_VERSION:
		printf("migrated %s\n", MIGD_VERSION);
		return MIGD_CONFIG_EXIT;
	case O_HELP:
		migd_config_usage(stdout);
		return MIGD_CONFIG_EXIT;
	default:
		return fail(err, err_size,
			    "unknown option or missing value (migrated --help "
			    "lists the options)");
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

/* The option a config key names ('_' = '-'); NULL when none may. */
static const struct option *key_option(const char *key)
{
	char name[64];
	size_t n = strlen(key);

	if (n >= sizeof(name))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		name[i] = key[i] == '_' ? '-' : key[i];
	for (size_t i = 0; opts[i].name; i++) {
		if (strcmp(opts[i].name, name))
			continue;
		if (opts[i].val == O_CONFIG || opts[i].val == O_VERSION ||
		    opts[i].val == O_HELP)
			return NULL;
		return &opts[i];
	}
	return NULL;
}

/* One "key = value" line (comment cut, not empty): 0 or 2. */
static int config_line(const char *path, unsigned lineno, char *key,
		       struct migd_cfg *cfg, char *err, size_t err_size)
{
	const struct option *o;
	char *eq = strchr(key, '='), *val;
	int ret;

	if (!eq)
		return fail(err, err_size, "%s:%u: expected key = value",
			    path, lineno);
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	o = key_option(key);
	if (!o)
		return fail(err, err_size, "%s:%u: unknown key '%s'", path,
			    lineno, key);
	if (o->has_arg == no_argument) {
		if (!strcmp(val, "false") || !strcmp(val, "no") ||
		    !strcmp(val, "0"))
			return 0;
		if (strcmp(val, "true") && strcmp(val, "yes") &&
		    strcmp(val, "1"))
			return fail(err, err_size,
				    "%s:%u: %s takes true or false", path,
				    lineno, key);
	}
	ret = apply(o->val, val, cfg, err, err_size);
	if (ret > 0) {
		/* Where the bad value stands. */
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		fail(err, err_size, "%s:%u: %s", path, lineno, why);
	}
	return ret ? 2 : 0;
}

int migd_config_read(const char *path, struct migd_cfg *cfg, char *err,
		     size_t err_size)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	unsigned lineno = 0;
	int ret = 0;

	if (!f)
		return fail(err, err_size, "cannot read config %s: %s", path,
			    strerror(errno));
	if (strlen(path) >= sizeof(cfg->config_path)) {
		fclose(f);
		return fail(err, err_size, "config path too long: %s", path);
	}
	strcpy(cfg->config_path, path);
	while (!ret && fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *key;

		lineno++;
		if (hash)
			*hash = '\0';
		key = trim(line);
		if (*key)
			ret = config_line(path, lineno, key, cfg, err,
					  err_size);
	}
	if (!ret && ferror(f))
		ret = fail(err, err_size, "cannot read config %s: %s", path,
			   strerror(errno));
	fclose(f);
	return ret;
}

int migd_config_load(const char *path, struct migd_cfg *cfg)
{
	char err[1024];
	int ret = migd_config_read(path, cfg, err, sizeof(err));

	if (ret)
		fprintf(stderr, "migrated: %s\n", err);
	return ret;
}

/*
 * The log level before any option: hvcore's default (info, or
 * $HV_LOG_LEVEL), taken on the first call, before main() sets one, so
 * that a reload that drops log-level goes back to it.
 */
static enum hv_log_level base_log_level(void)
{
	static enum hv_log_level base;

	if (!base)
		base = hv_log_get_level();
	return base;
}

int migd_config_defaults(struct migd_cfg *cfg, char *err, size_t err_size)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = base_log_level();
	cfg->dirty_monitor = true;
	cfg->dirty_interval_ms = MIGD_DIRTY_INTERVAL_MS_DEFAULT;
	cfg->dirty_event_ms = MIGD_DIRTY_EVENT_MS_DEFAULT;
	cfg->dirty_ring = MIGD_DIRTY_RING_DEFAULT;
	cfg->backing = MIGD_BACKING_DEFAULT;
	cfg->rpc_handshake_timeout_ms = MIGD_RPC_HANDSHAKE_TIMEOUT_MS_DEFAULT;
	cfg->rpc_idle_timeout_ms = MIGD_RPC_IDLE_TIMEOUT_MS_DEFAULT;
	if (migd_default_state_dir(cfg->state_dir, sizeof(cfg->state_dir)))
		return fail(err, err_size, "default state dir too long");
	return 0;
}

int migd_config_finish(struct migd_cfg *cfg, char *err, size_t err_size)
{
	uint32_t ttl_ms = (cfg->etcd_ttl_s ? cfg->etcd_ttl_s : 10u) * 1000u;

	if (cfg->fence_grace_ms && cfg->fence_grace_ms >= ttl_ms)
		return fail(err, err_size,
			    "--fence-grace-ms %u must be below the lease TTL "
			    "(%u ms): another host may take a VM over once "
			    "the lease expired", cfg->fence_grace_ms, ttl_ms);
	if (!cfg->socket_path[0] &&
	    snprintf(cfg->socket_path, sizeof(cfg->socket_path),
		     "%s/control.sock",
		     cfg->state_dir) >= (int)sizeof(cfg->socket_path)) {
		cfg->socket_path[0] = '\0';
		return fail(err, err_size,
			    "socket path %s/control.sock longer than 107 "
			    "bytes: use --socket",
			    cfg->state_dir);
	}
	/* --state-dir leaves 32 bytes: "/tls" and the file names fit. */
	if (!cfg->tls_dir[0])
		snprintf(cfg->tls_dir, sizeof(cfg->tls_dir), "%.*s/tls",
			 (int)(sizeof(cfg->tls_dir) - 5), cfg->state_dir);
	/* Incoming migrations listen where the operator said the daemon
	 * is reachable, never on every interface by default: the host of
	 * --rpc-listen when that is a specific address, else loopback. */
	if (!cfg->mig_host[0]) {
		bool wild = !cfg->rpc_tcp || !cfg->rpc_host[0] ||
			    !strcmp(cfg->rpc_host, "0.0.0.0") ||
			    !strcmp(cfg->rpc_host, "::");

		snprintf(cfg->mig_host, sizeof(cfg->mig_host), "%s",
			 wild ? "127.0.0.1" : cfg->rpc_host);
	}
	return 0;
}

int migd_config_parse(int argc, char **argv, struct migd_cfg *cfg,
		      char *err, size_t err_size)
{
	int c, ret;

	ret = migd_config_defaults(cfg, err, err_size);
	if (ret)
		return ret;
	cfg->argc = argc;
	cfg->argv = argv;
	/* 0, not 1: glibc then starts over (a second parse on reload). */
	optind = 0;
	opterr = 0; /* our message names the option */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return fail(err, err_size,
				    "unknown option or missing value: %s "
				    "(migrated --help lists the options)",
				    optind > 0 && optind <= argc
					    ? argv[optind - 1]
					    : "?");
		ret = apply(c, optarg, cfg, err, err_size);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return fail(err, err_size,
			    "unexpected argument '%s' (migrated --help lists "
			    "the options)",
			    argv[optind]);
	return migd_config_finish(cfg, err, err_size);
}
