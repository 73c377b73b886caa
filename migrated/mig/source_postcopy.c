// SPDX-License-Identifier: MIT
/*
 * mig_source, postcopy (source_priv.h, docs/migration-protocol.md, "Postcopy").
 *
 * Switch (VM paused, inside the downtime):
 *   final harvest -> the dirty set is what the destination lacks;
 *   Switchover; one small pass with the pages the destination's host
 *   code writes before it resumes (workload params and vCPU status
 *   lines: a host write to a missing page would wait for a request that
 *   nobody serves before the commit); PostcopyUnsent per slot (the rest
 *   of the dirty set); VmState; the pages the destination's load of
 *   the state faults on (PageRequests before the Ack, wait_ack()); Ack;
 *   then the usual Commit / Resumed.
 * Run (VM running on the destination, ours paused and frozen: dirty
 *   logging is over):
 *   engine thread: PageRequest in -> pages out on the control channel,
 *   before anything else; a pusher thread drives the data channels with
 *   the rest, from just after the last requested page (postcopy_sched.h
 *   hands each page out once), held to the bandwidth cap as precopy is
 *   (requested pages never wait for it). PostcopyDone: every page is in
 *   place; its digest must equal ours, taken over the frozen memory.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvcore/log.h"
#include "hvcore/types.h"
#include "hvcore/vcpu.h"
#include "hvcore/workload.h"
#include "migrated/mig/batch.h"
#include "migrated/mig/digest.h"
#include "migrated/mig/layout.h"
#include "migrated/mig/faultpoint.h"
#include "migrated/mig/postcopy_map.h"
#include "migrated/mig/postcopy_recover.h"
#include "migrated/mig/postcopy_sched.h"
#include "migrated/mig/source_priv.h"

/* Host-written guest pages the destination needs before it resumes. */
#define PC_HOST_GPA_FIRST HV_WL_PARAMS_GPA
#define PC_HOST_GPA_END (HV_WL_STATUS_GPA + HV_PAGE_SIZE)

static bool bit_get(const uint64_t *b, uint64_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}

bool mig__src_pc_due(struct mig_source *s)
{
	bool held;

	if (!atomic_load(&s->pc_offered))
		return false;
	/* A paused VM dirties nothing: precopy ends it, and postcopy would
	 * need it running on the destination. */
	pthread_mutex_lock(&s->lock);
	held = s->user_paused;
	pthread_mutex_unlock(&s->lock);
	if (held)
		return false;
	if (atomic_load(&s->pc_request))
		return true;
	return s->opts.postcopy &&
	       mig__now_ns() - s->t0 >=
		       (uint64_t)s->opts.postcopy_after_ms * 1000000ull;
}

/* Keep in the dirty set only the host-written pages; move the rest to
 * the unsent set (page-table order). */
static int split_dirty_set(struct mig_source *s)
{
	uint64_t total = 0, words = 0;

	for (unsigned i = 0; i < s->nslots; i++)
		words = HV_MAX(words, s->slots[i].tidx + s->slots[i].npages);
	s->pc_unsent = calloc(HV_MAX(HV_DIV_ROUND_UP(words, 64), 1), 8);
	if (!s->pc_unsent)
		return -ENOMEM;
	s->pending = 0;
	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];

		for (uint64_t p = 0; p < sl->npages; p++) {
			uint64_t gpa = hv_gfn_to_gpa(sl->base + p);
			uint64_t t = sl->tidx + p;

			if (!bit_get(sl->bits, p))
				continue;
			if (gpa >= PC_HOST_GPA_FIRST && gpa < PC_HOST_GPA_END) {
				s->pending++;
				continue;
			}
			sl->bits[p >> 6] &= ~(1ull << (p & 63));
			s->pc_unsent[t >> 6] |= 1ull << (t & 63);
			total++;
		}
	}
	s->pc_unsent_pages = total;
	return 0;
}

