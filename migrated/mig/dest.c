// SPDX-License-Identifier: MIT
/*
 * mig_dest: the receiving side of a precopy migration (session.h).
 *
 * One engine thread accepts the control channel and the data channels,
 * then reads the control channel, every frame checked by the receiver
 * state machine (recv_fsm.h) before a handler of the table below sees it.
 * Pages arrive on the data channels through the receive pipeline, straight
 * into the paused VM's memory.
 *
 * A watcher thread notices a failing data channel at once (the engine is
 * blocked reading the control channel then): it records the error and
 * shuts the control channel down, which wakes the engine; the engine then
 * closes everything, so the source's next write fails instead of filling
 * socket buffers until its timeout.
 *
 * Whatever fails before the Commit, the engine destroys the VM before it
 * reports: a failed destination holds nothing. The VM starts only after
 * the source's Commit, and this engine is the one place that decides
 * whether it does, once (d->commit_state): after a failed load or
 * verification, after giving up on the Commit (half the I/O timeout after
 * the Ack; the source then gets an Abort) or after any other failure the
 * answer is no, and a Commit arriving later is never read; once the VM is
 * started it is never discarded, whatever happens to the report.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvcore/guest_mem.h"
#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vcpu.h"
#include "hvcore/vm.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/handshake.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/listener.h"
#include "migrated/mig/memmap.h"
#include "migrated/mig/pipeline.h"
#include "migrated/mig/postcopy_uffd.h"
#include "migrated/mig/recv_fsm.h"
#include "migrated/mig/dest_priv.h"
#include "migrated/mig/session_priv.h"

#define WATCH_POLL_MS 50u
/* How long a failed destination waits for the source's reason. */
#define PEER_REASON_MS 1000u


void mig__dst_prog_counters(struct mig_dest *d)
{
	struct mig_pipe_stats st;

	if (!d->pipe)
		return;
	mig_recv_pipe_stats(d->pipe, &st);
	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.elapsed_ns = mig__now_ns() - d->t0;
	d->prog.p.pages_sent = st.pages;
	d->prog.p.pages_zero = st.zero;
	d->prog.p.pages_compressed = st.compressed;
	d->prog.p.pages_raw = st.raw;
	d->prog.p.bytes_wire =
		st.wire + atomic_load_explicit(&d->ctl_bytes,
					       memory_order_relaxed);
	d->prog.p.compression_ratio = mig_pipe_stats_ratio(&st);
	if (st.wire && d->prog.p.elapsed_ns)
		d->prog.p.bandwidth = (uint64_t)((double)st.wire * 1e9 /
						 (double)d->prog.p.elapsed_ns);
	pthread_mutex_unlock(&d->prog.lock);
}

static void set_conn(struct mig_dest *d, struct mig_conn **slot,
		     struct mig_conn *c)
{
	pthread_mutex_lock(&d->lock);
	*slot = c;
	pthread_mutex_unlock(&d->lock);
}

void mig__dst_take_conn(void *arg, int index, struct mig_conn *c)
{
	struct mig_dest *d = arg;

	set_conn(d, index < 0 ? &d->ctl : &d->data[index], c);
}

/*
 * The listener (listener.h) drops every connection that fails TLS or its
 * Hello, or is not one of ours: a stray or hostile peer is not the
 * migration we wait for, and does not end it.
 */
static int accept_channels(struct mig_dest *d)
{
	struct mig_session_accept sa;
	char why[160];
	int ret;

	ret = mig_listener_accept_session(d->lst, d->io_ms, mig__dst_take_conn, d,
					  &sa, why, sizeof(why));
	if (ret)
		FAIL(d, ret, "%s", why);
	if (mig_recv_fsm_step(&d->fsm, MIG__MSG_TYPE__MSG_HELLO))
		FAIL(d, -EPROTO, "hello refused by the state machine");
	memcpy(d->sid, sa.sid, sizeof(d->sid));
	pthread_mutex_lock(&d->prog.lock);
	mig_uuid_format(d->sid, d->prog.p.uuid);
	pthread_mutex_unlock(&d->prog.lock);
	d->version = sa.version;
	d->nchan = sa.nchan;
	/* Every channel is in: the port has nothing more to offer. */
	mig_listener_destroy(d->lst);
	d->lst = NULL;
	return 0;
}

