/* SPDX-License-Identifier: MIT */
/*
 * migd_host_fleet: the daemon's side of the fleet (host role; the etcd
 * side is migrated/fleet/fleet.h). With --etcd it registers this host at
 * start-up, claims a VM's name fleet-wide before vm create and releases
 * it after vm destroy, and fences: when the lease has not been renewed
 * for --fence-grace-ms (below the lease TTL) it pauses every VM it runs,
 * and when contact returns it reconciles each paused VM with its
 * ownership key: still ours -> resumed; owned by another host -> dropped
 * (destroyed here, it runs there); no key -> left paused, logged.
 *
 * Without --etcd every call here is a no-op that succeeds: standalone.
 *
 * Threads: loop thread. The claim/release calls block on etcd for at
 * most the client's timeout per member (docs/fleet.md).
 */
#ifndef MIGD_HOST_FLEET_H
#define MIGD_HOST_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct migd_host;
struct migd_fleet;

/* After migd_host_init(). 0, or a negative errno with the reason logged
 * (etcd unreachable without --etcd-optional, a host id in use). */
int migd_host_fleet_start(struct migd_host *d);
/* Shutdown. The lease is revoked (the host leaves the fleet at once)
 * unless VMs keep running in their workers after us: then the record
 * stays until the TTL, and a restarted daemon takes it back. */
void migd_host_fleet_stop(struct migd_host *d);

/* This host's id in the fleet; NULL standalone. */
const char *migd_host_fleet_id(struct migd_host *d);

/* vm create: 0 (claimed, or standalone), -EEXIST (the name is used in
 * the fleet), or another negative errno (etcd); the reason in @err. */
int migd_host_fleet_claim(struct migd_host *d, const char *name, char *err,
			  size_t err_size);
/* vm destroy, or a create that failed after its claim. Logged. */
void migd_host_fleet_release(struct migd_host *d, const char *name);

/* The fleet object (etcd keys, slots) of this host; NULL standalone.
 * Its calls are thread-safe (the host drain's thread uses it). */
struct migd_fleet *migd_host_fleet_keys(struct migd_host *d);

/* Mark this host draining (or not) in its registration, so that other
 * hosts' drains do not pick it, and make it refuse new VMs; the record
 * is put now (blocking) and again at each re-registration. 0 (also
 * standalone), or the etcd error in @err (the mark is kept locally and
 * put at the next registration). */
int migd_host_fleet_set_draining(struct migd_host *d, bool on, char *err,
				 size_t err_size);
bool migd_host_fleet_draining(struct migd_host *d);
/* --fence-grace-ms as resolved (0 standalone): a thread holding the
 * fleet object is fenced while migd_fleet_lease_age_ms() exceeds it. */
uint64_t migd_host_fleet_grace_ms(struct migd_host *d);

#endif