/* One PostcopyUnsent per range of at most MIG_PC_UNSENT_RANGE_MAX pages
 * of each slot (at least one per slot, so an empty set is said too). */
static int send_unsent(struct mig_source *s)
{
	for (unsigned i = 0; i < s->nslots; i++) {
		const struct src_slot *sl = &s->slots[i];
		uint64_t *bits = calloc(HV_MAX(sl->nwords, 1), 8);
		int ret;

		if (!bits)
			return -ENOMEM;
		for (uint64_t p = 0; p < sl->npages; p++)
			if (bit_get(s->pc_unsent, sl->tidx + p))
				bits[p >> 6] |= 1ull << (p & 63);
		ret = mig_pc_unsent_send(s->ctl, sl->id, bits, sl->npages,
					 &s->ctl_bytes);
		free(bits);
		if (ret)
			return ret;
	}
	return 0;
}

static uint64_t gfn_index(const struct mig_source *s, uint64_t gfn,
			  unsigned *slot);
static int send_one(struct mig_source *s, struct mig_batch_enc *enc,
		    uint64_t t);

/*
 * The destination's Ack, after it loaded the state. Loading may touch a
 * page it lacks (a Linux guest: KVM writes the wall clock and maps each
 * vCPU's kvmclock page when their MSRs are set), which faults into its
 * userfaultfd: it then asks for the page before the Ack, and we answer
 * on this channel, each page alone (the push sends it again later; the
 * destination keeps the first copy). Without this the load would wait
 * for a page nobody sends before the commit.
 */
static int wait_ack(struct mig_source *s)
{
	struct mig_batch_enc_cfg ecfg = {
		.encoding = MIG__ENCODING__ENCODING_RAW,
	};
	struct mig_batch_enc *enc = NULL;
	uint64_t served = 0;
	ProtobufCMessage *m;
	unsigned got;
	int ret;

	for (;;) {
		const Mig__PageRequest *r;

		ret = mig__src_ctl_expect_or(s, MIG__MSG_TYPE__MSG_ACK,
					MIG__MSG_TYPE__MSG_PAGE_REQUEST, &got,
					&m, "waiting for ack");
		if (ret)
			break;
		if (got == MIG__MSG_TYPE__MSG_ACK) {
			mig_frame_msg_free(m);
			break;
		}
		r = (const Mig__PageRequest *)m;
		ret = mig_pc_request_check(r);
		if (ret)
			mig__prog_fail(&s->prog, -EPROTO,
				       "postcopy: page request of %zu gfns "
				       "before the ack",
				       r->n_gfns);
		if (!ret && !enc)
			ret = mig_batch_enc_create(&ecfg, &enc);
		for (size_t i = 0; !ret && i < r->n_gfns; i++) {
			unsigned slot;
			uint64_t t = gfn_index(s, r->gfns[i], &slot);

			if (t == UINT64_MAX) {
				ret = -EPROTO;
				mig__prog_fail(&s->prog, ret,
					       "postcopy: request for gfn "
					       "0x%llx before the ack, not "
					       "guest RAM",
					       (unsigned long long)r->gfns[i]);
				break;
			}
			ret = send_one(s, enc, t);
			if (ret)
				mig__prog_fail(&s->prog, ret,
					       "postcopy: a page asked for "
					       "before the ack: %s",
					       strerror(-ret));
			served++;
		}
		mig_frame_msg_free(m);
		if (ret) {
			mig_conn_set_error(s->ctl, ret);
			break;
		}
	}
	mig_batch_enc_destroy(enc);
	if (served)
		hv_info("mig",
			"op=postcopy_load_pages vm=%s pages=%llu "
			"err=%d",
			hv_vm_name(s->vm), (unsigned long long)served, ret);
	return ret;
}

int mig__src_pc_switch(struct mig_source *s, uint32_t iter,
		  struct mig_downtime *dt, uint64_t *hb_src)
{
	Mig__Switchover so = MIG__SWITCHOVER__INIT;
	uint64_t t[6];
	int64_t n;
	int ret;

