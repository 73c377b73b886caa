/* SPDX-License-Identifier: MIT */
/*
 * migratectl: shared state of the subcommands (one file per group:
 * cmd_vm.c, cmd_mig.c; main.c holds the dispatch table).
 */
#ifndef MIGRATECTL_CTL_H
#define MIGRATECTL_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/control.pb-c.h"
#include "tools/rpc/cli.h"
#include "migrated/rpc/client.h"

struct ctl {
	/* --socket, or --connect HOST:PORT (TCP + mutual TLS) */
	struct migd_cli_conn conn;
	bool json;
	int timeout_ms;
	struct migd_client *client;
};

/*
 * Connect (once) and make @req's call; on success *@resp holds a
 * response with status OK. Otherwise prints the reason (or the JSON
 * error) and returns the exit code to use.
 */
int ctl_call(struct ctl *ctl, Migd__Request *req, Migd__Response **resp);
/* Print @msg as one JSON line. */
void ctl_print_json(const ProtobufCMessage *msg);

int ctl_vm(struct ctl *ctl, int argc, char **argv);
int ctl_mig(struct ctl *ctl, int argc, char **argv);
int ctl_events(struct ctl *ctl, int argc, char **argv);
int ctl_ping(struct ctl *ctl, int argc, char **argv);
/* The capabilities call: API version, features, accelerators. */
int ctl_capabilities(struct ctl *ctl, int argc, char **argv);
/* cmd_host.c: host list (the fleet, from etcd) */
int ctl_host(struct ctl *ctl, int argc, char **argv);
/* cmd_drain.c: host drain HOST, host drain-status [HOST] (exit 1 when a
 * VM could not be moved) */
int ctl_host_drain(struct ctl *ctl, int argc, char **argv);
int ctl_host_drain_cancel(struct ctl *ctl, int argc, char **argv);
int ctl_host_undrain(struct ctl *ctl, int argc, char **argv);
/* cmd_dirty.c: dirty VM, estimate VM, vm set-rate VM RATE */
int ctl_dirty(struct ctl *ctl, int argc, char **argv);
int ctl_estimate(struct ctl *ctl, int argc, char **argv);
int ctl_vm_set_rate(struct ctl *ctl, int argc, char **argv);
/* "25000" pages/s or "100M" bytes/s -> pages/s. 0 or -EINVAL. */
int ctl_parse_rate(const char *s, uint64_t *pages);
/* cmd_console.c: vm console NAME [--follow] [--from-start] [--input F]
 * [--until TEXT] */
int ctl_vm_console(struct ctl *ctl, int argc, char **argv);
/* cmd_check.c: vm check NAME (exit 1 when pages are bad) */
int ctl_vm_check(struct ctl *ctl, const char *name);
/* cmd_snap.c: vm snapshot NAME DIR [--pause|--stop], vm restore NAME DIR
 * [--paused]. */
int ctl_vm_snapshot(struct ctl *ctl, int argc, char **argv);
int ctl_vm_restore(struct ctl *ctl, int argc, char **argv);

#endif
