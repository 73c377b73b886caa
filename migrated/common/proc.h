/* SPDX-License-Identifier: MIT */
/*
 * What the host daemon (migrated/host/daemon.h) and a worker
 * (migrated/vmm/vmm.h) do alike at start-up, and what the calls both
 * answer (calls.h: ping, capabilities) need to know of the process that
 * serves them. Neither process's struct is known here: each fills a
 * struct migd_proc from its own.
 *
 * Threads: the loop thread, or the main thread before the loop.
 */
#ifndef MIGD_COMMON_PROC_H
#define MIGD_COMMON_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hvcore/accel.h"

struct migd_server;

/* Room for one TLS file's path: <tls_dir>/host.pem and the like. */
#define MIGD_TLS_PATH (PATH_MAX + 16)

/* The process serving a call, as ping and capabilities report it. */
struct migd_proc {
	enum hv_accel_kind accel;      /* default accelerator, resolved */
	uint64_t start_ns;	       /* hv_now_ns() at start-up */
	bool tls_ready;		       /* migration TLS files present */
	bool fleet;		       /* in a fleet (etcd) */
	const struct migd_server *srv; /* its control server */
};

/*
 * mkdir -p of @path, the last component 0700 and ours, or 0710 in group
 * @gid when @gid >= 0 (an existing directory is tightened; without @gid a
 * group search bit already there is kept: a worker shares its daemon's
 * directory and must not undo its choice). 0 or -errno (-EPERM: not
 * ours, -ENOTDIR, -ENAMETOOLONG).
 */
int migd_private_dir(const char *path, long gid);

/*
 * The TLS files' names in @dir: @ca = ca.pem, @cert = host.pem, @key =
 * host.key (each MIGD_TLS_PATH bytes). True when all three are readable;
 * false with a warning logged that only insecure migrations work.
 */
bool migd_tls_files(const char *dir, char *ca, char *cert, char *key);

/* uv_walk callback: close every handle a failed start left open. */
void migd_close_walk_cb(uv_handle_t *h, void *arg);

#endif
