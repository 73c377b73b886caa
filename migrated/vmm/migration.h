/* SPDX-License-Identifier: MIT */
/*
 * migd_mig: one migration as the daemon tracks it, around the engine's
 * mig_source / mig_dest (migrated/mig/session.h).
 *
 * The engine runs in its own thread and reports progress through a
 * callback; mig_*_wait() blocks until the end. Neither may run on the
 * loop, so each migration has:
 *   - a uv_async_t: the engine's progress callback and the waiter thread
 *     store the latest progress under @lock and wake the loop with
 *     uv_async_send() (the only libuv call that is thread-safe);
 *   - a waiter thread that calls mig_*_wait() and records the outcome.
 * On the loop, the async callback publishes phase and progress events and,
 * once the waiter is done, joins it and settles the outcome: an outgoing
 * success destroys the source's copy of the VM; an incoming success adds
 * the received VM to the registry; a failure gives the source VM back to
 * the API (it never stopped running). An outgoing migration whose commit
 * had no answer (UNRESOLVED, session.h) keeps its engine object and its
 * VM, paused and pinned, until migd_mig_resolve() -- the record is never
 * dropped from the history meanwhile.
 *
 *   engine thread:  progress_cb -> lock, latest = p, unlock -> async_send
 *   waiter thread:  wait() -> lock, done = 1, final = f, unlock -> async_send
 *   loop:           async_cb -> lock, copy, unlock -> publish; if done:
 *                   join waiter, settle, publish terminal phase + END
 *
 * The VM's name travels with it: the source offers its registry name in
 * the layout; the destination keeps the name given to migrate-recv
 * (--name, held in the registry from the call on) or else takes the
 * offered one, which its engine thread holds in setup (dst_name_check in
 * session.h) -- a name already taken here refuses the setup, so nothing
 * is created and the VM keeps running on the source. Without either, the
 * VM lands as "incoming-<id>". A held name becomes the VM's entry on
 * success and is released on failure.
 *
 * Built without the engine (MIGD_HAVE_ENGINE undefined) every start
 * returns -ENOSYS and the calls answer UNAVAILABLE.
 *
 * Threads: all functions below are for the loop thread.
 */
#ifndef MIGD_MIGRATION_H
#define MIGD_MIGRATION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "hvcore/accel.h"
#include "migrated/common/cfg.h"
#include "migrated/rpc/parse.h"
#include "migrated/fleet/fleet.h"
#include "migrated/mig/session.h"
#include "proto/control.pb-c.h"

struct migd_vmm;
struct migd_vm;

/* Room for a migration's message (mig_progress.message). */
#define MIGD_MIG_MSG_LEN 256

struct migd_mig_params {
	char host[MIGD_HOST_MAX + 1];
	uint16_t port;
	uint16_t port_max; /* incoming: try port..port_max (<= port: one) */
	bool insecure;
	uint32_t channels;
	uint64_t bandwidth;
	uint32_t downtime_ms;
	uint32_t timeout_ms;
	int32_t zstd_level;
	int64_t delta_cache; /* mig_opts.delta_cache */
	bool postcopy;	     /* mig_opts.postcopy, postcopy_after_ms */
	uint32_t postcopy_after_ms;
	bool postcopy_auto; /* mig_opts.postcopy_auto, ..._throttle_max_pct */
	uint32_t postcopy_throttle_max_pct;
	unsigned timeout_policy; /* mig_opts.timeout_policy */
	uint32_t throttle_max_pct; /* mig_opts.throttle_max_pct */
	char vm_name[MIGD_NAME_MAX + 1]; /* incoming: registry name */
	/* incoming: accelerator to receive into; INVALID = the default */
	enum hv_accel_kind accel;
	/* incoming: wait at most this long for the source to connect
	 * (MigIncomingRequest.arm_timeout_ms, resolved: 0 = no limit) */
	uint32_t arm_timeout_ms;
};

/* An armed receive's wait for its source when the request names none. */
#define MIGD_ARM_TIMEOUT_MS_DEFAULT (10u * 60 * 1000)

struct migd_mig {
	/* immutable after start */
	struct migd_mig *next;
	struct migd_vmm *d;
	uint64_t id;
	Migd__MigDirection dir;
	struct migd_mig_params prm;
	struct mig_tls_cfg tls;
	struct mig_opts opts;
	struct mig_source *src;
	struct mig_dest *dst;
	uint16_t port; /* incoming: bound port */

	/* protected by lock (engine and waiter threads write) */
	pthread_mutex_t lock;
	struct mig_progress latest;
	bool done;
	int result;
	struct hv_vm *vm_in; /* incoming success: the received VM */
	/* incoming: the engine handed the running VM over (vm_in) and waits
	 * on @settled until the loop registered it (vm_settled) */
	bool vm_running;
	bool vm_settled;
	pthread_cond_t settled;

