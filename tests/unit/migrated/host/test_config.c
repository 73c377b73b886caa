// SPDX-License-Identifier: MIT
/*
 * Options and the config file (migrated/host/config.c): defaults and
 * what derives from them, the file read where --config stands, '_' for
 * '-' in keys, --stop-vms, errors that name the file, line and option,
 * and a second parse of the same command line re-reading the file (what
 * SIGHUP does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrated/host/config.h"
#include "migrated/host/daemon.h"
#include "tests/harness/hv_test.h"

static char dir[] = "/tmp/migd-config.XXXXXX";
static char conf[sizeof(dir) + 16];
static struct migd_cfg cfg; /* big: not on the stack */
static char err[1024];

static int suite_init(void)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(conf, sizeof(conf), "%s/m.conf", dir);
	return 0;
}

static int suite_clean(void)
{
	unlink(conf);
	rmdir(dir);
	return 0;
}

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* Parse a NULL-terminated argument list (argv[0] added). */
static int parse(const char *const *args)
{
	static char *argv[32];
	int argc = 0;

	argv[argc++] = (char *)"migrated";
	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	err[0] = '\0';
	return migd_config_parse(argc, argv, &cfg, err, sizeof(err));
}

static void test_defaults_and_derived_paths(void)
{
	const char *args[] = { "--state-dir", "/tmp/x-state", NULL };

	CU_ASSERT_EQUAL(parse(args), 0);
	CU_ASSERT_STRING_EQUAL(cfg.state_dir, "/tmp/x-state");
	CU_ASSERT_STRING_EQUAL(cfg.socket_path, "/tmp/x-state/control.sock");
	CU_ASSERT_STRING_EQUAL(cfg.tls_dir, "/tmp/x-state/tls");
	CU_ASSERT_STRING_EQUAL(cfg.mig_host, "127.0.0.1");
	CU_ASSERT_EQUAL(cfg.dirty_event_ms, MIGD_DIRTY_EVENT_MS_DEFAULT);
	CU_ASSERT_EQUAL(cfg.rpc_idle_timeout_ms,
			MIGD_RPC_IDLE_TIMEOUT_MS_DEFAULT);
	CU_ASSERT(cfg.dirty_monitor);
	CU_ASSERT(!cfg.stop_vms);
	CU_ASSERT(!cfg.rpc_tcp);
	CU_ASSERT_EQUAL(cfg.log_level, hv_log_get_level());
	CU_ASSERT_STRING_EQUAL(cfg.config_path, "");
	CU_ASSERT_EQUAL(cfg.argc, 3);
}

static void test_file_where_config_stands(void)
{
	const char *args[] = { "--dirty-event-ms", "300", "--config", conf,
			       "--rpc-idle-timeout-ms", "7000", NULL };

	write_conf("# comment\n"
		   "  log_level = debug   # '_' is '-'\n"
		   "dirty-event-ms = 2000\n"
		   "rpc-idle-timeout-ms = 9000\n"
		   "stop_vms = true\n"
		   "dev-tls = false\n"
		   "rpc-listen = 127.0.0.1:0\n");
	CU_ASSERT_EQUAL(parse(args), 0);
	CU_ASSERT_STRING_EQUAL(cfg.config_path, conf);
	CU_ASSERT_EQUAL(cfg.log_level, HV_LOG_DBG);
	CU_ASSERT_EQUAL(cfg.dirty_event_ms, 2000); /* the file wins */
	CU_ASSERT_EQUAL(cfg.rpc_idle_timeout_ms, 7000); /* after it: wins */
	CU_ASSERT(cfg.stop_vms);
	CU_ASSERT(!cfg.dev_tls);
	CU_ASSERT(cfg.rpc_tcp);
	CU_ASSERT_STRING_EQUAL(cfg.rpc_host, "127.0.0.1");
	CU_ASSERT_EQUAL(cfg.rpc_port, 0);
}

static void test_stop_vms_flag(void)
{
	const char *on[] = { "--stop-vms", NULL };
	const char *off[] = { NULL };

	CU_ASSERT_EQUAL(parse(on), 0);
	CU_ASSERT(cfg.stop_vms);
	CU_ASSERT_EQUAL(parse(off), 0);
	CU_ASSERT(!cfg.stop_vms);
	write_conf("stop-vms = no\n");
	{
		const char *args[] = { "--config", conf, NULL };

		CU_ASSERT_EQUAL(parse(args), 0);
		CU_ASSERT(!cfg.stop_vms);
	}
}

