/* SPDX-License-Identifier: MIT */
/*
 * The worker (struct migd_vmm, vmm.h): one process per VM, started
 * by the daemon (migrated/host/host.h) as migrated-vmm.
 *
 * A worker serves the control protocol on the socket its daemon bound
 * for it and runs the VM handlers of calls.h on its one VM. It lives on
 * its own:
 *   - daemon gone (its connection closed): the worker is orphaned; it
 *     cancels every migration that has not reached its commit point (an
 *     outgoing VM keeps running here, an incoming one is discarded),
 *     keeps its guest running and waits for a daemon to connect again;
 *   - idle (no VM and no migration left after it had one: destroyed,
 *     migrated away, an incoming migration that failed, a create that
 *     failed): it flushes what it owes its daemon and exits 0; orphaned,
 *     it first writes what its migrations did to STATE/vms/<wid>.outcome
 *     (a MigStatusResult) for the next daemon;
 *   - SIGTERM: it destroys its VM and exits (an explicit stop).
 * An incoming migration's name is held host-wide: the engine thread asks
 * the daemon (WorkerNameRequest on the daemon's socket) before it takes
 * the name the source offers.
 *
 * Threads: loop thread, except migd_worker_claim_name (engine thread).
 */
#ifndef MIGD_VMM_WORKER_H
#define MIGD_VMM_WORKER_H

#include <stdbool.h>
#include <stddef.h>

struct migd_vmm;
struct migd_call;

/* The worker's control server (migd_server_start_fd(), owner: its struct
 * migd_vmm): its calls (calls.c), and the hooks that notice a lost daemon
 * and an idle worker. */
extern const struct migd_server_ops migd_worker_server_ops;

/* After anything that may leave the worker idle: exit if it is. */
void migd_worker_check_idle(struct migd_vmm *d);

/* Engine thread: hold @name at the daemon. 0, -EEXIST (taken; @why says
 * so), or another negative errno (the daemon cannot be asked). */
int migd_worker_claim_name(struct migd_vmm *d, const char *name, char *why,
			   size_t why_len);

/* update.c: with --takeover-fd, receive the VM of the worker this one
 * replaces (a thread; the loop registers it). Started once the daemon's
 * subscription is served (worker.c). 0 or -errno. */
int migd_worker_takeover_start(struct migd_vmm *d);

/* The worker-only calls (calls.c's table). */
void migd_call_worker_info(struct migd_call *call);
void migd_call_worker_handover(struct migd_call *call);

#endif