static void *watch_thread(void *arg)
{
	struct mig_dest *d = arg;
	uint64_t want[MIG_CHANNELS_MAX];

	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++)
		want[i] = UINT64_MAX;
	while (!atomic_load(&d->watch_stop)) {
		int r = mig_recv_pipe_wait(d->pipe, want, WATCH_POLL_MS);

		if (r == -ETIMEDOUT) {
			mig__dst_prog_counters(d);
			mig__prog_emit(&d->prog, false);
			continue;
		}
		/*
		 * -EPROTO also means "a channel ended": after its DataEnd
		 * (the final pass, which may land before the engine read the
		 * Switchover) or short of its count. Joining tells: 0 once
		 * every channel ended cleanly, else the first error.
		 */
		if (r == -EPROTO)
			r = mig_recv_pipe_join(d->pipe);
		if (!r)
			break;
		atomic_store(&d->pipe_err, r);
		pthread_mutex_lock(&d->lock);
		if (d->ctl)
			mig_conn_interrupt(d->ctl);
		pthread_mutex_unlock(&d->lock);
		break;
	}
	return NULL;
}

int mig__dst_watch_start(struct mig_dest *d)
{
	int ret;

	atomic_store(&d->watch_stop, false);
	atomic_store(&d->pipe_err, 0);
	ret = -pthread_create(&d->watcher, NULL, watch_thread, d);
	if (!ret)
		d->watching = true;
	return ret;
}

void mig__dst_watch_stop(struct mig_dest *d)
{
	if (!d->watching)
		return;
	atomic_store(&d->watch_stop, true);
	pthread_join(d->watcher, NULL);
	d->watching = false;
}

static int refuse(struct mig_dest *d, unsigned reason, const char *why,
		  int err)
{
	Mig__SetupRefuse r = MIG__SETUP_REFUSE__INIT;

	r.reason = (Mig__RefuseReason)reason;
	r.detail = (char *)why;
	mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_SETUP_REFUSE, &r.base, NULL, 0);
	mig_recv_fsm_fail(&d->fsm);
	FAIL(d, err, "refused the setup: %s", why);
}

/*
 * The page hash table of the received memory: 8 B per page, mapped
 * lazily zeroed so that pages never received (entries left 0, "a zero
 * page") cost no memory. $MIGRATED_DST_DIGEST=reread keeps the old check
 * (re-read all received memory at switchover) for comparison.
 */
static int htab_create(struct mig_dest *d)
{
	const char *mode = getenv("MIGRATED_DST_DIGEST");
	size_t bytes = HV_MAX(mig_memmap_pages(d->map), 1) * sizeof(uint64_t);
	void *p;

	if (mode && !strcmp(mode, "reread"))
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	d->htab = p;
	d->htab_bytes = bytes;
	return 0;
}

/*
 * Populate guest memory ahead of the stream (mig_recv_pipe_prefault_start)
 * when $MIGRATED_DST_PREFAULT=on. Off by default: on the machine we
 * measure on, the first touch of fresh memory costs the same CPU time
 * whoever takes it and does not go faster from two threads, and the
 * helper's record was mixed, faster for stamp pages, slower for random
 * ones, whose decoding needs the CPU it takes (docs/benchmarks.md, "Fresh
 * memory on the destination"). Without the helper the migration works
 * as before, so a failure to start it only logs.
 */
static void prefault_start(struct mig_dest *d)
{
	const char *mode = getenv("MIGRATED_DST_PREFAULT");
	int ret;

	if (!mode || strcmp(mode, "on"))
		return;
	ret = mig_recv_pipe_prefault_start(d->pipe);
	if (ret)
		hv_warn("mig", "op=prefault_start vm=%s err=%d", d->vm_name,
			ret);
}

