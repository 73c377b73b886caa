/* SPDX-License-Identifier: MIT */
/*
 * mig_source / mig_dest: one live migration of one VM, precopy
 * (docs/architecture.md). This is the contract between the migration
 * engine and its users (the migrated daemon, tests, hvbench); the wire
 * pieces below it are frame.h, conn.h, tls.h, batch.h, pipeline.h,
 * recv_fsm.h, converge.h.
 *
 * Source: mig_source_start() connects one control channel and
 * opts->nr_channels data channels to the destination and runs the
 * migration in a thread of its own:
 *   setup -> iterations (harvest, send, measure) -> switchover (pause, final
 *   harvest, rest of the pages, VM state, digest) -> commit.
 * Destination: mig_dest_start() listens, accepts exactly one migration,
 * validates the offered layout, creates the VM (paused), receives pages
 * straight into its memory, loads and verifies the state, acknowledges,
 * and on the source's confirmation resumes the VM and hands it over.
 *
 * Failure semantics (the point of this object): until the destination has
 * acknowledged a complete, verified state, any failure -- connection drop,
 * destination death, cancel, a bad frame, a timeout -- leaves the VM
 * running on the source with nothing lost (dirty logging stopped, vCPUs
 * resumed, throttle removed), and the destination destroys what it
 * received. The VM never runs on both sides: the destination resumes only
 * after the source's Commit, and the source gives up its copy only on
 * positive news from the destination:
 *   - Resumed: the VM runs there; the source stops its copy (COMPLETED);
 *   - Abort or Cancel: the destination did not start the VM and never
 *     will (it decides alone, once); the source resumes (FAILED);
 *   - nothing (connection lost, destination killed, timeout) after the
 *     Commit went out: the source cannot tell whether the VM runs there.
 *     It keeps its copy paused and intact and ends UNRESOLVED; whoever
 *     asks the destination settles it with mig_source_resolve().
 * The destination gives up waiting for the Commit after half the I/O
 * timeout (and says so with an Abort), so that a lost Commit is normally
 * settled by that Abort before the source's own wait for Resumed ends.
 * docs/architecture.md has the sequence and each loss case.
 *
 * Threads: start/cancel/tune/get_progress/wait/destroy from any one
 * controlling thread; @cb is called from the engine's thread (it must not
 * block and must not call back into the object except get_progress).
 * "If a function that takes a callback fails, the callback is never
 * called."
 */
#ifndef MIG_SESSION_H
#define MIG_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migrated/mig/tls.h"

struct hv_vm;
struct hv_vm_cfg;
struct mig_hooks;

#define MIG_CHANNELS_DEFAULT 2u
#define MIG_CHANNELS_MAX 16u

