/* SPDX-License-Identifier: MIT */
/*
 * The source engine's object, shared by the seven files that implement
 * it: source.c (the API, the engine thread, the pause and the VM state
 * sent), source_setup.c (channels, Hellos, the setup exchange),
 * source_iter.c (dirty set, page source, one iteration), source_policy.c
 * (when and how precopy ends, the estimate), source_commit.c (Commit,
 * rollback, resolve), source_postcopy.c and source_recover.c (postcopy
 * and its recovery). Not a public contract: its functions are mig__src_*
 * (the mig__ prefix of migrated/mig's private names).
 */
#ifndef MIG_SOURCE_PRIV_H
#define MIG_SOURCE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "hvcore/vm.h"
#include "migrated/mig/converge.h"
#include "migrated/mig/eta.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/pipeline.h"
#include "migrated/mig/session_priv.h"
#include "migrated/mig/throttle.h"

/* Pages fetched from the VM's bitmaps per hv_vm_dirty_fetch_clear()
 * call (64-aligned; the VM re-arms cfg.clear_chunk_pages at a time). */
#define SRC_FETCH_PAGES 32768u

/* The dirty set still to send of one slot: one bit per page. */
struct src_slot {
	uint32_t id;
	gfn_t base;
	uint64_t npages;
	uint64_t nwords;
	uint64_t *bits;
	uint64_t *sent;	 /* pages to hash by mig__src_hash_sent() */
	uint64_t tidx;	 /* first entry of this slot in the page table */
	uint8_t *host;	 /* the slot's memory on this host */
};

struct mig_source {
	/* immutable after start */
	struct hv_vm *vm;
	char host[64];
	uint16_t port;
	struct mig_opts opts;
	struct mig_hooks hooks; /* zero when opts.hooks == NULL */
	struct mig_tls *tls;
	uint8_t sid[MIG_SESSION_ID_LEN];
	unsigned nchan;
	uint32_t io_ms;
	uint64_t t0;	    /* start, CLOCK_MONOTONIC */
	uint64_t deadline;  /* 0: none */
	pthread_t thread;
	bool joined; /* controlling thread */

	/* protected by lock */
	pthread_mutex_t lock;
	bool committed;	  /* ack accepted: cancel is too late */
	/* The operator holds the VM paused (mig_source_vm_pause(), or it
	 * was paused at the start): the engine neither resumes it on a
	 * rollback nor lets the destination run it. */
	bool user_paused;
	/* The VM is paused (by the operator or the switchover), and the
	 * switchover began: the engine holds it paused from then on. */
	bool paused, switching;
	bool ctl_blocked; /* engine blocked reading the control channel */
	struct mig_conn *ctl;
	struct mig_conn *data[MIG_CHANNELS_MAX];

	/* any thread */
	atomic_bool cancel;
	_Atomic uint64_t max_bw;	/* bytes/s on the wire, 0 = none */
	_Atomic uint32_t downtime_ms;
	_Atomic uint32_t throttle_max;

	struct mig__prog prog;

	/*
	 * Engine thread; the page source (source_iter.c) runs on a pipe
	 * thread but only while the engine waits in mig_send_pipe_run(), so
	 * these need no lock.
	 */
	struct src_slot *slots;
	unsigned nslots;
	uint64_t *fetch_buf; /* SRC_FETCH_PAGES / 64 words */
	unsigned cur_slot;
	uint64_t cur_word;
	uint64_t pending;	 /* pages in the dirty set */
	uint64_t run_start_ns; /* for bandwidth pacing */
	uint64_t run_wire0;
	uint64_t pass_limit_ns;	/* io timeout / 3 */
	struct mig_memmap *map;
	struct mig_send_pipe *pipe;
	struct mig_delta_cache *delta; /* NULL: no delta encoding */
	uint32_t cur_iter;	       /* the pass being sent */
	struct mig_throttle thr;
	uint64_t ctl_bytes;	/* control frames' share of bytes_wire */
	/* One 64-bit hash per page (digest.h), memory map order: each page
	 * as last sent, stored ^ the zero-page hash, so holes never sent
	 * stay 0 and their table pages are never touched. */
	uint64_t *table;
	uint64_t table_pages;
	uint64_t holes; /* pages skipped as holes in the first pass */
	bool logging;
	int result;
	/* Engine thread until wait() returned, then the controlling thread
	 * (resolve): the commit had no answer; map, slots and page table
	 * are kept for the verification of a confirmed destination. */
	bool unresolved;
	int cause; /* why it is unresolved */

