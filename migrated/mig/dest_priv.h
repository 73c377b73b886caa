/* SPDX-License-Identifier: MIT */
/*
 * The destination's object, shared by the four files that implement it:
 * dest.c (channels, setup, iterations, the control loop, the API),
 * dest_commit.c (verification, state load, the commit decision),
 * dest_postcopy.c and dest_recover.c (postcopy and its recovery). Not a
 * public header: its functions are mig__dst_*, and everything here is
 * the engine thread's unless a field group says otherwise.
 */
#ifndef MIG_DEST_PRIV_H
#define MIG_DEST_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hvcore/vm.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/recv_fsm.h"
#include "migrated/mig/session_priv.h"

struct mig_listener;
struct mig_memmap;
struct mig_recv_pipe;

/* The one decision of this side (engine thread only). */
enum dst_commit_state {
	DST_LOADING = 0, /* no verified, loaded state yet */
	DST_LOADED,	 /* verified and loaded, Ack sent: may resume */
	DST_GAVE_UP,	 /* will never resume */
	DST_RESUMED,	 /* the VM runs here: never discarded */
};

struct mig_dest {
	/* immutable after start */
	struct mig_opts opts;
	struct mig_hooks hooks;
	struct hv_vm_cfg base;
	bool has_base;
	struct mig_tls *tls;
	struct mig_listener *lst; /* engine thread, until the channels are in */
	uint16_t port;
	char lhost[64]; /* the address listened on (postcopy recovery) */
	uint32_t io_ms;
	uint64_t t0;
	pthread_t thread;
	bool joined; /* controlling thread */

	/* protected by lock */
	pthread_mutex_t lock;
	struct mig_conn *ctl;
	struct mig_conn *data[MIG_CHANNELS_MAX];

	/* written once by the engine in setup, then published by has_name */
	char vm_name[MIG_VM_NAME_MAX + 1];
	atomic_bool has_name;

	/* any thread */
	atomic_bool cancel;
	atomic_bool watch_stop;
	_Atomic int pipe_err;

	struct mig__prog prog;

	/* engine thread */
	struct mig_recv_fsm fsm;
	uint8_t sid[MIG_SESSION_ID_LEN];
	uint32_t version;
	unsigned nchan;
	struct hv_vm *vm;
	struct mig_memmap *map;
	struct mig_recv_pipe *pipe;
	/* Page hashes taken at decode (mig_recv_pipe_create_hashed), one
	 * per page of map, hash ^ zero hash; NULL: re-read at switchover
	 * ($MIGRATED_DST_DIGEST=reread, the old check, kept to compare). */
	uint64_t *htab;
	size_t htab_bytes;
	pthread_t watcher;
	bool watching;
	bool data_done; /* pipe joined, digest computed */
	uint8_t digest[MIG_DIGEST_LEN];
	uint64_t digest_pages;
	struct hv_blob state;
	uint64_t verify_ns, load_ns;
	enum dst_commit_state commit_state;
	/* written by the control thread, read by the watcher's progress */
	_Atomic uint64_t ctl_bytes;
	int result;
	struct hv_vm *vm_out;