	mig__prog_phase(&s->prog, MIG_PHASE_SWITCHOVER);
	hv_info("mig", "op=postcopy_switch vm=%s iter=%u pending=%llu",
		hv_vm_name(s->vm), iter, (unsigned long long)s->pending);
	t[0] = mig__now_ns();
	ret = mig__src_pause(s);
	if (ret)
		FAIL(s, ret, "pause: %s", strerror(-ret));
	t[1] = mig__now_ns();
	hv_info("mig", "op=vm_stopped vm=%s why=postcopy", hv_vm_name(s->vm));
	*hb_src = mig__mono_to_real(mig__src_last_heartbeat(s->vm));
	s->pc_hb_src = *hb_src;
	ret = mig_throttle_restore(&s->thr);
	if (ret)
		FAIL(s, ret, "unthrottle: %s", strerror(-ret));
	n = mig__src_harvest(s);
	if (n < 0)
		FAIL(s, (int)n, "final harvest: %s", strerror((int)-n));
	/* Our copy is frozen from here on: no more logging. */
	mig__src_stop_logging(s);
	ret = split_dirty_set(s);
	if (ret)
		FAIL(s, ret, "postcopy unsent set: %s", strerror(-ret));
	so.iteration = iter;
	so.remaining_pages = s->pc_unsent_pages + s->pending;
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_SWITCHOVER, &so.base,
			    NULL, 0);
	if (ret)
		FAIL(s, ret, "send switchover: %s", strerror(-ret));
	t[2] = mig__now_ns();
	ret = mig__src_send_pass(s, iter);
	if (ret)
		FAIL(s, ret, "postcopy switch pass: %s", strerror(-ret));
	ret = send_unsent(s);
	if (ret)
		FAIL(s, ret, "send the unsent set: %s", strerror(-ret));
	t[3] = mig__now_ns();
	ret = mig__src_send_vm_state(s);
	if (ret)
		return ret;
	t[4] = mig__now_ns();
	mig__prog_phase(&s->prog, MIG_PHASE_COMMIT);
	ret = wait_ack(s);
	if (ret)
		return ret;
	t[5] = mig__now_ns();
	dt->pause_ns = t[1] - t[0];
	dt->final_harvest_ns = t[2] - t[1];
	dt->final_send_ns = t[3] - t[2];
	dt->state_ns = t[4] - t[3];
	dt->load_ns = t[5] - t[4];
	s->pc_switched = true;
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.postcopy = true;
	s->prog.p.pc_unsent_pages = s->pc_unsent_pages;
	pthread_mutex_unlock(&s->prog.lock);
	return 0;
}

/* Table index of @gfn, or UINT64_MAX when it is not guest RAM. */
static uint64_t gfn_index(const struct mig_source *s, uint64_t gfn,
			  unsigned *slot)
{
	for (unsigned i = 0; i < s->nslots; i++) {
		const struct src_slot *sl = &s->slots[i];

		if (gfn >= sl->base && gfn - sl->base < sl->npages) {
			*slot = i;
			return sl->tidx + (gfn - sl->base);
		}
	}
	return UINT64_MAX;
}

/*
 * Cut the ascending table indexes @idx/@n into the next run of one slot
 * and 64 pages; returns how many it took.
 */
static size_t make_run(const struct mig_source *s, const uint64_t *idx,
		       size_t n, struct mig_page_run *run)
{
	const struct src_slot *sl = NULL;
	size_t k = 0;

	*run = (struct mig_page_run){ 0 };
	for (unsigned i = 0; i < s->nslots; i++)
		if (idx[0] >= s->slots[i].tidx &&
		    idx[0] - s->slots[i].tidx < s->slots[i].npages)
			sl = &s->slots[i];
	if (!sl)
		return 1; /* cannot happen: the set is built from the slots */
	run->slot = sl->id;
	run->gfn = sl->base + (idx[0] - sl->tidx);
	while (k < n && idx[k] >= idx[0] && idx[k] - idx[0] < 64 &&
	       idx[k] - sl->tidx < sl->npages) {
		run->mask |= 1ull << (idx[k] - idx[0]);
		k++;
	}
	return k;
}

