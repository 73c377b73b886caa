/* SPDX-License-Identifier: MIT */
/*
 * migd_config: the daemon's options, from the command line and the config
 * file, into a struct migd_cfg (daemon.h). main.c parses once at start-up;
 * migd_reload() (reload.h) parses the same command line again on SIGHUP,
 * which re-reads the config file in its place.
 *
 * The config file (tools/systemd/migrated.conf): "key = value" lines whose
 * keys are the long options without "--" ('_' may stand for '-':
 * stop_vms = stop-vms); '#' starts a comment; flags take true/false (yes/no,
 * 1/0). The file is read where --config stands on the command line, so
 * options after it win and options before it lose.
 *
 * Errors name the option or the file and line, and why ("bad --accel 'x':
 * kvm, soft or auto", "/etc/migrated.conf:3: unknown key 'foo'"); nothing
 * is printed except --help and --version on stdout.
 *
 * Threads: not thread-safe (getopt_long's global state): main thread
 * before the loop, then the loop thread.
 */
#ifndef MIGD_CONFIG_H
#define MIGD_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "hvcore/log.h"

struct migd_cfg;

/* migd_config_parse() printed --help or --version: exit 0. */
#define MIGD_CONFIG_EXIT (-1)

/*
 * The built-in defaults (docs/api.md), the default state directory
 * included. 0, or 2 with @err set (the default state dir is too long).
 */
int migd_config_defaults(struct migd_cfg *cfg, char *err, size_t err_size);

/*
 * Defaults, then @argv[1..@argc-1] in order (getopt_long, restarted from
 * the first argument), then migd_config_finish(). Keeps @argc and @argv in
 * @cfg for a later parse; they must live as long as @cfg is used that way.
 * Returns 0, MIGD_CONFIG_EXIT, or 2 with @err set.
 */
int migd_config_parse(int argc, char **argv, struct migd_cfg *cfg,
		      char *err, size_t err_size);

/*
 * Apply the config file @path to @cfg and record @path in
 * cfg->config_path. 0, or 2 with the reason on stderr ("migrated: ...").
 */
int migd_config_load(const char *path, struct migd_cfg *cfg);
/* The same, with the reason in @err instead. */
int migd_config_read(const char *path, struct migd_cfg *cfg, char *err,
		     size_t err_size);

/*
 * Fill in what derives from other options: socket "" =
 * <state_dir>/control.sock, TLS dir "" = <state_dir>/tls. 0, or 2 with
 * @err set (a path too long).
 */
int migd_config_finish(struct migd_cfg *cfg, char *err, size_t err_size);

/* The usage text (--help). */
void migd_config_usage(FILE *f);

/* "err", "warn", "info", "debug"; "?" for anything else. */
const char *migd_log_level_name(enum hv_log_level level);

#endif