static int on_setup(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__VmLayout *l = (const Mig__VmLayout *)m;
	Mig__SetupAccept acc = MIG__SETUP_ACCEPT__INIT;
	struct mig_memmap_slot *ms;
	struct hv_vm_cfg cfg;
	char why[160];
	int reason, ret;

	reason = mig_layout_to_cfg(l, d->has_base ? &d->base : NULL, &cfg, why,
				   sizeof(why));
	if (reason)
		return refuse(d, (unsigned)reason, why, -EINVAL);
	if (d->opts.dst_name_check) {
		why[0] = '\0';
		ret = d->opts.dst_name_check(d->opts.dst_name_arg,
					     l->name ? l->name : "", why,
					     sizeof(why));
		if (ret)
			return refuse(d, MIG__REFUSE_REASON__REFUSE_NAME,
				      why[0] ? why : strerror(-ret), ret);
	}
	if (l->name && *l->name) {
		/* Valid (mig_layout_to_cfg), so it fits. */
		snprintf(d->vm_name, sizeof(d->vm_name), "%s", l->name);
		atomic_store_explicit(&d->has_name, true,
				      memory_order_release);
	}
	snprintf(cfg.name, sizeof(cfg.name), "%s",
		 l->name && *l->name ? l->name : "incoming");
	ret = hv_vm_create(&cfg, &d->vm);
	if (ret == -EBUSY && cfg.boot.net_tap[0]) {
		/* The tap is another VM's: on a migration to the same host,
		 * the source's own. */
		snprintf(why, sizeof(why),
			 "tap '%s' is busy on the destination (another VM "
			 "has it: the same host?)",
			 cfg.boot.net_tap);
		return refuse(d, MIG__REFUSE_REASON__REFUSE_LAYOUT, why, ret);
	}
	if (ret) {
		snprintf(why, sizeof(why), "cannot create the VM: %s",
			 strerror(-ret));
		return refuse(d,
			      ret == -ENOMEM ? MIG__REFUSE_REASON__REFUSE_NO_MEMORY
			      : ret == -ENODEV || ret == -EOPNOTSUPP
				      ? MIG__REFUSE_REASON__REFUSE_ACCEL
				      : MIG__REFUSE_REASON__REFUSE_LAYOUT,
			      why, ret);
	}
	/*
	 * The source does not send the holes of its memory (never-written
	 * pages): ours must read as zeros wherever no page arrives, whatever
	 * creating the VM wrote here. Punching is cheap and leaves the
	 * memory unpopulated, so the digest skips what never arrived too.
	 */
	if (d->vm->mem) {
		ret = hv_guest_mem_discard(d->vm->mem);
		if (ret)
			FAIL(d, ret, "clear the new VM's memory: %s",
			     strerror(-ret));
	}
	ms = calloc(l->n_slots, sizeof(*ms));
	if (!ms)
		FAIL(d, -ENOMEM, "memory map: out of memory");
	for (size_t i = 0; i < l->n_slots; i++) {
		const Mig__Memslot *s = l->slots[i];

		ms[i] = (struct mig_memmap_slot){
			.id = s->id,
			.base_gfn = s->base_gfn,
			.npages = s->npages,
			.host = hv_vm_gpa_to_hva(d->vm, hv_gfn_to_gpa(s->base_gfn),
						 s->npages << HV_PAGE_SHIFT),
		};
	}
	ret = mig_memmap_create(ms, (unsigned)l->n_slots, &d->map);
	free(ms);
	if (ret)
		FAIL(d, ret, "memory map: %s", strerror(-ret));
	ret = htab_create(d);
	if (ret)
		FAIL(d, ret, "page hash table: %s", strerror(-ret));
	ret = mig_recv_pipe_create_hashed(d->data, d->nchan, d->map, d->htab,
					  &d->pipe);
	if (ret)
		FAIL(d, ret, "receive pipeline: %s", strerror(-ret));
	prefault_start(d);
	ret = mig__dst_watch_start(d);
	if (ret)
		FAIL(d, ret, "watcher thread: %s", strerror(-ret));
	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.ram_bytes = cfg.mem_bytes;
	pthread_mutex_unlock(&d->prog.lock);
	mig__prog_phase(&d->prog, MIG_PHASE_ITERATE);
	ret = mig_faultpoint(MIG_FP_DST_SETUP);
	if (ret < 0)
		FAIL(d, ret, "fault point %s", MIG_FP_DST_SETUP);
	acc.nr_channels = d->nchan;
	acc.features = MIG_FEATURES_SUPPORTED;
	/* Postcopy installs pages with userfaultfd, 4 KiB at a time, and
	 * fills the page-hash table as it does (postcopy_uffd.h). */
	if (d->vm->mem && d->htab &&
	    d->vm->mem->backing != HV_BACKING_HUGETLB)
		acc.features |= MIG_FEATURE_POSTCOPY;
	ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_SETUP_ACCEPT, &acc.base,
			    NULL, 0);
	if (ret)
		FAIL(d, ret, "send setup accept: %s", strerror(-ret));
	return 0;
}