struct pc_push {
	struct mig_source *s;
	uint64_t buf[MIG_BATCH_MAX_PAGES];
	size_t head, len;
	uint64_t t0_ns, wire0; /* the push's start, for the cap */
	pthread_t thread;
	int ret;
	atomic_bool ended; /* ret is final */
};

/*
 * The bandwidth cap (--bandwidth, tune) holds for the push as for
 * precopy, as QEMU's max-postcopy-bandwidth: hold the pipe back until
 * the bytes pushed since the push began fit it. Pages the guest faults
 * on go out on the control channel and never wait for it.
 */
static int push_pace(struct pc_push *p)
{
	struct mig_source *s = p->s;

	for (;;) {
		uint64_t cap = atomic_load(&s->max_bw), allowed, over;
		struct mig_pipe_stats st;
		struct timespec ts;

		if (!cap)
			return 0;
		if (atomic_load(&s->cancel))
			return -ECANCELED;
		mig_send_pipe_stats(s->pipe, &st);
		allowed = (uint64_t)((double)cap *
				     (double)(mig__now_ns() - p->t0_ns) / 1e9);
		if (st.wire - p->wire0 <= allowed)
			return 0;
		over = (st.wire - p->wire0 - allowed) * 1000000000ull / cap;
		over = HV_MIN(over, 20000000ull);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)over;
		nanosleep(&ts, NULL);
	}
}

/* The pipe's page source (pipe lock held): the scheduler's push order. */
static int push_next(void *ctx, struct mig_page_run *run)
{
	struct pc_push *p = ctx;
	size_t k;

	if (p->head == p->len) {
		/* Tests: a slow push (sleep), or a broken one (fail). */
		int fp = mig_faultpoint(MIG_FP_SRC_PC_PUSH);

		if (fp < 0)
			return fp;
		fp = push_pace(p);
		if (fp < 0)
			return fp;
		p->head = 0;
		p->len = mig_pc_sched_next_push(p->s->pc_sched, p->buf,
						HV_ARRAY_SIZE(p->buf));
		if (!p->len)
			return 0;
	}
	k = make_run(p->s, p->buf + p->head, p->len - p->head, run);
	p->head += k;
	return run->mask ? 1 : push_next(ctx, run);
}

static void *push_thread(void *arg)
{
	struct pc_push *p = arg;
	struct mig_pipe_stats st;

	mig_send_pipe_stats(p->s->pipe, &st);
	p->wire0 = st.wire;
	p->t0_ns = mig__now_ns();
	p->ret = mig_send_pipe_run(p->s->pipe, push_next, p, NULL);
	if (!p->ret)
		p->ret = mig_send_pipe_finish(p->s->pipe);
	atomic_store(&p->ended, true);
	return NULL;
}

/* Send every urgent page on the control channel, a run at a time. */
static int serve_urgent(struct mig_source *s, struct mig_batch_enc *enc)
{
	uint64_t idx[MIG_BATCH_MAX_PAGES];
	size_t n;

	while ((n = mig_pc_sched_next_urgent(s->pc_sched, idx,
					     HV_ARRAY_SIZE(idx)))) {
		/* Requests come in any order: send each page alone unless
		 * its neighbours follow (make_run takes ascending runs). */
		for (size_t i = 0; i < n;) {
			struct mig_batch_info info;
			struct mig_page_run run;
			const uint8_t *frame;
			size_t len, k;
			int ret;

			k = make_run(s, idx + i, n - i, &run);
			i += k;
			if (!run.mask)
				continue;
			ret = mig_batch_encode(enc, s->map, run.slot, run.gfn,
					       run.mask, &frame, &len, &info);
			if (!ret)
				ret = mig_conn_send_frame(s->ctl, frame, len);
			if (ret)
				return ret;
			s->ctl_bytes += len;
		}
	}
	return 0;
}