struct mig_opts {
	unsigned nr_channels;	   /* data channels: 0 = default, max 16 */
	uint64_t max_bandwidth;	   /* bytes/s, 0 = unlimited */
	uint32_t downtime_ms;	   /* limit; 0 = default 300 ms */
	uint32_t throttle_max_pct; /* auto-throttle ceiling; 0 = default 99 */
	uint32_t max_iterations;   /* before throttling; 0 = default */
	uint32_t timeout_ms;	   /* whole migration; 0 = no limit */
	/* 0 = adaptive: each data channel picks raw or a zstd level from
	 * what limits it (migrated/mig/adapt.h); 1..22 = that zstd level,
	 * fixed; -1 = never compress. */
	int zstd_level;
	/* Source: bytes of the cache of last-sent pages that re-sent pages
	 * are delta-encoded against (delta.h), when the destination offers
	 * it; 0 = off (the default: docs/benchmarks.md says why), -1 = the
	 * default size (guest RAM / 64, 1..64 MiB). */
	int64_t delta_cache;
	/* TLS 1.3 with mutual authentication, or plain TCP when @insecure
	 * (and only then: tls == NULL without insecure is -EINVAL). */
	const struct mig_tls_cfg *tls;
	bool insecure;
	/* Every blocking read or write of a channel fails after this long
	 * without progress (a dead or stuck peer never hangs a side);
	 * 0 = MIG_IO_TIMEOUT_MS_DEFAULT. Also bounds connect and accept of
	 * the data channels. */
	uint32_t io_timeout_ms;
	/* Source: enum hv_dirty_mode to log with; 0 = the accelerator's
	 * best (kvm: ring when the VM has one, else bitmap; soft: PML, else
	 * write protection). */
	unsigned dirty_mode;
	/* Source: the VM's name, offered in the layout so that it keeps it
	 * on the destination; NULL or "" = none (mig_vm_name_valid() in
	 * layout.h, else mig_source_start() fails with -EINVAL). Copied. */
	const char *vm_name;
	/*
	 * Destination (NULL: any valid name is fine). Called from the engine
	 * thread in setup, once the layout and its name are valid and before
	 * anything is allocated, with the name the source offers ("" when
	 * none). A negative errno refuses the setup (REFUSE_NAME) with the
	 * reason the callback wrote to @why: nothing is created and the VM
	 * keeps running on the source. 0 accepts; mig_dest_vm_name() then
	 * returns the name. The callback must not block on the thread that
	 * controls this migration (that thread may be waiting in cancel).
	 */
	int (*dst_name_check)(void *arg, const char *name, char *why,
			      size_t why_len);
	void *dst_name_arg;
	/*
	 * Destination (NULL: none). Called from the engine thread once the VM
	 * runs here, before the source is told so (Resumed): the callback
	 * takes ownership of @vm (mig_dest_wait() then gives no VM back), so
	 * that whoever asks after the source's migration returned finds the
	 * VM where it now runs. It may block briefly (a bounded wait for the
	 * owner's thread to register the VM); it must not call into this
	 * migration.
	 */
	void (*dst_running)(void *arg, struct hv_vm *vm);
	void *dst_running_arg;
	/*
	 * Destination (NULL: none). Called from the engine thread once the
	 * Commit arrived, before the VM starts: the fleet's ownership
	 * transaction (docs/fleet.md, "The commit with the
	 * transaction"). 0 starts the VM; a negative errno refuses it
	 * (Abort to the source, VM discarded) with the reason in @why. It
	 * may block (an etcd round trip) but not on the controlling thread.
	 */
	int (*dst_commit)(void *arg, const char *name, char *why,
			  size_t why_len);
	void *dst_commit_arg;
	/* Source: switch to postcopy (postcopy.h) once a pass ends after
	 * @postcopy_after_ms (0: after the first pass), when the destination
	 * offers it; without it only mig_source_postcopy() switches. Once
	 * switched, the VM is split between the hosts until every page is
	 * in place: a host lost meanwhile loses the VM. */
	bool postcopy;
	uint32_t postcopy_after_ms;
	/* Source: switch to postcopy when the convergence model says
	 * precopy cannot finish within the downtime limit without
	 * throttling the guest past @postcopy_throttle_max_pct (0 = the
	 * default, policy.h: mig_pc_auto()), and only when the destination
	 * offers it; @postcopy (the time rule) may be off meanwhile. The
	 * throttle never rises past that limit while the switch is
	 * possible. The same risk as above once switched. */
	bool postcopy_auto;
	uint32_t postcopy_throttle_max_pct;
	/* Source: what @timeout_ms running out does (policy.h: abort,
	 * the default; switchover: pause and finish now; postcopy: switch
	 * when the destination offers it, else abort saying so). */
	unsigned timeout_policy; /* enum mig_timeout_policy */
	/* Tests and benchmarks only; NULL in production. */
	const struct mig_hooks *hooks;
};

#define MIG_IO_TIMEOUT_MS_DEFAULT 10000u
/* The destination waits this long after resume for the guest's first
 * heartbeat (guest-seen downtime) before it reports to the source. */
#define MIG_FIRST_HEARTBEAT_WAIT_MS 1000u

/*
 * Observation points for tests (page-by-page oracles) and benchmarks.
 * Called from the engine's thread; they may read guest memory through the
 * VM but must not change its state (the last two may change memory: that
 * is what they are for).
 */
struct mig_hooks {
	/* Source: VM paused, every page sent (final pass done), before the
	 * state is saved: the memory the destination must end up with. */
	void (*src_switchover)(void *arg, struct hv_vm *vm);
	/* Destination: memory verified and state loaded, VM not started. */
	void (*dst_loaded)(void *arg, struct hv_vm *vm);
	void *arg;
	/* Source, VM paused, the destination's Ack accepted, before the
	 * Commit. The one hook that may change guest memory: a test writes a
	 * page here to make the post-commit verification find a mismatch. */
	void (*src_acked)(void *arg, struct hv_vm *vm);
	/* Destination: every page and the state received, before its
	 * memory is verified. The check uses the page hashes taken as each
	 * batch was decoded, so a change made here is NOT seen by it (the
	 * source's post-commit verification re-reads only its own RAM). */
	void (*dst_received)(void *arg, struct hv_vm *vm);
};

