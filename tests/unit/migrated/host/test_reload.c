// SPDX-License-Identifier: MIT
/*
 * SIGHUP reload (migrated/host/reload.c) on a struct migd_host without
 * listeners: live options applied, restart-only ones kept, a config that
 * does not parse changes nothing, the DIRTY_RATE timer takes the new
 * period, and the TLS material is checked (missing file, key of another
 * certificate, certificate of another CA) with tls_ready following it.
 * The TCP listener's context swap is tests/integration/
 * test_daemon_reload.sh's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvcore/log.h"
#include "migrated/host/config.h"
#include "migrated/host/daemon.h"
#include "migrated/host/reload.h"
#include "migrated/mig/devca.h"
#include "tests/harness/hv_test.h"

static char dir[] = "/tmp/migd-reload.XXXXXX";
static char conf[sizeof(dir) + 16], tls[sizeof(dir) + 16];
static char other[sizeof(dir) + 16];
static struct mig_devca ca, ca2;
static struct migd_host *d;
static char *argv[8];
static enum hv_log_level level0;

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void copy(const char *from, const char *to)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	CU_ASSERT_FATAL(system(cmd) == 0);
}

static int suite_init(void)
{
	char err[256];
	FILE *f;

	level0 = hv_log_get_level();
	if (!mkdtemp(dir))
		return -1;
	snprintf(conf, sizeof(conf), "%s/m.conf", dir);
	snprintf(tls, sizeof(tls), "%s/tls", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	if (mig_devca_ensure(tls, &ca) || mig_devca_ensure(other, &ca2))
		return -1;
	d = calloc(1, sizeof(*d));
	f = fopen(conf, "w");
	if (!d || !f || fputs("log-level = warn\n", f) < 0 || fclose(f))
		return -1;
	argv[0] = (char *)"migrated";
	argv[1] = (char *)"--state-dir";
	argv[2] = dir;
	argv[3] = (char *)"--config";
	argv[4] = conf;
	argv[5] = (char *)"--tls-dir";
	argv[6] = tls;
	if (migd_config_parse(7, argv, &d->cfg, err, sizeof(err)))
		return -1;
	snprintf(d->tls_ca, sizeof(d->tls_ca), "%s", ca.ca_cert);
	snprintf(d->tls_cert, sizeof(d->tls_cert), "%s", ca.host_cert);
	snprintf(d->tls_key, sizeof(d->tls_key), "%s", ca.host_key);
	d->tls_ready = true;
	return 0;
}

static int suite_clean(void)
{
	char cmd[256];

	hv_log_set_level(level0);
	free(d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_live_options_applied_others_kept(void)
{
	write_conf("log-level = debug\n"
		   "migration_io_timeout_ms = 3000\n"
		   "rpc-handshake-timeout-ms = 700\n"
		   "rpc-idle-timeout-ms = 0\n"
		   "stop-vms = true\n"
		   "accel = soft\n"
		   "dirty-ring = 1024\n"
		   "migration-listen = 127.0.0.1:4000\n");
	CU_ASSERT_EQUAL(migd_reload(d), 0);
	CU_ASSERT_EQUAL(d->cfg.log_level, HV_LOG_DBG);
	CU_ASSERT_EQUAL(hv_log_get_level(), HV_LOG_DBG);
	CU_ASSERT_EQUAL(d->cfg.mig_io_timeout_ms, 3000);
	CU_ASSERT_EQUAL(d->cfg.rpc_handshake_timeout_ms, 700);
	CU_ASSERT_EQUAL(d->cfg.rpc_idle_timeout_ms, 0);
	CU_ASSERT(d->cfg.stop_vms);
	/* Restart-only: the running values stay. */
	CU_ASSERT_EQUAL(d->cfg.accel, HV_ACCEL_INVALID);
	CU_ASSERT_EQUAL(d->cfg.dirty_ring, MIGD_DIRTY_RING_DEFAULT);
	CU_ASSERT_STRING_EQUAL(d->cfg.mig_host, "127.0.0.1");
	CU_ASSERT_EQUAL(d->cfg.mig_port, 0);
	/* A key removed goes back to its default. */
	write_conf("log-level = warn\n");
	CU_ASSERT_EQUAL(migd_reload(d), 0);
	CU_ASSERT_EQUAL(hv_log_get_level(), HV_LOG_WARN);
	CU_ASSERT_EQUAL(d->cfg.mig_io_timeout_ms, 0);
	CU_ASSERT(!d->cfg.stop_vms);
	CU_ASSERT_EQUAL(d->cfg.rpc_idle_timeout_ms,
			MIGD_RPC_IDLE_TIMEOUT_MS_DEFAULT);
}