/* Send page @t (table index) alone on the control channel. */
static int send_one(struct mig_source *s, struct mig_batch_enc *enc,
		   uint64_t t)
{
	struct mig_batch_info info;
	struct mig_page_run run;
	const uint8_t *frame;
	size_t len;
	int ret;

	make_run(s, &t, 1, &run);
	if (!run.mask)
		return 0;
	ret = mig_batch_encode(enc, s->map, run.slot, run.gfn, run.mask,
			       &frame, &len, &info);
	if (!ret)
		ret = mig_conn_send_frame(s->ctl, frame, len);
	if (!ret)
		s->ctl_bytes += len;
	return ret;
}

/*
 * Queue (or send again) the pages of request @r. A bad request fails
 * the migration (*@fatal, the progress says why); else the error is the
 * control channel's.
 */
static int on_request(struct mig_source *s, struct mig_batch_enc *enc,
		      const Mig__PageRequest *r, bool *fatal)
{
	int ret = mig_pc_request_check(r);

	*fatal = true;
	if (ret)
		FAIL(s, -EPROTO, "postcopy: page request of %zu gfns",
		     r->n_gfns);
	for (size_t i = 0; i < r->n_gfns; i++) {
		unsigned slot;
		uint64_t t = gfn_index(s, r->gfns[i], &slot);

		if (t == UINT64_MAX)
			FAIL(s, -EPROTO, "postcopy: request for gfn 0x%llx, "
					 "not guest RAM",
			     (unsigned long long)r->gfns[i]);
		ret = mig_pc_sched_request(s->pc_sched, t);
		/*
		 * Pushed already, but a fault waits for it: it may sit behind
		 * megabytes of pushed pages in a data channel's buffers, so
		 * it goes again, now, on this channel (the destination keeps
		 * the first copy to arrive). A full queue: the push brings it.
		 */
		if (ret == -EALREADY) {
			ret = send_one(s, enc, t);
			if (ret) {
				*fatal = false;
				return ret;
			}
		}
		if (ret < 0 && ret != -ENOBUFS)
			FAIL(s, ret, "postcopy: request: %s", strerror(-ret));
	}
	return 0;
}

/* Our digest (every page now hashed: the memory is frozen) against the
 * destination's. */
static int check_done(struct mig_source *s, const Mig__PostcopyDone *d)
{
	uint8_t digest[MIG_DIGEST_LEN];
	int ret;

	for (unsigned i = 0; i < s->nslots; i++) {
		struct src_slot *sl = &s->slots[i];

		if (!sl->host)
			continue;
		memset(sl->sent, 0, sl->nwords * 8);
		for (uint64_t p = 0; p < sl->npages; p++)
			if (bit_get(s->pc_unsent, sl->tidx + p))
				sl->sent[p >> 6] |= 1ull << (p & 63);
	}
	ret = mig__src_hash_sent(s);
	if (!ret)
		ret = mig_digest_table_rel(s->map, s->table,
					   mig_zero_page_hash(), digest);
	if (ret)
		FAIL(s, ret, "postcopy digest: %s", strerror(-ret));
	if (d->digest.len != MIG_DIGEST_LEN ||
	    memcmp(d->digest.data, digest, MIG_DIGEST_LEN))
		FAIL(s, -EBADE, "postcopy: the destination's memory digest "
				"differs from the source's frozen copy");
	return 0;
}

/*
 * Say PostcopyDone back: the destination keeps listening for a recovery
 * until it hears that we have its digest (a Done lost with a broken link
 * would leave this side paused with nobody to reconnect to). A failed
 * send is only logged: we are done; the destination then pauses with
 * every page in place, and its operator ends it (docs/api.md).
 */