/* Changed while a migration runs (mig_source_tune); 0 = leave as is. */
struct mig_tune {
	uint64_t max_bandwidth;
	uint32_t downtime_ms;
	uint32_t throttle_max_pct;
	/* The data channels are not tunable: their number is fixed by the
	 * handshake (every Hello carries it) and sizes both pipelines. */
};

enum mig_switch_cause {
	MIG_SWITCH_NONE = 0,
	MIG_SWITCH_POSTCOPY_REQUEST,	/* mig_source_postcopy() */
	MIG_SWITCH_POSTCOPY_AFTER,	/* opts.postcopy_after_ms */
	MIG_SWITCH_POSTCOPY_AUTO,	/* opts.postcopy_auto: the model */
	MIG_SWITCH_POSTCOPY_TIMEOUT,	/* timeout policy postcopy */
	MIG_SWITCH_FORCED,		/* mig_source_switchover() */
	MIG_SWITCH_TIMEOUT,		/* timeout policy switchover */
};

enum mig_phase {
	MIG_PHASE_INVALID = 0,
	MIG_PHASE_SETUP,
	MIG_PHASE_ITERATE,
	MIG_PHASE_SWITCHOVER,
	MIG_PHASE_COMMIT,
	MIG_PHASE_COMPLETED, /* VM runs on the destination */
	MIG_PHASE_FAILED,    /* VM runs on the source; error says why */
	MIG_PHASE_CANCELLED, /* VM runs on the source */
	/* Source: Commit sent, no word from the destination since. The VM
	 * is paused here, intact; mig_source_resolve() settles it. */
	MIG_PHASE_UNRESOLVED,
	/* Postcopy: the VM runs on the destination, which pulls the pages
	 * it still lacks from the source's frozen copy. */
	MIG_PHASE_POSTCOPY,
	/* Postcopy with a broken connection, on either side: nothing is
	 * dropped; the destination listens again for the same session and
	 * mig_source_recover() reconnects (postcopy goes on). */
	MIG_PHASE_POSTCOPY_PAUSED,
	MIG_PHASE_COUNT,
};

/* Downtime as a sum of its parts (ns), measured by the source. */
struct mig_downtime {
	uint64_t pause_ns;	   /* stop the vCPUs */
	uint64_t final_harvest_ns; /* last harvest of the dirty logs */
	uint64_t final_send_ns;	   /* last dirty pages on the wire */
	uint64_t state_ns;	   /* VM + vCPU state saved and sent */
	uint64_t digest_ns;	   /* source digest (of its page table)
				    * computed and sent */
	uint64_t load_ns;	   /* destination: verify + load state */
	uint64_t resume_ns;	   /* commit handshake until dest resumed */
	uint64_t total_ns;	   /* pause .. destination resumed */
	/* The parts are measured back to back on the source's clock, so
	 * total_ns is their sum; load_ns and resume_ns include one round
	 * trip each. The destination's own view of its share: */
	uint64_t dst_verify_ns;	   /* digest of its memory */
	uint64_t dst_load_ns;	   /* hv_vm_state_restore */
	uint64_t dst_resume_ns;	   /* hv_vm_start */
};

