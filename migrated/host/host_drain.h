/* SPDX-License-Identifier: MIT */
/*
 * migd_host_drain: move every VM off this host to the other hosts of the
 * fleet (HostDrainRequest, `migratectl host drain`; docs/fleet.md,
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
 * failed; nothing is retried. The host stays marked draining (cordoned:
 * in its registration, so no other drain sends it VMs; here, vm create
 * and incoming migrations are refused) until host_undrain or a restart.
 *
 * host_drain_cancel stops a running drain: no migration starts any more
 * (pending VMs end "cancelled"), each one in flight is cancelled (its VM
 * stays here, running: "cancelled") except one already past its commit
 * point, which is left to finish (its row says so; it ends "migrated" or
 * "failed"). The host stays draining.
 *
 * Each call may name another registered host: it is then forwarded to
 * that host's daemon (host_drain_priv.h, migd_drain_forward) and its
 * answer returned.
 *
 * Threads: the calls below run on the loop thread; the drain thread
 * shares only its status, under a lock.
 */
#ifndef MIGD_HOST_DRAIN_H
#define MIGD_HOST_DRAIN_H

#include <stdbool.h>

struct migd_host;
struct migd_call;
struct migd_fleet;

#define MIGD_DRAIN_PER_HOST_DEFAULT 1u
#define MIGD_DRAIN_FLEET_DEFAULT 4u
#define MIGD_DRAIN_LIMIT_MAX 64u

/* host_drain: start a drain (FAILED_PRECONDITION standalone), or answer
 * the running one's status. */
void migd_host_drain_call(struct migd_call *call);
/* host_drain_status: the last drain's status (NOT_FOUND: none ran). */
void migd_host_drain_status_call(struct migd_call *call);
/* host_drain_cancel: ask the running drain to stop and answer its status
 * (state "cancelling" until its migrations in flight ended); NOT_FOUND:
 * none ran; FAILED_PRECONDITION: the last one already ended. */
void migd_host_drain_cancel_call(struct migd_call *call);
/* host_undrain: clear the draining mark (here and in the registration):
 * the host takes VMs again. FAILED_PRECONDITION while a drain runs or
 * standalone; a host not marked is a no-op (was_draining false). */
void migd_host_undrain_call(struct migd_call *call);
/* Shutdown, before the fleet stops: tell a running drain to stop
 * (migrations in flight go on in their workers); a finished one is
 * freed. true: its thread still runs and uses the fleet object @f: the
 * drain takes it over (migd_fleet_stop(@f, @revoke) in
 * migd_host_drain_fini()). */
bool migd_host_drain_stop(struct migd_host *d, struct migd_fleet *f,
			  bool revoke);
/* After the loop ended (our socket closed, so the thread's calls fail
 * at once): join a drain thread still running, stop the fleet object it
 * took over, free it. */
void migd_host_drain_fini(struct migd_host *d);

#endif