static void test_second_parse_rereads_the_file(void)
{
	const char *args[] = { "--config", conf, NULL };

	write_conf("log-level = warn\nmigration-io-timeout-ms = 5000\n");
	CU_ASSERT_EQUAL(parse(args), 0);
	CU_ASSERT_EQUAL(cfg.log_level, HV_LOG_WARN);
	CU_ASSERT_EQUAL(cfg.mig_io_timeout_ms, 5000);
	/* A key removed goes back to its default. */
	write_conf("log-level = err\n");
	CU_ASSERT_EQUAL(parse(args), 0);
	CU_ASSERT_EQUAL(cfg.log_level, HV_LOG_ERR);
	CU_ASSERT_EQUAL(cfg.mig_io_timeout_ms, 0);
}

static void test_errors_name_their_cause(void)
{
	const char *with_conf[] = { "--config", conf, NULL };
	const char *bad_opt[] = { "--accel", "xen", NULL };
	const char *unknown[] = { "--frobnicate", NULL };
	const char *extra[] = { "stray", NULL };
	const char *missing[] = { "--config", "/nonexistent/m.conf", NULL };
	char want[256];

	write_conf("accel = soft\nfoo = 1\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	snprintf(want, sizeof(want), "%s:2: unknown key 'foo'", conf);
	CU_ASSERT_STRING_EQUAL(err, want);

	write_conf("\n\ndirty-event-ms = 5\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	snprintf(want, sizeof(want),
		 "%s:3: bad --dirty-event-ms '5': 100..60000", conf);
	CU_ASSERT_STRING_EQUAL(err, want);

	write_conf("stop_vms = maybe\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	snprintf(want, sizeof(want), "%s:1: stop_vms takes true or false",
		 conf);
	CU_ASSERT_STRING_EQUAL(err, want);

	write_conf("just words\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	snprintf(want, sizeof(want), "%s:1: expected key = value", conf);
	CU_ASSERT_STRING_EQUAL(err, want);

	/* --config inside a config file is not a key. */
	write_conf("config = /etc/other.conf\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown key 'config'"));

	CU_ASSERT_EQUAL(parse(bad_opt), 2);
	CU_ASSERT_STRING_EQUAL(err, "bad --accel 'xen': kvm, soft or auto");
	CU_ASSERT_EQUAL(parse(unknown), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--frobnicate"));
	CU_ASSERT_EQUAL(parse(extra), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unexpected argument 'stray'"));
	CU_ASSERT_EQUAL(parse(missing), 2);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(err, "cannot read config /nonexistent/m.conf: No such"));
}

/* The guest RAM backing: anon by default, named on the command line or
 * in the file, anything else refused with the accepted names. */
static void test_backing_default_option_and_key(void)
{
	const char *none[] = { NULL };
	const char *memfd[] = { "--backing", "memfd", NULL };
	const char *bad[] = { "--backing", "shm", NULL };
	const char *with_conf[] = { "--config", conf, NULL };

	CU_ASSERT_EQUAL(parse(none), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_PRIVATE);
	CU_ASSERT_EQUAL(MIGD_BACKING_DEFAULT, HV_BACKING_PRIVATE);
	CU_ASSERT_EQUAL(parse(memfd), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_ANON); /* "memfd" */
	write_conf("backing = hugetlb\n");
	CU_ASSERT_EQUAL(parse(with_conf), 0);
	CU_ASSERT_EQUAL(cfg.backing, HV_BACKING_HUGETLB);
	CU_ASSERT_EQUAL(parse(bad), 2);
	CU_ASSERT_STRING_EQUAL(err, "bad --backing 'shm': anon, memfd, "
				    "memfd-thp or hugetlb");
}

/* A fencing grace at or over the lease TTL would let another host take a
 * VM over before this one paused it: refused, options or config file. */
static void test_fence_grace_must_be_below_the_ttl(void)
{
	const char *fleet[] = { "--etcd", "http://127.0.0.1:2379",
				"--host-id", "h1", "--etcd-ttl", "5",
				"--fence-grace-ms", "4999", "--etcd-optional",
				NULL };
	const char *at_ttl[] = { "--etcd-ttl", "5", "--fence-grace-ms",
				 "5000", NULL };
	const char *default_ttl[] = { "--fence-grace-ms", "10000", NULL };
	const char *with_conf[] = { "--config", conf, NULL };
	const char *bad_id[] = { "--host-id", "a b", NULL };

	CU_ASSERT_EQUAL(parse(fleet), 0);
	CU_ASSERT_STRING_EQUAL(cfg.etcd_endpoints, "http://127.0.0.1:2379");
	CU_ASSERT_STRING_EQUAL(cfg.host_id, "h1");
	CU_ASSERT_EQUAL(cfg.etcd_ttl_s, 5);
	CU_ASSERT_EQUAL(cfg.fence_grace_ms, 4999);
	CU_ASSERT_TRUE(cfg.etcd_optional);
	CU_ASSERT_EQUAL(parse(at_ttl), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "below the lease TTL (5000 ms)"));
	CU_ASSERT_EQUAL(parse(default_ttl), 2); /* the default TTL is 10 s */
	write_conf("etcd_ttl = 3\nfence_grace_ms = 3000\n");
	CU_ASSERT_EQUAL(parse(with_conf), 2);
	CU_ASSERT_EQUAL(parse(bad_id), 2);
}

static void test_migration_listen_defaults_to_the_configured_address(void)
{
	const char *rpc[] = { "--rpc-listen", "10.1.2.3:7700", NULL };
	const char *wild[] = { "--rpc-listen", "0.0.0.0:7700", NULL };
	const char *range[] = { "--migration-listen", "10.1.2.3:49152-49215",
				"--rpc-listen", "10.9.9.9:7700", NULL };
	const char *any[] = { "--migration-listen", ":0", NULL };

	CU_ASSERT_EQUAL(parse(rpc), 0);
	CU_ASSERT_STRING_EQUAL(cfg.mig_host, "10.1.2.3");
	CU_ASSERT_EQUAL(parse(wild), 0);
	CU_ASSERT_STRING_EQUAL(cfg.mig_host, "127.0.0.1");
	CU_ASSERT_EQUAL(parse(range), 0);
	CU_ASSERT_STRING_EQUAL(cfg.mig_host, "10.1.2.3");
	CU_ASSERT_EQUAL(cfg.mig_port, 49152);
	CU_ASSERT_EQUAL(cfg.mig_port_max, 49215);
	/* Every interface only when asked for. */
	CU_ASSERT_EQUAL(parse(any), 0);
	CU_ASSERT_STRING_EQUAL(cfg.mig_host, "0.0.0.0");
}

static void test_rpc_roles_accumulate_and_bad_ones_are_named(void)
{
	const char *ok[] = { "--rpc-role", "ops:operator", "--rpc-role",
			     "viewer:read-only", "--rpc-default-role",
			     "read-only", NULL };
	const char *bad[] = { "--rpc-role", "ops:admin", NULL };
	const char *bad_def[] = { "--rpc-default-role", "root", NULL };

	CU_ASSERT_EQUAL(parse(ok), 0);
	CU_ASSERT_EQUAL(cfg.nr_rpc_rules, 2);
	CU_ASSERT_STRING_EQUAL(cfg.rpc_rules[1].id, "viewer");
	CU_ASSERT_EQUAL(cfg.rpc_rules[1].role, MIGD_RPC_ROLE_READ_ONLY);
	CU_ASSERT_EQUAL(cfg.rpc_default_role, MIGD_RPC_ROLE_READ_ONLY);
	CU_ASSERT_EQUAL(parse(bad), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--rpc-role 'ops:admin'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "peer-daemon"));
	CU_ASSERT_EQUAL(parse(bad_def), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--rpc-default-role"));
}

static CU_TestInfo tests[] = {
	{ "fence_grace_must_be_below_the_ttl",
	  test_fence_grace_must_be_below_the_ttl },
	{ "migration_listen_defaults_to_the_configured_address",
	  test_migration_listen_defaults_to_the_configured_address },
	{ "rpc_roles_accumulate_and_bad_ones_are_named",
	  test_rpc_roles_accumulate_and_bad_ones_are_named },
	{ "backing_default_option_and_key",
	  test_backing_default_option_and_key },
	{ "defaults_and_derived_paths", test_defaults_and_derived_paths },
	{ "file_where_config_stands", test_file_where_config_stands },
	{ "stop_vms_flag", test_stop_vms_flag },
	{ "second_parse_rereads_the_file",
	  test_second_parse_rereads_the_file },
	{ "errors_name_their_cause", test_errors_name_their_cause },
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/config", suite_init, suite_clean, tests);