static int on_iter_start(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__IterStart *is = (const Mig__IterStart *)m;

	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.iteration = is->iteration;
	d->prog.p.remaining_bytes = is->dirty_pages << HV_PAGE_SHIFT;
	pthread_mutex_unlock(&d->prog.lock);
	return 0;
}

static int on_iter_end(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__IterEnd *ie = (const Mig__IterEnd *)m;
	int ret;

	if (ie->n_channel_batches != d->nchan)
		FAIL(d, -EPROTO, "iter_end for %zu channels, not %u",
		     ie->n_channel_batches, d->nchan);
	ret = mig_faultpoint(MIG_FP_DST_ITER);
	if (ret < 0)
		FAIL(d, ret, "fault point %s (iteration %u)", MIG_FP_DST_ITER,
		     ie->iteration);
	ret = mig_recv_pipe_wait(d->pipe, ie->channel_batches, d->io_ms);
	if (ret)
		FAIL(d, ret, "iteration %u: pages: %s", ie->iteration,
		     strerror(-ret));
	mig__dst_prog_counters(d);
	mig__prog_emit(&d->prog, false);
	/* Every batch of the iteration is in memory: let the source send the
	 * next pass (see IterAck in proto/migration.proto). */
	{
		Mig__IterAck ack = MIG__ITER_ACK__INIT;
		struct mig_pipe_stats st;

		mig_recv_pipe_stats(d->pipe, &st);
		ack.iteration = ie->iteration;
		ack.pages = st.pages;
		ret = mig_conn_send(d->ctl, MIG__MSG_TYPE__MSG_ITER_ACK,
				    &ack.base, NULL, 0);
		if (ret)
			FAIL(d, ret, "iteration %u: ack: %s", ie->iteration,
			     strerror(-ret));
	}
	return 0;
}

static int on_switchover(struct mig_dest *d, const ProtobufCMessage *m)
{
	(void)m;
	mig__prog_phase(&d->prog, MIG_PHASE_SWITCHOVER);
	return 0;
}

static int on_abort(struct mig_dest *d, const ProtobufCMessage *m)
{
	const Mig__Abort *a = (const Mig__Abort *)m;

	if (a->reason == MIG__ABORT_REASON__ABORT_CANCELLED)
		FAIL(d, -ECANCELED, MIG_PEER_CANCELLED " (the source)");
	FAIL(d, -ECONNABORTED, "source aborted (reason %d): %.160s",
	     (int)a->reason, a->detail ? a->detail : "");
}

static int on_cancel(struct mig_dest *d, const ProtobufCMessage *m)
{
	(void)m;
	FAIL(d, -ECANCELED, MIG_PEER_CANCELLED " (the source)");
}

/*
 * A data channel closed under us, or the control channel: if the source
 * cancelled or aborted, its Cancel or Abort is on the way on the control
 * channel, and that is what the user must read, not "Broken pipe".
 */