struct mig_progress {
	enum mig_phase phase;
	/* The migration's id, the same on both hosts: the session id of
	 * the handshake as UUID text (handshake.h); "" on the destination
	 * until the source's Hello came. */
	char uuid[37];
	uint32_t iteration;
	uint64_t elapsed_ns;
	uint64_t ram_bytes;
	uint64_t pages_sent; /* every page put on the wire, all iterations */
	uint64_t pages_zero;
	uint64_t pages_compressed;
	uint64_t pages_raw;
	uint64_t pages_delta; /* of compressed + raw: sent as a delta */
	uint64_t bytes_wire; /* after compression, framing included */
	double compression_ratio;
	uint64_t bandwidth;	 /* bytes/s, last iteration */
	uint64_t dirty_rate;	 /* bytes/s the guest dirtied, last iter. */
	uint64_t remaining_bytes;
	uint64_t expected_downtime_ns;
	uint32_t throttle_pct;
	/* Source's estimate (eta.h): share of the work done, 0..100 (100
	 * only when COMPLETED, never decreasing), and the time left, ns
	 * (0 = unknown or finished; smoothed, it rises by at most half the
	 * time that passed between two values). */
	uint32_t percent;
	uint64_t eta_ns;
	/* Why the source ended its precopy early (0: it did not), with the
	 * model's figures at that moment (the throttle precopy would have
	 * needed, the guest's unthrottled dirty rate, page bandwidth,
	 * what remained, the expected downtime, when). */
	struct mig_switch_why {
		unsigned cause; /* enum mig_switch_cause */
		uint32_t needed_throttle_pct;
		uint32_t throttle_limit_pct;
		uint64_t bandwidth;
		uint64_t dirty_rate;
		uint64_t remaining_bytes;
		uint64_t expected_downtime_ns;
		uint64_t at_ns; /* since the start */
	} why;
	/* Filled once the switchover ran. */
	struct mig_downtime downtime;
	/* The downtime the guest saw: the largest gap between its heartbeats
	 * as timestamped by the hosts (source's last before pause to the
	 * destination's first after resume, CLOCK_REALTIME). 0 if unknown. */
	uint64_t guest_downtime_ns;
	/*
	 * Source, after commit (outside the downtime): its frozen memory
	 * re-hashed page by page against the page table whose SHA-256 the
	 * destination matched at switchover (digest.h). verify_pages 0: not
	 * run. A mismatch means the destination got a page that differs
	 * from the source's final memory: the migration has committed (the
	 * VM runs there), so it is not a rollback but an error of the
	 * result: wait() returns -EBADE, error and message say so.
	 */
	uint64_t verify_pages;
	uint64_t verify_mismatches;
	uint64_t verify_ns;
	/* Pages never sent because they were holes of the source's memfd
	 * (never written: zeros on both sides without a read). */
	uint64_t pages_hole;
	/* Each zstd level's share of the compressed pages, for example
	 * "zstd -1:20% 1:80%" (the adaptive choice); "" when none. */
	char compress_levels[96];
	/* Postcopy (both sides; 0 when it did not run). The switch's own
	 * downtime is in downtime/guest_downtime_ns as for precopy; the
	 * guest's stalls on missing pages are the fault latencies
	 * (destination's figures; the source reports its push counts). */
	bool postcopy;
	uint64_t pc_unsent_pages;    /* pages missing at the switch */
	uint64_t pc_pages_requested; /* sent because a fault asked */
	uint64_t pc_pages_pushed;    /* sent by the background push */
	uint64_t pc_fault_p50_ns, pc_fault_p99_ns, pc_fault_max_ns;
	uint64_t pc_last_page_ns;    /* switch (resume) to the last page */
	int error;	     /* negative errno: FAILED, UNRESOLVED, or a
			      * COMPLETED one whose verification failed */
	char message[256];   /* human-readable reason then */
};

/*
 * Called from one engine thread at a time (the session thread or a data
 * channel thread of the send pipeline), never concurrently.
 */
typedef void (*mig_progress_cb)(void *arg, const struct mig_progress *p);

struct mig_source;
struct mig_dest;

/*
 * Start migrating @vm (RUNNING or PAUSED: see mig_source_vm_pause()) to
 * @host:@port. The VM stays owned by the caller but must not be paused,
 * resumed (but through mig_source_vm_pause()), harvested or destroyed by
 * anyone else until mig_source_wait() returned. @cb (may be NULL) gets
 * progress at every phase change and about every 100 ms.
 * 0, -EINVAL (opts), -EBUSY (VM neither running nor paused). Connection errors are
 * reported through wait(), never here.
 */
int mig_source_start(struct hv_vm *vm, const char *host, uint16_t port,
		     const struct mig_opts *opts, mig_progress_cb cb,
		     void *arg, struct mig_source **out);
/* Ask the migration to stop; wait() then reports CANCELLED, unless the
 * commit point was already passed (then -EALREADY, and the commit's own
 * outcome: COMPLETED, UNRESOLVED, or FAILED on the destination's Abort;
 * a postcopy paused by a broken connection gives up recovering instead:
 * 0, and it ends FAILED). 0 or -EALREADY. */
int mig_source_cancel(struct mig_source *src);
int mig_source_tune(struct mig_source *src, const struct mig_tune *t);
/*
 * Switch to postcopy at the end of the pass in progress (postcopy.h):
 * 0, -EALREADY (past the switchover), -EOPNOTSUPP (the destination
 * does not offer it; known after setup). Controlling thread.
 */
int mig_source_postcopy(struct mig_source *src);
/*
 * The operator pauses (@pause) or resumes the migrating VM. Before the
 * switchover the VM pauses or resumes at once: a paused VM simply stops
 * dirtying memory and the migration goes on. From the switchover on the
 * engine holds it paused and only the outcome changes: a VM paused by its
 * operator arrives paused on the destination (Commit.keep_paused) and a
 * rollback leaves it paused here. A VM paused when the migration started
 * counts as paused by its operator. 0; -EBUSY (already so); -EALREADY
 * (the Commit went out: ask the destination); or hv_vm_pause/resume's
 * error. Controlling thread.
 */
