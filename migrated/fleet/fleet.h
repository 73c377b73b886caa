/* SPDX-License-Identifier: MIT */
/*
 * migd_fleet: this host's membership of a fleet kept in etcd
 * (docs/fleet.md). It knows etcd and the key layout, not
 * the daemon: the daemon (host_fleet.c) decides what to do with VMs.
 *
 * Keys, under cfg->prefix (default "/migrated/"):
 *   hosts/<id>  this host's record (JSON: id, rpc, migration address,
 *               mem_bytes, vcpus, accel, version, pid), attached to a
 *               lease of cfg->ttl_s that the fleet thread keeps alive;
 *               losing the lease means the host is considered gone;
 *   vms/<name>  a VM's ownership (JSON: owner, generation), no lease: it
 *               outlives any host, so a VM is never "free" because its
 *               owner died; only vm destroy or a migration's commit
 *               changes it.
 *
 * Start: migd_fleet_start() registers (blocking; fails if etcd cannot be
 * reached or the id is another live daemon's), then a thread sends a
 * keepalive every ttl/3. The lease id is kept in @lease_file so that a
 * restarted daemon takes over its own record instead of waiting ttl s.
 * If the lease is lost (expired or revoked), the thread grants a new one
 * and registers again as soon as etcd answers.
 *
 * Fencing is the caller's: migd_fleet_lease_age_ms() is how long ago the
 * last keepalive that etcd acknowledged was *sent* (so the lease lives at
 * least ttl minus that), UINT64_MAX while no lease is held. A daemon
 * pauses its VMs when it exceeds the grace (< ttl), before another host
 * could see the lease expire. migd_fleet_epoch() grows each time a new
 * lease was registered (the daemon then reconciles).
 *
 * Threads: the ownership calls block (etcd round trips, bounded by the
 * client's timeout per member) and may be called from any one thread;
 * lease_age/epoch from any thread; start/stop from the owner.
 */
#ifndef MIGD_FLEET_H
#define MIGD_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migrated/fleet/etcd.h"

#define MIGD_FLEET_ID_MAX 63
#define MIGD_FLEET_TTL_DEFAULT 10u

struct migd_fleet_cfg {
	struct migd_etcd_cfg etcd;
	const char *prefix;   /* NULL = "/migrated/" */
	const char *host_id;  /* [A-Za-z0-9._-], 1..63 */
	unsigned ttl_s;	      /* 0 = MIGD_FLEET_TTL_DEFAULT, min 2 */
	const char *record;   /* this host's JSON record (copied) */
	const char *lease_file; /* NULL = none */
};

struct migd_fleet;

/* Register and start the keepalive thread. 0, or a negative errno with
 * the reason in @err (-ECONNREFUSED/-ETIMEDOUT/-EAGAIN: etcd not
 * reachable; -EEXIST: the host id is another live daemon's; -EINVAL). */
int migd_fleet_start(const struct migd_fleet_cfg *cfg,
		     struct migd_fleet **out, char *err, size_t err_size);
/*
 * The ownership calls only, for a worker process (migrated-vmm) whose
 * daemon registered the host: no lease, no thread; cfg->record and
 * lease_file are ignored. 0, -EINVAL, -ENOMEM. migd_fleet_stop() frees.
 */
int migd_fleet_open(const struct migd_fleet_cfg *cfg,
		    struct migd_fleet **out, char *err, size_t err_size);
/* Stop the thread; @revoke: also revoke the lease (the host record
 * goes at once). NULL no-op. */
void migd_fleet_stop(struct migd_fleet *f, bool revoke);

uint64_t migd_fleet_lease_age_ms(struct migd_fleet *f);
uint64_t migd_fleet_epoch(struct migd_fleet *f);
const char *migd_fleet_host_id(const struct migd_fleet *f);

struct migd_fleet_owner {
	char owner[MIGD_FLEET_ID_MAX + 1];
	uint64_t generation;
	int64_t mod_revision;
};

/*
 * Create vms/<name> owned by us, generation 1, in one txn that fails if
 * the key exists. 0; -EEXIST with @owner filled (who has it); or the
 * client's error (message in @err).
 */
int migd_fleet_vm_claim(struct migd_fleet *f, const char *name,
			struct migd_fleet_owner *owner, char *err,
			size_t err_size);
/* Delete vms/<name> if we own it. 0 (deleted or absent); -EPERM: another
 * host owns it (left alone). */
int migd_fleet_vm_release(struct migd_fleet *f, const char *name, char *err,
			  size_t err_size);
/* Read vms/<name>: 0 and *found. */
int migd_fleet_vm_get(struct migd_fleet *f, const char *name, bool *found,
		      struct migd_fleet_owner *owner, char *err,
		      size_t err_size);
/*
 * The commit's transaction: if vms/<name> is owned by @from at
 * @generation, make it ours at @generation + 1. 0: moved; -ESTALE: the
 * compare failed (@now gets what the key holds, found=false if none);
 * -ETIMEDOUT: sent, outcome unknown (read the key).
 */
int migd_fleet_vm_move(struct migd_fleet *f, const char *name,
		       const char *from, uint64_t generation,
		       struct migd_fleet_owner *now, char *err,
		       size_t err_size);

/* Every key under hosts/ or vms/ (caller frees with migd_etcd_kvs_free);
 * keys are returned without the prefix. */
int migd_fleet_list(struct migd_fleet *f, bool vms, struct migd_etcd_kvs *out,
		    char *err, size_t err_size);

/*
 * Replace this host's record (a daemon marks itself draining) and put it
 * under the lease now if one is held (else the next registration does).
 * 0, or the client's error with the message in @err.
 */
int migd_fleet_set_record(struct migd_fleet *f, const char *record,
			  char *err, size_t err_size);

/*
 * Counted slots: keys <prefix><set>/0 .. <set>/<max - 1>, each put under
 * this host's lease (a host that dies frees its slots when the lease
 * expires). Take: the lowest free index below @max, in a txn "absent",
 * holding @holder; *@slot gets it. 0; -EBUSY: every index below @max is
 * held; -ENOLCK: no lease (fenced, or opened without one); or the
 * client's error. Callers that use the same @max never hold more than
 * @max slots between them. Release deletes the slot if it still holds
 * @holder.
 */
int migd_fleet_slot_take(struct migd_fleet *f, const char *set, unsigned max,
			 const char *holder, unsigned *slot, char *err,
			 size_t err_size);
int migd_fleet_slot_release(struct migd_fleet *f, const char *set,
			    unsigned slot, const char *holder, char *err,
			    size_t err_size);

/* Parse an ownership value ({"owner":..., "generation":N}). 0/-EPROTO. */
int migd_fleet_owner_parse(const char *value, size_t len,
			   struct migd_fleet_owner *out);

#endif