static int peer_reason(struct mig_dest *d, int ret)
{
	char why[160];
	int pr;

	if (ret == -ECANCELED || ret == -ECONNABORTED ||
	    atomic_load(&d->cancel) || !d->ctl || mig_conn_error(d->ctl) ||
	    !(atomic_load(&d->pipe_err) || ret == -EPIPE ||
	      ret == -ECONNRESET || ret == -EINTR))
		return ret;
	pr = mig_peer_reason(d->ctl, PEER_REASON_MS, why, sizeof(why));
	if (!pr)
		return ret;
	pthread_mutex_lock(&d->prog.lock);
	d->prog.p.error = pr;
	d->prog.p.phase = pr == -ECANCELED ? MIG_PHASE_CANCELLED
					   : MIG_PHASE_FAILED;
	if (pr == -ECANCELED)
		snprintf(d->prog.p.message, sizeof(d->prog.p.message),
			 MIG_PEER_CANCELLED " (the source)");
	else
		snprintf(d->prog.p.message, sizeof(d->prog.p.message),
			 "source aborted: %.160s", why);
	pthread_mutex_unlock(&d->prog.lock);
	return pr;
}

typedef int (*msg_handler)(struct mig_dest *d, const ProtobufCMessage *m);

/* What each accepted control message does; the state machine has already
 * refused every message out of place. */
static const msg_handler handlers[] = {
	[MIG__MSG_TYPE__MSG_SETUP] = on_setup,
	[MIG__MSG_TYPE__MSG_ITER_START] = on_iter_start,
	[MIG__MSG_TYPE__MSG_ITER_END] = on_iter_end,
	[MIG__MSG_TYPE__MSG_SWITCHOVER] = on_switchover,
	[MIG__MSG_TYPE__MSG_VM_STATE] = mig__dst_on_vm_state,
	[MIG__MSG_TYPE__MSG_DIGEST] = mig__dst_on_digest,
	[MIG__MSG_TYPE__MSG_COMMIT] = mig__dst_on_commit,
	[MIG__MSG_TYPE__MSG_POSTCOPY_UNSENT] = mig__dst_pc_on_unsent,
	[MIG__MSG_TYPE__MSG_ABORT] = on_abort,
	[MIG__MSG_TYPE__MSG_CANCEL] = on_cancel,
};

/*
 * While iterating, the control channel is silent until the pass's
 * IterEnd, however long the pass takes on a slow link: the pages arrive
 * on the data channels meanwhile. So the I/O timeout counts only time in
 * which neither the control channel nor any data channel brought a byte
 * (a 1 Mbit/s link used to fail here after 10 s while pages flowed).
 * Waits in 1 s slices so that a cancel is seen. 0: a frame is arriving.
 */
static int wait_while_pages_flow(struct mig_dest *d)
{
	struct mig_pipe_stats a, b;
	unsigned idle = 0;
	int ret;

	if (d->fsm.state != MIG_RECV_ITERATING || !d->pipe)
		return 0;
	mig_recv_pipe_stats(d->pipe, &a);
	for (;;) {
		ret = mig_conn_wait_recv(d->ctl, 1000);
		if (ret != -ETIMEDOUT)
			return ret;
		if (atomic_load(&d->cancel))
			return -ECANCELED;
		mig_recv_pipe_stats(d->pipe, &b);
		idle = b.wire != a.wire ? 0 : idle + 1000;
		if (idle >= d->io_ms)
			return -ETIMEDOUT;
		a = b;
	}
}

static int control_loop(struct mig_dest *d)
{
	while (d->fsm.state != MIG_RECV_COMMITTED) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;
		int ret;

		ret = mig__dst_wait_commit(d);
		if (!ret)
			ret = wait_while_pages_flow(d);
		if (!ret)
			ret = mig_conn_recv(d->ctl, &h, &m);
		if (ret == -ETIMEDOUT && d->commit_state == DST_GAVE_UP)
			return ret; /* mig__dst_wait_commit() said why */
		if (ret) {
			int perr = atomic_load(&d->pipe_err);

			if (atomic_load(&d->cancel))
				FAIL(d, -ECANCELED, "cancelled");
			if (perr)
				FAIL(d, perr, "data channel: %s",
				     strerror(-perr));
			FAIL(d, ret, "control channel (%s): %s",
			     mig_recv_state_name(d->fsm.state),
			     strerror(-ret));
		}
		atomic_fetch_add_explicit(&d->ctl_bytes,
					  MIG_FRAME_HDR_SIZE + h.len,
					  memory_order_relaxed);
		ret = mig_recv_fsm_step(&d->fsm, h.type);
		if (ret) {
			mig_frame_msg_free(m);
			FAIL(d, ret, "unexpected %s in state %s",
			     mig_frame_type_name(h.type),
			     mig_recv_state_name(d->fsm.failed_in));
		}
		ret = h.type < HV_ARRAY_SIZE(handlers) && handlers[h.type]
			      ? handlers[h.type](d, m)
			      : 0;
		mig_frame_msg_free(m);
		if (ret) {
			mig_recv_fsm_fail(&d->fsm);
			return ret;
		}
	}
	return 0;
}