static void ack_done(struct mig_source *s, const Mig__PostcopyDone *pd)
{
	Mig__PostcopyDone ack = MIG__POSTCOPY_DONE__INIT;
	int ret;

	ack.pages_installed = pd->pages_installed;
	ack.digest = pd->digest;
	ret = mig_conn_send(s->ctl, MIG__MSG_TYPE__MSG_POSTCOPY_DONE,
			    &ack.base, NULL, 0);
	if (ret)
		hv_warn("mig", "op=postcopy_done_ack vm=%s err=%d",
			hv_vm_name(s->vm), ret);
}

/*
 * How one connection's postcopy ended: done (PostcopyDone checked), a
 * broken link (recoverable: why says what broke), or fatal (the progress
 * says why: a bad request, a wrong digest, the destination's Abort).
 */
enum pc_end { PC_DONE, PC_BROKEN, PC_FATAL };

/*
 * Serve one connection: the push thread on the data channels, requests
 * and the PostcopyDone on the control channel. Returns the end, with the
 * error in *@err and, for PC_BROKEN, the cause in @why.
 */
static enum pc_end pc_serve(struct mig_source *s, struct mig_batch_enc *enc,
			    uint64_t *dst_last, int *err, char *why,
			    size_t why_len)
{
	struct pc_push push = { .s = s };
	enum pc_end end = PC_DONE;
	int ret;

	ret = -pthread_create(&push.thread, NULL, push_thread, &push);
	if (ret) {
		mig__prog_fail(&s->prog, ret, "postcopy push thread: %s",
			       strerror(-ret));
		*err = ret;
		return PC_FATAL;
	}
	for (bool done = false; !ret && !done;) {
		struct mig_frame_hdr h;
		ProtobufCMessage *m;

		ret = mig_conn_wait_recv(s->ctl, 100);
		if (ret == -ETIMEDOUT) {
			/* A cancel is too late now: the VM moved. A data
			 * channel that broke ends the connection too. */
			if (atomic_load(&push.ended) && push.ret) {
				ret = push.ret;
				snprintf(why, why_len, "data channel: %s",
					 strerror(-ret));
				end = PC_BROKEN;
				break;
			}
			ret = 0;
			mig__src_prog_counters(s);
			mig__prog_emit(&s->prog, false);
			continue;
		}
		if (!ret)
			ret = mig_conn_recv(s->ctl, &h, &m);
		if (ret) {
			snprintf(why, why_len, "control channel: %s",
				 strerror(-ret));
			end = PC_BROKEN;
			break;
		}
		s->ctl_bytes += MIG_FRAME_HDR_SIZE + h.len;
		if (h.type == MIG__MSG_TYPE__MSG_PAGE_REQUEST) {
			bool fatal;

			ret = on_request(s, enc, (Mig__PageRequest *)m, &fatal);
			if (ret && fatal) {
				end = PC_FATAL;
			} else if (ret) {
				snprintf(why, why_len, "serving requests: %s",
					 strerror(-ret));
				end = PC_BROKEN;
			} else {
				ret = serve_urgent(s, enc);
				if (ret) {
					snprintf(why, why_len,
						 "serving requests: %s",
						 strerror(-ret));
					end = PC_BROKEN;
				}
			}
		} else if (h.type == MIG__MSG_TYPE__MSG_POSTCOPY_DONE) {
			const Mig__PostcopyDone *pd = (Mig__PostcopyDone *)m;

			ret = check_done(s, pd);
			if (ret)
				end = PC_FATAL;
			else
				ack_done(s, pd);
			done = true;
			pthread_mutex_lock(&s->prog.lock);
			s->prog.p.pc_fault_p50_ns = pd->fault_p50_ns;
			s->prog.p.pc_fault_p99_ns = pd->fault_p99_ns;
			s->prog.p.pc_fault_max_ns = pd->fault_max_ns;
			/* The guest's view of the switch: our last
			 * heartbeat to its first there. */
			if (pd->first_heartbeat_realtime_ns && s->pc_hb_src &&
			    pd->first_heartbeat_realtime_ns > s->pc_hb_src)
				s->prog.p.guest_downtime_ns =
					pd->first_heartbeat_realtime_ns -
					s->pc_hb_src;
			pthread_mutex_unlock(&s->prog.lock);
			*dst_last = pd->last_page_ns;
		} else if (h.type == MIG__MSG_TYPE__MSG_ABORT) {
			const Mig__Abort *a = (const Mig__Abort *)m;

			ret = -ECONNABORTED;
			mig__prog_fail(&s->prog, ret,
				       "postcopy: the destination gave up: "
				       "%.160s",
				       a->detail ? a->detail : "");
			end = PC_FATAL;
		} else {
			mig__prog_fail(&s->prog, -EPROTO,
				       "postcopy: unexpected %s from the "
				       "destination",
				       mig_frame_type_name(h.type));
			ret = -EPROTO;
			end = PC_FATAL;
		}
		mig_frame_msg_free(m);
	}
	if (ret) {
		/* Stop the push: its channels end with this connection. */
		for (unsigned i = 0; i < s->nchan; i++)
			mig_conn_shutdown(s->data[i]);
	}
	pthread_join(push.thread, NULL);
	if (!ret && push.ret) {
		ret = push.ret;
		snprintf(why, why_len, "postcopy push: %s", strerror(-ret));
		end = PC_BROKEN;
	}
	*err = ret;
	return end;
}