int mig_source_vm_pause(struct mig_source *src, bool pause);

/*
 * Force the switchover now: the pass in progress ends early, then the VM
 * is paused and the rest sent whatever the expected downtime (libvirt's
 * timeout-suspend); the migration's time limit no longer applies.
 * 0, -EALREADY (past its precopy: switchover, postcopy or finished).
 * Controlling thread.
 */
int mig_source_switchover(struct mig_source *src);

/*
 * Postcopy recovery: the migration is in MIG_PHASE_POSTCOPY_PAUSED (its
 * connection broke after the switch); reconnect to @host:@port (numeric;
 * NULL host or port 0: the original address), where the destination
 * listens again for the same session. Returns at once: 0 (the engine
 * reconnects; the phase says how it went: POSTCOPY again, or
 * POSTCOPY_PAUSED with the reason, to be tried again), -EALREADY (not
 * paused in postcopy, or a recovery is in progress), -EINVAL (@host too
 * long). Any thread.
 *
 * mig_source_cancel() on a paused postcopy gives up recovering: the
 * migration ends FAILED, this side's frozen half kept paused (the VM
 * cannot be completed any more).
 */
int mig_source_recover(struct mig_source *src, const char *host,
		       uint16_t port);
void mig_source_get_progress(struct mig_source *src, struct mig_progress *p);
/*
 * Wait for the end; fills @final.
 *   0            COMPLETED: the VM runs on the destination; the source VM
 *                is stopped (the caller destroys it).
 *   -EBADE       COMPLETED as above, but the post-commit verification
 *                found pages that differ (verify_mismatches).
 *   -EINPROGRESS UNRESOLVED: the VM is paused here, memory intact; the
 *                caller asks the destination and calls resolve().
 *   other        FAILED or CANCELLED (-ECANCELED): the VM runs on the
 *                source as before -- unless the rollback could not
 *                resume it (then it is PAUSED and the message says so).
 */
int mig_source_wait(struct mig_source *src, struct mig_progress *final);

enum mig_resolve {
	MIG_RESOLVE_INVALID = 0,
	/* The destination does not run the VM: resume it here (FAILED). */
	MIG_RESOLVE_RESUME_SOURCE,
	/* The destination runs it: stop ours and verify (COMPLETED). */
	MIG_RESOLVE_CONFIRM_DESTINATION,
};

/*
 * Settle an UNRESOLVED migration (wait() returned -EINPROGRESS). The
 * engine cannot know which is right: the caller must have asked the
 * destination, since resuming a VM the destination runs makes two. No
 * callback. RESUME_SOURCE: 0, or the resume's error (still UNRESOLVED).
 * CONFIRM_DESTINATION: 0, or -EBADE when the verification (as in wait)
 * finds a mismatch. -EALREADY when not UNRESOLVED, -EINVAL for @how.
 * @final (may be NULL) gets the new state. Controlling thread.
 */
int mig_source_resolve(struct mig_source *src, enum mig_resolve how,
		       struct mig_progress *final);
/* After wait(). An UNRESOLVED VM stays paused. destroy(NULL) no-op. */
void mig_source_destroy(struct mig_source *src);

/*
 * Listen on @host:@port (port 0: pick one; mig_dest_port() tells it) for
 * one incoming migration. @base (may be NULL) gives accelerator, backing
 * and other local choices; memory size, vCPU count and workload come from
 * the source's layout and state.
 */
int mig_dest_start(const char *host, uint16_t port,
		   const struct mig_opts *opts, const struct hv_vm_cfg *base,
		   mig_progress_cb cb, void *arg, struct mig_dest **out);
uint16_t mig_dest_port(const struct mig_dest *dst);
/*
 * The VM name the source offered, once the setup accepted it (valid and,
 * with opts->dst_name_check, approved by it). NULL before that, when the
 * source offered none (an older source, or none given), or when the
 * setup was refused. The string lives as long as @dst. Any thread.
 */
const char *mig_dest_vm_name(const struct mig_dest *dst);
int mig_dest_cancel(struct mig_dest *dst);
void mig_dest_get_progress(struct mig_dest *dst, struct mig_progress *p);
/*
 * Wait for the end. 0: COMPLETED and *vm_out is the running VM, now owned
 * by the caller (NULL when opts->dst_running took it already). Negative
 * errno: nothing was kept (*vm_out untouched).
 */
int mig_dest_wait(struct mig_dest *dst, struct hv_vm **vm_out,
		  struct mig_progress *final);
void mig_dest_destroy(struct mig_dest *dst);

const char *mig_phase_name(enum mig_phase phase);

#endif