static void teardown(struct mig_dest *d)
{
	/* Channels still open end now: the watcher may wait for them. */
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++)
		if (d->data[i] && d->pipe)
			mig_conn_shutdown(d->data[i]);
	pthread_mutex_unlock(&d->lock);
	mig__dst_watch_stop(d);
	mig__dst_prog_counters(d);
	mig_recv_pipe_destroy(d->pipe);
	d->pipe = NULL;
	mig__dst_pc_fini(d);
	pthread_mutex_lock(&d->lock);
	mig_conn_destroy(d->ctl);
	d->ctl = NULL;
	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++) {
		mig_conn_destroy(d->data[i]);
		d->data[i] = NULL;
	}
	pthread_mutex_unlock(&d->lock);
	mig_memmap_destroy(d->map);
	d->map = NULL;
	if (d->htab)
		munmap(d->htab, d->htab_bytes);
	d->htab = NULL;
	free(d->state.data);
	d->state.data = NULL;
	mig_listener_destroy(d->lst);
	d->lst = NULL;
}

static void *dst_thread(void *arg)
{
	struct mig_dest *d = arg;
	int ret;

	ret = accept_channels(d);
	if (!ret)
		ret = control_loop(d);
	if (!ret && d->pc)
		ret = mig__dst_pc_run(d);
	/* A started VM is never discarded (mig__dst_on_commit returns 0 once it
	 * started it; this keeps it so should that ever change). A broken
	 * postcopy keeps it too, but it is not complete: the error stays. */
	if (d->commit_state == DST_RESUMED && !d->pc_broken)
		ret = 0;
	if (ret)
		ret = peer_reason(d, ret);
	if (ret && atomic_load(&d->cancel)) {
		pthread_mutex_lock(&d->prog.lock);
		d->prog.p.error = -ECANCELED;
		d->prog.p.phase = MIG_PHASE_CANCELLED;
		pthread_mutex_unlock(&d->prog.lock);
		ret = -ECANCELED;
	}
	if (ret) {
		char esc[HV_LOG_ESCAPE_LEN(sizeof(d->prog.p.message))];
		struct mig_progress p;

		/* Decided once: whatever comes later, this VM never runs. */
		if (d->commit_state != DST_RESUMED)
			d->commit_state = DST_GAVE_UP;
		mig__prog_get(&d->prog, &p);
		pthread_mutex_lock(&d->lock);
		if (d->ctl && !mig_conn_error(d->ctl))
			mig__send_abort(d->ctl, ret, p.message);
		pthread_mutex_unlock(&d->lock);
		hv_log(ret == -ECANCELED ? HV_LOG_INFO : HV_LOG_ERR, "mig",
		       "op=migrate_in port=%u err=%d msg=\"%s\"", d->port, ret,
		       hv_log_escape(p.message, esc, sizeof(esc)));
	}
	(void)mig_faultpoint(MIG_FP_DST_DONE); /* tests: a slow end */
	/* The pipe's threads write into the VM's memory: stop them first. */
	teardown(d);
	/* Nothing of a failed migration is kept. */
	hv_vm_destroy(d->vm);
	d->vm = NULL;
	if (!ret)
		mig__prog_phase(&d->prog, MIG_PHASE_COMPLETED);
	d->result = ret;
	mig__prog_emit(&d->prog, true);
	return NULL;
}

