/* SPDX-License-Identifier: MIT */
/*
 * struct migd: one migrated daemon -- its libuv loop, configuration, VM
 * registry, control server and migrations. main.c parses options into a
 * struct migd_cfg and calls migd_run().
 *
 * Start-up order (undone in reverse by shutdown): state directory (0700),
 * default accelerator, TLS material, VM registry, control socket (0600),
 * signal handlers. Shutdown (SIGTERM/SIGINT, or a fatal loop error):
 * cancel and reap migrations, stop the control server (socket removed),
 * stop and destroy every VM, close every handle, and return from the loop.
 * SIGHUP: migd_reload() (reload.h). The service manager hears READY=1
 * after start-up and STOPPING=1 at shutdown (notify.h).
 *
 * Threads: everything here runs on the loop thread. The only other
 * threads are vCPU threads (hvcore) and, per migration, the engine's
 * thread and a waiter thread (migration.h), which reach the loop through
 * uv_async_send only.
 */
#ifndef MIGD_DAEMON_H
#define MIGD_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hvcore/accel.h"
#include "hvcore/mem_backing.h"
#include "migrated/rpc/rpcauth.h"
#include "hvcore/log.h"
#include "migrated/host/metrics.h"
#include "migrated/rpc/parse.h"
#include "migrated/vmm/registry.h"
#include "migrated/rpc/server.h"

#define MIGD_VERSION "0.1.0"
/* The control API's version (CapabilitiesResult.api_version): raised by
 * one with each compatible addition listed in docs/api.md. */
#define MIGD_API_VERSION 5u

struct migd_mig;
struct migd_metrics;
struct migd_host;

/*
 * The same objects serve two processes (docs/processes.md):
 *   HOST    migrated, the daemon: control RPC (Unix + TCP/mTLS), names,
 *           migration history, events, metrics, supervision of workers
 *           (host.h); no VM lives here;
 *   WORKER  migrated-vmm, one per VM: the VM, its dirty tracking and
 *           dirty-rate monitor, the migration engine on its memory; it
 *           serves the control protocol on its own socket to its daemon.
 */
enum migd_role {
	MIGD_ROLE_HOST = 0,
	MIGD_ROLE_WORKER,
};

struct migd_cfg {
	enum migd_role role;
	char state_dir[PATH_MAX];
	char socket_path[108]; /* sun_path; "" = <state_dir>/control.sock */
	/* Operator group of the control socket ("" = owner only): the
	 * socket 0660 and the state directory 0710 in that group. */
	char socket_group[64];
	enum hv_accel_kind accel; /* HV_ACCEL_INVALID = auto */
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
	uint32_t dirty_interval_ms; /* sampling period */
	uint32_t dirty_sample_shift; /* re-arm 1 chunk in 2^shift */
	uint32_t dirty_event_ms;    /* DIRTY_RATE event period */
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

struct migd {
	/* immutable after start-up, but for what migd_reload() changes on
	 * the loop thread: cfg's live options and tls_ready (reload.h) */
	uv_loop_t *loop;
	struct migd_cfg cfg;
	enum hv_accel_kind accel; /* resolved default */
	bool tls_ready;		  /* TLS files present */
	char tls_ca[PATH_MAX + 16];
	char tls_cert[PATH_MAX + 16];
	char tls_key[PATH_MAX + 16];
	uint64_t start_ns;

	/* loop thread */
	struct migd_registry reg;
	struct migd_server srv;
	struct migd_metrics *metrics;
	uv_timer_t dirty_timer; /* publishes DIRTY_RATE events */
	bool dirty_timer_on;
	uint64_t vms_created, vms_destroyed, mig_errors; /* for metrics */
	uint64_t mig_unresolved, mig_verify_failures;	 /* for metrics */
	struct migd_mig_totals mig_totals;		 /* for metrics */
	struct migd_mig *migs; /* newest first */
	uint64_t next_mig_id;
	uv_signal_t sig_term, sig_int;
	uv_signal_t sig_hup; /* migd_reload() */
	bool stopping;
	int exit_code;

	/* host role (host.h) */
	struct migd_host *host;
	struct migd_hfleet *fleet; /* host_fleet.h; NULL = standalone */
	/* worker role: the ownership keys its migrations commit with
	 * (migration.c); NULL = standalone */
	struct migd_fleet *fleet_keys;
	/* worker role (migrated/vmm/worker.h) */
	bool orphaned;	    /* its daemon is gone (no connection) */
	bool was_orphaned;  /* ... since the last WorkerInfo */
	bool had_work;	    /* it was given a VM or a migration */
	struct migd_handover_in *takeover; /* vmm/worker.c */
	bool takeover_started;
};

/* The struct migd that serves @call: the owner of its server. */
static inline struct migd *migd_of(const struct migd_call *call)
{
	return call->owner;
}

/* This process's worker id (0 in the daemon): VmInfo.worker_id
 * (migrated/vmm/vmm.c). */
extern uint64_t migd_self_worker_id;

/*
 * Run a daemon with @cfg until a signal stops it. Returns the process exit
 * code: 0 after a clean shutdown, 1 when start-up failed (logged).
 */
int migd_run(const struct migd_cfg *cfg);

/* Begin a clean shutdown (idempotent); migd_run() returns afterwards. */
void migd_shutdown(struct migd *d);

/* Shared with the worker's start-up (migrated/vmm/vmm.c), until each
 * process has its own struct: mkdir -p of @path, the last component
 * 0700 and ours, or 0710 in group @gid when @gid >= 0 (0 or -errno); the TLS files' names from cfg.tls_dir and
 * whether they exist (tls_ready; a warning when not); close every handle
 * a failed start left open (uv_walk). */
int migd_private_dir(const char *path, long gid);
void migd_tls_files(struct migd *d);
void migd_close_walk_cb(uv_handle_t *h, void *arg);

#endif