	/*
	 * Postcopy (dest_postcopy.c): engine thread, except pc_lock's group
	 * (the fault thread queues requests) and what the installer and the
	 * pipe's install callback share (pc_uffd, pc_bmap, htab: each page
	 * installed once, see postcopy_uffd.h).
	 */
	bool pc;	     /* the source switched to postcopy */
	bool pc_broken;	     /* postcopy failed after the VM moved */
	uint64_t *pc_missing; /* one bit per page of guest RAM (RAM order) */
	uint64_t pc_unsent;
	struct mig_pc_uffd *pc_uffd;
	/* Bounce buffers: one per data channel, then the control's. */
	uint8_t *pc_bounce[MIG_CHANNELS_MAX + 1];
	bool pc_bounce_ring; /* each is a small ring of pages (bounce_ring) */
	struct mig_memmap *pc_bmap[MIG_CHANNELS_MAX + 1]; /* layouts */
	struct mig_memmap *pc_cbmap; /* = pc_bmap[nchan], the control's */
	struct mig_batch_dec *pc_dec;
	uint8_t *pc_payload;
	uint8_t *pc_hva;	/* guest RAM, pc_ram_pages pages */
	uint64_t pc_ram_pages;
	uint64_t pc_t0;		/* resumed, CLOCK_MONOTONIC */
	int pc_efd;		/* eventfd: requests queued */
	pthread_mutex_t pc_lock;
	uint64_t pc_q[256];	/* protected by pc_lock: gfns to ask for */
	unsigned pc_qlen;
	atomic_uint_fast64_t pc_requested;
	uint64_t pc_seq;	 /* the next PageRequest's seq (engine) */
	uint64_t pc_load_faults; /* pages asked for while loading the state */
	unsigned pc_recoveries; /* postcopy recoveries done (dest_recover.c) */
	bool pc_whole; /* every page in, digest taken, VM handed over */
};

#define FAIL(d, err, ...)                                                   \
	do {                                                                 \
		mig__prog_fail(&(d)->prog, (err), __VA_ARGS__);              \
		return (err);                                                \
	} while (0)

/* dest.c: the pipeline's counters into the progress. Engine thread. */
void mig__dst_prog_counters(struct mig_dest *d);
/* dest.c: a session's channel as the listener hands it over
 * (mig_listener_take_fn; index -1: control). */
void mig__dst_take_conn(void *arg, int index, struct mig_conn *c);
/* dest.c: start the watcher over d->pipe (pipe_err cleared), and stop
 * it (no-op when not running). Engine thread. */
int mig__dst_watch_start(struct mig_dest *d);
void mig__dst_watch_stop(struct mig_dest *d);

/* dest_recover.c: the postcopy connection broke (@err, @why): phase
 * POSTCOPY_PAUSED, channels and receive pipe dropped (installer, missing
 * set, page table and VM kept); listen again for the same session on
 * the original address (else any port, said in the message), and on its
 * reconnect send what is still missing and the outstanding requests, with
 * a new receive pipe. 0: recovered (phase POSTCOPY); else cancelled
 * (-ECANCELED) or an error setting up the wait. Engine thread. */
int mig__dst_pc_recover(struct mig_dest *d, int err, const char *why);

/* dest_commit.c: the handlers of VmState, Digest and Commit, and the
 * wait for the Commit after the Ack (0, or the error already recorded
 * in the progress). Engine thread. */
int mig__dst_on_vm_state(struct mig_dest *d, const ProtobufCMessage *m);
int mig__dst_on_digest(struct mig_dest *d, const ProtobufCMessage *m);
int mig__dst_on_commit(struct mig_dest *d, const ProtobufCMessage *m);
int mig__dst_wait_commit(struct mig_dest *d);

/* dest_postcopy.c: PostcopyUnsent; the postcopy VmState (load, Ack);
 * after the commit, the fault service until every page is in place;
 * the teardown (keeps the installer while a broken postcopy's VM is
 * held). Engine thread. */
int mig__dst_pc_on_unsent(struct mig_dest *d, const ProtobufCMessage *m);
int mig__dst_pc_on_vm_state(struct mig_dest *d, const ProtobufCMessage *m);
int mig__dst_pc_run(struct mig_dest *d);
void mig__dst_pc_fini(struct mig_dest *d);
/* d->pipe installs through the bounce buffers (postcopy_uffd.h). */
void mig__dst_pc_pipe_install(struct mig_dest *d);
/* The gfn of RAM page @idx, UINT64_MAX outside every slot. Any thread. */
uint64_t mig__dst_pc_idx_gfn(const struct mig_dest *d, uint64_t idx);

#endif