int mig__src_pc_run(struct mig_source *s)
{
	struct mig_batch_enc_cfg ecfg = {
		.encoding = MIG__ENCODING__ENCODING_RAW,
	};
	struct mig_pc_sched_stats st;
	struct mig_batch_enc *enc = NULL;
	uint64_t words, t0 = mig__now_ns(), dst_last = 0;
	int ret;

	mig__prog_phase(&s->prog, MIG_PHASE_POSTCOPY);
	words = 0;
	for (unsigned i = 0; i < s->nslots; i++)
		words = HV_MAX(words, s->slots[i].tidx + s->slots[i].npages);
	ret = mig_pc_sched_create(HV_MAX(words, 1), &s->pc_sched);
	if (!ret)
		ret = mig_pc_sched_mark(s->pc_sched, 0, s->pc_unsent, words);
	if (!ret)
		ret = mig_batch_enc_create(&ecfg, &enc);
	if (ret)
		FAIL(s, ret, "postcopy: %s", strerror(-ret));
	for (;;) {
		char why[160] = "";

		if (pc_serve(s, enc, &dst_last, &ret, why, sizeof(why)) !=
		    PC_BROKEN)
			break;
		/* Not a failure: paused until recovered (or given up). */
		ret = mig__src_pc_recover(s, ret, why);
		if (ret)
			break;
	}
	mig_batch_enc_destroy(enc);
	mig_pc_sched_get_stats(s->pc_sched, &st);
	pthread_mutex_lock(&s->prog.lock);
	s->prog.p.pc_pages_requested = st.requested;
	s->prog.p.pc_pages_pushed = st.pushed;
	/* The destination's own figure when it sent one (it starts at its
	 * resume), else ours, from the Resumed to its PostcopyDone. */
	s->prog.p.pc_last_page_ns = dst_last ? dst_last : mig__now_ns() - t0;
	pthread_mutex_unlock(&s->prog.lock);
	hv_info("mig", "op=postcopy_done vm=%s err=%d requested=%llu "
		       "pushed=%llu late=%llu recoveries=%u ms=%.1f",
		hv_vm_name(s->vm), ret, (unsigned long long)st.requested,
		(unsigned long long)st.pushed,
		(unsigned long long)st.late_requests, s->pc_recoveries,
		(double)(mig__now_ns() - t0) / 1e6);
	return ret;
}

void mig__src_pc_fini(struct mig_source *s)
{
	mig_pc_sched_destroy(s->pc_sched);
	s->pc_sched = NULL;
	free(s->pc_unsent);
	s->pc_unsent = NULL;
}