	/* Postcopy (source_postcopy.c). pc_request any thread, the rest
	 * the engine thread's (the push callback runs on a pipe thread
	 * while the engine serves requests: pc_sched has its own lock,
	 * pc_run's buffer is the pipe lock's). */
	atomic_bool pc_offered;	 /* the destination offers MIG_FEATURE_POSTCOPY
				  * (set in setup, read by mig_source_postcopy) */
	atomic_bool pc_request;	 /* mig_source_postcopy() */
	bool pc_go;		 /* iterate() ended for postcopy */
	bool pc_switched;	 /* past the switch: the VM moved */
	uint64_t pc_hb_src;	 /* realtime of our last heartbeat at it */
	uint64_t *pc_unsent;	 /* page-table order, unsent at the switch */
	uint64_t pc_unsent_pages;
	struct mig_pc_sched *pc_sched;

	/* Switch policy (source_policy.c). so_request any thread; the rest
	 * the engine's, or the page source's while the engine waits in a
	 * pass (never both at once). */
	atomic_bool so_request;	/* mig_source_switchover() */
	struct mig_eta eta;	/* progress estimate (eta.h) */
	double bw_pages;	/* page bytes/s of the last measured pass */
	uint64_t dirty_rate;	/* bytes/s dirtied in the last pass */
	/* Postcopy recovery (source_recover.c): under lock, pc_cond
	 * signalled on a change. */
	pthread_cond_t pc_cond;
	bool pc_paused;	   /* POSTCOPY_PAUSED: waiting for recover/cancel */
	bool pc_recover;   /* mig_source_recover() asked */
	bool pc_give_up;   /* mig_source_cancel() while paused */
	char pc_rhost[64]; /* the address to reconnect to */
	uint16_t pc_rport;
	unsigned pc_recoveries; /* engine thread: recoveries done */
};

#define FAIL(s, err, ...)                                                   \
	do {                                                                 \
		mig__prog_fail(&(s)->prog, (err), __VA_ARGS__);              \
		return (err);                                                \
	} while (0)

/* What to do when the time limit failed a migration (the message has
 * 256 bytes in all). */
#define SRC_TIMEOUT_NEXT                                                  \
	"retry with a larger --timeout-ms or --bandwidth, a higher "     \
	"--throttle-max, or --timeout-policy switchover|postcopy"

/* The destination cancelled: it says no more (an operator there, or its
 * daemon went away and its worker cancelled what it received). */
#define SRC_DEST_CANCELLED                                                \
	MIG_PEER_CANCELLED " (the destination: an operator there, or its " \
	"daemon stopped; see its log); the VM runs on the source"

/* The commit had no answer: a distinct end, never success or rollback. */
#define SRC_UNRESOLVED (-EINPROGRESS)

/* source_commit.c */
/*
 * After the Ack: Commit, then wait for the destination's word.
 * 0: Resumed, the VM runs there (ours still paused: mig__src_complete() stops
 * it). SRC_UNRESOLVED: no word after the Commit went out (s->cause says
 * why). Other: the destination cannot run the VM (the Commit was not
 * sent, or it answered Abort/Cancel): roll back.
 */
int mig__src_commit(struct mig_source *s, struct mig_downtime *dt,
	       uint64_t hb_src);
/* Dirty logging off; a failure goes into the progress message. */
void mig__src_stop_logging(struct mig_source *s);
/* Everything back as before the migration, VM running (or said not to
 * be), the peer told. */
void mig__src_rollback(struct mig_source *s, int err);
/* The destination runs the VM: stop ours, verify. 0 or -EBADE. */
int mig__src_complete(struct mig_source *s);

/* source_setup.c: connect the control channel and the data channels to
 * s->host:s->port and exchange Hellos (session id s->sid). */
int mig__src_connect_channels(struct mig_source *s);
/* source_setup.c: the setup exchange after the channels are up (the
 * layout offered, the destination's answer or refusal). 0 or negative
 * errno, the failure recorded in s->prog. */
int mig__src_setup(struct mig_source *s);

/* source_recover.c */
/*
 * The postcopy connection broke (@err, @why): phase POSTCOPY_PAUSED,
 * channels and send pipe dropped (the frozen copy, page table and
 * scheduler kept); wait for mig_source_recover() and reconnect, again
 * after each failed attempt. 0: reconnected, the scheduler holds what the
 * destination lacks and a new send pipe is up (phase POSTCOPY). Else
 * recovery was given up (mig_source_cancel()): @err, the progress says
 * so. Engine thread.
 */
