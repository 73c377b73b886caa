/* SPDX-License-Identifier: MIT */
/*
 * migd_host_drain: move every VM off this host to the other hosts of the
 * fleet (HostDrainRequest, `migratectl host drain`; docs/architecture.md,
 * "Host drain").
 *
 * The drain runs in this daemon, in a thread of its own that is a client
 * of the control RPC like any orchestrator: of this daemon over its Unix
 * socket (vm_list, mig_start, mig_status), of each destination's daemon
 * over TCP + mutual TLS with this daemon's TLS files (vm_list, to know
 * what runs there, and mig_incoming: the peer-daemon role suffices), and
 * of etcd through the daemon's fleet object (the hosts' records, and the
 * fleet-wide limit: one counted slot per migration in flight, under this
 * host's lease, host_fleet.h). It outlives the client that asked for it;
 * the client polls host_drain_status.
 *
 * Each VM goes to the host drain_place.h picks; at most max_per_host
 * migrations go into one host at once and at most max_fleet run in the
 * fleet (slots in etcd shared by every drain). A migration that fails
 * leaves its VM here, running (the engine's guarantee) and marks it
 * failed; nothing is retried. The host stays marked draining (in its
 * registration: no other drain sends it VMs; here: vm create and
 * incoming migrations are refused) until the daemon restarts.
 *
 * Threads: the calls below run on the loop thread; the drain thread
 * shares only its status, under a lock.
 */
#ifndef MIGD_HOST_DRAIN_H
#define MIGD_HOST_DRAIN_H

#include <stdbool.h>

struct migd;
struct migd_call;
struct migd_fleet;

#define MIGD_DRAIN_PER_HOST_DEFAULT 1u
#define MIGD_DRAIN_FLEET_DEFAULT 4u
#define MIGD_DRAIN_LIMIT_MAX 64u

/* host_drain: start a drain (FAILED_PRECONDITION standalone,
 * INVALID_ARGUMENT for another host's id), or answer the running one's
 * status. */
void migd_host_drain_call(struct migd_call *call);
/* host_drain_status: the last drain's status (NOT_FOUND: none ran). */
void migd_host_drain_status_call(struct migd_call *call);
/* Shutdown, before the fleet stops: tell a running drain to stop
 * (migrations in flight go on in their workers); a finished one is
 * freed. true: its thread still runs and uses the fleet object @f: the
 * drain takes it over (migd_fleet_stop(@f, @revoke) in
 * migd_host_drain_fini()). */
bool migd_host_drain_stop(struct migd *d, struct migd_fleet *f,
			  bool revoke);
/* After the loop ended (our socket closed, so the thread's calls fail
 * at once): join a drain thread still running, stop the fleet object it
 * took over, free it. */
void migd_host_drain_fini(struct migd *d);

#endif