static void test_bad_config_changes_nothing(void)
{
	write_conf("log-level = debug\nmigration-io-timeout-ms = 4000\n"
		   "dirty-event-ms = 1\n");
	CU_ASSERT_EQUAL(migd_reload(d), -EINVAL);
	CU_ASSERT_EQUAL(hv_log_get_level(), HV_LOG_WARN);
	CU_ASSERT_EQUAL(d->cfg.mig_io_timeout_ms, 0);
	CU_ASSERT_EQUAL(d->cfg.dirty_event_ms, MIGD_DIRTY_EVENT_MS_DEFAULT);
	write_conf("log-level = warn\n");
	CU_ASSERT_EQUAL(migd_reload(d), 0);
}

/* The DIRTY_RATE timer is a worker's: the host keeps the new period for
 * the workers it starts from now on (host.c passes --dirty-event-ms). */
static void test_dirty_event_ms_for_new_workers(void)
{
	write_conf("log-level = warn\ndirty-event-ms = 250\n");
	CU_ASSERT_EQUAL(migd_reload(d), 0);
	CU_ASSERT_EQUAL(d->cfg.dirty_event_ms, 250);
	write_conf("log-level = warn\n");
}

static void test_tls_material_is_checked(void)
{
	char key[600], cert[600];

	snprintf(key, sizeof(key), "%s/saved.key", dir);
	snprintf(cert, sizeof(cert), "%s/saved.pem", dir);
	copy(ca.host_key, key);
	copy(ca.host_cert, cert);
	/* Missing: refused, and migrations refused until it is back. */
	CU_ASSERT_FATAL(unlink(ca.host_key) == 0);
	CU_ASSERT_EQUAL(migd_reload(d), -ENOENT);
	CU_ASSERT(!d->tls_ready);
	/* The key of another certificate. */
	copy(ca2.host_key, ca.host_key);
	CU_ASSERT_EQUAL(migd_reload(d), -EKEYREJECTED);
	CU_ASSERT(d->tls_ready); /* there: migrations load and refuse it */
	copy(key, ca.host_key);
	CU_ASSERT_EQUAL(migd_reload(d), 0);
	/* A certificate (and its key) of another CA under our ca.pem. */
	copy(ca2.host_cert, ca.host_cert);
	copy(ca2.host_key, ca.host_key);
	CU_ASSERT_EQUAL(migd_reload(d), -EBADMSG);
	copy(cert, ca.host_cert);
	copy(key, ca.host_key);
	CU_ASSERT_EQUAL(migd_reload(d), 0);
}

static void test_garbage_ca_refused(void)
{
	char saved[600], cmd[700];

	snprintf(saved, sizeof(saved), "%s/saved-ca.pem", dir);
	copy(ca.ca_cert, saved);
	snprintf(cmd, sizeof(cmd), "echo 'not a certificate' > '%s'",
		 ca.ca_cert);
	CU_ASSERT_FATAL(system(cmd) == 0);
	CU_ASSERT_EQUAL(migd_reload(d), -EBADMSG);
	/* Another CA's: our host.pem does not chain to it. */
	copy(ca2.ca_cert, ca.ca_cert);
	CU_ASSERT_EQUAL(migd_reload(d), -EBADMSG);
	copy(saved, ca.ca_cert);
	CU_ASSERT_EQUAL(migd_reload(d), 0);
	CU_ASSERT(d->tls_ready);
}

static void test_stopping_does_nothing(void)
{
	write_conf("log-level = debug\n");
	d->stopping = true;
	CU_ASSERT_EQUAL(migd_reload(d), -ECANCELED);
	CU_ASSERT_EQUAL(hv_log_get_level(), HV_LOG_WARN);
	d->stopping = false;
}

static CU_TestInfo tests[] = {
	{"live_options_applied_others_kept",
	 test_live_options_applied_others_kept},
	{"bad_config_changes_nothing", test_bad_config_changes_nothing},
	{"dirty_event_ms_for_new_workers", test_dirty_event_ms_for_new_workers},
	{"tls_material_is_checked", test_tls_material_is_checked},
	{"garbage_ca_refused", test_garbage_ca_refused},
	{"stopping_does_nothing", test_stopping_does_nothing},
	CU_TEST_INFO_NULL,
};

HV_TEST_SUITE("migrated/host/reload", suite_init, suite_clean, tests);