int mig_dest_start(const char *host, uint16_t port,
		   const struct mig_opts *opts, const struct hv_vm_cfg *base,
		   mig_progress_cb cb, void *arg, struct mig_dest **out)
{
	struct mig_listener_cfg lcfg;
	unsigned nchan;
	struct mig_dest *d;
	int ret;

	if (!host || !out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = mig__opts_check(opts, &nchan, &d->io_ms);
	if (ret)
		goto fail;
	d->opts = *opts;
	snprintf(d->lhost, sizeof(d->lhost), "%s", host);
	if (opts->hooks)
		d->hooks = *opts->hooks;
	d->opts.hooks = NULL;
	d->opts.tls = NULL;
	if (base) {
		d->base = *base;
		d->has_base = true;
	}
	ret = mig__tls_make(opts, true, &d->tls);
	if (ret)
		goto fail;
	lcfg = (struct mig_listener_cfg){
		.tls = d->tls,
		.io_ms = d->io_ms,
		.cancel = &d->cancel,
	};
	ret = mig_listener_create(host, port, &lcfg, &d->lst);
	if (ret)
		goto fail_tls;
	d->port = mig_listener_port(d->lst);
	pthread_mutex_init(&d->lock, NULL);
	mig__prog_init(&d->prog, cb, arg);
	mig_recv_fsm_init(&d->fsm);
	d->t0 = mig__now_ns();
	ret = -pthread_create(&d->thread, NULL, dst_thread, d);
	if (ret)
		goto fail_lst;
	*out = d;
	return 0;
fail_lst:
	mig__prog_fini(&d->prog);
	pthread_mutex_destroy(&d->lock);
	mig_listener_destroy(d->lst);
fail_tls:
	mig_tls_destroy(d->tls);
fail:
	free(d);
	return ret;
}

uint16_t mig_dest_port(const struct mig_dest *d)
{
	return d->port;
}

const char *mig_dest_vm_name(const struct mig_dest *d)
{
	return atomic_load_explicit(&d->has_name, memory_order_acquire)
		       ? d->vm_name
		       : NULL;
}

int mig_dest_cancel(struct mig_dest *d)
{
	if (atomic_exchange(&d->cancel, true))
		return -EALREADY;
	pthread_mutex_lock(&d->lock);
	/* Not shut down: the engine tells the source with a Cancel. */
	if (d->ctl)
		mig_conn_interrupt(d->ctl);
	for (unsigned i = 0; i < MIG_CHANNELS_MAX; i++)
		if (d->data[i])
			mig_conn_shutdown(d->data[i]);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void mig_dest_get_progress(struct mig_dest *d, struct mig_progress *p)
{
	mig__prog_get(&d->prog, p);
}

int mig_dest_wait(struct mig_dest *d, struct hv_vm **vm_out,
		  struct mig_progress *final)
{
	if (!d->joined) {
		pthread_join(d->thread, NULL);
		d->joined = true;
	}
	if (final)
		mig__prog_get(&d->prog, final);
	if (!d->result && vm_out) {
		*vm_out = d->vm_out;
		d->vm_out = NULL;
	}
	return d->result;
}

void mig_dest_destroy(struct mig_dest *d)
{
	if (!d)
		return;
	if (!d->joined) {
		mig_dest_cancel(d);
		mig_dest_wait(d, NULL, NULL);
	}
	/*
	 * A completed VM nobody took is ours to free. A broken postcopy's
	 * VM waits on pages that will never come: the installer goes
	 * first, so that its vCPUs leave their faults (reading zeros) and
	 * can be stopped; its memory is discarded with it.
	 */
	if (d->pc_uffd) {
		hv_err("mig", "op=postcopy_discard port=%u "
			      "msg=\"the incomplete VM is destroyed\"",
		       d->port);
		mig_pc_uffd_destroy(d->pc_uffd);
	}
	hv_vm_destroy(d->vm_out);
	mig_tls_destroy(d->tls);
	mig__prog_fini(&d->prog);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
