/* SPDX-License-Identifier: MIT */
/*
 * struct migd_cfg: the options of the two processes of migrated
 * (docs/processes.md). The host daemon (migrated/host) fills it from its
 * command line and config file (migrated/host/config.h); a worker
 * (migrated/vmm) from the options its daemon started it with
 * (migrated/vmm/main.c), the subset a worker uses; a field one process
 * only uses says so ("host:", "worker:") and stays zero in the other.
 * Each process keeps its own copy in its own struct (struct migd_host,
 * migrated/host/daemon.h; struct migd_vmm, migrated/vmm/vmm.h).
 *
 * Also the versions both report (ping, capabilities) and the limits both
 * keep to. Plain data: no function, nothing to link.
 */
#ifndef MIGD_COMMON_CFG_H
#define MIGD_COMMON_CFG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "hvcore/accel.h"
#include "hvcore/log.h"
#include "hvcore/mem_backing.h"
#include "migrated/rpc/parse.h"
#include "migrated/rpc/rpcauth.h"

#define MIGD_VERSION "0.1.0"
/* The control API's version (CapabilitiesResult.api_version): raised by
 * one with each compatible addition listed in docs/api.md. */
#define MIGD_API_VERSION 6u

struct migd_cfg {
	char state_dir[PATH_MAX];
	char socket_path[108]; /* sun_path; "" = <state_dir>/control.sock */
	/* Operator group of the control socket ("" = owner only): the
	 * socket 0660 and the state directory 0710 in that group. */
	char socket_group[64];
	enum hv_accel_kind accel; /* HV_ACCEL_INVALID = auto */
	/* A worker's: its daemon's --accel was auto. An incoming migration
	 * that names no accelerator then takes the source's (its state
	 * loads only into that one) rather than @accel, which the daemon
	 * resolved for the VMs created here. */
	bool accel_auto;
	/* Default listen address of incoming migrations: the first free
	 * port of mig_port..mig_port_max (equal: that port; 0: any). Host
	 * "" until migd_config_finish(): the --rpc-listen host when that is
	 * a specific address, else loopback (config.h). */
	char mig_host[MIGD_HOST_MAX + 1];
	uint16_t mig_port;
	uint16_t mig_port_max;
	/* TLS material of migration channels: <tls_dir>/{ca,host}.pem,
	 * host.key; generated there when @dev_tls. "" = <state_dir>/tls. */
	char tls_dir[PATH_MAX];
	bool dev_tls;
	/* Control RPC on TCP + mutual TLS (needs the TLS material above). */
	bool rpc_tcp;
	char rpc_host[MIGD_HOST_MAX + 1];
	uint16_t rpc_port;
	/* A TCP client must finish its TLS handshake within this, and is
	 * closed after this long without sending while it has no
	 * subscription (server.h); 0 = no limit. */
	uint32_t rpc_handshake_timeout_ms;
	uint32_t rpc_idle_timeout_ms;
	/* Roles of TCP clients by certificate identity (rpcauth.h); the
	 * default role INVALID = operator without rules, none with. */
	struct migd_rpc_rule rpc_rules[MIGD_RPC_RULES_MAX];
	unsigned nr_rpc_rules;
	enum migd_rpc_role rpc_default_role;
	/* Prometheus text exposition over HTTP (metrics.h). */
	bool metrics;
	char metrics_host[MIGD_HOST_MAX + 1];
	uint16_t metrics_port;
	/* Dirty-rate monitor of every running VM (hvcore/dirtyrate.h). */
	bool dirty_monitor;
	uint32_t dirty_interval_ms;  /* sampling period */
	uint32_t dirty_sample_shift; /* re-arm 1 chunk in 2^shift */
	uint32_t dirty_event_ms;     /* DIRTY_RATE event period */
	/* mig_opts.io_timeout_ms of every migration; 0 = the engine's. */
	uint32_t mig_io_timeout_ms;
	/* Dirty ring entries per vCPU of KVM VMs whose create request leaves
	 * it to us; 0 = the manual-protect bitmap. */
	uint32_t dirty_ring;
	/* Guest RAM backing of VMs created here and of incoming ones
	 * (hvcore/guest_mem.h); a create request may name another. */
	enum hv_mem_backing backing;
	/* host: the worker binary ("" = migrated-vmm next to migrated);
	 * destroy every VM at SIGTERM instead of leaving them running. */
	char vmm_path[PATH_MAX];
	/* worker: its id, the listening socket its daemon bound for it
	 * (socket_path names it), a handover socket when it takes a VM
	 * over from another worker (-1: none), and the daemon's socket. */
	uint64_t worker_id;
	int listen_fd;
	int takeover_fd;
	char daemon_socket[108];
	/* Log level (hvcore/log.h); set by main(), and by migd_reload(). */
	enum hv_log_level log_level;
	/* --log-format: text or json (one object per line); main() sets it
	 * for the daemon and, through $HV_LOG_FORMAT, for its workers. */
	enum hv_log_format log_format;
	/* On SIGTERM also destroy every VM; by default VMs keep running in
	 * their worker processes and a restarted daemon adopts them. */
	bool stop_vms;
	/* Fleet (migrated/fleet/fleet.h, host role): etcd endpoints ("" =
	 * standalone), TLS files to etcd, this host's id ("" = hostname),
	 * key prefix ("" = /migrated/), lease TTL (0 = 10 s), fencing grace
	 * (0 = 60% of the TTL); etcd_optional: run standalone when etcd
	 * cannot be reached at start instead of refusing to start. */
	char etcd_endpoints[1024];
	char etcd_cacert[PATH_MAX];
	char etcd_cert[PATH_MAX];
	char etcd_key[PATH_MAX];
	char host_id[64];
	char etcd_prefix[96];
	uint32_t etcd_ttl_s;
	uint32_t fence_grace_ms;
	bool etcd_optional;
	/* The config file read last ("" = none) and the command line the
	 * whole configuration came from: migd_reload() parses it again
	 * (config.h). argv NULL: nothing to re-read. */
	char config_path[PATH_MAX];
	int argc;
	char **argv;
};

/* Defaults of the options above (docs/api.md, tools/systemd). */
#define MIGD_DIRTY_INTERVAL_MS_DEFAULT 200u
#define MIGD_DIRTY_EVENT_MS_DEFAULT 1000u
/* The bitmap: see docs/benchmarks.md, "Dirty ring or bitmap". */
#define MIGD_DIRTY_RING_DEFAULT 0u
/* Private anonymous + THP: see docs/design-choices.md, "Guest RAM backing". */
#define MIGD_BACKING_DEFAULT HV_BACKING_PRIVATE
#define MIGD_RPC_HANDSHAKE_TIMEOUT_MS_DEFAULT 5000u
#define MIGD_RPC_IDLE_TIMEOUT_MS_DEFAULT 120000u
#define MIGD_RPC_TIMEOUT_MS_MAX 86400000u /* a day */

/* VMs of one host: workers of the host daemon, VMs of a worker's
 * registry (migrated/vmm/registry.h). */
#define MIGD_VMS_MAX 256

/* Dirty ring sizes a create request or --dirty-ring may ask for (entries
 * per vCPU; KVM takes at most 1 MiB of ring, 4 KiB at least). */
#define MIGD_DIRTY_RING_MIN 256
#define MIGD_DIRTY_RING_MAX 65536

/* Finished migrations kept for status queries: by a worker of its own
 * (migrated/vmm/migration.h), by the host of all its workers' (host.h). */
#define MIGD_MIG_HISTORY 16

#endif