	/* loop thread */
	char vm[MIGD_NAME_MAX + 1]; /* source VM / registry name */
	char uuid[37]; /* mig_progress.uuid once the engine knew it */
	bool name_held; /* incoming: @vm is held in the registry */
	uv_async_t async;
	uv_thread_t waiter;
	bool waiter_started;
	enum mig_phase published_phase;
	bool finished;
	bool unresolved; /* outgoing: @src kept for migd_mig_resolve() */
	/* Fleet (d->fleet_keys): the ownership record read when the
	 * migration started (source) or in its setup (destination); the
	 * commit's transaction compares against it. Written before the
	 * thread that reads it starts, or on that thread. */
	bool fleet_on;
	struct migd_fleet_owner fleet_own;
	atomic_bool settle_stop; /* a cancel ends the settle's retries */
	const char *cancel_why; /* static; prefixes the final message */
	/* incoming: when it was armed, and why it disarmed itself */
	uint64_t armed_ns;
	char arm_why[160];
	struct mig_progress final;
};

/*
 * The fleet (migration_fleet.c; no-ops without d->fleet_keys): the
 * destination's check of the ownership record in setup (engine thread,
 * from the name check) and its commit transaction (mig_opts.dst_commit);
 * the source's check before the engine starts (loop thread) and the
 * settling of an UNRESOLVED commit by the record (waiter thread: retries
 * while etcd cannot answer, for up to MIGD_FLEET_SETTLE_S or until a
 * cancel; returns the new result and fills @final, or -EINPROGRESS when
 * it still cannot tell).
 * docs/fleet.md, "The commit with the transaction".
 */
int migd_mig_fleet_incoming(struct migd_mig *m, const char *name, char *why,
			    size_t why_len);
int migd_mig_fleet_commit(void *arg, const char *name, char *why,
			  size_t why_len);
int migd_mig_fleet_outgoing(struct migd_mig *m, char *err, size_t err_size);
int migd_mig_fleet_settle(struct migd_mig *m, struct mig_progress *final);

/*
 * Start an outgoing migration of registry VM @v (RUNNING) with @prm.
 * 0 and *@out (also linked into d->migs), or a negative errno with a
 * reason in @err: -ENOSYS (engine not built), -EBUSY (VM state), -EINVAL,
 * -EPERM (no TLS material and not insecure), or the engine's error.
 */
int migd_mig_start_outgoing(struct migd_vmm *d, struct migd_vm *v,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size);

/* Listen for one incoming migration on prm->host:prm->port (0: any
 * port); the bound port is (*out)->port. Errors as above, and -EEXIST
 * when prm->vm_name is taken here. */
int migd_mig_start_incoming(struct migd_vmm *d,
			    const struct migd_mig_params *prm,
			    struct migd_mig **out, char *err, size_t err_size);

/* By id, or (id 0) the newest migration of VM @vm. NULL if none. */
struct migd_mig *migd_mig_find(struct migd_vmm *d, uint64_t id, const char *vm);

/* 0, -EALREADY (finished or past the commit point). */
int migd_mig_cancel(struct migd_mig *m);
/*
 * Disarm each incoming migration of @d whose source has not connected
 * (no uuid yet, still in setup) within its prm.arm_timeout_ms: cancelled
 * with a message naming the limit. Loop thread; called every second
 * (monitor.c's timer). migration_ops.c.
 */
void migd_mig_arm_check(struct migd_vmm *d);
/*
 * Settle UNRESOLVED @m (see mig_source_resolve): resume the source VM, or
 * destroy it because the destination runs it. 0; -EBADE (confirmed, but
 * the verification found a mismatch: settled all the same); -EALREADY
 * when @m is not unresolved; -EINVAL; or the resume's error (still
 * unresolved). Publishes the new phase and the VM's state.
 */
int migd_mig_resolve(struct migd_mig *m, enum mig_resolve how);
/* Switch outgoing @m to postcopy at the end of its pass (logs the risk).
 * 0, -EALREADY (finished or past its switchover), -EINVAL (incoming),
 * -EOPNOTSUPP (the destination does not offer postcopy). */
int migd_mig_postcopy(struct migd_mig *m);
/*
 * The operator pauses or resumes the VM of outgoing @m
 * (mig_source_vm_pause()): 0; -EBUSY (already so); -EALREADY (finished,
 * unresolved, or past its commit); -EINVAL (incoming).
 */
int migd_mig_vm_pause(struct migd_mig *m, bool pause);

/* Force outgoing @m to pause and finish now (mig_source_switchover).
 * 0, -EALREADY (finished or past its precopy), -EINVAL (incoming). */
int migd_mig_switchover(struct migd_mig *m);

/* Reconnect outgoing @m, paused in postcopy by a broken connection, to
 * @host:@port (NULL / 0: the original address; mig_source_recover()).
 * 0, -EALREADY (not paused in postcopy, or a recovery in progress),
 * -EINVAL (incoming: the destination waits for its source). */
int migd_mig_recover(struct migd_mig *m, const char *host, uint16_t port);
/* 0, -EALREADY (finished), -EINVAL, -EOPNOTSUPP (engine refuses). */
int migd_mig_tune(struct migd_mig *m, const struct mig_tune *t);

/*
 * Fill @info with the state of @m; @prog and @dt are storage for its
 * sub-messages, @msg for the progress message (a snapshot: the engine
 * thread may be rewriting @m's). Other strings point into @m. Loop
 * thread.
 */
void migd_mig_info_fill(struct migd_mig *m, Migd__MigInfo *info,
			Migd__MigProgress *prog, Migd__Downtime *dt,
			char msg[MIGD_MIG_MSG_LEN]);

/* Shutdown: cancel every running migration, wait for each to end and
 * settle it, then free every record. */
void migd_mig_shutdown_all(struct migd_vmm *d);

#endif
