// SPDX-License-Identifier: MIT
/*
 * migrated: the live-migration daemon. Parses options (config.h), then
 * migd_run().
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "hvcore/log.h"
#include "migrated/host/config.h"
#include "migrated/host/daemon.h"
#include "migrated/host/notify.h"

int main(int argc, char **argv)
{
	static struct migd_cfg cfg; /* argv stays in it: reload parses it */
	char err[1024];
	int ret;

	ret = migd_config_parse(argc, argv, &cfg, err, sizeof(err));
	if (ret == MIGD_CONFIG_EXIT)
		return 0;
	if (ret) {
		fprintf(stderr, "migrated: %s\n", err);
		return 2;
	}
	hv_log_set_level(cfg.log_level);
	hv_log_set_format(cfg.log_format);
	/* The worker processes log the same way (hvcore/log.h). */
	if (cfg.log_format == HV_LOG_FORMAT_JSON)
		setenv("HV_LOG_FORMAT", "json", 1);
	else
		unsetenv("HV_LOG_FORMAT");
	/* Ours to answer; the worker processes must not inherit it. */
	migd_notify_unset_env();
	/* A client that disconnects must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	return migd_run(&cfg);
}