int mig__src_pc_recover(struct mig_source *s, int err, const char *why);
/* mig_source_cancel() on a paused postcopy: give up (true), or not
 * paused (false: cancel as usual). Any thread. */
bool mig__src_pc_give_up(struct mig_source *s);

/* source_postcopy.c */
/* After a pass: should the migration switch to postcopy now? */
bool mig__src_pc_due(struct mig_source *s);
/* The postcopy switch: pause, send what the destination must hold before
 * it resumes, the unsent set and the state; wait for the Ack. */
int mig__src_pc_switch(struct mig_source *s, uint32_t iter,
		  struct mig_downtime *dt, uint64_t *hb_src);
/* After Resumed: serve requests first, push the rest, until the
 * destination's PostcopyDone; its digest must match ours. */
int mig__src_pc_run(struct mig_source *s);
void mig__src_pc_fini(struct mig_source *s);

/* source_policy.c */
/* Whether this migration may switch to postcopy (then it never sends
 * deltas: postcopy installs pages without a base copy). */
bool mig__src_may_postcopy(const struct mig_source *s);
/*
 * After a pass and mig_converge(): end precopy now? 1: yes (s->pc_go
 * set: by postcopy; else by a switchover), with the cause recorded in
 * the progress; 0: iterate on; negative errno: failed (time limit with
 * policy abort, or postcopy asked and not offered), progress says why.
 */
int mig__src_policy_after_pass(struct mig_source *s, const struct mig_conv_in *in,
			  const struct mig_conv_out *out, uint32_t iter);
/* The throttle ceiling now: the operator's, and with postcopy auto
 * that the destination offers, no more than its policy limit. */
uint32_t mig__src_throttle_cap(struct mig_source *s);
/* Page source, in a pass: 0 go on, 1 end the pass now (the rest stays
 * dirty: a forced switchover, or the time limit under a policy that is
 * not abort), -ETIMEDOUT (time limit, policy abort). */
int mig__src_pass_cut(struct mig_source *s);
/* Fill percent and eta_ns of s->prog.p (its lock held). */
void mig__src_prog_estimate(struct mig_source *s, uint64_t now_ns);

/* source_iter.c */
int mig__src_dirty_init(struct mig_source *s);
void mig__src_dirty_fini(struct mig_source *s);
/* Harvest the VM's logs and OR them into the dirty set; returns the pages
 * newly taken from the VM or a negative errno. */
int64_t mig__src_harvest(struct mig_source *s);
/* IterStart, every page of the dirty set through the pipe, IterEnd. */
int mig__src_send_pass(struct mig_source *s, uint32_t iteration);
/* Pause the VM for the switchover (unless its operator has) under the
 * lock; 0 or hv_vm_pause()'s error. Engine thread. */
int mig__src_pause(struct mig_source *s);

/* The paused VM's state (VmStateEnvelope) on the control channel. */
int mig__src_send_vm_state(struct mig_source *s);
/* The last heartbeat (monotonic ns) any vCPU of @vm sent; 0 if none. */
uint64_t mig__src_last_heartbeat(struct hv_vm *vm);
/* Receive the control reply of type @want (*@m to free with
 * mig_frame_msg_free); an Abort, a Cancel or anything else fails the
 * migration with the peer's reason. 0 or negative errno. */
int mig__src_ctl_expect(struct mig_source *s, unsigned want, ProtobufCMessage **m,
		   const char *what);
/* The same, accepting type @want or @also; *@got (when not NULL) says
 * which came. */
int mig__src_ctl_expect_or(struct mig_source *s, unsigned want, unsigned also,
		      unsigned *got, ProtobufCMessage **m, const char *what);
/* The page table (after the memory map exists): entries are page hashes
 * stored ^ the zero-page hash (mig_hash_range_rel()), all 0 at first (a
 * lazily zero calloc); each slot's index and host address filled. */
int mig__src_table_init(struct mig_source *s);
/* Drop the holes of the guest's memfd from the dirty set (call right
 * after the first harvest: every later write is logged). */
int mig__src_skip_holes(struct mig_source *s);
/* Hash the pages marked in the slots' sent bitmaps into the page table
 * and clear the marks. The pipe hashes what it sends itself
 * (mig_send_pipe_cfg.table): only postcopy's end marks pages here. */
int mig__src_hash_sent(struct mig_source *s);
/* After commit: re-hash all of the (stopped) VM's memory and compare it
 * with the page table; fills the verify_* fields of the progress. */
int mig__src_verify(struct mig_source *s);
/* Refresh the counters of the progress snapshot from the pipe. */
void mig__src_prog_counters(struct mig_source *s);

#endif
